//! Automatic mixed precision (Daydream A.1).

use std::collections::BTreeMap;

use super::super::edit::{EditGraph, Select, Selection};
use super::super::{Context, WhatIfError};
use super::amp_costs::{AmpCosts, charge};
use super::kernels::{Bound, classify_kernel};
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
        let class = classify_kernel(names.get(edit.name(t)));
        let factor = match class.bound {
            _ if class.half => continue,
            Bound::Compute if class.tf32 => 1.0 / tf32_speedup,
            Bound::Compute => 1.0 / fp32_speedup,
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
