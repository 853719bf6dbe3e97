//! gloo transfers whose peer is not recorded, paired by their times (`ranks::timed_transfers`),
//! held to the peers the same traces record. Each job below was traced with
//! `record_shapes=True` (`testdata/kineto/stepcast/cpu-jobs/`), so its posting ops
//! (`c10d::send`, `c10d::recv_`) name every transfer's peer; with those ops' inputs taken out, as
//! a trace without shapes has them, every pair found by time must be a recorded pair, and the
//! sides left open are unmatched for that reason. Every recorded pair is found: by the times
//! alone where each transfer is posted and waited for in one call (`send`/`recv` from Python:
//! `pp_dp.py`, `tp_pp_dp.py`; and `pipelining`'s plain 1F1B schedule), with the schedule's
//! actions (`PP:1SEND_F0`) where a schedule posts ahead; on one host and across two
//! (`two_hosts.py`: each host's clock placed against the other's by the transfers,
//! `ranks::transfer_clocks`).

use std::collections::BTreeSet;

use stepcast::graph::{BuildOptions, TaskId, build};
use stepcast::ranks::{
    AlignmentStatus, CollectiveMatching, GroupSource, RankGraph, RankId, UnmatchedReason,
    align_clocks, match_collectives, recorded_rank,
};
use stepcast_trace::read_trace;

use crate::testdata;

/// Jobs under `stepcast/cpu-jobs/` whose every recorded pair the times must find.
const JOBS: &[&str] = &[
    "pp2dp2",
    "pp2dp3",
    "tp2pp2dp2",
    "tp2pp2dp2-titan",
    "tp2pp3dp2",
    "pipelining-pp2dp2",
    "pipelining-pp4dp2",
    // Interleaved and zero-bubble schedules post a step's sends and receives ahead and wait
    // later: one side may overlap several others. On two stages each rank talks to one other,
    // and the order between them places every transfer; on four, a rank talks to two each way
    // (the last stage's activations go back to the first), and the schedule's action around
    // each side (`PP:1SEND_F0`: stage, direction, microbatch) says which receive a send goes to.
    "pipelining-interleaved-pp2dp2-fsdp",
    "pipelining-zero-bubble-pp2dp2",
    "pipelining-interleaved-pp4dp2",
    "pipelining-zero-bubble-pp4dp2-fsdp",
    // Two hosts: the transfers are the only tie between them.
    "pp2dp2-2hosts",
    "pipelining-pp2dp2-2hosts",
];

/// The job's ranks in rank order, the transfers' recorded peers taken out where `hide_peers`.
fn ranks_of(job: &str, hide_peers: bool) -> Vec<RankGraph> {
    let dir = testdata(&format!("stepcast/cpu-jobs/{job}"));
    let mut ranks: Vec<RankGraph> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .map(|path| {
            let mut trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
            if hide_peers {
                let posting: Vec<bool> = trace
                    .op_inputs
                    .iter()
                    .map(|(event, _)| {
                        let name = trace.name(trace.events[event.index()].name);
                        name.starts_with("c10d::send") || name.starts_with("c10d::recv")
                    })
                    .collect();
                let mut keep = posting.iter().map(|&p| !p);
                trace.op_inputs.retain(|_| keep.next().unwrap_or(true));
            }
            let rank = recorded_rank(&trace).unwrap_or_else(|| panic!("{}", path.display()));
            let window = build(&trace, &BuildOptions::default());
            RankGraph::new(rank, &trace, window)
        })
        .collect();
    ranks.sort_by_key(|r| r.rank);
    ranks
}

/// The matched collectives of `source`: group and members with their instances.
fn pairs(
    matching: &CollectiveMatching,
    source: GroupSource,
) -> BTreeSet<(String, Vec<(RankId, TaskId)>)> {
    matching
        .matched
        .iter()
        .filter(|c| c.source == source)
        .map(|c| (c.group.clone(), c.members().collect()))
        .collect()
}

#[test]
fn transfers_paired_by_time_are_the_pairs_the_traces_record() {
    for &job in JOBS {
        let recorded = match_collectives(&ranks_of(job, false));
        let timed = match_collectives(&ranks_of(job, true));
        let truth = pairs(&recorded, GroupSource::PeerOrder);
        let found = pairs(&timed, GroupSource::PeerByTime);
        assert!(!truth.is_empty(), "{job}: no recorded transfer");
        assert!(
            recorded.unmatched.is_empty(),
            "{job}: the recorded peers pair every transfer"
        );
        let wrong: Vec<_> = found.difference(&truth).collect();
        assert!(
            wrong.is_empty(),
            "{job}: paired by time, not recorded: {wrong:?}"
        );
        assert_eq!(found.len(), truth.len(), "{job}");
        // The other sides are unmatched for want of a peer, and nothing else changes.
        let open = timed
            .unmatched
            .iter()
            .filter(|u| u.reason == UnmatchedReason::PeerNotRecorded)
            .count();
        assert_eq!(open, 2 * (truth.len() - found.len()), "{job}");
        assert_eq!(timed.unmatched.len(), open, "{job}");
        let collectives = |m: &CollectiveMatching| {
            m.matched
                .iter()
                .filter(|c| !c.source.is_transfer())
                .map(|c| (c.group.clone(), c.members().collect::<Vec<_>>()))
                .collect::<Vec<_>>()
        };
        assert_eq!(collectives(&timed), collectives(&recorded), "{job}");
    }
}

