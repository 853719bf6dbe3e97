//! Gist-style encoding of stashed activations (Daydream A.9): memory for time.

use stepcast_trace::NameId;

use super::super::edit::{EditGraph, Insert, InsertLaunch};
use super::super::{Context, WhatIfError};
use super::activations::{
    ActivationSource, ForwardUnit, MemoryEffect, choose, first_input_bytes, forward_units,
    lane_prev, memory_effect,
};
use crate::graph::{TaskId, TaskKind};

/// The encoded stash is this many times smaller than the activation (Gist's lossy Delayed
/// Precision Reduction to 16 bits: 32 → 16).
pub const COMPRESSION: i64 = 2;

/// Smaller tensors do not show the memory bandwidth (a kernel's fixed cost dominates).
const MIN_MEASURED_BYTES: i64 = 1 << 20;

/// The trace's own element-wise throughput, in activation bytes per ns: over the forward ops
/// all of whose kernels are element-wise, the median of (bytes of the tensor they process /
/// their kernels' total time). The tensor's bytes are the op's first input (recorded shapes),
/// else the bytes it allocated (memory events); only tensors of at least 1 MiB count. Also
/// returns the name of such a kernel (for
/// the inserted ones). `None` when the trace has no such op with known bytes.
pub fn elementwise_throughput(
    context: &Context<'_>,
    units: &[ForwardUnit],
) -> Option<(f64, NameId)> {
    let graph = &context.window.graph;
    let names = &context.trace.names;
    let mut samples: Vec<(f64, NameId)> = units
        .iter()
        .filter(|u| {
            u.tasks.iter().all(|t| {
                graph.kind[t.index()] == TaskKind::Kernel
                    && super::is_elementwise(names.get(graph.name[t.index()]))
            })
        })
        .filter_map(|u| {
            let bytes = first_input_bytes(context.trace, u.op).unwrap_or(u.bytes);
            let ns: i64 = u.tasks.iter().map(|t| graph.dur_ns[t.index()]).sum();
            (bytes >= MIN_MEASURED_BYTES && ns > 0)
                .then(|| (bytes as f64 / ns as f64, graph.name[u.tasks[0].index()]))
        })
        .collect();
    if samples.is_empty() {
        return None;
    }
    samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    Some(samples[(samples.len() - 1) / 2])
}

/// **Gist** (Jain et al., "Gist: Efficient Data Encoding for Deep Neural Network Training";
/// Daydream A.9): the activations of the front of each steady step's forward pass (the units
/// of [`super::activations::choose`], by `fraction` of the activation bytes) are stashed
/// encoded: an encode kernel after each unit's forward, a decode kernel before its backward.
///
/// Each inserted kernel is one element-wise pass over the unit's activation bytes, so it
/// costs `bytes / throughput` with the trace's own measured element-wise throughput
/// ([`elementwise_throughput`]); it is launched by a call costing the launch call of the
/// kernel it follows (encode) or precedes (decode). Memory: the stash shrinks by
/// [`COMPRESSION`] (lossy Delayed Precision Reduction; Gist's lossless ReLU/pooling encodings
/// save more on those layers), less one unit decoded at a time. Changes nothing when
/// activation bytes or the throughput are unknown.
pub fn gist(
    context: &Context<'_>,
    edit: &mut EditGraph,
    fraction: f64,
) -> Result<usize, WhatIfError> {
    let activations = forward_units(context);
    // Gist's encodings are GPU kernels: a CPU-only run is declined (`outside_domain`).
    if activations.source == ActivationSource::Unknown || activations.host_only {
        return Ok(0);
    }
    let Some((throughput, name)) = elementwise_throughput(context, &activations.units) else {
        return Ok(0);
    };
    let cost = |bytes: i64| (bytes as f64 / throughput).round() as i64;
    let mut inserted = 0;
    for unit in choose(&activations, fraction)
        .into_iter()
        .filter(|u| u.bytes > 0)
    {
        let last = *unit.tasks.last().unwrap_or(&unit.tasks[0]);
        let Some(backward) = unit
            .backward
            .filter(|&b| edit.is_alive(b) && edit.is_alive(last))
        else {
            continue;
        };
        let Some(before_backward) = lane_prev(edit, backward) else {
            continue;
        };
        let launch_after = |edit: &EditGraph, device: TaskId, host: Option<TaskId>| {
            edit.launcher(device)
                .zip(host)
                .map(|(call, after)| InsertLaunch {
                    name: edit.name(call),
                    after,
                    dur_ns: edit.dur_ns(call),
                })
        };
        let encode_launch = launch_after(edit, last, edit.launcher(last));
        edit.insert(&Insert {
            kind: TaskKind::Kernel,
            name,
            dur_ns: cost(unit.bytes),
            after: last,
            launch: encode_launch,
        })?;
        // The decode call follows the call that launches the backward task (its step); not
        // after a blocking one, which would wait for the decode.
        let host = edit.launcher(backward);
        if host.is_some_and(|call| edit.is_blocking(call)) {
            continue;
        }
        let decode_launch = launch_after(edit, backward, host);
        edit.insert(&Insert {
            kind: TaskKind::Kernel,
            name,
            dur_ns: cost(unit.bytes),
            after: before_backward,
            launch: decode_launch,
        })?;
        inserted += 2;
    }
    Ok(inserted)
}

/// The memory [`gist`] saves: the encoded units' activations shrink by [`COMPRESSION`], less
/// the largest of them decoded at full size during its backward.
pub fn gist_memory(context: &Context<'_>, fraction: f64) -> MemoryEffect {
    let activations = forward_units(context);
    let known = elementwise_throughput(context, &activations.units).is_some();
    let chosen: Vec<&ForwardUnit> = choose(&activations, fraction)
        .into_iter()
        .filter(|u| known && u.bytes > 0)
        .collect();
    memory_effect(context, &activations, &chosen, |_, chosen| {
        let c: i64 = chosen.iter().sum();
        c - c / COMPRESSION - chosen.iter().copied().max().unwrap_or(0)
    })
}
