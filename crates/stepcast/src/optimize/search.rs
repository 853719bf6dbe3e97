//! The search (dPRO's Algorithm 1): greedy, one move per round, the best of the moves the
//! passes propose for the plan so far.
//!
//! Each round, every pass proposes its moves with the most each can gain (the costs it cuts:
//! a replay is a longest path, so cutting Δ of cost shortens the step by at most Δ). A move
//! that only cuts costs, none on the critical path of the slowest rank with the plan so far,
//! is left out unreplayed (it cannot shorten that path). The others are tried most-promising
//! first, in fixed batches replayed in parallel; once the best gain
//! found beats every remaining move's bound, the rest are pruned unreplayed. The best move is
//! taken if it makes the predicted step faster by at least [`MIN_GAIN`] of it; else the
//! search has converged. The batches do not depend on the number of threads, and ties go to
//! the smaller move, so the plan does not either.

use rayon::prelude::*;

use super::passes::{self, Move, PassId};
use super::{Hooks, Optimizer, Stop};
use crate::whatif::WhatIfError;

/// Moves replayed per batch (fixed, so that pruning does not depend on the thread count).
const BATCH: usize = 8;

/// A move must make the step faster by this share of it to be taken: below it, the gain is
/// within rounding and a plan would fill with moves that change nothing a user would see.
pub const MIN_GAIN: f64 = 0.0005;

/// What the search found: the moves in the order taken, each with its bound and the
/// predicted step after it.
#[derive(Clone, Debug, Default)]
pub struct Search {
    pub moves: Vec<(Move, i64)>,
    pub after_ns: Vec<i64>,
    pub stats: SearchStats,
}

/// How the search went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    pub rounds: usize,
    /// Moves replayed.
    pub evaluated: usize,
    /// Moves pruned by their bound, unreplayed.
    pub pruned: usize,
    /// Moves left out because none of the tasks whose costs they cut is on the critical path
    /// of the slowest rank, unreplayed.
    pub off_path: usize,
    /// Moves whose transform failed (a cycle): left out.
    pub failed: usize,
    pub stopped: Stop,
    /// Searches started from a default that beat the first plan.
    pub restarts: usize,
}

impl Optimizer<'_> {
    /// Greedy search from `seed` (moves taken first, as they are).
    pub(super) fn greedy(
        &self,
        seed: &[Move],
        hooks: &dyn Hooks,
        stats: &mut SearchStats,
    ) -> Result<Search, WhatIfError> {
        let mut plan: Vec<Move> = Vec::new();
        let mut search = Search::default();
        let mut current = self.job_ns(&[])?;
        for m in seed {
            plan.push(m.clone());
            current = self.job_ns(&plan)?;
            search.moves.push((m.clone(), 0));
            search.after_ns.push(current);
        }
        let passes: Vec<PassId> = passes::REGISTRY
            .into_iter()
            .filter(|p| self.options.passes.contains(p))
            .collect();
        loop {
            if hooks.stop() {
                stats.stopped = Stop::TimeLimit;
                break;
            }
            stats.rounds += 1;
            // Critical-path driven (Algorithm 1): a move that only cuts costs, none of them on
            // the slowest rank's critical path, cannot shorten its step.
            let (slowest, critical) = self.critical_rank(&plan)?;
            let rank = &self.ranks[slowest];
            let mut candidates: Vec<(Move, i64)> = Vec::new();
            for (m, bound) in passes
                .iter()
                .flat_map(|&p| passes::candidates(p, &self.leader().facts, &plan))
            {
                match passes::touches(&rank.facts, &rank.base, &m) {
                    Some(tasks) if !tasks.iter().any(|t| critical.binary_search(t).is_ok()) => {
                        stats.off_path += 1;
                    }
                    _ => candidates.push((m, bound)),
                }
            }
            candidates.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            // A move is taken only if it gains at least the threshold: one whose bound is
            // below it is pruned like one whose bound is below the best gain found.
            let threshold = (((current as f64) * MIN_GAIN).ceil() as i64).max(1);
            let mut best: Option<(i64, usize)> = None;
            let mut next = 0;
            while next < candidates.len() {
                let best_gain =
                    best.map_or(threshold - 1, |(ns, _)| (current - ns).max(threshold - 1));
                let batch: Vec<usize> = (next..candidates.len())
                    .take(BATCH)
                    .take_while(|&i| candidates[i].1 > best_gain)
                    .collect();
                if batch.is_empty() {
                    stats.pruned += candidates.len() - next;
                    break;
                }
                let results: Vec<Result<i64, WhatIfError>> = batch
                    .par_iter()
                    .map(|&i| {
                        let mut with = plan.clone();
                        with.push(candidates[i].0.clone());
                        self.job_ns(&with)
                    })
                    .collect();
                for (&i, result) in batch.iter().zip(results) {
                    stats.evaluated += 1;
                    match result {
                        Ok(ns) => {
                            if best.is_none_or(|(b, _)| ns < b) {
                                best = Some((ns, i));
                            }
                        }
                        Err(_) => stats.failed += 1,
                    }
                }
                next += batch.len();
                hooks.progress(stats.evaluated, best.map_or(current, |b| b.0.min(current)));
                if hooks.stop() {
                    break;
                }
            }
            match best {
                Some((ns, i)) if current - ns >= threshold => {
                    let (m, bound) = candidates.swap_remove(i);
                    plan.push(m.clone());
                    search.moves.push((m, bound));
                    search.after_ns.push(ns);
                    current = ns;
                }
                _ => {
                    if stats.stopped != Stop::TimeLimit {
                        stats.stopped = Stop::Converged;
                    }
                    break;
                }
            }
        }
        Ok(search)
    }
}
