//! Where a step's time goes, as recorded: host and device activity (Daydream Fig. 6), why the
//! device was idle, communication against computation, time by phase and by layer, and the
//! kernels shorter than their launch call.
//!
//! # The span and the partitions
//!
//! A step spans from the start of its `ProfilerStep` range to the end of the last task it
//! launched (the replay's `measured_ns`: `replay::measured_span`); the whole window spans its
//! first task's start to its last task's end. Every breakdown is a partition of that span in
//! integer nanoseconds, so its parts sum to the span exactly. The breakdowns describe what the
//! machine did during the span: when the device runs behind the host, a step's span overlaps
//! the next step's host work, and that time appears in both steps.
//!
//! - **Host busy**: some host thread is inside a top-level `cpu_op` or runtime/driver call,
//!   and not waiting inside a synchronizing call (the part of a blocking call that the graph
//!   explains by the device work it waited for: `[rec_start, rec_end - dur)` of a call whose
//!   own cost `dur` the graph shortened). Untraced time between ops (Python, the data loader)
//!   is not busy. All threads count, not only the step marker's: the autograd engine runs the
//!   backward pass on its own thread while the main thread waits.
//! - **Device busy**: some kernel, copy or memset runs on any stream of any device.
//! - [`HostDevice`]: `cpu_only + gpu_only + overlap + idle = span`.
//! - [`DeviceIdle`] splits the time the device is idle (`cpu_only + idle`) by what the device
//!   task that ends the idle stretch was waiting for: its launch (the host had not launched it
//!   when the device went idle; [`DeviceIdle::synchronization_ns`] when the launching thread sat
//!   in a synchronizing call during the stretch, so the host had drained the queue itself),
//!   its peers (a collective launched in time), another stream (an event wait or an inferred
//!   stream wait), or nothing recorded. Idle time before the window's first device task and
//!   after its last counts as waiting on the host.
//! - [`CommunicationOverlap`]: collectives (NCCL/RCCL kernels) against computation kernels
//!   (kernels that are not collectives; copies and memsets are neither).
//! - [`ByPhase`] and [`ByLayer`] on the device: each moment of device-busy time is given to one
//!   running task: a computation kernel before a collective before a copy or memset (so a
//!   collective's time counts where it is exposed, as in [`CommunicationOverlap`]),
//!   then the one that started first; its phase and layer (from the [`Mapping`]) take the time.
//!   The host's [`ByPhase`] and [`ByLayer`] are the step's host time as `host_time` defines it
//!   (the one definition `whatif` and the critical path use too): the step marker thread's
//!   host tasks (less their synchronization waits) and untraced gaps, from the step's start to
//!   the next step's, time inside data-loading ranges as data loading; "idle" is the rest
//!   (blocked in a sync, or waiting on another thread).
//! - [`LaunchBound`]: kernels of the step whose recorded duration is shorter than the recorded
//!   duration of the call that launched them (not a time partition).
//!
//! Everything is computed once per window with sweeps over sorted arrays; each step then
//! reads its span out of the prefix sums with binary searches.

use rustc_hash::FxHashMap;
use stepcast_trace::{EventKind, LaneKind, NameId, Trace};

use super::host_time;
use super::mapping::{Mapping, Phase};
use crate::Window;
use crate::graph::{EdgeKind, Graph, TaskId, TaskKind};
use crate::replay::{measured_span, tasks_by_step};

/// Host and device activity during a span (Daydream Fig. 6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostDevice {
    /// The host is busy and the device idle.
    pub cpu_only_ns: i64,
    /// The device is busy and the host is not.
    pub gpu_only_ns: i64,
    /// Both are busy.
    pub overlap_ns: i64,
    /// Neither is.
    pub idle_ns: i64,
}

impl HostDevice {
    pub fn total_ns(&self) -> i64 {
        self.cpu_only_ns + self.gpu_only_ns + self.overlap_ns + self.idle_ns
    }

