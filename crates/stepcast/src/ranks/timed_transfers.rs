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
//! Replicas of one pipeline stage run in near lockstep, and a schedule that posts ahead
//! (`torch.distributed.pipelining`'s batched `isend`/`irecv`) holds several transfers in
//! flight: a send often overlaps several receives, and time alone leaves many open. Three
//! things a training job does narrow them, tried in this order whenever nothing more is forced:
//!
//! 1. Where which open sides go between two ranks is known (none that could go between them
//!    could go elsewhere), transfers between them arrive in the order they were posted:
//!    between two pairs taken, as many sends as receives pair in order; before the first and
//!    after the last, they pair outward from it while each overlaps (a window cuts one side's
//!    first or last transfers, not the middle).
//! 2. A step repeats its schedule: where a rank has as many open sends (receives) in every step,
//!    the k-th of a step goes to the rank a pair taken in any step shows for that place.
//! 3. A stage talks to the same peers all run: a side with a candidate among the pairs of ranks
//!    shown talking keeps only those.
//!
//! Where the pipeline schedule's runtime names the action each side was posted in
//! (`torch.distributed.pipelining`: `PP:1SEND_F0`, [`HostTransfer::pipeline`]), a send's
//! candidates are only the receives of the same microbatch's tensor at the next stage (the
//! previous one, backward): on four stages interleaved, a rank talks to two ranks each way with
//! several transfers in flight, and without the actions most stayed open.
//!
//! 2 and 3 narrow the candidates only where a matching as large remains: where it would not,
//! what was shown is not all of it, and nothing is narrowed. What is still open stays
//! unmatched, with its reason.
//!
//! Each rank's times are read on the clock its host was placed on ([`PairingClock`]): one
//! host's ranks share its clock; across hosts, the transfers themselves place each host's
//! clock against the others' ([`super::transfer_clocks`]), and a side pairs only with sides
//! of its group of placed hosts (a rank whose host was not placed keeps its sides open: paired
//! among one host's ranks alone, a transfer whose other side is on another host would meet a
//! stranger).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::RankGraph;
use super::matching::{CollectiveInstance, GroupSource, HostTransfer, Peer, UNPAIRED_TRANSFERS};
use super::transfer_clocks::PairingClock;

/// How far two sides' spans may miss each other and still count as overlapping: the clock
/// alignment's own tolerance.
const TOLERANCE_NS: i64 = super::CONSTRAINT_TOLERANCE_NS;

/// Receives one send may overlap and still be weighed: an asynchronous schedule's spans overlap
/// hundreds (`torch.distributed.pipelining`'s interleaved 1F1B on four stages, up to about a
/// thousand); past it, the send stays open.
const MAX_CANDIDATES: usize = 2048;

/// Candidate pairs weighed at most over the job (each a few bytes in the matching and its
/// components): past it, every transfer stays open rather than the pairing outgrow a replay.
const MAX_EDGES: usize = 1 << 24;

/// One side of a transfer whose peer is not recorded.
struct Side {
    /// Position of its rank among those given.
    rank: usize,
    /// Its place in its rank's list.
    index: usize,
    /// Its order among its rank's open sides of its direction.
    order: u32,
    /// Its place among its rank's open sides of its direction in its step, where the rank has
    /// as many such sides in every step (its schedule repeats).
    slot: Option<u32>,
    /// The group of hosts whose clocks were placed against each other it is read on
    /// ([`PairingClock`]): sides pair only within one.
    component: usize,
    /// Posted and done, on that group's clock.
    from_ns: i64,
    to_ns: i64,
    /// The pipeline schedule's action that posted it ([`HostTransfer::pipeline`]).
    pipeline: Option<stepcast_trace::PipelineTransfer>,
}

