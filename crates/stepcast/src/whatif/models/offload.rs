//! vDNN-style offloading of activations to host memory (Daydream A.8): memory for time.

use stepcast_trace::{EventKind, NameId};

use super::super::edit::EditGraph;
use super::super::{Context, WhatIfError};
use super::activations::{ForwardUnit, MemoryEffect, choose, forward_units, memory_effect};
use super::amp::compute_major;
use super::step_peak::Trade;
use crate::graph::{EdgeKind, TaskId, TaskKind};

/// Copies smaller than this do not show a link's bandwidth (their fixed cost dominates).
const MIN_MEASURED_COPY_BYTES: u64 = 1 << 20;

/// Host↔device copy bandwidth in bytes per ns (= GB/s): the fastest recorded host↔device copy
/// of at least 1 MiB in the trace, else the practical pinned-copy rate of the GPU's PCIe
/// generation by compute capability: PCIe 3 x16 (< 8.0) 12 GB/s, PCIe 4 x16 (8.x) 24 GB/s,
/// PCIe 5 x16 (≥ 9.0) 48 GB/s (about 75 % of the 16/32/64 GB/s link rates, NVIDIA's
/// bandwidthTest figures). Returns the rate and whether it was measured.
pub fn host_copy_bandwidth(context: &Context<'_>) -> (f64, bool) {
    let trace = context.trace;
    let measured = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Memcpy && e.dur_ns > 0)
        .filter(|e| e.bytes.is_some_and(|b| b.get() >= MIN_MEASURED_COPY_BYTES))
        .filter(|e| {
            let name = trace.names.get(e.name);
            name.contains("HtoD") || name.contains("DtoH")
        })
        .map(|e| e.bytes.map_or(0, u64::from) as f64 / e.dur_ns as f64)
        .fold(0.0f64, f64::max);
    if measured > 0.0 {
        return (measured, true);
    }
    let vendor = match compute_major(context) {
        Some(m) if m >= 9 => 48.0,
        Some(m) if m >= 8 => 24.0,
        _ => 12.0,
    };
    (vendor, false)
}

/// The trace's name for a copy in one direction, else any copy's name, else `fallback`.
fn copy_name(context: &Context<'_>, direction: &str, fallback: NameId) -> NameId {
    let trace = context.trace;
    let mut any = None;
    for e in trace.events.iter().filter(|e| e.kind == EventKind::Memcpy) {
        if trace.names.get(e.name).contains(direction) {
            return e.name;
        }
        any.get_or_insert(e.name);
    }
    any.unwrap_or(fallback)
}