    /// Time the device is idle (`cpu_only + idle`).
    pub fn device_idle_ns(&self) -> i64 {
        self.cpu_only_ns + self.idle_ns
    }
}

/// Why the device was idle, by what the task ending each idle stretch waited for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceIdle {
    /// Its launch call had not happened when the device went idle: host-bound.
    pub host_launch_ns: i64,
    /// Launched late, and the launching thread was inside a synchronizing call during the idle
    /// stretch: the host had waited for the device to drain.
    pub synchronization_ns: i64,
    /// A collective launched in time, waiting for its peers.
    pub communication_ns: i64,
    /// Launched in time, held by an event wait (recorded or inferred) on another stream.
    pub other_stream_ns: i64,
    /// Launched in time with nothing recorded to hold it (dispatch latency), or launched
    /// before the window opened.
    pub unexplained_ns: i64,
}

impl DeviceIdle {
    pub fn total_ns(&self) -> i64 {
        self.host_launch_ns
            + self.synchronization_ns
            + self.communication_ns
            + self.other_stream_ns
            + self.unexplained_ns
    }
}

/// Collectives against computation kernels during a span.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommunicationOverlap {
    /// Computation runs, no collective.
    pub compute_only_ns: i64,
    /// A collective runs alongside computation.
    pub overlapped_ns: i64,
    /// A collective runs with no computation alongside: exposed communication.
    pub exposed_ns: i64,
    /// Neither runs (the device idles, or only copies and memsets run).
    pub neither_ns: i64,
}

impl CommunicationOverlap {
    pub fn total_ns(&self) -> i64 {
        self.compute_only_ns + self.overlapped_ns + self.exposed_ns + self.neither_ns
    }

    /// Share of collective time that overlaps computation (0 without collectives).
    pub fn overlap_fraction(&self) -> f64 {
        let communication = self.overlapped_ns + self.exposed_ns;
        if communication == 0 {
            0.0
        } else {
            self.overlapped_ns as f64 / communication as f64
        }
    }
}

/// Busy time by phase, every phase listed in [`Phase::ALL`] order, plus the time nothing ran.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ByPhase {
    pub busy: Vec<(Phase, i64)>,
    pub idle_ns: i64,
}

impl ByPhase {
    pub fn total_ns(&self) -> i64 {
        self.busy.iter().map(|&(_, ns)| ns).sum::<i64>() + self.idle_ns
    }

    pub fn get(&self, phase: Phase) -> i64 {
        self.busy
            .iter()
            .find(|&&(p, _)| p == phase)
            .map_or(0, |&(_, ns)| ns)
    }
}

/// Device-busy time by layer (longest first, then by name; `None`: no layer known), plus the
/// time the device was idle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ByLayer {
    pub busy: Vec<(Option<NameId>, i64)>,
    pub idle_ns: i64,
}

impl ByLayer {
    pub fn total_ns(&self) -> i64 {
        self.busy.iter().map(|&(_, ns)| ns).sum::<i64>() + self.idle_ns
    }
}

/// Kernels shorter than the call that launched them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchBound {
    /// Kernels (computation and collectives) launched in the span's step(s) by a recorded call.
    pub kernels: u64,
    /// Of those, the ones whose duration is shorter than their launch call's.
    pub launch_bound: u64,
    /// Device time of the launch-bound kernels.
    pub kernel_ns: i64,
    /// Host time of their launch calls.
    pub launch_call_ns: i64,
}

/// The breakdowns of one step, or of the whole window.
#[derive(Clone, Debug, PartialEq)]
pub struct Breakdown {
    /// `N` of `ProfilerStep#N`; `None` for the whole window.
    pub step: Option<u64>,
    pub start_ns: i64,
    pub end_ns: i64,
    pub host_device: HostDevice,
    /// Sums to `host_device.device_idle_ns()`.
    pub device_idle: DeviceIdle,
    pub communication: CommunicationOverlap,
    pub device_by_phase: ByPhase,
    pub device_by_layer: ByLayer,
    pub host_by_phase: ByPhase,
    /// Host-busy time by layer (as [`Breakdown::host_by_phase`] gives it to host tasks); its
    /// `idle_ns` is the host's idle time, [`ByPhase::idle_ns`] of `host_by_phase`.
    pub host_by_layer: ByLayer,
    pub launch_bound: LaunchBound,
}

