//! Data-parallel communication inserted into a trace that has none (or whose recorded
//! collectives were stripped): DDP's buckets, one all-reduce per bucket on a new
//! communication stream, each waiting for the backward task that makes its last gradient
//! ready, and the optimizer step's first kernel waiting for them all (DDP's reducer makes the
//! compute stream wait for its communication before `backward()` returns). With DGC, a
//! compression kernel on the compute stream before each bucket's exchange and a
//! decompression kernel after it; with P3, per-parameter slices in priority order, each
//! gating its layer's first kernel of the next forward pass instead of the optimizer
//! ([`p3_forward_gates`]).

use stepcast_trace::NameId;

use std::collections::BTreeMap;

use super::gradients::{Gradient, Gradients};
use crate::Window;
use crate::analyze::mapping::{Mapping, Phase};
use crate::comm::{Collective, Topology};
use crate::graph::{EdgeKind, NO_STEP, TaskId, TaskKind};
use crate::whatif::WhatIfError;
use crate::whatif::edit::{EditGraph, Insert, InsertHost};

/// PyTorch DDP's first bucket: `dist._DEFAULT_FIRST_BUCKET_BYTES` (1 MiB), so that the first
/// all-reduce starts early in the backward pass.
pub const FIRST_BUCKET_BYTES: i64 = 1 << 20;
/// PyTorch DDP's `bucket_cap_mb` default: 25 MiB.
pub const DEFAULT_BUCKET_BYTES: i64 = 25 << 20;
/// P3's slice size (Jayarajan et al. 2019 slice parameters into ~50k-parameter pieces; in
/// fp32 that is ~200 KB).
pub const P3_SLICE_BYTES: i64 = 200_000;

/// Gradient compression (Deep Gradient Compression, Lin et al. 2018).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dgc {
    /// Share of gradient elements sent (top-k by magnitude); 0.001 in the paper.
    pub ratio: f64,
}

/// The names inserted tasks take (interned by the caller: the library never changes a trace).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InsertNames {
    pub all_reduce: NameId,
    pub all_gather: NameId,
    pub reduce_scatter: NameId,
    pub compress: NameId,
    pub decompress: NameId,
    /// A CPU-only trace's exchange's CPU time, taken from the training thread where the
    /// node has no core to spare ([`charge_exchange_cpu`]).
    pub exchange_cpu: NameId,
}

/// The names [`InsertNames`] uses, for the caller to intern.
pub const INSERT_NAMES: [&str; 6] = [
    "ddp:all_reduce (inserted)",
    "ddp:all_gather (inserted)",
    "ddp:reduce_scatter (inserted)",
    "dgc:compress (inserted)",
    "dgc:decompress (inserted)",
    "gloo:cpu (inserted)",
];

impl InsertNames {
    /// The names of [`INSERT_NAMES`] if `trace` has them interned, else `fallback` for each.
    pub fn resolve(trace: &stepcast_trace::Trace, fallback: NameId) -> InsertNames {
        let get = |i: usize| trace.names.lookup(INSERT_NAMES[i]).unwrap_or(fallback);
        InsertNames {
            all_reduce: get(0),
            all_gather: get(1),
            reduce_scatter: get(2),
            compress: get(3),
            decompress: get(4),
            exchange_cpu: get(5),
        }
    }
}

/// One inserted exchange: a DDP bucket, or a P3 slice.
#[derive(Clone, Debug, PartialEq)]
pub struct InsertedBucket {
    pub step: u32,
    /// Gradients (ready-order indices) it carries: `first .. first + count`.
    pub first_gradient: u32,
    pub gradients: u32,
    /// Gradient bytes (before compression).
    pub bytes: i64,
    /// Bytes the collective moves (its full buffer, NCCL's convention).
    pub wire_bytes: f64,
    pub collective: Collective,
    /// The device task that makes its last gradient ready.
    pub ready: TaskId,
    /// P3: lower goes first (the earliest layer's parameters, needed first by the next
    /// forward pass); DDP: its bucket index.
    pub priority: u32,
    pub predicted_ns: i64,
    /// DGC's kernels (0 without compression).
    pub compress_ns: i64,
    pub decompress_ns: i64,
}

/// DDP's bucket assignment over the gradients of one step in ready order (the reverse of
/// the parameter order): a bucket closes once it holds at least its limit, 1 MiB for the
/// first and `cap` for the others (PyTorch's `compute_bucket_assignment_by_size`).
pub fn ddp_buckets(gradients: &[Gradient], cap: i64) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut bytes) = (0usize, 0i64);
    for (i, g) in gradients.iter().enumerate() {
        bytes += g.bytes;
        let limit = if out.is_empty() {
            FIRST_BUCKET_BYTES.min(cap)
        } else {
            cap
        };
        if bytes >= limit {
            out.push(start..i + 1);
            start = i + 1;
            bytes = 0;
        }
    }
    if start < gradients.len() {
        out.push(start..gradients.len());
    }
    out
}

