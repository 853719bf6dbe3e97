//! Gist-style encoding of stashed activations (Daydream A.9): memory for time.

use stepcast_trace::NameId;

use super::super::edit::{EditGraph, Insert, InsertHost, InsertLaunch};
use super::super::{Context, WhatIfError};
use super::activations::{
    ActivationSource, Activations, ForwardUnit, MemoryEffect, PEAK_CAVEAT, choose,
    first_input_bytes, forward_units, lane_prev, memory_effect,
};
use super::step_peak::Trade;
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
    let names = &context.trace.names;
    let graph = &context.window.graph;
    median_throughput(context, units, |u| {
        u.tasks.iter().all(|t| {
            graph.kind[t.index()] == TaskKind::Kernel
                && super::is_elementwise(names.get(graph.name[t.index()]))
        })
    })
}

/// [`elementwise_throughput`] of a trace without device work: over the forward's CPU ops of
/// one plain element-wise pass (`aten::relu`, `aten::add`: [`super::is_elementwise_op`]),
/// their first input's bytes over their host time (the op's dispatch included, as an encoding
/// op's would be).
fn host_elementwise_throughput(
    context: &Context<'_>,
    units: &[ForwardUnit],
) -> Option<(f64, NameId)> {
    let trace = context.trace;
    median_throughput(context, units, |u| {
        super::is_elementwise_op(trace.names.get(trace.events[u.op.index()].name))
    })
}

/// The throughput an encoding pass runs at on this trace: on its kernels, or on a CPU-only
/// run on its host ops.
fn encoding_throughput(context: &Context<'_>, activations: &Activations) -> Option<(f64, NameId)> {
    if activations.host_only {
        host_elementwise_throughput(context, &activations.units)
    } else {
        elementwise_throughput(context, &activations.units)
    }
}

