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
use crate::replay::replayed_span;
use crate::simulate::{
    CriticalPath, RecordedOrder, SimError, SimOptions, Timeline, critical_path, simulate,
};

pub use advise::{Advice, Candidate, advise, advise_on};
pub use bottleneck::{Bottleneck, PathItem, Resource};

pub use edit::{
    EditError, EditGraph, FusedCost, HostGaps, Insert, InsertHost, InsertLaunch, Select,
    SelectContext, Selection, median_duration,
};
pub use models::{AmpDtype, Hardware, Model, ModelError, ModelParams, dtype_param, target_param};
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

/// Step times of one replay of a window graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prediction {
    /// The steady-state period (see the module documentation).
    pub step_ns: i64,
    /// Per step of the window: when its last task ends in the replay (`None` if it has none).
    pub step_end_ns: Vec<Option<i64>>,
    /// When the last task of the window ends.
    pub window_end_ns: i64,
    /// What the critical path of the steady span is made of, per steady step.
    pub bottleneck: Bottleneck,
    /// The steady steps the period spans (indices into the window's steps, inclusive).
    pub steady: std::ops::RangeInclusive<usize>,
    /// The tasks of the steady span's critical path (the replayed graph's ids), sorted: what a
    /// transform must shorten to shorten the step.
    pub critical_tasks: Vec<TaskId>,
    /// Where the period starts: the end of the step before the first steady one, else the
    /// first steady step's start ([`Period::span_start_ns`]).
    pub span_start_ns: i64,
}

/// The critical path to the end of the last steady step, back to the start of the window: a
/// longest path, so a transform that only shortens costs, gaps and lags gains at most what it
/// cuts along it ([`Outcome::path_cut_ns`]), plus what along it was not a cost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WholePath {
    /// Its tasks (the replayed graph's ids), sorted.
    pub tasks: Vec<TaskId>,
    /// Time per steady step its tasks waited for their device rather than for a cost: a
    /// dispatch gap made longer by another stream running beside it, a begin held while
    /// another stream's kernel filled the device. The two mechanisms that are not edges: a
    /// transform can relax them without cutting a cost on the path, so the bound counts them
    /// ([`trust::assess`]).
    pub contention_ns: i64,
    /// Time per steady step it spent waiting (latencies, syncs' lags), its waits for peers
    /// left out (the declared peers input holds them): what removing waits can take off it,
    /// besides blocking calls' waits ([`trust::assess`]).
    pub wait_ns: i64,
}

/// The period of steps ending at `step_end_ns`, the `steady` ones measured from `start_ns`;
/// `None` when the last steady step has no task.
fn period_from(
    step_end_ns: &[Option<i64>],
    steady: &std::ops::RangeInclusive<usize>,
    start_ns: i64,
) -> Option<i64> {
    let steps = steady.clone().count().max(1) as i64;
    let end = step_end_ns.get(*steady.end()).copied().flatten()?;
    Some((end - start_ns) / steps)
}

impl Prediction {
    fn ends(&self) -> Ends<'_> {
        Ends {
            step_end_ns: &self.step_end_ns,
            steady: &self.steady,
            span_start_ns: self.span_start_ns,
        }
    }

    /// The period measured from the earlier of the baseline's span start and this replay's
    /// own end of the warm-up step. A transform leaves the warm-up step as recorded, yet its
    /// end can move later in the replay (its device work still queued when the first steady
    /// step's changed work joins the streams); measured from its own start, a window that ends
    /// later could then read as a shorter period. From the baseline's start, a prediction gains
    /// only what the end of its steady steps gains, which is also what the bound (a longest
    /// path from the window's start) bounds; from its own where that is earlier.
    ///
    /// Known open (issue #25): where the host runs ahead, part of the first steady step runs
    /// before the recorded warm-up ends, and a faster host fits more of it there; that head
    /// start, paid once, reads as steady gain (everything 4× faster predicts 4.03× on
    /// `h200-pairs/resnet-fp32-prof_minimal`). Reading the steady steps' own intervals instead
    /// cost the transformer AMP pair 10 points of accuracy (its backlog drains over the
    /// steady steps), so it is not done.
    pub fn measured_against(mut self, baseline: &Prediction) -> Prediction {
        if let Some(step_ns) = self.ends().period_against(&baseline.ends()) {
            self.step_ns = step_ns;
            self.span_start_ns = self.span_start_ns.min(baseline.span_start_ns);
        }
        self
    }
}

