//! Whom a gloo transfer goes to where its posting op records no peer. Traced without
//! `record_shapes` (the profiler's default), `c10d::send` and `c10d::recv_` keep no inputs, and
//! so no peer ([`super::matching::UNPAIRED_TRANSFERS`]). Their times still say much: gloo sends
//! only once the receiver has posted its receive (`tcp::Pair::handleRemotePendingRecv`: sends
//! cannot execute until the remote side is ready to receive), so the two sides of one transfer
//! overlap, each from its posting op's start to its range's end ([`HostTransfer`]).
//!
//! Every send may be the other side of any receive of another rank on its clock that overlaps
//! it: a bipartite graph, of which the transfers are a matching, and one of maximum size where
//! the window holds both sides of most transfers. A pair is taken only where **every** maximum
//! matching holds it, never by choosing among equally consistent ones. By Dulmage and
//! Mendelsohn, an edge of a maximum matching M is in all of them unless it lies on an
//! M-alternating cycle (its ends in one strongly connected component of the graph with M's
//! edges turned back) or on an even M-alternating path from a vertex M leaves single. Each pair
//! taken prunes the candidates that would break the order between its two ranks (transfers
//! between two ranks arrive in the order they were posted), and the test runs again.
//!
//! Replicas of one pipeline stage run in near lockstep, so a send often overlaps receives of
//! both replicas: time alone may leave many transfers open. Then a transfer with a candidate
//! among the pairs of ranks the pairs taken show talking keeps only those (a stage talks to the
//! same peers all run), provided that leaves a matching as large: where it would not, the pairs
//! shown are not all the job's, and nothing is pruned. What is still open stays unmatched, with
//! its reason.
//!
//! All the ranks given must share one clock (one host's): across hosts the clocks are aligned
//! by the collectives to within milliseconds, more than separates a transfer from its
//! neighbours, and pairing one host's ranks alone would pair a transfer whose other side is on
//! another host with a stranger.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::RankGraph;
use super::matching::{CollectiveInstance, GroupSource, Peer, UNPAIRED_TRANSFERS};

/// How far two sides' spans may miss each other and still count as overlapping: the clock
/// alignment's own tolerance.
const TOLERANCE_NS: i64 = super::CONSTRAINT_TOLERANCE_NS;

/// Receives one send may overlap and still be weighed: past it (many replicas in lockstep), the
/// send stays open rather than the graph grow past what a replay can afford.
const MAX_CANDIDATES: usize = 64;

/// One side of a transfer whose peer is not recorded.
struct Side {
    /// Position of its rank among those given.
    rank: usize,
    /// Its place in its rank's list.
    index: usize,
    /// Its order among its rank's open sides of its direction.
    order: u32,
    /// Posted and done, on the clock compared.
    from_ns: i64,
    to_ns: i64,
}

/// Each rank's list with the transfers whose peer is not recorded paired where their times
/// pair them (see the module documentation), on ranks that share one clock.
pub(crate) fn pair_by_time<'a>(
    ranks: &[RankGraph],
    lists: &[&'a [CollectiveInstance]],
) -> Vec<Cow<'a, [CollectiveInstance]>> {
    let mut sends: Vec<Side> = Vec::new();
    let mut receives: Vec<Side> = Vec::new();
    for (r, list) in lists.iter().enumerate() {
        let base_ns = ranks[r].origin_ns;
        let mut orders = [0u32; 2];
        for (index, instance) in list.iter().enumerate() {
            let Some(t) = instance
                .transfer
                .filter(|_| instance.group == UNPAIRED_TRANSFERS)
            else {
                continue;
            };
            let order = &mut orders[usize::from(t.sends)];
            let side = Side {
                rank: r,
                index,
                order: *order,
                from_ns: base_ns + t.posted_ns,
                to_ns: base_ns + t.done_ns.max(t.posted_ns),
            };
            *order += 1;
            if t.sends {
                sends.push(side);
            } else {
                receives.push(side);
            }
        }
    }
    let borrowed = || lists.iter().map(|&l| Cow::Borrowed(l)).collect();
    if sends.is_empty() || receives.is_empty() {
        return borrowed();
    }
    let candidates = overlapping(&sends, &receives);
    let pairs = forced_pairs(&sends, &receives, candidates);
    // Per rank: list index → (the other side's rank number, whether this side sends).
    let mut resolved: Vec<BTreeMap<usize, (i64, bool)>> = vec![BTreeMap::new(); lists.len()];
    for (a, b) in pairs.iter().enumerate() {
        let Some(b) = *b else { continue };
        let (send, receive) = (&sends[a], &receives[b as usize]);
        resolved[send.rank].insert(send.index, (ranks[receive.rank].rank, true));
        resolved[receive.rank].insert(receive.index, (ranks[send.rank].rank, false));
    }
    lists
        .iter()
        .enumerate()
        .map(|(r, &list)| {
            if resolved[r].is_empty() {
                return Cow::Borrowed(list);
            }
            let me = ranks[r].rank;
            let mut next: BTreeMap<String, u32> = BTreeMap::new();
            let relabelled = list
                .iter()
                .enumerate()
                .map(|(k, instance)| {
                    let (Some(&(other, sends)), Some(t)) = (resolved[r].get(&k), instance.transfer)
                    else {
                        return instance.clone();
                    };
                    let group = if sends {
                        Peer::group(me, other)
                    } else {
                        Peer::group(other, me)
                    };
                    let seq = next.entry(group.clone()).or_insert(0);
                    *seq += 1;
                    CollectiveInstance {
                        // A send starts with its posting op, as a recorded pair's does.
                        task: if sends { t.posted_by } else { instance.task },
                        group,
                        source: GroupSource::PeerByTime,
                        step: None,
                        seq: *seq - 1,
                        peer: Some(Peer { sends, rank: other }),
                        ..instance.clone()
                    }
                })
                .collect();
            Cow::Owned(relabelled)
        })
        .collect()
}

