//! The replay engine: Daydream's Algorithm 1 with per-lane clocks, over a whole window.
//!
//! Every lane runs its tasks in the order the [`SchedulePolicy`] gives (by default the recorded
//! order). A task begins when its lane is free (previous task's end plus its untraced gap) and
//! every start-gating predecessor has ended (plus the edge's lag); it completes its own cost
//! after that, but not before its completion-gating predecessors (a blocking call waits for
//! the device) and its external input (a collective waits for peers). With lane order fixed
//! the schedule is a longest-path computation in topological order: O(V + E), deterministic.
//! A device's capacity is the one constraint that is not an edge: a task that fills its device
//! holds other streams' work until its last waves, whichever task that is in this replay; the
//! engine then settles begins in time order, O((V + E) log V). Times saturate at `i64::MAX`
//! rather than wrap.

mod critical_path;

pub use critical_path::{CriticalPath, PathShare, ShareKind, critical_path};

use std::collections::BTreeMap;

use crate::graph::{
    EdgeKind, Graph, NO_TIME, SHARED_GAP_NONE_PERMILLE as NONE_PERMILLE, SmDemand, TaskId,
};

/// Chooses the order of tasks on each lane. The recorded order is the default; a priority
/// policy (P3-style communication scheduling, vDNN prefetching) returns another permutation.
pub trait SchedulePolicy: Sync {
    /// The tasks of graph lane `lane` in execution order, or `None` for the recorded order.
    fn lane_order(&self, graph: &Graph, lane: usize) -> Option<Vec<TaskId>>;
}

/// Runs every lane in recorded order.
#[derive(Clone, Copy, Debug, Default)]
pub struct RecordedOrder;

impl SchedulePolicy for RecordedOrder {
    fn lane_order(&self, _graph: &Graph, _lane: usize) -> Option<Vec<TaskId>> {
        None
    }
}

/// Replay options.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimOptions {
    /// Ignore edges inferred from timing, and the waits only they explained (to measure what
    /// the recorded causes alone explain).
    pub without_inferred: bool,
    /// Leave out the device capacity model: every stream runs as if it had the device to
    /// itself (to measure what the model explains).
    pub unlimited_devices: bool,
    /// Leave out the wait for peers outside the graph (`Graph::peer_wait_ns`) and the
    /// `PeerArrival` edges: the replay of the same graph with no straggler (`Peers::Balanced`),
    /// without building it again.
    pub without_peer_waits: bool,
}

/// What determined when a task could run: the constraint that was binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// Nothing before it in the window: it ran at its boundary time.
    Boundary,
    /// Its lane was busy with this task (and its gap).
    Lane(TaskId),
    /// This predecessor, through an edge of this kind.
    Edge(TaskId, EdgeKind),
    /// Its peers (outside the trace) arrived last.
    PeerWait,
}

impl Binding {
    pub fn pred(self) -> Option<TaskId> {
        match self {
            Binding::Lane(t) | Binding::Edge(t, _) => Some(t),
            Binding::Boundary | Binding::PeerWait => None,
        }
    }
}

/// When every task ran in a replay.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// When the task took its lane.
    pub begin_ns: Vec<i64>,
    /// When it completed (its lane is then free after its gap).
    pub end_ns: Vec<i64>,
    /// What determined the begin.
    pub binding: Vec<Binding>,
    /// What held back completion beyond the task's own cost after its begin, if anything
    /// (the work a blocking call waited for, a collective's peers).
    pub completion: Vec<Option<Binding>>,
}

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("the dependency graph has a cycle through {stuck} tasks (first: task {first})")]
    Cycle { stuck: usize, first: u32 },
    #[error(
        "schedule policy returned an order for lane {lane} that is not a permutation of its tasks"
    )]
    BadOrder { lane: usize },
}

