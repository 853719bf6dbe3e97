//! The process group of each collective a host thread runs (gloo), which no record names.
//!
//! NCCL's collectives carry their group (`Process Group Name`, `Process Group Ranks`); gloo's
//! `gloo:all_reduce` ranges carry only their tensors. What does tell the groups apart: every
//! gloo process group runs its collectives on worker threads of its own (so a rank's worker
//! thread belongs to one group), each rank declares the groups it is a member of
//! (`distributedInfo.pg_config`), and the members of one group run the same collectives, in
//! the same steps, on the same tensors. So each rank's worker threads are assigned to its
//! declared groups such that, for every group, each member's threads together ran the same
//! collectives (type and elements, per step) as every other member's. Several assignments
//! may agree on the collectives (a world group running one program on every rank agrees with
//! any grouping; an expert-parallel job's dense and expert gradients are all-reduced with the
//! same shapes on every rank, over the world and over pairs). What else the trace keeps: gloo
//! starts a group's pool of worker threads (two unless the program asks for more) when the
//! program creates the group, and the ranks list their groups in that order, so on one host a
//! rank's threads taken by id run through its groups in the order it declared them, two
//! threads a group. The assignments are offered in tiers ([`Tier`]): those in that order with
//! no more threads a group than a pool, then those in that order, then any (ids from a pid
//! namespace of their own, a program that sized its pools otherwise). Of the first tier with
//! agreeing assignments the matching (`match_collectives`) keeps the ones whose matched
//! collectives are in order (no collective ends on one member before another member started
//! it: on one host's clock, or across hosts on the clocks the grouping's own matching aligns,
//! a grouping they cannot be aligned under being out too), and of those the one whose members'
//! ends lie clearly closest together; a tier all of whose groupings are out gives way to the
//! next. Only where no tier has a grouping on which every group's members agree exactly are
//! the tiers offered again with members that agree but for some collectives one holds and
//! the other does not ([`Agreement::ButForSome`]: a program can start a collective from a
//! thread the profiler does not trace, on some ranks and not on others). Where none or
//! several remain, the host collectives are left unmatched and the matching says why; only
//! ranks that declare no group at all keep the old reading, one channel of the world's.
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

/// What the inference found: the matching the judge kept from one tier of its groupings, or an
/// outcome without a grouping.
pub(crate) enum HostGroupInference<J> {
    Judged(J),
    Outcome(HostGroups),
}

/// The groupings on which every group's members agree, offered to the judge (the clocks) in
/// tiers, most likely first; the first tier with any agreeing grouping the judge does not put
/// out entirely is the one judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tier {
    /// Each rank's threads follow the order it created its groups in (by thread id), and no
    /// group has more threads than gloo's default pool: each pool is its own group.
    PoolsInCreationOrder,
    /// The threads follow the creation order; a group may have more threads than one pool
    /// (a group created with more, [`GLOO_POOL_THREADS`]).
    InCreationOrder,
    /// Any assignment (thread ids that are not the host's, e.g. from a container's own pid
    /// namespace with ids reused, or pools that started threads later).
    Any,
}

const TIERS: [Tier; 3] = [Tier::PoolsInCreationOrder, Tier::InCreationOrder, Tier::Any];

/// Worker threads gloo starts for a process group: `ProcessGroupGloo::Options::threads`, 2 by
/// default, and `torch.distributed` (2.15) creates its gloo groups without passing a program's
/// `pg_options`; a program that builds its groups from C++ may ask for others (the next tier).
const GLOO_POOL_THREADS: usize = 2;

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
    /// Per group, its position in the order the rank declared its groups (`None`: not
    /// declared, e.g. named only by a collective's record).
    group_positions: Vec<Option<usize>>,
    /// Per worker thread (by lane), its collectives' (step, type, elements) within the steps
    /// every rank recorded.
    threads: Vec<Vec<Key>>,
    /// Per worker thread (by lane), the id the trace gives it.
    thread_ids: Vec<Option<i64>>,
}

impl RankThreads {
    /// Whether `assignment` gives threads started later groups created no earlier: gloo starts
    /// a group's worker threads when the program creates the group, so a thread with a larger
    /// id (one host's kernel hands them out in increasing order) belongs to a group declared
    /// no earlier. True where an id or a group's position is unknown (nothing to go by).
    fn follows_creation_order(&self, assignment: &[usize]) -> bool {
        let mut started: Vec<(i64, usize)> = Vec::with_capacity(assignment.len());
        for (thread, &g) in assignment.iter().enumerate() {
            match (self.thread_ids[thread], self.group_positions[g]) {
                (Some(id), Some(position)) => started.push((id, position)),
                _ => return true,
            }
        }
        started.sort_unstable();
        started.windows(2).all(|w| w[0].1 <= w[1].1)
    }
}

