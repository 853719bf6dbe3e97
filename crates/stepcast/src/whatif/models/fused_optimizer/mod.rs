//! Fused optimizer (Daydream A.2).

use super::super::edit::{EditGraph, FusedCost, HostGaps, Select};
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
    Ok(changed)
}