impl Breakdown {
    pub fn span_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }
}

/// The breakdowns of every step and of the whole window.
#[derive(Clone, Debug, PartialEq)]
pub struct Breakdowns {
    /// One per step of the window, in step order.
    pub steps: Vec<Breakdown>,
    /// From the window's first task's start to its last task's end.
    pub window: Breakdown,
}

/// The breakdowns of every step of the window and of the whole window.
pub fn breakdowns(trace: &Trace, window: &Window, mapping: &Mapping) -> Breakdowns {
    let timelines = Timelines::new(trace, &window.graph, mapping);
    Breakdowns {
        steps: steps_of(&timelines, window, mapping),
        window: window_of(&timelines, window, mapping),
    }
}

/// The breakdowns of every step of the window, in step order.
pub fn step_breakdowns(trace: &Trace, window: &Window, mapping: &Mapping) -> Vec<Breakdown> {
    steps_of(
        &Timelines::new(trace, &window.graph, mapping),
        window,
        mapping,
    )
}

/// The breakdowns of the whole window: from its first task's start to its last task's end.
pub fn window_breakdown(trace: &Trace, window: &Window, mapping: &Mapping) -> Breakdown {
    window_of(
        &Timelines::new(trace, &window.graph, mapping),
        window,
        mapping,
    )
}

fn steps_of(timelines: &Timelines, window: &Window, mapping: &Mapping) -> Vec<Breakdown> {
    let graph = &window.graph;
    let by_step = tasks_by_step(graph, window.steps.len());
    window
        .steps
        .iter()
        .zip(&by_step)
        .enumerate()
        .map(|(i, (step, tasks))| {
            let start = step.start_ns;
            let end = start + measured_span(graph, step, tasks);
            // The marker thread's time belongs to the step it runs in: up to the next step's
            // start (`host_time`), even where this step's span (its device work) runs later.
            let host_end = window.steps.get(i + 1).map_or(end, |next| next.start_ns);
            timelines.breakdown(Some(step.number), (start, end), host_end, tasks, mapping)
        })
        .collect()
}

fn window_of(timelines: &Timelines, window: &Window, mapping: &Mapping) -> Breakdown {
    let graph = &window.graph;
    let start = graph.rec_start_ns.iter().copied().min().unwrap_or(0);
    let end = graph.rec_end_ns.iter().copied().max().unwrap_or(start);
    let tasks: Vec<TaskId> = (0..graph.task_count() as u32).map(TaskId).collect();
    timelines.breakdown(None, (start, end), end, &tasks, mapping)
}

/// Appends `interval` to `intervals`, or extends the last one (at index `run` or later) when
/// `interval` starts within it: the union is the same, with fewer intervals.
fn push_merged(intervals: &mut Vec<(i64, i64)>, run: usize, interval: (i64, i64)) {
    let (s, e) = interval;
    if e <= s {
        return;
    }
    let in_run = intervals.len() > run;
    match intervals.last_mut() {
        Some(last) if in_run && last.0 <= s && s <= last.1 => {
            last.1 = last.1.max(e);
        }
        _ => intervals.push(interval),
    }
}

/// Sorted, disjoint intervals with prefix sums: the covered length of any span in O(log n).
#[derive(Default)]
struct Cover {
    start: Vec<i64>,
    end: Vec<i64>,
    /// `prefix[i]`: total length of intervals `0..i`.
    prefix: Vec<i64>,
}

