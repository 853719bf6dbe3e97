//! The forward pass as units that memory-for-time trades act on: each outermost op of a
//! steady step's forward pass, the kernels it launched, the activation bytes it keeps for the
//! backward pass and where its backward begins.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use stepcast_trace::{EventId, EventKind, SequenceNumber, Trace};

use super::super::Context;
use super::step_peak::{StepPeak, Trade, step_peak};
use crate::analyze::mapping::Phase;
use crate::graph::{NO_STEP, TaskId, TaskKind};

/// One op of the forward pass of a steady step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForwardUnit {
    pub step: u32,
    /// The outermost `cpu_op` around the launching calls of its kernels (`aten::conv2d`).
    pub op: EventId,
    /// Its kernels and memsets, in recorded order; in a trace without device work
    /// ([`Activations::host_only`]), the op's own host task.
    pub tasks: Vec<TaskId>,
    /// The first task of its backward of the same kind (an op of the backward pass with one of
    /// the autograd sequence numbers of its ops), if the trace links them.
    pub backward: Option<TaskId>,
    /// Activation bytes it keeps for the backward pass (see [`ActivationSource`]); 0 when
    /// unknown.
    pub bytes: i64,
}

/// Where the activation bytes come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActivationSource {
    /// The joined Execution Trace ([`Context::data`]): the tensors the op and the ops nested
    /// in it produced that an op of the backward pass reads (what autograd really saved), one
    /// per storage.
    ExecutionTrace,
    /// The device's memory events (`profile_memory=True`): the bytes an op allocated and did
    /// not free during its range (what it added to the live set: its output and the tensors
    /// it saves; workspaces freed inside the op do not count).
    MemoryEvents,
    /// The recorded input shapes and types (`record_shapes=True`): the op's first tensor
    /// input, which the op saves for its backward (convolution, linear, normalization); none
    /// for the ops whose backward needs no tensor of theirs (views, reshapes, additions,
    /// copies: `KEEPS_NOTHING`).
    OpShapes,
    /// Neither: bytes are 0.
    Unknown,
}

impl ActivationSource {
    pub fn as_str(self) -> &'static str {
        match self {
            ActivationSource::ExecutionTrace => "execution_trace",
            ActivationSource::MemoryEvents => "memory_events",
            ActivationSource::OpShapes => "op_shapes",
            ActivationSource::Unknown => "unknown",
        }
    }
}

/// The forward units of every steady step, in step and recorded order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activations {
    pub units: Vec<ForwardUnit>,
    pub source: ActivationSource,
    /// The trace records no device work (a CPU-only run): the units are the forward's host
    /// ops, each one task (an outermost op), and their backward the backward's host ops.
    pub host_only: bool,
    /// Steady steps the units come from.
    pub steps: usize,
}

/// The outermost `cpu_op` on `task`'s stack and the autograd sequence numbers of the ops on
/// it.
fn stack_ops(context: &Context<'_>, task: TaskId) -> (Option<EventId>, Vec<i64>) {
    let events = &context.trace.events;
    let stack = context.mapping.stack(task);
    let outermost = stack
        .iter()
        .copied()
        .find(|e| events[e.index()].kind == EventKind::CpuOp);
    let sequences = stack
        .iter()
        .filter_map(|e| events[e.index()].sequence_number.map(SequenceNumber::get))
        .collect();
    (outermost, sequences)
}

/// The autograd sequence numbers of the ops nested in host task `task`'s op, its own
/// included: a CPU-only trace's task is an outermost op (`aten::linear`), and the sequence
/// number its backward carries is its inner op's (`aten::addmm`'s, `AddmmBackward0`).
fn nested_sequences(context: &Context<'_>, task: TaskId) -> Vec<i64> {
    let trace = context.trace;
    let Some(op) = trace
        .events
        .get(context.window.graph.event[task.index()].index())
    else {
        return Vec::new();
    };
    let end_ns = op.start_ns.saturating_add(op.dur_ns);
    let lane = trace.lane_events(op.lane);
    let first = lane.partition_point(|e| e.start_ns < op.start_ns);
    lane[first..]
        .iter()
        .take_while(|e| e.start_ns <= end_ns)
        .filter(|e| e.start_ns.saturating_add(e.dur_ns) <= end_ns)
        .filter_map(|e| e.sequence_number.map(SequenceNumber::get))
        .collect()
}

