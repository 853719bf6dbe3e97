//! How far a prediction can be trusted: the most it can gain, computed from the trace, and the
//! conditions of the window and the model that limit it (caveats), each said in words.
//!
//! A user acts on the headline. A window that is not a steady state (one step, no markers, a
//! CUDA-graph capture), a cold-start outlier that dominates it, waits only the recorded clock
//! explained, a choice about the peers, or a model that is an upper bound by construction:
//! each changes how far the number carries, and each is said beside it.

use rustc_hash::FxHashMap;

use super::models::Model;
use super::{Context, Outcome, Period, WhatIfError, measure, recorded_timeline, steady_period};
use crate::graph::NO_STEP;
use crate::replay::{measured_span, replayed_span, tasks_by_step};
use crate::simulate::{RecordedOrder, SimOptions, simulate};

/// A task this many times the median of its name, and at least [`OUTLIER_STEP_SHARE`] of a
/// step, is a cold start (first-call initialization, lazy module loading, autotuning).
const OUTLIER_FACTOR: i64 = 50;
const OUTLIER_STEP_SHARE: f64 = 0.05;
/// Fewer instances of a name than this tell no median.
const OUTLIER_MIN_INSTANCES: usize = 5;
/// Edges inferred from timing holding more of the step than this are worth saying.
const INFERRED_HELD_SHARE: f64 = 0.02;
/// The other `--peers` choice moving the speedup by more than this is worth saying.
const PEERS_SHARE: f64 = 0.01;

/// What limits every prediction on one window: computed once, shared by its what-ifs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WindowTrust {
    pub caveats: Vec<String>,
    /// Why no prediction on this window can be trusted, if none can: the baseline the
    /// predictions start from is not the measured step ([`ANCHOR_SHARE`]), or the graph a
    /// transform starts from does not replay as the baseline (identity). Every prediction
    /// is then declined with this reason.
    pub declined: Option<String>,
    /// Time per steady step that blocking host calls spent waiting in the baseline replay: the
    /// most that removing waits (rather than costs) can gain.
    pub blocking_wait_ns: i64,
}

