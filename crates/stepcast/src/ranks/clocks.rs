//! Clock offsets between ranks, from the collectives and point-to-point exchanges they share
//! (dPRO §4.2).
//!
//! Every rank's profiler reads its own clock. A rank's aligned time is its recorded time minus
//! its offset `o_r` (rank 0 is the reference, `o_0 = 0`). Two kinds of ordering constraints
//! (dPRO's `θ_i − θ_j ≤ T̄_j[o2] − T̄_i[o1]` for every inter-rank dependency `o1 → o2`):
//!
//! - **collective order**: a reducing collective (all-reduce, all-gather, ...) cannot end on
//!   any rank before every rank has started it: `end[r] − o_r ≥ start[q] − o_q` for every pair
//!   (a rooted one, whose root the trace does not name, orders nothing: [`is_rooted`]);
//! - **send/recv pairs**: a point-to-point kernel (NCCL `SendRecv`, `Send`, `Recv`) receives
//!   from its peers, and a receive cannot finish before its send started:
//!   `end[receiver] − o_receiver ≥ start[sender] − o_sender`. NCCL's rendezvous gives the
//!   converse too (a send cannot finish before its receive was posted). The peers of a
//!   `SendRecv` matched on every rank of its group are every other rank of the group: PyTorch's
//!   `all_to_all` issues a send to and a receive from every peer in one NCCL group (the traces
//!   record no per-peer split, so a peer that exchanges zero bytes cannot be left out).
//!
//! Every member of a collective constrains the others through one release variable `r_k`
//! (`start[q] − o_q ≤ r_k ≤ end[r] − o_r`): the same feasible offsets as the pairwise rows,
//! with 2·R rows per collective instead of R·(R−1), so the solver's sparse factorization
//! stays near-linear in ranks (the pairwise rows made it grow as R³). The report keeps, per
//! kind and rank, the tightest pairwise constraint; every pair is available on request.
//!
//! The objective is dPRO's O1: the time a receive spends transferring, clipped by the start
//! of its sends (`end[j] − max(start[j], start[i])`), should be the same for the members of a
//! family. Here a family is one collective's instances across ranks; the clip is the last
//! aligned start, shared by the family, so equal transfers mean equal aligned ends: the offsets
//! minimize the squared distance of every aligned end from its collective's centre `m_k`. A
//! convex QP, solved with clarabel's interior-point method.

use std::collections::BTreeMap;

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus, SupportedConeT,
};

use super::{CollectiveMatching, RankGraph, RankId};

/// Kineto timestamps are whole microseconds in older traces: constraints hold up to this much.
pub const CONSTRAINT_TOLERANCE_NS: i64 = 2_000;

/// Up to this many ranks, every member of a collective constrains its release directly;
/// beyond, through groups of about √R members (see `align_clocks_with`).
const FLAT_RELEASE_RANKS: usize = 64;

/// How the offsets were obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlignmentStatus {
    /// The QP was solved with every ordering constraint.
    Solved,
    /// The ordering constraints contradict each other (clock drift within the window, or a
    /// mismatched collective): solved for the end spread alone.
    ConstraintsRelaxed,
    /// No collective is matched across the ranks (or one rank only): every offset is 0.
    NoCollectives,
}

impl AlignmentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AlignmentStatus::Solved => "solved",
            AlignmentStatus::ConstraintsRelaxed => "constraints_relaxed",
            AlignmentStatus::NoCollectives => "no_collectives",
        }
    }
}

/// Which dependency an ordering constraint stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConstraintKind {
    /// A reducing collective ends on a rank only after every rank started it.
    CollectiveOrder,
    /// A receive finishes only after its send started (point-to-point kernels).
    SendRecv,
}

impl ConstraintKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ConstraintKind::CollectiveOrder => "collective_order",
            ConstraintKind::SendRecv => "send_recv",
        }
    }
}

/// Whether a collective type (from [`super::collective_op`]) is point-to-point.
pub fn is_point_to_point(op: &str) -> bool {
    use crate::comm::Collective;
    matches!(
        Collective::parse(op),
        Some(Collective::SendRecv | Collective::AllToAll)
    )
}

/// Whether a collective type (from [`super::collective_op`]) has a root: a broadcast, reduce,
/// gather or scatter. Its members wait for the root alone (gloo's gather senders and its
/// broadcast root return once their data is out, before the others start), and the trace
/// does not say which member is the root: none of its members' times orders another's, and
/// its ends need not lie together.
pub fn is_rooted(op: &str) -> bool {
    use crate::comm::Collective;
    matches!(
        Collective::parse(op),
        Some(Collective::Broadcast | Collective::Reduce | Collective::Gather | Collective::Scatter)
    )
}