/// The forward pass's units (see [`ForwardUnit`]).
pub fn forward_units(context: &Context<'_>) -> Activations {
    let graph = &context.window.graph;
    let first_steady = crate::whatif::first_steady(context.window) as u32;
    let in_steady = |t: usize| graph.step[t] != NO_STEP && graph.step[t] >= first_steady;
    // The units' work: kernels and memsets, or, in a trace without device work, host ops.
    let host_only = !graph.has_device_tasks();
    let work = |t: usize| {
        if host_only {
            graph.kind[t] == TaskKind::CpuOp
        } else {
            matches!(graph.kind[t], TaskKind::Kernel | TaskKind::Memset)
        }
    };
    let sequences_of = |task: TaskId| {
        let (op, mut sequences) = stack_ops(context, task);
        if host_only {
            sequences.extend(nested_sequences(context, task));
        }
        (op, sequences)
    };
    // The first backward task of each (step, sequence number).
    let mut backward: BTreeMap<(u32, i64), TaskId> = BTreeMap::new();
    let mut units: BTreeMap<(u32, EventId), (ForwardUnit, Vec<i64>)> = BTreeMap::new();
    for t in 0..graph.task_count() {
        if !work(t) || !in_steady(t) {
            continue;
        }
        let task = TaskId(t as u32);
        let step = graph.step[t];
        match context.mapping.phase[t] {
            Phase::Backward => {
                for seq in sequences_of(task).1 {
                    let first = backward.entry((step, seq)).or_insert(task);
                    if graph.rec_start_ns[t] < graph.rec_start_ns[first.index()] {
                        *first = task;
                    }
                }
            }
            Phase::Forward => {
                let (Some(op), sequences) = sequences_of(task) else {
                    continue;
                };
                let (unit, seqs) = units.entry((step, op)).or_insert_with(|| {
                    let unit = ForwardUnit {
                        step,
                        op,
                        tasks: Vec::new(),
                        backward: None,
                        bytes: 0,
                    };
                    (unit, Vec::new())
                });
                unit.tasks.push(task);
                seqs.extend(sequences);
            }
            _ => {}
        }
    }
    let sizes = OpBytes::new(context);
    let mut out: Vec<ForwardUnit> = units
        .into_values()
        .map(|(mut unit, seqs)| {
            unit.tasks
                .sort_by_key(|t| (graph.rec_start_ns[t.index()], t.0));
            // A backward that began before the op's forward ended is not its backward (a
            // sequence number reused): the op is left without one.
            let forward_end = unit
                .tasks
                .iter()
                .map(|t| graph.rec_end_ns[t.index()])
                .max()
                .unwrap_or(i64::MAX);
            unit.backward = seqs
                .iter()
                .filter_map(|&s| backward.get(&(unit.step, s)).copied())
                .min_by_key(|t| (graph.rec_start_ns[t.index()], t.0))
                .filter(|t| graph.rec_start_ns[t.index()] >= forward_end);
            unit.bytes = sizes.bytes(context, unit.op);
            unit
        })
        .collect();
    out.sort_by_key(|u| (u.step, graph.rec_start_ns[u.tasks[0].index()], u.tasks[0].0));
    sizes.fit_to_forward_growth(context.trace, &mut out);
    let steps = context
        .window
        .steps
        .len()
        .saturating_sub(first_steady as usize);
    let source = if out.iter().any(|u| u.bytes > 0) {
        sizes.source
    } else {
        ActivationSource::Unknown
    };
    Activations {
        units: out,
        source,
        host_only,
        steps,
    }
}

/// Activation bytes of ops, from a joined Execution Trace, the device memory events of their
/// thread, or their shapes.
struct OpBytes {
    source: ActivationSource,
    /// Per trace lane: (time, cumulative device bytes allocated up to and including it).
    by_lane: BTreeMap<u32, Vec<(i64, i64)>>,
}

