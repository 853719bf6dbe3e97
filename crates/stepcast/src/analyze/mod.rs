//! What the step's time is spent on: kernels mapped to ops, layers and phases; breakdowns,
//! statistics, memory. Reads a `Trace`, its `Window` and a replay; returns data.

pub mod breakdown;
pub mod critical;
pub mod host_time;
pub mod hta;
pub mod innermost;
mod launches;
pub mod mapping;
pub mod memory;
pub mod off_cpu;
#[cfg(test)]
mod one_thread;
pub mod op_model;
pub mod stats;
pub mod typical;

use stepcast_trace::Trace;

use crate::replay::{ReplayReport, self_replay_with_timeline, steady_steps};
use crate::simulate::SimError;
use crate::window::Window;

/// Statistics keep this many kernels and ops (the rest are summed by the caller if needed).
pub const TOP: usize = 20;

/// Everything `stepcast analyze` reports, for one window.
#[derive(Clone, Debug)]
pub struct Analysis {
    pub mapping: mapping::Mapping,
    pub replay: ReplayReport,
    /// Per step: device time mapped to an op and a phase, and the rest by cause.
    pub mapped: Vec<mapping::MappedTime>,
    pub breakdowns: breakdown::Breakdowns,
    /// The breakdowns of the typical step: those of the steps it is built from, averaged
    /// (`None` without a typical step).
    pub typical_breakdown: Option<typical::TypicalBreakdown>,
    /// HTA's temporal breakdown of the whole trace (`None` without device kernels).
    pub hta: Option<hta::TemporalBreakdown>,
    pub statistics: stats::Statistics,
    pub memory: Vec<memory::DeviceMemory>,
    /// Per step: its critical path, and what lies on it.
    pub critical: Vec<(critical::StepCriticalPath, critical::CriticalPathBreakdown)>,
    /// Per step: where its host thread was off its CPU and why (the kernel scheduler's
    /// events); `None` when the trace has none.
    pub off_cpu: Option<Vec<off_cpu::StepOffCpu>>,
    /// How close each op runs to the hardware: FLOPs and bytes from recorded shapes,
    /// achieved throughput, the steps' FLOPs.
    pub op_model: op_model::OpModel,
    /// The step the detailed report is about: the one asked for, else the steady-state step
    /// whose measured time is closest to the median (the whole window without step markers).
    pub analyzed_step: Option<usize>,
}

/// Analyzes the window of `trace`. `step` picks the analyzed step (an index into
/// `window.steps`); `None` picks the most typical one. The statistics keep [`TOP`] names.
pub fn analyze(trace: &Trace, window: &Window, step: Option<usize>) -> Result<Analysis, SimError> {
    analyze_top(trace, window, step, Some(TOP))
}

/// [`analyze`], its statistics keeping `top` kernels, ops and latencies (`None`: every one).
pub fn analyze_top(
    trace: &Trace,
    window: &Window,
    step: Option<usize>,
    top: Option<usize>,
) -> Result<Analysis, SimError> {
    let launch_calls = launches::launch_calls(trace, &window.graph);
    let mapping = mapping::map_with(trace, window, &launch_calls);
    let (replay, timeline) = self_replay_with_timeline(window)?;
    let critical: Vec<_> = (0..window.steps.len())
        .map(|s| {
            let path = critical::step_critical_path(trace, window, &timeline, s);
            let breakdown = critical::breakdown(trace, window, &mapping, &path.path);
            (path, breakdown)
        })
        .collect();
    let off_cpu = off_cpu::off_cpu(trace, window, &critical);
    let analyzed_step = step.or_else(|| most_typical_step(window, &replay));
    let breakdowns = breakdown::breakdowns(trace, window, &mapping);
    let typical_breakdown = replay.typical.as_ref().and_then(|typical| {
        typical::typical_breakdown(trace, &breakdowns.steps, &typical.steps_used)
    });
    Ok(Analysis {
        mapped: mapping::mapped_time_by_step(window, &mapping),
        breakdowns,
        typical_breakdown,
        hta: hta::temporal_breakdown(trace),
        statistics: stats::statistics_with(trace, window, top.unwrap_or(usize::MAX), &launch_calls),
        memory: memory::memory(trace, window, &mapping),
        op_model: op_model::op_model(trace, window, &mapping),
        mapping,
        replay,
        critical,
        off_cpu,
        analyzed_step,
    })
}

/// The steady-state step whose measured time is closest to the steady median (ties: earlier).
fn most_typical_step(window: &Window, replay: &ReplayReport) -> Option<usize> {
    let steady = steady_steps(window);
    let mut measured: Vec<i64> = steady
        .iter()
        .map(|&s| replay.steps[s].measured_ns)
        .collect();
    measured.sort_unstable();
    let median = *measured.get(measured.len() / 2)?;
    steady
        .into_iter()
        .min_by_key(|&s| ((replay.steps[s].measured_ns - median).abs(), s))
}