/// P3's slices: every gradient cut into pieces of at most `slice` bytes, each a priority
/// class of its own: the gradient readied last (the first layer) has the highest priority.
pub fn p3_slices(gradients: &[Gradient], slice: i64) -> Vec<(usize, i64)> {
    let mut out = Vec::new();
    for (i, g) in gradients.iter().enumerate() {
        let mut left = g.bytes.max(0);
        loop {
            let piece = left.min(slice.max(1));
            out.push((i, piece));
            left -= piece;
            if left <= 0 {
                break;
            }
        }
    }
    out
}

/// What the inserted exchanges cost: the topology, DGC's compression throughput.
#[derive(Clone, Copy, Debug)]
pub struct Costs<'a> {
    pub topology: &'a Topology,
    pub dgc: Option<Dgc>,
    /// Bytes of gradient an element-wise pass processes per ns (the trace's own optimizer
    /// throughput, see [`elementwise_bytes_per_ns`]).
    pub elementwise_bytes_per_ns: f64,
}

impl Costs<'_> {
    /// The exchange of `bytes` of gradients: `(collective, wire bytes, time, compress,
    /// decompress)`. Without compression a ring all-reduce of the buffer. With DGC, each rank
    /// sends `ratio` of its elements as values and 32-bit indices (2 × ratio × bytes for fp32),
    /// gathered from every rank (an all-gather of `n` such messages: sparse gradients do not
    /// add up in place); compression is one element-wise pass over the gradient, and
    /// decompression one over the `n` gathered messages.
    pub fn exchange(&self, bytes: i64) -> (Collective, f64, i64, i64, i64) {
        let n = self.topology.world_size() as f64;
        let bytes_f = bytes as f64;
        match self.dgc {
            None => (
                Collective::AllReduce,
                bytes_f,
                self.topology
                    .time_ns(Collective::AllReduce, bytes_f)
                    .round() as i64,
                0,
                0,
            ),
            Some(dgc) => {
                let sparse = 2.0 * dgc.ratio * bytes_f;
                let gathered = n * sparse;
                let rate = self.elementwise_bytes_per_ns.max(f64::MIN_POSITIVE);
                (
                    Collective::AllGather,
                    gathered,
                    self.topology
                        .time_ns(Collective::AllGather, gathered)
                        .round() as i64,
                    (bytes_f / rate).round() as i64,
                    (gathered / rate).round() as i64,
                )
            }
        }
    }
}

/// Gradient bytes an element-wise pass processes per ns, measured on the trace: one step's
/// gradient bytes over the step's optimizer device time (an optimizer step is a few
/// element-wise passes over the gradients). `None` without optimizer kernels.
pub fn elementwise_bytes_per_ns(gradients: &Gradients, optimizer_device_ns: i64) -> Option<f64> {
    (optimizer_device_ns > 0 && gradients.bytes_per_step > 0)
        .then(|| gradients.bytes_per_step as f64 / optimizer_device_ns as f64)
}

/// Plans the exchanges of every step in `steps` (the steady steps).
pub fn plan_exchanges(
    gradients: &Gradients,
    steps: &[u32],
    bucket_cap: i64,
    p3: bool,
    costs: &Costs<'_>,
) -> Vec<InsertedBucket> {
    let mut out = Vec::new();
    for &step in steps {
        let Some(grads) = gradients.steps.get(&step) else {
            continue;
        };
        if p3 {
            let last = grads.len().saturating_sub(1);
            for (i, bytes) in p3_slices(grads, P3_SLICE_BYTES) {
                let (collective, wire_bytes, predicted_ns, compress_ns, decompress_ns) =
                    costs.exchange(bytes);
                out.push(InsertedBucket {
                    step,
                    first_gradient: i as u32,
                    gradients: 1,
                    bytes,
                    wire_bytes,
                    collective,
                    ready: grads[i].ready,
                    priority: (last - i) as u32,
                    predicted_ns,
                    compress_ns,
                    decompress_ns,
                });
            }
        } else {
            for (k, range) in ddp_buckets(grads, bucket_cap).into_iter().enumerate() {
                let bytes: i64 = grads[range.clone()].iter().map(|g| g.bytes).sum();
                let (collective, wire_bytes, predicted_ns, compress_ns, decompress_ns) =
                    costs.exchange(bytes);
                out.push(InsertedBucket {
                    step,
                    first_gradient: range.start as u32,
                    gradients: range.len() as u32,
                    bytes,
                    wire_bytes,
                    collective,
                    ready: grads[range.end - 1].ready,
                    priority: k as u32,
                    predicted_ns,
                    compress_ns,
                    decompress_ns,
                });
            }
        }
    }
    out
}

