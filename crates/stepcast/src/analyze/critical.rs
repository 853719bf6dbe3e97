//! The critical path of a step in terms of recorded events: which calls, kernels and host ops
//! the step's end waited on, and the stretches of time they account for.
//!
//! The path is walked on the replay (see `simulate::critical_path`), then expressed as what the
//! recording holds: every task on it, plus the host ops that ran in the host stretches between
//! path tasks (the untraced gaps of the graph are the time of those ops). An op counts when it
//! lies inside a host stretch of the path, so an enclosing op spanning the whole step (a
//! `forward` annotation, the step itself) does not claim the step.

use std::cmp::Reverse;

use rustc_hash::FxHashMap;
use stepcast_trace::{EventId, EventKind, NameId, Trace};

use super::host_time;
use super::mapping::{Mapping, Phase};
use crate::graph::{Graph, NO_STEP, TaskId, TaskKind, is_host_collective};
use crate::simulate::{CriticalPath, PathShare, ShareKind, Timeline, critical_path};
use crate::window::Window;

/// One stretch of the critical path on one lane, in recorded time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stretch {
    /// Graph lane index.
    pub lane: u32,
    pub start_ns: i64,
    pub end_ns: i64,
}

/// A step's critical path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepCriticalPath {
    pub path: CriticalPath,
    /// Recorded events on the path, in time order: the tasks' events and the host ops inside
    /// the path's host stretches.
    pub events: Vec<EventId>,
    /// The lane time the path covers, in recorded time, merged per lane.
    pub stretches: Vec<Stretch>,
}

/// The critical path of step `step` (an index into `window.steps`) on a replay `timeline`.
pub fn step_critical_path(
    trace: &Trace,
    window: &Window,
    timeline: &Timeline,
    step: usize,
) -> StepCriticalPath {
    let g = &window.graph;
    let tasks: Vec<TaskId> = (0..g.task_count())
        .filter(|&t| g.step[t] == step as u32 && g.step[t] != NO_STEP)
        .map(|t| TaskId(t as u32))
        .collect();
    let (_, last, start) = crate::replay::replayed_span(g, timeline, &window.steps[step], &tasks);
    let Some(last) = last else {
        return StepCriticalPath::default();
    };
    let path = critical_path(g, timeline, last, start);
    let stretches = stretches(g, &path, window.steps[step].start_ns);
    let events = events_on(trace, g, &path, &stretches);
    StepCriticalPath {
        path,
        events,
        stretches,
    }
}

/// Recorded lane time of the path: each task's span, and on a host lane the time from the
/// previous path task on the same lane (the untraced work between calls).
fn stretches(g: &Graph, path: &CriticalPath, step_start_ns: i64) -> Vec<Stretch> {
    let mut out: Vec<Stretch> = Vec::new();
    let mut previous_host_end: Vec<(u32, i64)> = Vec::new();
    for &task in &path.tasks {
        let t = task.index();
        let lane = g.lane[t];
        let mut start = g.rec_start_ns[t];
        if !g.kind[t].on_device() {
            let prev = previous_host_end
                .iter()
                .find(|(l, _)| *l == lane)
                .map(|&(_, end)| end);
            // The first host task of the path on its lane: the lane was busy since the step began.
            start = prev.unwrap_or(step_start_ns).min(start).max(step_start_ns);
            match previous_host_end.iter_mut().find(|(l, _)| *l == lane) {
                Some(slot) => slot.1 = g.rec_end_ns[t],
                None => previous_host_end.push((lane, g.rec_end_ns[t])),
            }
        }
        out.push(Stretch {
            lane,
            start_ns: start,
            end_ns: g.rec_end_ns[t],
        });
    }
    merge(out)
}

fn merge(mut stretches: Vec<Stretch>) -> Vec<Stretch> {
    // Equal stretches are identical: a stable, run-adaptive sort gives the same order.
    stretches.sort();
    let mut merged: Vec<Stretch> = Vec::with_capacity(stretches.len());
    for s in stretches {
        match merged.last_mut() {
            Some(last) if last.lane == s.lane && s.start_ns <= last.end_ns => {
                last.end_ns = last.end_ns.max(s.end_ns);
            }
            _ => merged.push(s),
        }
    }
    merged
}

