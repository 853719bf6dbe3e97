//! One rank, kept compact: what the multi-rank replay needs of a rank's trace, so that the
//! trace itself can be dropped as soon as the rank is read (a job's memory is then bounded
//! by the ranks being read at once plus these, not by the sum of its trace files).

use stepcast_trace::{EventKind, NameId, Trace};

use super::matching::{CollectiveInstance, collective_stream_labels, collectives_of};
use super::{RankTrace, lane_label};
use crate::Window;
use crate::analyze::mapping::{Phase, map};
use crate::comm::{calibrate, recorded_collectives};
use crate::graph::TaskId;

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
    pub window: Window,
    /// The trace's names by id (task, op and layer names are ids into it), without the
    /// interner's index: a thousand ranks kept every name twice.
    pub names: Box<[Box<str>]>,
    /// Per graph lane: `thread N` or `stream N`.
    pub lane_labels: Vec<String>,
    /// Per task, from the analyze mapping: its phase, layer and op name.
    pub phase: Vec<Phase>,
    pub layer: Vec<Option<NameId>>,
    pub op: Vec<Option<NameId>>,
    /// The comm model's calibration from this rank alone: its fastest NCCL kernel.
    pub calibrated_floor_ns: Option<i64>,
    /// Per graph lane: the host ops of its thread by start (empty for device streams), and
    /// the running maximum of their ends (to find what overlaps a time by binary search).
    host_ops: Vec<Vec<HostOp>>,
    host_ops_max_end_ns: Vec<Vec<i64>>,
    /// Per task: the latest recorded end of its lane's tasks up to it.
    lane_max_end_ns: Vec<i64>,
    /// The rank's collectives, groups without metadata named by their recorded stream, and by
    /// the order of first use (see [`super::match_collectives`]).
    pub(crate) collectives_by_stream: Vec<CollectiveInstance>,
    pub(crate) collectives_by_first_use: Vec<CollectiveInstance>,
    /// The labels of the streams that run collectives, sorted.
    pub(crate) collective_streams: Vec<String>,
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
            .map(|t| mapping.op_name(trace, TaskId(t as u32)))
            .collect();
        let host_ops: Vec<Vec<HostOp>> = graph
            .lanes
            .iter()
            .map(|lane| {
                if lane.kind != stepcast_trace::LaneKind::CpuThread {
                    return Vec::new();
                }
                trace
                    .lane_events(lane.trace_lane)
                    .iter()
                    .filter(|e| matches!(e.kind, EventKind::CpuOp | EventKind::UserAnnotation))
                    .filter(|e| !trace.name(e.name).starts_with("ProfilerStep#"))
                    .map(|e| HostOp {
                        name: e.name,
                        start_ns: e.start_ns,
                        dur_ns: e.dur_ns,
                    })
                    .collect()
            })
            .collect();
        let host_ops_max_end_ns = host_ops
            .iter()
            .map(|ops| {
                ops.iter()
                    .scan(i64::MIN, |max, op| {
                        *max = (*max).max(op.end_ns());
                        Some(*max)
                    })
                    .collect()
            })
            .collect();
        let mut lane_max_end_ns = graph.rec_end_ns.clone();
        for lane in &graph.lanes {
            let tasks = lane.first_task as usize..(lane.first_task + lane.task_count) as usize;
            for t in tasks.skip(1) {
                lane_max_end_ns[t] = lane_max_end_ns[t].max(lane_max_end_ns[t - 1]);
            }
        }
        let calibrated_floor_ns =
            calibrate(&recorded_collectives(trace, &window, &mapping)).floor_ns;
        let collectives_by_stream = collectives_of(trace, &window, &mapping, true);
        let collectives_by_first_use = collectives_of(trace, &window, &mapping, false);
        let collective_streams = collective_stream_labels(trace, &window);
        RankGraph {
            rank,
            origin_ns: trace.origin_ns,
            lane_labels,
            phase: mapping.phase,
            layer: mapping.layer,
            op,
            calibrated_floor_ns,
            host_ops,
            host_ops_max_end_ns,
            lane_max_end_ns,
            collectives_by_stream,
            collectives_by_first_use,
            collective_streams,
            names: trace.names.names().into(),
            window,
        }
    }

    /// A rank given as its trace and graph (the graph is copied).
    pub fn from_trace(rank: &RankTrace<'_>) -> RankGraph {
        RankGraph::new(rank.rank, rank.trace, rank.window.clone())
    }

    pub fn name(&self, id: NameId) -> &str {
        &self.names[id.index()]
    }

    /// The host ops of graph lane `lane` (a host thread), by start.
    pub fn host_ops(&self, lane: u32) -> &[HostOp] {
        self.host_ops.get(lane as usize).map_or(&[], Vec::as_slice)
    }

    /// The host ops of graph lane `lane` that overlap `from_ns..to_ns` or touch it, found by
    /// binary search: those starting before `to_ns`, from the first whose running end maximum
    /// reaches `from_ns` (every earlier one ended before it).
    pub fn host_ops_near(&self, lane: u32, from_ns: i64, to_ns: i64) -> &[HostOp] {
        let ops = self.host_ops(lane);
        let Some(max_end) = self.host_ops_max_end_ns.get(lane as usize) else {
            return &[];
        };
        let first = max_end.partition_point(|&end| end < from_ns);
        let last = ops.partition_point(|op| op.start_ns <= to_ns);
        ops.get(first..last.max(first)).unwrap_or(&[])
    }

    /// The host ops of graph lane `lane` starting within `from_ns..=to_ns`.
    pub fn host_ops_starting(&self, lane: u32, from_ns: i64, to_ns: i64) -> &[HostOp] {
        let ops = self.host_ops(lane);
        let first = ops.partition_point(|op| op.start_ns < from_ns);
        let last = ops.partition_point(|op| op.start_ns <= to_ns);
        ops.get(first..last.max(first)).unwrap_or(&[])
    }

    /// The tasks before `task` on its lane that may overlap `from_ns..`: from the first whose
    /// lane's running end maximum reaches `from_ns` (every earlier one ended before it).
    pub fn lane_tasks_ending_after(&self, task: TaskId, from_ns: i64) -> std::ops::Range<u32> {
        let graph = &self.window.graph;
        let lane = &graph.lanes[graph.lane[task.index()] as usize];
        let before = &self.lane_max_end_ns[lane.first_task as usize..task.index()];
        lane.first_task + before.partition_point(|&end| end < from_ns) as u32..task.0
    }
}
