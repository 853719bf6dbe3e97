//! The graph pass registry (dPRO §5.1): every optimization the search may choose, each a
//! graph transform with a stated cost model, one file each. A pass proposes moves with the
//! most each can gain (`Pass::candidates`) and applies the moves of a plan
//! (`Pass::apply`); the search knows nothing else of it, so a new pass is a file and a line
//! in [`REGISTRY`].

pub mod memory;
pub mod op_fusion;
pub mod program;
pub mod tensor_fusion;
pub mod tensor_partition;

use crate::analyze::mapping::Phase;
use crate::graph::TaskId;
use crate::whatif::edit::EditGraph;
use crate::whatif::trust::TransformKind;
use crate::whatif::{Context, WhatIfError};

use memory::MemoryFacts;
use op_fusion::Regions;
use tensor_fusion::Buckets;

/// A pass, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PassId {
    OpFusion,
    TensorFusion,
    TensorPartition,
    Program,
    Memory,
}

impl PassId {
    /// Every pass, in the order their moves are applied.
    pub const ALL: [PassId; 5] = [
        PassId::OpFusion,
        PassId::TensorFusion,
        PassId::TensorPartition,
        PassId::Program,
        PassId::Memory,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PassId::OpFusion => "op_fusion",
            PassId::TensorFusion => "tensor_fusion",
            PassId::TensorPartition => "tensor_partition",
            PassId::Program => "program",
            PassId::Memory => "memory",
        }
    }

    pub fn by_name(name: &str) -> Option<PassId> {
        PassId::ALL
            .into_iter()
            .find(|p| p.as_str() == name.replace('-', "_"))
    }

    /// The pass's cost model, one sentence (the module documentation says more).
    pub fn cost_model(self) -> &'static str {
        match self {
            PassId::OpFusion => {
                "a fused chain costs the sum of its kernels × (n + 1) / 2n (memory-bound \
                 roofline on the trace's own durations), at least its longest kernel; the \
                 fused-away launch calls go with their host time"
            }
            PassId::TensorFusion => {
                "a merged all-reduce of k costs its members' transfers less (k − 1) α of the \
                 calibrated α-β fit, at least its longest member, and starts when its last \
                 gradient is ready"
            }
            PassId::TensorPartition => {
                "k chunks cost the transfer plus (k − 1) α and, in a ring all-reduce whose \
                 consumers wait for the whole bucket, pipeline nothing: never chosen"
            }
            PassId::Program => "the advise models' own cost models",
            PassId::Memory => {
                "recomputation and offloading of the front 25/50/75/100 % of the activation \
                 bytes, costed by the recompute and offload models; the least slowdown that \
                 fits the budget"
            }
        }
    }
}

/// One decision of a plan. Moves name what they change in words that hold on every rank and
/// every step (kernel names, all-reduce slots), never task ids.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Move {
    /// Fuse every chain of these element-wise kernels in this pass.
    FuseOps { phase: Phase, kernels: Vec<String> },
    /// Fuse every element-wise chain (`torch.compile` on the whole model).
    FuseAllElementwise,
    /// Send the all-reduces at these slots of each step (adjacent on one stream) as one.
    MergeBuckets { first: u32, second: u32 },
    /// DDP's greedy bucketing with this cap.
    BucketCap { bytes: i64 },
    /// Split the all-reduce at this slot into chunks.
    Partition { slot: u32, chunks: u32 },
    /// One of `advise`'s program models, by name.
    Model { name: String },
    /// Recompute the front `percent` of each step's activation bytes.
    Recompute { percent: u32 },
    /// Recompute the forward pass's repeated blocks, each checkpointed on its own (a
    /// transformer's layers: how `torch.utils.checkpoint` is usually applied).
    RecomputeBlocks,
    /// Offload the front `percent` of each step's activation bytes.
    Offload { percent: u32 },
}

impl Move {
    /// The pass the move belongs to.
    pub fn pass(&self) -> PassId {
        match self {
            Move::FuseOps { .. } | Move::FuseAllElementwise => PassId::OpFusion,
            Move::MergeBuckets { .. } | Move::BucketCap { .. } => PassId::TensorFusion,
            Move::Partition { .. } => PassId::TensorPartition,
            Move::Model { .. } => PassId::Program,
            Move::Recompute { .. } | Move::RecomputeBlocks | Move::Offload { .. } => PassId::Memory,
        }
    }
}

/// What the passes know about one rank's window, found once.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    pub regions: Regions,
    pub buckets: Buckets,
    pub memory: MemoryFacts,
}

impl Facts {
    /// `edit` is the context's untransformed editable graph ([`Context::edit`]).
    pub fn find(context: &Context<'_>, edit: &EditGraph, steady_steps: usize) -> Facts {
        Facts {
            regions: Regions::find(context, edit, steady_steps),
            buckets: Buckets::find(context, edit, steady_steps),
            memory: MemoryFacts::find(context),
        }
    }
}

/// The registry: every pass that proposes moves to the speed search (the memory pass chooses
/// apart, once the plan is known: see [`crate::optimize`]).
pub const REGISTRY: [PassId; 4] = [
    PassId::OpFusion,
    PassId::TensorFusion,
    PassId::TensorPartition,
    PassId::Program,
];

