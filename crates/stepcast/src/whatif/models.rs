//! Built-in optimization models (Daydream §5 and appendix A), each a short function written
//! with the primitives of [`super::edit`], each stating its assumption and where its numbers
//! come from.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::edit::{EditGraph, FusedCost, HostGaps, Select, Selection};
use super::{Context, WhatIfError};
use crate::analyze::mapping::Phase;
use crate::graph::{CallClass, EdgeKind, TaskId, TaskKind, classify_call};

/// A built-in optimization model and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum Model {
    /// Fused optimizer (FusedAdam, `fused=True`): see [`fused_optimizer`].
    FusedOptimizer { factor: f64 },
    /// CUDA graphs: see [`cuda_graphs`].
    CudaGraphs,
    /// Automatic mixed precision: see [`amp`].
    Amp,
    /// Faster hardware: see [`faster_hardware`].
    FasterHardware(Hardware),
    /// Remove host synchronizations: see [`remove_syncs`].
    RemoveSyncs,
    /// Fuse chains of element-wise kernels (what `torch.compile` does): see
    /// [`kernel_fusion`]. `factor: None` uses the chain-length estimate.
    KernelFusion { factor: Option<f64> },
}

/// Speed-up factors of faster hardware (2.0 = twice as fast; 1.0 = unchanged).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hardware {
    /// Compute-bound (tensor-core eligible) kernels.
    pub compute: f64,
    /// Every other kernel and memset (memory-bound).
    pub memory: f64,
    /// Host tasks and the untraced host time between them.
    pub cpu: f64,
    /// Host↔device and device↔device copies.
    pub copy: f64,
}

impl Default for Hardware {
    fn default() -> Self {
        Hardware {
            compute: 1.0,
            memory: 1.0,
            cpu: 1.0,
            copy: 1.0,
        }
    }
}

impl Model {
    /// Every model with its default parameters, best first as a rule of thumb.
    pub fn builtin() -> Vec<Model> {
        vec![
            Model::FusedOptimizer { factor: 1.0 },
            Model::CudaGraphs,
            Model::Amp,
            Model::FasterHardware(gpu_2x()),
            Model::FasterHardware(cpu_2x()),
            Model::RemoveSyncs,
            Model::KernelFusion { factor: None },
            Model::FasterHardware(copies_2x()),
        ]
    }

    /// The model's name as the CLI and scenario files spell it.
    pub fn name(&self) -> String {
        match self {
            Model::FusedOptimizer { factor } if *factor == 1.0 => "fused_optimizer".into(),
            Model::FusedOptimizer { factor } => format!("fused_optimizer(factor={factor})"),
            Model::CudaGraphs => "cuda_graphs".into(),
            Model::Amp => "amp".into(),
            Model::FasterHardware(h) if *h == gpu_2x() => "faster_gpu".into(),
            Model::FasterHardware(h) if *h == cpu_2x() => "faster_cpu".into(),
            Model::FasterHardware(h) if *h == copies_2x() => "faster_copies".into(),
            Model::FasterHardware(h) => format!(
                "faster_hardware(compute={},memory={},cpu={},copy={})",
                h.compute, h.memory, h.cpu, h.copy
            ),
            Model::RemoveSyncs => "remove_syncs".into(),
            Model::KernelFusion { factor: None } => "kernel_fusion".into(),
            Model::KernelFusion { factor: Some(f) } => format!("kernel_fusion(factor={f})"),
        }
    }

    /// The model named `name` with default parameters (`faster_gpu`: GPU ×2, `faster_cpu`:
    /// CPU ×2, `faster_hardware`: nothing faster until given factors).
    pub fn by_name(name: &str) -> Option<Model> {
        Some(match name.replace('-', "_").as_str() {
            "fused_optimizer" | "fused_adam" => Model::FusedOptimizer { factor: 1.0 },
            "cuda_graphs" | "cuda_graph" => Model::CudaGraphs,
            "amp" | "mixed_precision" => Model::Amp,
            "faster_gpu" => Model::FasterHardware(gpu_2x()),
            "faster_cpu" => Model::FasterHardware(cpu_2x()),
            "faster_hardware" => Model::FasterHardware(Hardware::default()),
            "faster_copies" => Model::FasterHardware(copies_2x()),
            "remove_syncs" => Model::RemoveSyncs,
            "kernel_fusion" | "fuse_elementwise" => Model::KernelFusion { factor: None },
            _ => return None,
        })
    }