/// One row of the QP: `end[later] − o_later ≥ start[earlier] − o_earlier`, from the
/// instance of all that bounds it most tightly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderingConstraint {
    pub kind: ConstraintKind,
    /// The rank whose instance must end after the other's started (the receiver).
    pub later: RankId,
    /// The rank whose start bounds it (the sender).
    pub earlier: RankId,
    /// Index into the matching's collectives of the instance giving the tightest bound.
    pub collective: u32,
    /// `o_later − o_earlier` may be at most this (recorded `end[later] − start[earlier]`,
    /// before the tolerance).
    pub bound_ns: i64,
    /// With the offsets found: aligned `end[later] − start[earlier]`. Negative by more than
    /// [`CONSTRAINT_TOLERANCE_NS`]: violated.
    pub slack_ns: i64,
}

impl OrderingConstraint {
    /// The constraint collective `k` puts between two of its members, with its slack under
    /// `offsets_ns`; `None` where either is not a member.
    fn of(
        kind: ConstraintKind,
        later: usize,
        earlier: usize,
        k: usize,
        times: &[Vec<MemberTime>],
        offsets_ns: &[i64],
    ) -> Option<OrderingConstraint> {
        let (later_time, earlier_time) = (member(&times[k], later)?, member(&times[k], earlier)?);
        if !later_time.end_binds || !earlier_time.start_binds {
            return None;
        }
        let bound_ns = later_time.end_ns - earlier_time.start_ns;
        Some(OrderingConstraint {
            kind,
            later: RankId(later as u32),
            earlier: RankId(earlier as u32),
            collective: k as u32,
            bound_ns,
            slack_ns: bound_ns - (offsets_ns[later] - offsets_ns[earlier]),
        })
    }
}

/// One member's recorded start and end of a matched collective, in its own time on a common
/// base.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemberTime {
    /// The member's index among the ranks given.
    pub rank: usize,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Whether its start bounds the others' ends, and its end is bounded by their starts
    /// (both for a collective's members; a transfer's sender only starts, its receiver only
    /// ends: see [`super::MatchedCollective::start_binds`]).
    pub start_binds: bool,
    pub end_binds: bool,
}

/// `rank`'s times in a collective's members (in rank order), if it is one.
fn member(row: &[MemberTime], rank: usize) -> Option<&MemberTime> {
    row.binary_search_by_key(&rank, |m| m.rank)
        .ok()
        .map(|i| &row[i])
}

/// What the alignment uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlignOptions {
    /// Use point-to-point kernels (send/recv pairs): constraints and objective. Without them
    /// the offsets rest on the reducing collectives alone.
    pub send_recv: bool,
}

impl Default for AlignOptions {
    fn default() -> Self {
        AlignOptions { send_recv: true }
    }
}

/// How well one rank's aligned collective ends agree with the others'.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankResidual {
    /// Largest distance of an aligned end from its collective's centre.
    pub max_abs_ns: i64,
    /// Root mean square of those distances.
    pub rms_ns: i64,
    /// The smallest slack of an ordering constraint this rank takes part in (`None` without
    /// constraints): how close the offsets come to putting an effect before its cause.
    pub min_slack_ns: Option<i64>,
}

/// Clock offsets of every rank relative to the first (`offsets_ns[0] == 0`).
///
/// A rank's aligned time is its own time minus its offset: an offset of +5 ms means the rank's
/// clock reads 5 ms later than the reference rank's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockAlignment {
    pub status: AlignmentStatus,
    /// One per rank, in nanoseconds; rank index 0 is the reference.
    pub offsets_ns: Vec<i64>,
    pub residuals: Vec<RankResidual>,
    /// Per kind and rank, the tightest ordering constraint it takes part in as the later rank
    /// and as the earlier one (at most 4 rows per rank: the QP's R·(R−1) pairwise rows are
    /// [`ClockAlignment::constraints_involving`], on request).
    pub constraints: Vec<OrderingConstraint>,
    /// (collective, rank) pairs whose aligned end comes before another member's aligned start
    /// by more than the tolerance (0 when solved).
    pub violated_constraints: usize,
    /// Largest spread of a collective's aligned ends across ranks.
    pub max_end_spread_ns: i64,
    /// Matched collectives in the objective: reducing ones and point-to-point ones.
    pub collectives_used: usize,
    pub send_recv_used: usize,
    pub solver_iterations: u32,
    /// Distinct clocks among the ranks: ranks that record the same host share one (its
    /// offsets are equal), so only `clocks − 1` offsets are estimated.
    pub clocks: usize,
    /// Ranks whose clock nothing ties to the reference rank's: no matched collective joins
    /// them to it, directly or through other ranks, and they record another host. Their
    /// offsets are 0, not estimates: ranks that are not one job, or a window that holds none
    /// of their collectives.
    pub unaligned: Vec<RankId>,
    /// Per matched collective, each member's recorded start and end on a common base, and the
    /// kind of constraint it gives: kept to list pairwise constraints on request.
    instance_times: Vec<Vec<MemberTime>>,
    kinds: Vec<Option<ConstraintKind>>,
}