impl OpBytes {
    fn new(context: &Context<'_>) -> OpBytes {
        if context.data.is_some() {
            return OpBytes {
                source: ActivationSource::ExecutionTrace,
                by_lane: BTreeMap::new(),
            };
        }
        let trace = context.trace;
        let mut by_lane: BTreeMap<u32, Vec<(i64, i64)>> = BTreeMap::new();
        for m in trace
            .memory
            .iter()
            .filter(|m| holds_activations(context, m.device))
        {
            if let Some(lane) = m.lane {
                by_lane
                    .entry(lane.0)
                    .or_default()
                    .push((m.time_ns, m.bytes));
            }
        }
        for points in by_lane.values_mut() {
            points.sort_by_key(|p| p.0);
            let mut sum = 0;
            for p in points.iter_mut() {
                sum += p.1;
                p.1 = sum;
            }
        }
        let source = if by_lane.is_empty() {
            ActivationSource::OpShapes
        } else {
            ActivationSource::MemoryEvents
        };
        OpBytes { source, by_lane }
    }

    /// Allocated bytes on `lane` just before `t` (memory events only).
    fn allocated_before(&self, lane: u32, t: i64) -> i64 {
        let Some(points) = self.by_lane.get(&lane) else {
            return 0;
        };
        let i = points.partition_point(|p| p.0 < t);
        i.checked_sub(1).map_or(0, |i| points[i].1)
    }

    /// With memory events, each op's bytes are what it allocated and did not free; tensors
    /// of earlier ops freed between ops (or inside later ones) make their sum exceed what
    /// the forward pass keeps. Per step and thread, the ops' bytes are scaled down so that
    /// they sum to the growth of allocated memory from the first op's start to the last op's
    /// end (never scaled up).
    fn fit_to_forward_growth(&self, trace: &Trace, units: &mut [ForwardUnit]) {
        if self.source != ActivationSource::MemoryEvents {
            return;
        }
        let mut groups: BTreeMap<(u32, u32), (i64, i64, i64)> = BTreeMap::new();
        for unit in units.iter() {
            let op = &trace.events[unit.op.index()];
            let entry = groups
                .entry((unit.step, op.lane.0))
                .or_insert((i64::MAX, i64::MIN, 0));
            entry.0 = entry.0.min(op.start_ns);
            entry.1 = entry.1.max(op.end_ns());
            entry.2 += unit.bytes;
        }
        for unit in units.iter_mut() {
            let lane = trace.events[unit.op.index()].lane.0;
            let Some(&(start, end, sum)) = groups.get(&(unit.step, lane)) else {
                continue;
            };
            let growth =
                (self.allocated_before(lane, end) - self.allocated_before(lane, start)).max(0);
            if sum > growth && sum > 0 {
                unit.bytes = (unit.bytes as i128 * growth as i128 / sum as i128) as i64;
            }
        }
    }

    fn bytes(&self, context: &Context<'_>, op: EventId) -> i64 {
        let trace = context.trace;
        let event = &trace.events[op.index()];
        match self.source {
            ActivationSource::ExecutionTrace => saved_by_backward(context, op),
            ActivationSource::MemoryEvents => {
                let Some(points) = self.by_lane.get(&event.lane.0) else {
                    return 0;
                };
                let before = |t: i64| {
                    let i = points.partition_point(|p| p.0 < t);
                    i.checked_sub(1).map_or(0, |i| points[i].1)
                };
                (before(event.end_ns()) - before(event.start_ns)).max(0)
            }
            _ if KEEPS_NOTHING.is_match(trace.name(event.name)) => 0,
            _ => first_input_bytes(trace, op).unwrap_or(0),
        }
    }
}

/// Whether memory events of `device` (`-1`: host memory) are where the activations live: the
/// accelerators', or the host's on a CPU-only trace.
pub(super) fn holds_activations(context: &Context<'_>, device: i64) -> bool {
    if context.window.graph.has_device_tasks() {
        device >= 0
    } else {
        device == -1
    }
}

/// Ops whose backward needs none of their tensors (a view's or a reshape's gradient is the
/// incoming one reshaped; an addition's passes through; a copy's, a concatenation's and a
/// negation's need only sizes): by their shapes, they keep no activation. Counting their
/// first input counted the views of a tensor once per view: a tiny GPT's forward at 184 MiB
/// where autograd saved 106 (`cpu-gist-pairs/biggpt-base`).
static KEEPS_NOTHING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^aten::(view|_unsafe_view|reshape|transpose|permute|split|split_with_sizes|chunk|unbind|flatten|unflatten|squeeze|unsqueeze|expand|expand_as|select|slice|narrow|t|contiguous|clone|detach|alias|as_strided|add|add_|sub|sub_|neg|cat|stack|to|_to_copy)$",
    )
    .expect("valid regex")
});