    /// The names [`Model::by_name`] knows.
    pub const NAMES: &'static [&'static str] = &[
        "fused_optimizer",
        "cuda_graphs",
        "amp",
        "faster_gpu",
        "faster_cpu",
        "faster_hardware",
        "faster_copies",
        "remove_syncs",
        "kernel_fusion",
    ];

    /// The model named `name` with `params` instead of its defaults. A parameter the model
    /// does not take is an error (so a typo is not silently ignored).
    pub fn with_params(name: &str, params: &ModelParams) -> Result<Model, ModelError> {
        let mut model = Model::by_name(name).ok_or_else(|| ModelError::Unknown {
            name: name.to_string(),
        })?;
        let given = params.given();
        let accepted = model.params();
        if let Some(&param) = given.iter().find(|p| !accepted.contains(p)) {
            return Err(ModelError::NoSuchParam {
                model: model.base_name(),
                param,
                accepted: if accepted.is_empty() {
                    "it takes none".to_string()
                } else {
                    format!(
                        "it takes {}",
                        accepted
                            .iter()
                            .map(|p| format!("--{p}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                },
            });
        }
        for (param, value) in params.values() {
            let valid = value.is_finite()
                && if param == "factor" {
                    value >= 0.0
                } else {
                    value > 0.0
                };
            if !valid {
                return Err(ModelError::BadValue { param, value });
            }
        }
        match &mut model {
            Model::FusedOptimizer { factor } => *factor = params.factor.unwrap_or(*factor),
            Model::FasterHardware(h) => {
                h.compute = params.compute.unwrap_or(h.compute);
                h.memory = params.memory.unwrap_or(h.memory);
                h.cpu = params.cpu.unwrap_or(h.cpu);
                h.copy = params.copy.unwrap_or(h.copy);
            }
            Model::KernelFusion { factor } => *factor = params.factor.or(*factor),
            Model::CudaGraphs | Model::Amp | Model::RemoveSyncs => {}
        }
        Ok(model)
    }

    /// The parameters the model takes (as [`ModelParams`] names them).
    pub fn params(&self) -> &'static [&'static str] {
        match self {
            Model::FusedOptimizer { .. } | Model::KernelFusion { .. } => &["factor"],
            Model::FasterHardware(_) => &["compute", "memory", "cpu", "copy"],
            Model::CudaGraphs | Model::Amp | Model::RemoveSyncs => &[],
        }
    }

    /// The name of the model without its parameters.
    fn base_name(&self) -> &'static str {
        match self {
            Model::FusedOptimizer { .. } => "fused_optimizer",
            Model::CudaGraphs => "cuda_graphs",
            Model::Amp => "amp",
            Model::FasterHardware(_) => "faster_hardware",
            Model::RemoveSyncs => "remove_syncs",
            Model::KernelFusion { .. } => "kernel_fusion",
        }
    }

    /// Whether the model is a hardware change rather than a change of the program.
    pub fn is_hardware(&self) -> bool {
        matches!(self, Model::FasterHardware(_))
    }

    /// The models `advise` tries, in the order their effects compose in: program changes
    /// first (fewer kernels, then cheaper kernels, then fewer launches and syncs), hardware
    /// last.
    pub fn advised() -> Vec<Model> {
        vec![
            Model::FusedOptimizer { factor: 1.0 },
            Model::KernelFusion { factor: None },
            Model::Amp,
            Model::CudaGraphs,
            Model::RemoveSyncs,
            Model::FasterHardware(gpu_2x()),
            Model::FasterHardware(cpu_2x()),
            Model::FasterHardware(copies_2x()),
        ]
    }

    /// Applies the model to `edit`. Returns the number of tasks it changed or removed.
    pub fn apply(&self, context: &Context<'_>, edit: &mut EditGraph) -> Result<usize, WhatIfError> {
        match self {
            Model::FusedOptimizer { factor } => fused_optimizer(context, edit, *factor),
            Model::CudaGraphs => cuda_graphs(context, edit),
            Model::Amp => amp(context, edit),
            Model::FasterHardware(hardware) => faster_hardware(context, edit, hardware),
            Model::RemoveSyncs => remove_syncs(context, edit),
            Model::KernelFusion { factor } => kernel_fusion(context, edit, *factor),
        }
    }
}

/// Parameters given to a model by name; `None` keeps the model's default.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelParams {
    /// `fused_optimizer`: the fused kernel's cost as a share of the kernels it replaces.
    pub factor: Option<f64>,
    /// `faster_hardware` (and `faster_gpu`, `faster_cpu`): the speed-up factors of [`Hardware`].
    pub compute: Option<f64>,
    pub memory: Option<f64>,
    pub cpu: Option<f64>,
    pub copy: Option<f64>,
}

