//! How far a prediction can be trusted: the most it can gain, computed from the trace, and the
//! conditions of the window and the model that limit it (caveats), each said in words.
//!
//! A user acts on the headline. A window that is not a steady state (one step, no markers, a
//! CUDA-graph capture), a cold-start outlier that dominates it, waits only the recorded clock
//! explained, a choice about the peers, or a model that is an upper bound by construction:
//! each changes how far the number carries, and each is said beside it.

use rustc_hash::FxHashMap;

use super::Resource;
use super::models::Model;
use super::profiler_cost::{self, ProfilerCost, WithoutProfiler};
use super::{Baseline, Context, Outcome, Period, WhatIfError, recorded_timeline, steady_period};
use crate::graph::{EdgeKind, NO_STEP};
use crate::replay::{measured_span, replayed_span, tasks_by_step};
use crate::simulate::{Binding, RecordedOrder, SimOptions, simulate};

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
    /// predictions start from is not the measured step ([`ANCHOR_SHARE`]), a step it is built
    /// from replays more than [`SELF_REPLAY_SHARE`] off its measured time, or the graph a
    /// transform starts from does not replay as the baseline (identity). Every prediction
    /// is then declined with this reason.
    pub declined: Option<String>,
    /// Time per steady step that blocking host calls spent waiting in the baseline replay: the
    /// most that removing waits (rather than costs) can gain.
    pub blocking_wait_ns: i64,
    /// The profiler's own cost on the host, where the trace shows it ([`profiler_cost`]):
    /// every prediction says how far it moves it.
    pub profiler: Option<ProfilerCost>,
    /// Where the loader already runs in worker processes and the training process waits for
    /// them long enough that they pace the step (`workers_pacing`), the sentence that says
    /// so: a change that leaves the loader is held at their pace (`workers_pace`).
    pub paced_by: Option<String>,
}

/// The window's own caveats (see the module documentation).
pub fn window_trust(context: &Context<'_>) -> Result<WindowTrust, WhatIfError> {
    window_trust_of(context, &Baseline::of(context.window)?)
}

