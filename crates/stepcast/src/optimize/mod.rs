//! `optimize`: dPRO's strategy search (§5, Algorithm 1) over the passes of [`passes`]: op
//! fusion, tensor fusion and partition, `advise`'s program models, and memory.
//!
//! The search runs on the causal graph of every what-if ([`crate::whatif`]): the window's
//! graph without edges inferred from timing, edited by the passes and replayed, so a plan is
//! never an artifact of pinned times. Every prediction is the steady-state period of the
//! replayed window ([`crate::whatif::predict`]). Several ranks of one job are planned as one
//! (dPRO's symmetry: one plan, whose moves name kernels and all-reduce slots, never task ids):
//! ranks that run the same program are replayed through one representative and keep their
//! own recorded steps as inputs (`symmetry`). Where the ranks replay as one job, a plan's
//! step is the job's global replay with the plan on every rank ([`crate::whatif::job`]), so a
//! rank made faster waits for its peers; else the job's step is the slowest rank's.
//!
//! Accelerations (dPRO §5.3, Table 5): the coarsened view (one decision per fusion region or
//! all-reduce slot, for every steady step and rank at once), bounds that prune moves that
//! cannot beat the best one found (`search`), and parallel replay of candidates (rayon).
//! Not done: dPRO's partial replay (every candidate replays the whole window).
//!
//! A plan is compared with the defaults a user has today and with `advise`'s best candidate
//! from the same passes ([`Optimizer::references`]); when one of them beats the plan, the
//! search starts again from it, so the plan is at least as fast as each. Memory comes last:
//! when the recorded peak exceeds the budget, the memory pass adds the trade that fits with
//! the least slowdown.
//!
//! The library does no I/O and reads no clock: the caller stops the search and shows progress
//! through [`Hooks`].

pub mod passes;
mod search;
mod symmetry;

use rayon::prelude::*;

use crate::graph::TaskId;
use crate::whatif::advise::advise;
use crate::whatif::edit::EditGraph;
use crate::whatif::job::{Job, JobError, JobRank, JobReplay};
use crate::whatif::models::Model;
use crate::whatif::trust::{Verdict, WindowTrust, assess_kind, window_trust_of};
use crate::whatif::{
    Baseline, Context, Prediction, Prepared, WhatIfError, predict, replay_with_ids,
    replay_with_peers, what_if_prepared,
};

pub use passes::{Facts, Move, PassId};
pub use search::{MIN_GAIN, Search, SearchStats};
pub use symmetry::RankGroup;

/// What `optimize` is asked.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The passes the plan may use.
    pub passes: Vec<PassId>,
    /// Device memory the plan must fit in; `None`: the device's memory from the trace.
    pub memory_budget_bytes: Option<i64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            passes: PassId::ALL.to_vec(),
            memory_budget_bytes: None,
        }
    }
}

/// How the caller follows and stops the search (a clock and a progress bar in the CLI).
pub trait Hooks: Sync {
    /// Whether to stop now (the time limit): the plan so far is returned, marked so.
    fn stop(&self) -> bool {
        false
    }
    /// `evaluated` moves replayed so far; the best predicted step yet.
    fn progress(&self, _evaluated: usize, _best_ns: i64) {}
}

/// Hooks that never stop and show nothing.
pub struct NoHooks;

impl Hooks for NoHooks {}

/// Why the search ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stop {
    /// No move makes the step faster by [`MIN_GAIN`].
    #[default]
    Converged,
    /// The caller's time limit: the plan is the best found by then.
    TimeLimit,
}

impl Stop {
    pub fn as_str(self) -> &'static str {
        match self {
            Stop::Converged => "converged",
            Stop::TimeLimit => "time_limit",
        }
    }
}

/// One rank: its context, its editable graph and what the passes know about it.
struct Rank<'a> {
    context: Context<'a>,
    base: EditGraph,
    facts: Facts,
    baseline: Prediction,
}

