//! The `optimize` document (`stepcast.optimize/1`): a plan, move by move, against the
//! defaults and `advise`'s best candidate. The moves are also what `export --plan` reads back
//! ([`MoveJson`] deserializes).

use serde::{Deserialize, Serialize};
use stepcast::analyze::mapping::Phase;
use stepcast::optimize::{Move, Optimized, PassId};
use stepcast::whatif::Peers;
use stepcast_trace::Trace;

use super::{RankShareJson, TraceJson, TrustJson};

/// The whole document.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OptimizeJson {
    /// `stepcast.optimize/1`.
    pub schema: &'static str,
    /// One per rank, in rank order.
    pub traces: Vec<TraceJson>,
    /// The index (in `traces`) of the rank whose facts proposed the moves.
    pub leader: usize,
    /// What the collectives' peers did in every prediction (`skew` or `balanced`).
    pub peers: &'static str,
    /// The passes the plan could use, with their cost models.
    pub passes: Vec<PassJson>,
    /// The job's predicted step without the plan: its global replay's (see `global_replay`),
    /// else the slowest rank's.
    pub baseline_ns: i64,
    /// The job's predicted step with the plan.
    pub planned_ns: i64,
    /// `baseline_ns / planned_ns`.
    pub speedup: f64,
    /// `baseline_ns - planned_ns`.
    pub gain_ns: i64,
    /// The plan, in the order the search took its moves (a memory trade last).
    pub moves: Vec<PlannedMoveJson>,
    /// The defaults and `advise`'s best candidate, each predicted on the same graph.
    pub references: Vec<ReferenceJson>,
    /// Defaults that could not be costed on this trace, and why.
    pub reference_notes: Vec<String>,
    /// The memory pass's decision; `null` when it is off or the peak is unknown.
    pub memory: Option<MemoryPlanJson>,
    /// Why `memory` is `null`, when the memory pass is on.
    pub memory_note: Option<String>,
    /// How the search went.
    pub search: SearchJson,
    /// Per rank, in `traces` order.
    pub ranks: Vec<RankStepJson>,
    /// Traces of earlier profiling windows of the ranks' processes, left out: each rank's
    /// last window stands, as `replay DIR` takes it (filled in by the caller). Absent when
    /// none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub earlier_windows: Vec<String>,
    /// Whether the job's figures (`baseline_ns`, `planned_ns`, each move's, `ranks`) come from
    /// the job's global replay: every rank with the plan, replayed as one graph, each waiting
    /// for its peers. `false` for one trace, or where the ranks could not be replayed together
    /// (a caveat says why): the job's step is then its slowest rank's, each replayed alone.
    pub global_replay: bool,
    /// The ranks holding the job's critical path across ranks without the plan, most first
    /// (empty without a global replay).
    pub bound_by_before: Vec<RankShareJson>,
    /// The same with the plan: the ranks that bound the planned step.
    pub bound_by: Vec<RankShareJson>,
    /// What limits every prediction on the leader's window.
    pub caveats: Vec<String>,
    /// Why no prediction on the leader's window can be trusted, if none can (its baseline is
    /// off the measured step, or a step it is built from replays more than 2 % off): the plan
    /// is shown only beside it. `null` otherwise.
    pub declined: Option<String>,
}

/// A pass the plan could use.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PassJson {
    /// Its name.
    pub name: &'static str,
    /// Its cost model, one sentence.
    pub cost_model: &'static str,
}

