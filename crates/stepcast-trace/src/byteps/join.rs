//! A BytePS communication trace joined with the framework's trace of the same process, so
//! that one graph holds dPRO's per-tensor edges for a parameter-server job: gradient produced
//! → each partition's stages (reduce, copy, push, pull, copy back, broadcast) → consumer.
//!
//! Clocks: BytePS writes microseconds of `system_clock` since the epoch, as the PyTorch
//! profiler does, so both are placed on one clock by their absolute times.
//!
//! Which op produced a tensor: BytePS's PyTorch `DistributedOptimizer` enqueues a gradient
//! (`byteps_push_pull`) from a hook on its parameter's gradient accumulator, as Horovod's
//! does; the tensor's stages begin when it is enqueued. So a tensor's round (its stages in
//! one step) is produced by the `AccumulateGrad` op that ended last before its first stage
//! began, not taken by another tensor and not before the same tensor's previous round began.
//! The link gates the first stage of each partition (`LinkKind::GradientEnqueued`).
//! `comm.json` records no size; where the producer recorded its input (`record_shapes=True`),
//! the tensor takes that shape and type (`Trace::comm_tensors`), and its consumer is the
//! first op after the round's last stage that reads a tensor of that shape and type, other
//! than a gradient accumulation (the optimizer's update): every partition's last stage gates
//! its end (`LinkKind::ReducedTensorUsed`). Without recorded shapes, producers are still
//! found (by time alone) and consumers are not.

use std::collections::BTreeMap;

use crate::model::{CommTensor, EventId, Link, LinkKind, OpInput, Trace};

/// What the join found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Join {
    /// Tensor rounds: a tensor's stages in one step, all partitions.
    pub rounds: usize,
    /// Rounds whose producing gradient was not found.
    pub unmatched_rounds: usize,
    pub producers: usize,
    /// Rounds that took their shape from their producer.
    pub sized: usize,
    pub consumers: usize,
}

/// Accepted slack between an op's end and the first stage it gates (the trace writes whole
/// microseconds).
const TOLERANCE_NS: i64 = 2_000;

/// One tensor's stages in one step.
struct Round {
    tensor: String,
    /// The first stage of each partition.
    heads: Vec<EventId>,
    /// The last stage of each partition.
    tails: Vec<EventId>,
    /// Every stage.
    members: Vec<EventId>,
    start_ns: i64,
    end_ns: i64,
}

/// `framework` with `byteps`'s lanes, events and links added and joined to its ops.
pub fn join(framework: Trace, byteps: Trace) -> (Trace, Join) {
    let mut merged = crate::horovod::join::merge(framework, byteps, "BytePS communication trace");
    let report = link(&mut merged);
    merged.diagnostics.note(format!(
        "joined with a BytePS communication trace: {} tensor rounds, {} attached to the gradients that produced them ({} sized from them), {} producer and {} consumer rounds",
        report.rounds,
        report.rounds - report.unmatched_rounds,
        report.sized,
        report.producers,
        report.consumers
    ));
    (merged, report)
}

/// The rounds of the merged trace's BytePS stages (on lanes of negative pid).
fn rounds(trace: &Trace) -> Vec<Round> {
    let stage_links: Vec<&Link> = trace
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::CommStage)
        .collect();
    let mut next: BTreeMap<EventId, EventId> = BTreeMap::new();
    let mut has_previous = std::collections::BTreeSet::new();
    for l in &stage_links {
        next.insert(l.from, l.to);
        has_previous.insert(l.to);
    }
    // Chains per (tensor, partition), in start order: the i-th is the partition's round i.
    let mut chains: BTreeMap<(String, u32), Vec<Vec<EventId>>> = BTreeMap::new();
    for (event, tensors) in &trace.comm_tensors {
        let e = &trace.events[event.index()];
        if trace.lane(e.lane).pid >= 0 || has_previous.contains(event) {
            continue;
        }
        let Some(tensor) = tensors.first() else {
            continue;
        };
        let mut chain = vec![*event];
        let mut at = *event;
        while let Some(&to) = next.get(&at) {
            chain.push(to);
            at = to;
        }
        chains
            .entry((tensor.name.clone(), tensor.partition.unwrap_or(0)))
            .or_default()
            .push(chain);
    }
    let mut by_round: BTreeMap<(String, usize), Round> = BTreeMap::new();
    for ((tensor, _), mut list) in chains {
        list.sort_by_key(|c| (trace.events[c[0].index()].start_ns, c[0]));
        for (i, chain) in list.into_iter().enumerate() {
            let start = trace.events[chain[0].index()].start_ns;
            let end = chain
                .iter()
                .map(|e| trace.events[e.index()].end_ns())
                .max()
                .unwrap_or(start);
            let round = by_round
                .entry((tensor.clone(), i))
                .or_insert_with(|| Round {
                    tensor: tensor.clone(),
                    heads: Vec::new(),
                    tails: Vec::new(),
                    members: Vec::new(),
                    start_ns: start,
                    end_ns: end,
                });
            round.start_ns = round.start_ns.min(start);
            round.end_ns = round.end_ns.max(end);
            round.heads.push(chain[0]);
            round.tails.extend(chain.last().copied());
            round.members.extend(chain);
        }
    }
    let mut rounds: Vec<Round> = by_round.into_values().collect();
    rounds.sort_by(|a, b| (a.start_ns, &a.tensor).cmp(&(b.start_ns, &b.tensor)));
    rounds
}