/// The window's own caveats (see the module documentation).
pub fn window_trust(context: &Context<'_>) -> Result<WindowTrust, WhatIfError> {
    let window = context.window;
    let graph = &window.graph;
    let trace = context.trace;
    let mut caveats = Vec::new();
    match window.steps.as_slice() {
        [step] if step.synthetic => caveats.push(
            "the trace has no ProfilerStep markers: the whole window stands as one step, not a \
             steady state"
                .to_string(),
        ),
        [_] => caveats.push(
            "the window holds one step: no steady state (first-iteration allocation, compilation \
             and warm-up costs are part of it)"
                .to_string(),
        ),
        [_, _] => caveats.push(
            "the window holds two steps: no warm-up step is left out of the steady state"
                .to_string(),
        ),
        _ => {}
    }
    if graph.task_count() > 0 && graph.kind.iter().all(|k| k.on_device()) {
        caveats.push(
            "the trace holds device work only (no launching calls): each task waits for its \
             recorded start, so a what-if can shorten or remove work but never start it earlier"
                .to_string(),
        );
    }
    if window.steps.iter().any(|s| s.teardown) {
        caveats.push(
            "the last step holds the profiler's teardown: it is left out of the steady state"
                .to_string(),
        );
    }
    let names_seen = |pred: &dyn Fn(&str) -> bool| {
        let mut seen: Vec<&str> = graph
            .name
            .iter()
            .map(|&n| trace.name(n))
            .filter(|n| pred(n))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen
    };
    let capture = names_seen(&|n| {
        n.contains("BeginCapture") || n.contains("EndCapture") || n.contains("GraphInstantiate")
    });
    if !capture.is_empty() {
        caveats.push(format!(
            "the window records a CUDA-graph capture ({}): capture and instantiation are \
             one-time costs, not a steady state",
            capture.join(", ")
        ));
    }
    // The baseline replay (without inferred edges, as every prediction is), once.
    let timeline = simulate(
        graph,
        &RecordedOrder,
        SimOptions {
            without_inferred: true,
            ..SimOptions::default()
        },
    )?;
    let baseline = measure(window, graph, &timeline)?;
    let step_ns = baseline.step_ns.max(1);
    // The same measure on the recorded times and on the baseline replay.
    let (Some(measured), Some(replayed)) = (
        steady_period(window, graph, &recorded_timeline(graph)),
        steady_period(window, graph, &timeline),
    ) else {
        return Err(WhatIfError::NoSteps);
    };
    let mut declined = anchor(&measured, &replayed);
    caveats.extend(steady_replay_error(&measured, &replayed));
    if declined.is_none() {
        declined = identity(context, baseline.step_ns)?;
    }
    if let Some(outlier) = cold_start(context, step_ns) {
        caveats.push(outlier);
    }
    // Waits only the recorded clock explained: held in the self-replay of a steady step (its
    // span with them less its span without), left out of every prediction.
    let with = simulate(graph, &RecordedOrder, SimOptions::default())?;
    let steady = baseline.steady.clone();
    let by_step = tasks_by_step(graph, window.steps.len());
    let held = steady
        .clone()
        .map(|s| {
            let step = &window.steps[s];
            let (held_with, _, _) = replayed_span(graph, &with, step, &by_step[s]);
            let (held_without, _, _) = replayed_span(graph, &timeline, step, &by_step[s]);
            let measured = measured_span(graph, step, &by_step[s]).max(1);
            (held_with - held_without).abs() as f64 / measured as f64
        })
        .fold(0.0, f64::max);
    if held > INFERRED_HELD_SHARE {
        caveats.push(format!(
            "edges inferred from timing hold up to {:.1} % of a steady step in the self-replay; \
             predictions leave them out, so the baseline they start from is off by as much",
            held * 100.0
        ));
    }
    // Blocking waits of the steady steps in the baseline replay.
    let steady_steps = steady.clone().count().max(1) as i64;
    let mut wait_ns = 0i64;
    for t in 0..graph.task_count() {
        let step = graph.step[t];
        if step == NO_STEP || !steady.contains(&(step as usize)) || graph.kind[t].on_device() {
            continue;
        }
        // Any host task whose completion waited (a sync, a blocking or pageable copy).
        if timeline.completion[t].is_some() {
            let waited = timeline.end_ns[t] - timeline.begin_ns[t] - graph.dur_ns[t];
            wait_ns = wait_ns.saturating_add(waited.max(0));
        }
    }
    Ok(WindowTrust {
        caveats,
        declined,
        blocking_wait_ns: wait_ns / steady_steps,
    })
}

/// The baseline a prediction starts from (the steady period of the replay without inferred
/// edges) may differ from the measured steady period (the same measure on the recorded times)
/// by at most this share; beyond it every prediction is declined: a speedup is a ratio to a
/// step the machine did not run.
pub const ANCHOR_SHARE: f64 = 0.03;
/// A steady step whose replay is off its measured time by more than this is said beside
/// every prediction.
const STEP_ERROR_SHARE: f64 = 0.02;

/// The anchored check: `Some(reason)` when the baseline (`replayed`) is more than
/// [`ANCHOR_SHARE`] off the `measured` steady period.
fn anchor(measured: &Period, replayed: &Period) -> Option<String> {
    if measured.step_ns <= 0 {
        return None;
    }
    let off = replayed.step_ns as f64 / measured.step_ns as f64 - 1.0;
    (off.abs() > ANCHOR_SHARE).then(|| {
        format!(
            "the replay's steady period ({:.3} ms) is {:+.1} % off the measured one ({:.3} ms), \
             more than {:.0} %: the graph does not explain this trace's steps well enough to \
             predict from",
            replayed.step_ns as f64 / 1e6,
            off * 100.0,
            measured.step_ns as f64 / 1e6,
            ANCHOR_SHARE * 100.0
        )
    })
}

