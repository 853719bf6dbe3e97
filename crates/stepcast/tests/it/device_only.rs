//! A trace of device work alone (rocprofv3 run without `--hip-trace`: the TraceLens sample in
//! `testdata/rocprof/`): no launching call says which step a kernel belongs to, so the window
//! is one step holding all of it (issue #14), and the build and every prediction say what that
//! costs in trust.

use std::path::PathBuf;

use stepcast::analyze::mapping::map;
use stepcast::graph::{BuildOptions, NO_STEP, build};
use stepcast::replay::self_replay;
use stepcast::whatif::{Context, Model, apply_models};
use stepcast_trace::read_trace;

// See: issue 14 (rocprofv3 device-only traces get one window).
#[test]
fn device_only_rocprof_trace_is_one_window_of_all_its_work() {
    let path = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/rocprof"
    ))
    .join("TraceLens/tests/rocprof/908_results.json.gz");
    let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    let device_events = trace
        .events
        .iter()
        .filter(|e| e.kind.is_device_task())
        .count();
    assert_eq!(
        device_events,
        trace.events.len(),
        "no host event in the file"
    );

    let window = build(&trace, &BuildOptions::default());
    assert_eq!(window.steps.len(), 1);
    assert!(window.steps[0].synthetic);
    let graph = &window.graph;
    assert!(graph.task_count() > 0);
    assert!(
        graph.step.iter().all(|&s| s != NO_STEP),
        "every device task is in the window's step"
    );
    assert!(
        window
            .report
            .notes
            .iter()
            .any(|n| n.contains("device work only")),
        "{:?}",
        window.report.notes
    );

    let report = self_replay(&window).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.steps[0].tasks as usize, device_events);
    // The step spans the device work as recorded: first start to last end.
    let first = trace
        .events
        .iter()
        .map(|e| e.start_ns)
        .min()
        .expect("events");
    let last = trace
        .events
        .iter()
        .map(|e| e.end_ns())
        .max()
        .expect("events");
    assert_eq!(report.steps[0].measured_ns, last - first);

    // A prediction runs, and says that no task can start earlier than recorded.
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let outcome = apply_models(&context, &[Model::RemoveSyncs]).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        outcome
            .caveats
            .iter()
            .any(|c| c.contains("device work only")),
        "{:?}",
        outcome.caveats
    );
}
