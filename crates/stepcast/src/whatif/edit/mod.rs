//! An editable copy of a [`Graph`] and the what-if primitives (Daydream §4.4): select, scale,
//! set duration, remove (dependencies reconnected), insert (a device task with its launch
//! call), fuse. [`EditGraph::finish`] rebuilds a valid `Graph`: tasks numbered lane by lane,
//! edges sorted, acyclic (checked by replaying it).
//!
//! Tasks keep their ids while being edited: the input's tasks are `0..n` (so a
//! [`Mapping`](crate::analyze::mapping::Mapping) of the input still applies to them) and
//! inserted tasks are numbered from `n` on. The input graph is never changed.

mod finish;
mod fuse;
mod insert;
mod remove;
mod retime;
mod select;

pub use fuse::FusedCost;
pub use insert::{Insert, InsertHost, InsertLaunch};
pub use remove::HostGaps;
pub use select::{Select, SelectContext, Selection};

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use stepcast_trace::{EventId, NameId};

use crate::graph::{EdgeKind, Graph, GraphLane, SmDemand, TaskId, TaskKind};
use crate::simulate::SimError;

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

/// A graph under edit. Build one with [`EditGraph::new`], apply primitives, then
/// [`EditGraph::finish`].
///
/// A clone is cheap: the per-task columns are `CowVec`s, shared with the graph cloned from
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

    fn check_live(&self, task: TaskId) -> Result<(), EditError> {
        if self.is_alive(task) {
            Ok(())
        } else {
            Err(EditError::NoSuchTask { task: task.0 })
        }
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
