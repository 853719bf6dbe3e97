//! How far each host's clock is off, read from the transfers whose peers are not recorded, so
//! that they can be paired by time across hosts ([`super::timed_transfers`]).
//!
//! Traced without `record_shapes`, a gloo transfer names no peer; its two sides overlap, each
//! from its posting op's start to its range's end (gloo sends only once the receive is posted).
//! Across hosts the clocks differ by an offset nothing recorded gives: the hosts' realtime
//! clocks agree only to what keeps them (milliseconds under NTP), and where no matched
//! collective ties a host to the others, the collectives cannot tell it either. The
//! transfers can. Read a host's clock `d` later and a send there overlaps a receive elsewhere
//! for `d` in one interval; as `d` sweeps, the most transfers that can be paired at once (a
//! maximum matching of the overlap graph) peaks only around the true offset, where every
//! side whose other side the window holds finds it. Off it, the ranks' transfers no longer
//! all fit (each side ends when its data has gone or come): on a real job of two hosts
//! (`pp2dp2-2hosts-noshapes`, one physical clock) all 96 transfers across them fit at once
//! only within ±50 µs of the true offset, 0 (offsets tried 50 µs apart over ±20 ms); 93 at
//! 100 µs from it, at most 87 from 200 µs on, 70 from 5 ms on.
//!
//! Hosts join one at a time: against the hosts placed so far (the first rank's first), the
//! host whose transfers add the most pairs joins at the middle of the offsets where they do,
//! only where those offsets are one interval inside the range searched, the pairs leave
//! nearly no side of the placed hosts and the host single, and no other host adds half as
//! many. Otherwise nothing joins, and the next host starts a group of its own; a group whose
//! transfers leave many of its sides single keeps them all open (their other sides are
//! elsewhere, and paired within the group they would meet strangers). The last rule is what
//! a clock per rank needs (traces that record no host name): a replica of a rank's partner
//! runs the partner's schedule in lockstep and fits nearly as well, so nothing joins there,
//! and nothing is paired, rather than a replica. The offsets serve the pairing only: the
//! clock alignment then solves them from the pairs, with the collectives.

use std::collections::{BTreeMap, BTreeSet};

use super::RankGraph;
use super::matching::{CollectiveInstance, UNPAIRED_TRANSFERS};
use super::timed_transfers::SpanIndex;

/// Where a rank's open transfer sides are read when they are paired by time: its group of
/// hosts whose clocks were placed against each other, and its host's offset there (the
/// clock reads `offset_ns` late: aligned = recorded − offset, as the clock alignment's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PairingClock {
    pub component: usize,
    pub offset_ns: i64,
}

/// How far a host's clock may be from the others' and still be found: realtime clocks kept by
/// NTP agree to milliseconds, by PTP to microseconds; a second leaves room for a poorly kept
/// one without weighing every transfer of a long window against every other.
const MAX_HOST_OFFSET_NS: i64 = 1_000_000_000;

/// How far two sides' spans may miss each other and still count as overlapping: the clock
/// alignment's own tolerance, as in the pairing.
const TOLERANCE_NS: i64 = super::CONSTRAINT_TOLERANCE_NS;

/// Pairs of sides across hosts weighed in one sweep at most.
const MAX_SWEEP_EDGES: usize = 1 << 20;

/// Edges the matchings of every sweep may scan in all: past it, the hosts' offsets are not
/// read from the transfers (each host's transfers stay unpaired), rather than the search
/// outgrow a replay.
const MAX_WORK: u64 = 1 << 29;

/// A component of hosts keeps its transfers paired by time only where they leave at most one
/// in this many of its sides single (a window cuts a few transfers' other sides).
const SINGLE_SHARE: usize = 20;

/// One open side: a send or a receive whose peer is not recorded.
#[derive(Clone, Copy, Debug)]
struct OpenSide {
    rank: usize,
    sends: bool,
    /// Posted and done, on its host's recorded clock (absolute).
    from_ns: i64,
    to_ns: i64,
    /// The pipeline schedule's action that posted it, where named.
    pipeline: Option<stepcast_trace::PipelineTransfer>,
}