impl ModelParams {
    fn values(&self) -> Vec<(&'static str, f64)> {
        [
            ("factor", self.factor),
            ("compute", self.compute),
            ("memory", self.memory),
            ("cpu", self.cpu),
            ("copy", self.copy),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.map(|v| (name, v)))
        .collect()
    }

    fn given(&self) -> Vec<&'static str> {
        self.values().into_iter().map(|(name, _)| name).collect()
    }
}

/// A model named or parameterized wrongly.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("unknown model `{name}`; the models are: {}", Model::NAMES.join(", "))]
    Unknown { name: String },
    #[error("{model} takes no --{param}; {accepted}")]
    NoSuchParam {
        model: &'static str,
        param: &'static str,
        accepted: String,
    },
    #[error(
        "invalid --{param} {value}: give a finite number above 0 (a speed-up: 2 is twice as fast; --factor may be 0)"
    )]
    BadValue { param: &'static str, value: f64 },
}

fn gpu_2x() -> Hardware {
    Hardware {
        compute: 2.0,
        memory: 2.0,
        ..Hardware::default()
    }
}

fn copies_2x() -> Hardware {
    Hardware {
        copy: 2.0,
        ..Hardware::default()
    }
}

fn cpu_2x() -> Hardware {
    Hardware {
        cpu: 2.0,
        ..Hardware::default()
    }
}

/// Groups `selection` by (lane, step), in order.
fn by_lane_and_step(edit: &EditGraph, selection: &Selection) -> Vec<Selection> {
    let mut groups: BTreeMap<(u32, u32), Vec<TaskId>> = BTreeMap::new();
    for &t in selection.tasks() {
        groups
            .entry((edit.lane(t), edit.step(t)))
            .or_default()
            .push(t);
    }
    groups.into_values().map(Selection::new).collect()
}

/// **Fused optimizer** (Daydream A.2; FusedAdam, `torch.optim.AdamW(fused=True)`): the
/// optimizer-phase kernels of each step (per stream) become one kernel, whose duration is
/// the sum of theirs × `factor`; the launch calls of the fused-away kernels are removed with
/// the host time after them (the Python loop that issued them).
///
/// Assumption: the update is memory-bound and a fused kernel moves no more bytes than the
/// kernels it replaces, so `factor = 1.0` (Daydream's choice, durations measured in this trace)
/// is an upper bound on its time; PyTorch's `foreach` Adam makes about three times the passes
/// over the state that the fused kernel makes, so ~0.35 is the optimistic end. Phases come
/// from the mapping (`analyze::mapping`); a trace whose optimizer kernels are already fused
/// (one kernel per step and stream) is unchanged.
pub fn fused_optimizer(
    context: &Context<'_>,
    edit: &mut EditGraph,
    factor: f64,
) -> Result<usize, WhatIfError> {
    let select = Select {
        kinds: vec![TaskKind::Kernel, TaskKind::Memset],
        phases: vec![Phase::Optimizer],
        ..Select::default()
    };
    let selection = edit.select(&select, context.select_context());
    let mut changed = 0;
    for group in by_lane_and_step(edit, &selection) {
        if group.len() < 2 {
            continue;
        }
        changed += group.len();
        edit.fuse(&group, FusedCost::SumTimes(factor), HostGaps::Drop)?;
    }
    Ok(changed)
}