/// One move of a plan, as `optimize` writes it and `export --plan` reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum MoveJson {
    /// Fuse every chain of these element-wise kernels in this pass.
    FuseOps {
        /// `forward` or `backward`.
        phase: String,
        /// The chain's kernel names, in stream order.
        kernels: Vec<String>,
    },
    /// Fuse every element-wise chain (`torch.compile` on the whole model).
    FuseAllElementwise,
    /// Send two all-reduces adjacent on one stream as one, in every step.
    MergeBuckets {
        /// Slot of the first (its place among the step's collectives).
        first: u32,
        /// Slot of the next all-reduce on the same stream.
        second: u32,
    },
    /// DDP's greedy bucketing with this cap.
    BucketCap {
        /// The cap, bytes.
        bytes: i64,
    },
    /// Split an all-reduce into chunks.
    Partition {
        /// Slot of the all-reduce.
        slot: u32,
        /// Number of chunks.
        chunks: u32,
    },
    /// One of `advise`'s program models.
    Model {
        /// Its name, as `whatif --model` takes it.
        name: String,
    },
    /// Recompute (`torch.utils.checkpoint`) the front of each step's activations.
    Recompute {
        /// Share of the activation bytes, from the front of the forward pass, %.
        percent: u32,
    },
    /// Recompute the forward pass's repeated blocks, each checkpointed on its own.
    RecomputeBlocks,
    /// Offload the front of each step's activations to host memory.
    Offload {
        /// Share of the activation bytes, from the front of the forward pass, %.
        percent: u32,
    },
}

impl MoveJson {
    /// The JSON form of `m`.
    pub fn new(m: &Move) -> MoveJson {
        match m {
            Move::FuseOps { phase, kernels } => MoveJson::FuseOps {
                phase: phase.as_str().to_string(),
                kernels: kernels.clone(),
            },
            Move::FuseAllElementwise => MoveJson::FuseAllElementwise,
            Move::MergeBuckets { first, second } => MoveJson::MergeBuckets {
                first: *first,
                second: *second,
            },
            Move::BucketCap { bytes } => MoveJson::BucketCap { bytes: *bytes },
            Move::Partition { slot, chunks } => MoveJson::Partition {
                slot: *slot,
                chunks: *chunks,
            },
            Move::Model { name } => MoveJson::Model { name: name.clone() },
            Move::Recompute { percent } => MoveJson::Recompute { percent: *percent },
            Move::RecomputeBlocks => MoveJson::RecomputeBlocks,
            Move::Offload { percent } => MoveJson::Offload { percent: *percent },
        }
    }

    /// The move, or why it is not one (an unknown phase).
    pub fn to_move(&self) -> Result<Move, String> {
        Ok(match self {
            MoveJson::FuseOps { phase, kernels } => Move::FuseOps {
                phase: Phase::ALL
                    .into_iter()
                    .find(|p| p.as_str() == phase)
                    .ok_or_else(|| format!("unknown phase `{phase}` in a fuse_ops move"))?,
                kernels: kernels.clone(),
            },
            MoveJson::FuseAllElementwise => Move::FuseAllElementwise,
            MoveJson::MergeBuckets { first, second } => Move::MergeBuckets {
                first: *first,
                second: *second,
            },
            MoveJson::BucketCap { bytes } => Move::BucketCap { bytes: *bytes },
            MoveJson::Partition { slot, chunks } => Move::Partition {
                slot: *slot,
                chunks: *chunks,
            },
            MoveJson::Model { name } => Move::Model { name: name.clone() },
            MoveJson::Recompute { percent } => Move::Recompute { percent: *percent },
            MoveJson::RecomputeBlocks => Move::RecomputeBlocks,
            MoveJson::Offload { percent } => Move::Offload { percent: *percent },
        })
    }
}

/// A move with its figures.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PlannedMoveJson {
    /// The pass the move belongs to.
    pub pass: &'static str,
    /// The move.
    #[serde(rename = "move")]
    pub step: MoveJson,
    /// What to do in PyTorch.
    pub pytorch: String,
    /// The most it can gain per step by its pass's bound; `null` where none exists (a model
    /// that removes waits) or for a seeded default and a memory trade.
    pub bound_ns: Option<i64>,
    /// The job's predicted step with this move alone.
    pub alone_ns: i64,
    /// `baseline_ns - alone_ns`: its gain on its own.
    pub alone_gain_ns: i64,
    /// The job's predicted step with the plan's moves up to this one.
    pub after_ns: i64,
    /// What this move adds to the moves before it (the previous `after_ns` less this one).
    pub gain_in_plan_ns: i64,
    /// What limits this move's prediction (its model's assumptions).
    pub caveats: Vec<String>,
    /// How far the move's prediction alone on the leader rank can be trusted, as `whatif`'s
    /// (`trust` of the `whatif` document): its bound along that rank's critical path, the
    /// window's and the move's caveats, an anomaly, a gain resting on one task, a decline.
    pub trust: TrustJson,
}