impl Rank<'_> {
    /// The predicted step with `plan` and its critical path's tasks, as ids of `base`
    /// (sorted).
    fn critical(&self, plan: &[Move]) -> Result<(i64, Vec<TaskId>), WhatIfError> {
        let mut edit = self.base.clone();
        passes::apply(&self.context, &self.facts, plan, &mut edit)?;
        let (_, predicted, new_id) = replay_with_ids(&self.context, &edit, self.context.peers)?;
        // Measured as every what-if is (`Prediction::measured_against`).
        let predicted = predicted.measured_against(&self.baseline);
        let on_path: Vec<TaskId> = (0..new_id.len())
            .filter(|&t| {
                let id = new_id[t];
                id != TaskId::NONE && predicted.critical_tasks.binary_search(&id).is_ok()
            })
            .map(|t| TaskId(t as u32))
            .collect();
        Ok((predicted.step_ns, on_path))
    }

    /// How far `m`'s prediction alone on this rank can be trusted: the prediction of
    /// `whatif`, assessed as its models' would be ([`passes::kind`]).
    fn verdict(
        &self,
        prepared: &Prepared,
        window: &WindowTrust,
        m: &Move,
    ) -> Result<Verdict, WhatIfError> {
        let mut outcome = what_if_prepared(&self.context, prepared, |edit| {
            passes::apply(&self.context, &self.facts, std::slice::from_ref(m), edit)
        })?;
        let kind = passes::kind(&self.context, &self.facts, m);
        assess_kind(&self.context, window, &kind, &mut outcome);
        Ok(Verdict::of(&outcome))
    }

    fn predict(&self, plan: &[Move]) -> Result<i64, WhatIfError> {
        if plan.is_empty() {
            return Ok(self.baseline.step_ns);
        }
        let mut edit = self.base.clone();
        passes::apply(&self.context, &self.facts, plan, &mut edit)?;
        let (_, predicted) = replay_with_peers(&self.context, &edit, self.context.peers)?;
        Ok(predicted.measured_against(&self.baseline).step_ns)
    }
}

/// The ranks of one job and the options: what the search and the reports run on.
pub struct Optimizer<'a> {
    ranks: Vec<Rank<'a>>,
    /// Several ranks replayed as one job (their global graph): what a plan's step is, so a
    /// rank that gets faster waits for its peers. `None` for one rank, or where the ranks
    /// cannot be replayed together (`job_note` says why): each rank is then replayed alone.
    job: Option<Job<'a>>,
    job_note: Option<String>,
    /// Ranks of one program, each replayed through its representative.
    groups: Vec<RankGroup>,
    leader: usize,
    options: Options,
}

/// A plan's move with its figures.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedMove {
    pub step: Move,
    /// The most it can gain per step, as its pass bounds it (0 for a seeded default or a
    /// memory trade; `i64::MAX` where no cost bound exists).
    pub bound_ns: i64,
    /// The job's predicted step with this move alone.
    pub alone_ns: i64,
    /// The job's predicted step with the plan's moves up to this one.
    pub after_ns: i64,
    /// What to do in PyTorch.
    pub pytorch: String,
    pub caveats: Vec<String>,
    /// How far its prediction alone on the leader rank can be trusted, as `whatif`'s: the
    /// bound of what it cuts along that rank's critical path, the window's and the move's
    /// caveats, an anomaly, a gain resting on one task, the window's decline.
    pub trust: Verdict,
}

/// A plan the user could have instead: a default, or `advise`'s best candidate.
#[derive(Clone, Debug, PartialEq)]
pub struct Reference {
    pub name: String,
    /// The same change as moves (what the search could take).
    pub moves: Vec<Move>,
    /// The job's predicted step.
    pub step_ns: i64,
}

/// A memory-for-time trade tried against the budget.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryOption {
    pub step: Move,
    /// How far the job's peak falls: the recorded peak less [`Self::predicted_peak_bytes`].
    pub saved_bytes: i64,
    /// The job's peak with the trade: the largest over the ranks of each rank's peak with it,
    /// read off its recorded memory timeline ([`crate::whatif::models::step_peak`]); where a
    /// rank's memory events record no addresses, its recorded peak less the activations'
    /// saving, which its process's peak may not fall by ([`MemoryChoice::peak_source`]).
    pub predicted_peak_bytes: i64,
    /// The job's predicted step with the plan and this trade.
    pub step_ns: Option<i64>,
    pub fits: bool,
}

