//! Built-in optimization models (Daydream §5 and appendix A), each a short function written
//! with the primitives of [`super::edit`], each stating its assumption and where its numbers
//! come from.

pub mod activations;
mod amp;
mod amp_costs;
mod autocast;
mod batchnorm;
mod cuda_graphs;
mod fused_optimizer;
mod gist;
mod hardware;
mod input_overlap;
mod kernel_fusion;
mod kernels;
mod offload;
pub(crate) mod peaks;
mod recompute;
mod steady;
pub mod step_peak;
mod syncs;

use std::sync::LazyLock;

use regex::Regex;

use super::edit::EditGraph;
use super::{Context, WhatIfError};

pub use activations::{ActivationSource, Activations, ForwardUnit, MemoryEffect, forward_units};
pub use amp::{AmpFactors, amp, amp_with_costs};
pub use amp_costs::AmpCosts;
pub use batchnorm::{BatchNormRole, batch_norm_role, batchnorm_targets, reconstruct_batchnorm};
pub use cuda_graphs::{Capture, GRAPH_LAUNCH_NS_PER_NODE, LaunchCost, capture, cuda_graphs};
pub use fused_optimizer::fused_optimizer;
pub use fused_optimizer::host::{Dispatch, HostStep, HostUpdates, host_updates};
pub use gist::{COMPRESSION, elementwise_throughput, gist, gist_memory};
pub use hardware::{MEASURED_HOST_FACTORS, TargetRatios, faster_hardware, target_ratios};
pub use input_overlap::{
    LoaderHost, LoaderWork, WORKER_TENSOR_SLOWDOWN, delivery_ns, loader_in_workers, loader_work,
    prefetch_inputs, worker_slowdown, workers_wait_ns,
};
pub use kernel_fusion::{
    elementwise_runs, fuse_runs, fused_chain_ns, kernel_fusion, traffic_shares,
};
pub use kernels::{Bound, KernelClass, classify_kernel, is_tensor_core_eligible};
pub use offload::{host_copy_bandwidth, offload, offload_memory};
pub use peaks::{datasheet, product_named};
pub use recompute::{recompute, recompute_memory};
pub use syncs::remove_syncs;

/// A built-in optimization model and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum Model {
    /// Fused optimizer (FusedAdam, `fused=True`): see [`fused_optimizer`].
    FusedOptimizer { factor: f64 },
    /// CUDA graphs: see [`cuda_graphs`].
    CudaGraphs,
    /// Automatic mixed precision, FP16 with a `GradScaler`: see [`amp`].
    Amp,
    /// Automatic mixed precision in BF16 (no `GradScaler`): see [`amp`].
    AmpBf16,
    /// Faster hardware: see [`faster_hardware`].
    FasterHardware(Hardware),
    /// Remove host synchronizations: see [`remove_syncs`].
    RemoveSyncs,
    /// Fuse chains of element-wise kernels (what `torch.compile` does): see
    /// [`kernel_fusion`]. `factor: None` uses the chain-length estimate.
    KernelFusion { factor: Option<f64> },
    /// Reconstructed batch normalization: see [`reconstruct_batchnorm`].
    ReconstructBatchnorm,
    /// Input pipeline overlap (loading in `workers` worker processes): see
    /// [`prefetch_inputs`]. `contention`: how much slower the training process's own host
    /// work runs beside the workers (0.1 = 10 % slower); `host`: its cores and the training
    /// process's intra-op threads, where known (the cores bound the workers' pace, the threads
    /// how much slower a worker's one thread runs the loading).
    PrefetchInputs {
        contention: f64,
        workers: u32,
        host: LoaderHost,
    },
    /// Activation recomputation, a memory-for-time trade: see [`recompute`].
    Recompute { fraction: Option<f64> },
    /// vDNN offloading of activations, a memory-for-time trade: see [`offload`].
    Offload { fraction: f64 },
    /// Gist encoding of activations, a memory-for-time trade: see [`gist`].
    Gist { fraction: f64 },
}