impl OpenSide {
    /// Whether this send and `receive` may be one transfer, as far as the pipeline schedule's
    /// actions tell (anything, where either has none).
    fn may_pair(&self, receive: &OpenSide) -> bool {
        self.rank != receive.rank
            && self
                .pipeline
                .zip(receive.pipeline)
                .is_none_or(|(s, r)| s.pairs_with(&r))
    }
}

/// Per rank, where its open sides are paired ([`PairingClock`]); `None` for a rank with none.
/// Ranks that share one clock share it all: nothing is searched. `None` overall where the
/// search passes its bounds (then no transfer is paired across clocks, nor within one: a
/// transfer whose other side is on another host would meet only strangers on its own).
pub(crate) fn pairing_clocks(
    ranks: &[RankGraph],
    lists: &[&[CollectiveInstance]],
    clock: &[usize],
) -> Option<Vec<Option<PairingClock>>> {
    let shared = PairingClock {
        component: 0,
        offset_ns: 0,
    };
    if clock.iter().all(|&c| c == clock[0]) {
        return Some(vec![Some(shared); ranks.len()]);
    }
    // Each host's open sides (hosts by the first rank on their clock).
    let mut hosts: BTreeMap<usize, Vec<OpenSide>> = BTreeMap::new();
    for (r, list) in lists.iter().enumerate() {
        let origin_ns = ranks[r].origin_ns;
        for instance in list.iter().filter(|i| i.group == UNPAIRED_TRANSFERS) {
            let Some(t) = instance.transfer else { continue };
            hosts.entry(clock[r]).or_default().push(OpenSide {
                rank: r,
                sends: t.sends,
                from_ns: origin_ns + t.posted_ns,
                to_ns: origin_ns + t.done_ns.max(t.posted_ns),
                pipeline: t.pipeline,
            });
        }
    }
    let mut work = 0u64;
    let mut host_sides: BTreeMap<usize, Sides> = BTreeMap::new();
    for (&host, sides) in &hosts {
        host_sides.insert(host, Sides::of(sides, &mut work)?);
    }
    let mut placed: BTreeMap<usize, PairingClock> = BTreeMap::new();
    let mut component = 0;
    // The sides of the hosts placed in the current component, on its clock.
    let mut joined: Vec<OpenSide> = Vec::new();
    // Components whose transfers leave too many of their sides single: their other sides are
    // elsewhere, and paired within the component those would meet strangers.
    let mut open: BTreeSet<usize> = BTreeSet::new();
    loop {
        let next = hosts.keys().find(|h| !placed.contains_key(h)).copied();
        if !joined.is_empty() {
            // The component's own pairs, whatever the next host's offset.
            let within = Sides::of(&joined, &mut work)?;
            let mut matching = DynamicMatching::new(within.sends.len(), within.receives.len());
            within.insert_into(&mut matching, 0, 0);
            while matching.augment(&mut work) {}
            // Per host, its peak.
            let mut peaks: Vec<(usize, Peak)> = Vec::new();
            for (&host, sides) in host_sides.iter().filter(|(h, _)| !placed.contains_key(h)) {
                if let Some(peak) = peak_offset(&within, &matching, sides, &mut work)? {
                    peaks.push((host, peak));
                }
            }
            peaks.sort_by_key(|(host, peak)| (std::cmp::Reverse(peak.added), *host));
            // The host that adds the most pairs joins where it leaves (nearly) no side of the
            // component and the host single, at one interval of offsets, and no other host
            // comes close: a host that fits only some sides may be fitting those that go to a
            // host not yet placed, by chance, and replicas of one stage run one schedule in
            // lockstep, so that one may fit where its twin's partner does.
            let best = match peaks[..] {
                [(host, peak), ..]
                    if (peak.sides - 2 * peak.pairs) * SINGLE_SHARE <= peak.sides
                        && peaks
                            .get(1)
                            .is_none_or(|(_, next)| 2 * next.added < peak.added) =>
                {
                    peak.offset_ns.map(|offset_ns| (host, offset_ns))
                }
                _ => None,
            };
            if let Some((host, offset_ns)) = best {
                placed.insert(
                    host,
                    PairingClock {
                        component,
                        offset_ns,
                    },
                );
                joined.extend(hosts[&host].iter().map(|s| OpenSide {
                    from_ns: s.from_ns - offset_ns,
                    to_ns: s.to_ns - offset_ns,
                    ..*s
                }));
                continue;
            }
            let single = joined.len() - 2 * matching.size;
            if single * SINGLE_SHARE > joined.len() {
                open.insert(component);
            }
            component += 1;
            joined.clear();
        }
        let Some(first) = next else { break };
        placed.insert(
            first,
            PairingClock {
                component,
                offset_ns: 0,
            },
        );
        joined.extend(hosts[&first].iter().copied());
    }
    Some(
        clock
            .iter()
            .map(|host| {
                placed
                    .get(host)
                    .copied()
                    .filter(|p| !open.contains(&p.component))
            })
            .collect(),
    )
}