/// The memory pass's decision.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryChoice {
    pub budget_bytes: i64,
    /// `given` or `device`.
    pub budget_source: &'static str,
    /// The recorded peak of allocated memory (the largest over the ranks).
    pub peak_bytes: i64,
    /// The peak with the chosen trade, if any.
    pub predicted_peak_bytes: i64,
    /// `memory_timeline` (every rank's peak with a trade read off its recorded memory) or
    /// `activations_saved` (some rank's memory events record no addresses: its peak is taken
    /// to fall by the activations' saving, a figure the process's peak may not reach).
    pub peak_source: &'static str,
    pub options: Vec<MemoryOption>,
    /// The trade taken (the fitting option with the least predicted step), if the peak
    /// exceeded the budget.
    pub chosen: Option<Move>,
}

/// What `optimize` found.
#[derive(Clone, Debug, PartialEq)]
pub struct Optimized {
    pub passes: Vec<PassId>,
    pub ranks: usize,
    /// Ranks that run one program: the representative's replays stand for the group.
    pub groups: Vec<RankGroup>,
    /// The rank whose facts propose the moves (the slowest in the baseline).
    pub leader: usize,
    /// The job's predicted step without and with the plan.
    pub baseline_ns: i64,
    pub planned_ns: i64,
    /// Per rank: (baseline, planned) predicted step (its own period in the job's replay).
    pub per_rank: Vec<(i64, i64)>,
    /// Whether the job's figures come from its global replay (every rank transformed and
    /// replayed with its peers), else from each rank alone, the job's step its slowest's.
    pub global: bool,
    /// The ranks holding the job's critical path across ranks, most first, with their time per
    /// steady step: without and with the plan (empty without a global replay).
    pub bound_by_before: Vec<(i64, i64)>,
    pub bound_by: Vec<(i64, i64)>,
    pub moves: Vec<PlannedMove>,
    pub references: Vec<Reference>,
    /// Defaults that could not be costed on this trace, and why.
    pub reference_notes: Vec<String>,
    /// `None` when the memory pass is off or the trace has no memory events.
    pub memory: Option<MemoryChoice>,
    /// Why no memory choice was made, when `memory` is `None` and the pass is on.
    pub memory_note: Option<String>,
    pub search: SearchStats,
    /// The leader window's caveats.
    pub caveats: Vec<String>,
    /// Why no prediction on the leader's window can be trusted, if none can
    /// (`trust::WindowTrust::declined`): the plan is still searched, its figures shown only
    /// beside this reason.
    pub declined: Option<String>,
}