type Key = (Option<u64>, String, Option<i64>);

/// One assignment of a rank's threads to its groups (per thread, an index into its groups),
/// with the collectives each group gets under it, sorted.
struct Assignment<'k> {
    threads: Vec<usize>,
    by_group: BTreeMap<&'k str, Vec<&'k Key>>,
    /// [`RankThreads::follows_creation_order`].
    in_creation_order: bool,
    /// The most threads it gives one group.
    most_threads_in_a_group: usize,
}

impl Assignment<'_> {
    fn in_tier(&self, tier: Tier) -> bool {
        match tier {
            Tier::PoolsInCreationOrder => {
                self.in_creation_order && self.most_threads_in_a_group <= GLOO_POOL_THREADS
            }
            Tier::InCreationOrder => self.in_creation_order,
            Tier::Any => true,
        }
    }
}

/// Infers the group of every host-run collective and has `judge` choose among the groupings
/// on which every group's members agree. `recorded`: each rank's collectives;
/// `present_members`: how many members of a named group are among the ranks given (`None`:
/// the group's members are not known). A grouping is every rank's collectives with the host
/// ones relabelled (group, source [`GroupSource::Inferred`], and their order within their new
/// group and step); `judge` gets one tier's groupings ([`Tier`]) and returns what it kept, or
/// `None` when it puts out every one (the next tier is then offered).
pub(crate) fn infer_host_groups<J>(
    ranks: &[RankGraph],
    recorded: &[&[CollectiveInstance]],
    present_members: &dyn Fn(&str) -> Option<usize>,
    judge: &mut dyn FnMut(Vec<Vec<Vec<CollectiveInstance>>>) -> Option<J>,
) -> HostGroupInference<J> {
    use HostGroupInference::Outcome;
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
                keys.push((i.step, i.op.clone(), i.elements_alike()));
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
        let group_positions = groups
            .iter()
            .map(|g| rank.declared_group_order.iter().position(|d| d == g))
            .collect();
        let thread_ids = threads
            .keys()
            .map(|&lane| rank.thread_ids.get(lane as usize).copied().flatten())
            .collect();
        per_rank.push(RankThreads {
            groups,
            group_positions,
            threads: threads.into_values().collect(),
            thread_ids,
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
            let mut threads_per_group = vec![0usize; n_groups];
            for &g in &assignment {
                threads_per_group[g] += 1;
            }
            options.push(Assignment {
                in_creation_order: rank.follows_creation_order(&assignment),
                most_threads_in_a_group: threads_per_group.into_iter().max().unwrap_or(0),
                threads: assignment,
                by_group,
            });
        }
        choices.push(options);
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
    let host_keys: usize = per_rank
        .iter()
        .flat_map(|rank| &rank.threads)
        .map(Vec::len)
        .sum();
    // Exactly first; only where no tier's groupings agree exactly (or the judge puts every one
    // out), the tiers again with members that agree but for some collectives recorded on
    // some of them only ([`Agreement::ButForSome`]), which the matching then reports as
    // missing on the others.
    for agreement in [Agreement::Exact, Agreement::ButForSome] {
        let mut judged_tier: Option<Vec<Vec<bool>>> = None;
        for tier in TIERS {
            let admitted: Vec<Vec<bool>> = choices
                .iter()
                .map(|options| options.iter().map(|o| o.in_tier(tier)).collect())
                .collect();
            if judged_tier.as_ref() == Some(&admitted) {
                // The same groupings as the tier before: judged already.
                continue;
            }
            let mut search = Search::new(&choices, &admitted, agreement);
            search.run(0, 0);
            let (steps, solutions, least_differing) =
                (search.steps, search.solutions, search.least_differing);
            judged_tier = Some(admitted);
            if steps > MAX_SEARCH_STEPS {
                return Outcome(HostGroups::TooManyChoices);
            }
            let too_many_differ = least_differing.is_some_and(|d| d * DIFFERING_SHARE > host_keys);
            if solutions.is_empty() || too_many_differ {
                continue;
            }
            if solutions.len() > MAX_CANDIDATES {
                return Outcome(HostGroups::Ambiguous);
            }
            let groupings = solutions.iter().map(|s| relabel(s)).collect();
            if let Some(judged) = judge(groupings) {
                return HostGroupInference::Judged(judged);
            }
        }
    }
    // No tier had a grouping that agrees, or the judge put every one out.
    Outcome(HostGroups::Inconsistent)
}

/// When two members' collectives of one group agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Agreement {
    /// The same collectives (step, type, elements), as many of each.
    Exact,
    /// The same but for some that one member's trace holds and the other's does not, the two
    /// sharing at least half of either; of the groupings under which every group's members
    /// agree so, those that leave the fewest collectives differing, and only where they are
    /// at most one in [`DIFFERING_SHARE`] of the host collectives. A profiler records a
    /// collective only on a thread it traces, and a program can start one from a thread it
    /// does not: PowerSGD launches its P and Q all-reduces from a future's callback, which
    /// runs on the training thread (traced) when the future has completed already and on
    /// gloo's thread (not traced) otherwise, and real jobs' traces held them on one member of
    /// a pair and not on the other.
    ButForSome,
}

