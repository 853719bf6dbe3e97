//! Two traces of one workload, before and after a change: the measured speedup of their steady
//! steps ([`StepTimes`]), what changed by phase, op and kernel ([`diff`]), and, for a what-if
//! model standing for the change, its prediction from the first trace against the second
//! ([`check`]).
//!
//! Steady steps are the replay's ([`crate::replay::steady_steps`]): every step with tasks but
//! the first (warm-up) when there are three or more. The measured step of a trace is its
//! **steady-state period** on the recorded times: the mean time between the ends of
//! consecutive steady steps, the very measure a what-if's baseline and prediction use
//! ([`crate::whatif::steady_period`]), so a prediction is checked like for like. A step's span
//! (host start of its `ProfilerStep` range to the end of the last device work launched in it)
//! is not its duration where the host runs ahead of the device: on a GPU-bound trace whose
//! launch calls block on a full launch queue, each span covers the ~3 steps queued before it.
//! The spans are kept (median, min, max, mean: what the per-step tables sum to) and so are the
//! per-step periods, so the noise shows.

pub mod check;
pub mod diff;

use stepcast_trace::Trace;

use crate::Window;
use crate::analyze::Analysis;
use crate::replay::steady_steps;
use crate::whatif::{recorded_timeline, steady_period};

pub use check::{ModelCheck, PhaseCheck, check_model};
pub use diff::{Changes, DiffRow, DiffTable, NOISE_FLOOR_NS, NOISE_FRACTION, Status, TOP_ROWS};

/// One side of a comparison: a trace, its window and its analysis.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub trace: &'a Trace,
    pub window: &'a Window,
    pub analysis: &'a Analysis,
}

impl<'a> Side<'a> {
    /// The what-if context of this side (what a model is applied to).
    pub fn context(&self) -> crate::whatif::Context<'a> {
        crate::whatif::Context::new(self.trace, self.window, &self.analysis.mapping)
    }
}

/// The measured steady steps of one trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepTimes {
    /// Indices into `window.steps` of the steady steps, in step order.
    pub indices: Vec<usize>,
    /// Their numbers (`N` of `ProfilerStep#N`).
    pub numbers: Vec<u64>,
    /// Their measured spans, in step order.
    pub measured_ns: Vec<i64>,
    /// Median of `measured_ns` (an even count takes the lower-middle average, rounded down, as
    /// the typical step does).
    pub median_ns: i64,
    pub min_ns: i64,
    pub max_ns: i64,
    /// Mean of `measured_ns`, rounded down: what the per-step tables sum to.
    pub mean_ns: i64,
    /// The steady-state period of the recording: what the speedup compares.
    pub period_ns: i64,
    /// Per steady step, the time from the previous step's end to its own end (the period is
    /// their mean).
    pub periods_ns: Vec<i64>,
}

impl StepTimes {
    /// The steady steps of `side`; `None` when it has no step with tasks.
    pub fn of(side: &Side<'_>) -> Option<StepTimes> {
        let indices = steady_steps(side.window);
        if indices.is_empty() {
            return None;
        }
        let replayed = &side.analysis.replay.steps;
        let measured_ns: Vec<i64> = indices.iter().map(|&s| replayed[s].measured_ns).collect();
        let numbers = indices
            .iter()
            .map(|&s| side.window.steps[s].number)
            .collect();
        let mut sorted = measured_ns.clone();
        sorted.sort_unstable();
        let n = sorted.len();
        let median_ns = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]).div_euclid(2)
        };
        let sum: i128 = sorted.iter().map(|&v| i128::from(v)).sum();
        let graph = &side.window.graph;
        let period = steady_period(side.window, graph, &recorded_timeline(graph))?;
        Some(StepTimes {
            period_ns: period.step_ns,
            periods_ns: period.per_step_ns(),
            numbers,
            median_ns,
            min_ns: sorted[0],
            max_ns: sorted[n - 1],
            mean_ns: (sum / n as i128) as i64,
            measured_ns,
            indices,
        })
    }
}

/// Why two traces cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("the {which} trace has no step with tasks: nothing to compare")]
    NoSteps { which: &'static str },
}

/// The comparison of two traces of one workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub before: StepTimes,
    pub after: StepTimes,
    /// `before.period_ns / after.period_ns` (above 1: AFTER is faster).
    pub speedup: f64,
    pub changes: Changes,
}

/// Compares the steady steps of `before` and `after`.
pub fn compare(before: &Side<'_>, after: &Side<'_>) -> Result<Comparison, CompareError> {
    let before_steps = StepTimes::of(before).ok_or(CompareError::NoSteps { which: "BEFORE" })?;
    let after_steps = StepTimes::of(after).ok_or(CompareError::NoSteps { which: "AFTER" })?;
    let changes = Changes::new(before, &before_steps, after, &after_steps);
    Ok(Comparison {
        speedup: crate::whatif::speedup(before_steps.period_ns, after_steps.period_ns),
        before: before_steps,
        after: after_steps,
        changes,
    })
}
