//! Activation recomputation (gradient checkpointing; Chen et al.): memory for time.

use super::super::edit::{EditGraph, Insert, InsertHost, InsertLaunch, Selection};
use super::super::{Context, WhatIfError};
use super::DEFAULT_FRACTION;
use super::activations::{
    Activations, Blocks, ForwardUnit, MemoryEffect, PEAK_CAVEAT, block_spans, choose,
    choose_blocks, forward_units, lane_prev, memory_effect,
};
use super::step_peak::Trade;

/// **Activation recomputation** (`torch.utils.checkpoint`; Chen et al., "Training Deep Nets
/// with Sublinear Memory Cost"). What is recomputed:
///
/// - By default (`fraction` `None`), the forward pass's **repeated blocks**, each checkpointed
///   on its own, as the function is usually applied (a transformer's layers, not its
///   embeddings, head or loss): [`choose_blocks`], where they are at least half the forward's
///   outermost ops; else the front half as below, and `caveats` says which.
/// - With `fraction`, the front of each steady step's forward pass — its outermost ops, in
///   order, while their activation bytes stay within `fraction` of the step's — as one
///   checkpointed segment.
///
/// Their activations are dropped after the forward pass and recomputed when the backward
/// pass reaches them.
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
/// Memory ([`recompute_memory`]): a segment's activations are gone from the forward pass
/// but rematerialized at once when its backward starts, after the rest of the network's
/// activations were freed: the activation peak goes from `T` to `max(T − C, C)` (`T` all
/// activations, `C` the segment's); of `n` blocks checkpointed one by one, one block is
/// rematerialized at a time: `T − C + C / n` (their inputs, kept, are not counted). Bytes:
/// see [`super::activations::ActivationSource`].
pub fn recompute(
    context: &Context<'_>,
    edit: &mut EditGraph,
    fraction: Option<f64>,
) -> Result<usize, WhatIfError> {
    let graph = &context.window.graph;
    let activations = forward_units(context);
    let (chosen, _) = selected(context, &activations, fraction);
    if activations.host_only {
        return recompute_on_host(context, edit, &chosen);
    }
    let mut inserted = 0;
    for unit in chosen {
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
    chosen: &[&ForwardUnit],
) -> Result<usize, WhatIfError> {
    let graph = &context.window.graph;
    let mut inserted = 0;
    for unit in chosen {
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

/// The units [`recompute`] acts on with `fraction`, and the blocks they are where it found
/// them (by default).
fn selected<'a>(
    context: &Context<'_>,
    activations: &'a Activations,
    fraction: Option<f64>,
) -> (Vec<&'a ForwardUnit>, Option<Blocks>) {
    match fraction {
        Some(fraction) => (choose(activations, fraction), None),
        None => match choose_blocks(context, activations) {
            Some((chosen, blocks)) => (chosen, Some(blocks)),
            None => (choose(activations, DEFAULT_FRACTION), None),
        },
    }
}

/// The memory [`recompute`] saves (see there).
pub fn recompute_memory(context: &Context<'_>, fraction: Option<f64>) -> MemoryEffect {
    let activations = forward_units(context);
    let (chosen, blocks) = selected(context, &activations, fraction);
    let trade = Trade::Recompute {
        segments: segments(context, &activations, &chosen, blocks),
    };
    memory_effect(context, &activations, &chosen, &trade, |total, chosen| {
        let c: i64 = chosen.iter().sum();
        match blocks {
            Some(blocks) => c - c / blocks.count.max(1) as i64,
            None => total - (total - c).max(c),
        }
    })
}

/// The checkpointed calls [`recompute`] stands for, each as its units in recorded order: one
/// per repeated block, or one per steady step (its chosen front).
fn segments<'a>(
    context: &Context<'_>,
    activations: &'a Activations,
    chosen: &[&'a ForwardUnit],
    blocks: Option<Blocks>,
) -> Vec<Vec<&'a ForwardUnit>> {
    if blocks.is_some()
        && let Some((spans, _)) = block_spans(context, activations)
    {
        return spans.into_iter().map(|s| s.iter().collect()).collect();
    }
    let mut segments: Vec<Vec<&ForwardUnit>> = Vec::new();
    for &unit in chosen {
        match segments.last_mut() {
            Some(segment) if segment[0].step == unit.step => segment.push(unit),
            _ => segments.push(vec![unit]),
        }
    }
    segments
}

/// What [`recompute`] acts on, on this trace, by default: the blocks it found, or that it
/// found none and recomputes the front half; nothing where `fraction` is given (the user
/// chose).
pub fn caveats(context: &Context<'_>, fraction: Option<f64>) -> Vec<String> {
    let mut caveats = vec![PEAK_CAVEAT.to_string()];
    if fraction.is_some() {
        return caveats;
    }
    let activations = forward_units(context);
    // The first steady step's outermost forward ops, which the blocks are counted among.
    let step = activations.units.first().map(|u| u.step);
    let ops = activations
        .units
        .iter()
        .filter(|u| Some(u.step) == step)
        .count();
    caveats.push(match choose_blocks(context, &activations) {
        Some((_, blocks)) => {
            format!(
                "recomputes the forward pass's {} repeated blocks of {} ops each (the longest \
                 run of one sequence of ops; where a block starts within it, the trace does not \
                 say), each checkpointed on its own as `torch.utils.checkpoint` is usually \
                 applied; the other {} of its {ops} outermost ops (embeddings, head, loss) keep \
                 their activations: give --fraction F to recompute the front F of the forward \
                 pass's activations as one segment instead",
                blocks.count,
                blocks.ops,
                ops.saturating_sub(blocks.count * blocks.ops),
            )
        }
        None => format!(
            "no sequence of ops repeats in a row over half the forward pass (no layers to \
             checkpoint one by one): recomputes its front {:.0} % of the activations as one \
             segment (--fraction)",
            DEFAULT_FRACTION * 100.0
        ),
    });
    caveats
}