/// A plan the user could have instead.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReferenceJson {
    /// Its name.
    pub name: String,
    /// The plan, in the order the search took its moves (a memory trade last).
    pub moves: Vec<MoveJson>,
    /// The job's predicted step.
    pub step_ns: i64,
    /// How much faster the plan is (negative: slower).
    pub plan_gain_ns: i64,
}

/// The memory pass's decision.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryPlanJson {
    /// The memory budget, bytes.
    pub budget_bytes: i64,
    /// `given` (--memory-budget) or `device` (the trace's device memory).
    pub budget_source: &'static str,
    /// The recorded peak of allocated device memory (largest over the ranks).
    pub peak_bytes: i64,
    /// The peak with the chosen trade.
    pub predicted_peak_bytes: i64,
    /// How the peaks with the trades were found: `memory_timeline` (the recorded memory
    /// events with the trade's activations moved, everything else as recorded) or
    /// `activations_saved` (the memory events record no addresses: the recorded peak less the
    /// activations' saving, which the process's peak may not fall by).
    pub peak_source: &'static str,
    /// Whether the peak fits the budget.
    pub fits: bool,
    /// The trade taken, if the recorded peak exceeds the budget and one fits.
    pub chosen: Option<MoveJson>,
    /// Every trade tried.
    pub options: Vec<MemoryOptionJson>,
}

/// One memory trade tried.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryOptionJson {
    /// The trade.
    #[serde(rename = "move")]
    pub step: MoveJson,
    /// How far the job's peak falls with it (`peak_bytes - predicted_peak_bytes`).
    pub saved_bytes: i64,
    /// The job's peak with it (the largest over the ranks).
    pub predicted_peak_bytes: i64,
    /// Whether the peak fits the budget.
    pub fits: bool,
    /// Predicted with the plan; `null` when not replayed (it does not fit, or nothing had to).
    pub step_ns: Option<i64>,
}

/// How the search went. Counts, not times: the document is the same on every machine.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchJson {
    /// Rounds of the greedy search (one move taken per round).
    pub rounds: usize,
    /// Moves replayed.
    pub evaluated: usize,
    /// Moves pruned by their bound, unreplayed.
    pub pruned: usize,
    /// Moves left out because none of the tasks whose costs they cut is on the critical path
    /// of the slowest rank, unreplayed.
    pub off_path: usize,
    /// Moves whose transform failed (a cycle), left out.
    pub failed: usize,
    /// Searches started again from a default that beat the plan.
    pub restarts: usize,
    /// `converged` or `time_limit`.
    pub stopped: &'static str,
}

/// One rank's predicted step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankStepJson {
    /// Without the plan.
    pub baseline_ns: i64,
    /// With the plan.
    pub planned_ns: i64,
    /// The rank (index in `traces`) whose replays stand for this one: itself, or the slowest
    /// rank running the same program (rank symmetry); this rank keeps its own recorded step
    /// and moves as much as that rank's.
    pub replayed_as: usize,
}

fn shares(ranks: &[(i64, i64)]) -> Vec<RankShareJson> {
    ranks
        .iter()
        .map(|&(rank, critical_path_ns)| RankShareJson {
            rank,
            critical_path_ns,
        })
        .collect()
}

