//! FSDP / ZeRO-3: parameters sharded across ranks, gathered per unit when needed.
//!
//! Units are consecutive parameters in ready order grouped like DDP buckets (closed once they
//! hold the unit size). Per unit and step, on one communication stream, in issue order:
//! an all-gather of its parameters before its forward, another before its backward, and a
//! reduce-scatter of its gradients after its backward; each gather is prefetched one unit
//! ahead (it may start once the previous unit's compute has started, as FSDP's
//! `forward_prefetch` / `BACKWARD_PRE` do). Where a unit's forward starts: the first forward
//! kernel of one of its layers (the layer of the backward task that readies its gradients,
//! resolved through autograd by the mapping), else its place in proportion to its share of
//! the parameters among the step's forward kernels. Its backward starts right after the
//! previous unit's last gradient is ready (the first backward kernel for the first unit).
//! Each rank updates only its shard: the optimizer's kernels shrink with the world size
//! ([`shard_optimizer`]); its host work stays as recorded (FSDP still steps every flat
//! parameter).

use std::collections::BTreeMap;

use super::gradients::Gradients;
use super::insert::{InsertNames, ddp_buckets};
use crate::analyze::mapping::{Mapping, Phase};
use crate::comm::{Collective, Topology};
use crate::graph::{EdgeKind, NO_STEP, TaskId, TaskKind};
use crate::whatif::WhatIfError;
use crate::whatif::edit::EditGraph;

/// One unit's exchanges in one step.
#[derive(Clone, Debug, PartialEq)]
pub struct FsdpUnit {
    pub step: u32,
    /// Parameters (ready-order indices) `first .. first + count`.
    pub first_gradient: u32,
    pub gradients: u32,
    pub bytes: i64,
    /// The first forward and backward device tasks of the unit, and its last gradient's.
    pub forward_start: TaskId,
    pub backward_start: TaskId,
    pub ready: TaskId,
    pub all_gather_ns: i64,
    pub reduce_scatter_ns: i64,
}

/// Counts of what [`insert`] added.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FsdpInserted {
    pub all_gathers: usize,
    pub reduce_scatters: usize,
}

/// The units of the steps in `steps`, with their anchors and costs.
pub fn plan_units(
    window: &crate::Window,
    mapping: &Mapping,
    gradients: &Gradients,
    steps: &[u32],
    unit_cap: i64,
    topology: &Topology,
) -> Vec<FsdpUnit> {
    let graph = &window.graph;
    // Per step: forward and backward device tasks in recorded order.
    let mut forward: BTreeMap<u32, Vec<TaskId>> = BTreeMap::new();
    let mut backward: BTreeMap<u32, Vec<TaskId>> = BTreeMap::new();
    for t in 0..graph.task_count() {
        let step = graph.step[t];
        if step == NO_STEP || !graph.kind[t].on_device() {
            continue;
        }
        match mapping.phase[t] {
            Phase::Forward => forward.entry(step).or_default().push(TaskId(t as u32)),
            Phase::Backward => backward.entry(step).or_default().push(TaskId(t as u32)),
            _ => {}
        }
    }
    for tasks in forward.values_mut().chain(backward.values_mut()) {
        tasks.sort_by_key(|t| (graph.rec_start_ns[t.index()], *t));
    }
    let mut out = Vec::new();
    for &step in steps {
        let (Some(grads), Some(fwd), Some(bwd)) = (
            gradients.steps.get(&step),
            forward.get(&step),
            backward.get(&step),
        ) else {
            continue;
        };
        let total: i64 = grads.iter().map(|g| g.bytes).sum::<i64>().max(1);
        let mut before = 0i64; // bytes of the units readied earlier (later in forward)
        let mut previous_ready: Option<TaskId> = None;
        let mut previous_forward: Option<TaskId> = None;
        for range in ddp_buckets(grads, unit_cap) {
            let unit = &grads[range.clone()];
            let bytes: i64 = unit.iter().map(|g| g.bytes).sum();
            let ready = unit[unit.len() - 1].ready;
            // Forward: its layers' first forward kernel, else in proportion (units readied
            // first run last in the forward pass).
            let layers: Vec<_> = unit
                .iter()
                .filter_map(|g| mapping.layer[g.ready.index()])
                .collect();
            let by_layer = fwd
                .iter()
                .copied()
                .find(|t| mapping.layer[t.index()].is_some_and(|l| layers.contains(&l)));
            let share = (total - before - bytes) as f64 / total as f64;
            let proportional = fwd[((share * fwd.len() as f64) as usize).min(fwd.len() - 1)];
            // Forward order is the reverse of ready order: never later than the unit readied
            // before it (which runs after it in the forward pass).
            let mut forward_start = by_layer.unwrap_or(proportional);
            if let Some(p) = previous_forward
                && graph.rec_start_ns[forward_start.index()] > graph.rec_start_ns[p.index()]
            {
                forward_start = p;
            }
            previous_forward = Some(forward_start);
            let backward_start = match previous_ready {
                None => bwd[0],
                Some(p) => {
                    let after = graph.rec_end_ns[p.index()];
                    bwd.iter()
                        .copied()
                        .find(|t| graph.rec_start_ns[t.index()] >= after && *t != p)
                        .unwrap_or(p)
                }
            };
            out.push(FsdpUnit {
                step,
                first_gradient: range.start as u32,
                gradients: range.len() as u32,
                bytes,
                forward_start,
                backward_start,
                ready,
                all_gather_ns: topology
                    .time_ns(Collective::AllGather, bytes as f64)
                    .round() as i64,
                reduce_scatter_ns: topology
                    .time_ns(Collective::ReduceScatter, bytes as f64)
                    .round() as i64,
            });
            before += bytes;
            previous_ready = Some(ready);
        }
    }
    out
}

