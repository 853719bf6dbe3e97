//! `stepcast.replay-ranks/3`: several ranks' traces replayed as one global graph.
//!
//! The document grows with ranks, not with ranks squared or ranks × collectives: per rank a
//! row of each table, and the pairwise and per-instance detail only for the ranks asked for
//! ([`RankDetail`]).

use serde::Serialize;
use stepcast::ranks::{
    CONSTRAINT_TOLERANCE_NS, ConstraintKind, RankId, RanksReport, StragglerCause,
};

use super::finite;

/// How many tasks of the critical path across ranks are listed, by the time they hold.
pub const TOP_PATH_TASKS: usize = 10;

/// The `replay` document of several ranks (`stepcast replay DIR` or several files).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RanksJson {
    /// Always `stepcast.replay-ranks/3`.
    pub schema: &'static str,
    /// The ranks whose detail (their pairwise ordering constraints, their instance of every
    /// collective) is listed, by rank number: `--ranks`; empty by default.
    pub detail_ranks: Vec<i64>,
    /// Distributions over the ranks.
    pub over_ranks: OverRanksJson,
    /// Every rank's steps, measured and replayed in the global replay, by rank.
    pub ranks: Vec<RankJson>,
    /// Each rank's clock offset from the first rank's (same order as `ranks`): a rank's aligned
    /// time is its recorded time minus its offset.
    pub clock_offsets_ns: Vec<i64>,
    /// How the clock offsets were estimated, and how well they fit.
    pub clock_alignment: AlignmentJson,
    /// Collectives matched across ranks.
    pub collectives: CollectivesJson,
    /// Every matched NCCL kernel split into waiting for peers and transfer (aligned clocks).
    pub wait_transfer: WaitTransferJson,
    /// For every matched collective, the rank that started it last (aligned clocks).
    pub stragglers: Vec<StragglerJson>,
    /// The critical path of the global replay, across ranks.
    pub critical_path: GlobalPathJson,
    /// `max |error|` over every rank's steps; `None` (`null`) if no error is defined.
    pub max_abs_error: Option<f64>,
    /// The job's world size as its traces record it (`distributedInfo.world_size`, the same in
    /// every trace that records one); `None` (`null`) where none does.
    pub world_size: Option<i64>,
    /// Ranks of that world no trace was given for. Every figure that depends on all the
    /// ranks (the stragglers, the cross-rank critical path, the wait/transfer split) is of
    /// the ranks given only.
    pub missing_ranks: Vec<i64>,
    /// Rank files left out because they could not be read (`--skip-unreadable`), with why:
    /// like a missing rank, every figure that depends on all ranks is of the others only.
    pub unreadable: Vec<UnreadableJson>,
    /// Traces of earlier profiling windows of a rank's process (a repeating profiler schedule
    /// writes one per window: `tensorboard_trace_handler`), left out: the job is each rank's
    /// last window. Absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub earlier_windows: Vec<String>,
    /// Ranks joined with the Execution Trace of their process (given among the job's files,
    /// told by content, paired by process id): their graphs hold its data dependencies.
    /// Absent when none was given.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub execution_traces: Vec<RankEtJson>,
    /// Execution Traces given of no rank's process, by file. Absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub execution_traces_unmatched: Vec<String>,
}

/// One rank's Execution Trace, as joined.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankEtJson {
    /// The rank (as numbered in `ranks`).
    pub rank: i64,
    /// The ET file as the user named it (or as found in the folder named).
    pub file: String,
    /// `record_function_id` or `order` (`docs/formats.md`).
    pub method: &'static str,
    /// The rank's host ops inside the span the ET covers.
    pub ops_in_span: u64,
    /// Of those, the ops joined to an ET node.
    pub joined: u64,
    /// The data dependencies between its threads (the graph's `data` edges come from these).
    pub data_links: u64,
}