/// Bytes of the tensors `op` and the ops nested in it produced that an op of the backward pass
/// reads, as the joined Execution Trace states (each storage once, at its largest view).
fn saved_by_backward(context: &Context<'_>, op: EventId) -> i64 {
    let Some(data) = context.data else {
        return 0;
    };
    let trace = context.trace;
    let outer = &trace.events[op.index()];
    let mut saved: BTreeMap<u64, i64> = BTreeMap::new();
    // The op and those nested in it: the events after it on its lane that begin before it
    // ends (events are sorted by lane, then start).
    let nested = trace.events[op.index()..]
        .iter()
        .enumerate()
        .take_while(|(_, e)| e.lane == outer.lane && e.start_ns < outer.end_ns());
    for (offset, _) in nested {
        for read in data.reads_from(EventId((op.index() + offset) as u32)) {
            if in_backward(context, read.consumer) {
                let bytes = saved.entry(read.storage_id).or_insert(0);
                *bytes = (*bytes).max(read.bytes);
            }
        }
    }
    saved.values().fold(0i64, |sum, &b| sum.saturating_add(b))
}

/// Whether `event` runs in the backward pass: on a thread of the autograd engine, or inside
/// one of its `evaluate_function` ops (a CPU trace runs the backward on the calling thread).
fn in_backward(context: &Context<'_>, event: EventId) -> bool {
    let trace = context.trace;
    let mapping = context.mapping;
    if mapping
        .backward_lanes
        .contains(&trace.events[event.index()].lane)
    {
        return true;
    }
    let mut at = Some(event);
    while let Some(e) = at {
        if trace
            .name(trace.events[e.index()].name)
            .starts_with("autograd::engine::evaluate_function")
        {
            return true;
        }
        at = mapping.parent.get(e.index()).copied().flatten();
    }
    false
}

/// Bytes of the first tensor input of `op`, from its recorded shapes and types.
pub(super) fn first_input_bytes(trace: &Trace, op: EventId) -> Option<i64> {
    input_bytes(trace, op, 0)
}

/// Bytes of input `index` of `op` (0: the first; a convolution's weight is 1), from its
/// recorded shape and type; `None` when not recorded, not a tensor, or of unknown type.
pub(super) fn input_bytes(trace: &Trace, op: EventId, index: usize) -> Option<i64> {
    trace.inputs_of(op)?.get(index)?.bytes()
}

/// The units chosen by `fraction` in each steady step: the shortest front of the forward
/// pass that holds at least `fraction` of the step's activation bytes (of its units, when
/// bytes are unknown). Units whose backward is not found are never chosen.
pub fn choose(activations: &Activations, fraction: f64) -> Vec<&ForwardUnit> {
    let mut chosen = Vec::new();
    let units = &activations.units;
    let mut start = 0;
    while start < units.len() {
        let step = units[start].step;
        let end = start + units[start..].partition_point(|u| u.step == step);
        let step_units = &units[start..end];
        let by_bytes = activations.source != ActivationSource::Unknown;
        let total: i64 = if by_bytes {
            step_units.iter().map(|u| u.bytes).sum()
        } else {
            step_units.len() as i64
        };
        let budget = (total as f64 * fraction).round() as i64;
        let mut used = 0i64;
        for unit in step_units {
            if used >= budget {
                break;
            }
            used += if by_bytes { unit.bytes } else { 1 };
            if unit.backward.is_some() {
                chosen.push(unit);
            }
        }
        start = end;
    }
    chosen
}

/// The repeated blocks of a forward pass: where its outermost ops' names repeat one sequence
/// `count` times in a row (a transformer's layers, a residual stage's blocks, an MLP's
/// linear-and-activation pairs), the units `torch.utils.checkpoint` is usually applied to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocks {
    /// Of a step's units, the first of the first block.
    pub start: usize,
    /// Ops per block (at least [`MIN_BLOCK_OPS`]).
    pub ops: usize,
    /// Blocks in a row (at least 2).
    pub count: usize,
}

/// The fewest ops a block has, of at least two names: one op repeated (`view`, `add`) is not
/// a layer.
pub const MIN_BLOCK_OPS: usize = 2;