/// **vDNN offloading** (Rhu et al., "vDNN: Virtualized Deep Neural Networks"; Daydream A.8):
/// the activations of the front of each steady step's forward pass (the units of
/// [`super::activations::choose`], by `fraction` of the activation bytes) are copied to host
/// memory after their op and prefetched back before their backward, on a new copy stream.
///
/// Per unit, in order: a device→host copy of its activation bytes after its last forward
/// kernel; the forward of the unit two ahead waits for that copy (vDNN frees the buffer at the
/// layer boundary, so an offload may overlap one layer of compute); a host→device copy after
/// all of the step's offloads, in backward order, that starts when the backward of the unit
/// after it begins (vDNN's prefetch of the next layer needed) and that the unit's own backward
/// waits for. Copies overlap compute when the bandwidth allows; otherwise the compute waits.
///
/// Numbers: bytes from [`super::activations::ActivationSource`]; bandwidth from
/// [`host_copy_bandwidth`]. Not modeled: the copy calls' CPU cost (one call per layer) and
/// pinned-buffer allocation. Changes nothing when activation bytes are unknown.
pub fn offload(
    context: &Context<'_>,
    edit: &mut EditGraph,
    fraction: f64,
) -> Result<usize, WhatIfError> {
    let activations = forward_units(context);
    if activations.host_only {
        // Activations of a CPU-only run are in host memory already (the model declines it).
        return Ok(0);
    }
    let chosen: Vec<&ForwardUnit> = choose(&activations, fraction)
        .into_iter()
        .filter(|u| u.bytes > 0)
        .filter(|u| u.tasks.iter().all(|&t| edit.is_alive(t)))
        .filter(|u| u.backward.is_some_and(|b| edit.is_alive(b)))
        .collect();
    let Some(first) = chosen.first() else {
        return Ok(0);
    };
    let (bandwidth, _) = host_copy_bandwidth(context);
    let lane = edit.add_lane(edit.lane(first.tasks[0]))?;
    let to_host = copy_name(context, "DtoH", edit.name(first.tasks[0]));
    let to_device = copy_name(context, "HtoD", edit.name(first.tasks[0]));
    let cost = |bytes: i64| (bytes as f64 / bandwidth).round() as i64;
    let graph = &context.window.graph;
    // Every copy of every step, planned first and queued on the copy stream in the recorded
    // order of what it follows: every edge below goes forward in recorded time, and so does the
    // stream's order, so no cycle can form even when a step interleaves several forward and
    // backward passes (a later pass's offloads queue after an earlier pass's prefetches).
    let mut planned: Vec<PlannedCopy> = Vec::new();
    let mut start = 0;
    while start < chosen.len() {
        let step = chosen[start].step;
        let end = start + chosen[start..].partition_point(|u| u.step == step);
        let units = &chosen[start..end];
        for (i, unit) in units.iter().enumerate() {
            let last = *unit.tasks.last().unwrap_or(&unit.tasks[0]);
            // (Only forward in recorded time.)
            let released = units.get(i + 2).map(|u| u.tasks[0]).filter(|later| {
                graph.rec_start_ns[later.index()] >= graph.rec_end_ns[last.index()]
            });
            planned.push(PlannedCopy {
                at_ns: graph.rec_end_ns[last.index()],
                to_host: true,
                bytes: unit.bytes,
                like: last,
                after: Some(last),
                before: released,
            });
        }
        // Prefetches in the order the backward pass needs them (the recorded start of each
        // unit's backward), each starting when the previous one's backward begins.
        let mut order: Vec<usize> = (0..units.len()).collect();
        let anchor = |i: usize| units[i].backward.unwrap_or(units[i].tasks[0]);
        order.sort_by_key(|&i| (graph.rec_start_ns[anchor(i).index()], anchor(i).0));
        // (Ops whose backward begins with the same task share it: the one before both.)
        let (mut previous, mut current) = (None, None);
        for i in order {
            let backward = anchor(i);
            if current != Some(backward) {
                previous = current;
                current = Some(backward);
            }
            let at = previous.unwrap_or(backward);
            planned.push(PlannedCopy {
                at_ns: graph.rec_start_ns[at.index()],
                to_host: false,
                bytes: units[i].bytes,
                like: backward,
                after: previous,
                before: Some(backward),
            });
        }
        start = end;
    }
    // Stable: among copies at the same moment, the plan's order (offloads, then prefetches).
    planned.sort_by_key(|c| c.at_ns);
    for c in &planned {
        let name = if c.to_host { to_host } else { to_device };
        let copy = edit.append(lane, TaskKind::Memcpy, name, cost(c.bytes), c.like)?;
        if let Some(after) = c.after {
            edit.add_dependency(after, copy, EdgeKind::EventWait, 0)?;
        }
        if let Some(before) = c.before {
            edit.add_dependency(copy, before, EdgeKind::EventWait, 0)?;
        }
    }
    Ok(planned.len())
}

/// One copy [`offload`] queues on its stream.
struct PlannedCopy {
    /// Recorded time of what it follows: its place in the stream's queue.
    at_ns: i64,
    to_host: bool,
    bytes: i64,
    /// The input task whose step, phase and layer it takes.
    like: TaskId,
    /// It waits for this task.
    after: Option<TaskId>,
    /// This task waits for it.
    before: Option<TaskId>,
}

/// The memory [`offload`] saves: the offloaded units' activations, less the two largest (the
/// layer in use and the one being prefetched stay on the device).
pub fn offload_memory(context: &Context<'_>, fraction: f64) -> MemoryEffect {
    let activations = forward_units(context);
    let chosen: Vec<&ForwardUnit> = choose(&activations, fraction)
        .into_iter()
        .filter(|u| u.bytes > 0)
        .collect();
    let trade = Trade::Offload {
        units: chosen.clone(),
    };
    memory_effect(context, &activations, &chosen, &trade, |_, chosen| {
        let mut sizes = chosen.to_vec();
        sizes.sort_unstable_by(|a, b| b.cmp(a));
        sizes.iter().sum::<i64>() - sizes.iter().take(2).sum::<i64>()
    })
}
