//! The process group of each collective a host thread runs (gloo), which no record names.
//!
//! NCCL's collectives carry their group (`Process Group Name`, `Process Group Ranks`); gloo's
//! `gloo:all_reduce` ranges carry only their tensors. What does tell the groups apart: every
//! gloo process group runs its collectives on worker threads of its own (so a rank's worker
//! thread belongs to one group), each rank declares the groups it is a member of
//! (`distributedInfo.pg_config`), and the members of one group run the same collectives, in
//! the same steps, on the same tensors. So each rank's worker threads are assigned to its
//! declared groups such that, for every group, each member's threads together ran the same
//! collectives (type and elements, per step) as every other member's. The assignment is kept
//! only where exactly one agrees with the recording: several may agree on the collectives (a
//! world group running one program on every rank agrees with any grouping), and of those the
//! matching (`match_collectives`) keeps the ones whose matched collectives are in order on the
//! ranks that share a clock (one host: no collective ends on one member before another member
//! started it), and of those the one whose members' ends lie clearly closest together. Where
//! none or several remain, the host collectives are left unmatched and the matching says why;
//! only ranks that declare no group at all keep the old reading, one channel of the world's.
//!
//! With a rank missing, a group of it looks like no group to the others: the inference then
//! finds no agreeing grouping rather than guess one (a grouping that let a thread join a group
//! none of whose other members is given, preferring the most pairs, paired a gradient bucket
//! across the world on three ranks of a real TP × DP job).

use std::collections::{BTreeMap, BTreeSet};

use super::RankGraph;
use super::matching::{CollectiveInstance, GroupSource, HOST_CHANNEL};

/// Assignments of one rank's worker threads to its groups tried at most: a rank with more
/// (threads^groups) is not inferred.
const MAX_ASSIGNMENTS_PER_RANK: usize = 4_096;

/// Steps of the search over all ranks at most.
const MAX_SEARCH_STEPS: usize = 1_000_000;

/// Assignments on which every group's members agree kept at most; with more, the groups are
/// ambiguous.
const MAX_CANDIDATES: usize = 1_024;

/// What the inference found: an outcome without a grouping, or the groupings on which every
/// group's members agree (each: every rank's collectives, the host ones relabelled), for the
/// matching to choose among by what the clocks say.
pub(crate) enum HostGroupCandidates {
    Outcome(HostGroups),
    Several(Vec<Vec<Vec<CollectiveInstance>>>),
}

/// How the groups of host-run collectives were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostGroups {
    /// No rank runs a collective on a host thread.
    NoHostCollectives,
    /// Every worker thread's group inferred, one way only (see the module documentation).
    Inferred,
    /// Some rank that runs host collectives declares no process group (a trace without
    /// `pg_config`): the host collectives are taken to be every rank's, as before groups were
    /// recorded.
    Undeclared,
    /// No assignment of threads to groups gives every group's members the same collectives:
    /// the host collectives are left unmatched.
    Inconsistent,
    /// More than one assignment does, and the clocks do not single one out: left unmatched.
    Ambiguous,
    /// Too many assignments to try: left unmatched.
    TooManyChoices,
}

impl HostGroups {
    pub fn as_str(self) -> &'static str {
        match self {
            HostGroups::NoHostCollectives => "no_host_collectives",
            HostGroups::Inferred => "inferred",
            HostGroups::Undeclared => "undeclared",
            HostGroups::Inconsistent => "inconsistent",
            HostGroups::Ambiguous => "ambiguous",
            HostGroups::TooManyChoices => "too_many_choices",
        }
    }
}

/// One rank's worker threads and the groups they may belong to.
struct RankThreads {
    /// Its declared groups with another member among the ranks given, by name.
    groups: Vec<String>,
    /// Per worker thread (by lane), its collectives' (step, type, elements) within the steps
    /// every rank recorded.
    threads: Vec<Vec<Key>>,
}

type Key = (Option<u64>, String, Option<i64>);

/// One assignment of a rank's threads to its groups (per thread, an index into its groups),
/// with the collectives each group gets under it, sorted.
struct Assignment<'k> {
    threads: Vec<usize>,
    by_group: BTreeMap<&'k str, Vec<&'k Key>>,
}

