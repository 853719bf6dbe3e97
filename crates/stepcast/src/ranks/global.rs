//! The global graph: every rank's graph in one, on aligned clocks, with each matched
//! collective's transfer gated by the start of all its instances.

use stepcast_trace::{EventId, Interner, LaneId, LaneKind, NameId};

use super::{ClockAlignment, CollectiveMatching, MatchedCollective, RankGraph, RankId};
use crate::graph::{EdgeKind, Graph, GraphLane, NO_STEP, NO_TIME, TaskId, TaskKind};
use crate::replay::{measured_span, replayed_span, tasks_by_step};
use crate::simulate::{Binding, RecordedOrder, SimError, SimOptions, Timeline, simulate};
use crate::window::Step;

/// What a matched collective's own cost (its transfer, after every rank has arrived) is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TransferModel {
    /// Per instance: its recorded end minus the last aligned start of the collective (the
    /// recorded duration less the wait the aligned clocks imply).
    #[default]
    ImpliedByAlignedClocks,
    /// Every instance: the fastest recorded instance of the collective across ranks.
    FastestInstance,
}

/// Where one rank lies in the global graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPart {
    pub rank: i64,
    /// Tasks `first_task .. first_task + task_count`, in the rank graph's order.
    pub first_task: u32,
    pub task_count: u32,
    pub first_lane: u32,
    pub lane_count: u32,
    /// Steps `first_step .. first_step + step_count` of [`GlobalGraph::steps`].
    pub first_step: u32,
    pub step_count: u32,
    /// Added to the rank's trace times to get global times: its origin, less its clock
    /// offset, less the global base.
    pub shift_ns: i64,
}

/// A matched collective in the global graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GlobalCollective {
    pub group: String,
    pub seq: u32,
    pub op: String,
    /// The members, in rank order (every rank where the group's members are not recorded).
    pub ranks: Vec<RankId>,
    /// A point-to-point transfer's sender ([`super::MatchedCollective::sender`]).
    pub sender: Option<RankId>,
    /// Each member's instance (global task ids; `ranks[i]`'s is `tasks[i]`).
    pub tasks: Vec<TaskId>,
    /// Each instance's transfer: its own cost once every member has started.
    pub transfer_ns: Vec<i64>,
}

/// Every rank's graph merged into one, on aligned clocks.
#[derive(Clone, Debug, Default)]
pub struct GlobalGraph {
    /// Times are global: nanoseconds after the earliest aligned origin.
    pub graph: Graph,
    /// Task names (the ranks' interners merged).
    pub names: Interner,
    /// Per lane of `graph`: `thread N` or `stream N` of its rank's trace.
    pub lane_names: Vec<String>,
    pub steps: Vec<Step>,
    pub ranks: Vec<RankPart>,
    pub collectives: Vec<GlobalCollective>,
    /// Collective instances whose one-rank input (`Graph::peer_wait_ns`) the real peers replace.
    pub replaced_peer_arrivals: u64,
    /// Edges to and from the collectives' release tasks (2 per instance).
    pub peer_edges: u64,
    /// Tasks `first_release_task..` are the matched collectives' release tasks, one each (by
    /// [`GlobalGraph::collectives`]), after every rank's tasks, each on a lane of its own.
    pub first_release_task: u32,
}

impl GlobalGraph {
    /// Whether `task` is a collective's release task (no rank's).
    pub fn is_release(&self, task: TaskId) -> bool {
        task.0 >= self.first_release_task
    }

    /// The rank holding a global task (the last rank for a release task).
    pub fn rank_of(&self, task: TaskId) -> RankId {
        let k = self.ranks.partition_point(|p| p.first_task <= task.0);
        RankId(k.saturating_sub(1) as u32)
    }

    pub fn name(&self, task: TaskId) -> &str {
        self.names.get(self.graph.name[task.index()])
    }
}