impl ClockAlignment {
    /// The pairwise ordering constraints (per kind and ordered pair, the tightest collective)
    /// in which any of `ranks` takes part: O(|ranks| × ranks × collectives), for per-rank detail.
    pub fn constraints_involving(&self, ranks: &[RankId]) -> Vec<OrderingConstraint> {
        let n_ranks = self.offsets_ns.len();
        let mut wanted = vec![false; n_ranks];
        for r in ranks {
            if let Some(w) = wanted.get_mut(r.index()) {
                *w = true;
            }
        }
        constraints(
            &self.instance_times,
            &self.kinds,
            &self.offsets_ns,
            |later, earlier| wanted[later] || wanted[earlier],
        )
    }

    /// Constraints of one kind.
    pub fn constraints_of(
        &self,
        kind: ConstraintKind,
    ) -> impl Iterator<Item = &OrderingConstraint> {
        self.constraints.iter().filter(move |c| c.kind == kind)
    }
}

/// Why the offsets could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum AlignError {
    #[error("the clock-alignment solver could not start: {0}")]
    Solver(String),
    #[error("the clock-alignment solver stopped without a solution (status {0})")]
    NotSolved(String),
}

/// A matched collective's start and end on each member, in each rank's own time (nanoseconds
/// relative to a common base, `Trace::origin_ns` included).
pub(crate) fn instance_times(
    ranks: &[RankGraph],
    matching: &CollectiveMatching,
    base_ns: i64,
) -> Vec<Vec<MemberTime>> {
    matching
        .matched
        .iter()
        .map(|c| {
            c.members()
                .map(|(r, task)| {
                    let rank = &ranks[r.index()];
                    let g = &rank.window.graph;
                    let origin = rank.origin_ns - base_ns;
                    MemberTime {
                        rank: r.index(),
                        start_ns: origin + g.rec_start_ns[task.index()],
                        end_ns: origin + g.rec_end_ns[task.index()],
                        start_binds: c.start_binds(r),
                        end_binds: c.end_binds(r),
                    }
                })
                .collect()
        })
        .collect()
}

/// The ordering constraints of `matching` (the collectives `used`), each the tightest of its
/// kind and ordered pair, with its slack under `offsets_ns`.
pub fn ordering_constraints(
    ranks: &[RankGraph],
    matching: &CollectiveMatching,
    offsets_ns: &[i64],
    options: AlignOptions,
) -> Vec<OrderingConstraint> {
    let base_ns = ranks.first().map_or(0, |r| r.origin_ns);
    let times = instance_times(ranks, matching, base_ns);
    let kinds = constraint_kinds(matching, options);
    constraints(&times, &kinds, offsets_ns, |_, _| true)
}

/// Per matched collective: the kind of constraint it gives, `None` when left out.
fn constraint_kinds(
    matching: &CollectiveMatching,
    options: AlignOptions,
) -> Vec<Option<ConstraintKind>> {
    matching
        .matched
        .iter()
        .map(|c| {
            if is_rooted(&c.op) {
                None
            } else if c.sender.is_none() && !is_point_to_point(&c.op) {
                Some(ConstraintKind::CollectiveOrder)
            } else if options.send_recv {
                Some(ConstraintKind::SendRecv)
            } else {
                None
            }
        })
        .collect()
}

/// Every ordering constraint of `kinds`, one per kind and ordered pair of ranks (the tightest
/// collective of that kind): R·(R−1) rows per kind, for detail on request and for tests.
fn constraints(
    times: &[Vec<MemberTime>],
    kinds: &[Option<ConstraintKind>],
    offsets_ns: &[i64],
    keep: impl Fn(usize, usize) -> bool,
) -> Vec<OrderingConstraint> {
    let n_ranks = offsets_ns.len();
    let mut out = Vec::new();
    for kind in [ConstraintKind::CollectiveOrder, ConstraintKind::SendRecv] {
        for later in 0..n_ranks {
            for earlier in 0..n_ranks {
                if later == earlier || !keep(later, earlier) {
                    continue;
                }
                let tightest = times
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| kinds[k] == Some(kind))
                    .filter_map(|(k, row)| {
                        let (end, start) = (member(row, later)?, member(row, earlier)?);
                        (end.end_binds && start.start_binds)
                            .then(|| (end.end_ns - start.start_ns, k))
                    })
                    .min();
                if let Some((_, k)) = tightest {
                    out.extend(OrderingConstraint::of(
                        kind, later, earlier, k, times, offsets_ns,
                    ));
                }
            }
        }
    }
    out
}