/// `prefetch_inputs`' default worker contention: the training process's host work outside
/// data loading runs 10 % slower once the loader's worker processes share its CPU. Measured,
/// not fitted: on the one recorded pair (`testdata/kineto/kineto/.../resnet50_profiler_api_num_workers_0`
/// → `_4`, one V100 machine) each steady step's time outside the `DataLoader` range grew by
/// 10–15 % (median 107 → 120 ms); this is the lower end. One pair on one machine: pass
/// `--contention` for yours (0 where the host has idle cores to spare).
pub const DEFAULT_CONTENTION: f64 = 0.1;

/// `prefetch_inputs`' default number of `DataLoader` worker processes: 4, the count PyTorch's
/// examples (ImageNet's `--workers`) and the recorded pairs use; pass `--workers` for yours.
pub const DEFAULT_WORKERS: u32 = 4;

/// `prefetch_inputs` with its defaults.
fn prefetch_default() -> Model {
    Model::PrefetchInputs {
        contention: DEFAULT_CONTENTION,
        workers: DEFAULT_WORKERS,
        host: LoaderHost::default(),
    }
}

/// The training process's contention beside the workers: none where the host's cores are
/// known (they bound the workers' pace instead: [`delivery_ns`]); else the default.
fn contention_on(cores: Option<u32>) -> f64 {
    match cores {
        Some(_) => 0.0,
        None => DEFAULT_CONTENTION,
    }
}

/// The share of the activation bytes that memory-for-time trades act on by default.
pub const DEFAULT_FRACTION: f64 = 0.5;

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
    /// `--to`: the GPU to predict for (a product of `models/peaks.rs`, its canonical name):
    /// kernels, memsets and copies then take the ratios of its datasheet to the trace's GPU's
    /// instead of `compute`, `memory` and `copy`.
    pub target: Option<&'static str>,
    /// Whether `cpu` was given: with a target GPU and no host factor, the host is unknown and
    /// the caveats give the step at the host factors measured between machines.
    pub cpu_given: bool,
}

impl Default for Hardware {
    fn default() -> Self {
        Hardware {
            compute: 1.0,
            memory: 1.0,
            cpu: 1.0,
            copy: 1.0,
            target: None,
            cpu_given: false,
        }
    }
}

/// The precision `amp` predicts for (`--dtype`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AmpDtype {
    /// `torch.autocast(dtype=torch.float16)` with a `GradScaler` (loss scaling).
    #[default]
    Fp16,
    /// `torch.autocast(dtype=torch.bfloat16)`: BF16 keeps FP32's exponent range, so no
    /// `GradScaler` (no loss scaling, no `found_inf` synchronization).
    Bf16,
}

