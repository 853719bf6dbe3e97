//! Fusion of element-wise kernel chains (`torch.compile`).

use stepcast_trace::{EventId, EventKind, OpInput};

use super::super::edit::{EditGraph, FusedCost, HostGaps, Select, Selection};
use super::super::{Context, WhatIfError};
use crate::analyze::mapping::Phase;
use crate::graph::{TaskId, TaskKind};

/// **Kernel fusion of element-wise chains** (what `torch.compile`'s Inductor does): every
/// run of element-wise kernels (PyTorch's `elementwise_kernel`, `vectorized_elementwise_kernel`,
/// `unrolled_elementwise_kernel`, `pointwise` kernels) adjacent on one stream in one step of
/// the forward or backward pass becomes one kernel; the launch calls of the fused-away kernels
/// go with the host time after them (the eager dispatch of those ops). Adjacent is not enough:
/// each kernel of a chain must read what the one before it wrote (`depends_on`: launched
/// by the same op, or its op takes a tensor of the shape the previous op's output has), so
/// two independent element-wise ops that happen to follow each other on the stream are not
/// fused (a compiler fuses along data edges, not stream order).
///
/// Cost: see [`fused_chain_ns`]: the share of the parts' time is their bytes' (the op model's,
/// [`traffic_shares`]) where every part's op recorded its shapes, else the traffic estimate
/// by count; `factor` replaces either by a fixed share of the sum. The durations are this
/// trace's own.
///
/// Not modeled: fusion across reductions or GEMM epilogues (Inductor folds a bias, an
/// activation or a residual addition into the GEMM's epilogue and fuses element-wise work
/// into reductions such as a norm's statistics), the eager dispatch of the other ops that
/// `torch.compile` also removes, and compile-time guards.
pub fn kernel_fusion(
    context: &Context<'_>,
    edit: &mut EditGraph,
    factor: Option<f64>,
) -> Result<usize, WhatIfError> {
    let runs = elementwise_runs(context, edit);
    let shares: Vec<Option<f64>> = match factor {
        Some(factor) => vec![Some(factor); runs.len()],
        None => traffic_shares(context, edit, &runs),
    };
    fuse_runs(edit, &runs, &shares)
}

/// Per chain, the share of its parts' time the fused kernel takes by the op model's bytes
/// (`analyze::op_model`), where every part's op recorded its shapes: the fused kernel reads
/// what the chain reads from outside and writes its last result, the intermediates staying
/// in registers; each intermediate is one element per element-wise FLOP of the op that wrote
/// it (half the bytes of a copy), so the fused bytes are the parts' bytes less twice each
/// intermediate (written, then read back), and never fewer than the largest part's. `None` for a chain with a part of no recorded shapes: [`fused_chain_ns`]'s
/// default share.
pub fn traffic_shares(
    context: &Context<'_>,
    edit: &EditGraph,
    runs: &[(Phase, Selection)],
) -> Vec<Option<f64>> {
    use crate::analyze::op_model::{Category, element_bytes, kernel_costs};
    let costs = kernel_costs(context.trace, context.window, context.mapping);
    runs.iter()
        .map(|(_, run)| {
            let parts: Option<Vec<_>> = run
                .tasks()
                .iter()
                .map(|&t| {
                    let cost = edit
                        .is_original(t)
                        .then(|| costs.get(t.index()).copied().flatten())
                        .flatten()?;
                    (cost.category == Category::Elementwise && cost.bytes > 0.0).then_some(cost)
                })
                .collect();
            let parts = parts?;
            let bytes: f64 = parts.iter().map(|c| c.bytes).sum();
            // A copy or fill computes nothing: its result is taken as half its bytes (one
            // tensor read, one written).
            let intermediates: f64 = parts[..parts.len().saturating_sub(1)]
                .iter()
                .map(|c| match c.flops {
                    0.0 => c.bytes / 2.0,
                    flops => flops * element_bytes(c.dtype),
                })
                .sum();
            let largest = parts.iter().map(|c| c.bytes).fold(0.0, f64::max);
            let fused = (bytes - 2.0 * intermediates).max(largest);
            (bytes > 0.0).then(|| (fused / bytes).clamp(0.0, 1.0))
        })
        .collect()
}

