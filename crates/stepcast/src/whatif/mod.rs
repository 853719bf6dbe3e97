//! What-if analysis (Daydream §4.4–§5): transform the window's graph with primitives
//! ([`edit`]), replay it, and compare the predicted step time with the baseline.
//!
//! The step time compared is the **steady-state period of the whole-window replay**: the mean
//! time between the ends of consecutive steady steps (the end of a step is when its last
//! device task or its marker thread's work ends, as `replay` measures a step; a thread that
//! runs on its own clock does not end one), `(end of last steady step - end of the step
//! before the first steady one) / count`.
//! It measures throughput whatever the regime (host-bound, device-bound, synchronized or not),
//! where a step's span from its host start would grow as a faster host runs ahead of the
//! device. Baseline and prediction use the same measure on the same replay engine, so the
//! replay's own error largely cancels in the speedup. With fewer than three steps there is no
//! step before the first steady one: the period is then measured from the first steady step's
//! replayed start. Transforms leave the warm-up step (and tasks outside every step) as
//! recorded: see [`Context::edit`].

pub mod advise;
mod bottleneck;
mod cow_vec;
pub mod ddp;
pub mod edit;
pub mod job;
pub mod models;
mod prediction;
pub mod profiler_cost;
pub mod record;
pub mod scenario;
pub mod step_time;
pub mod trust;

use stepcast_trace::Trace;

use crate::Window;
use crate::analyze::host_time;
use crate::analyze::mapping::{Mapping, Phase};
use crate::graph::{Graph, NO_STEP, TaskId};
use crate::simulate::{RecordedOrder, SimError, SimOptions, simulate};

pub use advise::{Advice, Candidate, advise, advise_on};
pub use bottleneck::{Bottleneck, PathItem, Resource};

pub use edit::{
    EditError, EditGraph, FusedCost, HostGaps, Insert, InsertHost, InsertLaunch, Select,
    SelectContext, Selection, median_duration,
};
pub use models::{AmpDtype, Hardware, Model, ModelError, ModelParams, dtype_param, target_param};
pub(crate) use prediction::first_steady;
pub use prediction::{
    Baseline, Period, Prediction, WholePath, predict, recorded_timeline, steady_period,
};
use prediction::{Ends, baseline_path, measure};
pub use scenario::{Scenario, ScenarioError};
pub use step_time::{KindItem, StepTime, TimeKind};

/// Why a what-if failed.
#[derive(Debug, thiserror::Error)]
pub enum WhatIfError {
    #[error(transparent)]
    Edit(#[from] EditError),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("the window has no step with tasks: nothing to predict")]
    NoSteps,
    /// `faster_hardware --to`: the trace's GPU has no datasheet here to take ratios from.
    #[error(
        "the trace's GPU ({gpu}) is not one whose datasheet stepcast knows ({known}): give --compute, --memory and --copy instead of --to"
    )]
    UnknownGpu { gpu: String, known: String },
    /// A prediction that failed its own checks (`trust::assess`): its figures are no
    /// prediction.
    #[error("declined: {0}")]
    Declined(String),
    /// A job's ranks could not be replayed together.
    #[error("the job: {0}")]
    Job(String),
    #[error("model {name}: {source}")]
    Model {
        name: String,
        source: Box<WhatIfError>,
    },
}

/// What a collective's peers do in a prediction. A one-rank trace does not show its peers:
/// each collective carries their recorded lateness relative to this rank's readiness
/// (`Graph::peer_wait_ns`), a declared input the user chooses how to carry over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Peers {
    /// Peers keep their recorded lateness and otherwise run the same transformed program
    /// (dPRO's symmetry): a straggler stays one.
    #[default]
    Skew,
    /// No straggler: every peer is ready when this rank is.
    Balanced,
}

impl Peers {
    pub fn as_str(self) -> &'static str {
        match self {
            Peers::Skew => "skew",
            Peers::Balanced => "balanced",
        }
    }

    /// The other policy.
    pub fn other(self) -> Peers {
        match self {
            Peers::Skew => Peers::Balanced,
            Peers::Balanced => Peers::Skew,
        }
    }
}

