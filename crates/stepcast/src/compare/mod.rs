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
//!
//! The measured speedup is given with its spread ([`Measured`]): the per-step periods are the
//! samples, and a difference no larger than the steps of one trace differ among themselves is
//! "no measurable change", not a speedup. Two traces that are not one workload (training
//! against inference, ops and kernels that share almost nothing) are refused unless forced;
//! other doubts (different devices, little shared) are warnings ([`workload`]).

pub mod check;
pub mod diff;
pub mod workload;

use stepcast_trace::Trace;

use crate::Window;
use crate::analyze::Analysis;
use crate::analyze::stats::median_ns;
use crate::replay::steady_steps;
use crate::whatif::{recorded_timeline, steady_period};

pub use check::{ModelCheck, PhaseCheck, Placement, check_model};
pub use diff::{Changes, DiffRow, DiffTable, NOISE_FLOOR_NS, NOISE_FRACTION, Status, TOP_ROWS};
pub use workload::{Finding, FindingKind, Workload};

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

/// Whether the steps changed beyond their own noise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every steady step of AFTER is shorter than every steady step of BEFORE.
    Faster,
    /// Every steady step of AFTER is longer than every steady step of BEFORE.
    Slower,
    /// The two traces' steady steps overlap: the difference is within their spread.
    NoMeasurableChange,
    /// A side has fewer than two steady steps: its noise is unknown, so no change can be told
    /// from it.
    SpreadUnknown,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoMeasurableChange => "no_measurable_change",
            Verdict::SpreadUnknown => "spread_unknown",
        }
    }
}

/// The measured speedup with its spread, from the per-step periods ([`StepTimes::periods_ns`])
/// of each trace's steady steps.
///
/// The interval is `[min BEFORE / max AFTER, max BEFORE / min AFTER]`: the range of the speedups
/// of every pair of one BEFORE step and one AFTER step. A profiler window holds 3-6 steady
/// steps, too few for a bootstrap or for quantiles (an interquartile range of five values is
/// two of them); the extremes need no assumption about the noise's distribution, and they
/// contain both the mean ratio ([`Comparison::speedup`]) and the median ratio by construction.
/// The interval contains 1 exactly when the two ranges of steps overlap: then some step of
/// AFTER was as slow as some step of BEFORE, and the traces do not show a change beyond the
/// step-to-step noise they carry. It is conservative: a change that shows only on average over
/// noisy steps is called unmeasured rather than claimed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// `median(BEFORE periods) / median(AFTER periods)`.
    pub median_speedup: f64,
    /// Lower end of the interval (infinite when a period is not positive).
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
    pub verdict: Verdict,
}

impl Measured {
    /// The spread of `before` against `after`.
    pub fn of(before: &StepTimes, after: &StepTimes) -> Measured {
        let (b, a) = (&before.periods_ns, &after.periods_ns);
        let extremes = |v: &[i64]| {
            (
                v.iter().copied().min().unwrap_or(0),
                v.iter().copied().max().unwrap_or(0),
            )
        };
        let ((b_min, b_max), (a_min, a_max)) = (extremes(b), extremes(a));
        let low = crate::whatif::speedup(b_min, a_max);
        let high = crate::whatif::speedup(b_max, a_min);
        let verdict = if b.len() < 2 || a.len() < 2 {
            Verdict::SpreadUnknown
        } else if low > 1.0 {
            Verdict::Faster
        } else if high < 1.0 {
            Verdict::Slower
        } else {
            Verdict::NoMeasurableChange
        };
        Measured {
            median_speedup: crate::whatif::speedup(
                median_ns(&mut b.to_vec()),
                median_ns(&mut a.to_vec()),
            ),
            low,
            high,
            verdict,
        }
    }

    /// Whether `speedup` lies within the interval.
    pub fn contains(&self, speedup: f64) -> bool {
        self.low <= speedup && speedup <= self.high
    }
}

/// How [`compare_with`] treats two traces that are not one workload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompareOptions {
    /// Compare them anyway: the refusal stays in [`Workload::findings`].
    pub force: bool,
}

/// Why two traces cannot be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("the {which} trace has no step with tasks: nothing to compare")]
    NoSteps { which: &'static str },
    #[error("{}; compare them anyway with --force", reasons.join("; "))]
    NotOneWorkload { reasons: Vec<String> },
}

/// The comparison of two traces of one workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    pub before: StepTimes,
    pub after: StepTimes,
    /// `before.period_ns / after.period_ns` (above 1: AFTER is faster): the ratio of the mean
    /// per-step periods, the measure a what-if predicts.
    pub speedup: f64,
    /// Its spread, and whether it is a change at all.
    pub measured: Measured,
    /// Whether the traces are one workload.
    pub workload: Workload,
    pub changes: Changes,
}

/// Compares the steady steps of `before` and `after`; refuses two traces that are not one
/// workload ([`CompareError::NotOneWorkload`]).
pub fn compare(before: &Side<'_>, after: &Side<'_>) -> Result<Comparison, CompareError> {
    compare_with(before, after, CompareOptions::default())
}

/// [`compare`] with `options`.
pub fn compare_with(
    before: &Side<'_>,
    after: &Side<'_>,
    options: CompareOptions,
) -> Result<Comparison, CompareError> {
    let before_steps = StepTimes::of(before).ok_or(CompareError::NoSteps { which: "BEFORE" })?;
    let after_steps = StepTimes::of(after).ok_or(CompareError::NoSteps { which: "AFTER" })?;
    let mut workload = Workload::of(before, &before_steps.indices, after, &after_steps.indices);
    let reasons: Vec<String> = workload
        .findings
        .iter()
        .filter(|f| f.refuses)
        .map(|f| f.message.clone())
        .collect();
    if !reasons.is_empty() && !options.force {
        return Err(CompareError::NotOneWorkload { reasons });
    }
    let measured = Measured::of(&before_steps, &after_steps);
    if measured.verdict == Verdict::SpreadUnknown {
        let side = if before_steps.periods_ns.len() < 2 {
            "BEFORE"
        } else {
            "AFTER"
        };
        workload.findings.push(Finding {
            kind: FindingKind::SpreadUnknown,
            refuses: false,
            message: format!(
                "{side} has one steady step: its step-to-step noise is unknown, so the speedup \
                 cannot be told from noise"
            ),
        });
    }
    let changes = Changes::new(before, &before_steps, after, &after_steps);
    Ok(Comparison {
        speedup: crate::whatif::speedup(before_steps.period_ns, after_steps.period_ns),
        measured,
        workload,
        before: before_steps,
        after: after_steps,
        changes,
    })
}