/// The `optimize` document of `optimized`, on the ranks `traces`.
pub fn optimize_json(traces: &[&Trace], peers: Peers, optimized: &Optimized) -> OptimizeJson {
    let baseline = optimized.baseline_ns;
    let mut previous = baseline;
    let moves = optimized
        .moves
        .iter()
        .map(|m| {
            let gain_in_plan_ns = previous - m.after_ns;
            previous = m.after_ns;
            PlannedMoveJson {
                pass: m.step.pass().as_str(),
                step: MoveJson::new(&m.step),
                pytorch: m.pytorch.clone(),
                bound_ns: (m.bound_ns != 0 && m.bound_ns != i64::MAX).then_some(m.bound_ns),
                alone_ns: m.alone_ns,
                alone_gain_ns: baseline - m.alone_ns,
                after_ns: m.after_ns,
                gain_in_plan_ns,
                caveats: m.caveats.clone(),
                trust: TrustJson::of(&m.trust),
            }
        })
        .collect();
    OptimizeJson {
        schema: "stepcast.optimize/1",
        traces: traces.iter().map(|t| TraceJson::new(t)).collect(),
        leader: optimized.leader,
        peers: peers.as_str(),
        passes: optimized
            .passes
            .iter()
            .map(|&p: &PassId| PassJson {
                name: p.as_str(),
                cost_model: p.cost_model(),
            })
            .collect(),
        baseline_ns: baseline,
        planned_ns: optimized.planned_ns,
        speedup: if optimized.planned_ns > 0 {
            baseline as f64 / optimized.planned_ns as f64
        } else {
            1.0
        },
        gain_ns: baseline - optimized.planned_ns,
        moves,
        references: optimized
            .references
            .iter()
            .map(|r| ReferenceJson {
                name: r.name.clone(),
                moves: r.moves.iter().map(MoveJson::new).collect(),
                step_ns: r.step_ns,
                plan_gain_ns: r.step_ns - optimized.planned_ns,
            })
            .collect(),
        reference_notes: optimized.reference_notes.clone(),
        memory: optimized.memory.as_ref().map(|m| MemoryPlanJson {
            budget_bytes: m.budget_bytes,
            budget_source: m.budget_source,
            peak_bytes: m.peak_bytes,
            predicted_peak_bytes: m.predicted_peak_bytes,
            peak_source: m.peak_source,
            fits: m.predicted_peak_bytes <= m.budget_bytes,
            chosen: m.chosen.as_ref().map(MoveJson::new),
            options: m
                .options
                .iter()
                .map(|o| MemoryOptionJson {
                    step: MoveJson::new(&o.step),
                    saved_bytes: o.saved_bytes,
                    predicted_peak_bytes: o.predicted_peak_bytes,
                    fits: o.fits,
                    step_ns: o.step_ns,
                })
                .collect(),
        }),
        memory_note: optimized.memory_note.clone(),
        search: SearchJson {
            rounds: optimized.search.rounds,
            evaluated: optimized.search.evaluated,
            pruned: optimized.search.pruned,
            off_path: optimized.search.off_path,
            failed: optimized.search.failed,
            restarts: optimized.search.restarts,
            stopped: optimized.search.stopped.as_str(),
        },
        earlier_windows: Vec::new(),
        global_replay: optimized.global,
        bound_by_before: shares(&optimized.bound_by_before),
        bound_by: shares(&optimized.bound_by),
        ranks: {
            let mut replayed_as: Vec<usize> = (0..optimized.per_rank.len()).collect();
            // In the job's replay every rank is transformed and replayed: none stands for another.
            for group in optimized.groups.iter().filter(|_| !optimized.global) {
                for &member in &group.members {
                    replayed_as[member] = group.representative;
                }
            }
            optimized
                .per_rank
                .iter()
                .zip(replayed_as)
                .map(|(&(baseline_ns, planned_ns), replayed_as)| RankStepJson {
                    baseline_ns,
                    planned_ns,
                    replayed_as,
                })
                .collect()
        },
        caveats: optimized.caveats.clone(),
        declined: optimized.declined.clone(),
    }
}