impl<'a> Optimizer<'a> {
    /// Finds what the passes know about every rank and replays each baseline.
    pub fn new(contexts: &[Context<'a>], options: Options) -> Result<Optimizer<'a>, WhatIfError> {
        let ranks: Vec<Rank<'a>> = contexts
            .par_iter()
            .map(|&context| {
                let base = context.edit();
                let baseline = predict(context.window, &context.window.graph)?;
                let steady = baseline.steady.clone().count();
                let facts = Facts::find(&context, &base, steady);
                Ok(Rank {
                    context,
                    base,
                    facts,
                    baseline,
                })
            })
            .collect::<Result<_, WhatIfError>>()?;
        if ranks.is_empty() {
            return Err(WhatIfError::NoSteps);
        }
        let leader = (0..ranks.len())
            .max_by_key(|&r| (ranks[r].baseline.step_ns, std::cmp::Reverse(r)))
            .unwrap_or(0);
        let fingerprints: Vec<u64> = ranks
            .par_iter()
            .map(|r| symmetry::program_fingerprint(&r.context))
            .collect();
        let baseline_ns: Vec<i64> = ranks.iter().map(|r| r.baseline.step_ns).collect();
        let groups = symmetry::group_ranks(&fingerprints, &baseline_ns);
        let (job, job_note) = if contexts.len() > 1 {
            let job_ranks = contexts
                .iter()
                .enumerate()
                .map(|(position, &context)| JobRank {
                    rank: crate::ranks::recorded_rank(context.trace).unwrap_or(position as i64),
                    context,
                })
                .collect();
            match Job::new(job_ranks) {
                Ok(job) => (Some(job), None),
                Err(e) => (
                    None,
                    Some(format!(
                        "the ranks could not be replayed as one job ({e}): each rank is replayed \
                         alone, its peers at their recorded lateness"
                    )),
                ),
            }
        } else {
            (None, None)
        };
        Ok(Optimizer {
            job,
            job_note,
            ranks,
            groups,
            leader,
            options,
        })
    }

    /// Ranks that run one program, each group replayed through its representative.
    pub fn groups(&self) -> &[RankGroup] {
        &self.groups
    }

    fn leader(&self) -> &Rank<'a> {
        &self.ranks[self.leader]
    }

    /// The job's predicted step with `plan`: its global replay's, else the slowest rank's.
    pub fn job_ns(&self, plan: &[Move]) -> Result<i64, WhatIfError> {
        if let Some(replay) = self.job_replay(plan)? {
            return Ok(replay.period.step_ns);
        }
        let steps = self.per_rank_ns(plan)?;
        Ok(steps.into_iter().max().unwrap_or(0))
    }

    /// The job's global replay with `plan` on every rank (`None` without a job).
    fn job_replay(&self, plan: &[Move]) -> Result<Option<JobReplay>, WhatIfError> {
        let Some(job) = &self.job else {
            return Ok(None);
        };
        if plan.is_empty() {
            return Ok(Some(job.baseline().clone()));
        }
        let outcome = job
            .predict(|r, context, edit| passes::apply(context, &self.ranks[r].facts, plan, edit))
            .map_err(|e| match e {
                JobError::Rank { source, .. } => *source,
                other => WhatIfError::Job(other.to_string()),
            })?;
        Ok(Some(outcome.predicted))
    }

    /// For `plan`: the slowest representative (the lowest on a tie) and its critical path's
    /// tasks. A group's representative is its slowest member under any plan (see
    /// [`symmetry`]), so this is the slowest rank.
    fn critical_rank(&self, plan: &[Move]) -> Result<(usize, Vec<TaskId>), WhatIfError> {
        // In the job's replay, the rank holding most of the critical path across ranks.
        if let Some(replay) = self.job_replay(plan)?
            && let Some(&(rank, _)) = replay.bound_by().first()
            && let Some(job) = &self.job
            && let Some(r) = job.ranks().iter().position(|j| j.rank == rank)
        {
            let (_, tasks) = self.ranks[r].critical(plan)?;
            return Ok((r, tasks));
        }
        let all: Vec<(usize, i64, Vec<TaskId>)> = self
            .groups
            .par_iter()
            .map(|g| {
                let (ns, tasks) = self.ranks[g.representative].critical(plan)?;
                Ok((g.representative, ns, tasks))
            })
            .collect::<Result<_, WhatIfError>>()?;
        let (slowest, _, tasks) = all
            .into_iter()
            .max_by_key(|(r, ns, _)| (*ns, std::cmp::Reverse(*r)))
            .unwrap_or_default();
        Ok((slowest, tasks))
    }

    /// Every rank's predicted step with `plan`: each group's representative replayed, the
    /// other members moved with it.
    fn per_rank_ns(&self, plan: &[Move]) -> Result<Vec<i64>, WhatIfError> {
        if let Some(replay) = self.job_replay(plan)? {
            return Ok(replay.period.ranks.iter().map(|r| r.step_ns).collect());
        }
        let representative_ns: Vec<i64> = self
            .groups
            .par_iter()
            .map(|g| self.ranks[g.representative].predict(plan))
            .collect::<Result<_, _>>()?;
        let baseline_ns: Vec<i64> = self.ranks.iter().map(|r| r.baseline.step_ns).collect();
        Ok(symmetry::spread(
            &self.groups,
            &baseline_ns,
            &representative_ns,
        ))
    }

    /// The greedy search from nothing.
    pub fn search(&self, hooks: &dyn Hooks) -> Result<Search, WhatIfError> {
        let mut stats = SearchStats::default();
        let mut search = self.greedy(&[], hooks, &mut stats)?;
        search.stats = stats;
        Ok(search)
    }

    /// The defaults a user has today, as the passes cost them, and `advise`'s best candidate
    /// from the models the passes hold (on the leader rank, replayed on every rank).
    pub fn references(&self) -> Result<(Vec<Reference>, Vec<String>), WhatIfError> {
        let on = |p: PassId| self.options.passes.contains(&p);
        let mut notes = Vec::new();
        let facts = &self.leader().facts;
        let mut sets: Vec<(String, Vec<Move>)> = vec![(
            "recorded: no fusion, recorded buckets, no checkpointing".to_string(),
            Vec::new(),
        )];
        let fuse_all = on(PassId::OpFusion) && !facts.regions.regions.is_empty();
        let ddp =
            on(PassId::TensorFusion) && facts.buckets.sized && !facts.buckets.pairs.is_empty();
        let cap = Move::BucketCap {
            bytes: passes::tensor_fusion::DDP_DEFAULT_BUCKET_BYTES,
        };
        if on(PassId::TensorFusion) && !ddp {
            notes.push(if facts.buckets.pairs.is_empty() {
                "DDP 25 MiB buckets: no two all-reduces of a step share a stream, nothing to merge"
                    .to_string()
            } else {
                "DDP 25 MiB buckets: the trace does not record the all-reduces' sizes, so DDP's \
                 greedy bucketing cannot be replayed; the plan's bucket moves merge by slot"
                    .to_string()
            });
        }
        if fuse_all {
            sets.push((
                "fuse every element-wise chain".to_string(),
                vec![Move::FuseAllElementwise],
            ));
        }
        if ddp {
            sets.push(("DDP 25 MiB buckets".to_string(), vec![cap.clone()]));
        }
        if fuse_all && ddp {
            sets.push((
                "fuse every element-wise chain + DDP 25 MiB buckets".to_string(),
                vec![Move::FuseAllElementwise, cap],
            ));
        }
        if let Some(best) = self.advised_best()? {
            sets.push(best);
        }
        let references = sets
            .into_par_iter()
            .map(|(name, moves)| {
                Ok(Reference {
                    step_ns: self.job_ns(&moves)?,
                    name,
                    moves,
                })
            })
            .collect::<Result<_, WhatIfError>>()?;
        Ok((references, notes))
    }

    /// `advise`'s best candidate on the leader rank among those made only of models the
    /// enabled passes hold (`kernel_fusion` for op fusion; the program models), as moves.
    fn advised_best(&self) -> Result<Option<(String, Vec<Move>)>, WhatIfError> {
        let on = |p: PassId| self.options.passes.contains(&p);
        let program = passes::program::models();
        let as_move = |model: &Model| -> Option<Move> {
            match model {
                Model::KernelFusion { factor: None } if on(PassId::OpFusion) => {
                    Some(Move::FuseAllElementwise)
                }
                m if on(PassId::Program) && program.contains(m) => {
                    Some(Move::Model { name: m.name() })
                }
                _ => None,
            }
        };
        if !on(PassId::OpFusion) && !on(PassId::Program) {
            return Ok(None);
        }
        let advice = advise(&self.leader().context)?;
        let best = advice.candidates.iter().find_map(|c| {
            let moves: Option<Vec<Move>> = c.models.iter().map(as_move).collect();
            moves.map(|m| (format!("advise's best from these passes: {}", c.name()), m))
        });
        Ok(best)
    }

    /// The search, restarted from any reference that beats it, and the plan's figures.
    pub fn finish(
        &self,
        search: Search,
        (references, reference_notes): (Vec<Reference>, Vec<String>),
        hooks: &dyn Hooks,
    ) -> Result<Optimized, WhatIfError> {
        let mut stats = search.stats.clone();
        let mut best = search;
        let planned = |s: &Search| -> Result<i64, WhatIfError> {
            match s.after_ns.last() {
                Some(&ns) => Ok(ns),
                None => self.job_ns(&[]),
            }
        };
        let mut order: Vec<&Reference> = references.iter().collect();
        order.sort_by(|a, b| a.step_ns.cmp(&b.step_ns).then_with(|| a.name.cmp(&b.name)));
        for reference in order {
            if reference.moves.is_empty() || reference.step_ns >= planned(&best)? {
                continue;
            }
            if hooks.stop() {
                break;
            }
            stats.restarts += 1;
            let seeded = self.greedy(&reference.moves, hooks, &mut stats)?;
            if planned(&seeded)? < planned(&best)? {
                best = seeded;
            }
        }
        let plan: Vec<Move> = best.moves.iter().map(|(m, _)| m.clone()).collect();
        let leader = self.leader();
        // The leader's baseline, replayed once for every move's trust and the window's
        // self-checks.
        let replayed = Baseline::of(leader.context.window)?;
        let prepared = Prepared::of(&leader.context, &replayed).figures_only();
        let window = window_trust_of(&leader.context, &replayed)?;
        let verdicts: Vec<Verdict> = plan
            .par_iter()
            .map(|m| leader.verdict(&prepared, &window, m))
            .collect::<Result<_, _>>()?;
        let alone: Vec<i64> = plan
            .par_iter()
            .map(|m| self.job_ns(std::slice::from_ref(m)))
            .collect::<Result<_, _>>()?;
        let mut moves: Vec<PlannedMove> = best
            .moves
            .iter()
            .zip(&best.after_ns)
            .zip(alone)
            .zip(verdicts)
            .map(|((((m, bound), &after_ns), alone_ns), trust)| PlannedMove {
                step: m.clone(),
                bound_ns: *bound,
                alone_ns,
                after_ns,
                pytorch: passes::pytorch(&leader.facts, m),
                caveats: passes::caveats(&leader.context, &leader.facts, m),
                trust,
            })
            .collect();
        let (memory, memory_note) = if self.options.passes.contains(&PassId::Memory) {
            self.choose_memory(&plan)?
        } else {
            (None, None)
        };
        let mut full = plan.clone();
        if let Some(chosen) = memory.as_ref().and_then(|m| m.chosen.clone()) {
            full.push(chosen.clone());
            let after_ns = self.job_ns(&full)?;
            moves.push(PlannedMove {
                alone_ns: self.job_ns(std::slice::from_ref(&chosen))?,
                after_ns,
                bound_ns: 0,
                pytorch: passes::pytorch(&leader.facts, &chosen),
                caveats: passes::caveats(&leader.context, &leader.facts, &chosen),
                trust: leader.verdict(&prepared, &window, &chosen)?,
                step: chosen,
            });
        }
        let before = self.per_rank_ns(&[])?;
        let after = self.per_rank_ns(&full)?;
        let bound_by_before = self
            .job_replay(&[])?
            .map_or_else(Vec::new, |r| r.bound_by());
        let bound_by = self
            .job_replay(&full)?
            .map_or_else(Vec::new, |r| r.bound_by());
        let mut caveats = window.caveats;
        caveats.extend(self.job_note.clone());
        caveats.extend(self.job.iter().flat_map(Job::caveats));
        Ok(Optimized {
            passes: self.options.passes.clone(),
            ranks: self.ranks.len(),
            groups: self.groups.clone(),
            leader: self.leader,
            baseline_ns: self.job_ns(&[])?,
            planned_ns: self.job_ns(&full)?,
            per_rank: before.into_iter().zip(after).collect(),
            global: self.job.is_some(),
            bound_by_before,
            bound_by,
            moves,
            references,
            reference_notes,
            memory,
            memory_note,
            search: stats,
            caveats,
            declined: window.declined,
        })
    }

    /// The memory pass (see the module documentation).
    fn choose_memory(
        &self,
        plan: &[Move],
    ) -> Result<(Option<MemoryChoice>, Option<String>), WhatIfError> {
        let peaks: Option<Vec<i64>> = self
            .ranks
            .iter()
            .map(|r| r.facts.memory.peak_bytes)
            .collect();
        let Some(peaks) = peaks else {
            return Ok((
                None,
                Some("the trace has no memory events: its peak is unknown".to_string()),
            ));
        };
        let peak_bytes = peaks.iter().copied().max().unwrap_or(0);
        let (budget_bytes, budget_source) =
            match self.options.memory_budget_bytes {
                Some(b) => (b, "given"),
                None => {
                    let device = self
                        .ranks
                        .iter()
                        .filter_map(|r| {
                            r.context
                                .trace
                                .devices
                                .iter()
                                .filter_map(|d| d.memory_bytes)
                                .min()
                        })
                        .min();
                    match device {
                        Some(b) => (b, "device"),
                        None => {
                            return Ok((
                            None,
                            Some("no --memory-budget and the trace does not say the device's memory"
                                .to_string()),
                        ));
                        }
                    }
                }
            };
        let leader = &self.leader().facts.memory;
        // The largest peak over the ranks with the trade: the plan must fit on every one.
        let predicted = |m: &Move| -> i64 {
            self.ranks
                .iter()
                .zip(&peaks)
                .map(|(r, &peak)| r.facts.memory.predicted_peak_bytes(m).unwrap_or(peak))
                .max()
                .unwrap_or(peak_bytes)
        };
        let peak_source = if self.ranks.iter().all(|r| r.facts.memory.timeline_known()) {
            "memory_timeline"
        } else {
            "activations_saved"
        };
        let over = peak_bytes > budget_bytes;
        let options: Vec<MemoryOption> = leader
            .options
            .par_iter()
            .map(|(m, _)| {
                let predicted_peak_bytes = predicted(m);
                let saved_bytes = peak_bytes - predicted_peak_bytes;
                let fits = predicted_peak_bytes <= budget_bytes;
                let step_ns = if over && fits {
                    let mut with = plan.to_vec();
                    with.push(m.clone());
                    self.job_ns(&with).ok()
                } else {
                    None
                };
                Ok(MemoryOption {
                    step: m.clone(),
                    saved_bytes,
                    predicted_peak_bytes,
                    step_ns,
                    fits,
                })
            })
            .collect::<Result<_, WhatIfError>>()?;
        let chosen = options
            .iter()
            .filter(|o| o.fits)
            .filter_map(|o| o.step_ns.map(|ns| (ns, o)))
            .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.step.cmp(&b.1.step)))
            .map(|(_, o)| o);
        let predicted_peak_bytes = chosen.map_or(peak_bytes, |o| o.predicted_peak_bytes);
        Ok((
            Some(MemoryChoice {
                budget_bytes,
                budget_source,
                peak_bytes,
                predicted_peak_bytes,
                peak_source,
                chosen: chosen.map(|o| o.step.clone()),
                options,
            }),
            None,
        ))
    }
}

/// Plans the job whose ranks `contexts` hold (one context: one rank): search, references,
/// restarts and the memory pass.
pub fn optimize(
    contexts: &[Context<'_>],
    options: Options,
    hooks: &dyn Hooks,
) -> Result<Optimized, WhatIfError> {
    let optimizer = Optimizer::new(contexts, options)?;
    let search = optimizer.search(hooks)?;
    let references = optimizer.references()?;
    optimizer.finish(search, references, hooks)
}

/// Applies `plan` to one rank and returns the transformed graph (for export): the same
/// transform the search replayed.
pub fn apply_plan(
    context: &Context<'_>,
    plan: &[Move],
) -> Result<crate::graph::Graph, WhatIfError> {
    let mut edit = context.edit();
    let baseline = predict(context.window, &context.window.graph)?;
    let facts = Facts::find(context, &edit, baseline.steady.clone().count());
    passes::apply(context, &facts, plan, &mut edit)?;
    let (graph, _) = replay_with_peers(context, &edit, context.peers)?;
    Ok(graph)
}
