//! A Horovod timeline joined with the framework's trace of the same process (rank 0, which
//! writes the timeline), so that one graph holds dPRO's per-tensor communication edges:
//! gradient produced → negotiate → fusion-buffer copy → all-reduce → copy out → consumer.
//!
//! Clocks: the timeline gives its start in microseconds since the epoch
//! (`start_time_since_epoch_in_micros`), and the PyTorch profiler writes epoch microseconds
//! too, so the two are placed on one clock by their absolute times.
//!
//! Which op produced a tensor: Horovod's PyTorch optimizer enqueues a gradient from a hook on
//! its parameter's gradient accumulator, so the producer is the `AccumulateGrad` op whose
//! recorded input has the tensor's shape and type (`record_shapes=True`), the latest one
//! ended before the tensor's negotiation ends and not already taken by another tensor
//! (parameters of one shape are told apart by time). Not before it begins: rank 0's timeline
//! opens a negotiation at the first rank's request, which may be another rank's, and closes
//! it when the last rank is ready; this rank's gradient gates its end. The consumer is the first op after the
//! all-reduce's last stage that reads a tensor of that shape and type (the optimizer's update),
//! other than a gradient accumulation. A collective is attached when every tensor it carries
//! has its producer; [`Join::unmatched_collectives`] counts the others.

use crate::model::{
    CommTensor, Event, EventId, Lane, LaneId, LaneKind, Link, LinkKind, OpInput, Trace,
};

/// What the join found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Join {
    pub collectives: usize,
    /// Collectives with a tensor whose producer was not found.
    pub unmatched_collectives: usize,
    pub producers: usize,
    pub consumers: usize,
}

/// Accepted slack between an op's end and the negotiation it gates (clock granularity: the
/// timeline writes whole microseconds).
const TOLERANCE_NS: i64 = 2_000;

/// `framework` with `horovod`'s lanes, events and links added and joined to its ops.
pub fn join(framework: Trace, horovod: Trace) -> (Trace, Join) {
    let mut merged = merge(framework, horovod, "Horovod timeline");
    let report = link(&mut merged);
    merged.diagnostics.note(format!(
        "joined with a Horovod timeline: {} collectives, {} attached to the gradients they carry, {} producer and {} consumer edges",
        report.collectives,
        report.collectives - report.unmatched_collectives,
        report.producers,
        report.consumers
    ));
    (merged, report)
}

