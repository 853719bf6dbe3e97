//! What the diagnostics share: a trace read, its window built, and replayed without the edges
//! inferred from timing (what the recorded causes alone explain).

use stepcast::Window;
use stepcast::graph::{BuildOptions, build};
use stepcast::simulate::{RecordedOrder, SimOptions, Timeline, simulate};
use stepcast_trace::Trace;

/// The trace at `path`, its window and its replay without inferred edges; panics with what
/// failed (a diagnostic, not the CLI).
pub fn replayed_without_inferred(path: &str) -> (Trace, Window, Timeline) {
    let trace = stepcast_trace::read_trace(std::path::Path::new(path)).expect("read");
    let window = build(&trace, &BuildOptions::default());
    let options = SimOptions {
        without_inferred: true,
        ..SimOptions::default()
    };
    let timeline = simulate(&window.graph, &RecordedOrder, options).expect("replays");
    (trace, window, timeline)
}