/// The groupings of the host instances on which every group's members agree, or why there
/// is none. `recorded`: each rank's collectives; `present_members`: how many members of a
/// named group are among the ranks given (`None`: the group's members are not known). A
/// grouping is every rank's collectives with the host ones relabelled (group, source
/// [`GroupSource::Inferred`], and their order within their new group and step).
pub(crate) fn infer_host_groups(
    ranks: &[RankGraph],
    recorded: &[&[CollectiveInstance]],
    present_members: &dyn Fn(&str) -> Option<usize>,
) -> HostGroupCandidates {
    use HostGroupCandidates::Outcome;
    let is_host = |i: &CollectiveInstance| i.group == HOST_CHANNEL;
    if !recorded.iter().any(|list| list.iter().any(is_host)) {
        return Outcome(HostGroups::NoHostCollectives);
    }
    // The steps every rank recorded: a window cut on one rank must not make its groups'
    // collectives look different from its peers'.
    let mut common: Option<BTreeSet<u64>> = None;
    for rank in ranks {
        let steps: BTreeSet<u64> = rank
            .window
            .steps
            .iter()
            .filter(|s| !s.synthetic)
            .map(|s| s.number)
            .collect();
        common = Some(match common {
            Some(c) => c.intersection(&steps).copied().collect(),
            None => steps,
        });
    }
    let common = common.unwrap_or_default();
    let counted = |step: Option<u64>| match step {
        Some(s) => common.contains(&s),
        None => common.is_empty(),
    };
    let mut per_rank: Vec<RankThreads> = Vec::with_capacity(ranks.len());
    let mut thread_lanes: Vec<Vec<u32>> = Vec::with_capacity(ranks.len());
    for (rank, list) in ranks.iter().zip(recorded) {
        let graph = &rank.window.graph;
        if rank.group_members.is_empty() && list.iter().any(is_host) {
            return Outcome(HostGroups::Undeclared);
        }
        let groups: Vec<String> = rank
            .group_members
            .iter()
            .filter(|(name, members)| {
                members.binary_search(&rank.rank).is_ok()
                    && present_members(name).is_some_and(|n| n >= 2)
            })
            .map(|(name, _)| name.clone())
            .collect();
        let mut threads: BTreeMap<u32, Vec<Key>> = BTreeMap::new();
        for i in list.iter().filter(|i| is_host(i)) {
            let keys = threads.entry(graph.lane[i.task.index()]).or_default();
            if counted(i.step) {
                keys.push((i.step, i.op.clone(), i.elements));
            }
        }
        if !threads.is_empty() && groups.is_empty() {
            // Groups declared, none with another member among the ranks given.
            return Outcome(HostGroups::Inconsistent);
        }
        // A thread that ran nothing in the common steps fits every group: it has no say, and
        // its collectives are left unmatched (their group is not inferred).
        threads.retain(|_, keys| !keys.is_empty());
        thread_lanes.push(threads.keys().copied().collect());
        per_rank.push(RankThreads {
            groups,
            threads: threads.into_values().collect(),
        });
    }
    // Per rank, every assignment of its threads to its groups, with the collectives each group
    // gets (sorted: which of a group's threads ran one is the thread pool's choice).
    let mut choices: Vec<Vec<Assignment<'_>>> = Vec::new();
    for rank in &per_rank {
        let n_groups = rank.groups.len().max(1);
        let count = (0..rank.threads.len()).try_fold(1usize, |n, _| {
            n.checked_mul(n_groups)
                .filter(|&n| n <= MAX_ASSIGNMENTS_PER_RANK)
        });
        let Some(count) = count else {
            return Outcome(HostGroups::TooManyChoices);
        };
        // Threads that ran the very same collectives (a group's pool splits its collectives
        // between its threads; here evenly) are interchangeable as far as the collectives can
        // tell: of the assignments that only swap them, one is tried (the threads in lane
        // order, their groups in declared order), and the clocks judge it as they judge the
        // rest. Each swap was a new agreeing assignment, and a job of eight ranks with two such
        // threads each had more than `MAX_CANDIDATES`.
        let same_as_earlier: Vec<Option<usize>> = (0..rank.threads.len())
            .map(|i| (0..i).rev().find(|&j| rank.threads[j] == rank.threads[i]))
            .collect();
        let mut options = Vec::with_capacity(count);
        for code in 0..count {
            let assignment: Vec<usize> = (0..rank.threads.len())
                .scan(code, |rest, _| {
                    let g = *rest % n_groups;
                    *rest /= n_groups;
                    Some(g)
                })
                .collect();
            let swapped = same_as_earlier
                .iter()
                .enumerate()
                .any(|(i, earlier)| earlier.is_some_and(|j| assignment[j] > assignment[i]));
            if swapped {
                continue;
            }
            let mut by_group: BTreeMap<&str, Vec<&Key>> = rank
                .groups
                .iter()
                .map(|g| (g.as_str(), Vec::new()))
                .collect();
            for (thread, &g) in rank.threads.iter().zip(&assignment) {
                if let Some(keys) = by_group.get_mut(rank.groups[g].as_str()) {
                    keys.extend(thread.iter());
                }
            }
            for keys in by_group.values_mut() {
                keys.sort();
            }
            options.push(Assignment {
                threads: assignment,
                by_group,
            });
        }
        choices.push(options);
    }
    let mut search = Search {
        choices: &choices,
        fixed: BTreeMap::new(),
        picked: Vec::new(),
        solutions: Vec::new(),
        steps: 0,
    };
    search.run(0);
    if search.steps > MAX_SEARCH_STEPS {
        return Outcome(HostGroups::TooManyChoices);
    }
    if search.solutions.is_empty() {
        return Outcome(HostGroups::Inconsistent);
    }
    if search.solutions.len() > MAX_CANDIDATES {
        return Outcome(HostGroups::Ambiguous);
    }
    let relabel = |solution: &[usize]| -> Vec<Vec<CollectiveInstance>> {
        recorded
            .iter()
            .enumerate()
            .map(|(r, list)| {
                let graph = &ranks[r].window.graph;
                let assignment = &choices[r][solution[r]].threads;
                let mut order: BTreeMap<(String, Option<u64>), u32> = BTreeMap::new();
                list.iter()
                    .map(|i| {
                        if !is_host(i) {
                            return i.clone();
                        }
                        let lane = graph.lane[i.task.index()];
                        let Ok(thread) = thread_lanes[r].binary_search(&lane) else {
                            return i.clone();
                        };
                        let group = per_rank[r].groups[assignment[thread]].clone();
                        let next = order.entry((group.clone(), i.step)).or_insert(0);
                        *next += 1;
                        CollectiveInstance {
                            group,
                            source: GroupSource::Inferred,
                            seq: *next - 1,
                            ..i.clone()
                        }
                    })
                    .collect()
            })
            .collect()
    };
    HostGroupCandidates::Several(search.solutions.iter().map(|s| relabel(s)).collect())
}

