//! A what-if model's prediction from BEFORE against the measured AFTER: where the model was
//! wrong.
//!
//! The predicted step is BEFORE's measured median divided by the model's predicted speedup.
//! The speedup compares two replays of BEFORE on one engine (see [`crate::whatif`]), so the
//! replay's own error cancels; anchoring it on the measured median makes the predicted step
//! comparable with AFTER's measured median, and its error equals the speedup's:
//! `predicted_step / measured_step - 1 = measured_speedup / predicted_speedup - 1`.
//!
//! Per phase, the prediction is the what-if's own per-phase figure ([`PhaseTime`]: host task
//! cost plus the untraced host time after each task, and device task cost, per steady step);
//! the measurement is the same figure taken from AFTER's recorded graph and mapping, so the
//! two are the same quantity.
//!
//! A prediction is judged against the measured interval ([`super::Measured`]), not a point:
//! inside it, the model's error is within the steps' own noise. Each check carries the
//! what-if's trust (its bound and caveats, [`crate::whatif::trust`]) as `whatif` shows it.

use super::{Measured, Side, StepTimes};
use stepcast_trace::Trace;

use crate::Window;
use crate::analyze::host_time;
use crate::analyze::mapping::{Mapping, Phase};
use crate::graph::NO_STEP;
use crate::replay::relative_error;
use crate::whatif::{Model, Outcome, PhaseTime, WhatIfError};

/// One phase, predicted against measured (ns per steady step).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseCheck {
    pub phase: Phase,
    /// BEFORE as recorded.
    pub host_before_ns: i64,
    pub host_predicted_ns: i64,
    /// AFTER as recorded.
    pub host_measured_ns: i64,
    pub device_before_ns: i64,
    pub device_predicted_ns: i64,
    pub device_measured_ns: i64,
}

/// Where a predicted speedup lies against the measured interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Within `[low, high]`: no step pair contradicts it.
    Inside,
    /// Above `high`: more gain than any BEFORE step / AFTER step pair shows.
    Above,
    /// Below `low`: less gain than any pair shows.
    Below,
}

impl Placement {
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Inside => "inside",
            Placement::Above => "above",
            Placement::Below => "below",
        }
    }

    fn of(measured: &Measured, speedup: f64) -> Placement {
        if speedup > measured.high {
            Placement::Above
        } else if speedup < measured.low {
            Placement::Below
        } else {
            Placement::Inside
        }
    }
}

/// A model's prediction against the measured outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelCheck {
    /// The model's name with its parameters.
    pub model: String,
    /// The what-if's speedup on BEFORE.
    pub predicted_speedup: f64,
    /// BEFORE's measured steady-state period divided by `predicted_speedup`.
    pub predicted_step_ns: i64,
    /// AFTER's measured steady-state period.
    pub measured_step_ns: i64,
    /// `predicted_step_ns / measured_step_ns - 1` (positive: the model predicted too slow a
    /// step, i.e. too small a gain).
    pub error: f64,
    /// Every phase, in [`Phase::ALL`] order.
    pub phases: Vec<PhaseCheck>,
    /// The measured interval the prediction is judged against ([`Measured`]).
    pub measured: Measured,
    /// Where `predicted_speedup` lies against it.
    pub placement: Placement,
    /// How far the prediction can be trusted, as `whatif`'s: its baseline step on BEFORE (what
    /// the bound is against), bound, caveats, anomaly, `rests_on` and `declined`.
    pub trust: crate::whatif::trust::Verdict,
}

/// Applies `model` to BEFORE, and checks its prediction against AFTER.
pub fn check_model(
    before: &Side<'_>,
    before_steps: &StepTimes,
    after: &Side<'_>,
    after_steps: &StepTimes,
    model: &Model,
) -> Result<ModelCheck, WhatIfError> {
    let context = before.context();
    let outcome = crate::whatif::apply_models(&context, std::slice::from_ref(model))?;
    Ok(check_outcome(
        model.name(),
        &outcome,
        before_steps,
        after,
        after_steps,
    ))
}

/// [`check_model`] for an outcome already predicted.
pub fn check_outcome(
    model: String,
    outcome: &Outcome,
    before_steps: &StepTimes,
    after: &Side<'_>,
    after_steps: &StepTimes,
) -> ModelCheck {
    let predicted_step_ns = if outcome.speedup > 0.0 && outcome.speedup.is_finite() {
        (before_steps.period_ns as f64 / outcome.speedup).round() as i64
    } else {
        0
    };
    let measured = phase_times(after.trace, after.window, &after.analysis.mapping);
    let phases = outcome
        .phases
        .iter()
        .map(|p: &PhaseTime| {
            let (host, device) = measured
                .iter()
                .find(|(phase, _, _)| *phase == p.phase)
                .map_or((0, 0), |&(_, h, d)| (h, d));
            PhaseCheck {
                phase: p.phase,
                host_before_ns: p.host_before_ns,
                host_predicted_ns: p.host_after_ns,
                host_measured_ns: host,
                device_before_ns: p.device_before_ns,
                device_predicted_ns: p.device_after_ns,
                device_measured_ns: device,
            }
        })
        .collect();
    let measured_interval = Measured::of(before_steps, after_steps);
    ModelCheck {
        model,
        measured: measured_interval,
        placement: Placement::of(&measured_interval, outcome.speedup),
        trust: crate::whatif::trust::Verdict::of(outcome),
        predicted_speedup: outcome.speedup,
        predicted_step_ns,
        measured_step_ns: after_steps.period_ns,
        error: relative_error(predicted_step_ns, after_steps.period_ns),
        phases,
    }
}

/// Per phase, in [`Phase::ALL`] order: (phase, host ns, device ns) per steady step of the
/// recorded graph of `window`, measured as [`PhaseTime`] is: over every step after the warm-up
/// (the first, when there are three or more), as the what-if counts them.
pub fn phase_times(trace: &Trace, window: &Window, mapping: &Mapping) -> Vec<(Phase, i64, i64)> {
    let graph = &window.graph;
    let mut sums = [(0i64, 0i64); Phase::ALL.len()];
    let first = usize::from(window.steps.len() >= 3);
    let marker = host_time::marker_lane(trace);
    for (t, &step) in graph.step.iter().enumerate() {
        let index_of = |phase: Phase| Phase::ALL.iter().position(|&p| p == phase).unwrap_or(5);
        if graph.kind[t].on_device() {
            if step == NO_STEP || (step as usize) < first {
                continue;
            }
            let phase = mapping.phase.get(t).copied().unwrap_or(Phase::Other);
            sums[index_of(phase)].1 += graph.dur_ns[t];
        } else if host_time::on_marker_lane(graph, marker, t) {
            // The what-if's own measure (`analyze::host_time`), in the step each piece ran in.
            let costs = (graph.dur_ns[t], graph.gap_ns[t]);
            host_time::task_phase_ns(graph, mapping, &window.steps, t, costs, |s, p, ns| {
                if s.is_some_and(|s| s >= first) {
                    sums[index_of(p)].0 += ns;
                }
            });
        }
    }
    let count = window.steps.len().saturating_sub(first).max(1) as i64;
    Phase::ALL
        .iter()
        .zip(sums)
        .map(|(&phase, (host, device))| (phase, host / count, device / count))
        .collect()
}
