//! One rank, kept compact: what the multi-rank replay needs of a rank's trace, so that the
//! trace itself can be dropped as soon as the rank is read (a job's memory is then bounded
//! by the ranks being read at once plus these, not by the sum of its trace files).

use std::collections::BTreeMap;

use stepcast_trace::{EventKind, NameId, Trace};

use super::matching::{CollectiveInstance, collective_stream_labels, collectives_of};
use super::thread_ops::ThreadOps;
use super::{RankTrace, lane_label};
use crate::Window;
use crate::analyze::mapping::{Phase, map};
use crate::comm::{calibrate, recorded_collectives};
use crate::graph::{EdgeKind, TaskId};

/// No name, in [`RankGraph`]'s per-task name columns.
const NO_NAME: u32 = u32::MAX;

fn name_or_none(name: Option<NameId>) -> u32 {
    name.map_or(NO_NAME, |n| n.0)
}

fn some_name(id: u32) -> Option<NameId> {
    (id != NO_NAME).then_some(NameId(id))
}

/// Group name → members, from what `trace` declares and records (see
/// [`RankGraph::group_members`]).
fn group_members(trace: &Trace) -> BTreeMap<String, Vec<i64>> {
    let mut members: BTreeMap<String, Vec<i64>> = trace
        .distributed
        .iter()
        .flat_map(|d| &d.process_groups)
        .map(|g| (g.name.clone(), g.ranks.clone()))
        .collect();
    for (_, args) in &trace.comm_args {
        if let (Some(group), Some(ranks)) = (&args.process_group, &args.group_ranks) {
            members.insert(group.clone(), ranks.clone());
        }
    }
    members
}

/// A host op (`CpuOp` or user annotation, step markers left out) of a host thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HostOp {
    pub name: NameId,
    pub start_ns: i64,
    pub dur_ns: i64,
}

impl HostOp {
    pub fn end_ns(&self) -> i64 {
        self.start_ns + self.dur_ns
    }
}

/// One rank of a job: its graph and the few facts of its trace that matching, alignment,
/// the wait/transfer split and the straggler attribution read.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RankGraph {
    /// The rank number (`distributedInfo.rank`, or the position in the input).
    pub rank: i64,
    /// `Trace::origin_ns`: graph times are relative to it.
    pub origin_ns: i64,
    /// The host the rank ran on, as its trace records it: ranks of one host share a clock.
    pub host_name: Option<String>,
    pub window: Window,
    /// The trace's names by id (task, op and layer names are ids into it), without the
    /// interner's index: a thousand ranks kept every name twice.
    pub names: Box<[Box<str>]>,
    /// Per graph lane: `thread N` or `stream N`.
    pub lane_labels: Vec<String>,
    /// Per task, from the analyze mapping: its phase, layer and op name (the last two as
    /// name ids, `NO_NAME` for none: half the bytes of an `Option<NameId>`, and a job of a
    /// thousand ranks holds millions of tasks).
    pub phase: Vec<Phase>,
    layer: Vec<u32>,
    op: Vec<u32>,
    /// The comm model's calibration from this rank alone: its fastest NCCL kernel.
    pub calibrated_floor_ns: Option<i64>,
    /// Per graph lane: the host ops of its thread by start, kept only for the threads that
    /// launch a collective, the only ones a straggler's cause is looked for on.
    host_ops: Vec<ThreadOps>,
    /// Per graph lane that runs a collective (empty for the others), per task of the lane:
    /// the latest recorded end of the lane's tasks up to it.
    lane_max_end_ns: Vec<Vec<i64>>,
    /// The rank's collectives, groups without metadata named by their recorded stream, and by
    /// the order of first use (see [`super::match_collectives`]).
    pub(crate) collectives_by_stream: Vec<CollectiveInstance>,
    pub(crate) collectives_by_first_use: Vec<CollectiveInstance>,
    /// The labels of the streams that run collectives, sorted.
    pub(crate) collective_streams: Vec<String>,
    /// The members (global rank numbers) of each process group this rank's trace names:
    /// the groups it declared (`distributedInfo.pg_config`), and those its collectives' records
    /// carry (`Process Group Ranks`), which win where both name one group.
    pub(crate) group_members: BTreeMap<String, Vec<i64>>,
    /// The groups this rank declared, in the order its trace lists them (`pg_config`: the
    /// order the program created them in).
    pub(crate) declared_group_order: Vec<String>,
    /// Per graph lane, the id the trace gives its thread (`None` for a device stream): gloo
    /// starts a process group's worker threads when the group is created, so on one host
    /// their ids follow the groups' order (see [`super::host_groups`]).
    pub(crate) thread_ids: Vec<Option<i64>>,
}