/// Both traces' events on one clock and one lane table (host threads first, the timeline's
/// lanes after the framework's threads, device streams last), side tables following. The
/// timeline's lanes get negative process ids (`-1 - pid`), out of the way of real ones; its
/// skipped records are counted under their reason followed by `(label)`.
pub(crate) fn merge(mut framework: Trace, horovod: Trace, label: &str) -> Trace {
    let origin_ns = framework.origin_ns.min(horovod.origin_ns);
    let shift_framework = framework.origin_ns - origin_ns;
    let shift_horovod = horovod.origin_ns - origin_ns;
    // Lanes: the framework's host threads, the timeline's, then the framework's streams.
    let mut lanes: Vec<Lane> = Vec::new();
    let mut framework_lane = vec![LaneId(0); framework.lanes.len()];
    let mut horovod_lane = vec![LaneId(0); horovod.lanes.len()];
    for (i, lane) in framework.lanes.iter().enumerate() {
        if lane.kind == LaneKind::CpuThread {
            framework_lane[i] = LaneId(lanes.len() as u32);
            lanes.push(lane.clone());
        }
    }
    for (i, lane) in horovod.lanes.iter().enumerate() {
        horovod_lane[i] = LaneId(lanes.len() as u32);
        let mut lane = lane.clone();
        // Out of the way of real process ids.
        lane.pid = -1 - lane.pid;
        lanes.push(lane);
    }
    for (i, lane) in framework.lanes.iter().enumerate() {
        if lane.kind != LaneKind::CpuThread {
            framework_lane[i] = LaneId(lanes.len() as u32);
            lanes.push(lane.clone());
        }
    }
    let mut names = std::mem::take(&mut framework.names);
    // (event, source, old id) in the merged order.
    let mut rows: Vec<(Event, bool, u32)> = Vec::new();
    for (i, e) in framework.events.iter().enumerate() {
        let mut e = e.clone();
        e.lane = framework_lane[e.lane.index()];
        e.start_ns += shift_framework;
        rows.push((e, false, i as u32));
    }
    for (i, e) in horovod.events.iter().enumerate() {
        let mut e = e.clone();
        e.lane = horovod_lane[e.lane.index()];
        e.name = names.intern(horovod.name(e.name));
        e.start_ns += shift_horovod;
        rows.push((e, true, i as u32));
    }
    rows.sort_by_key(|(e, source, old)| {
        (
            e.lane,
            e.start_ns,
            std::cmp::Reverse(e.dur_ns),
            *source,
            *old,
        )
    });
    let mut new_framework = vec![EventId(0); framework.events.len()];
    let mut new_horovod = vec![EventId(0); horovod.events.len()];
    for (new, (_, source, old)) in rows.iter().enumerate() {
        let slot = if *source {
            &mut new_horovod[*old as usize]
        } else {
            &mut new_framework[*old as usize]
        };
        *slot = EventId(new as u32);
    }
    let events: Vec<Event> = rows.into_iter().map(|(e, _, _)| e).collect();
    let follow = |map: &[EventId], id: EventId| map[id.index()];
    let mut comm_args: Vec<_> = framework
        .comm_args
        .drain(..)
        .map(|(e, a)| (follow(&new_framework, e), a))
        .chain(
            horovod
                .comm_args
                .iter()
                .cloned()
                .map(|(e, a)| (follow(&new_horovod, e), a)),
        )
        .collect();
    comm_args.sort_by_key(|(e, _)| *e);
    let op_inputs = remap_framework(std::mem::take(&mut framework.op_inputs), &new_framework);
    let record_function_ids = remap_framework(
        std::mem::take(&mut framework.record_function_ids),
        &new_framework,
    );
    let pipeline_transfers = remap_framework(
        std::mem::take(&mut framework.pipeline_transfers),
        &new_framework,
    );
    let kernel_fill = remap_framework(std::mem::take(&mut framework.kernel_fill), &new_framework);
    let mut comm_tensors: Vec<_> = framework
        .comm_tensors
        .drain(..)
        .map(|(e, a)| (follow(&new_framework, e), a))
        .chain(
            horovod
                .comm_tensors
                .iter()
                .cloned()
                .map(|(e, a)| (follow(&new_horovod, e), a)),
        )
        .collect();
    comm_tensors.sort_by_key(|(e, _)| *e);
    let links: Vec<Link> = framework
        .links
        .iter()
        .map(|l| Link {
            from: follow(&new_framework, l.from),
            to: follow(&new_framework, l.to),
            kind: l.kind,
        })
        .chain(horovod.links.iter().map(|l| Link {
            from: follow(&new_horovod, l.from),
            to: follow(&new_horovod, l.to),
            kind: l.kind,
        }))
        .collect();
    for step in &mut framework.steps {
        step.lane = framework_lane[step.lane.index()];
        step.start_ns += shift_framework;
    }
    for memory in &mut framework.memory {
        memory.lane = memory.lane.map(|l| framework_lane[l.index()]);
        memory.time_ns += shift_framework;
    }
    for sync in &mut framework.syncs {
        sync.start_ns += shift_framework;
    }
    let mut diagnostics = framework.diagnostics;
    for (reason, count) in &horovod.diagnostics.skipped {
        diagnostics.skip_n(format!("{reason} ({label})"), *count);
    }
    for note in &horovod.diagnostics.notes {
        diagnostics.note(note.clone());
    }
    Trace {
        origin_ns,
        file_time_base_ns: framework.file_time_base_ns,
        names,
        lanes,
        events,
        comm_args,
        op_inputs,
        record_function_ids,
        pipeline_transfers,
        kernel_fill,
        comm_tensors,
        links,
        records: framework.records + horovod.records,
        input_bytes: framework.input_bytes + horovod.input_bytes,
        diagnostics,
        ..framework
    }
}