/// The tightest ordering constraint of each kind in which each rank takes part, as the later
/// rank and as the earlier one (at most 4 per rank, duplicates removed), with the number of
/// (collective, rank) pairs whose aligned end comes before another member's aligned start by
/// more than the tolerance. O(collectives × ranks): a collective's tightest partner of rank r
/// is the other member with the latest aligned start (or earliest aligned end), so the two
/// extremes of each collective, and the runner-up for the rank holding one, answer every rank.
fn tightest_per_rank(
    times: &[Vec<MemberTime>],
    kinds: &[Option<ConstraintKind>],
    offsets_ns: &[i64],
) -> (Vec<OrderingConstraint>, usize) {
    let n_ranks = offsets_ns.len();
    // Per kind and rank: (slack, partner, collective) as later and as earlier.
    type Best = Option<(i64, usize, usize)>;
    let mut as_later: Vec<Vec<Best>> = vec![vec![None; n_ranks]; 2];
    let mut as_earlier: Vec<Vec<Best>> = vec![vec![None; n_ranks]; 2];
    let mut violated = 0usize;
    let better = |best: &mut Best, candidate: (i64, usize, usize)| {
        if best.is_none_or(|b| (candidate.0, candidate.2, candidate.1) < (b.0, b.2, b.1)) {
            *best = Some(candidate);
        }
    };
    for (k, row) in times.iter().enumerate() {
        let Some(kind) = kinds[k] else { continue };
        if row.len() < 2 {
            continue;
        }
        let kind_index = kind as usize - ConstraintKind::CollectiveOrder as usize;
        let aligned = |m: &MemberTime| {
            (
                m.start_ns - offsets_ns[m.rank],
                m.end_ns - offsets_ns[m.rank],
            )
        };
        // The two latest aligned starts and the two earliest aligned ends (ties: lower rank).
        let mut latest_start = [(i64::MIN, usize::MAX); 2];
        let mut earliest_end = [(i64::MAX, usize::MAX); 2];
        // Only binding starts and ends (a transfer's send start, its receive end).
        for m in row {
            let r = m.rank;
            let (start, end) = aligned(m);
            if m.start_binds && start > latest_start[0].0 {
                latest_start = [(start, r), latest_start[0]];
            } else if m.start_binds && start > latest_start[1].0 {
                latest_start[1] = (start, r);
            }
            if m.end_binds && end < earliest_end[0].0 {
                earliest_end = [(end, r), earliest_end[0]];
            } else if m.end_binds && end < earliest_end[1].0 {
                earliest_end[1] = (end, r);
            }
        }
        for m in row {
            let r = m.rank;
            let (start, end) = aligned(m);
            let (last_start, sender) = if latest_start[0].1 == r {
                latest_start[1]
            } else {
                latest_start[0]
            };
            let (first_end, receiver) = if earliest_end[0].1 == r {
                earliest_end[1]
            } else {
                earliest_end[0]
            };
            if m.end_binds && sender != usize::MAX {
                let slack_as_later = end - last_start;
                if slack_as_later < -CONSTRAINT_TOLERANCE_NS {
                    violated += 1;
                }
                better(&mut as_later[kind_index][r], (slack_as_later, sender, k));
            }
            if m.start_binds && receiver != usize::MAX {
                better(
                    &mut as_earlier[kind_index][r],
                    (first_end - start, receiver, k),
                );
            }
        }
    }
    let mut out = Vec::new();
    for kind in [ConstraintKind::CollectiveOrder, ConstraintKind::SendRecv] {
        let kind_index = kind as usize - ConstraintKind::CollectiveOrder as usize;
        let mut rows: Vec<(usize, usize, usize)> = Vec::new();
        for r in 0..n_ranks {
            if let Some((_, partner, k)) = as_later[kind_index][r] {
                rows.push((r, partner, k));
            }
            if let Some((_, partner, k)) = as_earlier[kind_index][r] {
                rows.push((partner, r, k));
            }
        }
        rows.sort_unstable();
        rows.dedup();
        for (later, earlier, k) in rows {
            out.extend(OrderingConstraint::of(
                kind, later, earlier, k, times, offsets_ns,
            ));
        }
    }
    (out, violated)
}

/// Estimates a clock offset per rank from the matched collectives and send/recv pairs.
pub fn align_clocks(
    ranks: &[RankGraph],
    matching: &CollectiveMatching,
) -> Result<ClockAlignment, AlignError> {
    align_clocks_with(ranks, matching, AlignOptions::default())
}

