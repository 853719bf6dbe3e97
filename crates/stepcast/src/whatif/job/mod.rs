//! Job-level predictions (dPRO §4–§5): a transform applied to every rank of a job, the
//! transformed ranks merged into one global graph ([`crate::ranks`]) and replayed together.
//!
//! A one-rank what-if carries its collectives' peers as a declared input (their recorded
//! lateness, [`super::Peers`]). Here the peers are the other ranks' transformed graphs: a rank
//! that gets faster waits for its peers in the replay, not by a recorded offset, and the job's
//! step ends where its last rank's does. Every rank is transformed: dPRO's symmetry (one rank
//! stands for all) is not assumed, so ranks that run different programs (DLRM's embedding
//! shards, a pipeline's stages) are each transformed as their own trace says.
//!
//! The job's step is measured as a rank's is (the steady-state period of [`super`]), over the
//! steady steps every rank has: a step of the job ends when its last rank's step ends, and the
//! period runs from the end of the step before the first steady one (the last rank's), else
//! from the earliest rank's start of the first steady step. A prediction is measured from the
//! earlier of its own start and the baseline's ([`super::Prediction::measured_against`]).
//!
//! The baseline is the global graph of every rank's what-if graph untransformed (no edge
//! inferred from timing, the warm-up step frozen), the same causes every prediction rests on.
//! A matched collective's transfer is what the aligned clocks imply (its recorded end less the
//! last member's start, [`crate::ranks::TransferModel`]), scaled by what the transform did to
//! the instance's own cost. Unmatched collectives keep each rank's one-rank peer input.

mod advise;
mod period;
mod trust;

use std::sync::OnceLock;

use rayon::prelude::*;

use super::trust::{WindowTrust, window_trust_of};
use super::{Baseline, Context, EditGraph, Peers, Prepared, WhatIfError, speedup};
use crate::graph::{Graph, TaskId};
use crate::ranks::{
    AlignError, ClockAlignment, GlobalGraph, MatchedCollective, RankGraph, RankView, TransferModel,
    align_clocks, match_collectives, merge, replay_global,
};
use crate::simulate::SimError;

pub use advise::{JobAdvice, JobCandidate};
pub use period::{JobPeriod, RankPeriod};
use period::{empty_period, job_period};
pub use trust::JobAssessed;

/// One rank of a job: its number and what its what-ifs read.
#[derive(Clone, Copy)]
pub struct JobRank<'a> {
    pub rank: i64,
    pub context: Context<'a>,
}