fn shift(value: i64, by: i64) -> i64 {
    if value == NO_TIME { value } else { value + by }
}

/// Merges the ranks' graphs (task ids and lanes offset per rank, times on aligned clocks) and
/// replaces each matched collective's one-rank peer input by its release task: the release
/// begins when every instance has begun (`CollectiveArrival` edges) and each instance
/// completes no earlier (`PeerArrival` edges). The same schedule as an edge between every
/// ordered pair of instances, with 2·R edges instead of R·(R−1).
pub fn global_graph(
    ranks: &[RankGraph],
    matching: &CollectiveMatching,
    alignment: &ClockAlignment,
    transfer: TransferModel,
) -> GlobalGraph {
    let views: Vec<RankView<'_>> = ranks.iter().map(RankView::of).collect();
    merge(&views, &matching.matched, alignment, transfer)
}

/// What the merge reads of one rank: a [`RankGraph`]'s, or a transform of its graph (a
/// job-level prediction: [`super::job`]), whose tasks keep the rank's names and lanes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RankView<'a> {
    pub rank: i64,
    pub origin_ns: i64,
    pub graph: &'a Graph,
    pub steps: &'a [Step],
    pub lane_labels: &'a [String],
    pub names: &'a [Box<str>],
}

impl<'a> RankView<'a> {
    pub fn of(rank: &'a RankGraph) -> RankView<'a> {
        RankView {
            rank: rank.rank,
            origin_ns: rank.origin_ns,
            graph: &rank.window.graph,
            steps: &rank.window.steps,
            lane_labels: &rank.lane_labels,
            names: &rank.names,
        }
    }
}

/// [`global_graph`] of rank views: `matched`'s instances are tasks of the views' graphs.
pub(crate) fn merge(
    ranks: &[RankView<'_>],
    matched: &[MatchedCollective],
    alignment: &ClockAlignment,
    transfer: TransferModel,
) -> GlobalGraph {
    let aligned_origin =
        |r: usize| ranks[r].origin_ns - alignment.offsets_ns.get(r).copied().unwrap_or(0);
    let base = (0..ranks.len()).map(aligned_origin).min().unwrap_or(0);
    let mut global = GlobalGraph::default();
    // Exact capacities: the columns of a large job's graph are most of the reduce node's
    // memory, and grown by doubling they would take up to twice it.
    let instances: usize = matched.iter().map(|c| c.instances.len()).sum();
    let tasks = ranks.iter().map(|r| r.graph.task_count()).sum::<usize>() + matched.len();
    global.graph = Graph::with_task_capacity(tasks);
    // The edges the merge adds to and from the release tasks, as (target, kind, source, lag);
    // the ranks' own edges are copied from their graphs when the columns are built (below).
    let mut peer_edges: Vec<Edge> = Vec::with_capacity(2 * instances);
    // Per rank: whether each of its tasks is a matched collective instance.
    let mut is_instance: Vec<Vec<bool>> = ranks
        .iter()
        .map(|r| vec![false; r.graph.task_count()])
        .collect();
    for c in matched {
        for (r, task) in c.members() {
            is_instance[r.index()][task.index()] = true;
        }
    }
    for (r, rank) in ranks.iter().enumerate() {
        let g = rank.graph;
        let out = &mut global.graph;
        let part = RankPart {
            rank: rank.rank,
            first_task: out.task_count() as u32,
            task_count: g.task_count() as u32,
            first_lane: out.lanes.len() as u32,
            lane_count: g.lanes.len() as u32,
            first_step: global.steps.len() as u32,
            step_count: rank.steps.len() as u32,
            shift_ns: aligned_origin(r) - base,
        };
        let by = part.shift_ns;
        for (index, lane) in g.lanes.iter().enumerate() {
            // A transform may add a lane (a stream of its own) that the trace never labelled.
            let label = rank.lane_labels.get(index).cloned();
            global
                .lane_names
                .push(label.unwrap_or_else(|| format!("lane {index} (added)")));
            out.lanes.push(GraphLane {
                first_task: lane.first_task + part.first_task,
                // Each rank's device 0 is its own GPU: capacity is never shared across ranks.
                device: lane.device.map(|d| ((r as i64) << 32) | (d & 0xffff_ffff)),
                ..lane.clone()
            });
        }
        let mut names: Vec<Option<NameId>> = vec![None; rank.names.len()];
        for t in 0..g.task_count() {
            let local_name = g.name[t];
            let name = *names[local_name.index()]
                .get_or_insert_with(|| global.names.intern(&rank.names[local_name.index()]));
            out.kind.push(g.kind[t]);
            out.lane.push(g.lane[t] + part.first_lane);
            out.name.push(name);
            out.event.push(g.event[t]);
            out.dur_ns.push(g.dur_ns[t]);
            out.dur_without_inferred_ns
                .push(g.dur_without_inferred_ns[t]);
            out.gap_ns.push(g.gap_ns[t]);
            out.rec_start_ns.push(g.rec_start_ns[t] + by);
            out.rec_end_ns.push(g.rec_end_ns[t] + by);
            out.step.push(if g.step[t] == NO_STEP {
                NO_STEP
            } else {
                g.step[t] + part.first_step
            });
            out.not_before_ns.push(shift(g.not_before_ns[t], by));
            out.peer_wait_ns.push(g.peer_wait_ns[t]);
            out.sm_demand.push(g.sm_demand[t]);
            if is_instance[r][t] {
                global.replaced_peer_arrivals += 1;
            }
        }
        for step in rank.steps {
            global.steps.push(Step {
                start_ns: step.start_ns + by,
                marker_end_ns: step.marker_end_ns + by,
                ..step.clone()
            });
        }
        global.ranks.push(part);
    }
    let out = &mut global.graph;
    global.first_release_task = out.task_count() as u32;
    for c in matched {
        let tasks: Vec<TaskId> = c
            .members()
            .map(|(r, t)| TaskId(t.0 + global.ranks[r.index()].first_task))
            .collect();
        // A transfer's receive waits for its send; the send waits for no one (it may complete
        // before the receive is posted): only binding starts release, only binding ends wait.
        let last_start = tasks
            .iter()
            .zip(&c.ranks)
            .filter(|&(_, &r)| c.start_binds(r))
            .map(|(t, _)| out.rec_start_ns[t.index()])
            .max()
            .unwrap_or(0);
        let fastest = tasks
            .iter()
            .map(|t| out.rec_end_ns[t.index()] - out.rec_start_ns[t.index()])
            .min()
            .unwrap_or(0);
        // An instance that ended before its last peer began did not wait for every peer: a
        // rooted collective's (gloo's `broadcast`, `gather`, `reduce`: a receiver waits for its
        // root only, a sender for no one). It keeps its recorded time and waits for no release.
        let ends_bind: Vec<bool> = tasks
            .iter()
            .zip(&c.ranks)
            .map(|(t, &r)| c.end_binds(r) && out.rec_end_ns[t.index()] >= last_start)
            .collect();
        let transfer_ns: Vec<i64> = tasks
            .iter()
            .zip(&ends_bind)
            .map(|(t, &binds)| {
                let recorded = out.rec_end_ns[t.index()] - out.rec_start_ns[t.index()];
                if !binds {
                    return recorded;
                }
                match transfer {
                    TransferModel::ImpliedByAlignedClocks => {
                        (out.rec_end_ns[t.index()] - last_start).clamp(0, recorded)
                    }
                    TransferModel::FastestInstance => fastest,
                }
            })
            .collect();
        // The release: zero cost, no lane order (a lane of its own), no boundary time: it
        // begins when its last instance begins, whatever the recording said.
        let release = TaskId(out.task_count() as u32);
        out.lanes.push(GraphLane {
            trace_lane: LaneId(u32::MAX),
            kind: LaneKind::DeviceStream,
            first_task: release.0,
            task_count: 1,
            // On no device: a release asks nothing of any multiprocessor.
            device: None,
        });
        global
            .lane_names
            .push(format!("release of {} #{}", c.group, c.seq));
        out.kind.push(TaskKind::Collective);
        out.lane.push(out.lanes.len() as u32 - 1);
        out.name.push(global.names.intern(&c.op));
        out.event.push(EventId(u32::MAX));
        out.dur_ns.push(0);
        out.dur_without_inferred_ns.push(0);
        out.gap_ns.push(0);
        out.rec_start_ns.push(last_start);
        out.rec_end_ns.push(last_start);
        out.step.push(NO_STEP);
        out.not_before_ns.push(NO_TIME);
        out.peer_wait_ns.push(0);
        out.sm_demand.push(crate::graph::SmDemand::None);
        for (i, (&t, &r)) in tasks.iter().zip(&c.ranks).enumerate() {
            out.dur_ns[t.index()] = transfer_ns[i];
            out.dur_without_inferred_ns[t.index()] = transfer_ns[i];
            out.peer_wait_ns[t.index()] = 0;
            if c.start_binds(r) {
                peer_edges.push((release, EdgeKind::CollectiveArrival, t, 0));
                global.peer_edges += 1;
            }
            if ends_bind[i] {
                peer_edges.push((t, EdgeKind::PeerArrival, release, 0));
                global.peer_edges += 1;
            }
        }
        global.collectives.push(GlobalCollective {
            group: c.group.clone(),
            seq: c.seq,
            op: c.op.clone(),
            ranks: c.ranks.clone(),
            sender: c.sender,
            tasks,
            transfer_ns,
        });
    }
    drop(is_instance);
    let rank_edges = ranks.iter().map(|r| r.graph.pred.len()).sum::<usize>();
    let offsets = global.ranks.iter().map(|p| p.first_task);
    let preds = ranks.iter().zip(offsets).flat_map(|(rank, first_task)| {
        let g = rank.graph;
        (0..g.task_count()).map(move |t| {
            g.preds(TaskId(t as u32)).map(move |e| {
                (
                    TaskId(t as u32 + first_task),
                    g.pred_kind[e],
                    TaskId(g.pred[e].0 + first_task),
                    g.pred_lag_ns[e],
                )
            })
        })
    });
    fill_preds(out, preds, peer_edges, rank_edges);
    global
}

/// An edge as the merge assembles it: (target, kind, source, lag).
type Edge = (TaskId, EdgeKind, TaskId, i64);

/// Fills `out`'s predecessor lists (CSR by target) from the ranks' edges, `by_task` (each
/// task's, for every task before the release tasks, in task order), and the release tasks'
/// `added`. Each task's list is in (kind, source) order, one edge per (kind, source) pair (the
/// smallest lag): the order a sort of every edge gave, without a second copy of a job's edges
/// in memory (24 bytes an edge) or its sort.
fn fill_preds<I, T>(out: &mut Graph, by_task: I, mut added: Vec<Edge>, rank_edges: usize)
where
    I: Iterator<Item = T>,
    T: Iterator<Item = Edge>,
{
    added.sort_unstable();
    let n = out.task_count();
    let edges = rank_edges + added.len();
    out.pred_offsets = Vec::with_capacity(n + 1);
    out.pred = Vec::with_capacity(edges);
    out.pred_kind = Vec::with_capacity(edges);
    out.pred_lag_ns = Vec::with_capacity(edges);
    out.pred_offsets.push(0);
    let mut added = added.into_iter().peekable();
    let mut list: Vec<Edge> = Vec::new();
    let mut by_task = by_task.fuse();
    for t in 0..n {
        list.clear();
        if let Some(own) = by_task.next() {
            list.extend(own);
        }
        while let Some(edge) = added.next_if(|e| e.0.index() == t) {
            list.push(edge);
        }
        list.sort_unstable();
        list.dedup_by_key(|e| (e.1, e.2));
        for &(_, kind, source, lag_ns) in &list {
            out.pred.push(source);
            out.pred_kind.push(kind);
            out.pred_lag_ns.push(lag_ns);
        }
        out.pred_offsets.push(out.pred.len() as u32);
    }
}

/// Time of the critical path on one lane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneTime {
    pub rank: i64,
    /// Global lane index (into [`GlobalGraph::lane_names`]).
    pub lane: u32,
    pub ns: i64,
}

/// A stretch of the critical path on one rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathSegment {
    pub rank: i64,
    /// Path tasks `first .. first + tasks` of [`GlobalReplay::critical_path`].
    pub first: u32,
    pub tasks: u32,
    /// Path time on this rank (its tasks' shares; the late start of the first segment too).
    pub ns: i64,
    /// The task through which the path entered this rank from the previous segment's rank
    /// (`None` for the first segment): a collective instance released by a peer's arrival.
    pub entered_at: Option<String>,
}