/// Adds the producer and consumer links of every tensor the timeline moves.
fn link(trace: &mut Trace) -> Join {
    let mut report = Join::default();
    let is_horovod = |trace: &Trace, e: &Event| trace.lane(e.lane).pid < 0;
    // Ops that may produce or consume: framework events with recorded inputs.
    let accumulate: Vec<EventId> = trace
        .op_inputs
        .iter()
        .map(|(e, _)| *e)
        .filter(|e| {
            trace
                .name(trace.events[e.index()].name)
                .contains("AccumulateGrad")
        })
        .collect();
    let mut taken = vec![false; accumulate.len()];
    // Negotiations in start order, each with its tensor.
    let mut negotiations: Vec<(EventId, CommTensor)> = trace
        .comm_tensors
        .iter()
        .filter(|(e, _)| {
            let event = &trace.events[e.index()];
            is_horovod(trace, event) && trace.name(event.name).starts_with("NEGOTIATE_")
        })
        .filter_map(|(e, tensors)| Some((*e, tensors.first()?.clone())))
        .collect();
    negotiations.sort_by_key(|(e, _)| (trace.events[e.index()].end_ns(), *e));
    let mut links = Vec::new();
    let mut produced: Vec<(String, i64)> = Vec::new();
    for (negotiation, tensor) in &negotiations {
        let end = trace.events[negotiation.index()].end_ns();
        let producer = accumulate
            .iter()
            .enumerate()
            .filter(|(k, e)| {
                let event = &trace.events[e.index()];
                !taken[*k]
                    && event.end_ns() <= end + TOLERANCE_NS
                    && reads(trace.inputs_of(**e), tensor)
            })
            .max_by_key(|(_, e)| (trace.events[e.index()].end_ns(), **e));
        if let Some((k, &event)) = producer {
            taken[k] = true;
            links.push(Link {
                from: event,
                to: *negotiation,
                kind: LinkKind::GradientReady,
            });
            produced.push((tensor.name.clone(), end));
            report.producers += 1;
        }
    }
    // Collectives: the last stage of each chain of stages (no stage after it).
    let has_next: std::collections::BTreeSet<EventId> = trace
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::CommStage)
        .map(|l| l.from)
        .collect();
    let mut consumers = Vec::new();
    for (event, tensors) in &trace.comm_tensors {
        let e = &trace.events[event.index()];
        if !is_horovod(trace, e) || trace.name(e.name).starts_with("NEGOTIATE_") {
            continue;
        }
        let is_collective = trace
            .comm_args
            .binary_search_by_key(event, |(id, _)| *id)
            .is_ok();
        if is_collective {
            report.collectives += 1;
            // Attached when each tensor's negotiation before it found a producer.
            let attached = tensors.iter().all(|t| {
                produced
                    .iter()
                    .any(|(name, at)| *name == t.name && *at <= e.start_ns)
            });
            if !attached {
                report.unmatched_collectives += 1;
            }
        }
        if has_next.contains(event) {
            continue;
        }
        let end = e.end_ns();
        for tensor in tensors {
            let consumer = trace
                .op_inputs
                .iter()
                .filter(|(id, inputs)| {
                    let op = &trace.events[id.index()];
                    op.start_ns >= end
                        && !trace.name(op.name).contains("AccumulateGrad")
                        && reads(Some(inputs), tensor)
                })
                .min_by_key(|(id, _)| (trace.events[id.index()].start_ns, *id));
            if let Some((id, _)) = consumer {
                consumers.push(Link {
                    from: *event,
                    to: *id,
                    kind: LinkKind::ReducedTensorUsed,
                });
            }
        }
    }
    consumers.sort();
    consumers.dedup();
    report.consumers = consumers.len();
    trace.links.extend(links);
    trace.links.extend(consumers);
    trace.links.sort();
    report
}

/// Whether an op's recorded inputs include a tensor of `tensor`'s shape (and type, where both
/// are known).
fn reads(inputs: Option<&[OpInput]>, tensor: &CommTensor) -> bool {
    let Some(shape) = &tensor.shape else {
        return false;
    };
    inputs.into_iter().flatten().any(|input| match input {
        OpInput::Tensor { shape: s, dtype } => {
            s == shape && (dtype.is_none() || tensor.dtype.is_none() || *dtype == tensor.dtype)
        }
        _ => false,
    })
}

/// A side table of the framework's trace (sorted by event), on the merged events' ids
/// (`new[old]`), sorted by event again.
fn remap_framework<T>(table: Vec<(EventId, T)>, new: &[EventId]) -> Vec<(EventId, T)> {
    let mut table: Vec<_> = table
        .into_iter()
        .map(|(e, a)| (new[e.index()], a))
        .collect();
    table.sort_by_key(|(e, _)| *e);
    table
}
