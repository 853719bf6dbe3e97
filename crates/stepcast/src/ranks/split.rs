//! Every recorded NCCL kernel split into waiting for its peers and transferring.
//!
//! A rank's collective kernel starts when its stream reaches it and ends when the collective
//! ends; it cannot move data before every peer has arrived (dPRO §4.2: a receive's true start
//! is clipped by its sends' starts). On aligned clocks, an instance's wait is from its own
//! start to the last member's start (clamped to the recorded duration), its transfer the rest:
//! `wait + transfer == recorded` for every instance. The last member to arrive waits for no one.

use super::{CollectiveMatching, GlobalGraph, RankGraph, RankId};

/// One rank's instance of a matched collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstanceSplit {
    pub rank: RankId,
    /// Aligned start (global time of the global graph).
    pub start_ns: i64,
    pub recorded_ns: i64,
    /// From its start until the last member started.
    pub wait_ns: i64,
    /// The rest: `recorded_ns - wait_ns`.
    pub transfer_ns: i64,
}

/// A matched collective, split on every rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectiveSplit {
    /// Index into the matching's (and the global graph's) collectives.
    pub collective: u32,
    /// The member that started last (the earliest position among ties).
    pub last_rank: RankId,
    pub last_start_ns: i64,
    /// One per member, in rank order.
    pub instances: Vec<InstanceSplit>,
}

/// One rank's NCCL kernels, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankCommTotals {
    /// Matched collective kernels (split).
    pub kernels: u32,
    pub recorded_ns: i64,
    pub wait_ns: i64,
    pub transfer_ns: i64,
    /// The shortest transfer among them.
    pub min_transfer_ns: Option<i64>,
    /// Collective kernels no other rank matches: their wait cannot be told apart.
    pub unsplit_kernels: u32,
    pub unsplit_ns: i64,
    /// The comm cost model's calibration of this rank alone: its fastest recorded NCCL kernel,
    /// the lower envelope's fixed cost (waits included). A sanity bound: no transfer found
    /// here can exceed it by construction, and the gap shows how much of it was waiting.
    pub calibrated_floor_ns: Option<i64>,
}

/// The wait/transfer split of every recorded NCCL kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WaitTransfer {
    pub collectives: Vec<CollectiveSplit>,
    /// By [`RankId`].
    pub totals: Vec<RankCommTotals>,
}

/// Splits every matched collective of `global` (on aligned clocks).
pub fn split_wait_transfer(
    ranks: &[RankGraph],
    matching: &CollectiveMatching,
    global: &GlobalGraph,
) -> WaitTransfer {
    let graph = &global.graph;
    let mut totals = vec![RankCommTotals::default(); ranks.len()];
    let collectives: Vec<CollectiveSplit> = global
        .collectives
        .iter()
        .enumerate()
        .map(|(k, c)| {
            // A transfer's receive waits for its send; the send for no one.
            let (last, last_start_ns) = c
                .ranks
                .iter()
                .zip(&c.tasks)
                .filter(|&(&r, _)| c.sender.is_none_or(|s| s == r))
                .map(|(&r, t)| (r, graph.rec_start_ns[t.index()]))
                .max_by_key(|&(r, s)| (s, std::cmp::Reverse(r)))
                .unwrap_or((RankId(0), 0));
            let instances = c
                .ranks
                .iter()
                .zip(&c.tasks)
                .map(|(&rank, t)| {
                    let start_ns = graph.rec_start_ns[t.index()];
                    let recorded_ns = graph.rec_end_ns[t.index()] - start_ns;
                    let wait_ns = if c.sender == Some(rank) {
                        0
                    } else {
                        (last_start_ns - start_ns).clamp(0, recorded_ns.max(0))
                    };
                    InstanceSplit {
                        rank,
                        start_ns,
                        recorded_ns,
                        wait_ns,
                        transfer_ns: recorded_ns - wait_ns,
                    }
                })
                .collect::<Vec<_>>();
            for i in &instances {
                let total = &mut totals[i.rank.index()];
                total.kernels += 1;
                total.recorded_ns += i.recorded_ns;
                total.wait_ns += i.wait_ns;
                total.transfer_ns += i.transfer_ns;
                total.min_transfer_ns = Some(
                    total
                        .min_transfer_ns
                        .map_or(i.transfer_ns, |m| m.min(i.transfer_ns)),
                );
            }
            CollectiveSplit {
                collective: k as u32,
                last_rank: last,
                last_start_ns,
                instances,
            }
        })
        .collect();
    for u in &matching.unmatched {
        let g = &ranks[u.rank.index()].window.graph;
        let t = u.instance.task.index();
        let total = &mut totals[u.rank.index()];
        total.unsplit_kernels += 1;
        total.unsplit_ns += g.rec_end_ns[t] - g.rec_start_ns[t];
    }
    for (total, rank) in totals.iter_mut().zip(ranks) {
        total.calibrated_floor_ns = rank.calibrated_floor_ns;
    }
    WaitTransfer {
        collectives,
        totals,
    }
}