impl AmpDtype {
    pub fn as_str(self) -> &'static str {
        match self {
            AmpDtype::Fp16 => "fp16",
            AmpDtype::Bf16 => "bf16",
        }
    }

    /// `fp16`/`float16`/`half`, `bf16`/`bfloat16`.
    pub fn parse(text: &str) -> Option<AmpDtype> {
        match text.to_ascii_lowercase().as_str() {
            "fp16" | "float16" | "half" => Some(AmpDtype::Fp16),
            "bf16" | "bfloat16" => Some(AmpDtype::Bf16),
            _ => None,
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
            Model::ReconstructBatchnorm,
            prefetch_default(),
        ]
    }

    /// The memory-for-time trades (usually slower; they save memory) with their defaults.
    pub fn memory_trades() -> Vec<Model> {
        vec![
            Model::Recompute { fraction: None },
            Model::Offload {
                fraction: DEFAULT_FRACTION,
            },
            Model::Gist {
                fraction: DEFAULT_FRACTION,
            },
        ]
    }

    /// Whether the model trades time for memory (its what-if reports the memory it saves).
    pub fn is_memory_trade(&self) -> bool {
        matches!(
            self,
            Model::Recompute { .. } | Model::Offload { .. } | Model::Gist { .. }
        )
    }

    /// What a memory-for-time trade saves (`None` for other models, and for `offload` on a
    /// CPU-only trace, whose activations are in host memory already).
    pub fn memory_effect(&self, context: &Context<'_>) -> Option<MemoryEffect> {
        match self {
            Model::Recompute { fraction } => Some(recompute_memory(context, *fraction)),
            Model::Offload { fraction } => context
                .window
                .graph
                .has_device_tasks()
                .then(|| offload_memory(context, *fraction)),
            Model::Gist { fraction } => Some(gist_memory(context, *fraction)),
            _ => None,
        }
    }

    /// The model's name as the CLI and scenario files spell it.
    pub fn name(&self) -> String {
        match self {
            Model::FusedOptimizer { factor } if *factor == 1.0 => "fused_optimizer".into(),
            Model::FusedOptimizer { factor } => format!("fused_optimizer(factor={factor})"),
            Model::CudaGraphs => "cuda_graphs".into(),
            Model::Amp => "amp".into(),
            Model::AmpBf16 => "amp(dtype=bf16)".into(),
            Model::FasterHardware(h) if *h == gpu_2x() => "faster_gpu".into(),
            Model::FasterHardware(h) if *h == cpu_2x() => "faster_cpu".into(),
            Model::FasterHardware(h) if *h == copies_2x() => "faster_copies".into(),
            Model::FasterHardware(h) => match h.target {
                Some(target) if h.cpu_given => {
                    format!("faster_hardware(to={target},cpu={})", h.cpu)
                }
                Some(target) => format!("faster_hardware(to={target})"),
                None => format!(
                    "faster_hardware(compute={},memory={},cpu={},copy={})",
                    h.compute, h.memory, h.cpu, h.copy
                ),
            },
            Model::RemoveSyncs => "remove_syncs".into(),
            Model::KernelFusion { factor: None } => "kernel_fusion".into(),
            Model::KernelFusion { factor: Some(f) } => format!("kernel_fusion(factor={f})"),
            Model::ReconstructBatchnorm => "reconstruct_batchnorm".into(),
            Model::PrefetchInputs {
                contention,
                workers,
                host,
            } => {
                let mut given = Vec::new();
                if *workers != DEFAULT_WORKERS {
                    given.push(format!("workers={workers}"));
                }
                if let Some(cores) = host.cores {
                    given.push(format!("cores={cores}"));
                }
                if let Some(threads) = host.threads {
                    given.push(format!("threads={threads}"));
                }
                if *contention != contention_on(host.cores) {
                    given.push(format!("contention={contention}"));
                }
                if given.is_empty() {
                    "prefetch_inputs".into()
                } else {
                    format!("prefetch_inputs({})", given.join(","))
                }
            }
            Model::Recompute { fraction: None } => "recompute".to_string(),
            Model::Recompute {
                fraction: Some(fraction),
            } => format!("recompute(fraction={fraction})"),
            Model::Offload { fraction } => with_fraction("offload", *fraction),
            Model::Gist { fraction } => with_fraction("gist", *fraction),
        }
    }

    /// The model named `name` with default parameters (`faster_gpu`: GPU ×2, `faster_cpu`:
    /// CPU ×2, `faster_hardware`: nothing faster until given factors). Names are exact: one
    /// close to a model's is suggested ([`Model::suggestion`]), never taken for it.
    pub fn by_name(name: &str) -> Option<Model> {
        Some(match name {
            "fused_optimizer" => Model::FusedOptimizer { factor: 1.0 },
            // HIP graphs are ROCm's CUDA graphs: one model, named as the trace's runtime does.
            "cuda_graphs" | "hip_graphs" => Model::CudaGraphs,
            "amp" => Model::Amp,
            "amp_bf16" => Model::AmpBf16,
            "faster_gpu" => Model::FasterHardware(gpu_2x()),
            "faster_cpu" => Model::FasterHardware(cpu_2x()),
            "faster_hardware" => Model::FasterHardware(Hardware::default()),
            "faster_copies" => Model::FasterHardware(copies_2x()),
            "remove_syncs" => Model::RemoveSyncs,
            "kernel_fusion" => Model::KernelFusion { factor: None },
            "reconstruct_batchnorm" => Model::ReconstructBatchnorm,
            "prefetch_inputs" => prefetch_default(),
            "recompute" => Model::Recompute { fraction: None },
            "offload" => Model::Offload {
                fraction: DEFAULT_FRACTION,
            },
            "gist" => Model::Gist {
                fraction: DEFAULT_FRACTION,
            },
            _ => return None,
        })
    }

    /// The model a mistyped or other-named `name` most likely means: what the literature
    /// calls it (`fused_adam`, `activation_checkpointing`, `vdnn`), a dash for an underscore,
    /// a letter or two off (`cuda_graph`).
    pub fn suggestion(name: &str) -> Option<&'static str> {
        const OTHER_NAMES: &[(&str, &str)] = &[
            ("fused_adam", "fused_optimizer"),
            ("mixed_precision", "amp"),
            ("fuse_elementwise", "kernel_fusion"),
            ("batchnorm", "reconstruct_batchnorm"),
            ("fuse_batchnorm", "reconstruct_batchnorm"),
            ("batchnorm_fusion", "reconstruct_batchnorm"),
            ("prefetch", "prefetch_inputs"),
            ("input_overlap", "prefetch_inputs"),
            ("checkpointing", "recompute"),
            ("activation_checkpointing", "recompute"),
            ("vdnn", "offload"),
            ("hip_graph", "hip_graphs"),
        ];
        let key = name.trim().to_ascii_lowercase().replace('-', "_");
        if let Some(&(_, model)) = OTHER_NAMES.iter().find(|(other, _)| *other == key) {
            return Some(model);
        }
        Model::NAMES
            .iter()
            .map(|&known| (edit_distance(&key, known), known))
            .filter(|&(distance, known)| distance <= 2.min(known.len() / 3))
            .min()
            .map(|(_, known)| known)
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
        "reconstruct_batchnorm",
        "prefetch_inputs",
        "recompute",
        "offload",
        "gist",
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
            if (param == "workers" || param == "cores" || param == "threads")
                && !(value >= 1.0 && value <= u32::MAX as f64 && value.fract() == 0.0)
            {
                return Err(ModelError::BadCount { param, value });
            }
            let valid = value.is_finite()
                && if param == "factor" || param == "contention" {
                    value >= 0.0
                } else {
                    value > 0.0
                };
            if param == "fraction" && !(value > 0.0 && value <= 1.0) {
                return Err(ModelError::BadFraction { value });
            }
            if !valid {
                return Err(ModelError::BadValue { param, value });
            }
        }
        if params.to.is_some()
            && let Some(&param) = ["compute", "memory", "copy"]
                .iter()
                .find(|p| given.contains(p))
        {
            return Err(ModelError::TargetAndFactor { param });
        }
        match &mut model {
            Model::FusedOptimizer { factor } => *factor = params.factor.unwrap_or(*factor),
            Model::FasterHardware(h) => {
                h.compute = params.compute.unwrap_or(h.compute);
                h.memory = params.memory.unwrap_or(h.memory);
                h.cpu = params.cpu.unwrap_or(h.cpu);
                h.copy = params.copy.unwrap_or(h.copy);
                h.target = params.to.or(h.target);
                h.cpu_given |= params.cpu.is_some();
            }
            Model::Amp | Model::AmpBf16 => {}
            Model::KernelFusion { factor } => *factor = params.factor.or(*factor),
            Model::PrefetchInputs {
                contention,
                workers,
                host,
            } => {
                *workers = params.workers.map_or(*workers, |w| w as u32);
                host.cores = params.cores.map(|c| c as u32).or(host.cores);
                host.threads = params.threads.map(|t| t as u32).or(host.threads);
                *contention = params
                    .contention
                    .unwrap_or_else(|| contention_on(host.cores));
            }
            Model::Recompute { fraction } => *fraction = params.fraction.or(*fraction),
            Model::Offload { fraction } | Model::Gist { fraction } => {
                *fraction = params.fraction.unwrap_or(*fraction)
            }
            Model::CudaGraphs | Model::RemoveSyncs | Model::ReconstructBatchnorm => {}
        }
        if let (Model::Amp | Model::AmpBf16, Some(dtype)) = (&model, params.dtype) {
            model = match dtype {
                AmpDtype::Fp16 => Model::Amp,
                AmpDtype::Bf16 => Model::AmpBf16,
            };
        }
        Ok(model)
    }

    /// The parameters the model takes (as [`ModelParams`] names them).
    pub fn params(&self) -> &'static [&'static str] {
        match self {
            Model::FusedOptimizer { .. } | Model::KernelFusion { .. } => &["factor"],
            Model::FasterHardware(_) => &["compute", "memory", "cpu", "copy", "to"],
            Model::Amp | Model::AmpBf16 => &["dtype"],
            Model::Recompute { .. } | Model::Offload { .. } | Model::Gist { .. } => &["fraction"],
            Model::PrefetchInputs { .. } => &["contention", "workers", "cores", "threads"],
            Model::CudaGraphs | Model::RemoveSyncs | Model::ReconstructBatchnorm => &[],
        }
    }

    /// The name of the model without its parameters.
    fn base_name(&self) -> &'static str {
        match self {
            Model::FusedOptimizer { .. } => "fused_optimizer",
            Model::CudaGraphs => "cuda_graphs",
            Model::Amp | Model::AmpBf16 => "amp",
            Model::FasterHardware(_) => "faster_hardware",
            Model::RemoveSyncs => "remove_syncs",
            Model::KernelFusion { .. } => "kernel_fusion",
            Model::ReconstructBatchnorm => "reconstruct_batchnorm",
            Model::PrefetchInputs { .. } => "prefetch_inputs",
            Model::Recompute { .. } => "recompute",
            Model::Offload { .. } => "offload",
            Model::Gist { .. } => "gist",
        }
    }

    /// Whether the model is a hardware change rather than a change of the program.
    /// Whether it removes waits (dependencies) rather than only costs: its gain is bounded by
    /// the waiting it can remove, not by the costs it cuts.
    pub fn removes_waits(&self) -> bool {
        matches!(self, Model::RemoveSyncs | Model::PrefetchInputs { .. })
    }

    /// Whether the model only removes or shortens work (never adds any): such a transform
    /// never makes a step slower on a machine, so a slower prediction must name the
    /// constraint that made it so (`trust::assess`). Prefetching charges its workers'
    /// contention only within the loading it takes off, so it belongs here; AMP adds casts, a
    /// `factor` above 1 makes a fused kernel dearer than its parts, and a hardware factor
    /// below 1 is slower hardware.
    pub fn only_removes_work(&self) -> bool {
        match self {
            Model::FusedOptimizer { factor } => *factor <= 1.0,
            Model::KernelFusion { factor } => factor.is_none_or(|f| f <= 1.0),
            Model::FasterHardware(h) => {
                h.compute >= 1.0 && h.memory >= 1.0 && h.cpu >= 1.0 && h.copy >= 1.0
            }
            Model::PrefetchInputs { contention, .. } => *contention < 1.0,
            Model::CudaGraphs | Model::RemoveSyncs | Model::ReconstructBatchnorm => true,
            Model::Amp
            | Model::AmpBf16
            | Model::Recompute { .. }
            | Model::Offload { .. }
            | Model::Gist { .. } => false,
        }
    }

    pub fn is_hardware(&self) -> bool {
        matches!(self, Model::FasterHardware(_))
    }

    /// A change of machine: the largest factor any of its costs is divided by (its factors,
    /// or with `--to` the datasheet ratios, and the host's). No step on that machine can be
    /// more than this many times faster. `None` for a change of program (or a target this
    /// trace's GPU has no datasheet for).
    pub fn largest_speed(&self, context: &Context<'_>) -> Option<f64> {
        let Model::FasterHardware(hardware) = self else {
            return None;
        };
        let factors = match hardware.target {
            Some(target) => {
                let r = target_ratios(context, target).ok()?;
                [hardware.cpu, r.fp32, r.tf32, r.fp16, r.memory, r.copy]
            }
            None => [
                hardware.compute,
                hardware.memory,
                hardware.cpu,
                hardware.copy,
                1.0,
                1.0,
            ],
        };
        factors.into_iter().reduce(f64::max)
    }

    /// The models `advise` tries, in the order their effects compose in: program changes
    /// first (fewer kernels, then cheaper kernels, then fewer launches and syncs), hardware
    /// last. The host is unknown: see [`Model::advised_on`].
    pub fn advised() -> Vec<Model> {
        Model::advised_on(LoaderHost::default())
    }

    /// [`Model::advised`], on a recorded run whose host the user described (`--cores`,
    /// `--threads`): `prefetch_inputs` prices its workers on those cores, as `whatif` does
    /// with the same flags. On a CPU-only trace it declines without them, the workers sharing
    /// cores no trace records.
    pub fn advised_on(host: LoaderHost) -> Vec<Model> {
        vec![
            Model::FusedOptimizer { factor: 1.0 },
            Model::ReconstructBatchnorm,
            Model::KernelFusion { factor: None },
            Model::Amp,
            Model::PrefetchInputs {
                contention: contention_on(host.cores),
                workers: DEFAULT_WORKERS,
                host,
            },
            Model::CudaGraphs,
            Model::RemoveSyncs,
            Model::FasterHardware(gpu_2x()),
            Model::FasterHardware(cpu_2x()),
            Model::FasterHardware(copies_2x()),
        ]
    }

    /// Why this trace and the model's inputs fall outside what the model stands for, if they
    /// do: the prediction is then declined ([`super::trust::TransformKind::outside_domain`]).
    pub fn outside_domain(&self, context: &Context<'_>) -> Option<String> {
        let device_free = || !context.window.graph.has_device_tasks();
        let on_a_cpu = |what: &str| {
            format!(
                "the trace records no device work (a CPU-only run): {} rewrites device kernels, \
                 and what {what} does on a CPU is not modelled",
                self.name()
            )
        };
        match self {
            Model::PrefetchInputs { host, .. } if device_free() => {
                input_overlap::host_unknown(context, *host)
                    .or_else(|| input_overlap::oversubscribed(context, *host))
            }
            Model::PrefetchInputs { host, .. } => input_overlap::oversubscribed(context, *host),
            Model::KernelFusion { .. } if device_free() => Some(on_a_cpu(
                "`torch.compile` (Inductor's C++ code, which also replaces the eager dispatch)",
            )),
            Model::Amp | Model::AmpBf16 if device_free() => Some(on_a_cpu(
                "autocast (`torch.autocast(\"cpu\")`, BF16 CPU kernels)",
            )),
            Model::Amp | Model::AmpBf16 => amp::not_applicable(context),
            Model::CudaGraphs if device_free() => {
                Some(on_a_cpu("capturing the step (no CUDA graph runs on a CPU)"))
            }
            Model::Offload { .. } if device_free() => Some(on_a_cpu(
                "moving activations to host memory (they are in host memory already)",
            )),
            Model::Gist { .. } => gist::unpriced(context),
            _ => None,
        }
    }

    /// How far the model's prediction on this trace can be trusted: the assumptions that
    /// matter here and what the model leaves out, one sentence each (empty when it states
    /// nothing beyond its documentation). For reports next to the speedup.
    pub fn caveats(&self, context: &Context<'_>) -> Vec<String> {
        match self {
            Model::PrefetchInputs {
                contention,
                workers,
                host,
            } => input_overlap::caveats(context, *contention, *workers, *host),
            Model::Amp => amp::caveats(context, AmpDtype::Fp16),
            Model::AmpBf16 => amp::caveats(context, AmpDtype::Bf16),
            Model::CudaGraphs => cuda_graphs::caveats(context),
            Model::FusedOptimizer { .. } => fused_optimizer::caveats(context),
            Model::FasterHardware(hardware) => hardware::caveats(context, hardware),
            Model::ReconstructBatchnorm => batchnorm::caveats(context),
            Model::Recompute { fraction } => recompute::caveats(context, *fraction),
            Model::Gist { .. } => gist::caveats(context),
            Model::Offload { .. } => vec![activations::PEAK_CAVEAT.to_string()],
            _ => Vec::new(),
        }
    }

    /// Applies the model to `edit`. Returns the number of tasks it changed or removed.
    pub fn apply(&self, context: &Context<'_>, edit: &mut EditGraph) -> Result<usize, WhatIfError> {
        match self {
            Model::FusedOptimizer { factor } => fused_optimizer(context, edit, *factor),
            Model::CudaGraphs => cuda_graphs(context, edit),
            Model::Amp => amp(context, edit, AmpDtype::Fp16),
            Model::AmpBf16 => amp(context, edit, AmpDtype::Bf16),
            Model::FasterHardware(hardware) => faster_hardware(context, edit, hardware),
            Model::RemoveSyncs => remove_syncs(context, edit),
            Model::KernelFusion { factor } => kernel_fusion(context, edit, *factor),
            Model::ReconstructBatchnorm => reconstruct_batchnorm(context, edit),
            Model::PrefetchInputs {
                contention,
                workers,
                host,
            } => prefetch_inputs(context, edit, *contention, *workers, *host),
            Model::Recompute { fraction } => recompute(context, edit, *fraction),
            Model::Offload { fraction } => offload(context, edit, *fraction),
            Model::Gist { fraction } => gist(context, edit, *fraction),
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
    /// `recompute`, `offload`, `gist`: the share of each step's activation bytes acted on,
    /// from the front of the forward pass (0 < fraction ≤ 1).
    pub fraction: Option<f64>,
    /// `prefetch_inputs`: the slow-down of the training process's host work beside the
    /// loader's workers (≥ 0; 0.1 = 10 %).
    pub contention: Option<f64>,
    /// `faster_hardware --to`: the GPU to predict for ([`product_named`]'s canonical name).
    pub to: Option<&'static str>,
    /// `amp --dtype`: FP16 with a `GradScaler` (the default) or BF16.
    pub dtype: Option<AmpDtype>,
    /// `prefetch_inputs`: the `DataLoader`'s worker processes (a whole number ≥ 1).
    pub workers: Option<f64>,
    /// `prefetch_inputs`: the host's CPU cores (a whole number ≥ 1; unknown by default: no
    /// trace format stepcast reads records them).
    pub cores: Option<f64>,
    /// `prefetch_inputs`: the training process's intra-op threads (`torch.get_num_threads()`;
    /// a whole number ≥ 1; unknown by default: one per core, PyTorch's default, where
    /// `cores` is given).
    pub threads: Option<f64>,
}

impl ModelParams {
    fn values(&self) -> Vec<(&'static str, f64)> {
        [
            ("factor", self.factor),
            ("compute", self.compute),
            ("memory", self.memory),
            ("cpu", self.cpu),
            ("copy", self.copy),
            ("fraction", self.fraction),
            ("contention", self.contention),
            ("workers", self.workers),
            ("cores", self.cores),
            ("threads", self.threads),
        ]
        .into_iter()
        .filter_map(|(name, value)| value.map(|v| (name, v)))
        .collect()
    }

    fn given(&self) -> Vec<&'static str> {
        let mut given: Vec<&'static str> =
            self.values().into_iter().map(|(name, _)| name).collect();
        given.extend(self.to.map(|_| "to"));
        given.extend(self.dtype.map(|_| "dtype"));
        given
    }
}