/// The tasks' events, and the host ops lying within a host stretch of the path.
fn events_on(trace: &Trace, g: &Graph, path: &CriticalPath, stretches: &[Stretch]) -> Vec<EventId> {
    // (start, id): sorted without looking the events up again.
    let mut events: Vec<(i64, u32)> = path
        .tasks
        .iter()
        .map(|t| g.event[t.index()])
        .map(|e| (trace.events[e.index()].start_ns, e.0))
        .collect();
    for stretch in stretches {
        let lane = &g.lanes[stretch.lane as usize];
        if lane.kind != stepcast_trace::LaneKind::CpuThread {
            continue;
        }
        // Events are sorted by lane, then start: this lane's events are one range.
        let lo = trace.events.partition_point(|e| e.lane < lane.trace_lane);
        let hi = trace.events.partition_point(|e| e.lane <= lane.trace_lane);
        let first = lo + trace.events[lo..hi].partition_point(|e| e.start_ns < stretch.start_ns);
        for index in first..hi {
            let event = &trace.events[index];
            if event.start_ns >= stretch.end_ns {
                break;
            }
            let is_op = matches!(event.kind, EventKind::CpuOp | EventKind::UserAnnotation);
            if is_op && event.end_ns() <= stretch.end_ns {
                events.push((event.start_ns, index as u32));
            }
        }
    }
    // Sorted runs (the path in time order, each stretch's ops in time order): a stable sort
    // merges them; equal keys are the same event.
    events.sort();
    events.dedup();
    events.into_iter().map(|(_, id)| EventId(id)).collect()
}

/// What a stretch of the critical path was spent on, in the terms a user acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bound {
    /// Host work: Python, framework, launch calls, untraced host time.
    Cpu,
    /// Device kernels other than communication.
    GpuCompute,
    /// Device copies and memsets.
    MemoryCopies,
    /// Collectives, and waiting for their peers.
    Communication,
    /// Blocking calls waiting for the device, streams waiting on each other, launch latency.
    Synchronization,
}

impl Bound {
    pub const ALL: [Bound; 5] = [
        Bound::Cpu,
        Bound::GpuCompute,
        Bound::MemoryCopies,
        Bound::Communication,
        Bound::Synchronization,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Cpu => "cpu",
            Bound::GpuCompute => "gpu_compute",
            Bound::MemoryCopies => "memory_copies",
            Bound::Communication => "communication",
            Bound::Synchronization => "synchronization",
        }
    }
}

/// A named stretch of the critical path: consecutive shares of one task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedStretch {
    pub task: TaskId,
    pub bound: Bound,
    pub ns: i64,
}

/// What lies on a step's critical path, by category, phase, layer and op.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CriticalPathBreakdown {
    pub length_ns: i64,
    /// Every category, in [`Bound::ALL`] order; sums to `length_ns`.
    pub by_bound: Vec<(Bound, i64)>,
    /// Every phase, in `Phase::ALL` order; sums to `length_ns`.
    pub by_phase: Vec<(Phase, i64)>,
    /// Layers by time, largest first (`None`: no layer known); sums to `length_ns`.
    pub by_layer: Vec<(Option<NameId>, i64)>,
    /// Ops (by name) by time, largest first (`None`: no op around the task).
    pub by_op: Vec<(Option<NameId>, i64)>,
    /// The time of each op of [`CriticalPathBreakdown::by_op`] (same order) by phase and
    /// category.
    pub op_shares: Vec<OpShares>,
    /// The longest stretches, longest first (at most [`LONGEST`]).
    pub longest: Vec<NamedStretch>,
}

/// An op's time on the critical path, by phase and by category.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpShares {
    /// In `Phase::ALL` order.
    pub by_phase: [i64; Phase::ALL.len()],
    /// In [`Bound::ALL`] order.
    pub by_bound: [i64; Bound::ALL.len()],
}

/// Stretches named in [`CriticalPathBreakdown::longest`].
pub const LONGEST: usize = 5;

impl CriticalPathBreakdown {
    /// The category holding the most of the path, with its share of the path (0..1).
    pub fn bound(&self) -> Option<(Bound, f64)> {
        let &(bound, ns) = self
            .by_bound
            .iter()
            .max_by_key(|&&(b, ns)| (ns, std::cmp::Reverse(b)))?;
        (self.length_ns > 0).then(|| (bound, ns as f64 / self.length_ns as f64))
    }
}

