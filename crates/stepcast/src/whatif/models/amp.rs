//! Automatic mixed precision (Daydream A.1).

use std::collections::BTreeMap;

use super::super::edit::{EditGraph, Select, Selection};
use super::super::{Context, WhatIfError};
use super::amp_costs::{AmpCosts, charge};
use super::kernels::{Bound, classify_kernel};
use super::peaks::peaks;
use crate::analyze::mapping::Phase;
use crate::graph::{TaskId, TaskKind};

/// The compute capability major of the trace's GPU (the largest, if several).
pub(super) fn compute_major(context: &Context<'_>) -> Option<i64> {
    context
        .trace
        .devices
        .iter()
        .filter_map(|d| d.compute_capability.map(|(major, _)| major))
        .max()
}

/// How much faster each kind of FP32 tensor-core-eligible kernel runs in FP16, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct AmpFactors {
    /// FP32 on CUDA cores (`ffma`, `sgemm`): FP16 tensor peak / FP32 peak.
    pub simt: f64,
    /// Already on TF32 tensor cores: FP16 tensor peak / TF32 tensor peak.
    pub tf32: f64,
    /// FP32 whose math path the name does not tell (a convolution, a fused attention kernel):
    /// the low end, the TF32 ratio, where the GPU has TF32 (cuDNN uses it by default, and
    /// CUTLASS's FP32 attention kernels use 3xTF32); the SIMT ratio where it has none.
    pub unknown: f64,
    /// Where the factors come from, for the caveats.
    pub source: String,
}

impl AmpFactors {
    /// From the trace's GPU (the first device with known peaks): datasheet peaks by product
    /// name, else the architecture's per-SM rates by compute capability. No tensor cores
    /// (< 7.0): 1. Neither known: Daydream's 3 (after NVIDIA's AMP guide), 2 for TF32 kernels.
    pub fn of(context: &Context<'_>) -> AmpFactors {
        if compute_major(context).is_some_and(|m| m < 7) {
            return AmpFactors {
                simt: 1.0,
                tf32: 1.0,
                unknown: 1.0,
                source: "no tensor cores before compute capability 7.0".to_string(),
            };
        }
        match context.trace.devices.iter().find_map(peaks) {
            Some(p) => {
                let simt = p.fp16_tflops / p.fp32_tflops;
                let tf32 = p.tf32_tflops.map_or(simt, |t| p.fp16_tflops / t);
                AmpFactors {
                    simt,
                    tf32,
                    unknown: tf32,
                    source: format!(
                        "{}: FP16 tensor {:.0}, TF32 tensor {}, FP32 {:.1} TFLOP/s (peak ratios)",
                        p.source,
                        p.fp16_tflops,
                        p.tf32_tflops
                            .map_or_else(|| "none".to_string(), |t| format!("{t:.0}")),
                        p.fp32_tflops
                    ),
                }
            }
            None => AmpFactors {
                simt: 3.0,
                tf32: 2.0,
                unknown: 3.0,
                source: "GPU not identified: Daydream's 3 (2 for TF32 kernels)".to_string(),
            },
        }
    }
}

/// **Automatic mixed precision** (Daydream A.1, refined). Forward and backward kernels only:
/// the optimizer keeps FP32 master weights, collectives reduce FP32 gradients, input copies
/// are unchanged. Per kernel, by name:
/// - already half precision (`f16`, `bf16`, `h884`, `nvjet_sm90_hsh`...): unchanged;
/// - tensor-core eligible (GEMM, convolution): duration / the peak ratio of its math path
///   ([`AmpFactors`]: FP32 on CUDA cores, TF32, or not told by the name), from the trace's
///   GPU (`deviceProperties`): datasheet peaks bound what the kernel gains;
/// - memory-bound element-wise, normalization, reduction kernels: × 0.5 (half the bytes);
/// - anything else: unchanged.
///
/// Kernels are classified by [`classify_kernel`], memory-bound names first (cuDNN's
/// batch-norm kernels are memory-bound, not convolutions), the classifier `faster_hardware`
/// uses. Then what AMP costs is charged ([`charge`]): the casts, the gradient scaler's
/// kernels, its per-step host synchronization and the host time of dispatching them. On a
/// host-bound step those costs can outweigh the faster kernels: AMP can slow a step down.
pub fn amp(context: &Context<'_>, edit: &mut EditGraph) -> Result<usize, WhatIfError> {
    amp_with_costs(context, edit).map(|(changed, _)| changed)
}

/// [`amp`], also returning what it charged.
pub fn amp_with_costs(
    context: &Context<'_>,
    edit: &mut EditGraph,
) -> Result<(usize, AmpCosts), WhatIfError> {
    let factors = AmpFactors::of(context);
    let select = Select {
        kinds: vec![TaskKind::Kernel],
        phases: vec![Phase::Forward, Phase::Backward, Phase::Other],
        ..Select::default()
    };
    let selection = edit.select(&select, context.select_context());
    let names = &context.trace.names;
    let mut by_factor: BTreeMap<u64, Vec<TaskId>> = BTreeMap::new();
    for &t in selection.tasks() {
        let class = classify_kernel(names.get(edit.name(t)));
        let factor = match class.bound {
            _ if class.half => continue,
            Bound::Compute if class.tf32 => 1.0 / factors.tf32,
            Bound::Compute if class.simt => 1.0 / factors.simt,
            Bound::Compute => 1.0 / factors.unknown,
            Bound::Memory => 0.5,
            Bound::Other => continue,
        };
        by_factor.entry(f64::to_bits(factor)).or_default().push(t);
    }
    let mut changed = 0;
    for (bits, tasks) in by_factor {
        changed += tasks.len();
        edit.scale(&Selection::new(tasks), f64::from_bits(bits))?;
    }
    let costs = charge(context, edit)?;
    Ok((changed + costs.casts + costs.scaler_tasks, costs))
}