/// Per send, the receives of other ranks whose spans overlap its own, ascending;
/// none where more than [`MAX_CANDIDATES`] do.
fn overlapping(sends: &[Side], receives: &[Side]) -> Vec<Vec<u32>> {
    let mut by_start: Vec<u32> = (0..receives.len() as u32).collect();
    by_start.sort_by_key(|&b| receives[b as usize].from_ns);
    let longest_ns = receives
        .iter()
        .map(|b| b.to_ns - b.from_ns)
        .max()
        .unwrap_or(0);
    sends
        .iter()
        .map(|a| {
            let key = |b: &u32| receives[*b as usize].from_ns;
            let earliest = a.from_ns - TOLERANCE_NS - longest_ns;
            let latest = a.to_ns + TOLERANCE_NS;
            let lo = by_start.partition_point(|b| key(b) < earliest);
            let hi = by_start.partition_point(|b| key(b) <= latest);
            let mut found: Vec<u32> = Vec::new();
            for &b in &by_start[lo..hi] {
                let side = &receives[b as usize];
                if side.rank != a.rank && side.to_ns >= a.from_ns - TOLERANCE_NS {
                    found.push(b);
                    if found.len() > MAX_CANDIDATES {
                        return Vec::new();
                    }
                }
            }
            found.sort_unstable();
            found
        })
        .collect()
}

/// Per send, the receive every maximum matching of `candidates` pairs it with, the order
/// between two ranks kept, and the pairs of ranks shown talking preferred where that keeps
/// the matching as large (see the module documentation).
fn forced_pairs(
    sends: &[Side],
    receives: &[Side],
    mut candidates: Vec<Vec<u32>>,
) -> Vec<Option<u32>> {
    let mut pairs: Vec<Option<u32>> = vec![None; sends.len()];
    let mut receive_paired = vec![false; receives.len()];
    // (sender's rank, receiver's rank) → the send's order → the receive's order.
    let mut between: BTreeMap<(usize, usize), BTreeMap<u32, u32>> = BTreeMap::new();
    loop {
        let matching = Matching::maximum(&candidates, receives.len());
        let mut taken = 0;
        for (a, b) in matching.forced(&candidates) {
            if pairs[a].is_none() {
                pairs[a] = Some(b);
                receive_paired[b as usize] = true;
                let (send, receive) = (&sends[a], &receives[b as usize]);
                between
                    .entry((send.rank, receive.rank))
                    .or_default()
                    .insert(send.order, receive.order);
                taken += 1;
            }
        }
        if taken > 0 {
            for (a, list) in candidates.iter_mut().enumerate() {
                match pairs[a] {
                    Some(b) => *list = vec![b],
                    None => list.retain(|&b| {
                        !receive_paired[b as usize]
                            && in_order(&between, &sends[a], &receives[b as usize])
                    }),
                }
            }
            continue;
        }
        // Nothing more is forced: keep to the pairs of ranks shown talking, where that keeps
        // a matching as large.
        let shown: BTreeSet<(usize, usize)> = between.keys().copied().collect();
        let restricted = keep_to_shown(sends, receives, &candidates, &shown);
        if restricted == candidates
            || Matching::maximum(&restricted, receives.len()).size < matching.size
        {
            return pairs;
        }
        candidates = restricted;
    }
}

/// Whether pairing `send` with `receive` keeps the order of the pairs already taken between
/// their two ranks.
fn in_order(
    between: &BTreeMap<(usize, usize), BTreeMap<u32, u32>>,
    send: &Side,
    receive: &Side,
) -> bool {
    let Some(taken) = between.get(&(send.rank, receive.rank)) else {
        return true;
    };
    let before = taken.range(..send.order).next_back();
    let after = taken.range(send.order + 1..).next();
    before.is_none_or(|(_, &r)| r < receive.order) && after.is_none_or(|(_, &r)| r > receive.order)
}