/// The longest run of one sequence of names repeated twice or more in a row in `names` (the
/// most names covered; of runs that cover as many, the shortest block, so that four blocks are
/// not read as two of twice their length). `None` where nothing repeats.
///
/// Two blocks are taken only where no shorter sequence repeats three times or more over half a
/// block's length: a stack of near-identical layers (a ResNet's bottlenecks, whose first in
/// each stage differs) can repeat exactly twice at a length no layer has, and its layers are
/// the shorter run.
pub fn repeated_blocks<T: PartialEq>(names: &[T]) -> Option<Blocks> {
    let best = longest_run(names, 2)?;
    match longest_run(names, 3) {
        Some(finer)
            if best.count == 2 && finer.ops < best.ops && finer.covered() * 2 >= best.ops =>
        {
            Some(finer)
        }
        _ => Some(best),
    }
}

impl Blocks {
    /// The units the blocks cover.
    pub fn covered(&self) -> usize {
        self.count * self.ops
    }
}

/// [`repeated_blocks`]' run of at least `min_count` blocks.
fn longest_run<T: PartialEq>(names: &[T], min_count: usize) -> Option<Blocks> {
    let n = names.len();
    let mut best: Option<Blocks> = None;
    for ops in MIN_BLOCK_OPS..=n / 2 {
        // `run` names in a row equal the name `ops` further on, from `from`: the names from
        // `from` to `from + run + ops` repeat a block of `ops`.
        let (mut from, mut run) = (0, 0);
        for j in 0..n - ops {
            if names[j] != names[j + ops] {
                run = 0;
                continue;
            }
            if run == 0 {
                from = j;
            }
            run += 1;
            let count = (run + ops) / ops;
            // A block of one op over and over (`view`, `view`) is no layer either.
            let distinct = names[from + 1..from + ops]
                .iter()
                .any(|x| *x != names[from]);
            if count >= min_count && distinct && best.is_none_or(|b| count * ops > b.covered()) {
                best = Some(Blocks {
                    start: from,
                    ops,
                    count,
                });
            }
        }
    }
    best
}

/// The units of each steady step's repeated blocks ([`repeated_blocks`] over the names of its
/// units' ops), where they are at least half its forward units; `None` where, in some steady
/// step, they are not (no repeated layers to checkpoint one by one). With the chosen units,
/// the fewest blocks a step has.
pub fn choose_blocks<'a>(
    context: &Context<'_>,
    activations: &'a Activations,
) -> Option<(Vec<&'a ForwardUnit>, Blocks)> {
    let (blocks, fewest) = block_spans(context, activations)?;
    let chosen = blocks
        .into_iter()
        .flatten()
        .filter(|u| u.backward.is_some())
        .collect();
    Some((chosen, fewest))
}

/// [`choose_blocks`]' blocks, each as the units it spans in recorded order (those whose
/// backward is not found included): what `torch.utils.checkpoint` is applied to, one call
/// per block.
pub fn block_spans<'a>(
    context: &Context<'_>,
    activations: &'a Activations,
) -> Option<(Vec<&'a [ForwardUnit]>, Blocks)> {
    let trace = context.trace;
    let units = &activations.units;
    let mut spans = Vec::new();
    let mut fewest: Option<Blocks> = None;
    let mut start = 0;
    while start < units.len() {
        let step = units[start].step;
        let end = start + units[start..].partition_point(|u| u.step == step);
        let step_units = &units[start..end];
        let names: Vec<_> = step_units
            .iter()
            .map(|u| trace.events[u.op.index()].name)
            .collect();
        let blocks = repeated_blocks(&names)?;
        if blocks.count * blocks.ops * 2 < step_units.len() {
            return None;
        }
        let span = &step_units[blocks.start..blocks.start + blocks.count * blocks.ops];
        spans.extend(span.chunks(blocks.ops));
        if fewest.is_none_or(|f| blocks.count < f.count) {
            fewest = Some(blocks);
        }
        start = end;
    }
    fewest.map(|blocks| (spans, blocks))
}