/// The blind recordings without shapes (`cpu-jobs/tp2pp2dp2-noshapes`, `pp3dp2-noshapes`: the
/// bar fixed before recording): every transfer is paired by time, 0 unmatched, and every pair
/// is one the scripts' layout gives: rank = (stage × DP + replica) × TP + tp index, so a rank's
/// neighbour stage is TP × DP ranks away, each way, and every such pair talks.
#[test]
fn blind_jobs_pair_as_their_layout_says() {
    for (job, tp, pp, dp) in [
        ("tp2pp2dp2-noshapes", 2, 2, 2),
        ("pp3dp2-noshapes", 1, 3, 2),
    ] {
        let (ranks, matching) = matched_whole(job);
        let mut talking: BTreeSet<(i64, i64)> = BTreeSet::new();
        let mut transfers = 0;
        for c in matching.matched.iter().filter(|c| c.source.is_transfer()) {
            assert_eq!(c.source, GroupSource::PeerByTime, "{job}");
            let sender = c.sender.expect("a transfer's sender");
            let receiver = c
                .ranks
                .iter()
                .copied()
                .find(|&r| r != sender)
                .expect("receiver");
            let (s, r) = (ranks[sender.index()].rank, ranks[receiver.index()].rank);
            assert_eq!((s - r).abs(), tp * dp, "{job}: {s} -> {r}");
            talking.insert((s, r));
            transfers += 1;
        }
        assert_eq!(
            talking.len() as i64,
            2 * (pp - 1) * tp * dp,
            "{job}: {talking:?}"
        );
        // As many transfers as the job posted sends (each rank's `c10d::send` ops).
        let sends = posted_sends(job);
        assert_eq!(transfers, sends, "{job}");
    }
}

/// The jobs again with every rank read as a host of its own (its own clock, as ranks of
/// traces that record no host name are): each rank's clock could be placed by the transfers
/// alone, one rank at a time, but a replica of a rank's partner (one schedule, in lockstep)
/// fits nearly as well as the partner, so no rank joins another and nothing is paired. What
/// must hold whatever joins: a pair found is a recorded pair.
#[test]
fn transfers_paired_across_a_clock_per_rank_are_the_recorded_pairs() {
    for &job in JOBS {
        let recorded = match_collectives(&ranks_of(job, false));
        let mut ranks = ranks_of(job, true);
        for rank in &mut ranks {
            rank.host_name = Some(format!("host-of-rank-{}", rank.rank));
        }
        let timed = match_collectives(&ranks);
        let truth = pairs(&recorded, GroupSource::PeerOrder);
        let found = pairs(&timed, GroupSource::PeerByTime);
        let wrong: Vec<_> = found.difference(&truth).collect();
        assert!(
            wrong.is_empty(),
            "{job}: paired by time, not recorded: {wrong:?}"
        );
    }
}