/// A model named or parameterized wrongly.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error(
        "unknown model `{name}`{}; the models are: {} (and `ddp`, the data-parallel sweep, in `whatif`)",
        Model::suggestion(name).map_or_else(String::new, |m| format!(" (did you mean `{m}`?)")),
        Model::NAMES.join(", ")
    )]
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
    #[error(
        "invalid --fraction {value}: give a share of the activation bytes, above 0 and at most 1"
    )]
    BadFraction { value: f64 },
    #[error("invalid --{param} {value}: give a whole number, at least 1")]
    BadCount { param: &'static str, value: f64 },
    #[error(
        "faster_hardware takes --to or --{param}, not both: --to sets the GPU's factors from the datasheets (--cpu sets the host's)"
    )]
    TargetAndFactor { param: &'static str },
    #[error("unknown GPU `{name}` for --to; the GPUs are: {}", peaks::products().join(", "))]
    UnknownTarget { name: String },
    #[error("invalid --dtype `{text}`: give fp16 or bf16")]
    BadDtype { text: String },
}

/// `--to NAME` as [`ModelParams::to`] holds it (the product's canonical name).
pub fn target_param(name: &str) -> Result<&'static str, ModelError> {
    product_named(name).ok_or_else(|| ModelError::UnknownTarget {
        name: name.to_string(),
    })
}