/// **CUDA graphs**: on every host thread, the region of each step from its first to its last
/// launch call is captured; replaying the graph costs one launch call, so every other host
/// task of the region costs nothing and the untraced host time between them is gone. The
/// device keeps its own work, its calibrated dispatch gaps and the launch latency: the GPU
/// stays bound by its own work.
///
/// Assumptions: blocking calls cannot be captured and are kept (with their host time), so a
/// region with synchronizations inside is captured as one graph per segment between them,
/// each costing one launch. The cost of a graph launch is the median `cudaGraphLaunch` of this
/// trace, else the median duration of its kernel launch calls (`cudaLaunchKernel`...).
pub fn cuda_graphs(context: &Context<'_>, edit: &mut EditGraph) -> Result<usize, WhatIfError> {
    let graph = &context.window.graph;
    let names = &context.trace.names;
    let launch_cost = names
        .lookup("cudaGraphLaunch")
        .and_then(|n| super::edit::median_duration(graph, n))
        .or_else(|| {
            let mut launches: Vec<i64> = (0..graph.task_count())
                .filter(|&t| {
                    graph.kind[t] == TaskKind::ApiCall
                        && names.get(graph.name[t]).contains("LaunchKernel")
                })
                .map(|t| graph.dur_ns[t])
                .collect();
            launches.sort_unstable();
            launches.get(launches.len().saturating_sub(1) / 2).copied()
        })
        .unwrap_or(0);
    // The captured region of each host thread and step: from the first to the last launch
    // call of the step as recorded in the input, so that a model applied before (a fused
    // optimizer removing launches) does not shrink it.
    let mut launches = vec![false; graph.task_count()];
    for t in 0..graph.task_count() {
        for e in graph.preds(TaskId(t as u32)) {
            let call = graph.pred[e].index();
            if graph.pred_kind[e] == EdgeKind::Launch && !graph.kind[call].on_device() {
                launches[call] = true;
            }
        }
    }
    let mut zeroed = Vec::new();
    let mut segment_heads = Vec::new();
    for (lane, input_lane) in graph.lanes.iter().enumerate() {
        let first_task = input_lane.first_task as usize;
        let input_tasks = first_task..first_task + input_lane.task_count as usize;
        // Per step: the recorded starts of the first and last launch call on this lane, and
        // the last call (the host time after it is outside the captured region).
        let mut bounds: BTreeMap<u32, (i64, i64, TaskId)> = BTreeMap::new();
        for t in input_tasks {
            let task = TaskId(t as u32);
            if launches[t] && !edit.is_frozen(task) {
                let start = graph.rec_start_ns[t];
                let entry = bounds.entry(graph.step[t]).or_insert((start, start, task));
                entry.0 = entry.0.min(start);
                if start >= entry.1 {
                    (entry.1, entry.2) = (start, task);
                }
            }
        }
        let mut in_segment = false;
        for t in edit.lane_tasks(lane as u32) {
            let task = TaskId(t);
            let bound = bounds.get(&edit.step(task));
            let inside = !edit.is_frozen(task)
                && bound.is_some_and(|&(first, last, _)| {
                    (first..=last).contains(&edit.rec_start_ns(task))
                });
            if !inside || edit.is_blocking(task) {
                in_segment = false;
                continue;
            }
            if !in_segment {
                segment_heads.push(task);
                in_segment = true;
            }
            zeroed.push((task, bound.is_some_and(|&(_, _, last)| last == task)));
        }
    }
    let all = Selection::new(zeroed.iter().map(|&(t, _)| t).collect());
    edit.set_duration(&all, 0)?;
    let gaps = Selection::new(
        zeroed
            .iter()
            .filter(|&&(_, last)| !last)
            .map(|&(t, _)| t)
            .collect(),
    );
    edit.set_gap(&gaps, 0)?;
    edit.set_duration(&Selection::new(segment_heads), launch_cost)?;
    Ok(all.len())
}

/// The compute capability major of the trace's GPU (the largest, if several).
fn compute_major(context: &Context<'_>) -> Option<i64> {
    context
        .trace
        .devices
        .iter()
        .filter_map(|d| d.compute_capability.map(|(major, _)| major))
        .max()
}