/// The chains [`kernel_fusion`] fuses: runs of two or more element-wise kernels adjacent on
/// one stream in one step and one pass (forward or backward), in phase then lane order.
pub fn elementwise_runs(context: &Context<'_>, edit: &EditGraph) -> Vec<(Phase, Selection)> {
    let names = &context.trace.names;
    // Runs are taken within one pass: a forward and a backward kernel adjacent on a stream are
    // not one chain (the compiler fuses each pass's graph apart), and fusing across the pass
    // boundary would tie the forward's tail to work launched after the backward began.
    let mut runs = Vec::new();
    for phase in [Phase::Forward, Phase::Backward] {
        let select = Select {
            kinds: vec![TaskKind::Kernel],
            phases: vec![phase],
            ..Select::default()
        };
        let candidates = edit.select(&select, context.select_context());
        let elementwise = Selection::new(
            candidates
                .tasks()
                .iter()
                .copied()
                .filter(|&t| super::is_elementwise(names.get(edit.name(t))))
                .collect(),
        );
        for run in edit.runs(&elementwise) {
            runs.extend(
                split_at_independent(context, edit, run.tasks())
                    .into_iter()
                    .filter(|chain| chain.len() >= 2)
                    .map(|chain| (phase, Selection::new(chain))),
            );
        }
    }
    runs
}

/// `run` (adjacent element-wise kernels) cut wherever a kernel does not depend on the one
/// before it ([`depends_on`]).
fn split_at_independent(
    context: &Context<'_>,
    edit: &EditGraph,
    run: &[TaskId],
) -> Vec<Vec<TaskId>> {
    let mut chains: Vec<Vec<TaskId>> = Vec::new();
    for &t in run {
        match chains.last_mut() {
            Some(chain)
                if chain
                    .last()
                    .is_some_and(|&p| depends_on(context, edit, p, t)) =>
            {
                chain.push(t)
            }
            _ => chains.push(vec![t]),
        }
    }
    chains
}

/// The ops on a kernel's launching stack: the outermost (`aten::dropout`,
/// `autograd::engine::evaluate_function: ReluBackward0`) and the innermost with recorded
/// tensor inputs.
fn ops_of(
    context: &Context<'_>,
    edit: &EditGraph,
    t: TaskId,
) -> (Option<EventId>, Option<EventId>) {
    if !edit.is_original(t) {
        return (None, None);
    }
    let trace = context.trace;
    let ops: Vec<EventId> = context
        .mapping
        .stack(t)
        .into_iter()
        .filter(|e| trace.events[e.index()].kind == EventKind::CpuOp)
        .collect();
    let with_inputs = ops.iter().rev().copied().find(|&e| {
        trace
            .inputs_of(e)
            .is_some_and(|i| i.iter().any(|x| matches!(x, OpInput::Tensor { .. })))
    });
    (ops.first().copied(), with_inputs)
}