/// The largest error of the baseline replay on one steady step (each step's time since the
/// previous step's end), if above [`STEP_ERROR_SHARE`].
fn steady_replay_error(measured: &Period, replayed: &Period) -> Option<String> {
    let worst = measured
        .per_step_ns()
        .iter()
        .zip(&replayed.per_step_ns())
        .filter(|&(&m, _)| m > 0)
        .map(|(&m, &r)| r as f64 / m as f64 - 1.0)
        .max_by(|a, b| a.abs().total_cmp(&b.abs()))?;
    (worst.abs() > STEP_ERROR_SHARE).then(|| {
        format!(
            "the replay of this trace's own steady steps is off by up to {:+.1} % per step \
             (the period it predicts from is within {:.0} %)",
            worst * 100.0,
            ANCHOR_SHARE * 100.0
        )
    })
}

/// The identity check: the editable graph every transform starts from, built unchanged,
/// replays as the baseline. `Some(reason)` when it does not.
fn identity(context: &Context<'_>, baseline_ns: i64) -> Result<Option<String>, WhatIfError> {
    let edit = context.edit();
    let (_, unchanged) = super::replay_with_peers(context, &edit, context.peers)?;
    Ok((unchanged.step_ns != baseline_ns).then(|| {
        format!(
            "a transform that changes nothing predicts {:.3} ms where the baseline is {:.3} ms: \
             the graph the transforms start from does not replay as the trace's own",
            unchanged.step_ns as f64 / 1e6,
            baseline_ns as f64 / 1e6
        )
    }))
}

/// The largest task far above the median of its name, if it weighs on a step.
fn cold_start(context: &Context<'_>, step_ns: i64) -> Option<String> {
    let graph = &context.window.graph;
    let mut by_name: FxHashMap<stepcast_trace::NameId, Vec<i64>> = FxHashMap::default();
    for t in 0..graph.task_count() {
        if graph.step[t] == NO_STEP {
            continue;
        }
        by_name
            .entry(graph.name[t])
            .or_default()
            .push(graph.rec_end_ns[t] - graph.rec_start_ns[t]);
    }
    let mut worst: Option<(i64, i64, usize, stepcast_trace::NameId)> = None;
    for (name, mut durations) in by_name {
        if durations.len() < OUTLIER_MIN_INSTANCES {
            continue;
        }
        durations.sort_unstable();
        let median = durations[durations.len() / 2].max(1);
        let largest = durations[durations.len() - 1];
        let heavy = largest as f64 >= OUTLIER_STEP_SHARE * step_ns as f64;
        if largest >= OUTLIER_FACTOR.saturating_mul(median) && heavy {
            let key = (largest, name.0);
            if worst.is_none_or(|(l, _, _, n)| key > (l, n.0)) {
                worst = Some((largest, median, durations.len(), name));
            }
        }
    }
    let (largest, median, count, name) = worst?;
    Some(format!(
        "a cold-start outlier weighs on the window: one {} took {:.3} ms where the median of its \
         {count} runs is {:.3} ms ({:.0} % of a step); the prediction treats it as a steady cost",
        context.trace.name(name),
        largest as f64 / 1e6,
        median as f64 / 1e6,
        largest as f64 / step_ns as f64 * 100.0
    ))
}