/// What a memory-for-time trade saves, per steady step (means over the steady steps).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryEffect {
    pub source: ActivationSource,
    /// Activation bytes the forward pass keeps for the backward pass (all units).
    pub activation_bytes: i64,
    /// Of which the units the model acts on keep.
    pub chosen_bytes: i64,
    /// Peak activation bytes avoided.
    pub saved_bytes: i64,
    /// Units the model acts on (rounded mean).
    pub units: usize,
    /// The recorded peak of allocated device memory ([`crate::analyze::memory`]), if the
    /// trace has memory events.
    pub peak_bytes: Option<i64>,
    /// The parameters' gradients, where the step allocates them anew and their bytes are
    /// known ([`gradient_floor_bytes`]).
    pub gradient_bytes: Option<i64>,
    /// The step's peak with the trade, read off the recorded memory timeline, where the
    /// trace's memory events record addresses ([`super::step_peak`]).
    pub step_peak: Option<StepPeak>,
    /// How far the step's own peak falls: from the recorded timeline ([`Self::step_peak`])
    /// where known; else, where `gradient_bytes` is known, `max(A, G) − max(A − S, G)` (`A`
    /// the activations, `S` the saving, `G` the gradients: by the end of the backward pass
    /// every gradient is allocated and the activations are freed, so the step peaks at least
    /// at `G`, and the saving moves its peak only above that).
    pub step_peak_saved_bytes: Option<i64>,
}

impl MemoryEffect {
    /// Where [`Self::step_peak_saved_bytes`] comes from: `memory_timeline`,
    /// `gradient_floor`, or `None` where it is unknown.
    pub fn step_peak_source(&self) -> Option<&'static str> {
        match (self.step_peak, self.step_peak_saved_bytes) {
            (Some(_), _) => Some("memory_timeline"),
            (None, Some(_)) => Some("gradient_floor"),
            (None, None) => None,
        }
    }

    /// The window's peak with the trade, where the recorded timeline gives it.
    pub fn predicted_peak_bytes(&self) -> Option<i64> {
        self.step_peak.map(|p| p.predicted_peak_bytes)
    }
}

/// The bytes of the gradients a CPU-only step allocates anew (`zero_grad(set_to_none=True)`,
/// PyTorch's default: the trace's `Optimizer.zero_grad` ranges run no op), FP32, from its
/// host update's recorded shapes ([`super::fused_optimizer::host::host_updates`]). `None`
/// when the trace has device work, records no shapes or no `zero_grad`, or zeroes its
/// gradients in place (then they stay allocated between steps, and the activations' peak is
/// the step's own).
pub fn gradient_floor_bytes(context: &Context<'_>) -> Option<i64> {
    let trace = context.trace;
    if context.window.graph.has_device_tasks() {
        return None;
    }
    let zero_grads: Vec<&stepcast_trace::Event> = trace
        .events
        .iter()
        .filter(|e| trace.name(e.name).starts_with("Optimizer.zero_grad"))
        .collect();
    // An op inside a `zero_grad` range (`aten::zero_`) zeroes the gradients in place.
    let zeroes_in_place = zero_grads.iter().any(|z| {
        let lane = trace.lane_events(z.lane);
        let first = lane.partition_point(|e| e.start_ns < z.start_ns);
        lane[first..]
            .iter()
            .take_while(|e| e.start_ns <= z.end_ns())
            .any(|e| !std::ptr::eq(e, *z) && e.end_ns() <= z.end_ns() && e.kind == EventKind::CpuOp)
    });
    if zero_grads.is_empty() || zeroes_in_place {
        return None;
    }
    let updates = super::fused_optimizer::host::host_updates(context)?;
    (updates.shapes && updates.parameter_elements > 0).then(|| updates.parameter_elements * 4)
}

/// What every memory-for-time trade's saving is and is not, as measured
/// (`testdata/kineto/stepcast/cpu-memory-probe/`: the step's peak of allocated memory, with
/// and without the change, on nine CPU programs).
pub const PEAK_CAVEAT: &str = "the memory saved is the activations' own peak: the process's \
     peak falls by it only where the activations make that peak. Measured on nine CPU programs \
     (cpu-memory-probe), the step's peak fell by within 30 % of the figure on three; on three \
     (two MLPs, a transformer) it did not move, the gradients and the optimizer's temporaries \
     setting it. Where the trace's memory events record addresses (profile_memory=True), the \
     step's own peak is read off them with the trade's activations moved and all else as \
     recorded (`step_peak_saved_bytes`, `memory_timeline`): within 30 % or 0.5 MiB on 11 of 13 \
     CPU programs, the 4 predicted blind among them; missed on Gist where autograd saves a \
     tensor twice (a ReLU's output, kept by the ReLU and the next layer), which the hooks \
     stash twice. Else, where the step's gradients are known (a CPU-only trace with shapes), \
     they are its peak's floor (`gradient_floor`): within 30 % on five of the nine";

