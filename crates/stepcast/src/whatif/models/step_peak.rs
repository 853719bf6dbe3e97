//! The step's peak of allocated memory with a memory-for-time trade, read off the recorded
//! memory timeline.
//!
//! What a trade saves ([`super::activations::MemoryEffect::saved_bytes`]) is the activations'
//! own peak; the process's peak falls by it only where the activations make that peak
//! (`testdata/kineto/stepcast/cpu-memory-probe/`). Where the trace records its memory events
//! with their addresses (`profile_memory=True`), this module keeps everything the trade does
//! not touch as it was recorded — the gradients, the optimizer's temporaries, what is alive
//! together in the backward pass, the order of frees — and moves only the activations:
//!
//! - an **activation** of a forward op is a tensor it allocated (on its thread, inside its
//!   range) that is still allocated when the step's backward pass begins and is freed by a
//!   backward op (inside an `autograd::engine::evaluate_function` range: autograd releasing
//!   what it saved, after the last op that reads it; that op's start is its *use*). A tensor
//!   the program itself holds (its output, its loss) is freed elsewhere, and no trade moves
//!   it;
//! - each trade says, per activation, how many of its bytes are gone from the timeline and
//!   from when to when ([`Trade`]), and the step's peak is the largest allocated value left.

use std::collections::BTreeMap;

use stepcast_trace::{EventId, LaneId, Trace};

use super::super::Context;
use super::activations::{ForwardUnit, holds_activations};
use crate::analyze::mapping::Phase;
use crate::graph::NO_STEP;

/// One activation: a tensor a forward op allocated that a backward op frees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Activation {
    pub bytes: i64,
    /// The end of the forward op that allocated it.
    pub op_end_ns: i64,
    /// When it was freed.
    pub free_ns: i64,
    /// The start of the backward op that freed it (its last reader).
    pub use_ns: i64,
}

/// How a trade moves the activations of its chosen units.
#[derive(Clone, Debug, PartialEq)]
pub enum Trade<'a> {
    /// `torch.utils.checkpoint` over `segments` (each the units of one checkpointed call, in
    /// recorded order): a segment keeps only its output (the next segment's input, which
    /// checkpointing saves); the rest is gone from the end of its op until the segment's
    /// backward begins and runs its forward again.
    Recompute { segments: Vec<Vec<&'a ForwardUnit>> },
    /// Gist's stash (`units`): from the end of its op until its use, an activation is kept
    /// at `1 / compression` of its bytes; at its use it is decoded at full size beside its
    /// stash, both until it is freed.
    Stash {
        units: Vec<&'a ForwardUnit>,
        compression: i64,
    },
    /// Offload (`units`): an activation is in host memory from the end of the op after its
    /// own until its use (the copy back's lead before the use is not counted).
    Offload { units: Vec<&'a ForwardUnit> },
}

/// The step's peak of allocated memory, recorded and with a trade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepPeak {
    /// The device whose memory it is (`-1`: host memory, a CPU-only trace).
    pub device: i64,
    /// Per steady step, the peak above the step's start: recorded, and with the trade (means).
    pub recorded_above_start_bytes: i64,
    pub predicted_above_start_bytes: i64,
    /// How far the step's peak falls (mean over the steady steps; negative: it rises).
    pub fall_bytes: i64,
    /// The window's peak with the trade: the steady steps' predicted peaks, and the rest of
    /// the window's recorded peak less the least fall of a steady step.
    pub predicted_peak_bytes: i64,
    /// Activations the trade moved, per steady step (mean).
    pub moved: usize,
    /// Their bytes, per steady step (mean): the most the step's peak can fall by.
    pub moved_bytes: i64,
}

/// A change of allocated bytes over `[from_ns, until_ns)`.
#[derive(Clone, Copy, Debug)]
struct Change {
    delta_bytes: i64,
    from_ns: i64,
    until_ns: i64,
}

/// The device a trade's activations live on: of those that hold activations
/// ([`holds_activations`]: host memory on a CPU-only trace), the one with the most memory
/// events.
fn activation_device(context: &Context<'_>) -> Option<i64> {
    let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
    for m in context
        .trace
        .memory
        .iter()
        .filter(|m| holds_activations(context, m.device))
    {
        *counts.entry(m.device).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(device, n)| (n, std::cmp::Reverse(device)))
        .map(|(device, _)| device)
}