/// `candidates` with each side that has a candidate among the `shown` pairs of ranks kept to
/// those.
fn keep_to_shown(
    sends: &[Side],
    receives: &[Side],
    candidates: &[Vec<u32>],
    shown: &BTreeSet<(usize, usize)>,
) -> Vec<Vec<u32>> {
    let is_shown = |a: usize, b: u32| shown.contains(&(sends[a].rank, receives[b as usize].rank));
    let mut receive_has_shown = vec![false; receives.len()];
    for (a, list) in candidates.iter().enumerate() {
        for &b in list {
            if is_shown(a, b) {
                receive_has_shown[b as usize] = true;
            }
        }
    }
    candidates
        .iter()
        .enumerate()
        .map(|(a, list)| {
            let send_has_shown = list.iter().any(|&b| is_shown(a, b));
            list.iter()
                .copied()
                .filter(|&b| is_shown(a, b) || (!send_has_shown && !receive_has_shown[b as usize]))
                .collect()
        })
        .collect()
}

const NONE: u32 = u32::MAX;

/// A maximum matching of a bipartite graph (sends on the left, receives on the right), by
/// Hopcroft and Karp: O(E √V). Written here because `petgraph`'s matching is for general
/// graphs, O(V³).
struct Matching {
    /// Per send, its receive ([`NONE`]: none).
    left: Vec<u32>,
    /// Per receive, its send.
    right: Vec<u32>,
    size: usize,
}

impl Matching {
    fn maximum(adjacency: &[Vec<u32>], right_count: usize) -> Matching {
        let n = adjacency.len();
        let mut m = Matching {
            left: vec![NONE; n],
            right: vec![NONE; right_count],
            size: 0,
        };
        for (u, list) in adjacency.iter().enumerate() {
            if let Some(&v) = list.iter().find(|&&v| m.right[v as usize] == NONE) {
                m.left[u] = v;
                m.right[v as usize] = u as u32;
                m.size += 1;
            }
        }
        let mut layer = vec![u32::MAX; n];
        loop {
            // Layers from the single sends, along alternating paths.
            let mut queue: VecDeque<usize> = VecDeque::new();
            for u in 0..n {
                layer[u] = if m.left[u] == NONE { 0 } else { u32::MAX };
                if layer[u] == 0 {
                    queue.push_back(u);
                }
            }
            let mut reaches_single = false;
            while let Some(u) = queue.pop_front() {
                for &v in &adjacency[u] {
                    let w = m.right[v as usize];
                    if w == NONE {
                        reaches_single = true;
                    } else if layer[w as usize] == u32::MAX {
                        layer[w as usize] = layer[u] + 1;
                        queue.push_back(w as usize);
                    }
                }
            }
            if !reaches_single {
                return m;
            }
            // Vertex-disjoint shortest augmenting paths, by an explicit-stack search.
            let mut next_edge = vec![0usize; n];
            for root in 0..n {
                if m.left[root] != NONE {
                    continue;
                }
                let mut path = vec![root];
                while let Some(&u) = path.last() {
                    let Some(&v) = adjacency[u].get(next_edge[u]) else {
                        layer[u] = u32::MAX;
                        path.pop();
                        continue;
                    };
                    next_edge[u] += 1;
                    let w = m.right[v as usize];
                    if w == NONE {
                        // Each send on the path takes the receive it last tried.
                        for &x in &path {
                            let v = adjacency[x][next_edge[x] - 1];
                            m.left[x] = v;
                            m.right[v as usize] = x as u32;
                        }
                        m.size += 1;
                        break;
                    }
                    if layer[w as usize] == layer[u] + 1 {
                        path.push(w as usize);
                    }
                }
            }
        }
    }