impl RankGraph {
    /// Takes what the multi-rank replay needs from `trace` (whose graph `window` is).
    pub fn new(rank: i64, trace: &Trace, window: Window) -> RankGraph {
        let mapping = map(trace, &window);
        let graph = &window.graph;
        let lane_labels = graph
            .lanes
            .iter()
            .map(|l| lane_label(trace, l.trace_lane))
            .collect();
        let op = (0..graph.task_count())
            .map(|t| name_or_none(mapping.op_name(trace, TaskId(t as u32))))
            .collect();
        let layer = mapping.layer.iter().copied().map(name_or_none).collect();
        let collectives_by_stream = collectives_of(trace, &window, &mapping, true);
        let collectives_by_first_use = collectives_of(trace, &window, &mapping, false);
        // The lanes that run a collective (a device stream, or gloo's host threads), and the
        // threads that launch or post one.
        let mut collective_lane = vec![false; graph.lanes.len()];
        let mut launching_thread = vec![false; graph.lanes.len()];
        for c in &collectives_by_stream {
            let t = c.task.index();
            collective_lane[graph.lane[t] as usize] = true;
            // A thread runs its own transfers (gloo's send and receive): it posts them too.
            launching_thread[graph.lane[t] as usize] = true;
            for e in graph.preds(c.task) {
                if matches!(
                    graph.pred_kind[e],
                    EdgeKind::Launch | EdgeKind::CollectivePost
                ) {
                    launching_thread[graph.lane[graph.pred[e].index()] as usize] = true;
                }
            }
        }
        let host_ops: Vec<ThreadOps> = graph
            .lanes
            .iter()
            .enumerate()
            .map(|(index, lane)| {
                if lane.kind != stepcast_trace::LaneKind::CpuThread || !launching_thread[index] {
                    return ThreadOps::EMPTY;
                }
                ThreadOps::new(
                    trace
                        .lane_events(lane.trace_lane)
                        .iter()
                        .filter(|e| matches!(e.kind, EventKind::CpuOp | EventKind::UserAnnotation))
                        .filter(|e| !trace.name(e.name).starts_with("ProfilerStep#"))
                        .map(|e| HostOp {
                            name: e.name,
                            start_ns: e.start_ns,
                            dur_ns: e.dur_ns,
                        }),
                )
            })
            .collect();
        let lane_max_end_ns = graph
            .lanes
            .iter()
            .enumerate()
            .map(|(index, lane)| {
                if !collective_lane[index] {
                    return Vec::new();
                }
                let tasks = lane.first_task as usize..(lane.first_task + lane.task_count) as usize;
                graph.rec_end_ns[tasks]
                    .iter()
                    .scan(i64::MIN, |max, &end| {
                        *max = (*max).max(end);
                        Some(*max)
                    })
                    .collect()
            })
            .collect();
        let calibrated_floor_ns =
            calibrate(&recorded_collectives(trace, &window, &mapping)).floor_ns;
        let collective_streams = collective_stream_labels(trace, &window);
        let thread_ids = graph
            .lanes
            .iter()
            .map(|l| {
                let lane = &trace.lanes[l.trace_lane.index()];
                (lane.kind == stepcast_trace::LaneKind::CpuThread).then_some(lane.tid)
            })
            .collect();
        let declared_group_order = trace
            .distributed
            .iter()
            .flat_map(|d| &d.process_groups)
            .map(|g| g.name.clone())
            .collect();
        RankGraph {
            group_members: group_members(trace),
            declared_group_order,
            thread_ids,
            rank,
            origin_ns: trace.origin_ns,
            host_name: trace.distributed.as_ref().and_then(|d| d.host_name.clone()),
            lane_labels,
            phase: mapping.phase,
            layer,
            op,
            calibrated_floor_ns,
            host_ops,
            lane_max_end_ns,
            collectives_by_stream,
            collectives_by_first_use,
            collective_streams,
            names: trace.names.names().into(),
            window,
        }
    }

    /// The members (global rank numbers) of each process group this rank's trace declares or
    /// records, by group name.
    pub fn group_members(&self) -> &BTreeMap<String, Vec<i64>> {
        &self.group_members
    }

    /// A rank given as its trace and graph (the graph is copied).
    pub fn from_trace(rank: &RankTrace<'_>) -> RankGraph {
        RankGraph::new(rank.rank, rank.trace, rank.window.clone())
    }

    pub fn name(&self, id: NameId) -> &str {
        &self.names[id.index()]
    }

    /// The layer of `task`, from the analyze mapping.
    pub fn layer(&self, task: TaskId) -> Option<NameId> {
        some_name(self.layer[task.index()])
    }

    /// The op of `task`, from the analyze mapping.
    pub fn op(&self, task: TaskId) -> Option<NameId> {
        some_name(self.op[task.index()])
    }

    /// The host ops of graph lane `lane` that overlap `from_ns..to_ns` or touch it (those
    /// starting by `to_ns`, from the first whose running end maximum reaches `from_ns`), by
    /// start; none on a thread that launches no collective.
    pub fn host_ops_near(
        &self,
        lane: u32,
        from_ns: i64,
        to_ns: i64,
    ) -> impl Iterator<Item = HostOp> + '_ {
        self.thread_ops(lane).near(from_ns, to_ns)
    }

    /// The host ops of graph lane `lane` starting within `from_ns..=to_ns`, by start.
    pub fn host_ops_starting(
        &self,
        lane: u32,
        from_ns: i64,
        to_ns: i64,
    ) -> impl Iterator<Item = HostOp> + '_ {
        self.thread_ops(lane).starting(from_ns, to_ns)
    }

    fn thread_ops(&self, lane: u32) -> &ThreadOps {
        static NONE: ThreadOps = ThreadOps::EMPTY;
        self.host_ops.get(lane as usize).unwrap_or(&NONE)
    }

    /// The tasks before `task` on its lane that may overlap `from_ns..`: from the first whose
    /// lane's running end maximum reaches `from_ns` (every earlier one ended before it). On a
    /// lane that runs no collective (whose maxima are not kept), every task before it.
    pub fn lane_tasks_ending_after(&self, task: TaskId, from_ns: i64) -> std::ops::Range<u32> {
        let graph = &self.window.graph;
        let lane_index = graph.lane[task.index()] as usize;
        let lane = &graph.lanes[lane_index];
        let max_end = self
            .lane_max_end_ns
            .get(lane_index)
            .map_or(&[][..], Vec::as_slice);
        let before = max_end
            .get(..(task.0 - lane.first_task) as usize)
            .unwrap_or(&[]);
        let first = if before.is_empty() {
            0
        } else {
            before.partition_point(|&end| end < from_ns) as u32
        };
        lane.first_task + first..task.0
    }
}