/// P3's order on the communication stream for one step's slices, fixed at plan time: a list
/// scheduler that, whenever the stream frees, sends the ready slice of highest priority
/// (lowest number), else the next to become ready. `ready_ns[i]`: when slice `i`'s gradient
/// is ready (from a replay of the input). Returns indices into `slices`.
pub fn priority_order(slices: &[InsertedBucket], ready_ns: &[i64]) -> Vec<usize> {
    let mut pending: Vec<usize> = (0..slices.len()).collect();
    pending.sort_by_key(|&i| (ready_ns[i], slices[i].priority, i));
    let mut order = Vec::with_capacity(slices.len());
    let mut now = i64::MIN;
    while !pending.is_empty() {
        let earliest = ready_ns[pending[0]];
        if now < earliest {
            now = earliest;
        }
        // The ready slice of highest priority (ties: earlier ready, then index).
        let pick = pending
            .iter()
            .enumerate()
            .take_while(|&(_, &i)| ready_ns[i] <= now)
            .min_by_key(|&(_, &i)| (slices[i].priority, ready_ns[i], i))
            .map_or(0, |(k, _)| k);
        let i = pending.remove(pick);
        now += slices[i].predicted_ns + slices[i].compress_ns + slices[i].decompress_ns;
        order.push(i);
    }
    order
}

/// P3's dependencies (Jayarajan et al. 2019; Daydream A.4 inserts push and pull between a
/// layer's backward and its next forward): the update of a layer's parameters needs only its
/// own slices, and what needs the update is that layer's next forward pass. Per exchange (a
/// slice of one gradient, `exchanges` as [`plan_exchanges`] makes them): the first device
/// task of the next step's forward pass in the layer of the task that readies the gradient
/// (the mapping's layer), else the forward task at the gradient's share of the parameters
/// (gradients are ready in reverse parameter order, so the first readied is used last),
/// never later than the gate of a gradient readied before it. [`TaskId::NONE`] where there is
/// no next step (the window's last): its slices gate nothing but the step's own end.
pub fn p3_forward_gates(
    window: &Window,
    mapping: &Mapping,
    gradients: &Gradients,
    exchanges: &[InsertedBucket],
) -> Vec<TaskId> {
    let graph = &window.graph;
    let mut forward: BTreeMap<u32, Vec<TaskId>> = BTreeMap::new();
    for t in 0..graph.task_count() {
        let step = graph.step[t];
        if step != NO_STEP && graph.kind[t].on_device() && mapping.phase[t] == Phase::Forward {
            forward.entry(step).or_default().push(TaskId(t as u32));
        }
    }
    for tasks in forward.values_mut() {
        tasks.sort_by_key(|t| (graph.rec_start_ns[t.index()], *t));
    }
    // Per step and gradient (ready-order index): its gate.
    let mut gate_of: BTreeMap<(u32, u32), TaskId> = BTreeMap::new();
    for (&step, grads) in &gradients.steps {
        let Some(fwd) = forward.get(&(step + 1)).filter(|f| !f.is_empty()) else {
            continue;
        };
        let total: i64 = grads.iter().map(|g| g.bytes).sum::<i64>().max(1);
        let mut before = 0i64;
        let mut previous: Option<TaskId> = None;
        for (i, g) in grads.iter().enumerate() {
            let layer = mapping.layer[g.ready.index()];
            let by_layer = layer.and_then(|l| {
                fwd.iter()
                    .copied()
                    .find(|t| mapping.layer[t.index()] == Some(l))
            });
            let share = (total - before - g.bytes).max(0) as f64 / total as f64;
            let proportional = fwd[((share * fwd.len() as f64) as usize).min(fwd.len() - 1)];
            let mut gate = by_layer.unwrap_or(proportional);
            if let Some(p) = previous
                && graph.rec_start_ns[gate.index()] > graph.rec_start_ns[p.index()]
            {
                gate = p;
            }
            previous = Some(gate);
            before += g.bytes;
            gate_of.insert((step, i as u32), gate);
        }
    }
    exchanges
        .iter()
        .map(|x| {
            gate_of
                .get(&(x.step, x.first_gradient))
                .copied()
                .unwrap_or(TaskId::NONE)
        })
        .collect()
}

/// What [`insert`] added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inserted {
    /// The communication task of each exchange (`plan` order).
    pub exchanges: Vec<TaskId>,
    /// Recorded collectives removed first.
    pub stripped: usize,
    pub lane: Option<u32>,
}