/// Each rank's list with the transfers whose peer is not recorded paired where their times
/// pair them (see the module documentation), each rank's times read on its `clocks` entry
/// (a rank without one keeps its transfers open).
pub(crate) fn pair_by_time<'a>(
    ranks: &[RankGraph],
    lists: &[&'a [CollectiveInstance]],
    clocks: &[Option<PairingClock>],
) -> Vec<Cow<'a, [CollectiveInstance]>> {
    let mut sends: Vec<Side> = Vec::new();
    let mut receives: Vec<Side> = Vec::new();
    for (r, list) in lists.iter().enumerate() {
        let Some(clock) = clocks[r] else { continue };
        let base_ns = ranks[r].origin_ns - clock.offset_ns;
        let open: Vec<(usize, &CollectiveInstance, HostTransfer)> = list
            .iter()
            .enumerate()
            .filter(|(_, i)| i.group == UNPAIRED_TRANSFERS)
            .filter_map(|(k, i)| Some((k, i, i.transfer?)))
            .collect();
        // Per direction: the sides of each step, to tell whether every step has as many.
        let mut per_step: [BTreeMap<u64, u32>; 2] = [BTreeMap::new(), BTreeMap::new()];
        for (_, instance, t) in &open {
            if let Some(step) = instance.step {
                *per_step[usize::from(t.sends)].entry(step).or_default() += 1;
            }
        }
        let repeats = per_step.each_ref().map(|counts| {
            let mut counts = counts.values();
            let first = counts.next();
            counts.all(|n| Some(n) == first)
        });
        let mut orders = [0u32; 2];
        let mut slots: [BTreeMap<u64, u32>; 2] = [BTreeMap::new(), BTreeMap::new()];
        for (index, instance, t) in open {
            let direction = usize::from(t.sends);
            let slot = instance.step.filter(|_| repeats[direction]).map(|step| {
                let slot = slots[direction].entry(step).or_default();
                *slot += 1;
                *slot - 1
            });
            let side = Side {
                rank: r,
                index,
                order: orders[direction],
                slot,
                component: clock.component,
                from_ns: base_ns + t.posted_ns,
                to_ns: base_ns + t.done_ns.max(t.posted_ns),
                pipeline: t.pipeline,
            };
            orders[direction] += 1;
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
    let Some(candidates) = overlapping(&sends, &receives) else {
        return borrowed();
    };
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

/// Per send, the receives of other ranks whose spans overlap its own, ascending; none where
/// more than [`MAX_CANDIDATES`] do. `None` where the job's candidates pass [`MAX_EDGES`].
fn overlapping(sends: &[Side], receives: &[Side]) -> Option<Vec<Vec<u32>>> {
    let index = SpanIndex::new(receives.iter().map(|b| (b.from_ns, b.to_ns)));
    let mut edges = 0usize;
    let mut candidates = Vec::with_capacity(sends.len());
    for a in sends {
        let mut found: Vec<u32> = index
            .overlapping(a.from_ns, a.to_ns)
            .filter(|&b| {
                let side = &receives[b as usize];
                side.rank != a.rank
                    && side.component == a.component
                    && a.pipeline
                        .zip(side.pipeline)
                        .is_none_or(|(s, r)| s.pairs_with(&r))
            })
            .take(MAX_CANDIDATES + 1)
            .collect();
        if found.len() > MAX_CANDIDATES {
            found.clear();
        }
        found.sort_unstable();
        edges += found.len();
        if edges > MAX_EDGES {
            return None;
        }
        candidates.push(found);
    }
    Some(candidates)
}

/// Spans (a side's posted and done) indexed by their starts, to find those a span overlaps
/// (`ranks::transfer_clocks` weighs pairs across hosts with it too).
pub(super) struct SpanIndex {
    /// The spans' indices by start.
    by_from: Vec<u32>,
    from_ns: Vec<i64>,
    to_ns: Vec<i64>,
    longest_ns: i64,
}

impl SpanIndex {
    pub(super) fn new(spans: impl Iterator<Item = (i64, i64)>) -> SpanIndex {
        let (from_ns, to_ns): (Vec<i64>, Vec<i64>) = spans.unzip();
        let mut by_from: Vec<u32> = (0..from_ns.len() as u32).collect();
        by_from.sort_by_key(|&b| from_ns[b as usize]);
        let longest_ns = from_ns
            .iter()
            .zip(&to_ns)
            .map(|(from, to)| to - from)
            .max()
            .unwrap_or(0);
        SpanIndex {
            by_from,
            from_ns,
            to_ns,
            longest_ns,
        }
    }

    /// The spans that overlap `from_ns..=to_ns` within [`TOLERANCE_NS`], by start.
    pub(super) fn overlapping(&self, from_ns: i64, to_ns: i64) -> impl Iterator<Item = u32> + '_ {
        let starts = |b: &u32| self.from_ns[*b as usize];
        let lo = self
            .by_from
            .partition_point(|b| starts(b) < from_ns - TOLERANCE_NS - self.longest_ns);
        let hi = self
            .by_from
            .partition_point(|b| starts(b) <= to_ns + TOLERANCE_NS);
        self.by_from[lo..hi]
            .iter()
            .copied()
            .filter(move |&b| self.to_ns[b as usize] >= from_ns - TOLERANCE_NS)
    }
}

/// Per send, the receive it is paired with (see the module documentation): the pairs every
/// maximum matching of `candidates` holds, the order between two ranks kept, then the order
/// between two ranks wherever which sides go between them is known, then each step's schedule
/// and the pairs of ranks shown talking preferred where that keeps the matching as large.
fn forced_pairs(sends: &[Side], receives: &[Side], candidates: Vec<Vec<u32>>) -> Vec<Option<u32>> {
    let mut pairing = Pairing {
        sends,
        receives,
        candidates,
        send_mate: vec![None; sends.len()],
        receive_mate: vec![None; receives.len()],
        between: BTreeMap::new(),
    };
    loop {
        let matching = Matching::maximum(&pairing.candidates, receives.len());
        let forced = matching.forced(&pairing.candidates);
        if pairing.take(forced) > 0 || pairing.take(pairing.in_order_between_known()) > 0 {
            continue;
        }
        // Nothing more is certain: keep each side to the peer its place in the step's schedule
        // was shown to have, then to the pairs of ranks shown talking, where that keeps a
        // matching as large.
        let narrowed = [pairing.keep_to_schedule(), pairing.keep_to_shown()]
            .into_iter()
            .find(|restricted| {
                *restricted != pairing.candidates
                    && Matching::maximum(restricted, receives.len()).size >= matching.size
            });
        match narrowed {
            Some(restricted) => pairing.candidates = restricted,
            None => return pairing.send_mate,
        }
    }
}

/// The pairing's state: what each side may still pair with, and the pairs taken.
struct Pairing<'s> {
    sends: &'s [Side],
    receives: &'s [Side],
    /// Per send, its receives still possible.
    candidates: Vec<Vec<u32>>,
    send_mate: Vec<Option<u32>>,
    receive_mate: Vec<Option<u32>>,
    /// (sender's rank, receiver's rank) → the send's order → the receive's order, of the pairs
    /// taken.
    between: BTreeMap<(usize, usize), BTreeMap<u32, u32>>,
}

