//! `stepcast.replay-ranks/1`: several ranks' traces replayed as one global graph.

use serde::Serialize;
use stepcast::ranks::{RanksReport, StragglerCause};

use super::finite;

/// How many tasks of the critical path across ranks are listed, by the time they hold.
pub const TOP_PATH_TASKS: usize = 10;

/// The `replay` document of several ranks (`stepcast replay DIR` or several files).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RanksJson {
    /// Always `stepcast.replay-ranks/1`.
    pub schema: &'static str,
    /// Every rank's steps, measured and replayed in the global replay, by rank.
    pub ranks: Vec<RankJson>,
    /// Each rank's clock offset from the first rank's (same order as `ranks`): a rank's aligned
    /// time is its recorded time minus its offset.
    pub clock_offsets_ns: Vec<i64>,
    /// How the clock offsets were estimated, and how well they fit.
    pub clock_alignment: AlignmentJson,
    /// Collectives matched across ranks.
    pub collectives: CollectivesJson,
    /// For every matched collective, the rank that started it last (aligned clocks).
    pub stragglers: Vec<StragglerJson>,
    /// The critical path of the global replay, across ranks.
    pub critical_path: GlobalPathJson,
    /// `max |error|` over every rank's steps; `None` (`null`) if no error is defined.
    pub max_abs_error: Option<f64>,
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
    /// Ordering constraints (one per ordered pair of ranks).
    pub constraints: u64,
    /// Ordering constraints the offsets violate by more than 2 µs (0 when solved).
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
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// How the ranks' collectives were matched.
pub struct CollectivesJson {
    /// Where process groups came from: `stream_order` (no process-group metadata: one group per
    /// stream running collectives).
    pub group_source: &'static str,
    /// Collectives found on every rank.
    pub matched: u64,
    /// Collectives left out of the global graph's matching (they keep the one-rank model).
    pub unmatched: Vec<UnmatchedJson>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
/// A collective of one rank that no other rank's matches.
pub struct UnmatchedJson {
    /// The rank number.
    pub rank: i64,
    /// The process group (`stream#i` without process-group metadata).
    pub group: String,
    /// Position within its group on this rank.
    pub seq: u32,
    /// The collective's type from its kernel name (`AllReduce`, `SendRecv`, ...).
    pub op: String,
    /// `missing on some ranks` or `collective type differs across ranks`.
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
    /// `host` (launched late), `stream` (its stream was busy) or `unknown`.
    pub cause: &'static str,
    /// What the last rank was doing: the previous task on its stream (`stream`), or the longest
    /// op of the launching thread since its previous collective launch (`host`).
    pub doing: Option<String>,
    /// How long that op ran (`host` only).
    pub doing_ns: Option<i64>,
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
    /// The tasks holding the most path time, most first (at most 10).
    pub top_tasks: Vec<PathTaskJson>,
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

/// The document of a multi-rank replay. Files are left `None` for the caller to fill.
pub fn ranks_json(report: &RanksReport) -> RanksJson {
    let replay = &report.replay;
    let rank_numbers: Vec<i64> = replay.ranks.iter().map(|r| r.rank).collect();
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
                StragglerCause::Unknown => ("unknown", None, None),
            };
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
    RanksJson {
        schema: "stepcast.replay-ranks/1",
        ranks,
        clock_offsets_ns: alignment.offsets_ns.clone(),
        clock_alignment: AlignmentJson {
            status: alignment.status.as_str(),
            reference_rank: rank_numbers.first().copied().unwrap_or(0),
            solver: "clarabel",
            solver_iterations: alignment.solver_iterations,
            constraints: alignment.constraints.len() as u64,
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
                })
                .collect(),
        },
        collectives: CollectivesJson {
            group_source: report.matching.source.as_str(),
            matched: report.matching.matched.len() as u64,
            unmatched: report
                .matching
                .unmatched
                .iter()
                .map(|u| UnmatchedJson {
                    rank: rank_numbers.get(u.rank.index()).copied().unwrap_or(0),
                    group: u.instance.group.clone(),
                    seq: u.instance.seq,
                    op: u.instance.op.clone(),
                    reason: u.reason.as_str(),
                })
                .collect(),
        },
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
            top_tasks: top,
        },
        max_abs_error,
    }
}