/// Fills `outcome`'s caveats and bound for `models` (see [`Outcome::bound_ns`]).
pub fn assess(
    context: &Context<'_>,
    window: &WindowTrust,
    models: &[Model],
    outcome: &mut Outcome,
) {
    let mut caveats = window.caveats.clone();
    for model in models {
        caveats.extend(model.caveats(context));
    }
    if let Some(other) = outcome.other_peers_speedup
        && (other - outcome.speedup).abs() > PEERS_SHARE * outcome.speedup
    {
        caveats.push(format!(
            "depends on --peers: {:.3}× with peers {}, {:.3}× with peers {}",
            outcome.speedup,
            outcome.peers.as_str(),
            other,
            outcome.peers.other().as_str()
        ));
    }
    // The most the transform can gain per steady step: what it cut along the baseline's
    // whole critical path (the replay is a longest path: see `Outcome::path_cut_ns`), the
    // time that path waited for its device beyond its edges (`WholePath::contention_ns`), and, for
    // models that remove waits rather than costs, every blocking wait of the baseline; never
    // more than the step itself.
    // A removed wait shortens the path by at most the waiting on it: the blocking calls'
    // waits and the path's own latencies and waits (an event wait, a sync's lag), as the
    // baseline replay has them. After another model has changed the graph, the waits are
    // that graph's, not the baseline's (a faster host waits longer at each sync); they are
    // then bounded by what a wait is spent on: a host thread's waits are disjoint stretches
    // of its step while the device works, so they total at most the step's device time.
    let waits = if models.iter().any(Model::removes_waits) {
        let recorded = window.blocking_wait_ns.saturating_add(outcome.path_wait_ns);
        if models.len() > 1 {
            let device_ns: i64 = outcome.phases.iter().map(|p| p.device_before_ns).sum();
            recorded.max(device_ns)
        } else {
            recorded
        }
    } else {
        0
    };
    let baseline_ns = outcome.baseline.step_ns;
    let bound_ns = outcome
        .path_cut_ns
        .saturating_add(outcome.path_contention_ns)
        .saturating_add(waits)
        .clamp(0, baseline_ns.max(0));
    outcome.bound_ns = Some(bound_ns);
    outcome.anomaly = anomaly(context, models, outcome, bound_ns);
    outcome.declined = window.declined.clone();
    outcome.rests_on = rests_on(context, outcome);
    outcome.caveats = caveats;
}

/// A step slower than the baseline from models that only remove work, or a gain above the
/// bound: what a longest path cannot do. The one constraint outside the graph's edges is the
/// device capacity model (a task filling its device holds other streams' work, whichever
/// task reaches the device first in this replay: list scheduling, which Graham (1969) showed
/// can get slower when work gets shorter, as a GPU's block scheduler can); it is named when
/// the replay without it keeps the invariant. Anything else is a bug, said as one.
fn anomaly(
    context: &Context<'_>,
    models: &[Model],
    outcome: &Outcome,
    bound_ns: i64,
) -> Option<String> {
    let gain_ns = outcome.baseline.step_ns - outcome.predicted.step_ns;
    let slower =
        models.iter().all(Model::only_removes_work) && outcome.speedup < 1.0 - ANOMALY_SHARE;
    let above = gain_ns > bound_ns.saturating_add(ANOMALY_TOLERANCE_NS);
    if !slower && !above {
        return None;
    }
    let what = if slower {
        format!(
            "the transform only removes or shortens work, yet the step is predicted {:.1} % slower",
            (1.0 / outcome.speedup - 1.0) * 100.0
        )
    } else {
        format!(
            "the predicted gain ({:.3} ms) exceeds what the transform cut along the step's \
             critical path ({:.3} ms)",
            gain_ns as f64 / 1e6,
            bound_ns as f64 / 1e6
        )
    };
    // Loading moved into worker processes is not only less work: a worker runs it on one
    // thread, and too few workers deliver batches slower than the step used to take.
    let paced = models.iter().find_map(|m| match m {
        Model::PrefetchInputs { workers, cores, .. } => {
            crate::whatif::models::delivery_ns(context, *workers, *cores)
                .filter(|&d| d as f64 >= outcome.predicted.step_ns as f64 * (1.0 - ANOMALY_SHARE))
                .map(|d| (d, *workers))
        }
        _ => None,
    });
    if slower && let Some((delivery, workers)) = paced {
        return Some(format!(
            "{what}: the {workers} loader workers deliver a batch every {:.3} ms (a worker \
             loads on one thread, slower than the training process did on its intra-op \
             threads), longer than the step took with the loading inside it",
            delivery as f64 / 1e6
        ));
    }
    let why = match outcome.unlimited_speedup {
        Some(unlimited) if !slower || unlimited >= 1.0 - ANOMALY_SHARE => format!(
            "the device capacity model made it so: with the work reordered, a kernel that fills \
             the device now holds another stream's work at another moment (a list-scheduling \
             anomaly, as a GPU's block scheduler has); with every stream on a device of its own \
             the prediction is {unlimited:.3}×"
        ),
        _ => "no constraint of the graph explains it: a defect of the engine or the model, \
              please report it with the trace"
            .to_string(),
    };
    Some(format!("{what}: {why}"))
}