/// Replays `graph` under `policy`.
pub fn simulate(
    graph: &Graph,
    policy: &dyn SchedulePolicy,
    options: SimOptions,
) -> Result<Timeline, SimError> {
    let n = graph.task_count();
    let keep = |e: usize| {
        let kind = graph.pred_kind[e];
        !(options.without_inferred && kind.is_inferred()
            || options.without_peer_waits && kind == EdgeKind::PeerArrival)
    };
    // What settling a task reads of it, side by side in one row. Read from the graph's
    // columns, a task touched a dozen cache lines; a job's replay interleaves thousands of
    // lanes in time order, and that many lines per lane outgrew the cache as ranks grew (171
    // → 240 ns per task from 256 to 1,024 ranks). Lane neighbours in recorded order first.
    let mut rows: Vec<TaskRow> = (0..n)
        .map(|t| {
            let task = TaskId(t as u32);
            let lane = &graph.lanes[graph.lane[t] as usize];
            let last = lane.first_task + lane.task_count - 1;
            TaskRow {
                dur_ns: if options.without_inferred {
                    graph.dur_without_inferred_ns[t]
                } else {
                    graph.dur_ns[t]
                },
                gap_ns: graph.gap_ns[t],
                lane_prev: graph.lane_pred(task).unwrap_or(TaskId::NONE),
                lane_next: if task.0 < last {
                    TaskId(task.0 + 1)
                } else {
                    TaskId::NONE
                },
            }
        })
        .collect();
    let peer_wait_of = |t: usize| {
        if options.without_peer_waits {
            0
        } else {
            graph.peer_wait_ns[t]
        }
    };
    // Then the policy's orders.
    for (lane_index, lane) in graph.lanes.iter().enumerate() {
        if let Some(order) = policy.lane_order(graph, lane_index) {
            let range = lane.first_task..lane.first_task + lane.task_count;
            let mut seen = order.clone();
            seen.sort_unstable();
            if seen.len() != lane.task_count as usize || !seen.iter().map(|t| t.0).eq(range) {
                return Err(SimError::BadOrder { lane: lane_index });
            }
            let mut prev = TaskId::NONE;
            for &t in &order {
                rows[t.index()].lane_prev = prev;
                rows[t.index()].lane_next = TaskId::NONE;
                if prev != TaskId::NONE {
                    rows[prev.index()].lane_next = t;
                }
                prev = t;
            }
        }
    }
    let preds = |t: usize| {
        graph
            .preds(TaskId(t as u32))
            .filter(move |&e| keep(e))
            .map(|e| PredRow {
                lag_ns: graph.pred_lag_ns[e],
                from: graph.pred[e],
                kind: graph.pred_kind[e],
            })
    };

    // Each task is two nodes: its begin (node 2t) and its end (node 2t + 1). A blocking call's
    // begin releases the work it launches, and that work's end releases the call's end: with
    // one node per task that would be a cycle.
    let begin_node = |t: usize| 2 * t;
    let end_node = |t: usize| 2 * t + 1;
    let mut indegree = vec![0u32; 2 * n];
    // Successor lists (CSR) of the graph's edges in one array: each node's count at
    // `succ_offsets[node + 1]`, then its start there, used as its cursor while filling, which
    // leaves its end there, the next node's start. Counts, offsets and cursors were three
    // arrays of 2n to zero and write on every replay. A task's own begin → end and its lane's
    // end → next begin are not stored: every task has them, and the engine follows them from
    // `lane_next` (stored, they were more than half the lists).
    let mut succ_offsets = vec![0u32; 2 * n + 1];
    let source_node = |edge: &PredRow| {
        let from = edge.from.index();
        if edge.kind.from_source_begin() {
            begin_node(from)
        } else {
            end_node(from)
        }
    };
    let target_node = |edge: &PredRow, t: usize| {
        if edge.kind.gates_completion() {
            end_node(t)
        } else {
            begin_node(t)
        }
    };
    for t in 0..n {
        indegree[end_node(t)] += 1;
        if rows[t].lane_prev != TaskId::NONE {
            indegree[begin_node(t)] += 1;
        }
        for edge in preds(t) {
            indegree[target_node(&edge, t)] += 1;
            succ_offsets[source_node(&edge) + 1] += 1;
        }
    }
    let mut start = 0;
    for node in 0..2 * n {
        let count = succ_offsets[node + 1];
        succ_offsets[node + 1] = start;
        start += count;
    }
    let mut succ = vec![0u32; start as usize];
    let mut link = |from: usize, to: usize| {
        let cursor = &mut succ_offsets[from + 1];
        succ[*cursor as usize] = to as u32;
        *cursor += 1;
    };
    for t in 0..n {
        for edge in preds(t) {
            link(source_node(&edge), target_node(&edge, t));
        }
    }

    let mut timeline = Timeline {
        begin_ns: vec![0; n],
        end_ns: vec![0; n],
        binding: vec![Binding::Boundary; n],
        completion: vec![None; n],
    };
    let release = |edge: &PredRow, timeline: &Timeline| {
        let from = edge.from.index();
        let at = if edge.kind.from_source_begin() {
            timeline.begin_ns[from]
        } else {
            timeline.end_ns[from]
        };
        at.saturating_add(edge.lag_ns)
    };
    // A node's time, once every predecessor node has its own.
    let settle = |node: usize, timeline: &mut Timeline| -> i64 {
        let t = node / 2;
        let row = &rows[t];
        if node.is_multiple_of(2) {
            let mut begin = graph.not_before_ns[t];
            let mut binding = Binding::Boundary;
            let prev = row.lane_prev;
            if prev != TaskId::NONE {
                let ready = timeline.end_ns[prev.index()].saturating_add(rows[prev.index()].gap_ns);
                if ready > begin {
                    begin = ready;
                    binding = Binding::Lane(prev);
                }
            }
            for edge in preds(t) {
                if edge.kind.gates_completion() {
                    continue;
                }
                let ready = release(&edge, timeline);
                if ready > begin {
                    begin = ready;
                    binding = Binding::Edge(edge.from, edge.kind);
                }
            }
            if begin == NO_TIME {
                begin = graph.rec_start_ns[t];
            }
            timeline.begin_ns[t] = begin;
            timeline.binding[t] = binding;
            begin
        } else {
            let mut exec = timeline.begin_ns[t];
            let peer_wait_ns = peer_wait_of(t);
            if peer_wait_ns > 0 {
                exec = exec.saturating_add(peer_wait_ns);
                timeline.completion[t] = Some(Binding::PeerWait);
            }
            for edge in preds(t) {
                if !edge.kind.gates_completion() {
                    continue;
                }
                let ready = release(&edge, timeline);
                if ready > exec {
                    exec = ready;
                    timeline.completion[t] = Some(Binding::Edge(edge.from, edge.kind));
                }
            }
            // Saturating: a what-if may scale a cost towards `i64::MAX` (a factor is bounded,
            // not the product), and a wrapped end would come back as a negative time.
            timeline.end_ns[t] = exec.saturating_add(row.dur_ns);
            timeline.end_ns[t]
        }
    };

    // Without a task that fills its device, no task can be held by another stream's, and
    // the schedule is a longest path in any topological order (a stack). With one, begins are
    // settled in time order (a heap), so that when a task begins the engine knows what holds
    // its device: the capacity model of `SmDemand`.
    let mut capacity = Capacity::new(graph, options);
    let mut frontier = if capacity.is_needed() {
        Frontier::Heap {
            begins: std::collections::BinaryHeap::new(),
            ends: Vec::new(),
        }
    } else {
        Frontier::Stack(Vec::new())
    };
    // Only a device task's begin waits its turn in time order; a host task's begin, like
    // any end, is fixed once it is ready (no capacity model looks at it).
    let timed = |node: usize| {
        node.is_multiple_of(2) && graph.lanes[graph.lane[node / 2] as usize].device.is_some()
    };
    for node in (0..2 * n).rev() {
        if indegree[node] == 0 {
            let at = settle(node, &mut timeline);
            frontier.push(at, node as u32, timed(node));
        }
    }
    let mut done = 0usize;
    while let Some((at, node)) = frontier.pop() {
        let node = node as usize;
        let t = node / 2;
        if node.is_multiple_of(2) && capacity.is_needed() {
            if let Some((until, full)) = capacity.held(t, at) {
                timeline.begin_ns[t] = until;
                timeline.binding[t] = Binding::Edge(full, EdgeKind::DeviceFull);
                frontier.push(until, node as u32, true);
                continue;
            }
            if let Binding::Lane(prev) = timeline.binding[t]
                && let Some(ready) = capacity.shared_gap_ready(t, prev.index(), &timeline)
                && ready > at
            {
                timeline.begin_ns[t] = ready;
                frontier.push(ready, node as u32, true);
                continue;
            }
            capacity.begins(t, at, peer_wait_of(t), rows[t].dur_ns);
        }
        done += 1;
        // The implicit successor first (a begin's own end, an end's lane successor's begin),
        // then the stored ones. The order in which ready nodes are found changes no time:
        // without the capacity model any topological order gives the same longest paths,
        // and with it every end is settled before the next begin leaves the heap.
        let implicit = if node.is_multiple_of(2) {
            Some(end_node(t))
        } else {
            let next = rows[t].lane_next;
            (next != TaskId::NONE).then(|| begin_node(next.index()))
        };
        let stored = succ_offsets[node]..succ_offsets[node + 1];
        for next in implicit
            .into_iter()
            .chain(stored.map(|s| succ[s as usize] as usize))
        {
            indegree[next] -= 1;
            if indegree[next] == 0 {
                let at = settle(next, &mut timeline);
                frontier.push(at, next as u32, timed(next));
            }
        }
    }
    if done < 2 * n {
        let first = (0..2 * n).find(|&v| indegree[v] > 0).unwrap_or(0) / 2;
        return Err(SimError::Cycle {
            stuck: 2 * n - done,
            first: first as u32,
        });
    }
    Ok(timeline)
}