/// What a what-if reads: the trace (names, devices), its window and the mapping of its tasks,
/// and what the peers of its collectives do.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    pub trace: &'a Trace,
    pub window: &'a Window,
    pub mapping: &'a Mapping,
    pub peers: Peers,
    /// Which op feeds which, where an Execution Trace of the run was joined (`--et`): the
    /// models that ask what an op depends on read it before any guess from shapes.
    pub data: Option<&'a crate::et::DataDependencies>,
}

impl<'a> Context<'a> {
    /// A context with peers that keep their recorded lateness (the default).
    pub fn new(trace: &'a Trace, window: &'a Window, mapping: &'a Mapping) -> Context<'a> {
        Context {
            trace,
            window,
            mapping,
            peers: Peers::Skew,
            data: None,
        }
    }

    pub fn select_context(&self) -> SelectContext<'a> {
        SelectContext {
            trace: self.trace,
            mapping: Some(self.mapping),
        }
    }

    /// An editable copy of the window's graph with its calibrated constants. The tasks of
    /// the warm-up step and those outside every step are frozen (never selected): the
    /// warm-up step stays as recorded, the reference the steady steps are measured from.
    pub fn edit(&self) -> EditGraph {
        let graph = &self.window.graph;
        let mut edit = EditGraph::new(
            graph,
            self.window.report.launch_latency_ns,
            self.window.report.dispatch_gap_ns,
        );
        let first_steady = first_steady(self.window) as u32;
        let warm_up = edit.select_where(|t| {
            let step = graph.step[t.index()];
            step == NO_STEP || step < first_steady
        });
        edit.freeze(&warm_up);
        edit
    }
}

/// What a task of a transformed graph changed: counts over the whole window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Input tasks still there whose cost or untraced gap after them changed.
    pub changed: usize,
    /// Input tasks removed (fused-away tasks included).
    pub removed: usize,
    /// Tasks inserted.
    pub added: usize,
}

/// Host and device time of one phase in the steady steps, before and after a transform: the
/// mean per steady step. Host time is the cost of host tasks plus the untraced host time after
/// them; device time is the cost of device tasks (kernels, copies, memsets, collectives).
/// Phases come from the mapping of the input's tasks; an inserted task takes the phase of the
/// task it was inserted after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseTime {
    pub phase: Phase,
    pub host_before_ns: i64,
    pub host_after_ns: i64,
    pub device_before_ns: i64,
    pub device_after_ns: i64,
}

