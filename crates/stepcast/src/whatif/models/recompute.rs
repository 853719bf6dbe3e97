//! Activation recomputation (gradient checkpointing; Chen et al.): memory for time.

use super::super::edit::{EditGraph, Insert, InsertHost, InsertLaunch, Selection};
use super::super::{Context, WhatIfError};
use super::activations::{
    Activations, MemoryEffect, choose, forward_units, lane_prev, memory_effect,
};

/// **Activation recomputation** (`torch.utils.checkpoint`; Chen et al., "Training Deep Nets
/// with Sublinear Memory Cost"): the front of each steady step's forward pass — its outermost
/// ops, in order, while their activation bytes stay within `fraction` of the step's — is one
/// checkpointed segment: its activations are dropped after the forward pass and recomputed
/// when the backward pass reaches them.
///
/// Time: every kernel (and memset) of a recomputed op is inserted again, with its recorded
/// duration, on the stream of that op's backward, right before its first backward task (found
/// through the autograd sequence numbers of the trace); each is launched by a call costing its
/// recorded launch call, with the recorded host time after that call (the eager dispatch of
/// the op), except after the op's last launch. The calls are issued right after the call
/// that launches that backward task (the task still waits for them on its stream). So the slowdown is at most those kernels' and
/// calls' recorded time. Ops whose backward the trace does not link are not recomputed.
///
/// On a trace without device work (a CPU-only run) a unit is its op's host task: each
/// recomputed op is inserted again before its first backward op on that op's thread, with its
/// recorded duration and the recorded host time after it (the Python forward between ops,
/// which the recomputation runs again too). The slowdown is at most those ops' and gaps' time.
///
/// Memory ([`recompute_memory`]): the segment's activations are gone from the forward pass
/// but rematerialized at once when its backward starts, after the rest of the network's
/// activations were freed: the activation peak goes from `T` to `max(T − C, C)` (`T` all
/// activations, `C` the segment's). Bytes: see [`super::activations::ActivationSource`].
pub fn recompute(
    context: &Context<'_>,
    edit: &mut EditGraph,
    fraction: f64,
) -> Result<usize, WhatIfError> {
    let graph = &context.window.graph;
    let activations = forward_units(context);
    if activations.host_only {
        return recompute_on_host(context, edit, &activations, fraction);
    }
    let mut inserted = 0;
    for unit in choose(&activations, fraction) {
        let Some(backward) = unit.backward.filter(|&b| edit.is_alive(b)) else {
            continue;
        };
        let Some(mut device_after) = lane_prev(edit, backward) else {
            continue;
        };
        // The recomputing calls follow the call that launches the backward task (so they
        // belong to its step); a blocking one would wait for what they launch: skipped.
        let mut host_after = edit.launcher(backward);
        if host_after.is_some_and(|call| edit.is_blocking(call)) {
            continue;
        }
        for (i, &task) in unit.tasks.iter().enumerate() {
            let launch = edit.launcher(task).zip(host_after).map(|(call, after)| {
                let last = i + 1 == unit.tasks.len();
                (
                    InsertLaunch {
                        name: edit.name(call),
                        after,
                        dur_ns: edit.dur_ns(call),
                    },
                    if last { 0 } else { edit.gap_ns(call) },
                )
            });
            let gap = launch.as_ref().map_or(0, |l| l.1);
            device_after = edit.insert(&Insert {
                kind: graph.kind[task.index()],
                name: graph.name[task.index()],
                dur_ns: if edit.is_alive(task) {
                    edit.dur_ns(task)
                } else {
                    graph.dur_ns[task.index()]
                },
                after: device_after,
                launch: launch.map(|l| l.0),
            })?;
            if let Some(call) = edit.launcher(device_after) {
                edit.set_gap(&Selection::new(vec![call]), gap)?;
                host_after = Some(call);
            }
            inserted += 1;
        }
    }
    Ok(inserted)
}

/// [`recompute`] of a trace without device work: each chosen op's host task again, before
/// its backward on its thread.
fn recompute_on_host(
    context: &Context<'_>,
    edit: &mut EditGraph,
    activations: &Activations,
    fraction: f64,
) -> Result<usize, WhatIfError> {
    let graph = &context.window.graph;
    let mut inserted = 0;
    for unit in choose(activations, fraction) {
        let Some(backward) = unit.backward.filter(|&b| edit.is_alive(b)) else {
            continue;
        };
        let Some(mut after) = lane_prev(edit, backward) else {
            continue;
        };
        for &task in &unit.tasks {
            let t = task.index();
            let (dur_ns, gap_ns) = if edit.is_alive(task) {
                (edit.dur_ns(task), edit.gap_ns(task))
            } else {
                (graph.dur_ns[t], graph.gap_ns[t])
            };
            after = edit.insert_host(&InsertHost {
                kind: graph.kind[t],
                name: graph.name[t],
                dur_ns,
                gap_ns,
                after,
            })?;
            inserted += 1;
        }
    }
    Ok(inserted)
}

/// The memory [`recompute`] saves (see there).
pub fn recompute_memory(context: &Context<'_>, fraction: f64) -> MemoryEffect {
    let activations = forward_units(context);
    let chosen = choose(&activations, fraction);
    memory_effect(context, &activations, &chosen, |total, chosen| {
        let c: i64 = chosen.iter().sum();
        total - (total - c).max(c)
    })
}
