//! Faster hardware: every resource's cost divided by its speed-up.

use super::super::edit::{EditGraph, Selection};
use super::super::{Context, WhatIfError};
use super::Hardware;
use super::kernels::is_tensor_core_eligible;
use crate::graph::{TaskId, TaskKind};

/// **Faster hardware**: every task's cost divided by the factor of its resource (tensor-core
/// eligible kernels by `compute`, other kernels and memsets by `memory`, copies by `copy`,
/// host tasks and the untraced host time by `cpu`; where scheduler events say a thread was off
/// its CPU, only its on-CPU time). Kernels are classified as `amp` does
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
        if index == 0 && !context.trace.off_cpu.is_empty() {
            scale_on_cpu_time(context, edit, group, speed)?;
            continue;
        }
        let selection = Selection::new(group);
        edit.scale(&selection, 1.0 / speed)?;
        if index == 0 {
            // Host tasks: the untraced host time after them runs on the same CPU.
            edit.scale_gaps(&selection, 1.0 / speed)?;
        }
    }
    Ok(changed)
}

/// A faster CPU where the trace says when host threads were off their CPU (scheduler events):
/// only the time a task, or the untraced gap after it, spent on its CPU runs faster; the time
/// its thread was blocked or waiting for a CPU stays as recorded.
fn scale_on_cpu_time(
    context: &Context<'_>,
    edit: &mut EditGraph,
    tasks: Vec<TaskId>,
    speed: f64,
) -> Result<(), WhatIfError> {
    let graph = &context.window.graph;
    let off_cpu = &context.trace.off_cpu;
    // Off-CPU time inside [from, to) on trace lane `lane` (a thread's intervals are disjoint
    // and sorted by lane, then start).
    let off_ns = |lane, from: i64, to: i64| -> i64 {
        let first = off_cpu.partition_point(|o| (o.lane, o.end_ns()) <= (lane, from));
        off_cpu[first..]
            .iter()
            .take_while(|o| o.lane == lane && o.start_ns < to)
            .map(|o| (o.end_ns().min(to) - o.start_ns.max(from)).max(0))
            .sum()
    };
    // The share of `span_ns` that runs faster: the on-CPU part.
    let factor = |off: i64, span_ns: i64| -> f64 {
        let off_share = if span_ns > 0 {
            (off as f64 / span_ns as f64).clamp(0.0, 1.0)
        } else {
            0.0
        };
        off_share + (1.0 - off_share) / speed
    };
    for task in tasks {
        let origin = edit.origin(task).index();
        let lane = graph.lanes[graph.lane[origin] as usize].trace_lane;
        let (start, end) = (graph.rec_start_ns[origin], graph.rec_end_ns[origin]);
        let one = Selection::new(vec![task]);
        edit.scale(&one, factor(off_ns(lane, start, end), end - start))?;
        let gap = graph.gap_ns[origin];
        edit.scale_gaps(
            &one,
            factor(off_ns(lane, end, end.saturating_add(gap)), gap),
        )?;
    }
    Ok(())
}