impl Cover {
    /// From intervals in any order (empty ones ignored); overlapping and touching ones merge.
    fn from_unsorted(mut intervals: Vec<(i64, i64)>) -> Cover {
        intervals.retain(|&(s, e)| e > s);
        // Callers push lane by lane, each lane in start order: a merge of sorted runs (equal
        // intervals are identical, so a stable sort gives the unstable order).
        intervals.sort();
        let mut cover = Cover::default();
        for (s, e) in intervals {
            match cover.end.last_mut() {
                Some(last) if s <= *last => *last = (*last).max(e),
                _ => {
                    cover.start.push(s);
                    cover.end.push(e);
                }
            }
        }
        cover.finish()
    }

    fn finish(mut self) -> Cover {
        self.prefix = Vec::with_capacity(self.start.len() + 1);
        self.prefix.push(0);
        let mut total = 0;
        for (s, e) in self.start.iter().zip(&self.end) {
            total += e - s;
            self.prefix.push(total);
        }
        self
    }

    fn len(&self) -> usize {
        self.start.len()
    }

    /// Covered length within `[a, b)`.
    fn measure(&self, a: i64, b: i64) -> i64 {
        if b <= a {
            return 0;
        }
        let first = self.end.partition_point(|&e| e <= a);
        let last = self.start.partition_point(|&s| s < b);
        if first >= last {
            return 0;
        }
        let whole = self.prefix[last] - self.prefix[first];
        whole - (a - self.start[first]).max(0) - (self.end[last - 1] - b).max(0)
    }

    /// The intersection of two covers (two-pointer sweep).
    fn intersect(&self, other: &Cover) -> Cover {
        let mut out = Cover::default();
        let (mut i, mut j) = (0, 0);
        while i < self.len() && j < other.len() {
            let s = self.start[i].max(other.start[j]);
            let e = self.end[i].min(other.end[j]);
            if s < e {
                out.start.push(s);
                out.end.push(e);
            }
            if self.end[i] < other.end[j] {
                i += 1;
            } else {
                j += 1;
            }
        }
        out.finish()
    }

    /// `self` minus `other`.
    fn subtract(&self, other: &Cover) -> Cover {
        let mut out = Cover::default();
        let mut j = 0;
        for i in 0..self.len() {
            let (mut s, e) = (self.start[i], self.end[i]);
            while j < other.len() && other.end[j] <= s {
                j += 1;
            }
            let mut k = j;
            while k < other.len() && other.start[k] < e {
                if other.start[k] > s {
                    out.start.push(s);
                    out.end.push(other.start[k]);
                }
                s = s.max(other.end[k]);
                k += 1;
            }
            if s < e {
                out.start.push(s);
                out.end.push(e);
            }
        }
        out.finish()
    }
}

/// A piece of busy time given to one task.
#[derive(Clone, Copy, Debug)]
struct Segment {
    start: i64,
    end: i64,
    task: TaskId,
}

/// A task's claim on the moments it runs: the smallest rank takes them. By class first (a
/// computation kernel 0, a collective 1, a copy or memset 2; host tasks are all 0), then the
/// earliest start, then the lowest id.
type Rank = (u8, i64, TaskId);

/// A task's busy interval `[start, end)` and its rank.
type Claim = (i64, i64, Rank);