/// The recorded memory of one device: its events in time order, each allocation's free.
struct DeviceEvents<'t> {
    trace: &'t Trace,
    /// Indices into `trace.memory` of the device's events, in time order.
    events: Vec<usize>,
    /// Per position in `events`: the position of the free of that allocation, if recorded.
    free_of: Vec<Option<usize>>,
}

impl<'t> DeviceEvents<'t> {
    /// `None` where the device's events record no addresses: no allocation can be followed
    /// to its free.
    fn new(trace: &'t Trace, device: i64) -> Option<DeviceEvents<'t>> {
        let events: Vec<usize> = (0..trace.memory.len())
            .filter(|&i| trace.memory[i].device == device)
            .collect();
        if !events.iter().any(|&i| trace.memory[i].addr.is_some()) {
            return None;
        }
        let mut free_of = vec![None; events.len()];
        // The open allocation at each address.
        let mut open: BTreeMap<u64, usize> = BTreeMap::new();
        for (at, &i) in events.iter().enumerate() {
            let m = &trace.memory[i];
            let Some(addr) = m.addr else { continue };
            if m.bytes > 0 {
                open.insert(addr, at);
            } else if m.bytes < 0
                && let Some(allocated) = open.remove(&addr)
            {
                free_of[allocated] = Some(at);
            }
        }
        Some(DeviceEvents {
            trace,
            events,
            free_of,
        })
    }

    fn event(&self, at: usize) -> &stepcast_trace::MemoryEvent {
        &self.trace.memory[self.events[at]]
    }

    /// Allocations on `lane` within `[start_ns, end_ns]`, as positions.
    fn allocations_in(
        &self,
        lane: LaneId,
        start_ns: i64,
        end_ns: i64,
    ) -> impl Iterator<Item = usize> + '_ {
        let first = self
            .events
            .partition_point(|&i| self.trace.memory[i].time_ns < start_ns);
        (first..self.events.len())
            .take_while(move |&at| self.event(at).time_ns <= end_ns)
            .filter(move |&at| {
                let m = self.event(at);
                m.bytes > 0 && m.lane == Some(lane)
            })
    }
}

/// The backward ops of each lane: its `autograd::engine::evaluate_function` ranges, by start.
struct BackwardOps(BTreeMap<LaneId, Vec<(i64, i64)>>);

impl BackwardOps {
    fn new(trace: &Trace) -> BackwardOps {
        let mut lanes: BTreeMap<LaneId, Vec<(i64, i64)>> = BTreeMap::new();
        for e in &trace.events {
            if trace
                .name(e.name)
                .starts_with("autograd::engine::evaluate_function")
            {
                lanes
                    .entry(e.lane)
                    .or_default()
                    .push((e.start_ns, e.end_ns()));
            }
        }
        for ranges in lanes.values_mut() {
            ranges.sort_unstable();
        }
        BackwardOps(lanes)
    }

    /// The start of the innermost backward op on `lane` holding `t`, if any. They nest only
    /// as deep as reentrant checkpoints do: a few ranges back are looked at, never the lane.
    fn at(&self, lane: LaneId, t: i64) -> Option<i64> {
        let ranges = self.0.get(&lane)?;
        let upto = ranges.partition_point(|r| r.0 <= t);
        ranges[..upto]
            .iter()
            .rev()
            .take(8)
            .find(|r| r.1 >= t)
            .map(|r| r.0)
    }
}

/// The activations of forward op `op`: what it allocated that is still allocated at
/// `backward_ns`, the start of its step's backward pass.
fn activations_of(
    device: &DeviceEvents<'_>,
    backward_ops: &BackwardOps,
    op: EventId,
    backward_ns: i64,
) -> Vec<Activation> {
    let trace = device.trace;
    let event = &trace.events[op.index()];
    device
        .allocations_in(event.lane, event.start_ns, event.end_ns())
        .filter_map(|at| {
            let free = device.event(device.free_of[at]?);
            if free.time_ns < backward_ns {
                return None;
            }
            // Freed by a backward op releasing what autograd saved: an activation. A tensor
            // the program holds (its output, its loss) is freed elsewhere, and no trade
            // moves it.
            let use_ns = backward_ops.at(free.lane?, free.time_ns)?;
            Some(Activation {
                bytes: device.event(at).bytes,
                op_end_ns: event.end_ns(),
                free_ns: free.time_ns,
                use_ns: use_ns.max(event.end_ns()),
            })
        })
        .collect()
}