/// Sides on one clock, sends and receives apart, with the pairs of them that overlap.
struct Sides {
    sends: Vec<OpenSide>,
    receives: Vec<OpenSide>,
    /// Per send, the receives (by index) its span overlaps.
    overlaps: Vec<Vec<u32>>,
}

impl Sides {
    /// `None` past the bounds.
    fn of(sides: &[OpenSide], work: &mut u64) -> Option<Sides> {
        let sends: Vec<OpenSide> = sides.iter().filter(|s| s.sends).copied().collect();
        let receives: Vec<OpenSide> = sides.iter().filter(|s| !s.sends).copied().collect();
        let index = SpanIndex::new(receives.iter().map(|r| (r.from_ns, r.to_ns)));
        let mut overlaps = Vec::with_capacity(sends.len());
        for send in &sends {
            let list: Vec<u32> = index
                .overlapping(send.from_ns, send.to_ns)
                .filter(|&b| send.may_pair(&receives[b as usize]))
                .collect();
            *work += list.len() as u64;
            if *work > MAX_WORK {
                return None;
            }
            overlaps.push(list);
        }
        Some(Sides {
            sends,
            receives,
            overlaps,
        })
    }

    fn len(&self) -> usize {
        self.sends.len() + self.receives.len()
    }

    /// Adds its pairs to `matching`, its sends from `first_send` on, its receives from
    /// `first_receive`.
    fn insert_into(&self, matching: &mut DynamicMatching, first_send: usize, first_receive: usize) {
        for (a, list) in self.overlaps.iter().enumerate() {
            for &b in list {
                matching.insert((first_send + a) as u32, (first_receive + b as usize) as u32);
            }
        }
    }
}

/// Where a host's clock fits the hosts placed: the offset and the pairs it makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Peak {
    /// Transfers of the component and the host that pair at once there (a maximum matching's
    /// size), of `sides` sides in all: `added` more than within each alone.
    pairs: usize,
    added: usize,
    sides: usize,
    /// The middle of the one interval of offsets at which they do (`None`: several, or one
    /// reaching the edge of the range searched).
    offset_ns: Option<i64>,
}