/// Busy time cut into segments, each given to the running task of smallest rank.
/// O(n log n).
fn attribute(mut tasks: Vec<Claim>) -> Vec<Segment> {
    tasks.retain(|&(s, e, _)| e > s);
    // Tasks come lane by lane, each lane in start order: a merge of sorted runs (the keys are
    // distinct, so a stable sort gives the unstable order).
    tasks.sort_by_key(|&(s, _, rank)| (s, rank));
    let mut segments: Vec<Segment> = Vec::new();
    // The running tasks and their ends, by rank: a lane runs one task at a time (a stream a
    // few), so the set stays small and a sorted vector beats a tree and a heap.
    let mut active: Vec<(Rank, i64)> = Vec::new();
    let mut next = 0;
    let mut now = i64::MIN;
    loop {
        // The next moment the running set changes.
        let next_start = tasks.get(next).map(|t| t.0);
        let next_end = active.iter().map(|&(_, e)| e).min();
        let at = match (next_start, next_end) {
            (None, None) => break,
            (Some(s), None) => s,
            (None, Some(e)) => e,
            (Some(s), Some(e)) => s.min(e),
        };
        if let (Some(&((_, _, task), _)), true) = (active.first(), at > now) {
            match segments.last_mut() {
                Some(last) if last.task == task && last.end == now => last.end = at,
                _ => segments.push(Segment {
                    start: now,
                    end: at,
                    task,
                }),
            }
        }
        now = at;
        active.retain(|&(_, e)| e > now);
        while let Some(&(s, e, rank)) = tasks.get(next) {
            if s > now {
                break;
            }
            let i = active.partition_point(|&(r, _)| r < rank);
            active.insert(i, (rank, e));
            next += 1;
        }
    }
    segments
}

/// Segments with prefix sums for span queries.
struct SegmentIndex {
    segments: Vec<Segment>,
}

impl SegmentIndex {
    /// Calls `f(task, ns)` for each segment's part within `[a, b)`.
    fn each_within(&self, a: i64, b: i64, mut f: impl FnMut(TaskId, i64)) {
        let first = self.segments.partition_point(|s| s.end <= a);
        for segment in &self.segments[first..] {
            if segment.start >= b {
                break;
            }
            let ns = segment.end.min(b) - segment.start.max(a);
            if ns > 0 {
                f(segment.task, ns);
            }
        }
    }
}

/// Why the device sat idle before a busy stretch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdleCause {
    HostLaunch,
    Synchronization,
    Communication,
    OtherStream,
    Unexplained,
}

/// The window's timelines, computed once.
struct Timelines<'a> {
    trace: &'a Trace,
    graph: &'a Graph,
    host: Cover,
    device: Cover,
    host_and_device: Cover,
    compute: Cover,
    communication: Cover,
    compute_and_communication: Cover,
    device_segments: SegmentIndex,
    /// The marker thread's host time (own cost and untraced gaps), each piece with its phase
    /// (`analyze::host_time`), sorted by start, disjoint.
    host_pieces: Vec<(i64, i64, TaskId, Phase)>,
    /// The cause of the idle stretch before `device` interval `i`; one more for after the last.
    idle_causes: Vec<IdleCause>,
}

/// A blocking call's wait, `[rec_start, rec_end - own cost)`, when the graph explains one.
fn wait_of(graph: &Graph, t: usize) -> Option<(i64, i64)> {
    let wait_end = graph.rec_end_ns[t] - graph.dur_ns[t];
    (graph.kind[t] == TaskKind::ApiCall && wait_end > graph.rec_start_ns[t])
        .then_some((graph.rec_start_ns[t], wait_end))
}