/// Adds the producer and consumer links of every tensor round.
fn link(trace: &mut Trace) -> Join {
    let mut report = Join::default();
    let rounds = rounds(trace);
    report.rounds = rounds.len();
    // Gradient accumulations of the framework, in end order.
    let mut accumulate: Vec<EventId> = trace
        .events
        .iter()
        .enumerate()
        .filter(|(_, e)| {
            trace.lane(e.lane).pid >= 0 && trace.name(e.name).contains("AccumulateGrad")
        })
        .map(|(i, _)| EventId(i as u32))
        .collect();
    // One event per accumulation: PyTorch nests `torch::autograd::AccumulateGrad` (which
    // records the gradient's shape) in `evaluate_function: ...AccumulateGrad`. Those with
    // recorded inputs where any has them, else the outermost.
    if accumulate.iter().any(|e| trace.inputs_of(*e).is_some()) {
        accumulate.retain(|e| trace.inputs_of(*e).is_some());
    } else {
        let all = accumulate.clone();
        accumulate.retain(|e| {
            let inner = &trace.events[e.index()];
            !all.iter().any(|o| {
                let outer = &trace.events[o.index()];
                o != e
                    && outer.lane == inner.lane
                    && outer.start_ns <= inner.start_ns
                    && outer.end_ns() >= inner.end_ns()
                    && (outer.dur_ns > inner.dur_ns || o < e)
            })
        });
    }
    accumulate.sort_by_key(|e| (trace.events[e.index()].end_ns(), *e));
    let mut taken = vec![false; accumulate.len()];
    let mut previous_start: BTreeMap<&str, i64> = BTreeMap::new();
    let mut links = Vec::new();
    let mut shapes: BTreeMap<EventId, CommTensor> = BTreeMap::new();
    for round in &rounds {
        let not_before = previous_start
            .insert(round.tensor.as_str(), round.start_ns)
            .unwrap_or(i64::MIN);
        let limit = round.start_ns.saturating_add(TOLERANCE_NS);
        let upto = accumulate.partition_point(|e| trace.events[e.index()].end_ns() <= limit);
        let producer = (0..upto)
            .rev()
            .find(|&k| !taken[k] && trace.events[accumulate[k].index()].end_ns() >= not_before);
        let Some(k) = producer else {
            report.unmatched_rounds += 1;
            continue;
        };
        taken[k] = true;
        report.producers += 1;
        let event = accumulate[k];
        for head in &round.heads {
            links.push(Link {
                from: event,
                to: *head,
                kind: LinkKind::GradientEnqueued,
            });
        }
        // The gradient's shape and type: the accumulation's first tensor input.
        let gradient = trace.inputs_of(event).and_then(|inputs| {
            inputs.iter().find_map(|input| match input {
                OpInput::Tensor { shape, dtype } => Some((shape.clone(), *dtype)),
                _ => None,
            })
        });
        let Some((shape, dtype)) = gradient else {
            continue;
        };
        report.sized += 1;
        let sized = CommTensor {
            name: round.tensor.clone(),
            shape: Some(shape),
            dtype,
            partition: None,
        };
        for member in &round.members {
            shapes.insert(*member, sized.clone());
        }
        // The consumer: the first op after the round that reads that shape and type.
        let consumer = trace
            .op_inputs
            .iter()
            .filter(|(id, inputs)| {
                let op = &trace.events[id.index()];
                trace.lane(op.lane).pid >= 0
                    && op.start_ns >= round.end_ns
                    && !trace.name(op.name).contains("AccumulateGrad")
                    && reads(inputs, &sized)
            })
            .min_by_key(|(id, _)| (trace.events[id.index()].start_ns, *id));
        if let Some((id, _)) = consumer {
            report.consumers += 1;
            for tail in &round.tails {
                links.push(Link {
                    from: *tail,
                    to: *id,
                    kind: LinkKind::ReducedTensorUsed,
                });
            }
        }
    }
    for (event, tensors) in &mut trace.comm_tensors {
        if let Some(sized) = shapes.get(event) {
            for tensor in tensors.iter_mut() {
                tensor.shape = sized.shape.clone();
                tensor.dtype = sized.dtype;
            }
        }
    }
    links.sort();
    links.dedup();
    trace.links.extend(links);
    trace.links.sort();
    report
}

/// Whether an op's recorded inputs include a tensor of `tensor`'s shape (and type, where both
/// are known).
fn reads(inputs: &[OpInput], tensor: &CommTensor) -> bool {
    let Some(shape) = &tensor.shape else {
        return false;
    };
    inputs.iter().any(|input| match input {
        OpInput::Tensor { shape: s, dtype } => {
            s == shape && (dtype.is_none() || tensor.dtype.is_none() || *dtype == tensor.dtype)
        }
        _ => false,
    })
}