/// Sweeps the host's offset over ±[`MAX_HOST_OFFSET_NS`] and returns where the most transfers
/// pair at once, the placed sides (`joined`, aligned, `matching` a maximum matching of their
/// own pairs) and the host's (`host`, on its recorded clock) together: `Some(None)` where no
/// pair across adds to those within each; `None` past the bounds.
fn peak_offset(
    joined: &Sides,
    matching: &DynamicMatching,
    host: &Sides,
    work: &mut u64,
) -> Option<Option<Peak>> {
    // Sends on the left and receives on the right, the placed first.
    let (hs, hr) = (joined.sends.len(), joined.receives.len());
    let mut matching = matching.grown(hs + host.sends.len(), hr + host.receives.len());
    // The host's own pairs: on its clock, whatever its offset.
    host.insert_into(&mut matching, hs, hr);
    while matching.augment(work) {}
    let within = matching.size;
    // The offsets at which each pair across overlaps. With the host's side `x` on its own
    // clock and the placed side `y` aligned, they do when `x.from − d ≤ y.to + tol` and
    // `y.from ≤ x.to − d + tol`.
    let mut events: Vec<(i64, bool, u32, u32)> = Vec::new();
    let mut across =
        |host_sides: &[OpenSide], host_first: usize, placed: &[OpenSide], host_sends: bool| {
            let index = SpanIndex::new(placed.iter().map(|y| (y.from_ns, y.to_ns)));
            for (i, x) in host_sides.iter().enumerate() {
                let candidates =
                    index.overlapping(x.from_ns - MAX_HOST_OFFSET_NS, x.to_ns + MAX_HOST_OFFSET_NS);
                for k in candidates.map(|k| k as usize) {
                    let y = &placed[k];
                    let from = (x.from_ns - y.to_ns - TOLERANCE_NS).max(-MAX_HOST_OFFSET_NS);
                    let to = (x.to_ns - y.from_ns + TOLERANCE_NS).min(MAX_HOST_OFFSET_NS);
                    let (send, receive, may_pair) = if host_sends {
                        (host_first + i, k, x.may_pair(y))
                    } else {
                        (k, host_first + i, y.may_pair(x))
                    };
                    if from <= to && may_pair {
                        events.push((from, false, send as u32, receive as u32));
                        events.push((to, true, send as u32, receive as u32));
                    }
                }
            }
        };
    across(&host.sends, hs, &joined.receives, true);
    across(&host.receives, hr, &joined.sends, false);
    if events.len() > 2 * MAX_SWEEP_EDGES {
        return None;
    }
    // At one offset, the edges starting there join before those ending there leave (the
    // intervals are closed).
    events.sort_unstable();
    // The maximum matching's size over the offsets, as (from, to, size) runs.
    let mut runs: Vec<(i64, i64, usize)> = Vec::new();
    let mut k = 0;
    while k < events.len() {
        let at = events[k].0;
        while k < events.len() && events[k].0 == at && !events[k].1 {
            matching.insert(events[k].2, events[k].3);
            // One edge more raises the maximum by one at most.
            matching.augment(work);
            k += 1;
        }
        runs.push((at, at, matching.size));
        while k < events.len() && events[k].0 == at {
            matching.remove(events[k].2, events[k].3, work);
            k += 1;
        }
        if let Some(&(next, _, _, _)) = events.get(k) {
            runs.push((at, next, matching.size));
        }
        if *work > MAX_WORK {
            return None;
        }
    }
    let most = runs.iter().map(|r| r.2).max().unwrap_or(within);
    if most == within {
        return Some(None);
    }
    // The offsets at which the most pair: one interval, inside the range searched.
    let mut peaks: Vec<(i64, i64)> = Vec::new();
    for &(from, to, _) in runs.iter().filter(|r| r.2 == most) {
        match peaks.last_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(to),
            _ => peaks.push((from, to)),
        }
    }
    let offset_ns = match peaks[..] {
        [(from, to)] if from > -MAX_HOST_OFFSET_NS && to < MAX_HOST_OFFSET_NS => {
            Some(from + (to - from) / 2)
        }
        _ => None,
    };
    Some(Some(Peak {
        pairs: most,
        added: most - within,
        sides: joined.len() + host.len(),
        offset_ns,
    }))
}

const NONE: u32 = u32::MAX;

/// A maximum matching of a bipartite graph whose edges come and go: one augmenting path
/// restores it after each change (an edge added raises the maximum by one at most, one
/// removed lowers it by one at most).
#[derive(Clone)]
struct DynamicMatching {
    adjacency: Vec<Vec<u32>>,
    left: Vec<u32>,
    right: Vec<u32>,
    size: usize,
    /// Per right vertex, the search that last reached it.
    seen: Vec<u32>,
    search: u32,
}

impl DynamicMatching {
    fn new(left: usize, right: usize) -> Self {
        DynamicMatching {
            adjacency: vec![Vec::new(); left],
            left: vec![NONE; left],
            right: vec![NONE; right],
            size: 0,
            seen: vec![0; right],
            search: 0,
        }
    }

    /// This matching with vertices added, on neither side matched.
    fn grown(&self, left: usize, right: usize) -> Self {
        let mut grown = self.clone();
        grown.adjacency.resize(left, Vec::new());
        grown.left.resize(left, NONE);
        grown.right.resize(right, NONE);
        grown.seen.resize(right, 0);
        grown
    }

