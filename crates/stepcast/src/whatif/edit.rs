//! An editable copy of a [`Graph`] and the what-if primitives (Daydream §4.4): select, scale,
//! set duration, remove (dependencies reconnected), insert (a device task with its launch
//! call), fuse. [`EditGraph::finish`] rebuilds a valid `Graph`: tasks numbered lane by lane,
//! edges sorted, acyclic (checked by replaying it).
//!
//! Tasks keep their ids while being edited: the input's tasks are `0..n` (so a
//! [`Mapping`] of the input still applies to them) and inserted tasks are numbered from `n` on.
//! The input graph is never changed.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;
use stepcast_trace::{EventId, NameId, Trace};

use crate::analyze::mapping::{Mapping, Phase};
use crate::graph::{EdgeKind, Graph, GraphLane, NO_STEP, NO_TIME, SmDemand, TaskId, TaskKind};
use crate::simulate::{RecordedOrder, SimError, SimOptions, simulate};

use super::cow_vec::CowVec;

/// Why a what-if could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("task {task} does not exist or was removed")]
    NoSuchTask { task: u32 },
    #[error("task {task} is on a {found} lane, expected a {expected} lane")]
    WrongLane {
        task: u32,
        found: &'static str,
        expected: &'static str,
    },
    #[error("fuse needs tasks on one lane, got tasks on lanes {first} and {second}")]
    FuseAcrossLanes { first: u32, second: u32 },
    #[error("the transformed graph has a cycle through task {task} (of the transformed graph)")]
    Cycle { task: u32 },
    #[error("the transformed graph is invalid: {0}")]
    Invalid(String),
    #[error(
        "invalid factor {factor}: a duration factor must be finite, non-negative and at most {MAX_FACTOR:e}"
    )]
    BadFactor { factor: f64 },
    #[error("invalid duration {ns} ns: durations are non-negative")]
    BadDuration { ns: i64 },
    #[error(transparent)]
    Sim(SimError),
}

/// A stored edge into a task: `from` may proceed `lag_ns` after its begin or end (per kind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Edge {
    from: u32,
    kind: EdgeKind,
    lag_ns: i64,
}

/// One task being edited (a row of the graph's columns).
#[derive(Clone, Debug)]
struct Row {
    kind: TaskKind,
    lane: u32,
    name: NameId,
    event: EventId,
    rec_start_ns: i64,
    rec_end_ns: i64,
    step: u32,
    not_before_ns: i64,
    peer_wait_ns: i64,
    sm_demand: SmDemand,
    /// The input task this row is or comes from: itself for the input's tasks; for an
    /// inserted task, the origin of the task it was inserted after (its phase and layer).
    origin: u32,
}

/// What a task costs: the part of a row most models change, kept apart so that a model
/// scaling a million tasks copies their costs, not their whole rows (a quarter of the bytes).
#[derive(Clone, Copy, Debug)]
struct Costs {
    dur_ns: i64,
    dur_without_inferred_ns: i64,
    /// The untraced gap after the task on its lane.
    gap_ns: i64,
}

/// A set of tasks of an [`EditGraph`], sorted by id.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection(Vec<TaskId>);

impl Selection {
    pub fn new(mut tasks: Vec<TaskId>) -> Selection {
        tasks.sort_unstable();
        tasks.dedup();
        Selection(tasks)
    }

    pub fn tasks(&self) -> &[TaskId] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, task: TaskId) -> bool {
        self.0.binary_search(&task).is_ok()
    }
}

/// What to select; every criterion given must hold (an empty list or `None` accepts all).
/// Name criteria are regular expressions searched anywhere in the name (`gemm|conv`).
#[derive(Clone, Debug, Default)]
pub struct Select {
    pub kinds: Vec<TaskKind>,
    /// The task's own name (kernel or call).
    pub name: Option<Regex>,
    /// The name of the op around the task's launching call (needs a [`Mapping`]).
    pub op: Option<Regex>,
    /// The task's layer (module) name (needs a [`Mapping`]).
    pub layer: Option<Regex>,
    /// Needs a [`Mapping`].
    pub phases: Vec<Phase>,
    /// Graph lane indices.
    pub lanes: Vec<u32>,
    /// Step indices (into the window's steps).
    pub steps: Vec<u32>,
    /// Only host tasks (calls and CPU ops) or only device tasks.
    pub on_device: Option<bool>,
}

/// What selection reads besides the graph: names, and the mapping of the input's tasks.
#[derive(Clone, Copy)]
pub struct SelectContext<'a> {
    pub trace: &'a Trace,
    pub mapping: Option<&'a Mapping>,
}

impl Select {
    /// Whether `select` can be evaluated without a mapping.
    pub fn needs_mapping(&self) -> bool {
        self.op.is_some() || self.layer.is_some() || !self.phases.is_empty()
    }
}

/// How [`EditGraph::remove`] treats the untraced host time after a removed host task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostGaps {
    /// Keep it on the lane (the framework work between calls still happens): Daydream's remove.
    Keep,
    /// Drop it with the call (the Python/dispatcher work that issued the call is gone too),
    /// up to what calls of its name typically leave after them: a gap more than 50 times
    /// that (a wait for a DataLoader worker inside `_MultiProcessingDataLoaderIter.__next__`
    /// after the optimizer's last call, 189 ms on `h200-pairs/loader-workers2`) keeps all but
    /// the typical part on the lane.
    Drop,
}

/// A device task to insert with [`EditGraph::insert`].
#[derive(Clone, Debug)]
pub struct Insert {
    pub kind: TaskKind,
    pub name: NameId,
    pub dur_ns: i64,
    /// The device task it runs after, on that task's stream.
    pub after: TaskId,
    /// Its launch call, if any.
    pub launch: Option<InsertLaunch>,
}

/// A host task inserted after another on that task's thread: work the host runs again (an op
/// of a CPU-only trace that activation recomputation runs a second time).
#[derive(Clone, Debug)]
pub struct InsertHost {
    pub kind: TaskKind,
    pub name: NameId,
    pub dur_ns: i64,
    /// The host time after it before its thread's next task (the eager dispatch, Python).
    pub gap_ns: i64,
    /// The host task it runs after.
    pub after: TaskId,
}

/// The host call that launches an inserted device task.
#[derive(Clone, Debug)]
pub struct InsertLaunch {
    pub name: NameId,
    /// The host task the call runs after, on that task's thread.
    pub after: TaskId,
    /// The call's CPU cost; see [`median_duration`] for the trace's own figure.
    pub dur_ns: i64,
}

