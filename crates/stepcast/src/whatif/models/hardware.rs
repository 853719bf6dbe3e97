//! Faster hardware: every resource's cost divided by its speed-up.

use super::super::edit::{EditGraph, Selection};
use super::super::{Context, WhatIfError};
use super::Hardware;
use super::kernels::is_tensor_core_eligible;
use crate::graph::{TaskId, TaskKind};

/// **Faster hardware**: every task's cost divided by the factor of its resource (tensor-core
/// eligible kernels by `compute`, other kernels and memsets by `memory`, copies by `copy`,
/// host tasks and the untraced host time by `cpu`). Kernels are classified as `amp` does
/// ([`super::classify_kernel`]: memory-bound names first). Collectives are unchanged (the network
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
            return Err(super::super::edit::EditError::BadFactor { factor: speed }.into());
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