    fn insert(&mut self, l: u32, r: u32) {
        self.adjacency[l as usize].push(r);
    }

    /// Removes the edge and, where it was matched, restores a maximum matching.
    fn remove(&mut self, l: u32, r: u32, work: &mut u64) {
        let list = &mut self.adjacency[l as usize];
        if let Some(k) = list.iter().position(|&x| x == r) {
            list.swap_remove(k);
        }
        if self.left[l as usize] == r {
            self.left[l as usize] = NONE;
            self.right[r as usize] = NONE;
            self.size -= 1;
            self.augment(work);
        }
    }

    /// Finds one augmenting path from any free left vertex and flips it: whether it found one.
    fn augment(&mut self, work: &mut u64) -> bool {
        self.search += 1;
        let search = self.search;
        // Depth-first, iteratively: per left vertex on the path, the next edge to try.
        let mut stack: Vec<(u32, usize)> = Vec::new();
        for start in 0..self.left.len() {
            if self.left[start] != NONE {
                continue;
            }
            stack.clear();
            stack.push((start as u32, 0));
            while let Some(&mut (l, ref mut next)) = stack.last_mut() {
                let Some(&r) = self.adjacency[l as usize].get(*next) else {
                    stack.pop();
                    continue;
                };
                *next += 1;
                *work += 1;
                if self.seen[r as usize] == search {
                    continue;
                }
                self.seen[r as usize] = search;
                let mate = self.right[r as usize];
                if mate != NONE {
                    stack.push((mate, 0));
                    continue;
                }
                // Free: flip the path, each left vertex to the right one it went through.
                for &(l, next) in stack.iter().rev() {
                    let r = self.adjacency[l as usize][next - 1];
                    self.left[l as usize] = r;
                    self.right[r as usize] = l;
                }
                self.size += 1;
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_matching_follows_edges_added_and_removed() {
        let mut work = 0;
        let mut m = DynamicMatching::new(2, 2);
        m.insert(0, 0);
        assert!(m.augment(&mut work));
        m.insert(1, 0);
        assert!(!m.augment(&mut work), "both want receive 0");
        m.insert(1, 1);
        assert!(m.augment(&mut work));
        assert_eq!(m.size, 2);
        m.remove(0, 0, &mut work);
        assert_eq!(m.size, 1, "send 0 has no edge left");
        m.insert(0, 1);
        assert!(
            m.augment(&mut work),
            "send 1 moves to receive 0, send 0 takes 1"
        );
        assert_eq!((m.left[0], m.left[1]), (1, 0));
    }

    fn side(rank: usize, sends: bool, from_ns: i64, to_ns: i64) -> OpenSide {
        OpenSide {
            rank,
            sends,
            from_ns,
            to_ns,
            pipeline: None,
        }
    }

    #[test]
    fn a_host_joins_where_all_its_transfers_fit_at_once() {
        // Rank 0 sends three times; rank 1 (another host, its clock 5 ms late) receives each,
        // posted 1 ms early, done 0.1 ms after the send was posted.
        let ms = 1_000_000;
        let mut joined = Vec::new();
        let mut host = Vec::new();
        for (k, at) in [10 * ms, 17 * ms, 31 * ms].into_iter().enumerate() {
            joined.push(side(0, true, at, at + ms / 5));
            let late = at + 5 * ms + k as i64 * 1_000;
            host.push(side(1, false, late - ms, late + ms / 10));
        }
        let mut work = 0;
        let joined = Sides::of(&joined, &mut work).expect("within bounds");
        let host = Sides::of(&host, &mut work).expect("within bounds");
        let matching = DynamicMatching::new(joined.sends.len(), joined.receives.len());
        let peak = peak_offset(&joined, &matching, &host, &mut work).flatten();
        let peak = peak.expect("a peak");
        assert_eq!((peak.pairs, peak.added, peak.sides), (3, 3, 6));
        // Every transfer fits from 3.8 ms (the latest receive posted as the send's range ends)
        // to 5.1 ms (the earliest done as its send was posted): the middle of that.
        let offset_ns = peak.offset_ns.expect("one interval");
        assert!((offset_ns - 4_451_000).abs() < 2_000, "{peak:?}");
    }
}