/// [`align_clocks`] with a choice of evidence.
pub fn align_clocks_with(
    ranks: &[RankGraph],
    matching: &CollectiveMatching,
    options: AlignOptions,
) -> Result<ClockAlignment, AlignError> {
    let n_ranks = ranks.len();
    let base_ns = ranks.first().map_or(0, |r| r.origin_ns);
    let clock = shared_clocks(ranks);
    let clocks = (0..n_ranks).filter(|&r| clock[r] == r).count();
    let all_times = instance_times(ranks, matching, base_ns);
    let kinds = constraint_kinds(matching, options);
    // The collectives in the objective.
    let used: Vec<usize> = (0..all_times.len())
        .filter(|&k| kinds[k].is_some())
        .collect();
    let times: Vec<Vec<MemberTime>> = used.iter().map(|&k| all_times[k].clone()).collect();
    let send_recv_used = used
        .iter()
        .filter(|&&k| kinds[k] == Some(ConstraintKind::SendRecv))
        .count();
    let tied = tied_to_reference(n_ranks, &clock, &times);
    let unaligned: Vec<RankId> = (0..n_ranks)
        .filter(|&r| !tied[r])
        .map(|r| RankId(r as u32))
        .collect();
    let finish = |status, offsets_ns: Vec<i64>, iterations| {
        let (constraints, violated_constraints) =
            tightest_per_rank(&all_times, &kinds, &offsets_ns);
        ClockAlignment {
            status,
            residuals: residuals(&times, &offsets_ns, &constraints),
            max_end_spread_ns: spread(&times, &offsets_ns),
            offsets_ns,
            constraints,
            violated_constraints,
            collectives_used: used.len() - send_recv_used,
            send_recv_used,
            solver_iterations: iterations,
            clocks,
            unaligned: unaligned.clone(),
            instance_times: all_times.clone(),
            kinds: kinds.clone(),
        }
    };
    if n_ranks < 2 || times.is_empty() {
        return Ok(finish(AlignmentStatus::NoCollectives, vec![0; n_ranks], 0));
    }
    // Members per group of a collective's release (`None`: every member on the release).
    let group_size = (n_ranks > FLAT_RELEASE_RANKS).then(|| n_ranks.isqrt() + 1);
    // An untied rank reads the reference clock as far as the QP knows: left free, its offset
    // would be any value (shifting it and its collectives' centres leaves the objective as is).
    let solved_clock: Vec<usize> = (0..n_ranks)
        .map(|r| if tied[r] { clock[r] } else { clock[0] })
        .collect();
    let (outcome, offsets_ns, iterations) = solve_offsets(&times, &solved_clock, group_size)?;
    Ok(finish(outcome, offsets_ns, iterations))
}

