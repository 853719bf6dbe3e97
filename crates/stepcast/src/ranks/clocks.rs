//! Clock offsets between ranks, from the collectives they share (dPRO §4.2).
//!
//! Every rank's profiler reads its own clock. A matched collective gives two kinds of facts:
//! it cannot end on any rank before the last rank started it (a constraint: with aligned times
//! `end[r] >= start[q]` for every pair of ranks), and all its instances end nearly together (the
//! objective: the spread of the aligned ends). Offsets minimize the squared distance of every
//! aligned end from its collective's centre, subject to the ordering constraints: a convex QP,
//! solved with clarabel's interior-point method.

use std::collections::BTreeMap;

use clarabel::algebra::CscMatrix;
use clarabel::solver::{
    DefaultSettings, DefaultSolver, IPSolver, NonnegativeConeT, SolverStatus, SupportedConeT,
};

use super::{CollectiveMatching, RankTrace};

/// Kineto timestamps are whole microseconds in older traces: constraints hold up to this much.
const CONSTRAINT_TOLERANCE_NS: i64 = 2_000;

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

/// How well one rank's aligned collective ends agree with the others'.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankResidual {
    /// Largest distance of an aligned end from its collective's centre.
    pub max_abs_ns: i64,
    /// Root mean square of those distances.
    pub rms_ns: i64,
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
    /// Ordering constraints of the QP (one per ordered pair of ranks: the tightest collective).
    pub constraints: usize,
    /// Ordering constraints the offsets violate by more than the tolerance (0 when solved).
    pub violated_constraints: usize,
    /// Largest spread of a collective's aligned ends across ranks.
    pub max_end_spread_ns: i64,
    pub solver_iterations: u32,
}

/// Why the offsets could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum AlignError {
    #[error("the clock-alignment solver could not start: {0}")]
    Solver(String),
    #[error("the clock-alignment solver stopped without a solution (status {0})")]
    NotSolved(String),
}