/// The start of each steady step's backward pass: its first backward task.
fn backward_starts(context: &Context<'_>) -> BTreeMap<u32, i64> {
    let graph = &context.window.graph;
    let mut starts: BTreeMap<u32, i64> = BTreeMap::new();
    for t in 0..graph.task_count() {
        if graph.step[t] == NO_STEP || context.mapping.phase[t] != Phase::Backward {
            continue;
        }
        let start = starts.entry(graph.step[t]).or_insert(i64::MAX);
        *start = (*start).min(graph.rec_start_ns[t]);
    }
    starts
}

/// The step's peak with `trade` (see the module documentation); `None` where the trace has no
/// memory events with addresses on the activations' device, or no steady step.
pub fn step_peak(context: &Context<'_>, trade: &Trade<'_>) -> Option<StepPeak> {
    let device_id = activation_device(context)?;
    let device = DeviceEvents::new(context.trace, device_id)?;
    let backward = backward_starts(context);
    let backward_ops = BackwardOps::new(context.trace);
    let trace = context.trace;
    let activations = |unit: &ForwardUnit| -> Vec<Activation> {
        backward
            .get(&unit.step)
            .map(|&b| activations_of(&device, &backward_ops, unit.op, b))
            .unwrap_or_default()
    };
    let mut changes = Vec::new();
    let mut moved = 0usize;
    let mut moved_bytes = 0i64;
    match trade {
        Trade::Recompute { segments } => {
            for segment in segments {
                // The segment's forward runs again when its backward begins: at its units'
                // first backward task.
                let again_ns = segment
                    .iter()
                    .filter_map(|u| u.backward)
                    .map(|b| context.window.graph.rec_start_ns[b.index()])
                    .min();
                let Some(again_ns) = again_ns else { continue };
                // The last unit's output is the next segment's input: kept.
                for unit in &segment[..segment.len().saturating_sub(1)] {
                    for a in activations(unit) {
                        moved += 1;
                        moved_bytes += a.bytes;
                        changes.push(Change {
                            delta_bytes: -a.bytes,
                            from_ns: a.op_end_ns,
                            until_ns: again_ns.min(a.free_ns).max(a.op_end_ns),
                        });
                    }
                }
            }
        }
        Trade::Stash { units, compression } => {
            for unit in units {
                for a in activations(unit) {
                    moved += 1;
                    moved_bytes += a.bytes;
                    let stashed = a.bytes / (*compression).max(1);
                    changes.push(Change {
                        delta_bytes: stashed - a.bytes,
                        from_ns: a.op_end_ns,
                        until_ns: a.use_ns,
                    });
                    changes.push(Change {
                        delta_bytes: stashed,
                        from_ns: a.use_ns,
                        until_ns: a.free_ns,
                    });
                }
            }
        }
        Trade::Offload { units } => {
            for (i, unit) in units.iter().enumerate() {
                // Copied out once the next op has read it.
                let after_ns = units
                    .get(i + 1)
                    .filter(|next| next.step == unit.step)
                    .map(|next| trace.events[next.op.index()].end_ns());
                for a in activations(unit) {
                    moved += 1;
                    moved_bytes += a.bytes;
                    let from_ns = after_ns.unwrap_or(a.op_end_ns).min(a.use_ns);
                    changes.push(Change {
                        delta_bytes: -a.bytes,
                        from_ns,
                        until_ns: a.use_ns,
                    });
                }
            }
        }
    }
    let first_steady = crate::whatif::first_steady(context.window);
    let steady: Vec<(i64, i64)> = context.window.steps[first_steady..]
        .iter()
        .map(|s| (s.start_ns, s.marker_end_ns))
        .collect();
    if steady.is_empty() {
        return None;
    }
    let peaks = sweep(&device, &changes, &steady);
    let n = steady.len() as i64;
    let mean = |f: &dyn Fn(&StepSweep) -> i64| peaks.steps.iter().map(f).sum::<i64>() / n;
    let least_fall = peaks
        .steps
        .iter()
        .map(|s| s.recorded - s.predicted)
        .min()
        .unwrap_or(0);
    let steady_peak = peaks.steps.iter().map(|s| s.predicted).max().unwrap_or(0);
    let predicted_peak_bytes = match peaks.outside {
        Some(outside) => steady_peak.max(outside - least_fall),
        None => steady_peak,
    };
    Some(StepPeak {
        device: device_id,
        recorded_above_start_bytes: mean(&|s| s.recorded - s.start),
        predicted_above_start_bytes: mean(&|s| s.predicted - s.start),
        fall_bytes: mean(&|s| s.recorded - s.predicted),
        predicted_peak_bytes,
        moved: (moved as f64 / n as f64).round() as usize,
        moved_bytes: moved_bytes / n,
    })
}