/// Why a job's ranks cannot be predicted together.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("no ranks to predict")]
    NoRanks,
    #[error("two traces claim rank {0}; give one trace per rank")]
    DuplicateRank(i64),
    #[error(transparent)]
    Align(#[from] AlignError),
    #[error("the ranks share no steady step (a step number every rank recorded)")]
    NoCommonSteps,
    #[error("the global graph cannot be replayed: {0}")]
    Sim(#[from] SimError),
    #[error("rank {rank}: {source}")]
    Rank {
        rank: i64,
        #[source]
        source: Box<WhatIfError>,
    },
}

/// One replay of the job's global graph, measured.
#[derive(Clone, Debug)]
pub struct JobReplay {
    pub period: JobPeriod,
    /// Time of the global critical path on each rank (job rank order) over the steady steps
    /// the period spans: the ranks that bound the job's step.
    pub critical_path_ns_by_rank: Vec<i64>,
    /// Matched collectives of the recording that the transform removed on some member (left
    /// out of the global graph: the other members' instances run without their peers).
    pub collectives_dropped: usize,
    pub collectives_matched: usize,
}

impl JobReplay {
    /// The ranks holding the most of the critical path, largest share first (ties by rank),
    /// each with its time per steady step; ranks holding none left out.
    pub fn bound_by(&self) -> Vec<(i64, i64)> {
        let steps = self.period.steady.len().max(1) as i64;
        let mut by_rank: Vec<(i64, i64)> = self
            .period
            .ranks
            .iter()
            .zip(&self.critical_path_ns_by_rank)
            .filter(|&(_, &ns)| ns > 0)
            .map(|(r, &ns)| (r.rank, ns / steps))
            .collect();
        by_rank.sort_by_key(|&(rank, ns)| (std::cmp::Reverse(ns), rank));
        by_rank
    }
}

/// A job-level prediction.
#[derive(Clone, Debug)]
pub struct JobOutcome {
    pub baseline: JobReplay,
    pub predicted: JobReplay,
    /// `baseline.period.step_ns / predicted.period.step_ns`.
    pub speedup: f64,
    /// What the transform cut along the baseline's critical path across ranks, per steady
    /// step: costs, untraced gaps, lags and recorded peer waits of its tasks (as a one-rank
    /// prediction counts them, [`super::Outcome::path_cut_ns`]).
    pub path_cut_ns: i64,
}

/// A job ready to predict on: its ranks matched and aligned, their editable graphs, and the
/// baseline replay every prediction is compared with.
pub struct Job<'a> {
    ranks: Vec<JobRank<'a>>,
    graphs: Vec<RankGraph>,
    matched: Vec<MatchedCollective>,
    alignment: ClockAlignment,
    bases: Vec<EditGraph>,
    baseline: JobReplay,
    /// The baseline's critical path across ranks, as (rank index, task of its editable
    /// graph): what a transform must cut to shorten the job's step.
    /// Each with its transfer in the baseline's global graph where it is a matched
    /// collective's instance (what the merge gives it instead of its one-rank cost).
    baseline_path: Vec<PathStep>,
    measured: JobPeriod,
    /// Per rank: what its one-rank predictions start from, and its window's self-checks;
    /// made on the first [`Job::assess`] (a search that only replays the job needs neither).
    alone: OnceLock<Vec<(Prepared, WindowTrust)>>,
}

