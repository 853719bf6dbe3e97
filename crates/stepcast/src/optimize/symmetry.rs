//! Rank symmetry (dPRO §5): ranks of a data-parallel job run one program, so a plan's effect
//! on one of them is its effect on all. Ranks whose windows hold the same tasks (kind and
//! name, in the same order on every lane, step by step) form a group; the search replays one
//! representative per group, and every other member keeps its own recorded step as its
//! input: its prediction is its baseline moved by what the plan moved the representative's.
//! A 1,024-rank job of one program costs one rank's replays per move instead of 1,024.
//!
//! The representative is the group's slowest rank in the baseline (the lowest on a tie):
//! without a global replay the job's step is the slowest rank's, and under one shared change
//! the slowest member stays the slowest, so the job's prediction is that rank's own replay,
//! not a moved baseline. Where the ranks replay as one job (`whatif::job`), a plan's step is
//! that replay's, every rank transformed: the groups then only decide which rank's facts and
//! critical path propose the moves.

use std::collections::BTreeMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::whatif::Context;

/// Ranks that run one program, and the one of them that is replayed for all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankGroup {
    pub representative: usize,
    /// Every rank of the group, the representative included, ascending.
    pub members: Vec<usize>,
}

/// A fingerprint of a rank's program: for every task of its window in graph order (lane by
/// lane, each in recorded order), its lane, step, kind and name. Timings are left out: ranks
/// of one program differ in them, and that difference is what each member keeps.
pub(crate) fn program_fingerprint(context: &Context<'_>) -> u64 {
    let graph = &context.window.graph;
    let trace = context.trace;
    // `DefaultHasher::new()` has fixed keys: the same program gives the same fingerprint on
    // every run, so groups (and the output) are deterministic.
    let mut hasher = DefaultHasher::new();
    graph.lanes.len().hash(&mut hasher);
    context.window.steps.len().hash(&mut hasher);
    for t in 0..graph.task_count() {
        graph.lane[t].hash(&mut hasher);
        graph.step[t].hash(&mut hasher);
        graph.kind[t].hash(&mut hasher);
        trace
            .name(trace.events[graph.event[t].index()].name)
            .hash(&mut hasher);
    }
    hasher.finish()
}

/// Groups ranks by fingerprint; the representative of each is its slowest rank in
/// `baseline_ns` (the lowest index on a tie). Groups are ordered by their first member.
pub(crate) fn group_ranks(fingerprints: &[u64], baseline_ns: &[i64]) -> Vec<RankGroup> {
    let mut by_program: BTreeMap<u64, Vec<usize>> = BTreeMap::new();
    for (rank, &fingerprint) in fingerprints.iter().enumerate() {
        by_program.entry(fingerprint).or_default().push(rank);
    }
    let mut groups: Vec<RankGroup> = by_program
        .into_values()
        .map(|members| {
            let representative = members
                .iter()
                .copied()
                .max_by_key(|&r| (baseline_ns[r], std::cmp::Reverse(r)))
                .unwrap_or(members[0]);
            RankGroup {
                representative,
                members,
            }
        })
        .collect();
    groups.sort_by_key(|g| g.members[0]);
    groups
}

/// Every rank's predicted step from its group representative's: a member's baseline moved
/// by what the plan moved its representative's (saturating, never below zero).
pub(crate) fn spread(
    groups: &[RankGroup],
    baseline_ns: &[i64],
    representative_ns: &[i64],
) -> Vec<i64> {
    let mut per_rank = vec![0; baseline_ns.len()];
    for (group, &predicted) in groups.iter().zip(representative_ns) {
        let moved = predicted.saturating_sub(baseline_ns[group.representative]);
        for &member in &group.members {
            per_rank[member] = if member == group.representative {
                predicted
            } else {
                baseline_ns[member].saturating_add(moved).max(0)
            };
        }
    }
    per_rank
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slowest_member_represents_its_group_and_members_move_with_it() {
        let fingerprints = [7, 9, 7, 7];
        let baseline = [100, 50, 120, 120];
        let groups = group_ranks(&fingerprints, &baseline);
        assert_eq!(
            groups,
            vec![
                RankGroup {
                    representative: 2,
                    members: vec![0, 2, 3]
                },
                RankGroup {
                    representative: 1,
                    members: vec![1]
                },
            ]
        );
        // The representative gains 30 ns: every member of its group gains as much.
        assert_eq!(spread(&groups, &baseline, &[90, 45]), vec![70, 45, 90, 90]);
    }
}
