//! Collectives matched across ranks: the k-th collective of a process group on one rank is the
//! same collective as the k-th of that group on every other rank (NCCL requires every member to
//! issue a group's collectives in the same order).

use std::collections::BTreeMap;

use stepcast_trace::LaneKind;

use super::{RankId, RankTrace};
use crate::graph::{TaskId, TaskKind};

/// Where a rank's collectives got their process group from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupSource {
    /// No process-group metadata: each device stream that runs collectives stands for one group
    /// (PyTorch gives every NCCL communicator its own stream), numbered by first use.
    StreamOrder,
}

impl GroupSource {
    pub fn as_str(self) -> &'static str {
        match self {
            GroupSource::StreamOrder => "stream_order",
        }
    }
}

/// One collective kernel of one rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectiveInstance {
    pub task: TaskId,
    /// The collective's type from the kernel name (`AllReduce`, `SendRecv`, ...).
    pub op: String,
    pub group: String,
    /// Position within its group on this rank (0-based).
    pub seq: u32,
}

/// A collective found on every rank, with its instance on each (indexed by [`RankId`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatchedCollective {
    pub group: String,
    pub seq: u32,
    pub op: String,
    /// The instance's task in its rank's own graph, one per rank.
    pub instances: Vec<TaskId>,
}

/// Why a rank's collective was left unmatched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnmatchedReason {
    /// Some ranks have fewer collectives in this group (the profiler window cut it off).
    MissingOnSomeRanks,
    /// The ranks' k-th collectives of this group are of different types.
    TypeDiffers,
}

impl UnmatchedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            UnmatchedReason::MissingOnSomeRanks => "missing on some ranks",
            UnmatchedReason::TypeDiffers => "collective type differs across ranks",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnmatchedCollective {
    pub rank: RankId,
    pub instance: CollectiveInstance,
    pub reason: UnmatchedReason,
}

/// Every rank's collectives, matched across ranks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectiveMatching {
    pub source: GroupSource,
    /// In (group, seq) order.
    pub matched: Vec<MatchedCollective>,
    pub unmatched: Vec<UnmatchedCollective>,
}

/// The collective's type from an NCCL/RCCL kernel name: `ncclKernel_AllReduce_RING_LL_Sum_float`
/// and `ncclDevKernel_AllReduce_Sum_f32_RING_LL` both give `AllReduce`.
pub fn collective_op(kernel_name: &str) -> &str {
    let name = kernel_name.split('(').next().unwrap_or(kernel_name);
    if let Some(rest) = name.strip_prefix("nccl:") {
        return rest;
    }
    let mut parts = name.split('_');
    let first = parts.next().unwrap_or(name);
    if first.to_ascii_lowercase().contains("kernel") {
        parts.next().unwrap_or(first)
    } else {
        first
    }
}

/// The collectives of one rank, by group, in recorded order.
pub fn rank_collectives(rank: &RankTrace<'_>) -> Vec<CollectiveInstance> {
    let graph = &rank.window.graph;
    // Streams that run collectives, numbered by their first collective.
    let mut streams: Vec<(i64, u32, TaskId)> = Vec::new();
    for (lane_index, lane) in graph.lanes.iter().enumerate() {
        if lane.kind != LaneKind::DeviceStream {
            continue;
        }
        let first = (lane.first_task..lane.first_task + lane.task_count)
            .find(|&t| graph.kind[t as usize] == TaskKind::Collective);
        if let Some(first) = first {
            streams.push((
                graph.rec_start_ns[first as usize],
                lane_index as u32,
                TaskId(first),
            ));
        }
    }
    streams.sort_unstable();
    let mut instances = Vec::new();
    for (group_index, &(_, lane_index, _)) in streams.iter().enumerate() {
        let lane = &graph.lanes[lane_index as usize];
        let mut seq = 0;
        for t in lane.first_task..lane.first_task + lane.task_count {
            if graph.kind[t as usize] != TaskKind::Collective {
                continue;
            }
            let name = rank.trace.name(graph.name[t as usize]);
            instances.push(CollectiveInstance {
                task: TaskId(t),
                op: collective_op(name).to_string(),
                group: format!("stream#{group_index}"),
                seq,
            });
            seq += 1;
        }
    }
    instances
}

/// Matches the k-th collective of each group across all ranks. A collective is matched when
/// every rank has its k-th instance in the group and all are of the same type.
pub fn match_collectives(ranks: &[RankTrace<'_>]) -> CollectiveMatching {
    // (group, seq) → per rank, its instance.
    let mut table: BTreeMap<(String, u32), Vec<Option<CollectiveInstance>>> = BTreeMap::new();
    for (r, rank) in ranks.iter().enumerate() {
        for instance in rank_collectives(rank) {
            let row = table
                .entry((instance.group.clone(), instance.seq))
                .or_insert_with(|| vec![None; ranks.len()]);
            row[r] = Some(instance);
        }
    }
    let mut matched = Vec::new();
    let mut unmatched = Vec::new();
    for ((group, seq), row) in table {
        let complete = row.iter().all(Option::is_some);
        let first_op = row.iter().flatten().next().map(|i| i.op.clone());
        let same_type = row
            .iter()
            .flatten()
            .all(|i| Some(&i.op) == first_op.as_ref());
        if complete && same_type {
            matched.push(MatchedCollective {
                group,
                seq,
                op: first_op.unwrap_or_default(),
                instances: row.iter().flatten().map(|i| i.task).collect(),
            });
            continue;
        }
        let reason = if complete {
            UnmatchedReason::TypeDiffers
        } else {
            UnmatchedReason::MissingOnSomeRanks
        };
        for (r, instance) in row.into_iter().enumerate() {
            if let Some(instance) = instance {
                unmatched.push(UnmatchedCollective {
                    rank: RankId(r as u32),
                    instance,
                    reason,
                });
            }
        }
    }
    CollectiveMatching {
        source: GroupSource::StreamOrder,
        matched,
        unmatched,
    }
}

#[cfg(test)]
mod tests {
    use super::collective_op;

    #[test]
    fn collective_type_from_kernel_names() {
        for (name, op) in [
            (
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                "AllReduce",
            ),
            ("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)", "AllGather"),
            (
                "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)",
                "SendRecv",
            ),
            ("nccl:all_reduce", "all_reduce"),
        ] {
            assert_eq!(collective_op(name), op, "{name}");
        }
    }
}
