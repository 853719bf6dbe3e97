//! The profiler's own cost on the host, read from the trace: what it recorded (every op and
//! runtime call; with `record_shapes` their input shapes, with `with_stack` a Python frame
//! event per call, with `profile_memory` every allocation) and how much host time that
//! recording adds. Every recorded host event costs the profiler an enter and an exit
//! callback, which lie in the recorded durations and gaps the replay keeps, so a host-bound
//! prediction carries them: a step measured without the profiler is shorter (the H100 pairs'
//! `mlp` steps by 30-40 %: `testdata/kineto/stepcast/h100-pairs/README.md`).
//!
//! The cost per event is measured in the trace itself: between two consecutive child calls
//! of one C++ op (`aten::linear` calling `aten::t` then `aten::addmm`) runs only the
//! dispatcher's few hundred nanoseconds and the profiler's exit and enter callbacks, so the
//! median such gap is the profiler's cost per recorded event, up to that dispatch (a floor
//! taken as none).
//!
//! One cost is not counted: with `record_shapes` the profiler holds every op's input tensors
//! until the profile is collected (pytorch/pytorch#133444), so within the traced steps no
//! tensor hands its memory back. A CUDA tensor's memory is the device's caching allocator's;
//! a CPU tensor's is the host's, and on a CPU-only run each op's output then lands in memory
//! the process has not touched lately (page faults on first touch, caches cold) inside the
//! op's recorded time, where an untraced step reuses the buffer just freed. How much depends
//! on how far the process's heap had grown before the profile, which no trace records:
//! `testdata/kineto/stepcast/cpu-profiler-cost/` measures it ([`ProfilerCost::retains_host_tensors`]).

use std::ops::RangeInclusive;

use stepcast_trace::{EventKind, LaneId, LaneKind, Trace};

use crate::Window;
use crate::analyze::host_time;

/// Fewer sibling gaps than this tell no cost per event.
const MIN_GAPS: usize = 50;

/// What the profiler recorded and what it cost the host, per steady step.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfilerCost {
    /// What it recorded beyond ops and runtime calls: `record_shapes`, `with_stack`,
    /// `profile_memory`.
    pub options: Vec<&'static str>,
    /// Host events it recorded on the step's process's threads per steady step (ops, calls,
    /// Python frames, annotations).
    pub events_per_step: i64,
    /// Its cost per recorded event: the median gap between consecutive child calls of one op.
    pub per_event_ns: i64,
    /// The share of the steady steps' time that cost takes (at most 0.9): the threads of the
    /// step's process taken as taking turns (the step's thread waits for the autograd
    /// engine's backward pass), so a thread running beside them makes this an overestimate.
    pub host_share: f64,
    /// `record_shapes` on a run with no device work: the profiler held the step's CPU
    /// tensors (their memory not reused within the traced steps), a cost inside the ops'
    /// recorded times that [`ProfilerCost::without`] does not take off.
    pub retains_host_tensors: bool,
}

impl ProfilerCost {
    /// The cost per steady step on the step's thread.
    pub fn per_step_ns(&self) -> i64 {
        self.events_per_step.saturating_mul(self.per_event_ns)
    }

    /// `step_ns` without the profiler, first order: its host time on the critical path
    /// (`host_path_ns`) less the profiler's share of it.
    pub fn without(&self, step_ns: i64, host_path_ns: i64) -> i64 {
        step_ns - (host_path_ns as f64 * self.host_share).round() as i64
    }
}

/// A prediction's baseline and predicted step less the profiler's counted cost
/// ([`ProfilerCost::without`] of each): what a run without the profiler would see, first
/// order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WithoutProfiler {
    /// The baseline step less the profiler's counted cost.
    pub baseline_ns: i64,
    /// The predicted step less the profiler's counted cost.
    pub predicted_ns: i64,
    /// `baseline_ns / predicted_ns`.
    pub speedup: f64,
    /// A cost the estimate cannot see remains in both steps
    /// ([`ProfilerCost::retains_host_tensors`]): each is then an upper side.
    pub upper_side: bool,
}

/// The profiler's cost over the `steady` steps of `window`, or `None` where the trace has no
/// step thread with host events (device-only traces, other formats' without ops) or too few
/// nested calls to measure it.
pub fn estimate(
    trace: &Trace,
    window: &Window,
    steady: &RangeInclusive<usize>,
) -> Option<ProfilerCost> {
    let marker = host_time::marker_lane(trace)?;
    let first = window.steps.get(*steady.start())?;
    let last = window.steps.get(*steady.end())?;
    if first.synthetic {
        return None;
    }
    let (from_ns, to_ns) = (first.start_ns, last.marker_end_ns.max(first.start_ns));
    let span_ns = to_ns - from_ns;
    if span_ns <= 0 {
        return None;
    }
    let host = |kind: EventKind| {
        matches!(
            kind,
            EventKind::CpuOp
                | EventKind::UserAnnotation
                | EventKind::PythonFunction
                | EventKind::RuntimeCall
                | EventKind::DriverCall
        )
    };
    // Every host thread of the step's process: the autograd engine's thread runs the
    // backward pass while the step's thread waits for it, and both are on the step's path.
    let pid = trace.lane(marker).pid;
    let mut count = 0i64;
    let mut gaps: Vec<i64> = Vec::new();
    let mut python_frames = false;
    for (l, info) in trace.lanes.iter().enumerate() {
        if info.pid != pid || info.kind != LaneKind::CpuThread {
            continue;
        }
        // Open events (end, kind, end of the last child seen): events are sorted by start.
        let mut open: Vec<(i64, EventKind, Option<i64>)> = Vec::new();
        for event in trace
            .lane_events(LaneId(l as u32))
            .iter()
            .filter(|e| host(e.kind))
        {
            python_frames |= event.kind == EventKind::PythonFunction;
            let (start, end) = (event.start_ns, event.start_ns + event.dur_ns.max(0));
            while open.last().is_some_and(|&(e, _, _)| e <= start) {
                open.pop();
            }
            let inside = start >= from_ns && start < to_ns;
            count += i64::from(inside);
            if let Some((_, parent, last_child)) = open.last_mut() {
                if inside
                    && *parent == EventKind::CpuOp
                    && let Some(previous_end) = *last_child
                    && start >= previous_end
                {
                    gaps.push(start - previous_end);
                }
                *last_child = Some(end);
            }
            open.push((end, event.kind, None));
        }
    }
    if gaps.len() < MIN_GAPS || count == 0 {
        return None;
    }
    gaps.sort_unstable();
    let per_event_ns = gaps[gaps.len() / 2];
    let steps = steady.clone().count().max(1) as i64;
    let mut options = Vec::new();
    let shapes = !trace.op_inputs.is_empty();
    if shapes {
        options.push("record_shapes");
    }
    if python_frames {
        options.push("with_stack");
    }
    if !trace.memory.is_empty() {
        options.push("profile_memory");
    }
    Some(ProfilerCost {
        options,
        events_per_step: count / steps,
        per_event_ns,
        host_share: (count.saturating_mul(per_event_ns) as f64 / span_ns as f64).min(0.9),
        retains_host_tensors: shapes && !window.graph.has_device_tasks(),
    })
}