impl<'a> Job<'a> {
    /// Matches and aligns `ranks` (in rank order; the first is the clock reference) and
    /// replays the untransformed job once.
    pub fn new(ranks: Vec<JobRank<'a>>) -> Result<Job<'a>, JobError> {
        if ranks.is_empty() {
            return Err(JobError::NoRanks);
        }
        for pair in ranks.windows(2) {
            if pair[0].rank == pair[1].rank {
                return Err(JobError::DuplicateRank(pair[0].rank));
            }
        }
        let graphs: Vec<RankGraph> = ranks
            .par_iter()
            .map(|r| RankGraph::new(r.rank, r.context.trace, r.context.window.clone()))
            .collect();
        let matching = match_collectives(&graphs);
        let alignment = align_clocks(&graphs, &matching)?;
        let bases: Vec<EditGraph> = ranks.par_iter().map(|r| r.context.edit()).collect();
        let mut job = Job {
            ranks,
            graphs,
            matched: matching.matched,
            alignment,
            bases,
            baseline: JobReplay {
                period: empty_period(),
                critical_path_ns_by_rank: Vec::new(),
                collectives_dropped: 0,
                collectives_matched: 0,
            },
            baseline_path: Vec::new(),
            measured: empty_period(),
            alone: OnceLock::new(),
        };
        let Replayed {
            replay: baseline,
            global,
            path,
            built_ids,
        } = job.replay(&job.bases, None)?;
        job.measured = job_period(
            &global,
            &crate::whatif::recorded_timeline(&global.graph),
            None,
        )
        .ok_or(JobError::NoCommonSteps)?;
        // The path's tasks back in the editable graphs' ids.
        let edit_ids: Vec<Vec<TaskId>> = built_ids
            .iter()
            .map(|new_id| {
                let mut edit_id =
                    vec![TaskId::NONE; new_id.iter().filter(|t| **t != TaskId::NONE).count()];
                for (old, new) in new_id.iter().enumerate() {
                    if *new != TaskId::NONE {
                        edit_id[new.index()] = TaskId(old as u32);
                    }
                }
                edit_id
            })
            .collect();
        let transfers: std::collections::HashMap<TaskId, i64> = global
            .collectives
            .iter()
            .flat_map(|c| c.tasks.iter().copied().zip(c.transfer_ns.iter().copied()))
            .collect();
        job.baseline_path = path
            .into_iter()
            .filter(|&t| !global.is_release(t))
            .map(|t| {
                let rank = global.rank_of(t).index();
                PathStep {
                    rank,
                    task: edit_ids[rank][(t.0 - global.ranks[rank].first_task) as usize],
                    transfer_ns: transfers.get(&t).copied(),
                }
            })
            .collect();
        job.baseline = baseline;
        Ok(job)
    }

    /// Every rank's one-rank baseline and window checks ([`Job::alone`]'s), made once.
    fn alone(&self) -> Result<&[(Prepared, WindowTrust)], JobError> {
        if let Some(alone) = self.alone.get() {
            return Ok(alone);
        }
        let alone = self
            .ranks
            .par_iter()
            .map(|r| {
                let of_rank = |source| JobError::Rank {
                    rank: r.rank,
                    source: Box::new(source),
                };
                let baseline = Baseline::of(r.context.window).map_err(of_rank)?;
                let prepared = Prepared::of(&r.context, &baseline).figures_only();
                let trust = window_trust_of(&r.context, &baseline).map_err(of_rank)?;
                Ok((prepared, trust))
            })
            .collect::<Result<Vec<_>, JobError>>()?;
        Ok(self.alone.get_or_init(|| alone))
    }

    pub fn ranks(&self) -> &[JobRank<'a>] {
        &self.ranks
    }

    /// The untransformed job's replay.
    pub fn baseline(&self) -> &JobReplay {
        &self.baseline
    }

    /// The job's steps as recorded (on the aligned clocks), measured as a replay's are: what
    /// the baseline reproduces.
    pub fn measured(&self) -> &JobPeriod {
        &self.measured
    }

    /// Every rank transformed by `apply` (given the rank's index and context), merged and
    /// replayed, against the baseline.
    pub fn predict(
        &self,
        apply: impl Fn(usize, &Context<'_>, &mut EditGraph) -> Result<(), WhatIfError> + Sync,
    ) -> Result<JobOutcome, JobError> {
        let edits: Vec<EditGraph> = (0..self.ranks.len())
            .into_par_iter()
            .map(|r| {
                let rank = &self.ranks[r];
                let mut edit = self.bases[r].clone();
                apply(r, &rank.context, &mut edit).map_err(|source| JobError::Rank {
                    rank: rank.rank,
                    source: Box::new(source),
                })?;
                Ok(edit)
            })
            .collect::<Result<_, JobError>>()?;
        let predicted = self.replay(&edits, Some(&self.baseline.period))?.replay;
        let steps = self.baseline.period.steady.len().max(1) as i64;
        let path_cut_ns = self
            .baseline_path
            .iter()
            .map(|step| step.cut(&self.bases[step.rank], &edits[step.rank]))
            .sum::<i64>()
            / steps;
        Ok(JobOutcome {
            speedup: speedup(self.baseline.period.step_ns, predicted.period.step_ns),
            baseline: self.baseline.clone(),
            predicted,
            path_cut_ns,
        })
    }

    /// Builds every rank's `edits`, merges them with the matched collectives whose instances
    /// all survive, replays the global graph and measures it (against `baseline` if given).
    fn replay(
        &self,
        edits: &[EditGraph],
        baseline: Option<&JobPeriod>,
    ) -> Result<Replayed, JobError> {
        let built: Vec<(Graph, Vec<TaskId>)> = edits
            .par_iter()
            .zip(&self.ranks)
            .map(|(edit, rank)| {
                edit.build().map_err(|e| JobError::Rank {
                    rank: rank.rank,
                    source: Box::new(e.into()),
                })
            })
            .collect::<Result<_, JobError>>()?;
        // The collectives in the built graphs' ids, with the scale of each instance's cost.
        let mut matched = Vec::with_capacity(self.matched.len());
        let mut scales: Vec<Vec<f64>> = Vec::with_capacity(self.matched.len());
        let mut dropped = 0;
        for c in &self.matched {
            let instances: Option<Vec<TaskId>> = c
                .members()
                .map(|(r, t)| {
                    let id = built[r.index()].1[t.index()];
                    (id != TaskId::NONE).then_some(id)
                })
                .collect();
            let Some(instances) = instances else {
                dropped += 1;
                continue;
            };
            scales.push(
                c.members()
                    .map(|(r, t)| cost_scale(&self.bases[r.index()], &edits[r.index()], t))
                    .collect(),
            );
            matched.push(MatchedCollective {
                instances,
                ..c.clone()
            });
        }
        let views: Vec<RankView<'_>> = built
            .iter()
            .zip(&self.graphs)
            .map(|((graph, _), rank)| RankView {
                graph,
                ..RankView::of(rank)
            })
            .collect();
        let mut global = merge(
            &views,
            &matched,
            &self.alignment,
            TransferModel::ImpliedByAlignedClocks,
        );
        for (c, scale) in global.collectives.iter_mut().zip(&scales) {
            for ((task, transfer), &k) in c.tasks.iter().zip(&mut c.transfer_ns).zip(scale) {
                if k != 1.0 {
                    *transfer = scaled(*transfer, k);
                    global.graph.dur_ns[task.index()] = *transfer;
                    global.graph.dur_without_inferred_ns[task.index()] = *transfer;
                }
            }
        }
        let replay = replay_global(&global)?;
        let period =
            job_period(&global, &replay.timeline, baseline).ok_or(JobError::NoCommonSteps)?;
        let critical_path_ns_by_rank =
            replay.critical_path_ns_by_rank_between(&global, period.span_start_ns, period.end_ns);
        let measured = JobReplay {
            period,
            critical_path_ns_by_rank,
            collectives_dropped: dropped,
            collectives_matched: matched.len(),
        };
        let path = replay.critical_path.iter().map(|p| p.task).collect();
        let built_ids = built.into_iter().map(|(_, new_id)| new_id).collect();
        Ok(Replayed {
            replay: measured,
            global,
            path,
            built_ids,
        })
    }
}

/// One replay of the job and what the baseline keeps of it.
struct Replayed {
    replay: JobReplay,
    global: GlobalGraph,
    /// The critical path across ranks, earliest first (global task ids).
    path: Vec<TaskId>,
    /// Per rank, per id of its editable graph: its task in the built graph.
    built_ids: Vec<Vec<TaskId>>,
}

/// A task of the baseline's critical path across ranks.
struct PathStep {
    rank: usize,
    /// Its id in the rank's editable graph.
    task: TaskId,
    /// A matched collective's instance: its transfer in the global graph.
    transfer_ns: Option<i64>,
}

impl PathStep {
    /// What the change from `base` to `edit` cut from it (a one-rank prediction's
    /// [`super::path_cut`]); an instance's cost is its transfer in the global graph, scaled as
    /// the merge scales it.
    fn cut(&self, base: &EditGraph, edit: &EditGraph) -> i64 {
        let cut = super::path_cut(base, edit, self.task, Peers::Skew);
        match self.transfer_ns {
            Some(transfer) if edit.is_alive(self.task) => {
                let own = (base.dur_ns(self.task) - edit.dur_ns(self.task)).max(0);
                let scaled = scaled(transfer, cost_scale(base, edit, self.task));
                cut - own + (transfer - scaled).max(0)
            }
            _ => cut,
        }
    }
}

/// `ns` scaled by `k`, to the nearest nanosecond.
fn scaled(ns: i64, k: f64) -> i64 {
    if k == 1.0 {
        ns
    } else {
        (ns as f64 * k).round() as i64
    }
}

/// What the transform did to `task`'s own cost: its cost in `edit` over its cost in `base`
/// (1 where the base cost is 0 or the task is unchanged).
fn cost_scale(base: &EditGraph, edit: &EditGraph, task: TaskId) -> f64 {
    let before = base.dur_ns(task);
    let after = edit.dur_ns(task);
    if before <= 0 || before == after {
        1.0
    } else {
        after as f64 / before as f64
    }
}