impl Pairing<'_> {
    /// Takes `pairs` (send, receive) not yet taken, then drops every candidate that would pair
    /// a side twice or break the order between two ranks. How many were new.
    fn take(&mut self, pairs: Vec<(usize, u32)>) -> usize {
        let mut taken = 0;
        for (a, b) in pairs {
            if self.send_mate[a].is_some() || self.receive_mate[b as usize].is_some() {
                continue;
            }
            self.send_mate[a] = Some(b);
            self.receive_mate[b as usize] = Some(a as u32);
            let (send, receive) = (&self.sends[a], &self.receives[b as usize]);
            self.between
                .entry((send.rank, receive.rank))
                .or_default()
                .insert(send.order, receive.order);
            taken += 1;
        }
        if taken > 0 {
            for (a, list) in self.candidates.iter_mut().enumerate() {
                match self.send_mate[a] {
                    Some(b) => *list = vec![b],
                    None => list.retain(|&b| {
                        self.receive_mate[b as usize].is_none()
                            && in_order(&self.between, &self.sends[a], &self.receives[b as usize])
                    }),
                }
            }
        }
        taken
    }

    /// Where every open send of one rank that could go to another can go nowhere else, and
    /// every open receive of that other that could come from it nowhere else (what sides go
    /// between the two is then known), and some pair between them is taken: transfers between
    /// two ranks arrive in the order they were posted, so between two pairs taken as many
    /// sends as receives pair in order, and before the first (after the last) they pair
    /// outward from it, as far as each overlaps (a window cuts one side's first or last
    /// transfers, not the other's). A side with no candidate left is counted on every pair of
    /// its rank, so that a transfer the window or the cap lost breaks the count, never shifts
    /// it.
    fn in_order_between_known(&self) -> Vec<(usize, u32)> {
        let ranks = 1 + self
            .sends
            .iter()
            .chain(self.receives)
            .map(|s| s.rank)
            .max()
            .unwrap_or(0);
        // The ranks each open side may pair with.
        let mut send_peers: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); self.sends.len()];
        let mut receive_peers: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); self.receives.len()];
        for (a, list) in self.candidates.iter().enumerate() {
            if self.send_mate[a].is_none() {
                for &b in list {
                    send_peers[a].insert(self.receives[b as usize].rank);
                    receive_peers[b as usize].insert(self.sends[a].rank);
                }
            }
        }
        let mut sends_of: Vec<Vec<usize>> = vec![Vec::new(); ranks];
        for (a, send) in self.sends.iter().enumerate() {
            sends_of[send.rank].push(a);
        }
        let mut receives_of: Vec<Vec<u32>> = vec![Vec::new(); ranks];
        for (b, receive) in self.receives.iter().enumerate() {
            receives_of[receive.rank].push(b as u32);
        }
        // Whether a side goes between the two ranks (`Some(true)`), does not (`Some(false)`),
        // or might (`None`): paired, or by the ranks it may still pair with.
        let between = |mate: Option<usize>, peers: &BTreeSet<usize>, other: usize| match mate {
            Some(rank) => Some(rank == other),
            None if peers.iter().all(|&r| r == other) => Some(true),
            None if !peers.contains(&other) => Some(false),
            None => None,
        };
        let mut pairs = Vec::new();
        for &(sender, receiver) in self.between.keys() {
            let s: Option<Vec<usize>> = sends_of[sender]
                .iter()
                .filter_map(|&a| {
                    let mate = self.send_mate[a].map(|b| self.receives[b as usize].rank);
                    match between(mate, &send_peers[a], receiver) {
                        Some(true) => Some(Some(a)),
                        Some(false) => None,
                        None => Some(None),
                    }
                })
                .collect();
            let r: Option<Vec<u32>> = receives_of[receiver]
                .iter()
                .filter_map(|&b| {
                    let mate = self.receive_mate[b as usize].map(|a| self.sends[a as usize].rank);
                    match between(mate, &receive_peers[b as usize], sender) {
                        Some(true) => Some(Some(b)),
                        Some(false) => None,
                        None => Some(None),
                    }
                })
                .collect();
            let (Some(s), Some(r)) = (s, r) else {
                continue;
            };
            let place: BTreeMap<u32, usize> = r.iter().enumerate().map(|(k, &b)| (b, k)).collect();
            let anchors: Vec<(usize, usize)> = s
                .iter()
                .enumerate()
                .filter_map(|(i, &a)| Some((i, *place.get(&self.send_mate[a]?)?)))
                .collect();
            let alive = |a: usize, b: u32| self.candidates[a].binary_search(&b).is_ok();
            let (Some(&first), Some(&last)) = (anchors.first(), anchors.last()) else {
                continue;
            };
            // Before the first pair taken, outward from it.
            for (&a, &b) in s[..first.0].iter().rev().zip(r[..first.1].iter().rev()) {
                if !alive(a, b) {
                    break;
                }
                pairs.push((a, b));
            }
            // Between two pairs taken, as many on each side, all in order.
            for w in anchors.windows(2) {
                let (sa, ra) = (&s[w[0].0 + 1..w[1].0], &r[w[0].1 + 1..w[1].1]);
                if sa.len() == ra.len() && sa.iter().zip(ra).all(|(&a, &b)| alive(a, b)) {
                    pairs.extend(sa.iter().copied().zip(ra.iter().copied()));
                }
            }
            // After the last, outward from it.
            for (&a, &b) in s[last.0 + 1..].iter().zip(&r[last.1 + 1..]) {
                if !alive(a, b) {
                    break;
                }
                pairs.push((a, b));
            }
        }
        pairs.retain(|&(a, b)| {
            self.send_mate[a].is_none() && self.receive_mate[b as usize].is_none()
        });
        pairs
    }

    /// The candidates with each side kept to the rank its place in its step's schedule was
    /// shown to talk to by a pair taken (a training step repeats its schedule: the k-th send of
    /// a rank's step goes to the same rank every step), where no two pairs disagree.
    fn keep_to_schedule(&self) -> Vec<Vec<u32>> {
        let mut peer: BTreeMap<(usize, bool, u32), Option<usize>> = BTreeMap::new();
        let mut show = |side: &Side, sends: bool, other: usize| {
            if let Some(slot) = side.slot {
                let shown = peer.entry((side.rank, sends, slot)).or_insert(Some(other));
                if *shown != Some(other) {
                    *shown = None;
                }
            }
        };
        for (a, b) in self.send_mate.iter().enumerate() {
            if let Some(b) = *b {
                let (send, receive) = (&self.sends[a], &self.receives[b as usize]);
                show(send, true, receive.rank);
                show(receive, false, send.rank);
            }
        }
        let allows = |side: &Side, sends: bool, other: usize| {
            side.slot
                .and_then(|slot| peer.get(&(side.rank, sends, slot)).copied().flatten())
                .is_none_or(|p| p == other)
        };
        self.candidates
            .iter()
            .enumerate()
            .map(|(a, list)| {
                let send = &self.sends[a];
                list.iter()
                    .copied()
                    .filter(|&b| {
                        let receive = &self.receives[b as usize];
                        allows(send, true, receive.rank) && allows(receive, false, send.rank)
                    })
                    .collect()
            })
            .collect()
    }

    /// The candidates with each side that has a candidate among the pairs of ranks shown
    /// talking kept to those.
    fn keep_to_shown(&self) -> Vec<Vec<u32>> {
        let shown: BTreeSet<(usize, usize)> = self.between.keys().copied().collect();
        let is_shown = |a: usize, b: u32| {
            shown.contains(&(self.sends[a].rank, self.receives[b as usize].rank))
        };
        let mut receive_has_shown = vec![false; self.receives.len()];
        for (a, list) in self.candidates.iter().enumerate() {
            for &b in list {
                if is_shown(a, b) {
                    receive_has_shown[b as usize] = true;
                }
            }
        }
        self.candidates
            .iter()
            .enumerate()
            .map(|(a, list)| {
                let send_has_shown = list.iter().any(|&b| is_shown(a, b));
                list.iter()
                    .copied()
                    .filter(|&b| {
                        is_shown(a, b) || (!send_has_shown && !receive_has_shown[b as usize])
                    })
                    .collect()
            })
            .collect()
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