/// [`Agreement::ButForSome`]: the host collectives of which one may differ, at most.
const DIFFERING_SHARE: usize = 20;

impl Agreement {
    /// Whether `a` and `b` (sorted) agree, and if so how many collectives differ between them
    /// (the size of their multisets' symmetric difference).
    fn differing(self, a: &[&Key], b: &[&Key]) -> Option<usize> {
        if a == b {
            return Some(0);
        }
        if self == Agreement::Exact {
            return None;
        }
        // The size of their multisets' intersection, walking both sorted lists.
        let (mut i, mut j, mut common) = (0, 0, 0);
        while i < a.len() && j < b.len() {
            match a[i].cmp(b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    common += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        (2 * common >= a.len().max(b.len())).then_some(a.len() + b.len() - 2 * common)
    }
}

/// A depth-first search over ranks for the assignments on which every group's members agree
/// (under [`Agreement::ButForSome`], those leaving the fewest collectives differing, pruned
/// by the fewest found so far), stopped past [`MAX_CANDIDATES`] solutions.
struct Search<'c, 'k> {
    choices: &'c [Vec<Assignment<'k>>],
    agreement: Agreement,
    /// Per rank, per assignment: whether the search tries it (its tier's).
    admitted: &'c [Vec<bool>],
    /// Group → the collectives its first member assigned gets.
    fixed: BTreeMap<&'k str, &'c Vec<&'k Key>>,
    picked: Vec<usize>,
    solutions: Vec<Vec<usize>>,
    /// The collectives differing from their group's first member under each solution (0 under
    /// [`Agreement::Exact`]).
    least_differing: Option<usize>,
    steps: usize,
}

impl<'c, 'k> Search<'c, 'k> {
    fn new(
        choices: &'c [Vec<Assignment<'k>>],
        admitted: &'c [Vec<bool>],
        agreement: Agreement,
    ) -> Self {
        Search {
            choices,
            agreement,
            admitted,
            fixed: BTreeMap::new(),
            picked: Vec::new(),
            solutions: Vec::new(),
            least_differing: None,
            steps: 0,
        }
    }

    /// Tries every admitted assignment of `rank` and the ranks after it, `differing`
    /// collectives differing under the assignments picked so far.
    fn run(&mut self, rank: usize, differing: usize) {
        if self.solutions.len() > MAX_CANDIDATES || self.steps > MAX_SEARCH_STEPS {
            return;
        }
        if rank == self.choices.len() {
            if self.least_differing.is_none_or(|least| differing < least) {
                self.solutions.clear();
                self.least_differing = Some(differing);
            }
            self.solutions.push(self.picked.clone());
            return;
        }
        let choices = self.choices;
        for (index, option) in choices[rank].iter().enumerate() {
            if !self.admitted[rank][index] {
                continue;
            }
            let by_group = &option.by_group;
            self.steps += 1;
            let mut total = Some(differing);
            for (g, keys) in by_group {
                if let Some(fixed) = self.fixed.get(g) {
                    total = total
                        .zip(self.agreement.differing(fixed, keys))
                        .map(|(t, d)| t + d);
                }
            }
            let Some(total) = total else {
                continue;
            };
            if self.least_differing.is_some_and(|least| total > least) {
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
            self.run(rank + 1, total);
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