/// A rank file left out of the job as unreadable.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnreadableJson {
    /// The file as the user named it.
    pub file: String,
    /// The one-line message it would have been refused with.
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
/// One rank.
pub struct RankJson {
    /// The rank number (`distributedInfo.rank`, or the position among the inputs).
    pub rank: i64,
    /// The input file as the user named it (`None` unless the caller sets it).
    pub file: Option<String>,
    /// The rank's steps, by start.
    pub steps: Vec<RankStepJson>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
/// One step of one rank.
pub struct RankStepJson {
    /// `N` of `ProfilerStep#N`; 0 for a synthetic step.
    pub number: u64,
    /// From the step's host start to the end of the last task launched inside it, as recorded.
    pub measured_ns: i64,
    /// The same span in the global replay.
    pub replayed_ns: i64,
    /// `replayed_ns / measured_ns - 1`; `None` (`null`) if `measured_ns` is 0.
    pub error: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// The clock alignment (a QP over the matched collectives' times).
pub struct AlignmentJson {
    /// `solved`, `constraints_relaxed` (the ordering constraints contradict each other) or
    /// `no_collectives` (every offset 0).
    pub status: &'static str,
    /// The rank whose clock is the reference (offset 0).
    pub reference_rank: i64,
    /// Always `clarabel` (interior-point QP).
    pub solver: &'static str,
    /// Interior-point iterations the solver took.
    pub solver_iterations: u32,
    /// Distinct clocks among the ranks: ranks that record the same host (Kineto's
    /// `host_name`) read one clock and share one offset; the others' are estimated.
    pub clocks: u64,
    /// Matched collectives in the QP: reducing collectives (all-reduce, ...) and
    /// point-to-point kernels (`SendRecv`: send/recv pairs).
    pub collectives_used: u64,
    /// Point-to-point kernels (`SendRecv`) in the QP: their send/recv pairs.
    pub send_recv_used: u64,
    /// Ordering constraints the offsets satisfy (per kind present, one per ordered pair of
    /// ranks; the solver enforces them through one release per collective).
    pub constraints: u64,
    /// Per kind of constraint: how many, and how close the offsets come to violating them.
    pub constraint_kinds: Vec<ConstraintKindJson>,
    /// The ordering constraints (per kind and ordered pair, the tightest collective) in which
    /// a rank of `detail_ranks` takes part, with their slack under the offsets found.
    pub ordering_constraints: Vec<ConstraintJson>,
    /// (collective, rank) pairs whose aligned end comes before another member's aligned start
    /// by more than 2 µs (0 when solved).
    pub violated_constraints: u64,
    /// Largest spread of one collective's aligned ends across ranks.
    pub max_end_spread_ns: i64,
    /// Per rank (same order as `ranks`): how far its aligned collective ends lie from their
    /// collective's mean.
    pub residuals: Vec<ResidualJson>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// One rank's residuals.
pub struct ResidualJson {
    /// The rank number.
    pub rank: i64,
    /// Largest distance of an aligned end from its collective's mean.
    pub max_abs_ns: i64,
    /// Root mean square of those distances.
    pub rms_ns: i64,
    /// The smallest slack of an ordering constraint the rank takes part in.
    pub min_slack_ns: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// The constraints of one kind.
pub struct ConstraintKindJson {
    /// `collective_order` (a reducing collective ends on a rank only after every rank started
    /// it) or `send_recv` (a receive ends only after its send started).
    pub kind: &'static str,
    /// Constraints of this kind (one per ordered pair of ranks).
    pub count: u64,
    /// Ranks whose tightest constraint of this kind (as the later or the earlier rank) has a
    /// slack of at most 2 µs (they shape the offsets).
    pub binding_ranks: u64,
    /// The smallest slack.
    pub min_slack_ns: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// `end[later_rank] - o_later >= start[earlier_rank] - o_earlier`, from its tightest instance.
pub struct ConstraintJson {
    /// `collective_order` or `send_recv`.
    pub kind: &'static str,
    /// The rank whose instance must end after the other's started (the receiver).
    pub later_rank: i64,
    /// The rank whose start bounds it (the sender).
    pub earlier_rank: i64,
    /// Position of the tightest collective among the matched ones.
    pub collective: u32,
    /// `o_later - o_earlier` may be at most this (before the 2 µs tolerance).
    pub bound_ns: i64,
    /// Aligned `end[later] - start[earlier]`; below -2 µs the constraint is violated.
    pub slack_ns: i64,
}

/// Which ranks a document details (`--ranks`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum RankDetail {
    /// None: the per-rank tables only.
    #[default]
    None,
    /// Every rank (the document then lists R·(R−1) constraints per kind).
    All,
    /// These rank numbers.
    Ranks(Vec<i64>),
    /// The K ranks holding the most critical-path time (ties: the rank started the most
    /// collectives last, then the lower rank number).
    Worst(usize),
}

#[derive(Clone, Debug, PartialEq, Serialize)]
/// Distributions over the ranks.
pub struct OverRanksJson {
    /// Every rank's mean step error (`replayed / measured - 1` over its steps).
    pub step_error: DistributionF64Json,
    /// Every rank's total wait for peers in its collectives (NCCL's or gloo's).
    pub wait_ns: DistributionJson,
    /// Every rank's clock offset.
    pub clock_offset_ns: DistributionJson,
    /// Every rank's time on the critical path.
    pub critical_path_ns: DistributionJson,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// A distribution of integer values over ranks (nearest-rank percentiles).
pub struct DistributionJson {
    /// The smallest value.
    pub min: i64,
    /// The median (nearest rank).
    pub median: i64,
    /// The 90th percentile (nearest rank).
    pub p90: i64,
    /// The largest value.
    pub max: i64,
    /// The rank holding the largest value (the lowest rank number on a tie).
    pub max_rank: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
/// A distribution of real values over ranks (nearest-rank percentiles); `None` (`null`)
/// where no rank has a value.
pub struct DistributionF64Json {
    /// The smallest value.
    pub min: Option<f64>,
    /// The median (nearest rank).
    pub median: Option<f64>,
    /// The 90th percentile (nearest rank).
    pub p90: Option<f64>,
    /// The largest value.
    pub max: Option<f64>,
    /// The rank holding the largest value (the lowest rank number on a tie).
    pub max_rank: Option<i64>,
}

/// Nearest-rank percentile `p` of sorted values.
fn percentile<T: Copy>(sorted: &[T], p: f64) -> Option<T> {
    let n = sorted.len();
    (n > 0).then(|| sorted[((p * n as f64).ceil() as usize).clamp(1, n) - 1])
}

/// The distribution of `values` (value, rank number).
fn distribution(values: &[(i64, i64)]) -> DistributionJson {
    let mut sorted: Vec<i64> = values.iter().map(|v| v.0).collect();
    sorted.sort_unstable();
    let at = |p| percentile(&sorted, p).unwrap_or(0);
    DistributionJson {
        min: at(0.0),
        median: at(0.5),
        p90: at(0.9),
        max: at(1.0),
        max_rank: values
            .iter()
            .max_by_key(|v| (v.0, std::cmp::Reverse(v.1)))
            .map_or(0, |v| v.1),
    }
}

fn distribution_f64(values: &[(f64, i64)]) -> DistributionF64Json {
    let mut sorted: Vec<f64> = values.iter().map(|v| v.0).collect();
    sorted.sort_by(f64::total_cmp);
    DistributionF64Json {
        min: percentile(&sorted, 0.0),
        median: percentile(&sorted, 0.5),
        p90: percentile(&sorted, 0.9),
        max: percentile(&sorted, 1.0),
        max_rank: values
            .iter()
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|v| v.1),
    }
}

/// The positions (by [`RankId`]) of the ranks `detail` names, in rank order.
fn detail_positions(report: &RanksReport, rank_numbers: &[i64], detail: &RankDetail) -> Vec<usize> {
    match detail {
        RankDetail::None => Vec::new(),
        RankDetail::All => (0..rank_numbers.len()).collect(),
        RankDetail::Ranks(numbers) => {
            let mut positions: Vec<usize> = (0..rank_numbers.len())
                .filter(|&r| numbers.contains(&rank_numbers[r]))
                .collect();
            positions.dedup();
            positions
        }
        RankDetail::Worst(k) => {
            let mut last_at = vec![0u32; rank_numbers.len()];
            for c in &report.wait_transfer.collectives {
                if let Some(n) = last_at.get_mut(c.last_rank.index()) {
                    *n += 1;
                }
            }
            let on_path = &report.replay.critical_path_ns_by_rank;
            let mut order: Vec<usize> = (0..rank_numbers.len()).collect();
            order.sort_by_key(|&r| {
                (
                    std::cmp::Reverse(on_path.get(r).copied().unwrap_or(0)),
                    std::cmp::Reverse(last_at[r]),
                    rank_numbers[r],
                )
            });
            order.truncate(*k);
            order.sort_unstable();
            order
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// The wait/transfer split of the NCCL kernels.
pub struct WaitTransferJson {
    /// Per rank (same order as `ranks`), summed over its matched NCCL kernels.
    pub per_rank: Vec<RankCommJson>,
    /// Per matched collective: the spread of its waits, and the instances of `detail_ranks`.
    pub collectives: Vec<CollectiveSplitJson>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// One rank's NCCL kernels.
pub struct RankCommJson {
    /// The rank number.
    pub rank: i64,
    /// Matched NCCL kernels.
    pub kernels: u32,
    /// Their recorded time: `wait_ns + transfer_ns`.
    pub recorded_ns: i64,
    /// Waiting for peers: from each kernel's start until the last rank started it.
    pub wait_ns: i64,
    /// Transferring: from the last rank's start to the kernel's end.
    pub transfer_ns: i64,
    /// The shortest transfer of one kernel.
    pub min_transfer_ns: Option<i64>,
    /// NCCL kernels no other rank matches (not split), and their recorded time.
    pub unsplit_kernels: u32,
    /// Recorded time of those kernels.
    pub unsplit_ns: i64,
    /// The comm model's calibration from this rank alone: its fastest NCCL kernel, waits
    /// included (the fixed cost of its lower envelope).
    pub calibrated_floor_ns: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// One matched collective, split on every rank.
pub struct CollectiveSplitJson {
    /// Position among the matched collectives.
    pub collective: u32,
    /// The process group (`stream#i` without process-group metadata).
    pub group: String,
    /// Position within its group.
    pub seq: u32,
    /// The collective's type from its kernel name.
    pub op: String,
    /// The rank that started it last: it waited for no one.
    pub last_rank: i64,
    /// Its instances' waits over the ranks.
    pub wait_ns: DistributionJson,
    /// The instances of `detail_ranks` (in rank order).
    pub instances: Vec<InstanceSplitJson>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// One rank's instance of a collective.
pub struct InstanceSplitJson {
    /// The rank number.
    pub rank: i64,
    /// Aligned start, nanoseconds after the earliest aligned trace origin.
    pub start_ns: i64,
    /// The recorded kernel duration: `wait_ns + transfer_ns`.
    pub recorded_ns: i64,
    /// Until the last rank started the collective.
    pub wait_ns: i64,
    /// From then to the kernel's end.
    pub transfer_ns: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// How the ranks' collectives were matched.
pub struct CollectivesJson {
    /// How each group's collectives were matched, in (group, source) order.
    pub groups: Vec<GroupMatchingJson>,
    /// How the groups of collectives run by host threads (gloo, which records none) were
    /// found: `inferred` (each worker thread's group, from the groups the ranks declare and
    /// the collectives each thread ran; one assignment only agrees), `no_host_collectives`,
    /// or, the host collectives then taken to be every rank's: `undeclared` (a rank declares
    /// no group), `inconsistent` (no assignment agrees), `ambiguous` (several do) or
    /// `too_many_choices`.
    pub host_groups: &'static str,
    /// Collectives found on every rank.
    pub matched: u64,
    /// Collectives left out of the global graph's matching (they keep the one-rank model).
    pub unmatched: Vec<UnmatchedJson>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// One process group (or the stream standing for it) and how its collectives were matched.
pub struct GroupMatchingJson {
    /// The recorded process group name, else `stream N` (or `stream#i`, streams by first use,
    /// where the ranks' collective stream ids differ).
    pub group: String,
    /// `recorded_seq` (recorded group and sequence number), `group_step_order` (recorded group;
    /// step and order within the step), `step_order` (no group recorded: the stream; step and
    /// order within the step), `stream_order` (outside any step: order on the stream),
    /// `inferred` (host threads' collectives, the group inferred: see `host_groups`),
    /// `peer_order` (a gloo transfer, its pair recorded) or `peer_by_time` (a gloo transfer
    /// whose peer is not recorded, paired by the two sides' times).
    pub source: &'static str,
    /// Its members among the ranks given (rank numbers), as a trace declares or records them;
    /// `null` where none does, every rank given then taken to be one.
    pub ranks: Option<Vec<i64>>,
    /// Collectives of this group found on every rank.
    pub matched: u32,
    /// Instances of this group left unmatched (over all ranks).
    pub unmatched: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// A collective of one rank that no other rank's matches.
pub struct UnmatchedJson {
    /// The rank number.
    pub rank: i64,
    /// The process group (`stream#i` without process-group metadata).
    pub group: String,
    /// `ProfilerStep` number that launched it, if any.
    pub step: Option<u64>,
    /// Its place in its group: the recorded sequence number, else its position over the
    /// group's steps.
    pub seq: u32,
    /// The collective's type from its kernel name (`AllReduce`, `SendRecv`, ...).
    pub op: String,
    /// `missing on some ranks`, `collective type differs across ranks` or `place within its
    /// step is ambiguous`.
    pub reason: &'static str,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// The rank that started a collective last.
pub struct StragglerJson {
    /// Position of the collective among the matched ones.
    pub collective: u32,
    /// The process group (`stream#i` without process-group metadata).
    pub group: String,
    /// Position within its group.
    pub seq: u32,
    /// The collective's type from its kernel name (`AllReduce`, `SendRecv`, ...).
    pub op: String,
    /// The rank that started the collective last.
    pub last_rank: i64,
    /// How much later the last rank started than the next-to-last.
    pub lead_ns: i64,
    /// From the first rank's start to the last rank's.
    pub spread_ns: i64,
    /// `host` (launched or posted late), `stream` (its stream, or gloo's worker thread, was
    /// busy), `worker` (posted in time, taken late by gloo's idle worker thread) or `unknown`.
    pub cause: &'static str,
    /// What the last rank was doing: the previous task on its stream (`stream`), or the longest
    /// op of the launching or posting thread since its previous collective (`host`).
    pub doing: Option<String>,
    /// How long that op ran (`host`), or how long after its post the worker took it (`worker`).
    pub doing_ns: Option<i64>,
    /// What the last rank ran while the others waited for it, mapped to its op, layer and
    /// phase; `None` (`null`) when the cause is unknown.
    pub activity: Option<ActivityJson>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// What a late rank was executing while its peers waited.
pub struct ActivityJson {
    /// The device task on the collective's stream (`stream`), or the innermost op of the
    /// launching thread covering at least half of what any op covers (`host`).
    pub name: String,
    /// `thread N` or `stream N` of the late rank.
    pub lane: String,
    /// The op that launched it (the op itself for `host`).
    pub op: Option<String>,
    /// Its layer (module), if the mapping found one.
    pub layer: Option<String>,
    /// `forward`, `backward`, `optimizer`, `communication`, `data_loading` or `other`.
    pub phase: Option<&'static str>,
    /// How much of the wait (next-to-last rank's start to the last rank's) it covers.
    pub overlap_ns: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// The critical path across ranks.
pub struct GlobalPathJson {
    /// From the earliest replayed step start to the latest replayed end: the tasks' shares plus
    /// `late_start`.
    pub length_ns: i64,
    /// Tasks on the path.
    pub tasks: u64,
    /// How often the path crosses from one rank to another.
    pub rank_crossings: u32,
    /// Time of the path on each rank (same order as `ranks`).
    pub ns_by_rank: Vec<RankNsJson>,
    /// Where the path starts with no task: a rank whose first task began after the earliest
    /// step start (it started late); `None` (`null`) if the path starts at that instant.
    pub late_start: Option<RankNsJson>,
    /// Time of the path on each lane it visits, rank by rank.
    pub ns_by_lane: Vec<LaneNsJson>,
    /// The path cut where it changes rank, earliest first.
    pub segments: Vec<SegmentJson>,
    /// The tasks holding the most path time, most first (at most 10).
    pub top_tasks: Vec<PathTaskJson>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// Path time on one lane.
pub struct LaneNsJson {
    /// The rank number.
    pub rank: i64,
    /// `thread N` or `stream N`.
    pub lane: String,
    /// Path time on the lane.
    pub ns: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// Consecutive path tasks on one rank.
pub struct SegmentJson {
    /// The rank number.
    pub rank: i64,
    /// Tasks of the path in this segment.
    pub tasks: u32,
    /// Path time in it (the late start included in the first).
    pub ns: i64,
    /// The task through which the path entered this rank (a collective instance released by
    /// a peer); `None` (`null`) for the first segment.
    pub entered_at: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// Path time on one rank.
pub struct RankNsJson {
    /// The rank number.
    pub rank: i64,
    /// Time of the path spent on this rank's tasks.
    pub ns: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// A task of the critical path.
pub struct PathTaskJson {
    /// The rank number.
    pub rank: i64,
    /// The task's name (kernel, runtime call or op).
    pub name: String,
    /// `api_call`, `cpu_op`, `kernel`, `memcpy`, `memset` or `collective`.
    pub kind: &'static str,
    /// Path time attributed to the task (its work, or its wait for what released it).
    pub share_ns: i64,
}

/// The document of a multi-rank replay, with the detail of the ranks `detail` names. Files
/// are left `None` for the caller to fill.
pub fn ranks_json(report: &RanksReport, detail: &RankDetail) -> RanksJson {
    let replay = &report.replay;
    let rank_numbers: Vec<i64> = replay.ranks.iter().map(|r| r.rank).collect();
    let detail = detail_positions(report, &rank_numbers, detail);
    let ranks: Vec<RankJson> = replay
        .ranks
        .iter()
        .map(|r| RankJson {
            rank: r.rank,
            file: None,
            steps: r
                .steps
                .iter()
                .map(|s| RankStepJson {
                    number: s.number,
                    measured_ns: s.measured_ns,
                    replayed_ns: s.replayed_ns,
                    error: finite(s.error()),
                })
                .collect(),
        })
        .collect();
    let max_abs_error = ranks
        .iter()
        .flat_map(|r| r.steps.iter().filter_map(|s| s.error))
        .map(f64::abs)
        .max_by(f64::total_cmp);
    let alignment = &report.alignment;
    let rank_of = |r: usize| rank_numbers.get(r).copied().unwrap_or(0);
    let stragglers = report
        .stragglers
        .iter()
        .map(|s| {
            let (cause, doing, doing_ns) = match &s.cause {
                StragglerCause::Stream { previous_task } => {
                    ("stream", Some(previous_task.clone()), None)
                }
                StragglerCause::Host {
                    longest_op,
                    longest_op_ns,
                } => ("host", longest_op.clone(), Some(*longest_op_ns)),
                StragglerCause::Worker { delay_ns } => ("worker", None, Some(*delay_ns)),
                StragglerCause::Unknown => ("unknown", None, None),
            };
            let activity = s.doing.as_ref().map(|d| ActivityJson {
                name: d.name.clone(),
                lane: d.lane.clone(),
                op: d.op.clone(),
                layer: d.layer.clone(),
                phase: d.phase.map(|p| p.as_str()),
                overlap_ns: d.overlap_ns,
            });
            StragglerJson {
                collective: s.collective,
                group: s.group.clone(),
                seq: s.seq,
                op: s.op.clone(),
                last_rank: s.last_rank,
                lead_ns: s.lead_ns,
                spread_ns: s.spread_ns,
                cause,
                doing,
                doing_ns,
                activity,
            }
        })
        .collect();
    let mut top: Vec<PathTaskJson> = replay
        .critical_path
        .iter()
        .map(|p| PathTaskJson {
            rank: p.rank,
            name: p.name.clone(),
            kind: p.kind.as_str(),
            share_ns: p.share_ns,
        })
        .collect();
    top.sort_by_key(|p| std::cmp::Reverse(p.share_ns));
    top.truncate(TOP_PATH_TASKS);
    let over_ranks = over_ranks(report, &ranks);
    let n_ranks = rank_numbers.len() as u64;
    let pairs = n_ranks * n_ranks.saturating_sub(1);
    let kind_present = |kind| alignment.constraints_of(kind).next().is_some();
    let detail_ids: Vec<RankId> = detail.iter().map(|&r| RankId(r as u32)).collect();
    RanksJson {
        world_size: None,
        missing_ranks: Vec::new(),
        unreadable: Vec::new(),
        earlier_windows: Vec::new(),
        execution_traces: Vec::new(),
        execution_traces_unmatched: Vec::new(),
        schema: "stepcast.replay-ranks/3",
        detail_ranks: detail.iter().map(|&r| rank_of(r)).collect(),
        over_ranks,
        ranks,
        clock_offsets_ns: alignment.offsets_ns.clone(),
        clock_alignment: AlignmentJson {
            status: alignment.status.as_str(),
            reference_rank: rank_numbers.first().copied().unwrap_or(0),
            solver: "clarabel",
            solver_iterations: alignment.solver_iterations,
            clocks: alignment.clocks as u64,
            collectives_used: alignment.collectives_used as u64,
            send_recv_used: alignment.send_recv_used as u64,
            constraints: [ConstraintKind::CollectiveOrder, ConstraintKind::SendRecv]
                .into_iter()
                .filter(|&kind| kind_present(kind))
                .count() as u64
                * pairs,
            constraint_kinds: [ConstraintKind::CollectiveOrder, ConstraintKind::SendRecv]
                .into_iter()
                .map(|kind| {
                    let mut binding = vec![false; rank_numbers.len()];
                    for c in alignment.constraints_of(kind) {
                        if c.slack_ns <= CONSTRAINT_TOLERANCE_NS {
                            for r in [c.later, c.earlier] {
                                if let Some(b) = binding.get_mut(r.index()) {
                                    *b = true;
                                }
                            }
                        }
                    }
                    ConstraintKindJson {
                        kind: kind.as_str(),
                        count: if kind_present(kind) { pairs } else { 0 },
                        binding_ranks: binding.iter().filter(|&&b| b).count() as u64,
                        min_slack_ns: alignment.constraints_of(kind).map(|c| c.slack_ns).min(),
                    }
                })
                .collect(),
            ordering_constraints: alignment
                .constraints_involving(&detail_ids)
                .iter()
                .map(|c| ConstraintJson {
                    kind: c.kind.as_str(),
                    later_rank: rank_of(c.later.index()),
                    earlier_rank: rank_of(c.earlier.index()),
                    collective: c.collective,
                    bound_ns: c.bound_ns,
                    slack_ns: c.slack_ns,
                })
                .collect(),
            violated_constraints: alignment.violated_constraints as u64,
            max_end_spread_ns: alignment.max_end_spread_ns,
            residuals: alignment
                .residuals
                .iter()
                .zip(&rank_numbers)
                .map(|(r, &rank)| ResidualJson {
                    rank,
                    max_abs_ns: r.max_abs_ns,
                    rms_ns: r.rms_ns,
                    min_slack_ns: r.min_slack_ns,
                })
                .collect(),
        },
        collectives: CollectivesJson {
            groups: report
                .matching
                .groups
                .iter()
                .map(|g| GroupMatchingJson {
                    group: g.group.clone(),
                    source: g.source.as_str(),
                    ranks: g.ranks.as_ref().map(|members| {
                        members
                            .iter()
                            .map(|r| rank_numbers.get(r.index()).copied().unwrap_or(0))
                            .collect()
                    }),
                    matched: g.matched,
                    unmatched: g.unmatched,
                })
                .collect(),
            host_groups: report.matching.host_groups.as_str(),
            matched: report.matching.matched.len() as u64,
            unmatched: report
                .matching
                .unmatched
                .iter()
                .map(|u| UnmatchedJson {
                    rank: rank_numbers.get(u.rank.index()).copied().unwrap_or(0),
                    group: u.instance.group.clone(),
                    step: u.instance.step,
                    seq: u.instance.seq,
                    op: u.instance.op.clone(),
                    reason: u.reason.as_str(),
                })
                .collect(),
        },
        wait_transfer: wait_transfer(report, &rank_numbers, &detail),
        stragglers,
        critical_path: GlobalPathJson {
            length_ns: replay.critical_path_ns_by_rank.iter().sum(),
            tasks: replay.critical_path.len() as u64,
            rank_crossings: replay.critical_path_rank_crossings,
            ns_by_rank: replay
                .critical_path_ns_by_rank
                .iter()
                .zip(&rank_numbers)
                .map(|(&ns, &rank)| RankNsJson { rank, ns })
                .collect(),
            late_start: replay
                .critical_path_late_start
                .map(|(rank, ns)| RankNsJson { rank, ns }),
            ns_by_lane: replay
                .critical_path_by_lane
                .iter()
                .map(|l| LaneNsJson {
                    rank: l.rank,
                    lane: report
                        .lane_names
                        .get(l.lane as usize)
                        .cloned()
                        .unwrap_or_default(),
                    ns: l.ns,
                })
                .collect(),
            segments: replay
                .critical_path_segments
                .iter()
                .map(|s| SegmentJson {
                    rank: s.rank,
                    tasks: s.tasks,
                    ns: s.ns,
                    entered_at: s.entered_at.clone(),
                })
                .collect(),
            top_tasks: top,
        },
        max_abs_error,
    }
}

/// Distributions over the ranks of their step error, collective wait, clock offset and path time.
fn over_ranks(report: &RanksReport, ranks: &[RankJson]) -> OverRanksJson {
    let errors: Vec<(f64, i64)> = ranks
        .iter()
        .filter_map(|r| {
            let errors: Vec<f64> = r.steps.iter().filter_map(|s| s.error).collect();
            (!errors.is_empty()).then(|| (errors.iter().sum::<f64>() / errors.len() as f64, r.rank))
        })
        .collect();
    let by_rank = |values: &[i64]| -> Vec<(i64, i64)> {
        values
            .iter()
            .zip(ranks)
            .map(|(&v, r)| (v, r.rank))
            .collect()
    };
    let waits: Vec<i64> = report
        .wait_transfer
        .totals
        .iter()
        .map(|t| t.wait_ns)
        .collect();
    OverRanksJson {
        step_error: distribution_f64(&errors),
        wait_ns: distribution(&by_rank(&waits)),
        clock_offset_ns: distribution(&by_rank(&report.alignment.offsets_ns)),
        critical_path_ns: distribution(&by_rank(&report.replay.critical_path_ns_by_rank)),
    }
}

fn wait_transfer(report: &RanksReport, rank_numbers: &[i64], detail: &[usize]) -> WaitTransferJson {
    let split = &report.wait_transfer;
    let rank_of = |r: usize| rank_numbers.get(r).copied().unwrap_or(0);
    WaitTransferJson {
        per_rank: split
            .totals
            .iter()
            .enumerate()
            .map(|(r, t)| RankCommJson {
                rank: rank_of(r),
                kernels: t.kernels,
                recorded_ns: t.recorded_ns,
                wait_ns: t.wait_ns,
                transfer_ns: t.transfer_ns,
                min_transfer_ns: t.min_transfer_ns,
                unsplit_kernels: t.unsplit_kernels,
                unsplit_ns: t.unsplit_ns,
                calibrated_floor_ns: t.calibrated_floor_ns,
            })
            .collect(),
        collectives: split
            .collectives
            .iter()
            .map(|c| {
                let matched = report.matching.matched.get(c.collective as usize);
                CollectiveSplitJson {
                    collective: c.collective,
                    group: matched.map(|m| m.group.clone()).unwrap_or_default(),
                    seq: matched.map_or(0, |m| m.seq),
                    op: matched.map(|m| m.op.clone()).unwrap_or_default(),
                    last_rank: rank_of(c.last_rank.index()),
                    wait_ns: distribution(
                        &c.instances
                            .iter()
                            .map(|i| (i.wait_ns, rank_of(i.rank.index())))
                            .collect::<Vec<_>>(),
                    ),
                    instances: c
                        .instances
                        .iter()
                        .filter(|i| detail.binary_search(&i.rank.index()).is_ok())
                        .map(|i| InstanceSplitJson {
                            rank: rank_of(i.rank.index()),
                            start_ns: i.start_ns,
                            recorded_ns: i.recorded_ns,
                            wait_ns: i.wait_ns,
                            transfer_ns: i.transfer_ns,
                        })
                        .collect(),
                }
            })
            .collect(),
    }
}