/// A depth-first search over ranks for the assignments on which every group's members agree,
/// stopped past [`MAX_CANDIDATES`] solutions.
struct Search<'c, 'k> {
    choices: &'c [Vec<Assignment<'k>>],
    /// Group → the collectives its first member assigned gets.
    fixed: BTreeMap<&'k str, &'c Vec<&'k Key>>,
    picked: Vec<usize>,
    solutions: Vec<Vec<usize>>,
    steps: usize,
}

impl<'c, 'k> Search<'c, 'k> {
    fn run(&mut self, rank: usize) {
        if self.solutions.len() > MAX_CANDIDATES || self.steps > MAX_SEARCH_STEPS {
            return;
        }
        if rank == self.choices.len() {
            self.solutions.push(self.picked.clone());
            return;
        }
        let choices = self.choices;
        for (index, Assignment { by_group, .. }) in choices[rank].iter().enumerate() {
            self.steps += 1;
            let agrees = by_group
                .iter()
                .all(|(g, keys)| self.fixed.get(g).is_none_or(|fixed| *fixed == keys));
            if !agrees {
                continue;
            }
            let added: Vec<&'k str> = by_group
                .iter()
                .filter(|(g, _)| !self.fixed.contains_key(*g))
                .map(|(g, _)| *g)
                .collect();
            for (g, keys) in by_group {
                self.fixed.entry(g).or_insert(keys);
            }
            self.picked.push(index);
            self.run(rank + 1);
            self.picked.pop();
            for g in added {
                self.fixed.remove(g);
            }
            if self.solutions.len() > MAX_CANDIDATES {
                return;
            }
        }
    }
}