impl<'a> Timelines<'a> {
    fn new(trace: &'a Trace, graph: &'a Graph, mapping: &Mapping) -> Self {
        let n = graph.task_count();
        // Host: top-level ops and calls on every thread, less the waits of blocking calls.
        let mut busy = Vec::new();
        let mut waits = Vec::new();
        for lane in &graph.lanes {
            if lane.kind != LaneKind::CpuThread {
                continue;
            }
            // A lane's events and tasks come in start order: nested and back-to-back ones are
            // merged as they come, so that few intervals are left to sort.
            let run = busy.len();
            for event in trace.lane_events(lane.trace_lane) {
                if matches!(event.kind, EventKind::CpuOp) || event.kind.is_api_call() {
                    push_merged(&mut busy, run, (event.start_ns, event.end_ns()));
                }
            }
            let run = waits.len();
            let first = lane.first_task as usize;
            for t in first..first + lane.task_count as usize {
                if let Some(wait) = wait_of(graph, t) {
                    push_merged(&mut waits, run, wait);
                }
            }
        }
        let host = Cover::from_unsorted(busy).subtract(&Cover::from_unsorted(waits));

        let mut device_tasks = Vec::new();
        let mut compute = Vec::new();
        let mut communication = Vec::new();
        for t in 0..n {
            let (start, end) = (graph.rec_start_ns[t], graph.rec_end_ns[t]);
            let kind = graph.kind[t];
            let task = TaskId(t as u32);
            match kind {
                TaskKind::ApiCall | TaskKind::CpuOp => {}
                TaskKind::Kernel => {
                    compute.push((start, end));
                    device_tasks.push((start, end, (0, start, task)));
                }
                TaskKind::Collective => {
                    communication.push((start, end));
                    device_tasks.push((start, end, (1, start, task)));
                }
                TaskKind::Memcpy | TaskKind::Memset => {
                    device_tasks.push((start, end, (2, start, task)));
                }
            }
        }
        let device = Cover::from_unsorted(device_tasks.iter().map(|t| (t.0, t.1)).collect());
        let compute = Cover::from_unsorted(compute);
        let communication = Cover::from_unsorted(communication);
        let device_segments = SegmentIndex {
            segments: attribute(device_tasks),
        };
        let marker = host_time::marker_lane(trace);
        let mut host_pieces = Vec::new();
        for t in 0..n {
            if !graph.kind[t].on_device() && host_time::on_marker_lane(graph, marker, t) {
                host_time::recorded_pieces(graph, mapping, t, |s, e, phase| {
                    host_pieces.push((s, e, TaskId(t as u32), phase));
                });
            }
        }
        // The untraced time before the thread's first task, from the first step's start: no
        // task's gap holds it (the first step's batch is loaded there).
        let first_task = (0..n)
            .find(|&t| !graph.kind[t].on_device() && host_time::on_marker_lane(graph, marker, t));
        if let (Some(t), Some(step)) = (first_task, trace.steps.first()) {
            host_time::leading_pieces(graph, mapping, t, step.start_ns, |s, e, phase| {
                host_pieces.push((s, e, TaskId(t as u32), phase));
            });
        }
        // One thread: sorted by start, the pieces are disjoint (a gap ends where the next
        // task starts).
        host_pieces.sort_unstable_by_key(|p| p.0);
        let mut timelines = Timelines {
            trace,
            graph,
            host_and_device: host.intersect(&device),
            compute_and_communication: compute.intersect(&communication),
            host,
            device,
            compute,
            communication,
            device_segments,
            host_pieces,
            idle_causes: Vec::new(),
        };
        timelines.idle_causes = timelines.idle_causes();
        timelines
    }

    /// The cause of each idle stretch of the device: before each busy interval, and after the
    /// last one.
    fn idle_causes(&self) -> Vec<IdleCause> {
        let g = self.graph;
        // Blocking calls by host lane, in lane order (their ends increase along a lane).
        let mut blocking: Vec<Vec<(i64, i64, TaskId)>> = vec![Vec::new(); g.lanes.len()];
        for t in 0..g.task_count() {
            if wait_of(g, t).is_some() {
                blocking[g.lane[t] as usize].push((
                    g.rec_start_ns[t],
                    g.rec_end_ns[t],
                    TaskId(t as u32),
                ));
            }
        }
        // The task opening each busy interval: the segment at its start.
        let segments = &self.device_segments.segments;
        let mut causes = Vec::with_capacity(self.device.len() + 1);
        // Busy intervals and segments are both in time order: one pointer walks the segments.
        let mut k = 0;
        for i in 0..self.device.len() {
            let start = self.device.start[i];
            while k < segments.len() && segments[k].start < start {
                k += 1;
            }
            let cause = match (i, segments.get(k)) {
                (0, _) | (_, None) => IdleCause::HostLaunch,
                (_, Some(segment)) => {
                    self.idle_cause(self.device.end[i - 1], segment.task, &blocking)
                }
            };
            causes.push(cause);
        }
        causes.push(IdleCause::HostLaunch);
        causes
    }