/// The clock QP on `times` (per collective, each rank's recorded start and end; rank 0 reads
/// the reference clock, rank r reads clock `clock[r]`): the offsets, in nanoseconds, how they
/// were found and the solver's iterations. `group_size`: members per group of a collective's
/// release (`None`: every member constrains it directly).
fn solve_offsets(
    times: &[Vec<MemberTime>],
    clock: &[usize],
    group_size: Option<usize>,
) -> Result<(AlignmentStatus, Vec<i64>, u32), AlignError> {
    let n_ranks = clock.len();
    // Unknowns, in microseconds (well scaled for the solver): o_1..o_{R-1} (rank 0 is 0), then
    // the centre m_k of each collective's aligned ends, then the release r_k of each one.
    let centre = times
        .first()
        .and_then(|row| row.first())
        .map_or(0, |m| m.end_ns);
    let us = |ns: i64| (ns - centre) as f64 / 1_000.0;
    // One offset per clock: ranks that record the same host read one clock (rank 0's is the
    // reference), so they share one unknown instead of being fitted apart on noisy ends.
    let mut clock_var: Vec<Option<usize>> = vec![None; n_ranks];
    let mut n_offsets = 0;
    for r in 0..n_ranks {
        if clock[r] == clock[0] {
            continue;
        }
        if clock[r] == r {
            clock_var[r] = Some(n_offsets);
            n_offsets += 1;
        } else {
            clock_var[r] = clock_var[clock[r]];
        }
    }
    // Per collective, the groups its members fall in (a subgroup's members may fill few), each
    // with its two variables, numbered after the offsets, centres and releases.
    let first_group_var = n_offsets + 2 * times.len();
    let mut group_vars: Vec<BTreeMap<usize, usize>> = Vec::with_capacity(times.len());
    let mut n_vars = first_group_var;
    if let Some(size) = group_size {
        for row in times {
            let mut groups = BTreeMap::new();
            for m in row {
                groups.entry(m.rank / size).or_insert_with(|| {
                    n_vars += 2;
                    n_vars - 2
                });
            }
            group_vars.push(groups);
        }
    }
    let offset_var = |r: usize| clock_var[r];
    // ½xᵀPx + qᵀx = Σ_k Σ_r (o_r + m_k - end_rk)², P upper triangle.
    let mut p: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let mut q = vec![0.0; n_vars];
    for (k, row) in times.iter().enumerate() {
        let m = n_offsets + k;
        for member in row.iter().filter(|m| m.end_binds) {
            let end = us(member.end_ns);
            *p.entry((m, m)).or_default() += 2.0;
            q[m] -= 2.0 * end;
            if let Some(o) = offset_var(member.rank) {
                *p.entry((o, o)).or_default() += 2.0;
                *p.entry((o, m)).or_default() += 2.0;
                q[o] -= 2.0 * end;
            }
        }
    }
    let p = csc(n_vars, n_vars, &p);
    // Ordering, through one release r_k per collective instead of every ordered pair of its
    // members (2·R rows, not R·(R−1)): every member starts before the release (within the
    // tolerance), which comes before every member's end. Together these say exactly what the
    // pairwise rows `o_later − o_earlier ≤ end[later] − start[earlier] + tolerance` say (the
    // tightest start and end meet at r_k), and the KKT system stays as sparse as the
    // objective's, so its factorization grows with ranks × collectives, not ranks³.
    //
    // Past `FLAT_RELEASE_RANKS`, a collective's members reach its release through groups of
    // about √R ranks: each group g has a latest start `s_kg` and an earliest end `e_kg`
    // (`start − o_r − tolerance ≤ s_kg`, `e_kg ≤ end − o_r` for its members) and
    // `s_kg ≤ r_k ≤ e_kg`: the same feasible offsets. With all R members on one release, the
    // solver's ordering of the KKT matrix grew as K·R² (0.42 s of a 2.2 s replay at 1,024
    // ranks, 0.035 s at 256); through groups each variable touches about √R others.
    let tolerance_us = CONSTRAINT_TOLERANCE_NS as f64 / 1_000.0;
    let mut a: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let mut b = Vec::new();
    let mut row = |entries: &[(usize, f64)], bound: f64| {
        let i = b.len();
        for &(var, value) in entries {
            a.insert((i, var), value);
        }
        b.push(bound);
    };
    for (k, instance) in times.iter().enumerate() {
        let release = n_offsets + times.len() + k;
        // The variable a member's start and end rows go through: the release, or its group's.
        let via = |r: usize| match group_size {
            Some(size) => {
                let base = group_vars[k][&(r / size)];
                (base, base + 1)
            }
            None => (release, release),
        };
        for &MemberTime {
            rank: r,
            start_ns: start,
            end_ns: end,
            start_binds,
            end_binds,
        } in instance
        {
            let (latest_start, earliest_end) = via(r);
            // start − o_r − tolerance ≤ s (the group's latest start, or r_k)
            let mut started = vec![(latest_start, -1.0)];
            // e (the group's earliest end, or r_k) ≤ end − o_r
            let mut ended = vec![(earliest_end, 1.0)];
            if let Some(o) = offset_var(r) {
                started.push((o, -1.0));
                ended.push((o, 1.0));
            }
            if start_binds {
                row(&started, tolerance_us - us(start));
            }
            if end_binds {
                row(&ended, us(end));
            }
        }
        if group_size.is_some() {
            for &base in group_vars[k].values() {
                // s_kg ≤ r_k ≤ e_kg
                row(&[(base, 1.0), (release, -1.0)], 0.0);
                row(&[(release, 1.0), (base + 1, -1.0)], 0.0);
            }
        }
    }
    let n_rows = b.len();
    let a = csc(n_rows, n_vars, &a);

    let solve = |with_constraints: bool| -> Result<(Vec<f64>, SolverStatus, u32), AlignError> {
        let settings = DefaultSettings {
            verbose: false,
            ..DefaultSettings::default()
        };
        let (a, b, cones) = if with_constraints && n_rows > 0 {
            (a.clone(), b.clone(), vec![NonnegativeConeT(n_rows)])
        } else {
            (CscMatrix::zeros((0, n_vars)), Vec::new(), Vec::new())
        };
        let cones: Vec<SupportedConeT<f64>> = cones;
        let mut solver = DefaultSolver::new(&p, &q, &a, &b, &cones, settings)
            .map_err(|e| AlignError::Solver(e.to_string()))?;
        solver.solve();
        let solution = &solver.solution;
        Ok((solution.x.clone(), solution.status, solution.iterations))
    };
    let solved = |s: SolverStatus| matches!(s, SolverStatus::Solved | SolverStatus::AlmostSolved);
    let (mut x, mut status, mut iterations) = solve(true)?;
    let mut outcome = AlignmentStatus::Solved;
    if !solved(status) {
        (x, status, iterations) = solve(false)?;
        outcome = AlignmentStatus::ConstraintsRelaxed;
        if !solved(status) {
            return Err(AlignError::NotSolved(format!("{status:?}")));
        }
    }
    let mut offsets_ns = vec![0i64; n_ranks];
    for r in 1..n_ranks {
        if let Some(v) = offset_var(r) {
            offsets_ns[r] = (x[v] * 1_000.0).round() as i64;
        }
    }
    Ok((outcome, offsets_ns, iterations))
}