/// Whether kernel `second` reads what kernel `first` wrote, as far as the trace tells: both
/// launched by one op (its kernels work on its tensors); else, where an Execution Trace joined
/// both launching ops ([`Context::data`]), whether an op of `second`'s stack reads a tensor an
/// op of `first`'s stack produced (the program's own statement); else whether the op of
/// `second` takes a tensor of the shape of `first`'s op's output (an element-wise op's output
/// has the shape of its largest input). Where neither op has recorded inputs (`record_shapes`
/// off), adjacency on the stream is all there is and is taken as the dependency.
pub fn depends_on(context: &Context<'_>, edit: &EditGraph, first: TaskId, second: TaskId) -> bool {
    let (outer_a, shaped_a) = ops_of(context, edit, first);
    let (outer_b, shaped_b) = ops_of(context, edit, second);
    if outer_a.is_some() && outer_a == outer_b {
        return true;
    }
    if let Some(stated) = stated_dependency(context, edit, first, second) {
        return stated;
    }
    let tensors = |op: Option<EventId>| -> Option<Vec<Vec<i64>>> {
        let inputs = context.trace.inputs_of(op?)?;
        Some(
            inputs
                .iter()
                .filter_map(|i| match i {
                    OpInput::Tensor { shape, .. } => Some(shape.clone()),
                    _ => None,
                })
                .collect(),
        )
    };
    match (tensors(shaped_a), tensors(shaped_b)) {
        (Some(a), Some(b)) => {
            let output = a
                .iter()
                .max_by_key(|shape| shape.iter().product::<i64>())
                .cloned();
            output.is_some_and(|out| b.contains(&out))
        }
        _ => true,
    }
}

/// Whether an op launching `second` reads what an op launching `first` produced, as the joined
/// Execution Trace states it; `None` where there is none or it did not join the innermost op
/// of either (of an op not joined, the ET says nothing).
fn stated_dependency(
    context: &Context<'_>,
    edit: &EditGraph,
    first: TaskId,
    second: TaskId,
) -> Option<bool> {
    let data = context.data?;
    if !edit.is_original(first) || !edit.is_original(second) {
        return None;
    }
    let ops = |t: TaskId| -> Vec<EventId> {
        context
            .mapping
            .stack(t)
            .into_iter()
            .filter(|e| context.trace.events[e.index()].kind == EventKind::CpuOp)
            .collect()
    };
    let (a, b) = (ops(first), ops(second));
    if !a.last().is_some_and(|&e| data.is_joined(e))
        || !b.last().is_some_and(|&e| data.is_joined(e))
    {
        return None;
    }
    Some(
        b.iter()
            .any(|&consumer| data.producers_of(consumer).any(|p| a.contains(&p))),
    )
}

/// The fused kernel's cost, from the parts' own durations: element-wise kernels are
/// memory-bound; a chain of `n` kernels that each read a tensor and write one moves about `2n`
/// tensors; fused, the intermediates stay in registers and it moves about `n + 1` (each input
/// once, one output). So the fused kernel costs the sum of the parts × `(n + 1) / 2n` (0.75
/// for a pair, towards 0.5 for long chains), and never less than its longest part (it moves
/// at least that part's bytes). `factor` replaces the share.
pub fn fused_chain_ns(parts_ns: &[i64], factor: Option<f64>) -> i64 {
    let n = parts_ns.len();
    let sum: i64 = parts_ns.iter().sum();
    let longest = parts_ns.iter().copied().max().unwrap_or(0);
    let share = factor.unwrap_or((n as f64 + 1.0) / (2.0 * n.max(1) as f64));
    ((sum as f64 * share).round() as i64).max(longest).min(sum)
}

/// Fuses each of `runs` (live tasks of `edit`) into one kernel costing [`fused_chain_ns`] with
/// the run's share in `shares` (its traffic share, or the user's factor; `None`: the default),
/// the launch calls of the fused-away kernels dropped with the host time after them. Returns
/// the number of kernels fused.
pub fn fuse_runs(
    edit: &mut EditGraph,
    runs: &[(Phase, Selection)],
    shares: &[Option<f64>],
) -> Result<usize, WhatIfError> {
    let mut changed = 0;
    for (i, (_, run)) in runs.iter().enumerate() {
        if run.len() < 2 {
            continue;
        }
        let parts: Vec<i64> = run.tasks().iter().map(|&t| edit.dur_ns(t)).collect();
        let cost = fused_chain_ns(&parts, shares.get(i).copied().flatten());
        changed += run.len();
        edit.fuse(run, FusedCost::Fixed(cost), HostGaps::Drop)?;
    }
    Ok(changed)
}