/// The median (bytes / ns) over the units `element_wise` accepts, with a task name of one.
fn median_throughput(
    context: &Context<'_>,
    units: &[ForwardUnit],
    element_wise: impl Fn(&ForwardUnit) -> bool,
) -> Option<(f64, NameId)> {
    let graph = &context.window.graph;
    let mut samples: Vec<(f64, NameId)> = units
        .iter()
        .filter(|u| element_wise(u))
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
/// save more on those layers), less one unit decoded at a time. Changes nothing, and is
/// declined (`unpriced`), when activation bytes or the throughput are unknown.
///
/// On a trace without device work (a CPU-only run, where PyTorch does the same with
/// `torch.autograd.graph.saved_tensors_hooks`), each pass is a host task on the op's thread:
/// the encode right after the unit's op, the decode right before its first backward op, each
/// costing `bytes /` `host_elementwise_throughput`.
pub fn gist(
    context: &Context<'_>,
    edit: &mut EditGraph,
    fraction: f64,
) -> Result<usize, WhatIfError> {
    let activations = forward_units(context);
    if activations.source == ActivationSource::Unknown {
        return Ok(0);
    }
    let Some((throughput, name)) = encoding_throughput(context, &activations) else {
        return Ok(0);
    };
    let cost = |bytes: i64| (bytes as f64 / throughput).round() as i64;
    if activations.host_only {
        return gist_on_host(edit, &activations, fraction, name, cost);
    }
    let mut inserted = 0;
    for unit in choose(&activations, fraction)
        .into_iter()
        .filter(|u| u.bytes > 0)
    {
        let Some(Placement {
            last,
            backward,
            before_backward,
        }) = placement(edit, unit)
        else {
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
        // The decode call follows the call that launches the backward task (its step); not
        // after a blocking one, which would wait for the decode: such a unit is left as it
        // is, neither encoded nor decoded.
        let host = edit.launcher(backward);
        if host.is_some_and(|call| edit.is_blocking(call)) {
            continue;
        }
        let encode_launch = launch_after(edit, last, edit.launcher(last));
        edit.insert(&Insert {
            kind: TaskKind::Kernel,
            name,
            dur_ns: cost(unit.bytes),
            after: last,
            launch: encode_launch,
        })?;
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

/// Why [`gist`] cannot price this trace's encoding (for `outside_domain`), if it cannot: the
/// activations' bytes are unknown (no shapes, no memory events), or no element-wise op of at
/// least 1 MiB gives the throughput an encoding pass would run at.
pub fn unpriced(context: &Context<'_>) -> Option<String> {
    let activations = forward_units(context);
    if activations.source == ActivationSource::Unknown {
        return Some(
            "gist needs the activations' bytes (record_shapes=True or profile_memory=True): \
             the trace records neither"
                .to_string(),
        );
    }
    let pass = if activations.host_only {
        "a ReLU, clamp or arithmetic CPU op"
    } else {
        "element-wise kernels only"
    };
    encoding_throughput(context, &activations)
        .is_none()
        .then(|| {
            format!(
                "gist prices each encoding as one element-wise pass at this trace's own \
             element-wise throughput, and no forward op of {pass} on a tensor of at least \
             1 MiB records it (on smaller ones the time is the op's fixed cost)"
            )
        })
}

/// What a [`gist`] prediction rests on, one sentence each: the throughput each pass is
/// priced at and what the model leaves out.
pub fn caveats(context: &Context<'_>) -> Vec<String> {
    let activations = forward_units(context);
    let Some((bytes_per_ns, name)) = encoding_throughput(context, &activations) else {
        return Vec::new();
    };
    let measured_on = if activations.host_only {
        "forward ops that compute next to nothing per element (ReLU, clamps, arithmetic), their \
         dispatch included"
    } else {
        "forward ops of element-wise kernels only"
    };
    let mut caveats = vec![format!(
        "each encode and each decode is one element-wise pass over the op's activation bytes \
         at {bytes_per_ns:.2} GB/s, the median of this trace's {measured_on}, on tensors of at \
         least 1 MiB (as `{}`); the encoding is Gist's lossy 16-bit Delayed Precision \
         Reduction: its lossless ReLU and pooling encodings, which save more on those layers, \
         are not modelled",
        context.trace.names.get(name),
    )];
    caveats.push(PEAK_CAVEAT.to_string());
    if activations.host_only {
        caveats.push(
            "on a CPU-only run the passes are host ops on the training thread, as PyTorch's \
             `torch.autograd.graph.saved_tensors_hooks` runs them; the hooks' own Python calls \
             (one per saved tensor, each way) are not counted"
                .to_string(),
        );
    }
    caveats
}

/// Where a unit's two passes go.
struct Placement {
    /// Its last forward task: the encode follows it.
    last: TaskId,
    /// Its first backward task.
    backward: TaskId,
    /// The task before `backward` on its lane: the decode follows it.
    before_backward: TaskId,
}

/// The [`Placement`] of `unit`'s passes in `edit` as it stands; `None` when its backward is
/// not linked, either end is gone, or nothing precedes its backward on its lane.
fn placement(edit: &EditGraph, unit: &ForwardUnit) -> Option<Placement> {
    let last = *unit.tasks.last().unwrap_or(&unit.tasks[0]);
    let backward = unit
        .backward
        .filter(|&b| edit.is_alive(b) && edit.is_alive(last))?;
    let before_backward = lane_prev(edit, backward)?;
    Some(Placement {
        last,
        backward,
        before_backward,
    })
}

/// [`gist`] of a trace without device work: an encode host task after each chosen op, a
/// decode before its first backward op, on their threads.
fn gist_on_host(
    edit: &mut EditGraph,
    activations: &Activations,
    fraction: f64,
    name: NameId,
    cost: impl Fn(i64) -> i64,
) -> Result<usize, WhatIfError> {
    let mut inserted = 0;
    for unit in choose(activations, fraction)
        .into_iter()
        .filter(|u| u.bytes > 0)
    {
        let Some(Placement {
            last,
            before_backward,
            ..
        }) = placement(edit, unit)
        else {
            continue;
        };
        for after in [last, before_backward] {
            edit.insert_host(&InsertHost {
                kind: TaskKind::CpuOp,
                name,
                dur_ns: cost(unit.bytes),
                gap_ns: 0,
                after,
            })?;
            inserted += 1;
        }
    }
    Ok(inserted)
}

/// The memory [`gist`] saves: the encoded units' activations shrink by [`COMPRESSION`], less
/// the largest of them decoded at full size during its backward.
pub fn gist_memory(context: &Context<'_>, fraction: f64) -> MemoryEffect {
    let activations = forward_units(context);
    // What is stashed does not depend on how fast it is encoded.
    let chosen: Vec<&ForwardUnit> = choose(&activations, fraction)
        .into_iter()
        .filter(|u| u.bytes > 0)
        .collect();
    let trade = Trade::Stash {
        units: chosen.clone(),
        compression: COMPRESSION,
    };
    memory_effect(context, &activations, &chosen, &trade, |_, chosen| {
        let c: i64 = chosen.iter().sum();
        c - c / COMPRESSION - chosen.iter().copied().max().unwrap_or(0)
    })
}