/// What a share of the critical path was spent on.
pub fn share_bound(trace: &Trace, g: &Graph, share: &PathShare) -> Bound {
    let kind = g.kind[share.task.index()];
    // A collective a host thread runs (gloo's) is communication, its transfer and its wait
    // for peers alike, as a collective kernel is.
    if !kind.on_device() && is_host_collective(trace.name(g.name[share.task.index()])) {
        return Bound::Communication;
    }
    match (share.kind, kind) {
        (ShareKind::Host, _) => Bound::Cpu,
        (ShareKind::Device, TaskKind::Collective) | (ShareKind::Wait, TaskKind::Collective) => {
            Bound::Communication
        }
        (ShareKind::Device, TaskKind::Memcpy | TaskKind::Memset) => Bound::MemoryCopies,
        (ShareKind::Device, _) => Bound::GpuCompute,
        (ShareKind::Wait, _) => Bound::Synchronization,
    }
}

/// Breaks a step's critical path down by category, phase, layer and op.
pub fn breakdown(
    trace: &Trace,
    window: &Window,
    mapping: &Mapping,
    path: &CriticalPath,
) -> CriticalPathBreakdown {
    let g = &window.graph;
    let mut by_bound = [0i64; Bound::ALL.len()];
    let marker = host_time::marker_lane(trace);
    let mut by_phase = [0i64; Phase::ALL.len()];
    let mut by_layer: FxHashMap<Option<NameId>, i64> = FxHashMap::default();
    let mut by_op: FxHashMap<Option<NameId>, (i64, OpShares)> = FxHashMap::default();
    let mut stretches: Vec<NamedStretch> = Vec::new();
    // A task's shares follow each other: its op's name (an event far away in memory) is read
    // once.
    let mut op_of: Option<(TaskId, Option<NameId>)> = None;
    for share in &path.shares {
        let t = share.task.index();
        let bound = share_bound(trace, g, share);
        by_bound[bound as usize] += share.ns;
        let phase = mapping.phase[t];
        // A host share includes the untraced host time just before its task: the part inside
        // a data-loading range is data loading, not the next op's phase (`host_time`).
        let loading = if share.kind == ShareKind::Host {
            host_time::share_loading_ns(g, mapping, marker, share.task, share.ns)
        } else {
            0
        };
        by_phase[phase as usize] += share.ns - loading;
        by_phase[Phase::DataLoading as usize] += loading;
        *by_layer.entry(mapping.layer[t]).or_default() += share.ns;
        let op = match op_of {
            Some((task, op)) if task == share.task => op,
            _ => {
                let op = mapping.op_name(trace, share.task);
                op_of = Some((share.task, op));
                op
            }
        };
        let (op_ns, op_shares) = by_op.entry(op).or_default();
        *op_ns += share.ns;
        op_shares.by_phase[phase as usize] += share.ns - loading;
        op_shares.by_phase[Phase::DataLoading as usize] += loading;
        op_shares.by_bound[bound as usize] += share.ns;
        match stretches.last_mut() {
            Some(last) if last.task == share.task && last.bound == bound => last.ns += share.ns,
            _ => stretches.push(NamedStretch {
                task: share.task,
                bound,
                ns: share.ns,
            }),
        }
    }
    // Names are distinct: the order is total, whatever the map's.
    let mut by_layer: Vec<(Option<NameId>, i64)> = by_layer.into_iter().collect();
    by_layer.sort_unstable_by_key(|&(name, ns)| (Reverse(ns), name));
    let mut by_op: Vec<(Option<NameId>, (i64, OpShares))> = by_op.into_iter().collect();
    by_op.sort_unstable_by_key(|&(name, (ns, _))| (Reverse(ns), name));
    CriticalPathBreakdown {
        length_ns: path.length_ns(),
        by_bound: Bound::ALL.iter().copied().zip(by_bound).collect(),
        by_phase: Phase::ALL.iter().copied().zip(by_phase).collect(),
        by_layer,
        op_shares: by_op.iter().map(|&(_, (_, shares))| shares).collect(),
        by_op: by_op
            .into_iter()
            .map(|(name, (ns, _))| (name, ns))
            .collect(),
        longest: longest(stretches),
    }
}

/// The [`LONGEST`] longest stretches, longest first (ties: by task, then path order).
fn longest(stretches: Vec<NamedStretch>) -> Vec<NamedStretch> {
    let mut indexed: Vec<(usize, NamedStretch)> = stretches.into_iter().enumerate().collect();
    let key = |(i, s): &(usize, NamedStretch)| (Reverse(s.ns), s.task, *i);
    if indexed.len() > LONGEST {
        indexed.select_nth_unstable_by_key(LONGEST - 1, key);
        indexed.truncate(LONGEST);
    }
    indexed.sort_unstable_by_key(key);
    indexed.into_iter().map(|(_, s)| s).collect()
}