/// Jobs of two hosts traced without shapes (`two_hosts.py` under `without_shapes.py`: one
/// physical clock, so the offset between the hosts is known to be 0), whose transfers are the
/// only tie between the hosts: each host's clock is placed by the transfers, every transfer
/// pairs as the layout says (stage s = rank / DP, rank r talking to r ± DP), the clocks are
/// solved with the second host's offset within ±0.5 ms of 0, and nothing is left unmatched.
/// `pp2dp2-2hosts-noshapes` is the job the placing was written on.
#[test]
fn jobs_of_two_hosts_without_shapes_pair_across_the_hosts() {
    for (job, pp, dp) in [
        ("pp2dp2-2hosts-noshapes", 2, 2),
        // Blind (the bar in the folder's README, committed before recording): transfers
        // within each host and across them; `pipelining`'s 1F1B across the hosts.
        ("pp4dp2-2hosts-noshapes", 4, 2),
        ("pipelining-pp2dp2-2hosts-noshapes", 2, 2),
    ] {
        let (ranks, matching) = matched_whole(job);
        let mut talking: BTreeSet<(i64, i64)> = BTreeSet::new();
        for c in matching.matched.iter().filter(|c| c.source.is_transfer()) {
            assert_eq!(c.source, GroupSource::PeerByTime, "{job}");
            let numbers: Vec<i64> = c.ranks.iter().map(|r| ranks[r.index()].rank).collect();
            assert_eq!((numbers[0] - numbers[1]).abs(), dp, "{job}: {numbers:?}");
            talking.insert((numbers[0], numbers[1]));
        }
        assert_eq!(talking.len() as i64, (pp - 1) * dp, "{job}: {talking:?}");
        // As many transfers as the job posted sends (each rank's `c10d::send` ops).
        let transfers = matching
            .matched
            .iter()
            .filter(|c| c.source.is_transfer())
            .count();
        let sends = posted_sends(job);
        assert_eq!(transfers, sends, "{job}");
        let alignment = align_clocks(&ranks, &matching).unwrap_or_else(|e| panic!("{job}: {e}"));
        assert_eq!(alignment.status, AlignmentStatus::Solved, "{job}");
        assert!(alignment.unaligned.is_empty(), "{job}");
        assert_eq!(alignment.violated_constraints, 0, "{job}");
        let hosts: BTreeSet<&str> = ranks
            .iter()
            .filter_map(|r| r.host_name.as_deref())
            .collect();
        assert_eq!(hosts.len(), 2, "{job}: {hosts:?}");
        for (rank, offset_ns) in ranks.iter().zip(&alignment.offsets_ns) {
            assert!(
                offset_ns.abs() <= 500_000,
                "{job}: rank {}'s clock off by {offset_ns} ns",
                rank.rank
            );
        }
    }
}

/// The job's ranks and their matching, which must leave nothing unmatched.
fn matched_whole(job: &str) -> (Vec<RankGraph>, CollectiveMatching) {
    let ranks = ranks_of(job, false);
    let matching = match_collectives(&ranks);
    assert!(
        matching.unmatched.is_empty(),
        "{job}: {:?}",
        matching.unmatched
    );
    (ranks, matching)
}

/// The sends the job's ranks posted: their traces' `c10d::send` ops.
fn posted_sends(job: &str) -> usize {
    let dir = testdata(&format!("stepcast/cpu-jobs/{job}"));
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
        .map(|path| {
            let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
            trace
                .events
                .iter()
                .filter(|e| trace.name(e.name).starts_with("c10d::send"))
                .count()
        })
        .sum()
}

/// The blind recordings of four stages posted ahead without shapes
/// (`pipelining-interleaved-pp4dp2-noshapes`, `pipelining-zero-bubble-pp4dp2-noshapes`, and the
/// first over two hosts: the bars in the folder's README, committed before recording): every
/// transfer paired by time, 0 unmatched, each pair within one replica's pipeline (rank =
/// stage × DP + replica) between neighbouring pipeline ranks or the last and the first (the
/// interleaved schedules' wrap), as many transfers as sends posted, the clocks solved and
/// within ±0.5 ms of the one physical clock they share.
#[test]
fn blind_pipelining_jobs_pair_within_each_replicas_pipeline() {
    let (pp, dp) = (4, 2);
    for job in [
        "pipelining-interleaved-pp4dp2-noshapes",
        "pipelining-zero-bubble-pp4dp2-noshapes",
        // Over two hosts (one physical clock): the actions and the hosts' clocks at once.
        "pipelining-interleaved-pp4dp2-2hosts-noshapes",
    ] {
        let (ranks, matching) = matched_whole(job);
        let mut transfers = 0;
        for c in matching.matched.iter().filter(|c| c.source.is_transfer()) {
            assert_eq!(c.source, GroupSource::PeerByTime, "{job}");
            let numbers: Vec<i64> = c.ranks.iter().map(|r| ranks[r.index()].rank).collect();
            let (a, b) = (numbers[0], numbers[1]);
            assert_eq!(a % dp, b % dp, "{job}: {a} and {b} are not one pipeline");
            let (stage_a, stage_b) = (a / dp, b / dp);
            let neighbours = (stage_a - stage_b).abs() == 1
                || (stage_a.min(stage_b), stage_a.max(stage_b)) == (0, pp - 1);
            assert!(neighbours, "{job}: {a} and {b} are not neighbours");
            transfers += 1;
        }
        assert_eq!(transfers, posted_sends(job), "{job}");
        let alignment = align_clocks(&ranks, &matching).unwrap_or_else(|e| panic!("{job}: {e}"));
        assert_eq!(alignment.status, AlignmentStatus::Solved, "{job}");
        assert_eq!(alignment.violated_constraints, 0, "{job}");
        assert!(
            alignment.offsets_ns.iter().all(|o| o.abs() <= 500_000),
            "{job}: {:?}",
            alignment.offsets_ns
        );
    }
}