/// A graph under edit. Build one with [`EditGraph::new`], apply primitives, then
/// [`EditGraph::finish`].
///
/// A clone is cheap: the per-task columns are [`CowVec`]s, shared with the graph cloned from
/// until written, and each lane's order is shared until the lane changes. Many what-ifs of
/// one window clone one prepared edit graph ([`super::Prepared`]) and copy only what they
/// change.
#[derive(Clone, Debug)]
pub struct EditGraph {
    rows: CowVec<Row>,
    costs: CowVec<Costs>,
    alive: CowVec<bool>,
    /// Tasks that selection never returns (the warm-up step, kept as recorded).
    frozen: CowVec<bool>,
    /// Stored edges into each task (lane order excluded).
    preds: CowVec<Vec<Edge>>,
    /// Targets of the stored edges out of each task (may list a target twice).
    succs: CowVec<Vec<u32>>,
    /// Tasks of each lane in order; a removed task leaves [`GONE`] in its place, so that
    /// positions stay valid and a removal costs O(1).
    lane_tasks: Vec<Arc<Vec<u32>>>,
    /// Each task's index in its lane's `lane_tasks` (stale for a task still in `inserted`).
    position: CowVec<u32>,
    /// Per lane, the tasks inserted since its `lane_tasks` was last put in order, each with
    /// the task it was inserted right after: an insert costs O(1), and the lane is put in
    /// order once, when an edit next needs its order (a removal on it, a same-lane edge) or
    /// when the graph is built. Inserting into the vector instead moved and renumbered the
    /// rest of the lane on every insert: quadratic in the tasks a model inserts.
    inserted: Vec<Vec<(u32, u32)>>,
    /// The same pending inserts by task: what each was inserted after, and what was inserted
    /// after each task (in insertion order), to answer "the task before" without putting the
    /// lane in order. Lookups only: no map order reaches an output.
    inserted_after: HashMap<u32, u32>,
    followers: HashMap<u32, Vec<u32>>,
    lanes: Vec<GraphLane>,
    /// The input's launch-queue capacities and the calls no queue edge gates (input ids):
    /// the queue edges are recounted in [`EditGraph::build`].
    launch_queue_capacity: Vec<(i64, u32)>,
    launch_queue_exempt: Vec<TaskId>,
    shared_gap_permille: u32,
    /// Task count of the input: ids below it are the input's tasks.
    original_tasks: usize,
    /// Calibrated launch latency (lag of inserted launch edges).
    launch_latency_ns: i64,
    /// Calibrated dispatch gap (gap after inserted device tasks).
    dispatch_gap_ns: i64,
    /// Per name of host task seen [`TYPICAL_GAP_MIN_INSTANCES`] times or more, the median
    /// untraced gap after it: what the Python and dispatcher work around such a call takes
    /// (see [`HostGaps::Drop`]).
    typical_gap_ns: Arc<HashMap<NameId, i64>>,
    /// Per task, the untraced gaps of removed tasks' lane predecessors that removals moved
    /// into its incoming edges' lags (see [`EditGraph::carried_gap_ns`]). Lookups only.
    carried_gap_ns: HashMap<u32, i64>,
}

/// A name's typical gap needs this many host tasks of that name.
const TYPICAL_GAP_MIN_INSTANCES: usize = 5;
/// A gap this many times its name's typical one is not that call's dispatch work.
const UNTYPICAL_GAP_FACTOR: i64 = 50;

/// The median untraced gap after the host tasks of each name seen at least
/// [`TYPICAL_GAP_MIN_INSTANCES`] times.
fn typical_gaps(graph: &Graph) -> HashMap<NameId, i64> {
    let mut by_name: HashMap<NameId, Vec<i64>> = HashMap::new();
    for t in 0..graph.task_count() {
        if !graph.kind[t].on_device() {
            by_name
                .entry(graph.name[t])
                .or_default()
                .push(graph.gap_ns[t]);
        }
    }
    by_name
        .into_iter()
        .filter(|(_, gaps)| gaps.len() >= TYPICAL_GAP_MIN_INSTANCES)
        .map(|(name, mut gaps)| {
            let middle = gaps.len() / 2;
            (name, *gaps.select_nth_unstable(middle).1)
        })
        .collect()
}

impl EditGraph {
    /// An editable copy of `graph`, without its edges inferred from timing: a prediction
    /// never inherits a wait only the recorded clock explained (a blocking call keeps, as its
    /// own cost, the wait only such an edge explained: `dur_without_inferred_ns`).
    /// `launch_latency_ns` and `dispatch_gap_ns` are the calibrated constants of its window
    /// (`BuildReport`), used for inserted tasks.
    pub fn new(graph: &Graph, launch_latency_ns: i64, dispatch_gap_ns: i64) -> EditGraph {
        let n = graph.task_count();
        let rows = (0..n)
            .map(|t| Row {
                kind: graph.kind[t],
                lane: graph.lane[t],
                name: graph.name[t],
                event: graph.event[t],
                rec_start_ns: graph.rec_start_ns[t],
                rec_end_ns: graph.rec_end_ns[t],
                step: graph.step[t],
                not_before_ns: graph.not_before_ns[t],
                peer_wait_ns: graph.peer_wait_ns[t],
                sm_demand: graph.sm_demand[t],
                origin: t as u32,
            })
            .collect();
        let costs = (0..n)
            .map(|t| Costs {
                dur_ns: graph.dur_without_inferred_ns[t],
                dur_without_inferred_ns: graph.dur_without_inferred_ns[t],
                gap_ns: graph.gap_ns[t],
            })
            .collect();
        let mut preds = vec![Vec::new(); n];
        let mut succs = vec![Vec::new(); n];
        for t in 0..n {
            for e in graph.preds(TaskId(t as u32)) {
                // Queue edges are recounted when the edit is built: an inserted launch takes a
                // slot and a removed one frees its slot, which stored edges would not follow.
                if graph.pred_kind[e].is_inferred() || graph.pred_kind[e] == EdgeKind::LaunchQueue {
                    continue;
                }
                let from = graph.pred[e].0;
                preds[t].push(Edge {
                    from,
                    kind: graph.pred_kind[e],
                    lag_ns: graph.pred_lag_ns[e],
                });
                succs[from as usize].push(t as u32);
            }
        }
        let lane_tasks: Vec<Arc<Vec<u32>>> = graph
            .lanes
            .iter()
            .map(|l| Arc::new((l.first_task..l.first_task + l.task_count).collect()))
            .collect();
        let mut position = vec![0u32; n];
        for tasks in &lane_tasks {
            for (i, &t) in tasks.iter().enumerate() {
                position[t as usize] = i as u32;
            }
        }
        EditGraph {
            rows,
            costs,
            alive: std::iter::repeat_n(true, n).collect(),
            frozen: std::iter::repeat_n(false, n).collect(),
            preds: preds.into_iter().collect(),
            succs: succs.into_iter().collect(),
            position: position.into_iter().collect(),
            inserted: vec![Vec::new(); lane_tasks.len()],
            inserted_after: HashMap::new(),
            followers: HashMap::new(),
            lane_tasks,
            lanes: graph.lanes.clone(),
            launch_queue_capacity: graph.launch_queue_capacity.clone(),
            launch_queue_exempt: graph.launch_queue_exempt.clone(),
            shared_gap_permille: graph.shared_gap_permille,
            original_tasks: n,
            launch_latency_ns,
            dispatch_gap_ns,
            typical_gap_ns: Arc::new(typical_gaps(graph)),
            carried_gap_ns: HashMap::new(),
        }
    }

    /// Tasks ever created (removed ones included): valid ids are below this.
    pub fn id_bound(&self) -> usize {
        self.rows.len()
    }

    pub fn is_alive(&self, task: TaskId) -> bool {
        self.alive.get(task.index()).copied().unwrap_or(false)
    }

    pub fn kind(&self, task: TaskId) -> TaskKind {
        self.rows[task.index()].kind
    }

    pub fn name(&self, task: TaskId) -> NameId {
        self.rows[task.index()].name
    }

    pub fn lane(&self, task: TaskId) -> u32 {
        self.rows[task.index()].lane
    }

    pub fn step(&self, task: TaskId) -> u32 {
        self.rows[task.index()].step
    }

    pub fn dur_ns(&self, task: TaskId) -> i64 {
        self.costs[task.index()].dur_ns
    }

    pub fn gap_ns(&self, task: TaskId) -> i64 {
        self.costs[task.index()].gap_ns
    }

    /// When the task started in the recording (an inserted task: when the task it was
    /// inserted after ended).
    pub fn rec_start_ns(&self, task: TaskId) -> i64 {
        self.rows[task.index()].rec_start_ns
    }

    /// Whether `task` is one of the input's tasks (so a mapping of the input describes it).
    pub fn is_original(&self, task: TaskId) -> bool {
        task.index() < self.original_tasks
    }

    /// The input's task that `task` is (an input task) or comes from (an inserted task: the
    /// task it was inserted after, whose phase and layer it takes).
    pub fn origin(&self, task: TaskId) -> TaskId {
        TaskId(self.rows[task.index()].origin)
    }

    /// How many of the input's tasks there were (ids below this are theirs).
    pub fn original_task_count(&self) -> usize {
        self.original_tasks
    }

    /// Live tasks of graph lane `lane`, in order.
    pub fn lane_tasks(&self, lane: u32) -> Vec<u32> {
        self.ordered_lane(lane)
            .iter()
            .copied()
            .filter(|&t| t != GONE)
            .collect()
    }