/// `--dtype TEXT` as [`ModelParams::dtype`] holds it.
pub fn dtype_param(text: &str) -> Result<AmpDtype, ModelError> {
    AmpDtype::parse(text).ok_or_else(|| ModelError::BadDtype {
        text: text.to_string(),
    })
}

/// `recompute` or `recompute(fraction=0.25)`.
fn with_fraction(name: &str, fraction: f64) -> String {
    if fraction == DEFAULT_FRACTION {
        name.to_string()
    } else {
        format!("{name}(fraction={fraction})")
    }
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

static ELEMENTWISE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(elementwise|pointwise)").expect("valid regex"));

/// An element-wise kernel, by its name: PyTorch's `elementwise_kernel`,
/// `vectorized_elementwise_kernel`, `unrolled_elementwise_kernel`, Inductor's `pointwise`
/// kernels. What kernel fusion fuses, batch-norm reconstruction removes and Gist costs by.
pub(super) fn is_elementwise(name: &str) -> bool {
    ELEMENTWISE.is_match(name)
}

/// A CPU op that makes one element-wise pass over its input and computes next to nothing per
/// element (ReLU, clamps, arithmetic operators). On a CPU-only trace: the pace of Gist's
/// encoding pass, which reads and writes each element once, and what a restructured batch
/// norm takes into its own pass. Ops that compute a transcendental per element (GELU's `erf`,
/// sigmoid, tanh, SiLU, ELU) are left out: on a CPU core they run well below that pace
/// (`cpu-gist-pairs/bigresmlp-base`: `aten::gelu` at 1.9 GB/s where the casts ran at
/// 4.8-6.8), where a GPU's element-wise kernels are all memory-bound.
static ELEMENTWISE_OP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^aten::(relu|threshold|clamp|clamp_min|hardtanh|leaky_relu|hardswish|hardsigmoid|add|sub|mul|div|neg)_?$",
    )
    .expect("valid regex")
});