static HALF_PRECISION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(fp16|bf16|f16|half|h884|h1688|h16816|hgemm|bfloat)").expect("valid regex")
});
static TENSOR_CORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(gemm|conv|cutlass|cudnn|cublas|xmma|wgrad|dgrad|fprop|matmul|volta_|turing_|ampere_|hopper_|sm\d\d_)")
        .expect("valid regex")
});
static TF32: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)tf32").expect("valid regex"));
static MEMORY_BOUND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(elementwise|vectorized|unrolled|reduce|norm|softmax|dropout|pointwise|copy|cat_|index|pool|relu|gelu|silu|activation|add|mul|fill|where|embedding)")
        .expect("valid regex")
});

/// Whether a kernel name reads as a tensor-core-eligible (compute-bound) kernel: GEMMs and
/// convolutions (cuBLAS, cuDNN, CUTLASS).
pub fn is_tensor_core_eligible(name: &str) -> bool {
    TENSOR_CORE.is_match(name)
}

/// **Automatic mixed precision** (Daydream A.1, refined). Forward and backward kernels only:
/// the optimizer keeps FP32 master weights, collectives reduce FP32 gradients, input copies
/// are unchanged. Per kernel, by name:
/// - already half precision (`f16`, `bf16`, `h884`...): unchanged;
/// - tensor-core eligible (GEMM, convolution): duration / speedup by GPU generation
///   (`deviceProperties` compute capability): no tensor cores (< 7.0): 1 (conservative);
///   Volta/Turing (7.x): 3 (Daydream, after NVIDIA's AMP guide); Ampere and later (≥ 8.0):
///   3 for FP32 kernels, 2 for kernels already on TF32 tensor cores (FP16 dense peak is twice
///   TF32's: NVIDIA A100/H100 datasheets); unknown GPU: 3 (Daydream);
/// - memory-bound element-wise, normalization, reduction kernels: × 0.5 (half the bytes);
/// - anything else: unchanged.
///
/// Not modeled: the cast kernels AMP adds and the gradient scaler's unscale/inf check (small,
/// they make the prediction slightly optimistic).
pub fn amp(context: &Context<'_>, edit: &mut EditGraph) -> Result<usize, WhatIfError> {
    let major = compute_major(context);
    let fp32_speedup = match major {
        Some(m) if m < 7 => 1.0,
        _ => 3.0,
    };
    let tf32_speedup = if major.is_some_and(|m| m >= 8) {
        2.0
    } else {
        fp32_speedup
    };
    let select = Select {
        kinds: vec![TaskKind::Kernel],
        phases: vec![Phase::Forward, Phase::Backward, Phase::Other],
        ..Select::default()
    };
    let selection = edit.select(&select, context.select_context());
    let names = &context.trace.names;
    let mut by_factor: BTreeMap<u64, Vec<TaskId>> = BTreeMap::new();
    for &t in selection.tasks() {
        let name = names.get(edit.name(t));
        let factor = if HALF_PRECISION.is_match(name) {
            continue;
        } else if TENSOR_CORE.is_match(name) {
            1.0 / if TF32.is_match(name) {
                tf32_speedup
            } else {
                fp32_speedup
            }
        } else if MEMORY_BOUND.is_match(name) {
            0.5
        } else {
            continue;
        };
        by_factor.entry(f64::to_bits(factor)).or_default().push(t);
    }
    let mut changed = 0;
    for (bits, tasks) in by_factor {
        changed += tasks.len();
        edit.scale(&Selection::new(tasks), f64::from_bits(bits))?;
    }
    Ok(changed)
}

/// **Faster hardware**: every task's cost divided by the factor of its resource (tensor-core
/// eligible kernels by `compute`, other kernels and memsets by `memory`, copies by `copy`,
/// host tasks and the untraced host time by `cpu`). Collectives are unchanged (the network
/// is not the hardware changed here). The factors are the user's (a datasheet ratio).
pub fn faster_hardware(
    context: &Context<'_>,
    edit: &mut EditGraph,
    hardware: &Hardware,
) -> Result<usize, WhatIfError> {
    let names = &context.trace.names;
    let mut groups: [Vec<TaskId>; 4] = Default::default();
    let all = edit.select_where(|_| true);
    for &t in all.tasks() {
        let group = match edit.kind(t) {
            TaskKind::ApiCall | TaskKind::CpuOp => 0,
            TaskKind::Kernel if is_tensor_core_eligible(names.get(edit.name(t))) => 1,
            TaskKind::Kernel | TaskKind::Memset => 2,
            TaskKind::Memcpy => 3,
            TaskKind::Collective => continue,
        };
        groups[group].push(t);
    }
    let factors = [
        hardware.cpu,
        hardware.compute,
        hardware.memory,
        hardware.copy,
    ];
    let mut changed = 0;
    for (index, (group, speed)) in groups.into_iter().zip(factors).enumerate() {
        if speed <= 0.0 || !speed.is_finite() {
            return Err(super::edit::EditError::BadFactor { factor: speed }.into());
        }
        if speed == 1.0 {
            continue;
        }
        changed += group.len();
        let selection = Selection::new(group);
        edit.scale(&selection, 1.0 / speed)?;
        if index == 0 {
            // Host tasks: the untraced host time after them runs on the same CPU.
            edit.scale_gaps(&selection, 1.0 / speed)?;
        }
    }
    Ok(changed)
}