    /// `lane_tasks` of `lane` with its pending inserts in place (removed slots kept as
    /// [`GONE`]): each inserted task right after the task it was inserted after, the later of
    /// two inserts after one task first, and what was inserted after an inserted task right
    /// after it. O(lane + inserts).
    fn ordered_lane(&self, lane: u32) -> Cow<'_, [u32]> {
        let base = &self.lane_tasks[lane as usize];
        let inserted = &self.inserted[lane as usize];
        if inserted.is_empty() {
            return Cow::Borrowed(base.as_slice());
        }
        // Per anchor, its inserts, latest first.
        let mut after: Vec<(u32, usize, u32)> = inserted
            .iter()
            .enumerate()
            .map(|(order, &(anchor, task))| (anchor, usize::MAX - order, task))
            .collect();
        after.sort_unstable();
        let followers = |anchor: u32| {
            let from = after.partition_point(|e| e.0 < anchor);
            after[from..]
                .iter()
                .take_while(move |e| e.0 == anchor)
                .map(|e| e.2)
        };
        let mut out = Vec::with_capacity(base.len() + inserted.len());
        let mut stack: Vec<u32> = Vec::new();
        for &t in base.iter() {
            out.push(t);
            if t == GONE {
                continue;
            }
            stack.extend(followers(t).collect::<Vec<_>>().into_iter().rev());
            while let Some(f) = stack.pop() {
                out.push(f);
                stack.extend(followers(f).collect::<Vec<_>>().into_iter().rev());
            }
        }
        Cow::Owned(out)
    }

    /// Puts the pending inserts of `lane` in place and renumbers its positions.
    fn settle(&mut self, lane: u32) {
        if self.inserted[lane as usize].is_empty() {
            return;
        }
        let ordered = self.ordered_lane(lane).into_owned();
        for (i, &t) in ordered.iter().enumerate() {
            if t != GONE {
                self.position[t as usize] = i as u32;
            }
        }
        self.lane_tasks[lane as usize] = Arc::new(ordered);
        for (anchor, task) in std::mem::take(&mut self.inserted[lane as usize]) {
            self.inserted_after.remove(&task);
            self.followers.remove(&anchor);
        }
    }

    /// The live task before `task` on its lane, if any, without putting the lane in order:
    /// O(inserts after the tasks in between), not O(lane).
    pub fn lane_prev(&self, task: TaskId) -> Option<TaskId> {
        let t = task.0;
        // The last task of `x` and what was inserted after it: the first insert after `x`
        // (later ones went before it), and so on down.
        let last_after = |mut x: u32| {
            while let Some(&f) = self.followers.get(&x).and_then(|f| f.first()) {
                x = f;
            }
            x
        };
        let before = match self.inserted_after.get(&t) {
            Some(&anchor) => {
                let siblings = self.followers.get(&anchor).map_or(&[][..], Vec::as_slice);
                let i = siblings.iter().position(|&s| s == t)?;
                match siblings.get(i + 1) {
                    Some(&earlier) => last_after(earlier),
                    None => anchor,
                }
            }
            None => {
                let lane = &self.lane_tasks[self.rows[t as usize].lane as usize];
                let position = self.position[t as usize] as usize;
                let previous = lane.get(..position)?.iter().rev().find(|&&x| x != GONE)?;
                last_after(*previous)
            }
        };
        Some(TaskId(before))
    }

    /// The live task before (`forward == false`) or after `position` on `lane`.
    fn live_neighbor(&self, lane: u32, position: usize, forward: bool) -> Option<u32> {
        let tasks = &self.lane_tasks[lane as usize];
        if forward {
            tasks[position + 1..].iter().copied().find(|&t| t != GONE)
        } else {
            tasks[..position].iter().rev().copied().find(|&t| t != GONE)
        }
    }

    pub fn lane_count(&self) -> usize {
        self.lanes.len()
    }

    /// The live host call that launched device task `task`, if any.
    /// How much the lags of `task`'s incoming edges shrank from `before` (an earlier state of
    /// this graph) to now: each edge still there counts its decrease (a faster call's launch
    /// lag, a scaled handoff). Part of what a transform cut from the longest path.
    pub fn lag_saved_ns(&self, before: &EditGraph, task: TaskId) -> i64 {
        let (Some(now), Some(was)) = (self.preds.get(task.index()), before.preds.get(task.index()))
        else {
            return 0;
        };
        was.iter()
            .filter_map(|old| {
                now.iter()
                    .find(|e| e.from == old.from && e.kind == old.kind)
                    .map(|e| (old.lag_ns - e.lag_ns).max(0))
            })
            .sum()
    }

    /// What removals moved into `task`'s incoming lags from the path before it: a removed
    /// task's lane predecessor gated it after its untraced gap, and the edge that now
    /// bypasses the removed task carries that gap in its lag. The gap was on the path already
    /// (the predecessor's), so it is not lag added; a later model that scales the edge (a
    /// faster host scaling a handoff) cuts it there. A bound that compares the lags coming
    /// in ([`super::Outcome::path_cut_ns`]) adds it back (kernel fusion then a faster CPU on
    /// `h200-pairs/mlp-amp` otherwise gained 24 µs a step above its bound).
    pub fn carried_gap_ns(&self, task: TaskId) -> i64 {
        self.carried_gap_ns.get(&task.0).copied().unwrap_or(0)
    }

    /// The lags of `task`'s incoming stored edges, summed: what leaves a path with the task
    /// when it is removed.
    pub fn in_lag_ns(&self, task: TaskId) -> i64 {
        self.preds
            .get(task.index())
            .map_or(0, |preds| preds.iter().map(|e| e.lag_ns.max(0)).sum())
    }

    pub fn launcher(&self, task: TaskId) -> Option<TaskId> {
        self.preds[task.index()]
            .iter()
            .find(|e| e.kind == EdgeKind::Launch && !self.rows[e.from as usize].kind.on_device())
            .map(|e| TaskId(e.from))
    }

    /// Live device tasks launched by host call `task`.
    pub fn launched(&self, task: TaskId) -> Vec<TaskId> {
        let mut out: Vec<TaskId> = self.succs[task.index()]
            .iter()
            .filter(|&&s| {
                self.alive[s as usize]
                    && self.preds[s as usize]
                        .iter()
                        .any(|e| e.from == task.0 && e.kind == EdgeKind::Launch)
            })
            .map(|&s| TaskId(s))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether host task `task` waits for device work (a stored edge gates its completion).
    pub fn is_blocking(&self, task: TaskId) -> bool {
        self.preds[task.index()]
            .iter()
            .any(|e| e.kind.gates_completion() && e.kind != EdgeKind::PeerArrival)
    }

    /// Whether every stored edge gating `task`'s completion is CUDA's full launch queue
    /// (`EdgeKind::LaunchQueue`): an eager launch call held until a slot frees, not a
    /// synchronization the program asked for.
    pub fn waits_only_for_launch_queue(&self, task: TaskId) -> bool {
        self.preds[task.index()]
            .iter()
            .filter(|e| e.kind.gates_completion() && e.kind != EdgeKind::PeerArrival)
            .all(|e| e.kind == EdgeKind::LaunchQueue)
    }

    /// The live tasks that `select` accepts.
    pub fn select(&self, select: &Select, context: SelectContext<'_>) -> Selection {
        self.select_where(|task| self.matches(select, context, task))
    }

    /// The live tasks that `accept` accepts (frozen tasks never are).
    pub fn select_where(&self, mut accept: impl FnMut(TaskId) -> bool) -> Selection {
        Selection(
            (0..self.rows.len() as u32)
                .map(TaskId)
                .filter(|&t| self.alive[t.index()] && !self.frozen[t.index()] && accept(t))
                .collect(),
        )
    }

    /// Excludes the selected tasks from every later selection (primitives given them
    /// explicitly still apply).
    pub fn freeze(&mut self, selection: &Selection) {
        for &t in selection.tasks() {
            self.frozen[t.index()] = true;
        }
    }

    pub fn is_frozen(&self, task: TaskId) -> bool {
        self.frozen.get(task.index()).copied().unwrap_or(false)
    }

    fn matches(&self, select: &Select, context: SelectContext<'_>, task: TaskId) -> bool {
        let row = &self.rows[task.index()];
        let trace = context.trace;
        if !select.kinds.is_empty() && !select.kinds.contains(&row.kind) {
            return false;
        }
        if select.on_device.is_some_and(|d| d != row.kind.on_device()) {
            return false;
        }
        if !select.lanes.is_empty() && !select.lanes.contains(&row.lane) {
            return false;
        }
        if !select.steps.is_empty() && (row.step == NO_STEP || !select.steps.contains(&row.step)) {
            return false;
        }
        if let Some(name) = &select.name
            && !name.is_match(trace.names.get(row.name))
        {
            return false;
        }
        if !select.needs_mapping() {
            return true;
        }
        // Inserted tasks have no mapping: criteria on op, layer or phase reject them.
        let Some(mapping) = context.mapping.filter(|_| self.is_original(task)) else {
            return false;
        };
        let t = task.index();
        if !select.phases.is_empty() && !select.phases.contains(&mapping.phase[t]) {
            return false;
        }
        if let Some(op) = &select.op {
            let Some(name) = mapping.op_name(trace, task) else {
                return false;
            };
            if !op.is_match(trace.names.get(name)) {
                return false;
            }
        }
        if let Some(layer) = &select.layer {
            let Some(name) = mapping.layer[t] else {
                return false;
            };
            if !layer.is_match(trace.names.get(name)) {
                return false;
            }
        }
        true
    }

    fn check_live(&self, task: TaskId) -> Result<(), EditError> {
        if self.is_alive(task) {
            Ok(())
        } else {
            Err(EditError::NoSuchTask { task: task.0 })
        }
    }

    /// Multiplies the cost of every selected task by `factor` (rounded to the nearest ns).
    /// The untraced gap after a task is not scaled: use [`EditGraph::scale_gaps`].
    pub fn scale(&mut self, selection: &Selection, factor: f64) -> Result<(), EditError> {
        check_factor(factor)?;
        for &task in selection.tasks() {
            self.check_live(task)?;
            let cost = &mut self.costs[task.index()];
            let old_ns = cost.dur_ns;
            cost.dur_ns = scale_ns(cost.dur_ns, factor);
            cost.dur_without_inferred_ns = scale_ns(cost.dur_without_inferred_ns, factor);
            let new_ns = cost.dur_ns;
            self.retime_launches(task, old_ns, new_ns);
        }
        Ok(())
    }

    /// A launch call's work is ready a calibrated moment after the call returns (or, for a
    /// call that blocks on it, a latency after it begins, never after it returns): when the
    /// call's cost changes from `old_ns` to `new_ns`, so does the lag of its launch edges.
    fn retime_launches(&mut self, call: TaskId, old_ns: i64, new_ns: i64) {
        if self.rows[call.index()].kind.on_device() || old_ns == new_ns {
            return;
        }
        let mut targets = self.succs[call.index()].clone();
        targets.sort_unstable();
        targets.dedup();
        for target in targets {
            for edge in &mut self.preds[target as usize] {
                if edge.from != call.0 || edge.kind != EdgeKind::Launch {
                    continue;
                }
                edge.lag_ns = if edge.lag_ns >= old_ns {
                    (edge.lag_ns - old_ns + new_ns).max(0)
                } else {
                    edge.lag_ns.min(new_ns)
                };
            }
        }
    }

    /// Multiplies the untraced gap after every selected task by `factor`, and the untraced
    /// host time of a handoff from it to another thread (`EdgeKind::ThreadHandoff`'s lag),
    /// which is the same kind of time.
    pub fn scale_gaps(&mut self, selection: &Selection, factor: f64) -> Result<(), EditError> {
        check_factor(factor)?;
        for &task in selection.tasks() {
            self.check_live(task)?;
            let cost = &mut self.costs[task.index()];
            cost.gap_ns = scale_ns(cost.gap_ns, factor);
            let mut targets = self.succs[task.index()].clone();
            targets.sort_unstable();
            targets.dedup();
            for target in targets {
                for edge in &mut self.preds[target as usize] {
                    if edge.from == task.0 && edge.kind == EdgeKind::ThreadHandoff {
                        edge.lag_ns = scale_ns(edge.lag_ns, factor);
                    }
                }
            }
        }
        Ok(())
    }

    /// Sets to `ns` the lag of every handoff between two selected tasks
    /// (`EdgeKind::ThreadHandoff` from one selected task into another): the time a thread
    /// took to wake for work another thread handed it, which a program that no longer hands
    /// that work over (a CUDA graph's replay) does not spend. Handoffs into or out of the
    /// selection keep their lags. Returns the lag removed, in ns.
    pub fn set_handoff_lags_within(
        &mut self,
        selection: &Selection,
        ns: i64,
    ) -> Result<i64, EditError> {
        if ns < 0 {
            return Err(EditError::BadDuration { ns });
        }
        let mut removed = 0;
        for &task in selection.tasks() {
            self.check_live(task)?;
            for edge in &mut self.preds[task.index()] {
                if edge.kind == EdgeKind::ThreadHandoff && selection.contains(TaskId(edge.from)) {
                    removed += (edge.lag_ns - ns).max(0);
                    edge.lag_ns = ns;
                }
            }
        }
        Ok(removed)
    }

    /// Sets the cost of every selected task to `ns`. A blocking call keeps the part of its
    /// cost that only an inferred edge explained (`dur_without_inferred_ns - dur_ns`).
    pub fn set_duration(&mut self, selection: &Selection, ns: i64) -> Result<(), EditError> {
        if ns < 0 {
            return Err(EditError::BadDuration { ns });
        }
        for &task in selection.tasks() {
            self.check_live(task)?;
            let cost = &mut self.costs[task.index()];
            let extra = (cost.dur_without_inferred_ns - cost.dur_ns).max(0);
            let old_ns = cost.dur_ns;
            cost.dur_ns = ns;
            cost.dur_without_inferred_ns = ns + extra;
            self.retime_launches(task, old_ns, ns);
        }
        Ok(())
    }

    /// The declared wait of a collective for its peers (0 for any other task).
    pub fn peer_wait_ns(&self, task: TaskId) -> i64 {
        self.rows[task.index()].peer_wait_ns
    }

    /// Sets the declared wait of a collective for its peers (a merged collective waits for
    /// what its members waited for).
    pub fn set_peer_wait(&mut self, task: TaskId, ns: i64) -> Result<(), EditError> {
        self.check_live(task)?;
        if ns < 0 {
            return Err(EditError::BadDuration { ns });
        }
        self.rows[task.index()].peer_wait_ns = ns;
        Ok(())
    }

    /// Sets the untraced gap after every selected task to `ns`.
    pub fn set_gap(&mut self, selection: &Selection, ns: i64) -> Result<(), EditError> {
        if ns < 0 {
            return Err(EditError::BadDuration { ns });
        }
        for &task in selection.tasks() {
            self.check_live(task)?;
            self.costs[task.index()].gap_ns = ns;
        }
        Ok(())
    }

    /// Drops the stored edges of `kind` into every selected task (a collective's wait for its
    /// peers, when a model replaces what the recording said about them). `PeerArrival` also
    /// drops the declared wait for peers outside the graph (`Graph::peer_wait_ns`).
    pub fn drop_inputs(&mut self, selection: &Selection, kind: EdgeKind) -> Result<(), EditError> {
        for &task in selection.tasks() {
            self.check_live(task)?;
            if kind == EdgeKind::PeerArrival {
                self.rows[task.index()].peer_wait_ns = 0;
            }
            let dropped: Vec<u32> = self.preds[task.index()]
                .iter()
                .filter(|e| e.kind == kind)
                .map(|e| e.from)
                .collect();
            self.preds[task.index()].retain(|e| e.kind != kind);
            for from in dropped {
                if !self.preds[task.index()].iter().any(|e| e.from == from) {
                    self.succs[from as usize].retain(|&s| s != task.0);
                }
            }
        }
        Ok(())
    }

    /// Removes the selected tasks, reconnecting dependencies: every path through a removed
    /// task is kept as an edge from its predecessor to its successor (lags added). Device
    /// tasks: the call that launched one is removed too unless it launches other work, and
    /// the stream's wait on other work (an event wait) moves to the next task of the stream.
    /// Host tasks: the untraced gap after a removed task is kept on its lane or dropped
    /// (`gaps`); what the removed task waited for is no longer waited for.
    pub fn remove(&mut self, selection: &Selection, gaps: HostGaps) -> Result<(), EditError> {
        for &task in selection.tasks() {
            self.check_live(task)?;
        }
        let mut launchers = Vec::new();
        for &task in selection.tasks() {
            if self.rows[task.index()].kind.on_device()
                && let Some(call) = self.launcher(task)
            {
                launchers.push(call);
            }
        }
        for &task in selection.tasks() {
            self.remove_one(task, gaps);
        }
        launchers.sort_unstable();
        launchers.dedup();
        for call in launchers {
            if self.is_alive(call) && self.launched(call).is_empty() {
                self.remove_one(call, gaps);
            }
        }
        Ok(())
    }

    fn remove_one(&mut self, task: TaskId, gaps: HostGaps) {
        let r = task.index();
        if !self.alive[r] {
            return;
        }
        let row = self.rows[r].clone();
        let cost = self.costs[r];
        self.settle(row.lane);
        let position = self.position[r] as usize;
        debug_assert_eq!(self.lane_tasks[row.lane as usize][position], task.0);
        let lane_prev = self.live_neighbor(row.lane, position, false);
        let lane_next = self.live_neighbor(row.lane, position, true);
        let on_device = row.kind.on_device();

        // Paths through the removed task, as (source node, lag) reaching its begin / end.
        // A begin-gating predecessor reaches both nodes; a completion-gating one only the end.
        let preds = std::mem::take(&mut self.preds[r]);
        let mut into_begin: Vec<Edge> = Vec::new();
        let mut into_end: Vec<Edge> = Vec::new();
        for &e in &preds {
            if !self.alive[e.from as usize] {
                continue;
            }
            if !e.kind.gates_completion() {
                into_begin.push(e);
            }
            into_end.push(e);
        }
        // The lane predecessor gates the begin (after its gap).
        let lane_edge = lane_prev.map(|p| Edge {
            from: p,
            kind: EdgeKind::EventWait,
            lag_ns: self.costs[p as usize].gap_ns,
        });
        if let Some(e) = lane_edge {
            into_begin.push(e);
            into_end.push(e);
        }

        // Stored edges out of the removed task.
        let mut targets = std::mem::take(&mut self.succs[r]);
        targets.sort_unstable();
        targets.dedup();
        for s in targets {
            if !self.alive[s as usize] {
                continue;
            }
            let outgoing: Vec<Edge> = self.preds[s as usize]
                .iter()
                .copied()
                .filter(|e| e.from == task.0)
                .collect();
            self.preds[s as usize].retain(|e| e.from != task.0);
            // A device task launched by its own call keeps that launch as its host
            // dependency: a path from another call through the removed task would read as a
            // second launch.
            let own_launcher = self.launcher(TaskId(s)).map(|call| call.0);
            for out in outgoing {
                let reaching = if out.kind.from_source_begin() {
                    &into_begin
                } else {
                    &into_end
                };
                for &inp in reaching.iter() {
                    if inp.kind == EdgeKind::Launch && own_launcher.is_some_and(|c| c != inp.from) {
                        continue;
                    }
                    let kind = compose(inp.kind, out.kind);
                    if Some(inp) == lane_edge && inp.lag_ns > 0 {
                        *self.carried_gap_ns.entry(s).or_default() += inp.lag_ns;
                    }
                    self.add_edge(inp.from, s, kind, inp.lag_ns + out.lag_ns);
                }
            }
        }
        // On a stream, what the removed task waited for (an event wait recorded on the
        // stream) still holds the next task of the stream.
        if on_device && let Some(next) = lane_next {
            let waits: Vec<Edge> = preds
                .iter()
                .copied()
                .filter(|e| self.alive[e.from as usize] && e.kind != EdgeKind::Launch)
                .collect();
            for inp in waits {
                let kind = compose(inp.kind, EdgeKind::EventWait);
                self.add_edge(inp.from, next, kind, inp.lag_ns);
            }
        }
        // On a thread, a handoff that held the removed task's start (the autograd engine's
        // backward pass ending) still holds the next task of the thread: that thread was
        // blocked until then, whatever it ran first.
        if !on_device && let Some(next) = lane_next {
            let handoffs: Vec<Edge> = preds
                .iter()
                .copied()
                .filter(|e| self.alive[e.from as usize] && e.kind == EdgeKind::ThreadHandoff)
                .collect();
            for inp in handoffs {
                self.add_edge(inp.from, next, inp.kind, inp.lag_ns);
            }
        }
        // Drop it from its predecessors' successor lists.
        for e in &preds {
            self.succs[e.from as usize].retain(|&s| s != task.0);
        }

        // What stays on the lane of the untraced gap after a removed host task: all of it
        // (`Keep`), or (`Drop`) what is beyond its name's typical gap when the gap is far
        // beyond it: a wait for a DataLoader worker, a peer or the step's own Python after
        // the last call is not the dispatch work that issued that call.
        let kept_gap_ns = match gaps {
            HostGaps::Keep => cost.gap_ns,
            HostGaps::Drop => match self.typical_gap_ns.get(&row.name) {
                Some(&typical) if cost.gap_ns > typical.max(1) * UNTYPICAL_GAP_FACTOR => {
                    cost.gap_ns - typical
                }
                _ => 0,
            },
        };
        if !on_device && kept_gap_ns > 0 {
            match (lane_prev, lane_next) {
                (Some(p), _) => self.costs[p as usize].gap_ns += kept_gap_ns,
                (None, Some(n)) => {
                    let next = &mut self.rows[n as usize];
                    if row.not_before_ns != NO_TIME {
                        next.not_before_ns = next
                            .not_before_ns
                            .max(row.not_before_ns + cost.dur_ns + kept_gap_ns);
                    }
                }
                (None, None) => {}
            }
        }
        if lane_prev.is_none()
            && let Some(n) = lane_next
            && row.not_before_ns != NO_TIME
            && self.rows[n as usize].not_before_ns == NO_TIME
        {
            // The lane's boundary moves to its new first task.
            self.rows[n as usize].not_before_ns = row.not_before_ns;
        }
        Arc::make_mut(&mut self.lane_tasks[row.lane as usize])[position] = GONE;
        self.alive[r] = false;
    }

    fn add_edge(&mut self, from: u32, to: u32, kind: EdgeKind, lag_ns: i64) {
        if from == to {
            return;
        }
        // Lane order already implies an end-to-begin edge to a later task of the same lane.
        let same_lane = self.rows[from as usize].lane == self.rows[to as usize].lane;
        if same_lane
            && !kind.from_source_begin()
            && !kind.gates_completion()
            && self.alive[from as usize]
            && self.alive[to as usize]
        {
            let lane_index = self.rows[from as usize].lane;
            self.settle(lane_index);
            let lane = &self.lane_tasks[lane_index as usize];
            let (a, b) = (
                self.position[from as usize] as usize,
                self.position[to as usize] as usize,
            );
            if a < b && gaps_reach(&self.costs, &lane[a..b], lag_ns) {
                return;
            }
        }
        let preds = &mut self.preds[to as usize];
        if let Some(existing) = preds.iter_mut().find(|e| e.from == from && e.kind == kind) {
            existing.lag_ns = existing.lag_ns.max(lag_ns);
            return;
        }
        preds.push(Edge { from, kind, lag_ns });
        self.succs[from as usize].push(to);
    }

    /// Inserts a device task on the stream of `spec.after`, right after it, and its launch
    /// call (if given) on the thread of `spec.launch.after`, right after that task. The device
    /// task gets the window's calibrated dispatch gap, the launch edge its launch latency.
    /// Returns the new device task.
    pub fn insert(&mut self, spec: &Insert) -> Result<TaskId, EditError> {
        self.check_live(spec.after)?;
        if spec.dur_ns < 0 {
            return Err(EditError::BadDuration { ns: spec.dur_ns });
        }
        let after = self.rows[spec.after.index()].clone();
        if !after.kind.on_device() || !spec.kind.on_device() {
            return Err(EditError::WrongLane {
                task: spec.after.0,
                found: if after.kind.on_device() {
                    "device"
                } else {
                    "host"
                },
                expected: "device",
            });
        }
        let device = self.push_row(
            Row {
                kind: spec.kind,
                name: spec.name,
                not_before_ns: NO_TIME,
                peer_wait_ns: 0,
                sm_demand: SmDemand::of_kind(spec.kind),
                rec_start_ns: after.rec_end_ns,
                ..after
            },
            Costs {
                dur_ns: spec.dur_ns,
                dur_without_inferred_ns: spec.dur_ns,
                gap_ns: self.dispatch_gap_ns,
            },
            spec.after,
        );
        if let Some(launch) = &spec.launch {
            self.check_live(launch.after)?;
            if launch.dur_ns < 0 {
                return Err(EditError::BadDuration { ns: launch.dur_ns });
            }
            let host = self.rows[launch.after.index()].clone();
            if host.kind.on_device() {
                return Err(EditError::WrongLane {
                    task: launch.after.0,
                    found: "device",
                    expected: "host",
                });
            }
            let call = self.push_row(
                Row {
                    kind: TaskKind::ApiCall,
                    name: launch.name,
                    not_before_ns: NO_TIME,
                    peer_wait_ns: 0,
                    sm_demand: SmDemand::None,
                    rec_start_ns: host.rec_end_ns,
                    rec_end_ns: host.rec_end_ns,
                    ..host
                },
                Costs {
                    dur_ns: launch.dur_ns,
                    dur_without_inferred_ns: launch.dur_ns,
                    gap_ns: 0,
                },
                launch.after,
            );
            self.add_edge(call.0, device.0, EdgeKind::Launch, self.launch_latency_ns);
        }
        Ok(device)
    }

    /// Inserts a host task after `spec.after` on its thread; it takes that task's step, phase
    /// and layer, and waits for nothing but its thread. Returns it.
    pub fn insert_host(&mut self, spec: &InsertHost) -> Result<TaskId, EditError> {
        self.check_live(spec.after)?;
        for ns in [spec.dur_ns, spec.gap_ns] {
            if ns < 0 {
                return Err(EditError::BadDuration { ns });
            }
        }
        let host = self.rows[spec.after.index()].clone();
        if host.kind.on_device() || spec.kind.on_device() {
            return Err(EditError::WrongLane {
                task: spec.after.0,
                found: if host.kind.on_device() {
                    "device"
                } else {
                    "host"
                },
                expected: "host",
            });
        }
        Ok(self.push_row(
            Row {
                kind: spec.kind,
                name: spec.name,
                not_before_ns: NO_TIME,
                peer_wait_ns: 0,
                sm_demand: SmDemand::None,
                rec_start_ns: host.rec_end_ns,
                rec_end_ns: host.rec_end_ns,
                ..host
            },
            Costs {
                dur_ns: spec.dur_ns,
                dur_without_inferred_ns: spec.dur_ns,
                gap_ns: spec.gap_ns,
            },
            spec.after,
        ))
    }

    /// Adds an empty lane like `like`: a new stream of its device (a communication library's
    /// own stream), or a new thread of its process (a communication library's worker thread,
    /// as gloo's on CPU tensors). Returns its index.
    pub fn add_lane(&mut self, like: u32) -> Result<u32, EditError> {
        let Some(lane) = self.lanes.get(like as usize).cloned() else {
            return Err(EditError::Invalid(format!("no lane {like}")));
        };
        self.lanes.push(GraphLane {
            first_task: 0,
            task_count: 0,
            ..lane
        });
        self.lane_tasks.push(Arc::new(Vec::new()));
        self.inserted.push(Vec::new());
        Ok(self.lanes.len() as u32 - 1)
    }

    /// Appends a task at the end of lane `lane`: a device task on a device lane, with the
    /// window's calibrated dispatch gap after it, or a host task on a host thread, with none.
    /// It takes the step, phase and layer of `like` (an input task); it waits for nothing but
    /// its lane until dependencies are added ([`EditGraph::add_dependency`]).
    pub fn append(
        &mut self,
        lane: u32,
        kind: TaskKind,
        name: NameId,
        dur_ns: i64,
        like: TaskId,
    ) -> Result<TaskId, EditError> {
        self.check_live(like)?;
        if dur_ns < 0 {
            return Err(EditError::BadDuration { ns: dur_ns });
        }
        let Some(lane_kind) = self.lanes.get(lane as usize).map(|l| l.kind) else {
            return Err(EditError::Invalid(format!("no lane {lane}")));
        };
        let on_device_lane = lane_kind == stepcast_trace::LaneKind::DeviceStream;
        if on_device_lane != kind.on_device() {
            let (found, expected) = if on_device_lane {
                ("host", "device")
            } else {
                ("device", "host")
            };
            return Err(EditError::WrongLane {
                task: like.0,
                found,
                expected,
            });
        }
        let base = self.rows[like.index()].clone();
        let id = self.rows.len() as u32;
        self.rows.push(Row {
            kind,
            lane,
            name,
            not_before_ns: NO_TIME,
            peer_wait_ns: 0,
            sm_demand: SmDemand::of_kind(kind),
            rec_start_ns: base.rec_end_ns,
            rec_end_ns: base.rec_end_ns,
            ..base
        });
        self.costs.push(Costs {
            dur_ns,
            dur_without_inferred_ns: dur_ns,
            gap_ns: if on_device_lane {
                self.dispatch_gap_ns
            } else {
                0
            },
        });
        let tasks = Arc::make_mut(&mut self.lane_tasks[lane as usize]);
        self.position.push(tasks.len() as u32);
        tasks.push(id);
        self.alive.push(true);
        self.frozen.push(false);
        self.preds.push(Vec::new());
        self.succs.push(Vec::new());
        Ok(TaskId(id))
    }

    /// Makes `to` wait for `from` through an edge of `kind` with `lag_ns` (a stream waiting on
    /// an event: [`EdgeKind::EventWait`]).
    pub fn add_dependency(
        &mut self,
        from: TaskId,
        to: TaskId,
        kind: EdgeKind,
        lag_ns: i64,
    ) -> Result<(), EditError> {
        self.check_live(from)?;
        self.check_live(to)?;
        self.add_edge(from.0, to.0, kind, lag_ns);
        Ok(())
    }

    /// Adds `row` to the lane of `after`, right after it (pending until the lane is next put
    /// in order: O(1)).
    fn push_row(&mut self, row: Row, costs: Costs, after: TaskId) -> TaskId {
        let id = self.rows.len() as u32;
        self.inserted[row.lane as usize].push((after.0, id));
        self.inserted_after.insert(id, after.0);
        self.followers.entry(after.0).or_default().push(id);
        self.position.push(u32::MAX);
        self.rows.push(row);
        self.costs.push(costs);
        self.alive.push(true);
        self.frozen.push(false);
        self.preds.push(Vec::new());
        self.succs.push(Vec::new());
        TaskId(id)
    }

    /// Fuses the selected tasks, all on one lane, into the first of them: its cost becomes
    /// `dur_ns`, or the sum of their costs × `factor`. The others are removed (their
    /// dependencies reconnected to the fused task's successors; the calls that launched only
    /// them removed, with their gaps per `gaps`). Returns the fused task.
    pub fn fuse(
        &mut self,
        selection: &Selection,
        cost: FusedCost,
        gaps: HostGaps,
    ) -> Result<Option<TaskId>, EditError> {
        let Some(&first) = selection.tasks().first() else {
            return Ok(None);
        };
        for &task in selection.tasks() {
            self.check_live(task)?;
            let (a, b) = (self.lane(first), self.lane(task));
            if a != b {
                return Err(EditError::FuseAcrossLanes {
                    first: a,
                    second: b,
                });
            }
        }
        // The first task in lane order survives.
        self.settle(self.lane(first));
        let keep = *selection
            .tasks()
            .iter()
            .min_by_key(|t| self.position[t.index()])
            .unwrap_or(&first);
        let dur = match cost {
            FusedCost::Fixed(ns) => ns,
            FusedCost::SumTimes(factor) => {
                check_factor(factor)?;
                let sum: i64 = selection.tasks().iter().map(|&t| self.dur_ns(t)).sum();
                scale_ns(sum, factor)
            }
        };
        if dur < 0 {
            return Err(EditError::BadDuration { ns: dur });
        }
        let rest = Selection(
            selection
                .tasks()
                .iter()
                .copied()
                .filter(|&t| t != keep)
                .collect(),
        );
        // The fused task inherits every wait of the fused-away tasks (they ran after it on the
        // lane, so their inputs are now its inputs).
        for &t in rest.tasks() {
            let inputs: Vec<Edge> = self.preds[t.index()]
                .iter()
                .copied()
                .filter(|e| {
                    e.kind != EdgeKind::Launch
                        && e.kind != EdgeKind::LaneOrder
                        && !e.kind.gates_completion()
                })
                .collect();
            for e in inputs {
                if e.from != keep.0 && self.is_alive(TaskId(e.from)) {
                    self.add_edge(e.from, keep.0, e.kind, e.lag_ns);
                }
            }
        }
        self.remove(&rest, gaps)?;
        let cost = &mut self.costs[keep.index()];
        cost.dur_ns = dur;
        cost.dur_without_inferred_ns = dur;
        Ok(Some(keep))
    }

    /// Splits `selection` into runs: tasks adjacent on their lane (nothing unselected between
    /// them) and in the same step, in lane order. An element-wise chain is such a run. A task
    /// that waits for work on another lane (an event wait, a handoff) starts a new run: that
    /// work may itself wait for the run's earlier tasks, so fusing across it would make the
    /// fused task wait for itself.
    pub fn runs(&self, selection: &Selection) -> Vec<Selection> {
        // Only the lanes the selection has tasks on: the host threads' lanes hold most of a
        // window's tasks and, for a selection of kernels, none of its runs.
        let mut selected_lanes = vec![false; self.lane_tasks.len()];
        for &task in selection.tasks() {
            if let Some(row) = self.rows.get(task.index()) {
                selected_lanes[row.lane as usize] = true;
            }
        }
        let mut runs = Vec::new();
        for (lane_index, _) in selected_lanes.iter().enumerate().filter(|(_, hit)| **hit) {
            let lane = self.ordered_lane(lane_index as u32);
            let mut current: Vec<TaskId> = Vec::new();
            for &t in lane.iter().filter(|&&t| t != GONE) {
                let task = TaskId(t);
                if !selection.contains(task) {
                    if !current.is_empty() {
                        runs.push(Selection::new(std::mem::take(&mut current)));
                    }
                    continue;
                }
                let same_step = current
                    .last()
                    .is_none_or(|&p| self.rows[p.index()].step == self.rows[t as usize].step);
                let waits_elsewhere = self.preds[t as usize].iter().any(|e| {
                    e.kind != EdgeKind::Launch
                        && self.alive[e.from as usize]
                        && self.rows[e.from as usize].lane != self.rows[t as usize].lane
                });
                if (waits_elsewhere || !same_step) && !current.is_empty() {
                    runs.push(Selection::new(std::mem::take(&mut current)));
                }
                current.push(task);
            }
            if !current.is_empty() {
                runs.push(Selection::new(current));
            }
        }
        runs
    }

    /// Whether this is a clone of `base` that no edit has written to: then it builds the
    /// same graph, and a caller may reuse what it predicted for `base`. Conservative: a
    /// write of an unchanged value counts as a change.
    pub fn is_unedited_clone_of(&self, base: &EditGraph) -> bool {
        // Every field named: a new one must say how it compares.
        let EditGraph {
            rows,
            costs,
            alive,
            frozen,
            preds,
            succs,
            lane_tasks,
            position,
            inserted,
            inserted_after,
            followers,
            lanes,
            launch_queue_capacity,
            launch_queue_exempt,
            shared_gap_permille,
            original_tasks,
            launch_latency_ns,
            dispatch_gap_ns,
            typical_gap_ns,
            carried_gap_ns,
        } = self;
        rows.shares_all_with(&base.rows)
            && costs.shares_all_with(&base.costs)
            && alive.shares_all_with(&base.alive)
            && frozen.shares_all_with(&base.frozen)
            && preds.shares_all_with(&base.preds)
            && succs.shares_all_with(&base.succs)
            && position.shares_all_with(&base.position)
            && lane_tasks.len() == base.lane_tasks.len()
            && lane_tasks
                .iter()
                .zip(&base.lane_tasks)
                .all(|(a, b)| Arc::ptr_eq(a, b))
            && *inserted == base.inserted
            && *inserted_after == base.inserted_after
            && *followers == base.followers
            && *lanes == base.lanes
            && *launch_queue_capacity == base.launch_queue_capacity
            && *launch_queue_exempt == base.launch_queue_exempt
            && *shared_gap_permille == base.shared_gap_permille
            && *original_tasks == base.original_tasks
            && *launch_latency_ns == base.launch_latency_ns
            && *dispatch_gap_ns == base.dispatch_gap_ns
            && Arc::ptr_eq(typical_gap_ns, &base.typical_gap_ns)
            && *carried_gap_ns == base.carried_gap_ns
    }

    /// Rebuilds a [`Graph`]: live tasks numbered lane by lane, edges sorted by (target, kind,
    /// source), checked for dangling edges and cycles. Also returns, per id of this edit, the
    /// task of the new graph (`TaskId::NONE` if removed).
    pub fn finish(&self) -> Result<(Graph, Vec<TaskId>), EditError> {
        let (graph, new_id) = self.build()?;
        match simulate(&graph, &RecordedOrder, SimOptions::default()) {
            Ok(_) => Ok((graph, new_id)),
            Err(SimError::Cycle { first, .. }) => Err(EditError::Cycle { task: first }),
            Err(e) => Err(EditError::Sim(e)),
        }
    }

    /// [`EditGraph::finish`] without the replay that checks for cycles: for a caller that
    /// replays the graph anyway (and maps [`SimError::Cycle`] to [`EditError::Cycle`]).
    pub(crate) fn build(&self) -> Result<(Graph, Vec<TaskId>), EditError> {
        let mut new_id = vec![TaskId::NONE; self.rows.len()];
        // Each column reserved once: grown by doubling, the columns of a million-task graph
        // were copied and their fresh pages faulted in several times per what-if.
        let live = self.alive.iter().filter(|&&a| a).count();
        let mut graph = Graph::with_task_capacity(live);
        // The input's ids of the new graph's tasks, in the new graph's order.
        let mut order: Vec<u32> = Vec::with_capacity(self.rows.len());
        for lane_index in 0..self.lane_tasks.len() {
            let tasks = self.ordered_lane(lane_index as u32);
            let first_task = graph.task_count() as u32;
            for &t in tasks.iter().filter(|&&t| t != GONE) {
                if !self.alive[t as usize] {
                    return Err(EditError::Invalid(format!(
                        "removed task {t} is still on lane {lane_index}"
                    )));
                }
                if self.rows[t as usize].lane as usize != lane_index {
                    return Err(EditError::Invalid(format!(
                        "task {t} is listed on lane {lane_index} but belongs to another"
                    )));
                }
                new_id[t as usize] = TaskId(graph.task_count() as u32);
                order.push(t);
                let row = &self.rows[t as usize];
                graph.kind.push(row.kind);
                graph.lane.push(lane_index as u32);
                graph.name.push(row.name);
                graph.event.push(row.event);
                let cost = &self.costs[t as usize];
                graph.dur_ns.push(cost.dur_ns);
                graph
                    .dur_without_inferred_ns
                    .push(cost.dur_without_inferred_ns);
                graph.gap_ns.push(cost.gap_ns);
                graph.rec_start_ns.push(row.rec_start_ns);
                graph.rec_end_ns.push(row.rec_end_ns);
                graph.step.push(row.step);
                graph.not_before_ns.push(row.not_before_ns);
                graph.peer_wait_ns.push(row.peer_wait_ns);
                graph.sm_demand.push(row.sm_demand);
            }
            let lane = &self.lanes[lane_index];
            graph.lanes.push(GraphLane {
                trace_lane: lane.trace_lane,
                kind: lane.kind,
                first_task,
                task_count: graph.task_count() as u32 - first_task,
                device: lane.device,
            });
        }
        if live != graph.task_count() {
            return Err(EditError::Invalid(format!(
                "{} live tasks are on no lane",
                live - graph.task_count()
            )));
        }
        for (t, preds) in self.preds.iter().enumerate() {
            if !self.alive[t] {
                continue;
            }
            if let Some(e) = preds
                .iter()
                .find(|e| new_id[e.from as usize] == TaskId::NONE)
            {
                return Err(EditError::Invalid(format!(
                    "edge from removed task {} into task {t}",
                    e.from
                )));
            }
        }
        // Calls exempt from the queue, in the new ids (sorted: `order` is the new order).
        graph.launch_queue_exempt = order
            .iter()
            .filter(|&&t| {
                self.is_original(TaskId(t))
                    && self
                        .launch_queue_exempt
                        .binary_search(&self.origin(TaskId(t)))
                        .is_ok()
            })
            .map(|&t| new_id[t as usize])
            .collect();
        graph.launch_queue_capacity = self.launch_queue_capacity.clone();
        graph.shared_gap_permille = self.shared_gap_permille;
        let queue_from = self.launch_queue_edges(&graph, &order, &new_id);
        // Edges sorted by (target, kind, source), the smallest lag kept of a repeated edge:
        // targets come in order, so each task's few edges are sorted alone (sorting the
        // window's edges at once was a large share of every what-if's build).
        let edge_count: usize = order
            .iter()
            .map(|&t| self.preds[t as usize].len())
            .sum::<usize>()
            + queue_from.iter().filter(|&&f| f != TaskId::NONE).count();
        graph.pred_offsets.reserve(order.len() + 1);
        graph.pred.reserve(edge_count);
        graph.pred_kind.reserve(edge_count);
        graph.pred_lag_ns.reserve(edge_count);
        graph.pred_offsets.push(0);
        let mut edges: Vec<(EdgeKind, TaskId, i64)> = Vec::new();
        for &t in &order {
            edges.clear();
            edges.extend(
                self.preds[t as usize]
                    .iter()
                    .map(|e| (e.kind, new_id[e.from as usize], e.lag_ns)),
            );
            let from = queue_from[new_id[t as usize].index()];
            if from != TaskId::NONE {
                edges.push((EdgeKind::LaunchQueue, from, 0));
            }
            edges.sort_unstable();
            edges.dedup_by(|b, a| (a.0, a.1) == (b.0, b.1));
            for &(kind, from, lag_ns) in &edges {
                graph.pred.push(from);
                graph.pred_kind.push(kind);
                graph.pred_lag_ns.push(lag_ns);
            }
            graph.pred_offsets.push(graph.pred.len() as u32);
        }
        Ok((graph, new_id))
    }

    /// The launch-queue edge into each task of the built graph (its ids; `TaskId::NONE` for
    /// none), recounted over the live launches in host call order (`graph::launch_queue`):
    /// an inserted launch takes a slot, a removed or fused-away one frees its slot, and a
    /// call the recorded times exempted stays exempt. `graph` has its tasks and exemptions,
    /// not its edges.
    fn launch_queue_edges(&self, graph: &Graph, order: &[u32], new_id: &[TaskId]) -> Vec<TaskId> {
        let mut from = vec![TaskId::NONE; order.len()];
        if self.launch_queue_capacity.is_empty() {
            return from;
        }
        let mut launches: Vec<(TaskId, TaskId)> = Vec::new();
        // Input device tasks launched before the window (no launching call; a boundary time).
        let mut before: Vec<TaskId> = Vec::new();
        for &t in order {
            let row = &self.rows[t as usize];
            if !row.kind.on_device() {
                continue;
            }
            let mut launched = false;
            for e in &self.preds[t as usize] {
                if e.kind == EdgeKind::Launch && !self.rows[e.from as usize].kind.on_device() {
                    launches.push((new_id[e.from as usize], new_id[t as usize]));
                    launched = true;
                }
            }
            if !launched && self.is_original(TaskId(t)) && row.not_before_ns != NO_TIME {
                before.push(new_id[t as usize]);
            }
        }
        let entries = crate::graph::launch_queue::entries(graph, &launches, &before);
        let exempt = &graph.launch_queue_exempt;
        for (holder, call) in
            crate::graph::launch_queue::edges(&entries, &self.launch_queue_capacity, |c| {
                exempt.binary_search(&c).is_ok()
            })
        {
            from[call.index()] = holder;
        }
        from
    }
}

