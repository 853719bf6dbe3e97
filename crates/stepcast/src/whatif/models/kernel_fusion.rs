//! Fusion of element-wise kernel chains (`torch.compile`).

use super::super::edit::{EditGraph, FusedCost, HostGaps, Select, Selection};
use super::super::{Context, WhatIfError};
use crate::analyze::mapping::Phase;
use crate::graph::TaskKind;

/// **Kernel fusion of element-wise chains** (what `torch.compile`'s Inductor does): every
/// run of element-wise kernels (PyTorch's `elementwise_kernel`, `vectorized_elementwise_kernel`,
/// `unrolled_elementwise_kernel`, `pointwise` kernels) adjacent on one stream in one step of
/// the forward or backward pass becomes one kernel; the launch calls of the fused-away kernels
/// go with the host time after them (the eager dispatch of those ops).
///
/// Cost: see [`fused_chain_ns`]. `factor` replaces the chain estimate by a fixed share of the
/// sum. The durations are this trace's own.
///
/// Not modeled: fusion across reductions or GEMM epilogues, and compile-time guards.
pub fn kernel_fusion(
    context: &Context<'_>,
    edit: &mut EditGraph,
    factor: Option<f64>,
) -> Result<usize, WhatIfError> {
    let runs = elementwise_runs(context, edit);
    fuse_runs(edit, &runs, factor)
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
        runs.extend(
            edit.runs(&elementwise)
                .into_iter()
                .filter(|run| run.len() >= 2)
                .map(|run| (phase, run)),
        );
    }
    runs
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

/// Fuses each of `runs` (live tasks of `edit`) into one kernel costing [`fused_chain_ns`], the
/// launch calls of the fused-away kernels dropped with the host time after them. Returns the
/// number of kernels fused.
pub fn fuse_runs(
    edit: &mut EditGraph,
    runs: &[(Phase, Selection)],
    factor: Option<f64>,
) -> Result<usize, WhatIfError> {
    let mut changed = 0;
    for (_, run) in runs {
        if run.len() < 2 {
            continue;
        }
        let parts: Vec<i64> = run.tasks().iter().map(|&t| edit.dur_ns(t)).collect();
        let cost = fused_chain_ns(&parts, factor);
        changed += run.len();
        edit.fuse(run, FusedCost::Fixed(cost), HostGaps::Drop)?;
    }
    Ok(changed)
}