/// A task as the engine reads it (see `simulate`).
struct TaskRow {
    /// Its cost in this replay.
    dur_ns: i64,
    /// Untraced time after it on its lane.
    gap_ns: i64,
    /// Its neighbours on its lane in the policy's order.
    lane_prev: TaskId,
    lane_next: TaskId,
}

/// A kept incoming edge.
struct PredRow {
    lag_ns: i64,
    from: TaskId,
    kind: EdgeKind,
}

/// The nodes ready to settle: any topological order (a stack), or begins in time order (a
/// min-heap on time, then node id, so ties break the same way on every run) and ends as soon
/// as they are ready. Only a begin consults the device's capacity: an end's time is fixed
/// when it is ready (its task's begin and the work it waits for have settled), and settling
/// it early only puts the begins it releases in the heap sooner, where they still wait for
/// their time. Half the nodes through the heap: 11 % fewer instructions in the self-replay's
/// two replays of df_index_resolver (cachegrind); `replay`, `analyze` and `advise` outputs
/// byte-identical on every trace in `testdata/`. A host task's begin settles as an end does:
/// its time is fixed by its predecessors and no device's capacity looks at it, and the
/// device begins it releases still wait for their time in the heap (a job's global replay
/// pushed every host begin of every rank through the heap).
enum Frontier {
    Stack(Vec<(i64, u32)>),
    Heap {
        begins: std::collections::BinaryHeap<std::cmp::Reverse<(i64, u32)>>,
        ends: Vec<(i64, u32)>,
    },
}