/// The cost of a fused task.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FusedCost {
    Fixed(i64),
    /// The sum of the fused tasks' costs × this factor.
    SumTimes(f64),
}

/// Marks a removed task's place in its lane.
const GONE: u32 = u32::MAX;

/// Whether the gaps after `tasks` (removed ones skipped) add up to at least `lag_ns`: then lane
/// order already implies an edge of that lag. Stops as soon as they do.
fn gaps_reach(costs: &CowVec<Costs>, tasks: &[u32], lag_ns: i64) -> bool {
    let mut sum = 0i64;
    if lag_ns <= 0 {
        return true;
    }
    for &t in tasks.iter().filter(|&&t| t != GONE) {
        sum += costs[t as usize].gap_ns;
        if sum >= lag_ns {
            return true;
        }
    }
    false
}

/// The kind of an edge standing for the path `first` then `second` through a removed task:
/// it leaves from where `first` leaves (begin or end of its source) and gates what `second`
/// gates (begin or completion of its target); inferred if either part is.
fn compose(first: EdgeKind, second: EdgeKind) -> EdgeKind {
    let from_begin = first.from_source_begin();
    let gates_completion = second.gates_completion();
    let inferred = first.is_inferred() || second.is_inferred();
    for kind in [second, first] {
        if kind.from_source_begin() == from_begin
            && kind.gates_completion() == gates_completion
            && kind.is_inferred() == inferred
            && kind != EdgeKind::LaneOrder
        {
            return kind;
        }
    }
    match (from_begin, gates_completion, inferred) {
        (true, false, _) => EdgeKind::Launch,
        (true, true, _) => EdgeKind::PeerArrival,
        (false, false, false) => EdgeKind::EventWait,
        (false, false, true) => EdgeKind::InferredStreamWait,
        (false, true, false) => EdgeKind::HostSync,
        (false, true, true) => EdgeKind::InferredHostSync,
    }
}

/// The largest duration factor taken: a million times a 1 ms kernel is 17 minutes. Larger
/// factors say nothing a what-if can answer, and push costs towards `i64::MAX`.
pub const MAX_FACTOR: f64 = 1e6;

fn check_factor(factor: f64) -> Result<(), EditError> {
    if factor.is_finite() && (0.0..=MAX_FACTOR).contains(&factor) {
        Ok(())
    } else {
        Err(EditError::BadFactor { factor })
    }
}

/// `ns × factor`, saturating at `i64::MAX` (a float-to-integer `as` saturates).
fn scale_ns(ns: i64, factor: f64) -> i64 {
    (ns as f64 * factor).round() as i64
}

/// The median recorded cost of tasks named `name` in `graph` (lower middle), or `None` if
/// there are none: the trace's own figure for the CPU cost of a call.
pub fn median_duration(graph: &Graph, name: NameId) -> Option<i64> {
    let mut values: Vec<i64> = (0..graph.task_count())
        .filter(|&t| graph.name[t] == name)
        .map(|t| graph.dur_ns[t])
        .collect();
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    Some(values[(values.len() - 1) / 2])
}
