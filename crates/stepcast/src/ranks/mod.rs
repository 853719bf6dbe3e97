//! Many ranks as one (dPRO §4): every rank's trace of the same steps, replayed together.
//!
//! [`match_collectives`] pairs each collective across ranks by its identity (process group and
//! sequence number where recorded, else step and order within the step);
//! [`align_clocks`] estimates each rank's clock offset from those collectives (a QP solved
//! with clarabel); [`global_graph`] merges the ranks' graphs into one, where a collective's
//! transfer starts when every rank's instance has started (instead of the one-rank
//! `PeerArrival` input); [`replay_global`] replays it and measures every rank's steps and the
//! critical path across ranks; [`split_wait_transfer`] splits every NCCL kernel into waiting
//! for peers and transfer; [`stragglers`] names the rank that delayed each collective and what
//! it was doing.

mod clocks;
mod global;
mod host_groups;
mod matching;
mod rank_graph;
mod reduced;
mod split;
mod stragglers;
mod thread_ops;
mod timed_transfers;
mod transfer_clocks;
mod transfer_peers;

use stepcast_trace::{LaneId, LaneKind, Trace};

use crate::Window;
use crate::simulate::SimError;

pub use clocks::{
    AlignError, AlignOptions, AlignmentStatus, CONSTRAINT_TOLERANCE_NS, ClockAlignment,
    ConstraintKind, OrderingConstraint, RankResidual, align_clocks, align_clocks_with,
    is_generic_host, is_point_to_point, is_rooted, ordering_constraints,
};
pub use global::{
    GlobalCollective, GlobalGraph, GlobalReplay, LaneTime, PathSegment, PathTask, RankPart,
    RankReplay, RankStep, TransferModel, global_graph, replay_global,
};
pub(crate) use global::{RankView, merge};
pub use host_groups::HostGroups;
pub use matching::{
    CollectiveInstance, CollectiveMatching, GroupMatching, GroupSource, HostTransfer,
    MatchedCollective, UNPAIRED_TRANSFERS, UnmatchedCollective, UnmatchedReason, collective_op,
    match_collectives, rank_collectives,
};
pub use rank_graph::{HostOp, RankGraph};
pub use reduced::{MAGIC, ReducedError, ReducedRank, SCHEMA_VERSION, is_reduced};
pub use split::{
    CollectiveSplit, InstanceSplit, RankCommTotals, WaitTransfer, split_wait_transfer,
};
pub use stragglers::{Doing, Straggler, StragglerCause, stragglers};

/// A rank's position in the list of ranks given to this module (not its rank number). `u32`:
/// jobs have at most a few hundred thousand ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RankId(pub u32);

impl RankId {
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One rank's trace and its graph. The first rank given is the clock reference.
#[derive(Clone, Copy, Debug)]
pub struct RankTrace<'a> {
    /// The rank number (`distributedInfo.rank`, or the position in the input).
    pub rank: i64,
    pub trace: &'a Trace,
    pub window: &'a Window,
}

/// The rank number a trace records, if any.
pub fn recorded_rank(trace: &Trace) -> Option<i64> {
    trace.distributed.as_ref().and_then(|d| d.rank)
}

/// `thread N` or `stream N`, as the trace names the lane.
pub(crate) fn lane_label(trace: &Trace, lane: LaneId) -> String {
    let l = &trace.lanes[lane.index()];
    let id = l.file_tid.clone().unwrap_or_else(|| l.tid.to_string());
    match l.kind {
        LaneKind::CpuThread => format!("thread {id}"),
        LaneKind::DeviceStream if id.starts_with("stream") => id,
        LaneKind::DeviceStream => format!("stream {id}"),
    }
}

/// Everything the multi-rank replay finds.
#[derive(Clone, Debug)]
pub struct RanksReport {
    pub matching: CollectiveMatching,
    pub alignment: ClockAlignment,
    pub replay: GlobalReplay,
    /// Every matched NCCL kernel split into waiting for peers and transfer.
    pub wait_transfer: WaitTransfer,
    /// Per lane of the global graph (the lanes of [`GlobalReplay::critical_path_by_lane`]):
    /// `thread N` or `stream N`.
    pub lane_names: Vec<String>,
    pub stragglers: Vec<Straggler>,
}

/// Why the ranks could not be replayed together.
#[derive(Debug, thiserror::Error)]
pub enum RanksError {
    #[error("no traces to replay")]
    NoRanks,
    #[error("two traces claim rank {0}; give one trace per rank")]
    DuplicateRank(i64),
    #[error(transparent)]
    Align(#[from] AlignError),
    #[error("the global graph cannot be replayed: {0}")]
    Sim(#[from] SimError),
}

/// Matches, aligns, merges and replays `ranks` (sorted by rank number; the first is the clock
/// reference). Copies each rank's graph into a [`RankGraph`]; a caller holding many ranks
/// builds those itself as it reads them and calls [`replay_rank_graphs`].
pub fn replay_ranks(ranks: &[RankTrace<'_>]) -> Result<RanksReport, RanksError> {
    let graphs: Vec<RankGraph> = ranks.iter().map(RankGraph::from_trace).collect();
    replay_rank_graphs(&graphs)
}

/// [`replay_ranks`] on ranks already reduced to their graphs.
pub fn replay_rank_graphs(ranks: &[RankGraph]) -> Result<RanksReport, RanksError> {
    if ranks.is_empty() {
        return Err(RanksError::NoRanks);
    }
    for pair in ranks.windows(2) {
        if pair[0].rank == pair[1].rank {
            return Err(RanksError::DuplicateRank(pair[0].rank));
        }
    }
    let matching = match_collectives(ranks);
    let alignment = align_clocks(ranks, &matching)?;
    let global = global_graph(ranks, &matching, &alignment, TransferModel::default());
    let replay = replay_global(&global)?;
    let wait_transfer = split_wait_transfer(ranks, &matching, &global);
    let stragglers = stragglers(ranks, &matching, &global, &wait_transfer);
    Ok(RanksReport {
        matching,
        alignment,
        replay,
        wait_transfer,
        stragglers,
        lane_names: global.lane_names,
    })
}