/// The step ends of one replay, what its period is read from.
struct Ends<'p> {
    step_end_ns: &'p [Option<i64>],
    steady: &'p std::ops::RangeInclusive<usize>,
    span_start_ns: i64,
}

impl<'p> Ends<'p> {
    fn of_period(period: &'p Period) -> Ends<'p> {
        Ends {
            step_end_ns: &period.step_end_ns,
            steady: &period.steady,
            span_start_ns: period.span_start_ns,
        }
    }

    /// This replay's period measured against `baseline`'s ([`Prediction::measured_against`]).
    fn period_against(&self, baseline: &Ends<'_>) -> Option<i64> {
        period_from(
            self.step_end_ns,
            self.steady,
            baseline.span_start_ns.min(self.span_start_ns),
        )
    }
}

/// Replays `graph` (the window's graph or a transform of it, with the same steps) and
/// measures its step times. Edges inferred from timing are left out, as from every what-if
/// graph ([`EditGraph::new`]): baseline and prediction rest on the same causes.
pub fn predict(window: &Window, graph: &Graph) -> Result<Prediction, WhatIfError> {
    let options = SimOptions {
        without_inferred: true,
        ..SimOptions::default()
    };
    let timeline = simulate(graph, &RecordedOrder, options)?;
    measure(window, graph, &timeline)
}

/// The baseline every prediction on a window starts from: the replay of the window's graph
/// without edges inferred from timing ([`predict`]'s), its measures and its whole critical
/// path. Replayed once and shared by the predictions, their bound ([`WholePath`]) and the
/// window's self-checks ([`trust::window_trust_of`]): each used to replay it again.
#[derive(Clone, Debug)]
pub struct Baseline {
    pub prediction: Prediction,
    pub timeline: Timeline,
    /// The whole critical path of the replay, what every prediction's bound is measured along.
    pub path: WholePath,
    /// The critical path of the steady span (what [`Prediction::bottleneck`] sums), stretch
    /// by stretch: what [`StepTime::of`] reads the kind of time from.
    pub steady_path: CriticalPath,
}

impl Baseline {
    /// Replays `window`'s graph once (without inferred edges) and measures it.
    pub fn of(window: &Window) -> Result<Baseline, WhatIfError> {
        let graph = &window.graph;
        let options = SimOptions {
            without_inferred: true,
            ..SimOptions::default()
        };
        let timeline = simulate(graph, &RecordedOrder, options)?;
        let (prediction, path, steady_path) = measure_and_path(window, graph, &timeline, true)?;
        Ok(Baseline {
            prediction,
            timeline,
            path: path.unwrap_or_default(),
            steady_path,
        })
    }
}

/// The whole critical path of the baseline replay ([`predict`]'s), what every prediction's
/// bound is measured along.
fn baseline_path(window: &Window) -> Result<WholePath, WhatIfError> {
    Ok(Baseline::of(window)?.path)
}

/// The steady-state period of one timeline of a window graph (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Period {
    /// The steady-state period: mean time between the ends of consecutive steady steps.
    pub step_ns: i64,
    /// Per step of the window: when its last task ends (`None` if it has none).
    pub step_end_ns: Vec<Option<i64>>,
    /// The steady steps the period spans (indices into the window's steps, inclusive).
    pub steady: std::ops::RangeInclusive<usize>,
    /// Where the period starts: the end of the step before the first steady one, else the
    /// first steady step's start.
    pub span_start_ns: i64,
}