/// The moves `pass` proposes for `plan`, each with the most it can gain per step.
pub fn candidates(pass: PassId, facts: &Facts, plan: &[Move]) -> Vec<(Move, i64)> {
    match pass {
        PassId::OpFusion => op_fusion::candidates(&facts.regions, plan),
        PassId::TensorFusion => tensor_fusion::candidates(&facts.buckets, plan),
        PassId::TensorPartition => tensor_partition::candidates(&facts.buckets, plan),
        PassId::Program => program::candidates(plan),
        PassId::Memory => Vec::new(),
    }
}

/// Applies `plan` to `edit` pass by pass, in [`PassId::ALL`] order (whatever the order of the
/// moves: the same set of moves is the same program).
pub fn apply(
    context: &Context<'_>,
    facts: &Facts,
    plan: &[Move],
    edit: &mut EditGraph,
) -> Result<(), WhatIfError> {
    for pass in PassId::ALL {
        if !plan.iter().any(|m| m.pass() == pass) {
            continue;
        }
        match pass {
            PassId::OpFusion => op_fusion::apply(&facts.regions, plan, edit)?,
            PassId::TensorFusion => tensor_fusion::apply(&facts.buckets, plan, edit)?,
            PassId::TensorPartition => tensor_partition::apply(&facts.buckets, plan, edit)?,
            PassId::Program => program::apply(context, plan, edit)?,
            PassId::Memory => memory::apply(context, plan, edit)?,
        }
    }
    Ok(())
}

/// The tasks of `base` (the untransformed editable graph `facts` were found on) whose costs
/// `m` cuts, with their launch calls; `None` for a move that may also remove waits (a
/// program model, a memory trade), which the critical path cannot rule out. A cost-cutting
/// move none of whose tasks is on the critical path cannot shorten the step: that path keeps
/// its length.
pub fn touches(facts: &Facts, base: &EditGraph, m: &Move) -> Option<Vec<TaskId>> {
    let mut tasks: Vec<TaskId> = match m {
        Move::FuseOps { phase, kernels } => facts
            .regions
            .get(*phase, kernels)
            .map(|r| {
                r.runs
                    .iter()
                    .flat_map(|&i| facts.regions.runs[i].1.tasks().to_vec())
                    .collect()
            })
            .unwrap_or_default(),
        Move::FuseAllElementwise => facts
            .regions
            .runs
            .iter()
            .flat_map(|(_, run)| run.tasks().to_vec())
            .collect(),
        Move::MergeBuckets { first, second } => facts
            .buckets
            .by_step
            .values()
            .flatten()
            .filter(|b| b.slot == *first || b.slot == *second)
            .map(|b| b.task)
            .collect(),
        Move::BucketCap { bytes } => {
            let pairs = facts.buckets.cap_pairs(*bytes);
            facts
                .buckets
                .by_step
                .values()
                .flatten()
                .filter(|b| pairs.iter().any(|&(x, y)| b.slot == x || b.slot == y))
                .map(|b| b.task)
                .collect()
        }
        Move::Partition { slot, .. } => facts
            .buckets
            .by_step
            .values()
            .flatten()
            .filter(|b| b.slot == *slot)
            .map(|b| b.task)
            .collect(),
        Move::Model { .. }
        | Move::Recompute { .. }
        | Move::RecomputeBlocks
        | Move::Offload { .. } => return None,
    };
    let launchers: Vec<TaskId> = tasks.iter().filter_map(|&t| base.launcher(t)).collect();
    tasks.extend(launchers);
    tasks.sort_unstable();
    tasks.dedup();
    Some(tasks)
}