/// A what-if's result.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub baseline: Prediction,
    pub predicted: Prediction,
    /// `baseline.step_ns / predicted.step_ns`.
    pub speedup: f64,
    /// Tasks of the input graph and of the transformed one.
    pub tasks_before: usize,
    pub tasks_after: usize,
    /// Tasks changed, removed and added (whole window; the warm-up step never changes).
    pub changes: Changes,
    /// Steady steps the per-step figures are means over.
    pub steady_steps: usize,
    /// Host and device time per phase and steady step, before and after, in [`Phase::ALL`]
    /// order.
    pub phases: Vec<PhaseTime>,
    /// The transformed graph (empty in [`advise()`]'s candidates, which keep only the figures).
    pub graph: Graph,
    /// What the peers did in this prediction, and the speedup under the other choice (`None`
    /// when no collective waits for peers: the choice changes nothing).
    pub peers: Peers,
    pub other_peers_speedup: Option<f64>,
    /// Declared wait for peers per steady step in the prediction (the input `peers` sets).
    pub peer_wait_ns: i64,
    /// Edges of the predicted graph whose lag is a recorded time rather than a cause (edges
    /// inferred from timing): 0, by construction of [`EditGraph::new`]; counted so that a
    /// reader can check it.
    pub pinned_edges: u64,
    /// Declared wait for peers per steady step before the transform.
    pub baseline_peer_wait_ns: i64,
    /// Edge lags the transform shortened, per steady step (launch lags of faster calls,
    /// scaled handoffs): time cut from paths, like costs.
    pub lag_saved_ns: i64,
    /// Host cost (own cost and untraced gap) cut on every host thread per steady step
    /// (negative: added). `phases` count the step's marker thread only (`analyze::host_time`);
    /// a cut on another thread (the autograd engine's) shortens paths as much, so the gain's
    /// bound counts this.
    pub host_cost_saved_ns: i64,
    /// The most the transform can gain per steady step, computed from the trace
    /// ([`trust::assess`]): `baseline.step_ns - predicted.step_ns` never exceeds it. `None`
    /// until assessed.
    pub bound_ns: Option<i64>,
    /// What limits the prediction, one sentence each ([`trust::assess`]); empty until
    /// assessed or when nothing does.
    pub caveats: Vec<String>,
    /// The baseline and predicted step less the profiler's own cost, where it moves the
    /// baseline by 1 % or more ([`trust::assess`], [`profiler_cost`]); `None` otherwise or
    /// until assessed.
    pub without_profiler: Option<profiler_cost::WithoutProfiler>,
    /// What the transform cut along the baseline's whole critical path, per steady step: its
    /// tasks' costs, untraced gaps and incoming lags (and, with `Peers::Balanced`, their
    /// peers' wait). The replay is a longest path: after a transform that only shortens, the
    /// new longest path was no longer before it, so the baseline's path shortened by at most
    /// this is still at least as long as the new one ([`trust::assess`]'s bound).
    pub path_cut_ns: i64,
    /// The baseline's whole critical path's device contention per steady step
    /// ([`WholePath::contention_ns`]): what the bound adds to the cuts.
    pub path_contention_ns: i64,
    /// Its waits per steady step ([`WholePath::wait_ns`]): what the bound adds for a model
    /// that removes waits.
    pub path_wait_ns: i64,
    /// The task of the baseline's critical path the transform cut most, and by how much over
    /// the whole steady span (not per step): a gain that rests mostly on one task (a
    /// cold-start call, one huge kernel) is no headline ([`trust::assess`]).
    pub largest_cut: Option<(TaskId, i64)>,
    /// The speedup with the device capacity model left out of both replays (every stream as
    /// if it had its device to itself): computed only where the prediction is slower than the
    /// baseline or gains more than it cut along the baseline's path, to name the constraint
    /// that made it so ([`trust::assess`]).
    pub unlimited_speedup: Option<f64>,
    /// Where the gain rests mostly on one task, which and how much ([`trust::assess`]): no
    /// headline rests on it.
    pub rests_on: Option<String>,
    /// Why no prediction on this window can be trusted, if none can (`WindowTrust::declined`):
    /// the figures are kept for a reader who wants them, but never shown as a prediction.
    pub declined: Option<String>,
    /// Why the prediction responds as no machine would, if it does ([`trust::assess`]): a
    /// slower step from a transform that only removes work, or a gain above the bound, with
    /// the constraint that made it so. `None` when it responds as expected.
    pub anomaly: Option<String>,
}

impl Outcome {
    /// Host time per steady step saved by the transform on every host thread (negative:
    /// added): [`Outcome::host_cost_saved_ns`].
    pub fn host_saved_ns(&self) -> i64 {
        self.host_cost_saved_ns
    }

    /// Device time per steady step saved by the transform (negative: added).
    pub fn device_saved_ns(&self) -> i64 {
        self.phases
            .iter()
            .map(|p| p.device_before_ns - p.device_after_ns)
            .sum()
    }
}

/// Applies `transform` to an editable copy of the window's graph, replays the result and
/// compares it with the baseline replay. The window is not changed.
pub fn what_if(
    context: &Context<'_>,
    transform: impl FnOnce(&mut EditGraph) -> Result<(), WhatIfError>,
) -> Result<Outcome, WhatIfError> {
    let baseline = Baseline::of(context.window)?;
    what_if_prepared(context, &Prepared::of(context, &baseline), transform)
}

/// [`what_if`] with a baseline already computed (to run many what-ifs on one window).
pub fn what_if_against(
    context: &Context<'_>,
    baseline: &Prediction,
    transform: impl FnOnce(&mut EditGraph) -> Result<(), WhatIfError>,
) -> Result<Outcome, WhatIfError> {
    what_if_prepared(context, &Prepared::new(context, baseline), transform)
}