impl Frontier {
    /// `in_time_order`: a device task's begin, which must wait its turn in the heap.
    fn push(&mut self, at: i64, node: u32, in_time_order: bool) {
        match self {
            Frontier::Stack(stack) => stack.push((at, node)),
            Frontier::Heap { ends, .. } if !in_time_order => ends.push((at, node)),
            Frontier::Heap { begins, .. } => begins.push(std::cmp::Reverse((at, node))),
        }
    }

    fn pop(&mut self) -> Option<(i64, u32)> {
        match self {
            Frontier::Stack(stack) => stack.pop(),
            Frontier::Heap { begins, ends } => ends
                .pop()
                .or_else(|| begins.pop().map(|std::cmp::Reverse(entry)| entry)),
        }
    }
}

/// The engine's device capacity: which tasks fill their device now, and until when. A task
/// that fills its device ([`SmDemand::Fills`]) holds it from its begin until its last two
/// waves; a task of another stream of that device that asks for multiprocessors and is
/// ready meanwhile begins when the device has room (`EdgeKind::DeviceFull`). A task of the
/// same stream is ordered by its lane already.
struct Capacity<'g> {
    graph: &'g Graph,
    needed: bool,
    /// Per lane, its device's slot in the lists below (`None`: a host lane). Devices are
    /// numbered densely once: a map looked up per begin grew with the devices of a job.
    device_slot: Vec<Option<u32>>,
    /// Per device slot, tasks filling it: (lane, begin, room from, task). Kept per device so
    /// that a begin looks at its own device's tasks only: a job's global graph has a device
    /// per rank, and one list of every device's tasks made its replay grow with ranks × tasks.
    filling: Vec<Vec<(u32, i64, i64, TaskId)>>,
    /// Per device slot, tasks that have begun and may still run, while gaps are shared:
    /// (lane, begin, end).
    running: Vec<Vec<(u32, i64, i64)>>,
    /// The latest gap start asked about: a running task that ended by it slows no later gap
    /// (every device's list is pruned against it when next looked at).
    running_floor_ns: i64,
    /// The graph's gaps grow beside another stream (`Graph::shared_gap_permille`) and it has
    /// two streams on one device.
    shares_gaps: bool,
}