/// Strips the recorded collectives of the steady steps: each becomes free (no cost, no gap
/// after it, no wait for peers). Their launch calls stay (DDP launches its own) and so do
/// the stream waits around them, now passing straight through. Removing them instead would
/// reconnect every path through each one, and a stream of hundreds of consecutive
/// collectives turns that quadratic.
pub fn strip_collectives(edit: &mut EditGraph) -> Result<usize, WhatIfError> {
    let selection = edit.select_where(|t| edit.kind(t) == TaskKind::Collective);
    edit.drop_inputs(&selection, EdgeKind::PeerArrival)?;
    edit.set_duration(&selection, 0)?;
    edit.set_gap(&selection, 0)?;
    Ok(selection.len())
}

/// Inserts `exchanges` (in the order given per step) on a new communication stream, and makes
/// each step's optimizer start wait for its last exchange (DDP); with `forward_gates` (P3:
/// [`p3_forward_gates`], one per exchange) each exchange gates its task instead and the
/// optimizer waits for none.
pub fn insert(
    edit: &mut EditGraph,
    gradients: &Gradients,
    exchanges: &[InsertedBucket],
    order: &[usize],
    names: &InsertNames,
    forward_gates: &[TaskId],
) -> Result<Inserted, WhatIfError> {
    let p3 = !forward_gates.is_empty();
    let mut out = Inserted {
        exchanges: vec![TaskId::NONE; exchanges.len()],
        ..Inserted::default()
    };
    let Some(first) = order.first().map(|&i| &exchanges[i]) else {
        return Ok(out);
    };
    let lane = edit.add_lane(edit.lane(first.ready))?;
    out.lane = Some(lane);
    // A gradient readied by a host task (a CPU-only trace: gloo on CPU tensors) is exchanged
    // by the library's worker thread, a host lane beside it.
    let exchange_kind = if edit.kind(first.ready).on_device() {
        TaskKind::Collective
    } else {
        TaskKind::CpuOp
    };
    let mut last_of_step: std::collections::BTreeMap<u32, TaskId> = Default::default();
    for &i in order {
        let x = &exchanges[i];
        if !edit.is_alive(x.ready) {
            continue;
        }
        // DGC: compression on the compute stream right after the gradient is ready.
        let input = if x.compress_ns > 0 {
            edit.insert(&Insert {
                kind: TaskKind::Kernel,
                name: names.compress,
                dur_ns: x.compress_ns,
                after: x.ready,
                launch: None,
            })?
        } else {
            x.ready
        };
        let name = match x.collective {
            Collective::AllGather => names.all_gather,
            _ => names.all_reduce,
        };
        let task = edit.append(lane, exchange_kind, name, x.predicted_ns, x.ready)?;
        edit.add_dependency(input, task, EdgeKind::EventWait, 0)?;
        let mut end = task;
        if x.decompress_ns > 0 {
            end = edit.append(
                lane,
                TaskKind::Kernel,
                names.decompress,
                x.decompress_ns,
                x.ready,
            )?;
        }
        out.exchanges[i] = task;
        last_of_step.insert(x.step, end);
        if let Some(&gate) = forward_gates.get(i)
            && gate != TaskId::NONE
            && edit.is_alive(gate)
        {
            edit.add_dependency(end, gate, EdgeKind::EventWait, 0)?;
        }
    }
    if p3 {
        return Ok(out);
    }
    for (step, last) in last_of_step {
        if let Some(&start) = gradients.optimizer_start.get(&step)
            && edit.is_alive(start)
            && edit.rec_start_ns(start) >= edit.rec_start_ns(last)
        {
            edit.add_dependency(last, start, EdgeKind::EventWait, 0)?;
        }
    }
    Ok(out)
}

/// On a CPU-only trace whose node has no core to spare: each inserted exchange's CPU time,
/// taken from the thread that readied its last gradient. gloo moves a CPU tensor through
/// loopback TCP and reduces it on a worker thread of the process, busy for about the
/// exchange's time (the declared link is measured on such exchanges); with a process per
/// core, that thread's core is a training thread's. The exchange keeps its own time beside it;
/// its CPU time, times `share` (the processes' time-sharing, [`super::DdpConfig::host_share`]),
/// becomes a host task right after the gradient's, which the rest of the backward pass waits
/// for. Returns the CPU time charged, all exchanges together.
pub fn charge_exchange_cpu(
    edit: &mut EditGraph,
    exchanges: &[InsertedBucket],
    inserted: &Inserted,
    name: NameId,
    share: f64,
) -> Result<i64, WhatIfError> {
    let mut charged = 0;
    for (x, &task) in exchanges.iter().zip(&inserted.exchanges) {
        if task == TaskId::NONE || !edit.is_alive(x.ready) || edit.kind(x.ready).on_device() {
            continue;
        }
        let dur_ns = (x.predicted_ns as f64 * share).round() as i64;
        edit.insert_host(&InsertHost {
            kind: TaskKind::CpuOp,
            name,
            dur_ns,
            gap_ns: 0,
            after: x.ready,
        })?;
        charged += dur_ns;
    }
    Ok(charged)
}
