//! Reconstructed batch normalization (Daydream A.3, after Jung et al.).

use std::sync::LazyLock;

use regex::Regex;

use super::super::edit::{EditGraph, HostGaps, Select, Selection};
use super::super::{Context, WhatIfError};
use crate::analyze::mapping::Phase;
use crate::graph::{TaskId, TaskKind};

static BATCH_NORM_KERNEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(bn_fw|bn_bw|batch_?norm)").expect("valid regex"));
static BATCH_NORM_OP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)batch_?norm").expect("valid regex"));
/// What a forward or backward kernel is to the batch-norm model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchNormRole {
    /// A batch-norm kernel: its name (`bn_fw_tr`, `bn_bw`, `batch_norm`) or an op on its
    /// launching call's stack (`aten::batch_norm`, `CudnnBatchNormBackward`) says so.
    BatchNorm,
    /// An element-wise kernel (`elementwise`/`pointwise` in its name) of another op.
    ElementWise,
    Other,
}

/// The role of input task `task`: a kernel of the forward or backward pass, or on a trace
/// without device work an op's host task (`aten::batch_norm`, `aten::relu_`, the autograd
/// engine's `evaluate_function: NativeBatchNormBackward0`), by its name.
pub fn batch_norm_role(context: &Context<'_>, edit: &EditGraph, task: TaskId) -> BatchNormRole {
    let names = &context.trace.names;
    let name = names.get(edit.name(task));
    if edit.kind(task) == TaskKind::CpuOp {
        return if BATCH_NORM_OP.is_match(name) {
            BatchNormRole::BatchNorm
        } else if super::is_elementwise_op(name) || super::is_elementwise_backward_op(name) {
            BatchNormRole::ElementWise
        } else {
            BatchNormRole::Other
        };
    }
    let on_stack =
        || {
            edit.is_original(task)
                && context.mapping.stack(task).iter().any(|&e| {
                    BATCH_NORM_OP.is_match(names.get(context.trace.events[e.index()].name))
                })
        };
    if BATCH_NORM_KERNEL.is_match(name) || on_stack() {
        BatchNormRole::BatchNorm
    } else if super::is_elementwise(name) {
        BatchNormRole::ElementWise
    } else {
        BatchNormRole::Other
    }
}

/// **Reconstructed batch normalization** (Daydream A.3; Jung et al., "Restructuring Batch
/// Normalization to Accelerate CNN Training"): each batch-norm layer is split, its first half
/// fused into the convolution before it and its second half into the activation (ReLU, and
/// the residual add) after it.
///
/// As Daydream models it: the element-wise kernels fused into their neighbours disappear and
/// batch-norm kernels take half their time (they load half the input from memory). Here, per
/// stream and step, in the forward pass the run of element-wise kernels right after a
/// batch-norm kernel is removed (ReLU, residual add), and in the backward pass the run right
/// before a batch-norm backward kernel (the ReLU's gradient, which feeds it); the launch
/// calls of the removed kernels go with the host time after them (those ops are no longer
/// dispatched). Every batch-norm kernel of either pass takes half its recorded time.
///
/// On a trace without device work (a CPU-only run) the same rule holds for the ops' host
/// tasks: each batch-norm op takes half its recorded time, its dispatch included, and the
/// element-wise ops run right after it in the forward pass (`aten::relu_`, the residual
/// `aten::add_`) and right before its backward (`evaluate_function: ReluBackward0`) go, with
/// the host time after them: the restructured batch norm as one op of its own.
///
/// Numbers: the ½ is the paper's (half the bytes loaded); durations are this trace's.
/// Applies only where the trace has batch-norm kernels (or ops, on a CPU-only trace);
/// otherwise changes nothing. Not modeled: the new kernels and copies of a real
/// implementation (Daydream §6.4 measured 7 % where it predicted 12.7 % for DenseNet-121).
pub fn reconstruct_batchnorm(
    context: &Context<'_>,
    edit: &mut EditGraph,
) -> Result<usize, WhatIfError> {
    let (batch_norm, element_wise) = batchnorm_targets(context, edit);
    edit.scale(&batch_norm, 0.5)?;
    edit.remove(&element_wise, HostGaps::Drop)?;
    Ok(batch_norm.len() + element_wise.len())
}