/// One steady step's allocated bytes: at its start, its recorded peak, its peak with the
/// changes.
#[derive(Clone, Copy, Debug, Default)]
struct StepSweep {
    start: i64,
    recorded: i64,
    predicted: i64,
}

struct Sweep {
    steps: Vec<StepSweep>,
    /// The recorded peak outside the steady steps, if any event lies there.
    outside: Option<i64>,
}

/// Walks the device's timeline with `changes` applied, evaluating after all that happens at
/// one time (a free and the end of a change at the free's time cancel before the value is
/// read).
fn sweep(device: &DeviceEvents<'_>, changes: &[Change], steps: &[(i64, i64)]) -> Sweep {
    // (time, allocated value after a memory event) and (time, shift).
    enum Item {
        Allocated(i64),
        Shift(i64),
    }
    let mut items: Vec<(i64, Item)> = Vec::with_capacity(device.events.len() + changes.len() * 2);
    let mut allocated = 0i64;
    for at in 0..device.events.len() {
        let m = device.event(at);
        allocated = m
            .total_allocated
            .unwrap_or(allocated.saturating_add(m.bytes));
        items.push((m.time_ns, Item::Allocated(allocated)));
    }
    for c in changes.iter().filter(|c| c.until_ns > c.from_ns) {
        items.push((c.from_ns, Item::Shift(c.delta_bytes)));
        items.push((c.until_ns, Item::Shift(-c.delta_bytes)));
    }
    // A stable sort: memory events keep their recorded order among equal times.
    items.sort_by_key(|(t, _)| *t);
    let step_of = |t: i64| -> Option<usize> {
        let i = steps.partition_point(|s| s.0 <= t).checked_sub(1)?;
        (t <= steps[i].1).then_some(i)
    };
    let mut out = vec![StepSweep::default(); steps.len()];
    let mut seen = vec![false; steps.len()];
    let mut outside: Option<i64> = None;
    // Before the first event: what it found allocated, where the allocator's total says.
    let first = (!device.events.is_empty()).then(|| device.event(0));
    let mut value = first
        .and_then(|m| m.total_allocated.map(|t| t.saturating_sub(m.bytes)))
        .unwrap_or(0);
    let mut shift = 0i64;
    let mut i = 0;
    while i < items.len() {
        let t = items[i].0;
        let before = value;
        while i < items.len() && items[i].0 == t {
            match items[i].1 {
                Item::Allocated(v) => value = v,
                Item::Shift(d) => shift += d,
            }
            i += 1;
        }
        match step_of(t) {
            Some(s) => {
                let step = &mut out[s];
                if !seen[s] {
                    seen[s] = true;
                    *step = StepSweep {
                        start: before,
                        recorded: before,
                        predicted: before,
                    };
                }
                step.recorded = step.recorded.max(value);
                step.predicted = step.predicted.max(value + shift);
            }
            None => outside = Some(outside.map_or(value, |o| o.max(value))),
        }
    }
    Sweep {
        steps: out,
        outside,
    }
}