impl Period {
    /// The time from the end of each steady step's predecessor to its own end (the first
    /// one's from [`Period::span_start_ns`]): what the period is the mean of, so its spread
    /// shows the noise. Steps without tasks inside the span are skipped.
    pub fn per_step_ns(&self) -> Vec<i64> {
        let mut previous = self.span_start_ns;
        let mut out = Vec::new();
        for s in self.steady.clone() {
            if let Some(end) = self.step_end_ns[s] {
                out.push(end - previous);
                previous = end;
            }
        }
        out
    }
}

/// The steady-state period of `timeline` (a replay of `graph`, or its recorded times:
/// [`recorded_timeline`]); `None` without a steady step that has tasks.
pub fn steady_period(window: &Window, graph: &Graph, timeline: &Timeline) -> Option<Period> {
    period_of(window, graph, timeline, &tasks_by_step(window, graph))
}

/// The tasks of each step of the window, by id.
fn tasks_by_step(window: &Window, graph: &Graph) -> Vec<Vec<TaskId>> {
    let n_steps = window.steps.len();
    let mut by_step: Vec<Vec<TaskId>> = vec![Vec::new(); n_steps];
    for (t, &step) in graph.step.iter().enumerate() {
        if step != NO_STEP && (step as usize) < n_steps {
            by_step[step as usize].push(TaskId(t as u32));
        }
    }
    by_step
}

/// [`steady_period`] with the tasks of each step already gathered.
fn period_of(
    window: &Window,
    graph: &Graph,
    timeline: &Timeline,
    by_step: &[Vec<TaskId>],
) -> Option<Period> {
    let n_steps = window.steps.len();
    // A step ends when its last device task does, or when its marker thread's work does (the
    // host working on after its last launch), whichever is later: as `replay` measures it.
    // Another host thread's tasks do not end it: a thread that polls on its own clock (NCCL's
    // watchdog querying events every 100 ms) would hold every prediction to its recorded
    // sleeps; work of another thread that the step needs reaches the device or the marker
    // thread through an edge.
    let step_end_ns: Vec<Option<i64>> = by_step
        .iter()
        .zip(&window.steps)
        .map(|(tasks, step)| {
            if tasks.is_empty() {
                return None;
            }
            let (span, _, start) = replayed_span(graph, timeline, step, tasks);
            Some(start.saturating_add(span))
        })
        .collect();
    let first = first_steady(window);
    let steady: Vec<usize> = (first..n_steps)
        .filter(|&s| step_end_ns[s].is_some() && !window.steps[s].teardown)
        .collect();
    let (&first, &last) = (steady.first()?, steady.last()?);
    let last_end = step_end_ns[last].unwrap_or(0);
    let previous_end = first.checked_sub(1).and_then(|p| step_end_ns[p]);
    let span_start_ns = match previous_end {
        Some(previous) => previous,
        None => {
            let (_, _, start) =
                replayed_span(graph, timeline, &window.steps[first], &by_step[first]);
            start
        }
    };
    let steps = (last - first + 1) as i64;
    Some(Period {
        step_ns: (last_end - span_start_ns) / steps,
        step_end_ns,
        steady: first..=last,
        span_start_ns,
    })
}

/// The recorded times of `graph` as a timeline (every task at its recorded begin and end,
/// bound by nothing): what [`steady_period`] measures on the recording.
pub fn recorded_timeline(graph: &Graph) -> Timeline {
    let n = graph.rec_start_ns.len();
    Timeline {
        begin_ns: graph.rec_start_ns.clone(),
        end_ns: graph.rec_end_ns.clone(),
        binding: vec![crate::simulate::Binding::Boundary; n],
        completion: vec![None; n],
    }
}

/// The step times and bottleneck of `timeline`, the replay of `graph`.
fn measure(window: &Window, graph: &Graph, timeline: &Timeline) -> Result<Prediction, WhatIfError> {
    Ok(measure_and_path(window, graph, timeline, false)?.0)
}