    /// Why `next` did not start when the device went idle at `idle_from`.
    fn idle_cause(
        &self,
        idle_from: i64,
        next: TaskId,
        blocking: &[Vec<(i64, i64, TaskId)>],
    ) -> IdleCause {
        let g = self.graph;
        let mut launch = None;
        let mut waits_on_stream = false;
        for e in g.preds(next) {
            match g.pred_kind[e] {
                EdgeKind::Launch => launch = Some((g.pred[e], g.pred_lag_ns[e])),
                EdgeKind::EventWait | EdgeKind::StreamWaitCall | EdgeKind::InferredStreamWait => {
                    waits_on_stream = true
                }
                _ => {}
            }
        }
        if let Some((call, lag)) = launch {
            let ready = g.rec_start_ns[call.index()] + lag;
            if ready > idle_from {
                let calls = blocking
                    .get(g.lane[call.index()] as usize)
                    .map_or(&[][..], Vec::as_slice);
                let k = calls.partition_point(|&(_, end, _)| end <= idle_from);
                let synchronized = calls[k..]
                    .iter()
                    .take(2)
                    .any(|&(start, _, task)| task != call && start < ready);
                return if synchronized {
                    IdleCause::Synchronization
                } else {
                    IdleCause::HostLaunch
                };
            }
        }
        if g.kind[next.index()] == TaskKind::Collective {
            IdleCause::Communication
        } else if waits_on_stream {
            IdleCause::OtherStream
        } else {
            IdleCause::Unexplained
        }
    }

    fn breakdown(
        &self,
        step: Option<u64>,
        (start, end): (i64, i64),
        host_end: i64,
        tasks: &[TaskId],
        mapping: &Mapping,
    ) -> Breakdown {
        let span = end - start;
        let host = self.host.measure(start, end);
        let device = self.device.measure(start, end);
        let both = self.host_and_device.measure(start, end);
        let host_device = HostDevice {
            cpu_only_ns: host - both,
            gpu_only_ns: device - both,
            overlap_ns: both,
            idle_ns: span - host - device + both,
        };

        let compute = self.compute.measure(start, end);
        let communication = self.communication.measure(start, end);
        let overlapped = self.compute_and_communication.measure(start, end);
        let communication = CommunicationOverlap {
            compute_only_ns: compute - overlapped,
            overlapped_ns: overlapped,
            exposed_ns: communication - overlapped,
            neither_ns: span - compute - communication + overlapped,
        };

        let phase_of = |t: TaskId| {
            mapping
                .phase
                .get(t.index())
                .copied()
                .unwrap_or(Phase::Other)
        };
        let mut device_phase = [0i64; Phase::ALL.len()];
        let mut layers: FxHashMap<Option<NameId>, i64> = FxHashMap::default();
        self.device_segments.each_within(start, end, |t, ns| {
            device_phase[phase_index(phase_of(t))] += ns;
            let layer = mapping.layer.get(t.index()).copied().flatten();
            *layers.entry(layer).or_default() += ns;
        });
        let mut host_phase = [0i64; Phase::ALL.len()];
        let mut host_layers: FxHashMap<Option<NameId>, i64> = FxHashMap::default();
        let first = self.host_pieces.partition_point(|p| p.1 <= start);
        let mut covered_until = start;
        let end_host = end.min(host_end);
        for &(s, e, t, phase) in &self.host_pieces[first..] {
            let end = end_host;
            if s >= end {
                break;
            }
            // Clipped to the step, and to what earlier pieces left (disjoint by construction;
            // this keeps the partition exact even if a malformed lane overlaps).
            let ns = e.min(end) - s.max(covered_until);
            covered_until = covered_until.max(e.min(end));
            if ns <= 0 {
                continue;
            }
            host_phase[phase_index(phase)] += ns;
            // Data-loading time outside the task's own op belongs to no layer of it.
            let layer = if phase == Phase::DataLoading && phase_of(t) != Phase::DataLoading {
                None
            } else {
                mapping.layer.get(t.index()).copied().flatten()
            };
            *host_layers.entry(layer).or_default() += ns;
        }
        let by_phase = |busy: [i64; Phase::ALL.len()]| ByPhase {
            busy: Phase::ALL.iter().copied().zip(busy).collect(),
            idle_ns: span - busy.iter().sum::<i64>(),
        };
        let largest_first = |layers: FxHashMap<Option<NameId>, i64>| {
            let mut layers: Vec<(Option<NameId>, i64)> = layers.into_iter().collect();
            layers.sort_unstable_by(|a, b| {
                b.1.cmp(&a.1)
                    .then_with(|| a.0.is_none().cmp(&b.0.is_none()))
                    .then_with(|| {
                        let name = |l: Option<NameId>| l.map_or("", |n| self.trace.name(n));
                        name(a.0).cmp(name(b.0))
                    })
            });
            layers
        };
        let host_busy: i64 = host_phase.iter().sum();

        Breakdown {
            step,
            start_ns: start,
            end_ns: end,
            host_device,
            device_idle: self.device_idle(start, end),
            communication,
            device_by_phase: by_phase(device_phase),
            device_by_layer: ByLayer {
                busy: largest_first(layers),
                idle_ns: span - device,
            },
            host_by_phase: by_phase(host_phase),
            host_by_layer: ByLayer {
                busy: largest_first(host_layers),
                idle_ns: span - host_busy,
            },
            launch_bound: self.launch_bound(tasks),
        }
    }