/// The optimizer's kernels in `steps`, each with its cost when every rank updates only its
/// shard: `1 / world` of its recorded time (an optimizer kernel is an element-wise pass over
/// its parameters and their state, so its time follows their bytes), but never less than the
/// trace's fastest optimizer kernel, a kernel's fixed cost on this GPU. Only kernels that
/// change are listed; copies, memsets and collectives keep their cost.
pub fn shard_optimizer(
    window: &crate::Window,
    mapping: &Mapping,
    steps: &[u32],
    world: u32,
) -> Vec<(TaskId, i64)> {
    let graph = &window.graph;
    let optimizer: Vec<usize> = (0..graph.task_count())
        .filter(|&t| graph.kind[t] == TaskKind::Kernel && mapping.phase[t] == Phase::Optimizer)
        .collect();
    let Some(floor_ns) = optimizer
        .iter()
        .map(|&t| graph.dur_ns[t])
        .filter(|&d| d > 0)
        .min()
    else {
        return Vec::new();
    };
    let world = i64::from(world.max(1));
    optimizer
        .into_iter()
        .filter(|&t| steps.contains(&graph.step[t]))
        .filter_map(|t| {
            let recorded = graph.dur_ns[t];
            let sharded = (recorded / world).max(floor_ns).min(recorded);
            (sharded != recorded).then_some((TaskId(t as u32), sharded))
        })
        .collect()
}

/// Inserts the units' gathers and reduce-scatters on a new communication stream (see the
/// module documentation).
pub fn insert(
    edit: &mut EditGraph,
    units: &[FsdpUnit],
    names: &InsertNames,
) -> Result<FsdpInserted, WhatIfError> {
    let mut counts = FsdpInserted::default();
    let Some(first) = units.first() else {
        return Ok(counts);
    };
    let lane = edit.add_lane(edit.lane(first.ready))?;
    let mut by_step: BTreeMap<u32, Vec<&FsdpUnit>> = BTreeMap::new();
    for u in units {
        by_step.entry(u.step).or_default().push(u);
    }
    for units in by_step.values() {
        // Forward: units in forward order (the reverse of ready order).
        let forward: Vec<&FsdpUnit> = units.iter().rev().copied().collect();
        let mut previous: Option<TaskId> = None;
        for u in &forward {
            let gather = edit.append(
                lane,
                TaskKind::Collective,
                names.all_gather,
                u.all_gather_ns,
                u.forward_start,
            )?;
            if let Some(p) = previous
                && p != u.forward_start
            {
                edit.add_dependency(p, gather, EdgeKind::EventWait, 0)?;
            }
            gate(edit, gather, u.forward_start)?;
            counts.all_gathers += 1;
            previous = Some(u.forward_start);
        }
        // Backward: gather unit k + 1 before reduce-scattering unit k.
        let mut previous: Option<TaskId> = None;
        let mut pending_scatter: Option<&FsdpUnit> = None;
        for u in units {
            let gather = edit.append(
                lane,
                TaskKind::Collective,
                names.all_gather,
                u.all_gather_ns,
                u.backward_start,
            )?;
            if let Some(p) = previous
                && p != u.backward_start
            {
                edit.add_dependency(p, gather, EdgeKind::EventWait, 0)?;
            }
            gate(edit, gather, u.backward_start)?;
            counts.all_gathers += 1;
            previous = Some(u.backward_start);
            if let Some(s) = pending_scatter.take() {
                scatter(edit, lane, s, names)?;
                counts.reduce_scatters += 1;
            }
            pending_scatter = Some(u);
        }
        if let Some(s) = pending_scatter {
            scatter(edit, lane, s, names)?;
            counts.reduce_scatters += 1;
        }
    }
    Ok(counts)
}

/// `task` (a unit's first kernel) waits for its parameters' `gather`.
fn gate(edit: &mut EditGraph, gather: TaskId, task: TaskId) -> Result<(), WhatIfError> {
    edit.add_dependency(gather, task, EdgeKind::EventWait, 0)?;
    Ok(())
}

fn scatter(
    edit: &mut EditGraph,
    lane: u32,
    unit: &FsdpUnit,
    names: &InsertNames,
) -> Result<(), WhatIfError> {
    let task = edit.append(
        lane,
        TaskKind::Collective,
        names.reduce_scatter,
        unit.reduce_scatter_ns,
        unit.ready,
    )?;
    edit.add_dependency(unit.ready, task, EdgeKind::EventWait, 0)?;
    Ok(())
}
