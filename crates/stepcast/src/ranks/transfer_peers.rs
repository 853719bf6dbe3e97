//! Whom a gloo point-to-point transfer goes to. Its posting op (`c10d::send`, `c10d::recv_`)
//! records the other side by its rank *in the process group the transfer runs on*
//! (`torch.distributed` turns the world rank a program passes into that), and not which group
//! that is: on the world group it is the peer's world rank, on a subgroup its index among the
//! group's members (`torch.distributed.pipelining` sends on the device mesh's `pp` group, so
//! on a mesh of two replicas stage 1's rank 3 names its stage-0 peer, rank 1, as `0`).
//!
//! A rank's transfers with one recorded peer index could go to that index in any group it
//! declared (`pg_config`, whose `ranks` PyTorch lists in group-rank order), itself excluded:
//! no rank sends to itself. A candidate stays only while the peer it names, where it is among
//! the ranks given, has transfers the other way that could come from this rank, and as many as
//! the transfers already placed between the two need (every send has one receive); pruning
//! repeats until nothing changes. One candidate left: the transfer's pair. Where several
//! remain, the whole job is weighed: of the assignments of those transfers under which every
//! two ranks' sends one way number the receives the other, a transfer takes the peer they all
//! agree on. None, or no agreement: the index read as a world rank, as recorded, so that a
//! transfer the trace cannot place is matched as before or reported unmatched, never paired
//! by a guess.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::RankGraph;
use super::matching::{CollectiveInstance, GroupSource, Peer};

/// One rank's transfers with one direction and one recorded peer index: (position of the rank
/// among those given, whether it sends, the index).
type Key = (usize, bool, i64);

/// Each rank's list with its transfers' pairs resolved (see the module documentation): the
/// list borrowed where no pair changes, else a copy whose transfers carry their resolved
/// group (`p2p SENDER->RECEIVER`) and their order within it.
pub(crate) fn resolve_transfer_peers<'a>(
    ranks: &[RankGraph],
    lists: &[&'a [CollectiveInstance]],
) -> Vec<Cow<'a, [CollectiveInstance]>> {
    let peers = resolved_peers(ranks, lists);
    ranks
        .iter()
        .zip(lists)
        .enumerate()
        .map(|(r, (rank, &list))| {
            let pair_of = |instance: &CollectiveInstance| {
                let peer = instance.peer?;
                let other = *peers.get(&(r, peer.sends, peer.rank))?;
                Some(if peer.sends {
                    (rank.rank, other)
                } else {
                    (other, rank.rank)
                })
            };
            let changed = list.iter().any(|i| {
                i.source == GroupSource::PeerOrder
                    && pair_of(i).is_some_and(|(s, d)| Peer::group(s, d) != i.group)
            });
            if !changed {
                return Cow::Borrowed(list);
            }
            // Two recorded indices may name one peer (its world rank on the world group, its
            // index on a subgroup): a pair's order counts both, in the list's (time) order.
            let mut next: BTreeMap<String, u32> = BTreeMap::new();
            let resolved = list
                .iter()
                .map(|instance| {
                    let mut instance = instance.clone();
                    if instance.source == GroupSource::PeerOrder {
                        if let Some((sender, receiver)) = pair_of(&instance) {
                            instance.group = Peer::group(sender, receiver);
                        }
                        let seq = next.entry(instance.group.clone()).or_insert(0);
                        instance.seq = *seq;
                        *seq += 1;
                    }
                    instance
                })
                .collect();
            Cow::Owned(resolved)
        })
        .collect()
}

/// The world rank of each rank's transfers' peer, per [`Key`], where exactly one candidate is
/// left; keys left out keep the recorded reading.
fn resolved_peers(ranks: &[RankGraph], lists: &[&[CollectiveInstance]]) -> BTreeMap<Key, i64> {
    let position: BTreeMap<i64, usize> = ranks
        .iter()
        .enumerate()
        .map(|(r, rank)| (rank.rank, r))
        .collect();
    let mut candidates: BTreeMap<Key, BTreeSet<i64>> = BTreeMap::new();
    let mut transfers: BTreeMap<Key, usize> = BTreeMap::new();
    for (r, (rank, list)) in ranks.iter().zip(lists).enumerate() {
        for peer in list.iter().filter_map(|i| i.peer) {
            let key = (r, peer.sends, peer.rank);
            candidates
                .entry(key)
                .or_insert_with(|| peer_candidates(rank, peer.rank));
            *transfers.entry(key).or_default() += 1;
        }
    }
    // Only where some index could name another peer than its world reading is there anything
    // to prune (every job whose transfers run on the world group).
    if candidates
        .iter()
        .all(|(&(_, _, index), c)| c.len() == 1 && c.contains(&index))
    {
        return BTreeMap::new();
    }
    while prune(ranks, &position, &transfers, &mut candidates) {}
    let mut resolved: BTreeMap<Key, i64> = candidates
        .iter()
        .filter_map(|(&key, c)| match c.len() {
            1 => c.first().map(|&peer| (key, peer)),
            _ => None,
        })
        .collect();
    resolved.extend(agreed_by_every_balance(
        ranks,
        &position,
        &transfers,
        &candidates,
    ));
    resolved
}

/// Assignments of the keys pruning left several candidates tried at most.
const MAX_ASSIGNMENTS: usize = 100_000;

/// Balanced assignments kept at most (past it, only the keys they all agree on count).
const MAX_BALANCED: usize = 64;