/// [`window_trust`] of the window's baseline replay, already made.
pub fn window_trust_of(
    context: &Context<'_>,
    baseline: &Baseline,
) -> Result<WindowTrust, WhatIfError> {
    let window = context.window;
    let graph = &window.graph;
    let trace = context.trace;
    let mut caveats = Vec::new();
    // Steps inferred from the loop's own ranges are iterations, not the program's markers.
    caveats.extend(
        window
            .report
            .notes
            .iter()
            .find(|note| note.starts_with(crate::window::INFERRED_STEPS_NOTE))
            .cloned(),
    );
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
    // The baseline replay (without inferred edges, as every prediction is).
    let timeline = &baseline.timeline;
    let step_ns = baseline.prediction.step_ns.max(1);
    // The same measure on the recorded times and on the baseline replay.
    let (Some(measured), Some(replayed)) = (
        steady_period(window, graph, &recorded_timeline(graph)),
        steady_period(window, graph, timeline),
    ) else {
        return Err(WhatIfError::NoSteps);
    };
    // Each step of the window, replayed, against its measured time: the
    // self-replay's per-step error as `replay` reports it (`replayed_without_inferred_ns`).
    // With it, the replay with edges inferred from timing, where the graph has any (else the
    // same replay): what those edges hold of a step.
    let inferred = graph.pred_kind.iter().any(|kind| kind.is_inferred())
        || graph.dur_ns != graph.dur_without_inferred_ns;
    let with = if inferred {
        Some(simulate(graph, &RecordedOrder, SimOptions::default())?)
    } else {
        None
    };
    let steady = baseline.prediction.steady.clone();
    let by_step = tasks_by_step(graph, window.steps.len());
    let mut worst: Option<StepError> = None;
    let mut held = 0.0f64;
    // Every step of the window, warm-up and teardown too (as `replay` and its bar count them):
    // a step the graph cannot explain (another process time-slicing the GPU, work nothing
    // recorded) says the graph misses a mechanism of this trace, which the steady steps may
    // hide by chance.
    for s in 0..window.steps.len() {
        let step = &window.steps[s];
        if by_step[s].is_empty() {
            continue;
        }
        let measured_ns = measured_span(graph, step, &by_step[s]);
        let (replayed_ns, _, _) = replayed_span(graph, timeline, step, &by_step[s]);
        if measured_ns > 0 {
            let error = replayed_ns as f64 / measured_ns as f64 - 1.0;
            if worst.as_ref().is_none_or(|w| error.abs() > w.error.abs()) {
                worst = Some(StepError {
                    number: step.number,
                    measured_ns,
                    replayed_ns,
                    error,
                });
            }
        }
        if let Some(with) = with.as_ref().filter(|_| steady.contains(&s)) {
            let (held_with, _, _) = replayed_span(graph, with, step, &by_step[s]);
            held = held.max((held_with - replayed_ns).abs() as f64 / measured_ns.max(1) as f64);
        }
    }
    let mut declined = anchor(&measured, &replayed);
    if declined.is_none() {
        declined = worst.as_ref().and_then(StepError::declines);
    }
    caveats.extend(steady_replay_error(&measured, &replayed));
    if declined.is_none() {
        declined = identity(context, baseline.prediction.step_ns)?;
    }
    if let Some(outlier) = cold_start(context, step_ns) {
        caveats.push(outlier);
    }
    // Waits only the recorded clock explained: held in the self-replay of a steady step (its
    // span with them less its span without), left out of every prediction.
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
        // Any host task whose completion waited (a sync, a blocking or pageable copy), but
        // not for its peers: a host-run collective (gloo's) waits for the other ranks, the
        // declared input a one-rank what-if keeps (or balances, counting it in its path cut),
        // not a wait a model that removes syncs or loading could remove.
        let on_peers = matches!(
            timeline.completion[t],
            Some(Binding::PeerWait | Binding::Edge(_, EdgeKind::PeerArrival))
        );
        if timeline.completion[t].is_some() && !on_peers {
            let waited = timeline.end_ns[t] - timeline.begin_ns[t] - graph.dur_ns[t];
            wait_ns = wait_ns.saturating_add(waited.max(0));
        }
    }
    Ok(WindowTrust {
        caveats,
        declined,
        blocking_wait_ns: wait_ns / steady_steps,
        profiler: profiler_cost::estimate(context.trace, window, &steady),
        paced_by: crate::whatif::models::workers_wait_ns(context)
            .and_then(|wait_ns| workers_pacing(wait_ns, baseline.prediction.step_ns)),
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
/// A step of the window (warm-up included) whose self-replay (without edges inferred from timing)
/// is off its measured span by more than this declines every prediction on the window: the
/// graph does not explain that step, so no change to it can be predicted from it. The bar
/// `../shared/tools/replay_accuracy.py` holds the self-replay to, with the same measure
/// (`replay`'s `replayed_without_inferred_ns` against `measured_ns`).
pub const SELF_REPLAY_SHARE: f64 = 0.02;

/// The self-replay of one step of the window, against its measured span.
#[derive(Clone, Copy, Debug, PartialEq)]
struct StepError {
    /// The step's number (its `ProfilerStep#N`).
    number: u64,
    measured_ns: i64,
    replayed_ns: i64,
    /// `replayed_ns / measured_ns - 1`.
    error: f64,
}

impl StepError {
    /// Why every prediction is declined, if this step's error is above [`SELF_REPLAY_SHARE`].
    fn declines(&self) -> Option<String> {
        (self.error.abs() > SELF_REPLAY_SHARE).then(|| {
            format!(
                "the self-replay of step {} is {:+.1} % off its measured time ({:.3} ms replayed, \
                 {:.3} ms measured; the worst of the window's steps), more \
                 than {:.0} %: the graph does not explain this trace's steps well enough to \
                 predict from",
                self.number,
                self.error * 100.0,
                self.replayed_ns as f64 / 1e6,
                self.measured_ns as f64 / 1e6,
                SELF_REPLAY_SHARE * 100.0
            )
        })
    }
}

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

/// A baseline the profiler's own cost moves by less than this share is not worth a caveat.
const PROFILER_SHARE: f64 = 0.01;

/// How far the profiler's own cost moves `outcome`: its baseline and prediction less that
/// cost's share of their host time on the critical path (first order: the path is kept);
/// `None` where it moves the baseline by less than [`PROFILER_SHARE`].
fn without_profiler(cost: &ProfilerCost, outcome: &Outcome) -> Option<WithoutProfiler> {
    let host = |p: &super::Prediction| p.bottleneck.by_resource[Resource::Host as usize];
    let baseline_ns = outcome.baseline.step_ns;
    let baseline_without = cost.without(baseline_ns, host(&outcome.baseline));
    let predicted_without = cost.without(outcome.predicted.step_ns, host(&outcome.predicted));
    if ((baseline_ns - baseline_without) as f64) < PROFILER_SHARE * baseline_ns as f64 {
        return None;
    }
    Some(WithoutProfiler {
        baseline_ns: baseline_without,
        predicted_ns: predicted_without,
        speedup: super::speedup(baseline_without, predicted_without),
        upper_side: cost.retains_host_tensors,
    })
}

/// The caveat that says what the profiler recorded and [`without_profiler`]'s figures.
fn profiler_caveat(cost: &ProfilerCost, without: &WithoutProfiler, outcome: &Outcome) -> String {
    let recorded = if cost.options.is_empty() {
        "every op and runtime call".to_string()
    } else {
        format!(
            "every op and runtime call, with {}",
            cost.options.join(", ")
        )
    };
    let uncounted = if without.upper_side {
        "; and less by what this does not count: record_shapes held every op's input tensors \
         until the profile was collected (pytorch/pytorch#133444), so each CPU op's output \
         took memory not touched lately (page faults, cold caches) inside its recorded time, \
         where an untraced step reuses the buffer just freed (steps traced with record_shapes \
         took 0-24 % longer than without it on this project's CPU, the less the further the \
         process's heap had grown before)"
    } else {
        ""
    };
    // The speedups as shown: where they round alike, the profiler's cost does not move it.
    let (untraced, traced) = (
        format!("{:.3}×", without.speedup),
        format!("{:.3}×", outcome.speedup),
    );
    let speedup = if untraced == traced {
        format!("{traced} either way")
    } else {
        format!("{untraced} instead of {traced}")
    };
    format!(
        "the profiler recorded {recorded}: {} host events per step at about {:.1} µs each (the \
         median gap between an op's child calls), {:.0} % of the steps' time; without \
         it the baseline would be about {:.3} ms and this prediction {:.3} ms \
         ({speedup}){uncounted}",
        cost.events_per_step,
        cost.per_event_ns as f64 / 1e3,
        cost.host_share * 100.0,
        without.baseline_ns as f64 / 1e6,
        without.predicted_ns as f64 / 1e6,
    )
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

/// The largest task of the steady steps far above the median of its name, if it weighs on a
/// step. One in the warm-up step is out of the steady period the prediction is of (a trace
/// without markers whose steps are its loop's iterations keeps its cold start there).
fn cold_start(context: &Context<'_>, step_ns: i64) -> Option<String> {
    let graph = &context.window.graph;
    let first = super::first_steady(context.window);
    let mut by_name: FxHashMap<stepcast_trace::NameId, Vec<i64>> = FxHashMap::default();
    for t in 0..graph.task_count() {
        if graph.step[t] == NO_STEP || (graph.step[t] as usize) < first {
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

/// How far one prediction can be trusted, as a report carries it beside its figures
/// (`optimize`'s moves): what [`assess`] filled in its [`Outcome`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    /// The baseline step the prediction is against (what the bound is a share of).
    pub baseline_ns: i64,
    /// [`Outcome::bound_ns`].
    pub bound_ns: Option<i64>,
    /// [`Outcome::caveats`].
    pub caveats: Vec<String>,
    /// [`Outcome::anomaly`].
    pub anomaly: Option<String>,
    /// [`Outcome::rests_on`].
    pub rests_on: Option<String>,
    /// [`Outcome::declined`].
    pub declined: Option<String>,
    /// [`Outcome::without_profiler`].
    pub without_profiler: Option<WithoutProfiler>,
}

impl Verdict {
    pub fn of(outcome: &Outcome) -> Verdict {
        Verdict {
            baseline_ns: outcome.baseline.step_ns,
            bound_ns: outcome.bound_ns,
            caveats: outcome.caveats.clone(),
            anomaly: outcome.anomaly.clone(),
            rests_on: outcome.rests_on.clone(),
            declined: outcome.declined.clone(),
            without_profiler: outcome.without_profiler,
        }
    }
}

/// What assessing a prediction needs of its transform besides the outcome: the models'
/// (or `optimize` moves') own caveats and what kind of change it is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TransformKind {
    /// What limits the transform's prediction, one sentence each (`Model::caveats`).
    pub caveats: Vec<String>,
    /// It removes waits (dependencies), not only costs ([`Model::removes_waits`]).
    pub removes_waits: bool,
    /// It only removes or shortens work ([`Model::only_removes_work`]): a slower step is an
    /// anomaly.
    pub only_removes_work: bool,
    /// More than one change composed: the waits a wait-removing change removes are then the
    /// changed graph's.
    pub combined: bool,
    /// Loading moved into worker processes (`prefetch_inputs`): their pace, what can make
    /// such a change slower.
    pub loader_pace: Option<LoaderPace>,
    /// A change of machine only: the most any cost is divided by, the product over its
    /// models ([`Model::largest_speed`]): the step cannot get more times faster.
    pub machine_speed: Option<f64>,
    /// The transform leaves the loader as it is (`None` where it changes it:
    /// `prefetch_inputs`), with how many times faster it makes the host (whose workers run
    /// faster too): where the workers pace the step ([`WindowTrust::paced_by`]), nothing in
    /// the training process moves their pace.
    pub keeps_loader: Option<f64>,
    /// Why the trace and the model's inputs fall outside what the model stands for
    /// ([`Model::outside_domain`]): the prediction is then declined with this reason.
    pub outside_domain: Option<String>,
}

/// The pace of a loader moved into worker processes (`prefetch_inputs`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoaderPace {
    /// A batch delivered every so often ([`crate::whatif::models::delivery_ns`]).
    pub delivery_ns: i64,
    pub workers: u32,
    /// Batches the training process loaded per steady step (more than one where a step holds
    /// several: gradient accumulation, or steps a pattern or the loop's updates make).
    pub batches_per_step: f64,
}

impl LoaderPace {
    fn of(
        context: &Context<'_>,
        workers: u32,
        host: crate::whatif::models::LoaderHost,
    ) -> Option<LoaderPace> {
        // One reading of the loading work for both: it walks every loading op.
        let work = crate::whatif::models::loader_work(context);
        let window = context.window;
        let steady = window
            .steps
            .len()
            .saturating_sub(super::first_steady(window));
        Some(LoaderPace {
            delivery_ns: work.delivery_ns(workers, host)?,
            workers,
            batches_per_step: work.batches as f64 / steady.max(1) as f64,
        })
    }

    /// The workers' pace over one step's batches: no step is shorter.
    fn per_step_ns(&self) -> f64 {
        self.delivery_ns as f64 * self.batches_per_step
    }
}

impl TransformKind {
    /// The kind of `models` applied in order.
    pub fn of_models(context: &Context<'_>, models: &[Model]) -> TransformKind {
        TransformKind {
            caveats: models.iter().flat_map(|m| m.caveats(context)).collect(),
            removes_waits: models.iter().any(Model::removes_waits),
            only_removes_work: models.iter().all(Model::only_removes_work),
            combined: models.len() > 1,
            loader_pace: models.iter().find_map(|m| match m {
                Model::PrefetchInputs { workers, host, .. } => {
                    LoaderPace::of(context, *workers, *host)
                }
                _ => None,
            }),
            machine_speed: models
                .iter()
                .map(|m| m.largest_speed(context))
                .try_fold(1.0, |product, speed| Some(product * speed?))
                .filter(|_| !models.is_empty()),
            outside_domain: models.iter().find_map(|m| m.outside_domain(context)),
            keeps_loader: models
                .iter()
                .all(|m| !matches!(m, Model::PrefetchInputs { .. }))
                .then(|| host_speed(models)),
        }
    }
}

/// How many times faster `models` make the host: the product of their host factors.
fn host_speed(models: &[Model]) -> f64 {
    models
        .iter()
        .map(|m| match m {
            Model::FasterHardware(hardware) => hardware.cpu,
            _ => 1.0,
        })
        .product()
}

/// Fills `outcome`'s caveats and bound for `models` (see [`Outcome::bound_ns`]).
pub fn assess(
    context: &Context<'_>,
    window: &WindowTrust,
    models: &[Model],
    outcome: &mut Outcome,
) {
    assess_kind(
        context,
        window,
        &TransformKind::of_models(context, models),
        outcome,
    );
}

/// [`assess`] for a transform described by its [`TransformKind`] (an `optimize` move).
pub fn assess_kind(
    context: &Context<'_>,
    window: &WindowTrust,
    kind: &TransformKind,
    outcome: &mut Outcome,
) {
    let mut caveats = window.caveats.clone();
    caveats.extend(kind.caveats.iter().cloned());
    if let Some(speed) = kind.machine_speed {
        caveats.extend(machine_limit(outcome, speed));
    }
    if let (Some(paced_by), Some(host_speed)) = (&window.paced_by, kind.keeps_loader) {
        caveats.extend(workers_pace(outcome, paced_by, host_speed));
    }
    outcome.without_profiler = window
        .profiler
        .as_ref()
        .and_then(|cost| without_profiler(cost, outcome));
    if let (Some(cost), Some(without)) = (&window.profiler, &outcome.without_profiler) {
        caveats.push(profiler_caveat(cost, without, outcome));
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
    let waits = if kind.removes_waits {
        let recorded = window.blocking_wait_ns.saturating_add(outcome.path_wait_ns);
        if kind.combined {
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
    let (anomaly, explained) = match anomaly(kind, outcome, bound_ns) {
        Some((text, explained)) => (Some(text), explained),
        None => (None, true),
    };
    // An anomaly no constraint of the graph explains is a defect of the engine or the model:
    // its figures are no prediction.
    outcome.declined = window
        .declined
        .clone()
        .or_else(|| kind.outside_domain.clone())
        .or_else(|| anomaly.clone().filter(|_| !explained));
    outcome.anomaly = anomaly;
    outcome.rests_on = rests_on(context, outcome);
    outcome.caveats = caveats;
}

/// A machine whose every cost is at most `speed` times shorter (and no lag longer) runs the
/// step at most `speed` times faster; where the replay says more, the excess is a transient
/// of the period's measure, not steady gain: the warm-up step stays as recorded, and where the
/// host runs ahead of the device, part of the first steady step runs before the recorded
/// warm-up ends; a faster host fits more of it there, a head start paid once (everything 4×
/// faster read as 4.03× on `h200-pairs/resnet-fp32-prof_minimal`). The prediction is then
/// held at the machine's limit, and says so.
fn machine_limit(outcome: &mut Outcome, speed: f64) -> Option<String> {
    let baseline_ns = outcome.baseline.step_ns;
    if speed.is_nan() || speed < 1.0 || outcome.speedup <= speed {
        return None;
    }
    let replayed = outcome.speedup;
    let limit_ns = (baseline_ns as f64 / speed).ceil() as i64;
    outcome.predicted.step_ns = limit_ns;
    outcome.speedup = super::speedup(baseline_ns, limit_ns);
    Some(format!(
        "held at {speed:.3}×, the most a machine whose costs are at most {speed:.3}× shorter \
         gives: the replay read {replayed:.3}×, the excess a head start the host's recorded lead \
         over the warm-up step gives the first steady step, paid once"
    ))
}

/// The training process waits this share of its step or more for its `DataLoader` workers:
/// the workers set the step's pace.
const WORKERS_BOUND_SHARE: f64 = 0.05;

/// Whether the training process's wait for its `DataLoader` workers (`wait_ns` per batch) is
/// at least [`WORKERS_BOUND_SHARE`] of the `step_ns` step, so that the workers pace it: then
/// the sentence that says so ([`WindowTrust::paced_by`]).
fn workers_pacing(wait_ns: i64, step_ns: i64) -> Option<String> {
    ((wait_ns as f64) >= WORKERS_BOUND_SHARE * step_ns as f64 && step_ns > 0).then(|| {
        format!(
            "the training process waits {:.3} ms per batch for its DataLoader workers \
             (`_MultiProcessingDataLoaderIter`): they deliver a batch per {:.3} ms step",
            wait_ns as f64 / 1e6,
            step_ns as f64 / 1e6
        )
    })
}

/// Where the training process waits for its `DataLoader` workers (`wait` says how
/// long, [`workers_pacing`]), the workers deliver a batch per measured step: a faster
/// training process waits longer for them, and the step stays at their pace, or that pace
/// over `host_speed` where the host (which runs the workers too) is faster. A prediction
/// below it is held there, and says so. The replay cannot see this on its own: the wait is
/// untraced time inside `_MultiProcessingDataLoaderIter.__next__`, host time to the graph
/// (`h200-pairs/loader-workers2`: two workers, 189 ms of waiting every other step;
/// `cuda_graphs` read 1.23× there).
fn workers_pace(outcome: &mut Outcome, wait: &str, host_speed: f64) -> Option<String> {
    let baseline_ns = outcome.baseline.step_ns;
    if host_speed <= 0.0 {
        return None;
    }
    let pace_ns = (baseline_ns as f64 / host_speed).ceil() as i64;
    if outcome.predicted.step_ns >= pace_ns {
        return Some(format!(
            "{wait}, a pace the prediction does not go below; more workers \
             (prefetch_inputs --workers) or cheaper loading would move it"
        ));
    }
    let replayed = outcome.speedup;
    outcome.predicted.step_ns = pace_ns;
    outcome.speedup = super::speedup(baseline_ns, pace_ns);
    Some(format!(
        "held at {:.3}×, the workers' pace: {wait}{}, and a faster training process only \
         waits longer for them (the replay, which takes the wait for host work, read \
         {replayed:.3}×); more workers (prefetch_inputs --workers) or cheaper loading would \
         move it",
        outcome.speedup,
        if host_speed != 1.0 {
            format!(", on a host {host_speed}× faster (the workers run on it too)")
        } else {
            String::new()
        }
    ))
}

/// A step slower than the baseline from models that only remove work, or a gain above the
/// bound: what a longest path cannot do. The one constraint outside the graph's edges is the
/// device capacity model (a task filling its device holds other streams' work, whichever
/// task reaches the device first in this replay: list scheduling, which Graham (1969) showed
/// can get slower when work gets shorter, as a GPU's block scheduler can); it is named when
/// the replay without it keeps the invariant. Anything else is a bug, said as one (the second
/// of the pair is then `false`: the prediction is declined).
fn anomaly(kind: &TransformKind, outcome: &Outcome, bound_ns: i64) -> Option<(String, bool)> {
    let gain_ns = outcome.baseline.step_ns - outcome.predicted.step_ns;
    let slower = kind.only_removes_work && outcome.speedup < 1.0 - ANOMALY_SHARE;
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
    // thread, and too few workers deliver batches slower than the step used to take. The
    // paced step is that pace plus what the training process does with a batch before the
    // next step's handoff can begin (a millisecond over the pace on `loader2t-workers0`):
    // the pace explains a slower step where it alone is longer than the step was.
    let paced = kind
        .loader_pace
        .filter(|pace| pace.per_step_ns() >= outcome.baseline.step_ns as f64);
    if slower && let Some(pace) = paced {
        let batches = if pace.batches_per_step > 1.0 {
            format!(
                ", {:.3} ms for the {:.1} batches of a step",
                pace.per_step_ns() / 1e6,
                pace.batches_per_step
            )
        } else {
            String::new()
        };
        return Some((
            format!(
                "{what}: the {} loader workers deliver a batch every {:.3} ms{batches} (a worker \
             loads on one thread, slower than the training process did on its intra-op \
             threads), longer than the step took with the loading inside it",
                pace.workers,
                pace.delivery_ns as f64 / 1e6
            ),
            true,
        ));
    }
    // Without the capacity model, the step is not slower (slower), or the gain at that
    // speedup is within the bound (above): then that model made the difference.
    let baseline_ns = outcome.baseline.step_ns as f64;
    let capacity = outcome.unlimited_speedup.filter(|&unlimited| {
        if slower {
            unlimited >= 1.0 - ANOMALY_SHARE
        } else {
            baseline_ns - baseline_ns / unlimited
                <= bound_ns.saturating_add(ANOMALY_TOLERANCE_NS) as f64
        }
    });
    let why = match capacity {
        Some(unlimited) => format!(
            "the device capacity model made it so: with the work reordered, a kernel that fills \
             the device now holds another stream's work at another moment (a list-scheduling \
             anomaly, as a GPU's block scheduler has); with every stream on a device of its own \
             the prediction is {unlimited:.3}×"
        ),
        None => "no constraint of the graph explains it: a defect of the engine or the model, \
                 please report it with the trace"
            .to_string(),
    };
    Some((format!("{what}: {why}"), capacity.is_some()))
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