/// What every what-if of one window starts from, made once for many (`advise`'s
/// candidates): the baseline, the window's editable graph, and the untransformed figures the
/// outcome compares with. Each what-if clones the editable graph, which shares its storage
/// until written ([`EditGraph`]), so a candidate copies what it changes, not the window.
pub struct Prepared {
    baseline: Prediction,
    base: EditGraph,
    /// (host, device) per phase of the untransformed steady steps ([`phase_times`]).
    phases_before: [(i64, i64); 6],
    /// Host cost (own and gap) of every host thread over the steady steps.
    host_cost: i64,
    /// Declared wait for peers over the steady steps.
    peer_wait: i64,
    /// Whether outcomes keep their transformed graph ([`Prepared::figures_only`]).
    keeps_graphs: bool,
    /// The outcome of an edit no model wrote to, once one was predicted (figures only):
    /// several of `advise`'s candidates change nothing on a given trace, and each would
    /// replay the same graph again.
    unedited: std::sync::OnceLock<Outcome>,
    /// The baseline's whole critical path ([`baseline_path`]), found on the first prediction.
    path: std::sync::OnceLock<WholePath>,
}

impl Prepared {
    pub fn new(context: &Context<'_>, baseline: &Prediction) -> Prepared {
        let base = context.edit();
        let steady = baseline.steady.clone();
        let in_steady = |step: u32| step != NO_STEP && steady.contains(&(step as usize));
        let marker = host_time::marker_lane(context.trace);
        let phases_before = phase_times(&base, context.window, marker, context.mapping, &steady);
        let host_cost = host_cost(&base, &steady);
        let peer_wait = (0..base.id_bound())
            .map(|t| TaskId(t as u32))
            .filter(|&t| base.is_alive(t) && in_steady(base.step(t)))
            .map(|t| base.peer_wait_ns(t))
            .sum();
        Prepared {
            baseline: baseline.clone(),
            base,
            phases_before,
            host_cost,
            peer_wait,
            keeps_graphs: true,
            unedited: std::sync::OnceLock::new(),
            path: std::sync::OnceLock::new(),
        }
    }

    /// [`Prepared::new`] from a [`Baseline`], whose whole critical path it keeps: no replay
    /// of the baseline on the first prediction.
    pub fn of(context: &Context<'_>, baseline: &Baseline) -> Prepared {
        let prepared = Prepared::new(context, &baseline.prediction);
        let _ = prepared.path.set(baseline.path.clone());
        prepared
    }

    /// Outcomes without their transformed graph ([`Outcome::graph`] empty): for a caller that
    /// keeps only the figures of many what-ifs (`advise`), which may then share one replay
    /// among the edits that change nothing.
    pub fn figures_only(mut self) -> Prepared {
        self.keeps_graphs = false;
        self
    }

    pub fn baseline(&self) -> &Prediction {
        &self.baseline
    }

    /// The baseline's whole critical path, found once (two threads may both find it: they
    /// find the same).
    fn path(&self, window: &Window) -> Result<&WholePath, WhatIfError> {
        if let Some(path) = self.path.get() {
            return Ok(path);
        }
        let path = baseline_path(window)?;
        Ok(self.path.get_or_init(|| path))
    }
}

/// Host cost (own cost and untraced gap) of the live host tasks of `edit` in the steady steps.
fn host_cost(edit: &EditGraph, steady: &std::ops::RangeInclusive<usize>) -> i64 {
    (0..edit.id_bound())
        .map(|t| TaskId(t as u32))
        .filter(|&t| {
            let step = edit.step(t);
            edit.is_alive(t)
                && !edit.kind(t).on_device()
                && step != NO_STEP
                && steady.contains(&(step as usize))
        })
        .map(|t| edit.dur_ns(t) + edit.gap_ns(t))
        .sum()
}

/// [`what_if_against`] from a [`Prepared`] window.
pub fn what_if_prepared(
    context: &Context<'_>,
    prepared: &Prepared,
    transform: impl FnOnce(&mut EditGraph) -> Result<(), WhatIfError>,
) -> Result<Outcome, WhatIfError> {
    let base = &prepared.base;
    let mut edit = base.clone();
    transform(&mut edit)?;
    let unedited = !prepared.keeps_graphs && edit.is_unedited_clone_of(base);
    if unedited && let Some(outcome) = prepared.unedited.get() {
        return Ok(outcome.clone());
    }
    let mut outcome = predict_edit(context, prepared, edit)?;
    if !prepared.keeps_graphs {
        outcome.graph = Graph::default();
    }
    if unedited {
        // Two threads may both get here first: they computed the same outcome.
        let _ = prepared.unedited.set(outcome.clone());
    }
    Ok(outcome)
}