/// One step of one rank, measured and replayed in the global replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankStep {
    pub number: u64,
    /// Replayed start (global time).
    pub start_ns: i64,
    /// From the step's host start to the end of the last task launched inside it.
    pub measured_ns: i64,
    pub replayed_ns: i64,
}

impl RankStep {
    pub fn error(&self) -> f64 {
        crate::replay::relative_error(self.replayed_ns, self.measured_ns)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankReplay {
    pub rank: i64,
    pub steps: Vec<RankStep>,
}

/// A task on the critical path across ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathTask {
    pub rank: i64,
    pub task: TaskId,
    pub name: String,
    pub kind: TaskKind,
    /// Replayed, global time.
    pub begin_ns: i64,
    pub end_ns: i64,
    /// Time of the path attributed to this task (its work, or its wait for what released it).
    pub share_ns: i64,
}

/// The global replay.
#[derive(Clone, Debug)]
pub struct GlobalReplay {
    pub ranks: Vec<RankReplay>,
    /// From the earliest replayed step start to the latest end, earliest first.
    pub critical_path: Vec<PathTask>,
    /// When the path ends: the latest step's end, which may outlast its last task (the host
    /// working on untraced after it), the first task's share running to it.
    pub critical_path_end_ns: i64,
    /// Time of the critical path spent on each rank (by [`RankId`]).
    pub critical_path_ns_by_rank: Vec<i64>,
    /// How often the critical path crosses from one rank to another.
    pub critical_path_rank_crossings: u32,
    /// Where the path begins before any task: the rank whose first task starts it, and how
    /// long after the earliest replayed step start that task began (the rank started late, or
    /// its trace begins late). Counted in that rank's path time, not in any task's share.
    pub critical_path_late_start: Option<(i64, i64)>,
    /// The path's time on each lane it visits, by global lane (rank by rank).
    pub critical_path_by_lane: Vec<LaneTime>,
    /// The path cut where it changes rank: consecutive tasks of one rank, earliest first.
    pub critical_path_segments: Vec<PathSegment>,
    pub timeline: Timeline,
}

impl GlobalReplay {
    /// Time of the critical path on each rank (by [`RankId`]) between `from_ns` and `to_ns`
    /// (replayed, global time): the path's tasks hold back-to-back stretches of it, the last
    /// ending at the last task's end, and a late start the stretch before the first. The job's
    /// step is measured over its steady steps, a window the whole path runs beyond (the
    /// warm-up step before it): its ranks' times per step are this window's.
    pub fn critical_path_ns_by_rank_between(
        &self,
        global: &GlobalGraph,
        from_ns: i64,
        to_ns: i64,
    ) -> Vec<i64> {
        let mut by_rank = vec![0i64; self.critical_path_ns_by_rank.len()];
        let within = |start: i64, end: i64| (end.min(to_ns) - start.max(from_ns)).max(0);
        // The shares run back from the path's end, which the last task's end may precede.
        let mut cursor = self.critical_path_end_ns;
        for p in self.critical_path.iter().rev() {
            let start = cursor - p.share_ns;
            by_rank[global.rank_of(p.task).index()] += within(start, cursor);
            cursor = start;
        }
        if let Some((rank, late_ns)) = self.critical_path_late_start
            && let Some(index) = global.ranks.iter().position(|r| r.rank == rank)
        {
            by_rank[index] += within(cursor - late_ns, cursor);
        }
        by_rank
    }
}

/// Replays the global graph; measures every rank's steps and the critical path across ranks.
pub fn replay_global(global: &GlobalGraph) -> Result<GlobalReplay, SimError> {
    let graph = &global.graph;
    let timeline = simulate(graph, &RecordedOrder, SimOptions::default())?;
    let by_step = tasks_by_step(graph, global.steps.len());
    let mut from_ns = i64::MAX;
    // The task that ends the last step to end, and when that step ends (after it, when the
    // step's marker outlasts its work).
    let mut last: Option<(TaskId, i64)> = None;
    let ranks = global
        .ranks
        .iter()
        .map(|part| {
            let steps = (part.first_step..part.first_step + part.step_count)
                .map(|s| {
                    let step = &global.steps[s as usize];
                    let tasks = &by_step[s as usize];
                    let (replayed_ns, step_last, start) =
                        replayed_span(graph, &timeline, step, tasks);
                    from_ns = from_ns.min(start);
                    if let Some(t) = step_last {
                        let end = (start + replayed_ns).max(timeline.end_ns[t.index()]);
                        let key = |(t, end): (TaskId, i64)| (end, std::cmp::Reverse(t.0));
                        if last.is_none_or(|l| key((t, end)) > key(l)) {
                            last = Some((t, end));
                        }
                    }
                    RankStep {
                        number: step.number,
                        start_ns: start,
                        measured_ns: measured_span(graph, step, tasks),
                        replayed_ns,
                    }
                })
                .collect();
            RankReplay {
                rank: part.rank,
                steps,
            }
        })
        .collect();
    let mut replay = GlobalReplay {
        ranks,
        critical_path: Vec::new(),
        critical_path_end_ns: 0,
        critical_path_ns_by_rank: vec![0; global.ranks.len()],
        critical_path_rank_crossings: 0,
        critical_path_late_start: None,
        critical_path_by_lane: Vec::new(),
        critical_path_segments: Vec::new(),
        timeline,
    };
    if let Some((last, end_ns)) = last {
        critical_path(global, &mut replay, last, end_ns, from_ns);
    }
    Ok(replay)
}

/// Walks back from `end_ns` (`last`'s end, or its step's later end: the host working on after
/// it) along what released each task's end and begin, across ranks; each stretch of time goes
/// to the task it released.
fn critical_path(
    global: &GlobalGraph,
    replay: &mut GlobalReplay,
    last: TaskId,
    end_ns: i64,
    from_ns: i64,
) {
    let graph = &global.graph;
    let timeline = &replay.timeline;
    let mut path: Vec<PathTask> = Vec::new();
    let mut task = last;
    let mut at_end = true;
    let mut time = end_ns.max(timeline.end_ns[last.index()]);
    replay.critical_path_end_ns = time;
    let mut guard = 0usize;
    while time > from_ns && guard <= 4 * graph.task_count() + 4 {
        guard += 1;
        let t = task.index();
        let work_start = timeline.end_ns[t] - graph.dur_ns[t];
        // The node that released this one, and when.
        let next: Option<(TaskId, bool, i64)> = if at_end {
            match timeline.completion[t] {
                Some(Binding::Edge(pred, kind)) if work_start > timeline.begin_ns[t] => {
                    let released = if kind.from_source_begin() {
                        timeline.begin_ns[pred.index()]
                    } else {
                        timeline.end_ns[pred.index()]
                    };
                    Some((pred, !kind.from_source_begin(), released))
                }
                _ => Some((task, false, timeline.begin_ns[t])),
            }
        } else {
            match timeline.binding[t] {
                Binding::Boundary | Binding::PeerWait => None,
                Binding::Lane(pred) => Some((pred, true, timeline.end_ns[pred.index()])),
                Binding::Edge(pred, kind) => {
                    if kind.from_source_begin() {
                        Some((pred, false, timeline.begin_ns[pred.index()]))
                    } else {
                        Some((pred, true, timeline.end_ns[pred.index()]))
                    }
                }
            }
        };
        // A release task is no work of any rank: the path goes on from the instance that
        // began last, which released it at the same instant.
        let next = next.map(|n| match timeline.binding[n.0.index()] {
            Binding::Edge(arrived, EdgeKind::CollectiveArrival) if global.is_release(n.0) => {
                (arrived, false, timeline.begin_ns[arrived.index()])
            }
            _ => n,
        });
        let released = next.map_or(timeline.begin_ns[t], |n| n.2).max(from_ns);
        let share = (time - released).max(0);
        if next.is_none() && released > from_ns {
            let rank = global.rank_of(task);
            replay.critical_path_ns_by_rank[rank.index()] += released - from_ns;
            replay.critical_path_late_start =
                Some((global.ranks[rank.index()].rank, released - from_ns));
        }
        match path.last_mut() {
            Some(last) if last.task == task => last.share_ns += share,
            _ => {
                let rank = global.rank_of(task);
                path.push(PathTask {
                    rank: global.ranks[rank.index()].rank,
                    task,
                    name: global.name(task).to_string(),
                    kind: graph.kind[t],
                    begin_ns: timeline.begin_ns[t],
                    end_ns: timeline.end_ns[t],
                    share_ns: share,
                });
            }
        }
        replay.critical_path_ns_by_rank[global.rank_of(task).index()] += share;
        let Some((pred, pred_at_end, pred_time)) = next else {
            break;
        };
        task = pred;
        at_end = pred_at_end;
        time = pred_time.min(time);
    }
    path.reverse();
    replay.critical_path_rank_crossings =
        path.windows(2).filter(|w| w[0].rank != w[1].rank).count() as u32;
    summarize(global, replay, &path);
    replay.critical_path = path;
}

/// Path time by lane and by rank segment.
fn summarize(global: &GlobalGraph, replay: &mut GlobalReplay, path: &[PathTask]) {
    let graph = &global.graph;
    let late = replay.critical_path_late_start.map_or(0, |(_, ns)| ns);
    let mut by_lane: std::collections::BTreeMap<u32, i64> = std::collections::BTreeMap::new();
    if let Some(first) = path.first() {
        *by_lane.entry(graph.lane[first.task.index()]).or_default() += late;
    }
    for p in path {
        *by_lane.entry(graph.lane[p.task.index()]).or_default() += p.share_ns;
    }
    replay.critical_path_by_lane = by_lane
        .into_iter()
        .map(|(lane, ns)| LaneTime {
            rank: global.ranks[global
                .rank_of(TaskId(graph.lanes[lane as usize].first_task))
                .index()]
            .rank,
            lane,
            ns,
        })
        .collect();
    let mut segments: Vec<PathSegment> = Vec::new();
    for (i, p) in path.iter().enumerate() {
        match segments.last_mut() {
            Some(s) if s.rank == p.rank => {
                s.tasks += 1;
                s.ns += p.share_ns;
            }
            _ => segments.push(PathSegment {
                rank: p.rank,
                first: i as u32,
                tasks: 1,
                ns: p.share_ns + if i == 0 { late } else { 0 },
                entered_at: (i > 0).then(|| p.name.clone()),
            }),
        }
    }
    replay.critical_path_segments = segments;
}