/// **Remove host synchronizations**: explicit synchronizing calls (`cudaDeviceSynchronize`,
/// `cudaStreamSynchronize`, `cudaEventSynchronize` and their HIP/driver twins) are removed;
/// the host time around them stays. Blocking copies (`.item()`, `.cpu()`) are kept: their data
/// is needed. Assumes the program stays correct without them (they were only for timing or
/// logging).
pub fn remove_syncs(context: &Context<'_>, edit: &mut EditGraph) -> Result<usize, WhatIfError> {
    let names = &context.trace.names;
    let selection = edit.select_where(|t| {
        edit.kind(t) == TaskKind::ApiCall
            && matches!(
                classify_call(names.get(edit.name(t))),
                CallClass::DeviceSync | CallClass::StreamSync | CallClass::EventSync
            )
    });
    edit.remove(&selection, HostGaps::Keep)?;
    Ok(selection.len())
}

static ELEMENTWISE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(elementwise|pointwise)").expect("valid regex"));

/// **Kernel fusion of element-wise chains** (what `torch.compile`'s Inductor does): every
/// run of element-wise kernels (PyTorch's `elementwise_kernel`, `vectorized_elementwise_kernel`,
/// `unrolled_elementwise_kernel`, `pointwise` kernels) adjacent on one stream in one step of
/// the forward or backward pass becomes one kernel; the launch calls of the fused-away kernels
/// go with the host time after them (the eager dispatch of those ops).
///
/// Cost: element-wise kernels are memory-bound. A chain of `n` kernels that each read a tensor
/// and write one moves about `2n` tensors; fused, the intermediates stay in registers and it
/// moves about `n + 1` (each input once, one output). So the fused kernel costs the sum of
/// the parts × `(n + 1) / 2n` (0.75 for a pair, towards 0.5 for long chains), and never less
/// than its longest part (it moves at least that part's bytes). `factor` replaces the chain
/// estimate by a fixed share of the sum. The durations are this trace's own.
///
/// Not modeled: fusion across reductions or GEMM epilogues, and compile-time guards.
pub fn kernel_fusion(
    context: &Context<'_>,
    edit: &mut EditGraph,
    factor: Option<f64>,
) -> Result<usize, WhatIfError> {
    let names = &context.trace.names;
    let select = Select {
        kinds: vec![TaskKind::Kernel],
        phases: vec![Phase::Forward, Phase::Backward],
        ..Select::default()
    };
    let candidates = edit.select(&select, context.select_context());
    let elementwise = Selection::new(
        candidates
            .tasks()
            .iter()
            .copied()
            .filter(|&t| ELEMENTWISE.is_match(names.get(edit.name(t))))
            .collect(),
    );
    let mut changed = 0;
    for run in edit.runs(&elementwise) {
        let n = run.len();
        if n < 2 {
            continue;
        }
        let parts: Vec<i64> = run.tasks().iter().map(|&t| edit.dur_ns(t)).collect();
        let sum: i64 = parts.iter().sum();
        let longest = parts.iter().copied().max().unwrap_or(0);
        let share = factor.unwrap_or((n as f64 + 1.0) / (2.0 * n as f64));
        let cost = ((sum as f64 * share).round() as i64).max(longest).min(sum);
        changed += n;
        edit.fuse(&run, FusedCost::Fixed(cost), HostGaps::Drop)?;
    }
    Ok(changed)
}