/// The outcome of the transformed `edit` of `prepared`'s window.
fn predict_edit(
    context: &Context<'_>,
    prepared: &Prepared,
    edit: EditGraph,
) -> Result<Outcome, WhatIfError> {
    let baseline = &prepared.baseline;
    let base = &prepared.base;
    // Per-step figures are means over the steady steps the period spans.
    let steady_range = baseline.steady.clone();
    let in_steady = |step: u32| step != NO_STEP && steady_range.contains(&(step as usize));
    let waits_for_peers = (0..edit.id_bound()).any(|t| {
        let task = TaskId(t as u32);
        edit.is_alive(task) && !edit.is_frozen(task) && edit.peer_wait_ns(task) > 0
    });
    let (graph, predicted) = replay_with_peers(context, &edit, context.peers)?;
    let predicted = predicted.measured_against(baseline);
    let other_peers_speedup = if waits_for_peers {
        let other_step_ns = match context.peers.other() {
            // The same graph without its peers' waits: no second build.
            Peers::Balanced => {
                let options = SimOptions {
                    without_peer_waits: true,
                    ..SimOptions::default()
                };
                // Fewer edges than the graph just replayed: no cycle to map.
                let timeline = simulate(&graph, &RecordedOrder, options)?;
                let period =
                    steady_period(context.window, &graph, &timeline).ok_or(WhatIfError::NoSteps)?;
                Ends::of_period(&period)
                    .period_against(&baseline.ends())
                    .ok_or(WhatIfError::NoSteps)?
            }
            Peers::Skew => {
                replay_with_peers(context, &edit, Peers::Skew)?
                    .1
                    .measured_against(baseline)
                    .step_ns
            }
        };
        Some(speedup(baseline.step_ns, other_step_ns))
    } else {
        None
    };
    let steady = |t: usize| in_steady(graph.step[t]);
    let peer_wait_total: i64 = (0..graph.task_count())
        .filter(|&t| steady(t))
        .map(|t| graph.peer_wait_ns[t])
        .sum();
    let pinned_edges = graph.pred_kind.iter().filter(|k| k.is_inferred()).count() as u64;
    let lag_saved: i64 = (0..base.id_bound())
        .map(|t| TaskId(t as u32))
        .filter(|&t| in_steady(base.step(t)))
        .map(|t| edit.lag_saved_ns(base, t))
        .sum();
    let baseline_peer_wait = prepared.peer_wait;
    let mut changes = Changes::default();
    for id in 0..edit.id_bound() {
        let task = TaskId(id as u32);
        if !edit.is_original(task) {
            changes.added += usize::from(edit.is_alive(task));
        } else if !edit.is_alive(task) {
            changes.removed += usize::from(base.is_alive(task));
        } else if edit.dur_ns(task) != base.dur_ns(task) || edit.gap_ns(task) != base.gap_ns(task) {
            changes.changed += 1;
        }
    }
    let steady_steps = steady_range.clone().count();
    let marker = host_time::marker_lane(context.trace);
    let before = prepared.phases_before;
    let after = phase_times(
        &edit,
        context.window,
        marker,
        context.mapping,
        &steady_range,
    );
    let per_step = |ns: i64| ns / steady_steps.max(1) as i64;
    let host_cost_saved_ns = per_step(prepared.host_cost - host_cost(&edit, &steady_range));
    let whole_path = prepared.path(context.window)?;
    let mut largest_cut: Option<(TaskId, i64)> = None;
    let path_cut_ns = per_step(
        whole_path
            .tasks
            .iter()
            .filter(|t| t.index() < base.id_bound())
            .map(|&t| {
                let cut = path_cut(base, &edit, t, context.peers);
                if cut > 0 && largest_cut.is_none_or(|(_, most)| cut > most) {
                    largest_cut = Some((t, cut));
                }
                cut
            })
            .sum(),
    );
    // A slower step, or a gain beyond what was cut along the baseline's longest path, is
    // what a longest path cannot do: the device capacity model (list scheduling, which can
    // be non-monotone) is the one constraint outside the graph's edges; replaying both sides
    // without it says whether it made the difference.
    let unlimited_speedup = if predicted.step_ns > baseline.step_ns
        || baseline.step_ns - predicted.step_ns > path_cut_ns
    {
        let unlimited = |g: &Graph, without_inferred: bool| -> Result<Period, WhatIfError> {
            let options = SimOptions {
                unlimited_devices: true,
                without_inferred,
                ..SimOptions::default()
            };
            let timeline = simulate(g, &RecordedOrder, options)?;
            steady_period(context.window, g, &timeline).ok_or(WhatIfError::NoSteps)
        };
        let before = unlimited(&context.window.graph, true)?;
        let after = unlimited(&graph, false)?;
        // Measured as the prediction is (`Prediction::measured_against`).
        let after_ns = Ends::of_period(&after)
            .period_against(&Ends::of_period(&before))
            .ok_or(WhatIfError::NoSteps)?;
        Some(speedup(before.step_ns, after_ns))
    } else {
        None
    };
    let phases = Phase::ALL
        .iter()
        .enumerate()
        .map(|(i, &phase)| PhaseTime {
            phase,
            host_before_ns: per_step(before[i].0),
            host_after_ns: per_step(after[i].0),
            device_before_ns: per_step(before[i].1),
            device_after_ns: per_step(after[i].1),
        })
        .collect();
    Ok(Outcome {
        host_cost_saved_ns,
        speedup: speedup(baseline.step_ns, predicted.step_ns),
        baseline: baseline.clone(),
        predicted,
        tasks_before: context.window.graph.task_count(),
        tasks_after: graph.task_count(),
        changes,
        steady_steps,
        phases,
        graph,
        peers: context.peers,
        other_peers_speedup,
        peer_wait_ns: peer_wait_total / steady_steps.max(1) as i64,
        pinned_edges,
        baseline_peer_wait_ns: baseline_peer_wait / steady_steps.max(1) as i64,
        lag_saved_ns: lag_saved / steady_steps.max(1) as i64,
        bound_ns: None,
        caveats: Vec::new(),
        without_profiler: None,
        path_cut_ns,
        path_contention_ns: whole_path.contention_ns,
        path_wait_ns: whole_path.wait_ns,
        largest_cut,
        unlimited_speedup,
        anomaly: None,
        declined: None,
        rests_on: None,
    })
}