/// The batch-norm kernels the model halves and the element-wise kernels it removes.
pub fn batchnorm_targets(context: &Context<'_>, edit: &EditGraph) -> (Selection, Selection) {
    // A CPU-only trace's work is its host ops.
    let kind = if context.window.graph.has_device_tasks() {
        TaskKind::Kernel
    } else {
        TaskKind::CpuOp
    };
    let select = Select {
        kinds: vec![kind],
        phases: vec![Phase::Forward, Phase::Backward],
        ..Select::default()
    };
    let candidates = edit.select(&select, context.select_context());
    let roles: Vec<(TaskId, BatchNormRole)> = candidates
        .tasks()
        .iter()
        .map(|&t| (t, batch_norm_role(context, edit, t)))
        .collect();
    let role_of = |t: TaskId| {
        roles
            .binary_search_by_key(&t, |&(task, _)| task)
            .ok()
            .map(|i| roles[i].1)
    };
    let batch_norm: Vec<TaskId> = roles
        .iter()
        .filter(|&&(_, r)| r == BatchNormRole::BatchNorm)
        .map(|&(t, _)| t)
        .collect();
    let mut removed = Vec::new();
    let mut lanes: Vec<u32> = batch_norm.iter().map(|&t| edit.lane(t)).collect();
    lanes.sort_unstable();
    lanes.dedup();
    for lane in lanes {
        let tasks: Vec<TaskId> = edit.lane_tasks(lane).into_iter().map(TaskId).collect();
        for (i, &t) in tasks.iter().enumerate() {
            if role_of(t) != Some(BatchNormRole::BatchNorm) {
                continue;
            }
            let phase = context.mapping.phase[t.index()];
            let same_run = |&&u: &&TaskId| {
                role_of(u) == Some(BatchNormRole::ElementWise)
                    && edit.step(u) == edit.step(t)
                    && context.mapping.phase[u.index()] == phase
            };
            match phase {
                Phase::Forward => removed.extend(tasks[i + 1..].iter().take_while(same_run)),
                _ => removed.extend(tasks[..i].iter().rev().take_while(same_run)),
            }
        }
    }
    (Selection::new(batch_norm), Selection::new(removed))
}

/// What the model's ½ stands on, and on a CPU-only trace what it halves: its caveats.
pub fn caveats(context: &Context<'_>) -> Vec<String> {
    let mut caveats = vec![CAVEAT.to_string()];
    if !context.window.graph.has_device_tasks() {
        caveats.push(CPU_CAVEAT.to_string());
    }
    caveats
}

/// What the model does on a CPU-only trace, and how its realizations did there
/// (`cpu-batchnorm-pairs/`, `docs/accuracy.md`).
const CPU_CAVEAT: &str = "the trace records no device work: each batch-norm op's host time is \
     halved, its dispatch included, and the element-wise ops beside it go with the Python \
     between them, as if each restructured batch norm were one op of its own; the ½ is a GPU \
     kernel's figure. On a 2-core CPU a hand-fused batch norm + ReLU (forward and \
     backward each one compiled function) gained what this predicts on 4 and 8 MiB tensors, \
     little at 2 MiB (×1.02 without the profiler where ×1.14 was predicted) and nothing at 1 \
     MiB, where its fixed cost per call matched the passes it saved; `torch.compile` of \
     each batch norm with its ReLU made the step 1.5-1.7× slower (Inductor's training graph of \
     batch norm, torch 2.15)";

/// What the model's ½ stands on, for its caveats: a figure, not a measurement.
const CAVEAT: &str = "every batch-norm kernel takes ½ its time and the element-wise \
     kernels beside it go: Daydream's figure (half the input loaded), not a measurement; \
     Daydream itself predicted 12.7 % for DenseNet-121 and measured 7 % with the real \
     implementation (§6.4), whose new kernels and copies this does not model: expect about half \
     the predicted gain";