/// A gain resting on one task more than this share of it is no headline...
const ONE_TASK_SHARE: f64 = 0.5;
/// ...where it is this large (or the task is a cold start).
const ONE_TASK_HEADLINE_SPEEDUP: f64 = 1.5;

/// Where more than [`ONE_TASK_SHARE`] of the gain is one task's cut: which task, how much, and
/// whether it is a one-time cost (far above the median of its name: a cold start).
fn rests_on(context: &Context<'_>, outcome: &Outcome) -> Option<String> {
    let graph = &context.window.graph;
    let (task, cut_ns) = outcome.largest_cut?;
    let steps = outcome.steady_steps.max(1) as i64;
    let gain_ns = (outcome.baseline.step_ns - outcome.predicted.step_ns).saturating_mul(steps);
    if gain_ns <= 0 || (cut_ns as f64) <= ONE_TASK_SHARE * gain_ns as f64 {
        return None;
    }
    let t = task.index();
    let name = graph.name.get(t)?;
    let mut same: Vec<i64> = (0..graph.task_count())
        .filter(|&u| graph.name[u] == *name)
        .map(|u| graph.rec_end_ns[u] - graph.rec_start_ns[u])
        .collect();
    same.sort_unstable();
    let median = same[same.len() / 2].max(1);
    let recorded = graph.rec_end_ns[t] - graph.rec_start_ns[t];
    let one_time = same.len() >= OUTLIER_MIN_INSTANCES && recorded >= OUTLIER_FACTOR * median;
    // One sync removed, one slow call made faster: a modest gain from one task is a real
    // change. A headline-sized gain from one task, or any from a cold start, is not.
    if !one_time && outcome.speedup < ONE_TASK_HEADLINE_SPEEDUP {
        return None;
    }
    Some(format!(
        "{:.0} % of the gain is one task's: a {} cut by {:.3} ms{}; no headline rests on it",
        (cut_ns as f64 / gain_ns as f64 * 100.0).min(100.0),
        context.trace.name(*name),
        cut_ns as f64 / 1e6,
        if one_time {
            format!(
                ", a one-time cost ({:.0}× the median of its {} runs, a cold start)",
                recorded as f64 / median as f64,
                same.len()
            )
        } else {
            String::new()
        }
    ))
}

/// A removing transform predicted slower than this share is an anomaly (the replay's own
/// rounding, a few ns per task, stays below it).
const ANOMALY_SHARE: f64 = 0.005;
/// A gain this far above its bound is an anomaly (rounding of per-step means).
const ANOMALY_TOLERANCE_NS: i64 = 1_000;

/// [`assess`] for one what-if: computes the window's trust, then the outcome's.
pub fn assess_one(
    context: &Context<'_>,
    models: &[Model],
    outcome: &mut Outcome,
) -> Result<(), WhatIfError> {
    let window = window_trust(context)?;
    assess(context, &window, models, outcome);
    Ok(())
}