/// What the transform from `base` to `edit` cut from task `t` of the baseline's critical
/// path: its cost and untraced gap (all of them if removed), the lags of its incoming edges,
/// and the wait for its peers it no longer has (see [`Outcome::path_cut_ns`]).
pub(crate) fn path_cut(base: &EditGraph, edit: &EditGraph, t: TaskId, peers: Peers) -> i64 {
    if !base.is_alive(t) {
        return 0;
    }
    let peer_before = base.peer_wait_ns(t);
    if !edit.is_alive(t) {
        return base.dur_ns(t) + base.gap_ns(t) + peer_before + base.in_lag_ns(t);
    }
    // Edges still there count their shorter lags; edges reconnected around a removed task
    // (another source) count in the difference of the lags coming in.
    let lags = edit
        .lag_saved_ns(base, t)
        .max(base.in_lag_ns(t) - edit.in_lag_ns(t) + edit.carried_gap_ns(t));
    let peer_after = match peers {
        Peers::Balanced => 0,
        Peers::Skew => edit.peer_wait_ns(t),
    };
    (base.dur_ns(t) - edit.dur_ns(t)).max(0)
        + (base.gap_ns(t) - edit.gap_ns(t)).max(0)
        + (peer_before - peer_after).max(0)
        + lags
}

/// Builds `edit` with the peers of its steady collectives as `peers` says, replays it (one
/// replay both checks the graph, a cycle being an edit error, and predicts) and measures it.
pub(crate) fn replay_with_peers(
    context: &Context<'_>,
    edit: &EditGraph,
    peers: Peers,
) -> Result<(Graph, Prediction), WhatIfError> {
    let (graph, predicted, _) = replay_with_ids(context, edit, peers)?;
    Ok((graph, predicted))
}

