//! Fused optimizer (Daydream A.2): the update's device kernels fused here, an update run on
//! the host (a CPU-only trace) in [`host`].

pub mod host;

use host::host_updates;

use super::super::edit::{EditGraph, FusedCost, HostGaps, Select, Selection};
use super::super::{Context, WhatIfError};
use crate::analyze::mapping::Phase;
use crate::graph::TaskKind;

/// **Fused optimizer** (Daydream A.2; FusedAdam, `torch.optim.AdamW(fused=True)`): the
/// optimizer-phase kernels of each step (per stream) become one kernel, whose duration is
/// the sum of theirs × `factor` (one per contiguous run: a step that updates twice, or
/// zeroes gradients apart from its update, keeps them apart); the launch calls of the
/// fused-away kernels are removed with the host time after them (the Python loop that issued
/// them).
///
/// Assumption: the update is memory-bound and a fused kernel moves no more bytes than the
/// kernels it replaces, so `factor = 1.0` (Daydream's choice, durations measured in this trace)
/// is an upper bound on its time; PyTorch's `foreach` Adam makes about three times the passes
/// over the state that the fused kernel makes, so ~0.35 is the optimistic end. Phases come
/// from the mapping (`analyze::mapping`); a trace whose optimizer kernels are already fused
/// (one kernel per step and stream) is unchanged.
///
/// Where the update runs on the host instead (no device kernels: a CPU-only trace), its ops
/// become one fused op per step (`host`); `factor` is for device kernels only.
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
    // A fused kernel replaces one contiguous run of the stream's optimizer kernels: fusing
    // kernels that other work separates would move that work behind the whole update.
    for group in edit.runs(&selection) {
        if group.len() < 2 {
            continue;
        }
        changed += group.len();
        edit.fuse(&group, FusedCost::SumTimes(factor), HostGaps::Drop)?;
    }
    if let Some(updates) = host_updates(context) {
        for step in &updates.steps {
            let saved_ns = step.update_ns - step.fused_ns;
            if saved_ns <= 0 || !edit.is_alive(step.task) || edit.is_frozen(step.task) {
                continue;
            }
            let dur_ns = (edit.dur_ns(step.task) - saved_ns).max(0);
            edit.set_duration(&Selection::new(vec![step.task]), dur_ns)?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// Elements of an out-of-place update op's result (4 MiB of FP32) from which the fused-away
/// allocations may have cost page faults the model does not charge (a caveat says so).
const TEMPORARY_FAULTS_ELEMENTS: i64 = 1 << 20;

/// What the model assumed where it fused an update run on the host (none on the device).
pub fn caveats(context: &Context<'_>) -> Vec<String> {
    let Some(updates) = host_updates(context) else {
        return Vec::new();
    };
    let ms = |ns: i64| format!("{:.3} ms", ns as f64 / 1e6);
    let (update_ns, fused_ns) = updates.mean_ns();
    let counted = if updates.shapes {
        "from the ops' recorded shapes"
    } else {
        "from the ops' names, the trace recording no shapes (`record_shapes=False`): on the \
         parameter whose update took longest, each op that took longer than two dispatches \
         taken to read and write whole parameter tensors, a binary op's other operand a \
         scalar (a step counter's one-element `add_` counts two passes too many)"
    };
    // The ops that do not pace it (Adam's `sqrt` and `div`), where the loop has any.
    let within = if updates.paced_share < 0.999 {
        ", the loop's other ops done within them (their arithmetic, or their values, cost more \
         per element than their traffic)"
    } else {
        ""
    };
    let how = match updates.fused_passes {
        Some(passes) => format!(
            "{passes} tensor passes per parameter element (reading the parameter, its \
             gradient and state once, writing the parameter and state once) over the \
             {:.1} of the loop's multiply-add ops ({:.0} % of its time beyond dispatch; \
             {:.1} passes in all), {counted}: the fused kernel's passes at the pace of the \
             loop's multiply-add passes{within}; where the arithmetic, not the traffic \
             through memory, binds the update, the fused op is slower, up to the \
             loop's time less its dispatches",
            updates.paced_passes,
            100.0 * updates.paced_share,
            updates.loop_passes
        ),
        None => format!(
            "`{}` is no optimizer whose state stepcast knows: the fused op is charged the \
             loop's time less its dispatches (×1, no traffic saved)",
            updates.optimizer
        ),
    };
    let tensors = if updates.shapes {
        format!(
            "{} tensors ({} elements)",
            updates.parameters, updates.parameter_elements
        )
    } else if updates.parameters > 1 {
        format!("{} tensors (sizes not recorded)", updates.parameters)
    } else {
        // `_foreach_` ops: one list, its length not recorded either.
        "its tensors (their number and sizes not recorded)".to_string()
    };
    let mut caveats = Vec::new();
    // PyTorch's optimizers with a fused implementation (`fused=True`), CPU and CUDA.
    if !matches!(
        updates.optimizer.as_str(),
        "Adam" | "AdamW" | "SGD" | "Adagrad"
    ) {
        caveats.push(format!(
            "PyTorch has no `fused=True` for `torch.optim.{}` (it has one for Adam, AdamW, SGD \
             and Adagrad): this gain needs a fused kernel of your own; `foreach=True` saves \
             part of it (one dispatch per op for all tensors, the same passes over them)",
            updates.optimizer
        ));
    }
    // Results of 4 MiB of FP32 and more: on the pairs recorded, the loop's 4 MiB temporaries
    // faulted 2 016 pages a step and its 25.6 MB ones 18 700; 2.4 MB ones none.
    if updates.largest_temporary_elements >= TEMPORARY_FAULTS_ELEMENTS {
        caveats.push(format!(
            "the loop's out-of-place ops (`sqrt`, `div`) allocate and free results of up to {} \
             elements each per parameter, every step: on a CPU the allocator can hand such \
             buffers back to the kernel and fault fresh pages in again each step (a 25.6 MB \
             embedding table's update: 18 700 page faults a step, the table's gradient \
             zero-filled 5× slower in the backward), a cost in the update and in the phases \
             after it that the fused update no longer causes and this model does not charge: \
             the gain can be larger",
            updates.largest_temporary_elements
        ));
    }
    caveats.push(format!(
        "the {} update runs on the host (no device kernels): per step, {} update ops on \
         {tensors}, {} with the Python loop between them, become one fused op of \
         {}: one dispatch ({:.1} µs: {}) plus ×{:.2} of the multiply-add ops' \
         time beyond their dispatch, the fused kernel's {how}",
        updates.optimizer,
        updates.ops_per_step,
        ms(update_ns),
        ms(fused_ns),
        updates.dispatch_ns as f64 / 1e3,
        updates.dispatch_from.describe(),
        updates.traffic_ratio,
    ));
    caveats
}