    /// The pairs of this maximum matching that every maximum matching of `adjacency` holds:
    /// those on no alternating cycle and on no even alternating path from a single vertex.
    fn forced(&self, adjacency: &[Vec<u32>]) -> Vec<(usize, u32)> {
        let n = self.left.len();
        let total = n + self.right.len();
        // The directed graph: a send to each receive it is not matched with, a receive to its
        // send. Node ids: sends 0..n, receives n...
        let successors = |x: usize| -> Vec<usize> {
            if x < n {
                adjacency[x]
                    .iter()
                    .filter(|&&v| v != self.left[x])
                    .map(|&v| n + v as usize)
                    .collect()
            } else {
                let u = self.right[x - n];
                if u == NONE {
                    Vec::new()
                } else {
                    vec![u as usize]
                }
            }
        };
        let mut predecessors: Vec<Vec<usize>> = vec![Vec::new(); total];
        for x in 0..total {
            for y in successors(x) {
                predecessors[y].push(x);
            }
        }
        // Even alternating paths: forward from single sends, backward from single receives.
        let mut free_reach = vec![false; total];
        let mut stack: Vec<usize> = (0..n).filter(|&u| self.left[u] == NONE).collect();
        while let Some(x) = stack.pop() {
            if !std::mem::replace(&mut free_reach[x], true) {
                stack.extend(successors(x));
            }
        }
        let mut stack: Vec<usize> = (0..self.right.len())
            .filter(|&v| self.right[v] == NONE)
            .map(|v| n + v)
            .collect();
        let mut back_reach = vec![false; total];
        while let Some(x) = stack.pop() {
            if !std::mem::replace(&mut back_reach[x], true) {
                stack.extend(predecessors[x].iter().copied());
            }
        }
        let component = strongly_connected(total, &successors);
        (0..n)
            .filter_map(|u| {
                let v = self.left[u];
                if v == NONE {
                    return None;
                }
                let w = n + v as usize;
                let on_cycle = component[u] == component[w];
                let on_path = free_reach[u] || free_reach[w] || back_reach[u] || back_reach[w];
                (!on_cycle && !on_path).then_some((u, v))
            })
            .collect()
    }
}

/// Each node's strongly connected component (an id), by Tarjan's algorithm with an explicit
/// stack.
fn strongly_connected(total: usize, successors: &dyn Fn(usize) -> Vec<usize>) -> Vec<u32> {
    let mut index = vec![u32::MAX; total];
    let mut low = vec![0u32; total];
    let mut on_stack = vec![false; total];
    let mut component = vec![u32::MAX; total];
    let mut stack: Vec<usize> = Vec::new();
    let mut next_index = 0u32;
    let mut next_component = 0u32;
    for root in 0..total {
        if index[root] != u32::MAX {
            continue;
        }
        // (node, its successors, the next to visit)
        let mut calls: Vec<(usize, Vec<usize>, usize)> = vec![(root, successors(root), 0)];
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some((x, succ, k)) = calls.last_mut() {
            let x = *x;
            if let Some(&y) = succ.get(*k) {
                *k += 1;
                if index[y] == u32::MAX {
                    index[y] = next_index;
                    low[y] = next_index;
                    next_index += 1;
                    stack.push(y);
                    on_stack[y] = true;
                    calls.push((y, successors(y), 0));
                } else if on_stack[y] {
                    low[x] = low[x].min(index[y]);
                }
                continue;
            }
            calls.pop();
            if let Some((parent, _, _)) = calls.last() {
                low[*parent] = low[*parent].min(low[x]);
            }
            if low[x] == index[x] {
                while let Some(y) = stack.pop() {
                    on_stack[y] = false;
                    component[y] = next_component;
                    if y == x {
                        break;
                    }
                }
                next_component += 1;
            }
        }
    }
    component
}

#[cfg(test)]
mod tests {
    use super::Matching;

    /// Two sends that may each go to either of two receives: no pair is forced; a third send
    /// with one receive of its own is.
    #[test]
    fn only_pairs_every_maximum_matching_holds_are_forced() {
        let adjacency = vec![vec![0, 1], vec![0, 1], vec![2]];
        let m = Matching::maximum(&adjacency, 3);
        assert_eq!(m.size, 3);
        assert_eq!(m.forced(&adjacency), vec![(2, 2)]);
    }

    /// A chain a0–b0–a1–b1 with a1–b1 the only edge of a1: b1 is a1's, so b0 is a0's.
    #[test]
    fn a_pair_forced_by_its_neighbour() {
        let adjacency = vec![vec![0, 1], vec![1]];
        let m = Matching::maximum(&adjacency, 2);
        assert_eq!(m.size, 2);
        assert_eq!(m.forced(&adjacency), vec![(0, 0), (1, 1)]);
    }

    /// One receive for two sends: the matching has one pair, on an even alternating path from
    /// the single send, so neither is forced.
    #[test]
    fn a_pair_a_single_side_could_take_is_not_forced() {
        let adjacency = vec![vec![0], vec![0]];
        let m = Matching::maximum(&adjacency, 1);
        assert_eq!(m.size, 1);
        assert!(m.forced(&adjacency).is_empty());
    }

    /// Hopcroft–Karp finds the augmenting path a greedy start misses.
    #[test]
    fn the_matching_is_maximum() {
        let adjacency = vec![vec![0, 1], vec![0], vec![1, 2]];
        let m = Matching::maximum(&adjacency, 3);
        assert_eq!(m.size, 3);
        assert_eq!(m.left, vec![1, 0, 2]);
    }
}