/// Per rank, whether its clock is tied to the first rank's: by a chain of collectives whose
/// members share a clock or a collective (union-find over ranks).
fn tied_to_reference(n_ranks: usize, clock: &[usize], times: &[Vec<MemberTime>]) -> Vec<bool> {
    let mut parent: Vec<usize> = (0..n_ranks).collect();
    fn root(parent: &mut [usize], mut r: usize) -> usize {
        while parent[r] != r {
            parent[r] = parent[parent[r]];
            r = parent[r];
        }
        r
    }
    fn join(parent: &mut [usize], a: usize, b: usize) {
        let (a, b) = (root(parent, a), root(parent, b));
        parent[a.max(b)] = a.min(b);
    }
    for r in 0..n_ranks {
        join(&mut parent, r, clock[r]);
    }
    for row in times {
        for pair in row.windows(2) {
            join(&mut parent, pair[0].rank, pair[1].rank);
        }
    }
    let reference = if n_ranks > 0 { root(&mut parent, 0) } else { 0 };
    (0..n_ranks)
        .map(|r| root(&mut parent, r) == reference)
        .collect()
}

/// Per rank, the first rank that reads its clock: the first that records the same host
/// (itself where it records none, or a name that does not tell one machine from another).
pub(crate) fn shared_clocks(ranks: &[RankGraph]) -> Vec<usize> {
    let mut first: BTreeMap<&str, usize> = BTreeMap::new();
    ranks
        .iter()
        .enumerate()
        .map(|(r, rank)| match rank.host_name.as_deref().map(str::trim) {
            Some(host) if !is_generic_host(host) => *first.entry(host).or_insert(r),
            _ => r,
        })
        .collect()
}

/// A host name that many machines share (a container's default, a loopback name): not
/// evidence of one clock.
pub fn is_generic_host(host: &str) -> bool {
    let lower = host.to_ascii_lowercase();
    lower.is_empty()
        || matches!(
            lower.as_str(),
            "localhost" | "localhost.localdomain" | "127.0.0.1" | "::1"
        )
}

/// Distance of each rank's aligned ends from the mean aligned end of their collective, and the
/// smallest slack of the constraints it takes part in.
fn residuals(
    times: &[Vec<MemberTime>],
    offsets_ns: &[i64],
    constraints: &[OrderingConstraint],
) -> Vec<RankResidual> {
    let n_ranks = offsets_ns.len();
    let mut max_abs = vec![0i64; n_ranks];
    let mut squares = vec![0f64; n_ranks];
    let mut collectives = vec![0usize; n_ranks];
    for row in times {
        let aligned = row
            .iter()
            .filter(|m| m.end_binds)
            .map(|m| (m.rank, m.end_ns - offsets_ns[m.rank]));
        let mean = aligned.clone().map(|(_, e)| e as f64).sum::<f64>()
            / aligned.clone().count().max(1) as f64;
        for (r, end) in aligned {
            let d = end as f64 - mean;
            max_abs[r] = max_abs[r].max(d.abs().round() as i64);
            squares[r] += d * d;
            collectives[r] += 1;
        }
    }
    (0..n_ranks)
        .map(|r| RankResidual {
            max_abs_ns: max_abs[r],
            rms_ns: (squares[r] / collectives[r].max(1) as f64).sqrt().round() as i64,
            min_slack_ns: constraints
                .iter()
                .filter(|c| c.later.index() == r || c.earlier.index() == r)
                .map(|c| c.slack_ns)
                .min(),
        })
        .collect()
}