/// The [`MemoryEffect`] of acting on `chosen` among `activations`, where `saved(total,
/// chosen bytes of the step)` is the peak saving of one step and `trade` how it moves the
/// recorded activations.
pub fn memory_effect(
    context: &Context<'_>,
    activations: &Activations,
    chosen: &[&ForwardUnit],
    trade: &Trade<'_>,
    saved: impl Fn(i64, &[i64]) -> i64,
) -> MemoryEffect {
    // Per step: all units' bytes, and each chosen unit's.
    type StepBytes = (i64, Vec<i64>);
    let mut per_step: BTreeMap<u32, StepBytes> = BTreeMap::new();
    for unit in &activations.units {
        per_step.entry(unit.step).or_default().0 += unit.bytes;
    }
    for unit in chosen {
        per_step.entry(unit.step).or_default().1.push(unit.bytes);
    }
    let steps = per_step.len().max(1) as i64;
    let mean = |f: &dyn Fn(&StepBytes) -> i64| per_step.values().map(f).sum::<i64>() / steps;
    let peak_bytes = crate::analyze::memory::memory(context.trace, context.window, context.mapping)
        .iter()
        .filter(|d| holds_activations(context, d.device))
        .map(|d| d.peak.allocated_bytes)
        .max();
    let activation_bytes = mean(&|(total, _)| *total);
    let saved_bytes = mean(&|(total, c)| saved(*total, c).max(0));
    let gradient_bytes = gradient_floor_bytes(context);
    let step_peak = step_peak(context, trade);
    MemoryEffect {
        source: activations.source,
        activation_bytes,
        chosen_bytes: mean(&|(_, c)| c.iter().sum()),
        saved_bytes,
        units: (chosen.len() as f64 / steps as f64).round() as usize,
        peak_bytes,
        gradient_bytes,
        step_peak,
        step_peak_saved_bytes: step_peak.map(|p| p.fall_bytes).or_else(|| {
            gradient_bytes
                .map(|g| activation_bytes.max(g) - (activation_bytes - saved_bytes).max(g))
        }),
    }
}

/// The live host or device task before `task` on its lane, if any. (Collecting the lane to
/// find it cost the lane's length per unit: quadratic in the trace for the memory trades.)
pub(super) fn lane_prev(edit: &super::super::edit::EditGraph, task: TaskId) -> Option<TaskId> {
    edit.lane_prev(task)
}

#[cfg(test)]
mod tests {
    use super::{Blocks, repeated_blocks};

    fn blocks(names: &str) -> Option<Blocks> {
        repeated_blocks(&names.chars().collect::<Vec<_>>())
    }

    #[test]
    fn the_longest_run_of_one_repeated_sequence_is_the_blocks() {
        // Embeddings, three layers, a head: the layers.
        let found = blocks("epabcabcabch").expect("blocks");
        assert_eq!((found.ops, found.count), (3, 3));
        assert_eq!(&"epabcabcabch"[found.start..found.start + 9], "abcabcabc");
        // Four blocks are not read as two of twice their length.
        assert_eq!(blocks("abababab").map(|b| (b.ops, b.count)), Some((2, 4)));
        // Most covered wins over more blocks.
        assert_eq!(
            blocks("ababxabcdeabcdeabcde").map(|b| (b.ops, b.count)),
            Some((5, 3))
        );
        // Twice at a length no layer has, where a shorter block repeats: the shorter.
        assert_eq!(
            blocks("abababXabababX").map(|b| (b.ops, b.count)),
            Some((2, 3))
        );
        assert_eq!(
            blocks("abcdefabcdef").map(|b| (b.ops, b.count)),
            Some((6, 2))
        );
        // Nothing repeats, or only one op does.
        assert_eq!(blocks("abcdefg"), None);
        assert_eq!(blocks("vvvvvvvv"), None);
        assert_eq!(blocks(""), None);
    }
}