impl<'g> Capacity<'g> {
    fn new(graph: &'g Graph, options: SimOptions) -> Self {
        let needed = !options.unlimited_devices
            && (0..graph.task_count()).any(|t| {
                graph.sm_demand[t]
                    .room_before_end_ns(graph.dur_ns[t])
                    .is_some()
                    && graph.lanes[graph.lane[t] as usize].device.is_some()
            });
        // A slower gap beside another stream needs to know what runs when: time order too.
        let shares_gaps = !options.unlimited_devices
            && graph.shared_gap_permille > NONE_PERMILLE
            && (1..graph.lanes.len()).any(|l| {
                graph.lanes[l].device.is_some()
                    && graph.lanes[..l]
                        .iter()
                        .any(|o| o.device == graph.lanes[l].device)
            });
        let mut slots: BTreeMap<i64, u32> = BTreeMap::new();
        let device_slot: Vec<Option<u32>> = graph
            .lanes
            .iter()
            .map(|lane| {
                lane.device.map(|device| {
                    let next = slots.len() as u32;
                    *slots.entry(device).or_insert(next)
                })
            })
            .collect();
        Capacity {
            graph,
            needed: needed || shares_gaps,
            device_slot,
            filling: vec![Vec::new(); slots.len()],
            running: vec![Vec::new(); slots.len()],
            running_floor_ns: i64::MIN,
            shares_gaps,
        }
    }

    fn is_needed(&self) -> bool {
        self.needed
    }

    /// If a task of another stream fills task `t`'s device at time `at`: when it leaves
    /// room, and which task it is (the one leaving room last).
    fn held(&mut self, t: usize, at: i64) -> Option<(i64, TaskId)> {
        let g = self.graph;
        if g.sm_demand[t] == SmDemand::None {
            return None;
        }
        let lane = g.lane[t];
        let device = self.device_slot[lane as usize]?;
        // Settled in time order: what left room before now holds no one any more.
        let filling = &mut self.filling[device as usize];
        filling.retain(|&(.., room_at, _)| room_at > at);
        filling
            .iter()
            .filter(|&&(l, begin, room_at, _)| l != lane && begin <= at && room_at > at)
            .max_by_key(|&&(.., room_at, full)| (room_at, std::cmp::Reverse(full)))
            .map(|&(.., room_at, full)| (room_at, full))
    }

    /// When task `t`, bound by its lane predecessor `prev`, can begin if another stream of its
    /// device runs during the gap after `prev`: that gap is longer on a shared device
    /// (`Graph::shared_gap_permille`). `None` when it is not.
    fn shared_gap_ready(&mut self, t: usize, prev: usize, timeline: &Timeline) -> Option<i64> {
        let g = self.graph;
        let lane = g.lane[t];
        let device = self.device_slot[lane as usize]?;
        let gap = g.gap_ns[prev];
        if gap <= 0 || !self.shares_gaps {
            return None;
        }
        let from = timeline.end_ns[prev];
        let to = from.saturating_add(gap);
        // Settled in time order: what ended before this gap (or an earlier one asked about)
        // began can slow no later one.
        self.running_floor_ns = self.running_floor_ns.max(from);
        let floor = self.running_floor_ns;
        let running = &mut self.running[device as usize];
        running.retain(|&(.., end)| end > floor);
        let busy = running
            .iter()
            .any(|&(l, begin, end)| l != lane && begin < to && end > from);
        let scaled = i64::try_from(
            i128::from(gap) * i128::from(g.shared_gap_permille) / i128::from(NONE_PERMILLE),
        )
        .unwrap_or(i64::MAX);
        busy.then(|| from.saturating_add(scaled))
    }

    /// Task `t` begins at `at`, waits `peer_wait_ns` for its peers and runs `dur_ns`: if it
    /// fills its device, it holds it.
    fn begins(&mut self, t: usize, at: i64, peer_wait_ns: i64, dur_ns: i64) {
        let g = self.graph;
        let lane = g.lane[t];
        let Some(device) = self.device_slot[lane as usize] else {
            return;
        };
        if self.shares_gaps {
            let end = at.saturating_add(peer_wait_ns).saturating_add(dur_ns);
            self.running[device as usize].push((lane, at, end));
        }
        let Some(room_before_end) = g.sm_demand[t].room_before_end_ns(dur_ns) else {
            return;
        };
        let room_at = at.saturating_add(dur_ns - room_before_end);
        if room_at > at {
            self.filling[device as usize].push((lane, at, room_at, TaskId(t as u32)));
        }
    }
}
