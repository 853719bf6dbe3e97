//! Automatic mixed precision (Daydream A.1).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::super::edit::{EditGraph, Select, Selection};
use super::super::{Context, WhatIfError};
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