fn spread(times: &[Vec<MemberTime>], offsets_ns: &[i64]) -> i64 {
    times
        .iter()
        .map(|row| {
            let ends = row
                .iter()
                .filter(|m| m.end_binds)
                .map(|m| m.end_ns - offsets_ns[m.rank]);
            ends.clone().max().unwrap_or(0) - ends.min().unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

/// A sparse matrix from (row, column) → value entries.
fn csc(rows: usize, cols: usize, entries: &BTreeMap<(usize, usize), f64>) -> CscMatrix<f64> {
    let (mut i, mut j, mut v) = (Vec::new(), Vec::new(), Vec::new());
    for (&(row, col), &value) in entries {
        i.push(row);
        j.push(col);
        v.push(value);
    }
    CscMatrix::new_from_triplets(rows, cols, i, j, v)
}

#[cfg(test)]
mod tests {
    use super::{
        AlignmentStatus, CONSTRAINT_TOLERANCE_NS, MemberTime, is_point_to_point, solve_offsets,
        tied_to_reference,
    };

    /// A job of `n_ranks` whose clocks are off by up to ±50 µs and whose ends are noisy
    /// enough that the ordering constraints bind: per collective, each rank's recorded
    /// (start, end).
    fn skewed_job(n_ranks: usize, collectives: usize) -> Vec<Vec<MemberTime>> {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |below: i64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % below as u64) as i64
        };
        let offsets: Vec<i64> = (0..n_ranks)
            .map(|r| if r == 0 { 0 } else { next(100_000) - 50_000 })
            .collect();
        (0..collectives)
            .map(|k| {
                let base = 1_000_000 * k as i64;
                let starts: Vec<i64> = (0..n_ranks).map(|_| base + next(30_000)).collect();
                let last = starts.iter().copied().max().unwrap_or(base);
                (0..n_ranks)
                    .map(|r| {
                        // Every tenth rank's end is late by up to 40 µs (a slow copy out).
                        let late = if r % 10 == 3 {
                            next(40_000)
                        } else {
                            next(3_000)
                        };
                        let end = last + 10_000 + late;
                        MemberTime {
                            rank: r,
                            start_ns: starts[r] + offsets[r],
                            end_ns: end + offsets[r],
                            start_binds: true,
                            end_binds: true,
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// Aligned: a collective's latest start, less the tolerance, against its earliest end.
    fn least_slack_ns(times: &[Vec<MemberTime>], offsets_ns: &[i64]) -> i64 {
        times
            .iter()
            .map(|row| {
                let aligned = row.iter().map(|m| {
                    let o = offsets_ns[m.rank];
                    (m.start_ns - o, m.end_ns - o)
                });
                let latest_start = aligned.clone().map(|t| t.0).max().unwrap_or(0);
                let earliest_end = aligned.map(|t| t.1).min().unwrap_or(0);
                earliest_end - (latest_start - CONSTRAINT_TOLERANCE_NS)
            })
            .min()
            .unwrap_or(0)
    }

    #[test]
    fn releases_through_groups_give_the_offsets_of_one_release() {
        let n_ranks = 100;
        let times = skewed_job(n_ranks, 6);
        let clock: Vec<usize> = (0..n_ranks).collect();
        let (flat_status, flat, _) = solve_offsets(&times, &clock, None).expect("flat QP");
        let (grouped_status, grouped, _) =
            solve_offsets(&times, &clock, Some(11)).expect("grouped QP");
        assert_eq!(flat_status, AlignmentStatus::Solved);
        assert_eq!(grouped_status, AlignmentStatus::Solved);
        // The constraints bind (else both are the objective's optimum, and the groups untested)
        // and hold.
        let slack = least_slack_ns(&times, &grouped);
        assert!((-5..=50).contains(&slack), "least slack {slack} ns");
        // One optimum (the objective is strictly convex in the offsets), each found to the
        // solver's tolerance (a relative gap of 1e-8): tens of nanoseconds apart at most,
        // against offsets of tens of microseconds recorded to the microsecond.
        for (r, (f, g)) in flat.iter().zip(&grouped).enumerate() {
            assert!(
                (f - g).abs() <= 100,
                "rank {r}: {f} ns flat, {g} ns through groups"
            );
        }
    }

    #[test]
    fn ranks_apart_from_the_reference_are_not_tied() {
        let member = |rank| MemberTime {
            rank,
            start_ns: 0,
            end_ns: 1,
            start_binds: true,
            end_binds: true,
        };
        // Ranks 0-1 and 2-3 each share a collective; rank 4 reads rank 3's clock (one host);
        // rank 5 shares nothing.
        let times = vec![vec![member(0), member(1)], vec![member(2), member(3)]];
        let clock = [0, 1, 2, 3, 3, 5];
        assert_eq!(
            tied_to_reference(6, &clock, &times),
            [true, true, false, false, false, false]
        );
        // A collective of ranks 1 and 4 ties 2, 3 and 4 to the reference through it.
        let times = [times, vec![vec![member(1), member(4)]]].concat();
        assert_eq!(
            tied_to_reference(6, &clock, &times),
            [true, true, true, true, true, false]
        );
    }

    #[test]
    fn point_to_point_kernels() {
        for op in ["SendRecv", "Send", "Recv", "all_to_all", "AllToAll"] {
            assert!(is_point_to_point(op), "{op}");
        }
        for op in ["AllReduce", "AllGather", "ReduceScatter", "Broadcast"] {
            assert!(!is_point_to_point(op), "{op}");
        }
    }
}