/// The backward of an [`ELEMENTWISE_OP`] as the autograd engine runs it on a CPU
/// (`autograd::engine::evaluate_function: ReluBackward0`): one element-wise pass too.
static ELEMENTWISE_BACKWARD_OP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^autograd::engine::evaluate_function: (Relu|Threshold|Clamp|ClampMin|Hardtanh|LeakyRelu|Hardswish|Hardsigmoid|Add|Sub|Mul|Div|Neg)Backward\d*$",
    )
    .expect("valid regex")
});

/// An [`ELEMENTWISE_OP`], by its name.
pub(super) fn is_elementwise_op(name: &str) -> bool {
    ELEMENTWISE_OP.is_match(name)
}

/// An [`ELEMENTWISE_BACKWARD_OP`], by its name.
pub(super) fn is_elementwise_backward_op(name: &str) -> bool {
    ELEMENTWISE_BACKWARD_OP.is_match(name)
}

/// The Levenshtein distance between two names (a handful of bytes: no table is kept).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::Model;

    #[test]
    fn names_are_exact_and_near_misses_are_suggested() {
        for name in Model::NAMES {
            let model = Model::by_name(name).unwrap_or_else(|| panic!("{name}"));
            // A model's name starts with the name it is asked by (`faster_hardware(...)`
            // adds its factors).
            assert!(model.name().starts_with(name), "{name}: {}", model.name());
        }
        for (typed, meant) in [
            ("cuda_graph", "cuda_graphs"),
            ("cuda-graphs", "cuda_graphs"),
            ("fused_adam", "fused_optimizer"),
            ("activation_checkpointing", "recompute"),
            ("kernal_fusion", "kernel_fusion"),
        ] {
            assert!(
                Model::by_name(typed).is_none(),
                "{typed} is taken for a model"
            );
            assert_eq!(Model::suggestion(typed), Some(meant), "{typed}");
        }
        assert_eq!(Model::suggestion("zero_redundancy"), None);
        let message = super::ModelError::Unknown {
            name: "cuda_graph".to_string(),
        }
        .to_string();
        assert!(message.contains("did you mean `cuda_graphs`?"), "{message}");
    }
}