/// A matched collective's start and end on every rank, in each rank's own time (nanoseconds
/// relative to a common base, `Trace::origin_ns` included).
pub(crate) fn instance_times(
    ranks: &[RankTrace<'_>],
    matching: &CollectiveMatching,
    base_ns: i64,
) -> Vec<Vec<(i64, i64)>> {
    matching
        .matched
        .iter()
        .map(|c| {
            c.instances
                .iter()
                .zip(ranks)
                .map(|(task, rank)| {
                    let g = &rank.window.graph;
                    let origin = rank.trace.origin_ns - base_ns;
                    (
                        origin + g.rec_start_ns[task.index()],
                        origin + g.rec_end_ns[task.index()],
                    )
                })
                .collect()
        })
        .collect()
}

/// Estimates a clock offset per rank from the matched collectives.
pub fn align_clocks(
    ranks: &[RankTrace<'_>],
    matching: &CollectiveMatching,
) -> Result<ClockAlignment, AlignError> {
    let n_ranks = ranks.len();
    let base_ns = ranks.first().map_or(0, |r| r.trace.origin_ns);
    let times = instance_times(ranks, matching, base_ns);
    if n_ranks < 2 || times.is_empty() {
        return Ok(ClockAlignment {
            status: AlignmentStatus::NoCollectives,
            offsets_ns: vec![0; n_ranks],
            residuals: vec![RankResidual::default(); n_ranks],
            constraints: 0,
            violated_constraints: 0,
            max_end_spread_ns: spread(&times, &vec![0; n_ranks]),
            solver_iterations: 0,
        });
    }
    // Unknowns, in microseconds (well scaled for the solver): o_1..o_{R-1} (rank 0 is 0), then
    // the centre m_k of each collective's aligned ends.
    let centre = times[0][0].1;
    let us = |ns: i64| (ns - centre) as f64 / 1_000.0;
    let n_offsets = n_ranks - 1;
    let n_vars = n_offsets + times.len();
    let offset_var = |r: usize| (r > 0).then(|| r - 1);
    // ½xᵀPx + qᵀx = Σ_k Σ_r (o_r + m_k - end_rk)², P upper triangle.
    let mut p: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let mut q = vec![0.0; n_vars];
    for (k, row) in times.iter().enumerate() {
        let m = n_offsets + k;
        for (r, &(_, end)) in row.iter().enumerate() {
            let end = us(end);
            *p.entry((m, m)).or_default() += 2.0;
            q[m] -= 2.0 * end;
            if let Some(o) = offset_var(r) {
                *p.entry((o, o)).or_default() += 2.0;
                *p.entry((o, m)).or_default() += 2.0;
                q[o] -= 2.0 * end;
            }
        }
    }
    let p = csc(n_vars, n_vars, &p);
    // Ordering: end[r] - o_r >= start[q] - o_q, i.e. o_r - o_q <= end[r] - start[q], for each
    // ordered pair only the tightest collective.
    let mut bounds: Vec<((usize, usize), i64)> = Vec::new();
    for r in 0..n_ranks {
        for other in 0..n_ranks {
            if r == other {
                continue;
            }
            let bound = times.iter().map(|row| row[r].1 - row[other].0).min();
            if let Some(bound) = bound {
                bounds.push(((r, other), bound + CONSTRAINT_TOLERANCE_NS));
            }
        }
    }
    let mut a: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    let mut b = Vec::with_capacity(bounds.len());
    for (row, &((r, other), bound)) in bounds.iter().enumerate() {
        if let Some(o) = offset_var(r) {
            a.insert((row, o), 1.0);
        }
        if let Some(o) = offset_var(other) {
            a.insert((row, o), -1.0);
        }
        b.push(bound as f64 / 1_000.0);
    }
    let a = csc(bounds.len(), n_vars, &a);

    let solve = |with_constraints: bool| -> Result<(Vec<f64>, SolverStatus, u32), AlignError> {
        let settings = DefaultSettings {
            verbose: false,
            ..DefaultSettings::default()
        };
        let (a, b, cones) = if with_constraints {
            (a.clone(), b.clone(), vec![NonnegativeConeT(bounds.len())])
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
        offsets_ns[r] = (x[r - 1] * 1_000.0).round() as i64;
    }
    let violated_constraints = bounds
        .iter()
        .filter(|&&((r, other), bound)| offsets_ns[r] - offsets_ns[other] > bound)
        .count();
    Ok(ClockAlignment {
        status: outcome,
        residuals: residuals(&times, &offsets_ns),
        max_end_spread_ns: spread(&times, &offsets_ns),
        offsets_ns,
        constraints: bounds.len(),
        violated_constraints,
        solver_iterations: iterations,
    })
}

/// Distance of each rank's aligned ends from the mean aligned end of their collective.
fn residuals(times: &[Vec<(i64, i64)>], offsets_ns: &[i64]) -> Vec<RankResidual> {
    let n_ranks = offsets_ns.len();
    let mut max_abs = vec![0i64; n_ranks];
    let mut squares = vec![0f64; n_ranks];
    for row in times {
        let aligned: Vec<i64> = row.iter().zip(offsets_ns).map(|(t, o)| t.1 - o).collect();
        let mean = aligned.iter().map(|&e| e as f64).sum::<f64>() / aligned.len() as f64;
        for (r, &end) in aligned.iter().enumerate() {
            let d = end as f64 - mean;
            max_abs[r] = max_abs[r].max(d.abs().round() as i64);
            squares[r] += d * d;
        }
    }
    (0..n_ranks)
        .map(|r| RankResidual {
            max_abs_ns: max_abs[r],
            rms_ns: (squares[r] / times.len().max(1) as f64).sqrt().round() as i64,
        })
        .collect()
}

fn spread(times: &[Vec<(i64, i64)>], offsets_ns: &[i64]) -> i64 {
    times
        .iter()
        .map(|row| {
            let ends = row.iter().zip(offsets_ns).map(|(t, o)| t.1 - o);
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
