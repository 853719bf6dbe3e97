//! How far a prediction can be trusted: the most it can gain, computed from the trace, and the
//! conditions of the window and the model that limit it (caveats), each said in words.
//!
//! A user acts on the headline. A window that is not a steady state (one step, no markers, a
//! CUDA-graph capture), a cold-start outlier that dominates it, waits only the recorded clock
//! explained, a choice about the peers, or a model that is an upper bound by construction:
//! each changes how far the number carries, and each is said beside it.

use rustc_hash::FxHashMap;

use super::models::Model;
use super::{Context, Outcome, Peers, WhatIfError, measure};
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
        blocking_wait_ns: wait_ns / steady_steps,
    })
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
    // The most the transform can gain per steady step: what it took off the tasks' costs and
    // untraced gaps (the replay is a longest path, so cutting costs by Δ in all shortens it
    // by at most Δ), the peers' wait it dropped, and, for models that remove waits rather than
    // costs, every blocking wait of the baseline.
    let saved =
        outcome.host_saved_ns().max(0) + outcome.device_saved_ns().max(0) + outcome.lag_saved_ns;
    let peers = match outcome.peers {
        Peers::Balanced => outcome.baseline_peer_wait_ns,
        Peers::Skew => 0,
    };
    let waits = if models.iter().any(Model::removes_waits) {
        window.blocking_wait_ns
    } else {
        0
    };
    outcome.bound_ns = Some(saved + peers + waits);
    outcome.caveats = caveats;
}

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