    /// Idle stretches of the device within `[a, b)`, by cause.
    fn device_idle(&self, a: i64, b: i64) -> DeviceIdle {
        let mut idle = DeviceIdle::default();
        if b <= a {
            return idle;
        }
        let d = &self.device;
        // Idle stretch `i` lies before busy interval `i` (or after the last one).
        let mut i = d.end.partition_point(|&e| e <= a);
        loop {
            let from = if i == 0 { i64::MIN } else { d.end[i - 1] };
            let to = d.start.get(i).copied().unwrap_or(i64::MAX);
            let ns = to.min(b) - from.max(a);
            if ns > 0 {
                let slot = match self.idle_causes[i] {
                    IdleCause::HostLaunch => &mut idle.host_launch_ns,
                    IdleCause::Synchronization => &mut idle.synchronization_ns,
                    IdleCause::Communication => &mut idle.communication_ns,
                    IdleCause::OtherStream => &mut idle.other_stream_ns,
                    IdleCause::Unexplained => &mut idle.unexplained_ns,
                };
                *slot += ns;
            }
            if to >= b || i >= d.len() {
                break;
            }
            i += 1;
        }
        idle
    }

    fn launch_bound(&self, tasks: &[TaskId]) -> LaunchBound {
        let g = self.graph;
        let mut out = LaunchBound::default();
        for &t in tasks {
            if !matches!(g.kind[t.index()], TaskKind::Kernel | TaskKind::Collective) {
                continue;
            }
            let Some(call) = g
                .preds(t)
                .find(|&e| g.pred_kind[e] == EdgeKind::Launch)
                .map(|e| g.pred[e])
            else {
                continue;
            };
            out.kernels += 1;
            let kernel_ns = g.rec_end_ns[t.index()] - g.rec_start_ns[t.index()];
            let call_ns = g.rec_end_ns[call.index()] - g.rec_start_ns[call.index()];
            if kernel_ns < call_ns {
                out.launch_bound += 1;
                out.kernel_ns += kernel_ns;
                out.launch_call_ns += call_ns;
            }
        }
        out
    }
}

fn phase_index(phase: Phase) -> usize {
    Phase::ALL
        .iter()
        .position(|&p| p == phase)
        .unwrap_or(Phase::ALL.len() - 1)
}