/// What to do in PyTorch for `m`, on the rank whose facts are given.
pub fn pytorch(facts: &Facts, m: &Move) -> String {
    match m {
        Move::FuseOps { phase, kernels } => {
            let ops = facts
                .regions
                .get(*phase, kernels)
                .map(|r| r.ops.join(", "))
                .filter(|ops| !ops.is_empty())
                .unwrap_or_else(|| "(ops not mapped)".to_string());
            format!(
                "fuse the {} ops {ops} into one kernel: wrap them in a function compiled with \
                 torch.compile (Inductor fuses the element-wise chain {})",
                phase.as_str(),
                kernels.join(" → ")
            )
        }
        Move::FuseAllElementwise => {
            "torch.compile the model: Inductor fuses every element-wise chain".to_string()
        }
        Move::MergeBuckets { first, second } => {
            let bytes = |slot: u32| {
                facts
                    .buckets
                    .by_step
                    .values()
                    .flatten()
                    .find(|b| b.slot == slot)
                    .and_then(|b| b.bytes)
            };
            let size = match (bytes(*first), bytes(*second)) {
                (Some(a), Some(b)) => format!(
                    " ({:.1} MiB together: a DDP bucket_cap_mb of at least {:.1} holds them)",
                    (a + b) as f64 / (1 << 20) as f64,
                    (a + b) as f64 / (1 << 20) as f64
                ),
                _ => String::new(),
            };
            format!(
                "send the gradients of the all-reduces that are collectives #{first} and \
                 #{second} of each step as one bucket{size}; DDP fills buckets in reverse \
                 order of model.parameters() up to bucket_cap_mb"
            )
        }
        Move::BucketCap { bytes } => format!(
            "DistributedDataParallel(model, bucket_cap_mb={})",
            bytes / (1 << 20)
        ),
        Move::Partition { slot, chunks } => {
            format!("split the bucket of all-reduce #{slot} into {chunks} chunks")
        }
        Move::Model { name } => match name.as_str() {
            "fused_optimizer" => "pass fused=True to the optimizer (torch.optim.Adam/AdamW/SGD)"
                .to_string(),
            "cuda_graphs" => "capture the step with torch.cuda.graphs (torch.cuda.make_graphed_callables, or torch.compile(mode=\"reduce-overhead\"))".to_string(),
            "remove_syncs" => "remove host synchronizations (.item(), .cpu(), .tolist(), torch.cuda.synchronize) from the step".to_string(),
            // On a CPU, `torch.compile` of a batch norm in training made the step slower
            // (`cpu-batchnorm-pairs/`): the hand-fused function is what gained there.
            "reconstruct_batchnorm" => "fuse batch norm with its neighbours (on a GPU torch.compile or cuDNN's fused batch norm + ReLU; on a CPU one hand-fused batch norm + ReLU function, as testdata/kineto/stepcast/cpu-pairs/record.py's BatchNormReLU: torch.compile's training graph of batch norm ran slower than eager there; torch.fx's conv-bn fusion at inference)".to_string(),
            other => format!("apply {other}"),
        },
        Move::Recompute { percent } => format!(
            "torch.utils.checkpoint around the modules that keep the first {percent} % of the \
             activation bytes of the forward pass"
        ),
        Move::RecomputeBlocks => "torch.utils.checkpoint around each repeated block of the \
             forward pass (each transformer layer, each residual block), one call per block"
            .to_string(),
        Move::Offload { percent } => format!(
            "torch.autograd.graph.save_on_cpu(pin_memory=True) around the modules that keep \
             the first {percent} % of the activation bytes of the forward pass"
        ),
    }
}

/// What [`crate::whatif::trust::assess_kind`] needs of `m`: its caveats, and whether it only
/// removes work (fusion, a program model that does) or removes waits (a program model that
/// does). Merging or splitting all-reduces and memory trades are neither: a merged all-reduce
/// starts when its last member is ready, a trade adds work.
pub fn kind(context: &Context<'_>, facts: &Facts, m: &Move) -> TransformKind {
    let (only_removes_work, removes_waits) = match m {
        Move::FuseOps { .. } | Move::FuseAllElementwise => (true, false),
        Move::Model { name } => crate::whatif::models::Model::by_name(name)
            .map_or((false, false), |model| {
                (model.only_removes_work(), model.removes_waits())
            }),
        Move::MergeBuckets { .. }
        | Move::BucketCap { .. }
        | Move::Partition { .. }
        | Move::Recompute { .. }
        | Move::RecomputeBlocks
        | Move::Offload { .. } => (false, false),
    };
    TransformKind {
        caveats: caveats(context, facts, m),
        removes_waits,
        only_removes_work,
        combined: false,
        // No move moves the loading into workers, nor changes the machine.
        loader_pace: None,
        machine_speed: None,
        // Every move leaves the loader and the host as they are: workers that pace the step
        // still do.
        keeps_loader: Some(1.0),
        outside_domain: None,
    }
}

/// What limits `m`'s prediction, one sentence each.
pub fn caveats(context: &Context<'_>, facts: &Facts, m: &Move) -> Vec<String> {
    match m {
        Move::FuseOps { .. } | Move::FuseAllElementwise => vec![
            "fused cost from the memory-bound roofline on recorded durations; fusion across \
             reductions or GEMM epilogues and compile-time guards are not modeled"
                .to_string(),
        ],
        Move::MergeBuckets { .. } | Move::BucketCap { .. } | Move::Partition { .. } => {
            let mut out = Vec::new();
            if !facts.buckets.calibrated {
                out.push(
                    "no α-β fit of this trace's all-reduces: a merge saves only the launch call"
                        .to_string(),
                );
            }
            out.push(
                "a merged all-reduce waits for its members' recorded waits for peers together: \
                 stragglers stay as late as recorded"
                    .to_string(),
            );
            out
        }
        Move::Model { name } => crate::whatif::models::Model::by_name(name)
            .map(|model| model.caveats(context))
            .unwrap_or_default(),
        Move::Recompute { .. } | Move::RecomputeBlocks | Move::Offload { .. } => {
            let known = facts.memory.timeline_known();
            vec![
                if known {
                    "the predicted peak is read off the recorded memory timeline with the trade's \
                 activations moved and everything else as recorded; the other moves are taken \
                 not to change the peak"
                } else {
                    "the memory events record no addresses: the predicted peak is the recorded \
                 peak less the activation bytes the trade saves, which the process's peak may \
                 not fall by; the other moves are taken not to change the peak"
                }
                .to_string(),
            ]
        }
    }
}