/// [`measure`], and, with `whole_path`, the critical path back to the window's start (a
/// baseline's: [`baseline_path`]).
fn measure_and_path(
    window: &Window,
    graph: &Graph,
    timeline: &Timeline,
    whole_path: bool,
) -> Result<(Prediction, Option<WholePath>, CriticalPath), WhatIfError> {
    let by_step = tasks_by_step(window, graph);
    let period = period_of(window, graph, timeline, &by_step).ok_or(WhatIfError::NoSteps)?;
    let Period {
        step_ns,
        step_end_ns,
        span_start_ns: span_start,
        ..
    } = period;
    let (first, last) = (*period.steady.start(), *period.steady.end());
    let window_end_ns = timeline.end_ns.iter().copied().max().unwrap_or(0);
    let last_end = step_end_ns[last].unwrap_or(0);
    let steps = (last - first + 1) as i64;
    // The path runs back from the task that ends the last steady step as the period measures
    // it: its last device task, or its marker thread's last task (then the host time after
    // it); never another thread's later task (a watchdog's poll is no part of the step).
    let (_, ending, _) = replayed_span(graph, timeline, &window.steps[last], &by_step[last]);
    let last_task = ending
        .or_else(|| {
            by_step[last]
                .iter()
                .copied()
                .max_by_key(|t| (timeline.end_ns[t.index()], std::cmp::Reverse(t.0)))
        })
        .ok_or(WhatIfError::NoSteps)?;
    let mut path = critical_path(graph, timeline, last_task, span_start);
    let mut critical_tasks = path.tasks.clone();
    critical_tasks.sort_unstable();
    critical_tasks.dedup();
    let whole_path = whole_path.then(|| {
        let whole = critical_path(graph, timeline, last_task, i64::MIN);
        let mut tasks = whole.tasks;
        tasks.sort_unstable();
        tasks.dedup();
        WholePath {
            contention_ns: contention_on(graph, timeline, &tasks) / steps,
            wait_ns: (whole.wait_ns - whole.peer_wait_ns) / steps,
            tasks,
        }
    });
    let tail_ns = last_end - timeline.end_ns[last_task.index()];
    if tail_ns > 0 {
        path.host_ns += tail_ns;
        path.shares.push(crate::simulate::PathShare {
            task: last_task,
            kind: crate::simulate::ShareKind::Host,
            ns: tail_ns,
        });
    }
    let prediction = Prediction {
        step_ns,
        step_end_ns,
        window_end_ns,
        bottleneck: Bottleneck::new(graph, &path, steps),
        steady: first..=last,
        critical_tasks,
        span_start_ns: span_start,
    };
    Ok((prediction, whole_path, path))
}

/// The time `tasks` (a critical path) waited beyond their lane and edges for their device: see
/// [`WholePath::contention_ns`].
fn contention_on(graph: &Graph, timeline: &Timeline, tasks: &[TaskId]) -> i64 {
    let lane_ready = |t: TaskId| {
        graph
            .lane_pred(t)
            .map(|p| timeline.end_ns[p.index()].saturating_add(graph.gap_ns[p.index()]))
    };
    tasks
        .iter()
        .map(|&t| {
            let begin = timeline.begin_ns[t.index()];
            match timeline.binding[t.index()] {
                crate::simulate::Binding::Lane(_) => lane_ready(t).map_or(0, |r| begin - r),
                crate::simulate::Binding::Edge(full, crate::graph::EdgeKind::DeviceFull) => {
                    let ready = lane_ready(t)
                        .unwrap_or(i64::MIN)
                        .max(timeline.begin_ns[full.index()]);
                    begin.saturating_sub(ready)
                }
                _ => 0,
            }
            .max(0)
        })
        .fold(0i64, i64::saturating_add)
}

/// The first steady step: the warm-up step (the first) is left out when there are three or
/// more steps.
pub(crate) fn first_steady(window: &Window) -> usize {
    if window.steps.len() >= 3 { 1 } else { 0 }
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