/// [`replay_with_peers`], also returning, per id of `edit`, its task in the built graph
/// (`TaskId::NONE` if removed): what maps a prediction's critical path back to the edit.
pub(crate) fn replay_with_ids(
    context: &Context<'_>,
    edit: &EditGraph,
    peers: Peers,
) -> Result<(Graph, Prediction, Vec<TaskId>), WhatIfError> {
    let (graph, new_id) = match peers {
        Peers::Skew => edit.build()?,
        Peers::Balanced => {
            let mut balanced = edit.clone();
            let collectives = balanced.select_where(|t| balanced.peer_wait_ns(t) > 0);
            balanced.drop_inputs(&collectives, crate::graph::EdgeKind::PeerArrival)?;
            balanced.build()?
        }
    };
    let timeline = match simulate(&graph, &RecordedOrder, SimOptions::default()) {
        Ok(timeline) => timeline,
        Err(SimError::Cycle { first, .. }) => {
            return Err(EditError::Cycle { task: first }.into());
        }
        Err(e) => return Err(EditError::Sim(e).into()),
    };
    let predicted = measure(context.window, &graph, &timeline)?;
    Ok((graph, predicted, new_id))
}

/// Total (host, device) time of the steady steps' live tasks of `edit` per phase, in
/// [`Phase::ALL`] order.
fn phase_times(
    edit: &EditGraph,
    window: &Window,
    marker: Option<stepcast_trace::LaneId>,
    mapping: &Mapping,
    steady: &std::ops::RangeInclusive<usize>,
) -> [(i64, i64); 6] {
    let graph = &window.graph;
    let index_of = |phase: Phase| Phase::ALL.iter().position(|&p| p == phase).unwrap_or(5);
    let mut sums = [(0i64, 0i64); 6];
    for id in 0..edit.id_bound() {
        let task = TaskId(id as u32);
        let step = edit.step(task);
        if !edit.is_alive(task) {
            continue;
        }
        let origin = edit.origin(task).index();
        if edit.kind(task).on_device() {
            if step == NO_STEP || !steady.contains(&(step as usize)) {
                continue;
            }
            let phase = mapping.phase.get(origin).copied().unwrap_or(Phase::Other);
            sums[index_of(phase)].1 += edit.dur_ns(task);
        } else if origin < graph.task_count() && host_time::on_marker_lane(graph, marker, origin) {
            // The one host-time definition (`analyze::host_time`): the marker thread's own
            // cost and gaps, in the step they ran in, loader ranges as data loading. An
            // inserted task is measured against the recorded split of the task it comes from.
            let costs = (edit.dur_ns(task), edit.gap_ns(task));
            host_time::task_phase_ns(graph, mapping, &window.steps, origin, costs, |s, p, ns| {
                if s.is_some_and(|s| steady.contains(&s)) {
                    sums[index_of(p)].0 += ns;
                }
            });
        }
    }
    sums
}

/// Applies built-in models in order (their effects compose: dPRO) and predicts the result,
/// with its bound and caveats.
pub fn apply_models(context: &Context<'_>, models: &[Model]) -> Result<Outcome, WhatIfError> {
    what_if_assessed(context, models, |edit| {
        for model in models {
            model.apply(context, edit)?;
        }
        Ok(())
    })
}

/// [`what_if`] with `transform` applying `models` (a scenario's, or the models themselves),
/// assessed ([`trust::assess`]): the baseline replayed once for the prediction, its bound
/// and the window's self-checks.
pub fn what_if_assessed(
    context: &Context<'_>,
    models: &[Model],
    transform: impl FnOnce(&mut EditGraph) -> Result<(), WhatIfError>,
) -> Result<Outcome, WhatIfError> {
    let baseline = Baseline::of(context.window)?;
    let mut outcome = what_if_prepared(context, &Prepared::of(context, &baseline), transform)?;
    let window = trust::window_trust_of(context, &baseline)?;
    trust::assess(context, &window, models, &mut outcome);
    Ok(outcome)
}

/// `baseline / predicted`, 1 when both are 0.
pub fn speedup(baseline_ns: i64, predicted_ns: i64) -> f64 {
    if predicted_ns <= 0 {
        return if baseline_ns <= 0 { 1.0 } else { f64::INFINITY };
    }
    baseline_ns as f64 / predicted_ns as f64
}