/// Where pruning leaves keys with several candidates (each check sees one pair of ranks at a
/// time; a 3-D job's symmetric groups let a stage-0 rank's index name a data-parallel peer as
/// well as its pipeline peer until the whole job is weighed): every assignment of them under
/// which, between every two ranks given, each direction's sends number that direction's
/// receives. The keys on which every such assignment agrees, with their peer; none where no
/// assignment balances, or too many would have to be tried.
fn agreed_by_every_balance(
    ranks: &[RankGraph],
    position: &BTreeMap<i64, usize>,
    transfers: &BTreeMap<Key, usize>,
    candidates: &BTreeMap<Key, BTreeSet<i64>>,
) -> BTreeMap<Key, i64> {
    let open: Vec<(Key, Vec<i64>)> = candidates
        .iter()
        .filter(|(_, c)| c.len() > 1)
        .map(|(&key, c)| (key, c.iter().copied().collect()))
        .collect();
    let tries = open
        .iter()
        .try_fold(1usize, |n, (_, c)| n.checked_mul(c.len()))
        .filter(|&n| n <= MAX_ASSIGNMENTS);
    if open.is_empty() || tries.is_none() {
        return BTreeMap::new();
    }
    // The flows every key with one candidate fixes: (sender, receiver) → (sent, received),
    // counted on each side.
    let mut fixed: BTreeMap<(i64, i64), (usize, usize)> = BTreeMap::new();
    let flow = |flows: &mut BTreeMap<(i64, i64), (usize, usize)>, key: Key, peer: i64| {
        let (r, sends, _) = key;
        let me = ranks[r].rank;
        let n = transfers[&key];
        if sends {
            flows.entry((me, peer)).or_default().0 += n;
        } else {
            flows.entry((peer, me)).or_default().1 += n;
        }
    };
    for (&key, c) in candidates {
        if let (1, Some(&peer)) = (c.len(), c.first()) {
            flow(&mut fixed, key, peer);
        }
    }
    let balanced = |flows: &BTreeMap<(i64, i64), (usize, usize)>| {
        flows
            .iter()
            .all(|(&(sender, receiver), &(sent, received))| {
                // A side not among the ranks given has no count to weigh.
                !(position.contains_key(&sender) && position.contains_key(&receiver))
                    || sent == received
            })
    };
    let mut solutions: Vec<Vec<i64>> = Vec::new();
    for code in 0..tries.unwrap_or(0) {
        let mut rest = code;
        let mut flows = fixed.clone();
        let mut picked = Vec::with_capacity(open.len());
        for (key, c) in &open {
            let peer = c[rest % c.len()];
            rest /= c.len();
            flow(&mut flows, *key, peer);
            picked.push(peer);
        }
        if balanced(&flows) {
            solutions.push(picked);
            if solutions.len() > MAX_BALANCED {
                break;
            }
        }
    }
    let Some(first) = solutions.first() else {
        return BTreeMap::new();
    };
    open.iter()
        .enumerate()
        .filter(|&(k, _)| solutions.iter().all(|s| s[k] == first[k]))
        .map(|(k, (key, _))| (*key, first[k]))
        .collect()
}

/// One round of pruning; whether it removed a candidate. A candidate peer among the ranks
/// given stays only while (1) its transfers the other way could come from this rank, and (2)
/// they are enough: each transfer has one counterpart, so the transfers between two ranks one
/// way that are already placed (keys with one candidate left), with this key's, must not
/// outnumber the peer's transfers the other way that could be theirs. A peer not among the
/// ranks given cannot be checked and stays.
fn prune(
    ranks: &[RankGraph],
    position: &BTreeMap<i64, usize>,
    transfers: &BTreeMap<Key, usize>,
    candidates: &mut BTreeMap<Key, BTreeSet<i64>>,
) -> bool {
    // Per (rank, direction, other rank): how many of the rank's transfers could be with the
    // other rank, and how many surely are.
    let mut could: BTreeMap<(usize, bool, i64), usize> = BTreeMap::new();
    let mut placed: BTreeMap<(usize, bool, i64), usize> = BTreeMap::new();
    for (&(r, sends, index), c) in candidates.iter() {
        let n = transfers[&(r, sends, index)];
        for &other in c {
            *could.entry((r, sends, other)).or_default() += n;
        }
        if let [other] = c.iter().copied().collect::<Vec<_>>()[..] {
            *placed.entry((r, sends, other)).or_default() += n;
        }
    }
    let mut changed = false;
    for (&(r, sends, index), c) in candidates.iter_mut() {
        let me = ranks[r].rank;
        let n = transfers[&(r, sends, index)];
        let resolved = c.len() == 1;
        let before = c.len();
        c.retain(|&other| {
            let Some(&p) = position.get(&other) else {
                return true;
            };
            let room = could.get(&(p, !sends, me)).copied().unwrap_or(0);
            let already = placed.get(&(r, sends, other)).copied().unwrap_or(0);
            // A key with one candidate is counted in `placed` already.
            let wanted = if resolved { already } else { already + n };
            room > 0 && wanted <= room
        });
        changed |= c.len() != before;
    }
    changed
}

/// The world ranks a transfer of `rank` whose posting op records peer `index` could go to:
/// that index in each group the rank declares itself a member of, itself excluded. A rank
/// that declares no group: the index as a world rank.
fn peer_candidates(rank: &RankGraph, index: i64) -> BTreeSet<i64> {
    if rank.group_members.is_empty() {
        return BTreeSet::from([index]);
    }
    let Ok(at) = usize::try_from(index) else {
        return BTreeSet::new();
    };
    rank.group_members
        .values()
        .filter(|members| members.contains(&rank.rank))
        .filter_map(|members| members.get(at).copied())
        .filter(|&other| other != rank.rank)
        .collect()
}
