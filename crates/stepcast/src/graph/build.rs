//! Trace → [`Window`]: tasks, edges and steps of the whole profiled window.
//!
//! The window is one graph, not a graph per step: the device often runs tens of milliseconds
//! behind the host, so a step's kernels overlap the next step's host work, and only a replay
//! of the whole window reproduces the backlog each step inherits.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use stepcast_trace::{EventId, EventKind, LaneKind, SyncKind, Trace};

use super::calls::{CallClass, classify_call};
use super::{EdgeKind, Graph, GraphLane, NO_STEP, NO_TIME, TaskId, TaskKind};
use crate::simulate::{RecordedOrder, SimOptions, simulate};
use crate::window::{BuildReport, Step, Window};

/// Knobs of graph construction. The defaults are what the accuracy figures are measured with.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// Add edges inferred from timing where no recorded cause explains a wait.
    pub infer_edges: bool,
    /// A device task whose recorded start is later than everything recorded that gates it, by
    /// more than this, has an unexplained wait.
    pub unexplained_device_wait_ns: i64,
    /// An inferred stream wait needs a task on another stream ending at most this long before.
    pub stream_wait_window_ns: i64,
    /// A task may be held back by a kernel on another stream draining its last wave (the device
    /// is full) if that kernel ends at most this long after the task starts.
    pub drain_window_ns: i64,
    /// A blocking call returning later than its recorded causes explain, by more than this, has
    /// an unexplained wait.
    pub unexplained_host_wait_ns: i64,
    /// An inferred host sync needs a device task ending at most this long before the call returns.
    pub host_wake_window_ns: i64,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            infer_edges: true,
            unexplained_device_wait_ns: 5_000,
            stream_wait_window_ns: 5_000,
            drain_window_ns: 200_000,
            unexplained_host_wait_ns: 20_000,
            host_wake_window_ns: 20_000,
        }
    }
}

/// Timing tolerance when checking a recorded cause against recorded times (clock granularity
/// of Kineto is 1 µs in older traces).
const TOLERANCE_NS: i64 = 2_000;

#[derive(Clone, Copy)]
struct PendingEdge {
    from: TaskId,
    to: TaskId,
    kind: EdgeKind,
    lag_ns: i64,
}

/// Builds the dependency graph of the whole window of `trace`.
pub fn build(trace: &Trace, options: &BuildOptions) -> Window {
    let mut b = Builder {
        trace,
        options,
        graph: Graph::default(),
        report: BuildReport::default(),
    };
    b.tasks();
    let calls = b.call_index();
    let launcher = b.launch_edges(&calls);
    let steps = b.assign_steps(&launcher);
    let mut edges = launcher.edges;
    let device_lanes = DeviceLanes::new(trace, &b.graph, &launcher.call_of);
    b.sync_edges(&calls, &launcher.call_of, &device_lanes, &mut edges);
    b.collectives(&steps, &mut edges);
    if options.infer_edges {
        let candidates = b.inferred_edges(&device_lanes, &launcher.call_of, &steps, &edges);
        let needed = b.needed(candidates, &edges);
        b.report.inferred_edges = needed.len() as u64;
        edges.extend(needed);
    }
    b.finish(edges, steps)
}

struct Builder<'t> {
    trace: &'t Trace,
    options: &'t BuildOptions,
    graph: Graph,
    report: BuildReport,
}

struct Launches {
    edges: Vec<PendingEdge>,
    /// For each task: the call that launched it (device tasks) or `NONE`.
    call_of: Vec<TaskId>,
}

impl Builder<'_> {
    fn push_task(&mut self, kind: TaskKind, lane: u32, event_index: usize) {
        let event = &self.trace.events[event_index];
        let g = &mut self.graph;
        g.kind.push(kind);
        g.lane.push(lane);
        g.name.push(event.name);
        g.event.push(EventId(event_index as u32));
        g.dur_ns.push(event.dur_ns);
        g.gap_ns.push(0);
        g.rec_start_ns.push(event.start_ns);
        g.rec_end_ns.push(event.end_ns());
        g.step.push(NO_STEP);
        g.not_before_ns.push(NO_TIME);
        g.peer_ready_ns.push(NO_TIME);
    }

    /// One task per outermost API call on each host thread (or per outermost op on a thread
    /// that makes no calls), and one per device kernel, copy and memset.
    fn tasks(&mut self) {
        let trace = self.trace;
        let mut lane_start = 0usize;
        for (lane_index, lane) in trace.lanes.iter().enumerate() {
            let lane_end = lane_start
                + trace.events[lane_start..].partition_point(|e| e.lane.index() == lane_index);
            let events = lane_start..lane_end;
            let first_task = self.graph.task_count() as u32;
            match lane.kind {
                LaneKind::CpuThread => {
                    let has_calls = trace.events[events.clone()]
                        .iter()
                        .any(|e| e.kind.is_api_call());
                    let mut outer_end = i64::MIN;
                    for i in events.clone() {
                        let event = &trace.events[i];
                        let is_task = if has_calls {
                            event.kind.is_api_call()
                        } else {
                            matches!(event.kind, EventKind::CpuOp | EventKind::UserAnnotation)
                        };
                        if !is_task {
                            continue;
                        }
                        if event.start_ns < outer_end {
                            // Nested inside the previous task (a driver call inside a runtime
                            // call, an op inside an op): part of that task's time.
                            if event.kind.is_api_call() {
                                self.report.nested_calls += 1;
                            }
                            continue;
                        }
                        outer_end = event.end_ns();
                        let kind = if has_calls {
                            TaskKind::ApiCall
                        } else {
                            TaskKind::CpuOp
                        };
                        self.push_task(kind, lane_index as u32, i);
                    }
                }
                LaneKind::DeviceStream => {
                    for i in events.clone() {
                        let kind = match trace.events[i].kind {
                            EventKind::Kernel => TaskKind::Kernel,
                            EventKind::Memcpy => TaskKind::Memcpy,
                            EventKind::Memset => TaskKind::Memset,
                            _ => continue,
                        };
                        self.push_task(kind, lane_index as u32, i);
                    }
                }
            }
            let task_count = self.graph.task_count() as u32 - first_task;
            self.graph.lanes.push(GraphLane {
                trace_lane: stepcast_trace::LaneId(lane_index as u32),
                kind: lane.kind,
                first_task,
                task_count,
            });
            lane_start = lane_end;
        }
        // Host gaps: untraced time between consecutive tasks of a thread.
        for lane in &self.graph.lanes {
            if lane.kind != LaneKind::CpuThread || lane.task_count == 0 {
                continue;
            }
            let first = lane.first_task as usize;
            let last = first + lane.task_count as usize - 1;
            self.graph.not_before_ns[first] = self.graph.rec_start_ns[first];
            for t in first..last {
                let gap = self.graph.rec_start_ns[t + 1] - self.graph.rec_end_ns[t];
                self.graph.gap_ns[t] = gap.max(0);
            }
        }
    }

    /// Correlation id → host call task, including calls nested inside a task.
    fn call_index(&self) -> FxHashMap<u64, TaskId> {
        let g = &self.graph;
        let mut index = FxHashMap::default();
        for lane in &g.lanes {
            if lane.kind != LaneKind::CpuThread || lane.task_count == 0 {
                continue;
            }
            let first = lane.first_task as usize;
            let starts = &g.rec_start_ns[first..first + lane.task_count as usize];
            for event in self.trace.lane_events(lane.trace_lane) {
                let (true, Some(corr)) = (event.kind.is_api_call(), event.correlation) else {
                    continue;
                };
                // The task holding this call: the last one starting at or before it.
                let k = starts.partition_point(|&s| s <= event.start_ns);
                if k > 0 {
                    index.insert(corr, TaskId((first + k - 1) as u32));
                }
            }
        }
        index
    }

    fn launch_edges(&mut self, calls: &FxHashMap<u64, TaskId>) -> Launches {
        let n = self.graph.task_count();
        let mut call_of = vec![TaskId::NONE; n];
        let mut edges = Vec::new();
        let mut samples: Vec<i64> = Vec::new();
        for t in 0..n {
            if !self.graph.kind[t].on_device() {
                continue;
            }
            let event = &self.trace.events[self.graph.event[t].index()];
            match event.correlation.and_then(|c| calls.get(&c)) {
                Some(&call) => {
                    call_of[t] = call;
                    let task = TaskId(t as u32);
                    let idle = self.graph.lane_pred(task).is_none_or(|p| {
                        self.graph.rec_end_ns[p.index()] <= self.graph.rec_start_ns[call.index()]
                    });
                    if idle {
                        samples.push(
                            self.graph.rec_start_ns[t] - self.graph.rec_start_ns[call.index()],
                        );
                    }
                }
                None => {
                    // Launched before the window opened (or by an untraced call): a boundary
                    // condition, the stream is busy with it when the recording says.
                    self.graph.not_before_ns[t] = self.graph.rec_start_ns[t];
                    self.report.unlaunched_device_tasks += 1;
                }
            }
        }
        // Launch latency, calibrated on this trace: how long after a launch call begins its
        // work starts on an idle stream (median).
        samples.sort_unstable();
        let latency = samples.get(samples.len() / 2).copied().unwrap_or(0).max(0);
        self.report.launch_latency_ns = latency;
        self.report.launch_latency_samples = samples.len() as u64;
        for t in 0..n {
            let call = call_of[t];
            if call == TaskId::NONE {
                continue;
            }
            let call_dur =
                self.graph.rec_end_ns[call.index()] - self.graph.rec_start_ns[call.index()];
            // Ready `latency` after the call begins, but never after the call has returned:
            // by then the work is queued.
            let lag_ns = latency.min(call_dur);
            edges.push(PendingEdge {
                from: call,
                to: TaskId(t as u32),
                kind: EdgeKind::Launch,
                lag_ns,
            });
        }
        self.dispatch_gaps(&call_of, latency);
        Launches { edges, call_of }
    }

    /// Consecutive tasks on a backlogged stream are not back to back: the device takes a
    /// moment to retire one and dispatch the next. Calibrated on this trace as the median gap
    /// between a task and its stream predecessor when it was queued before the predecessor
    /// ended, and applied to every device task.
    fn dispatch_gaps(&mut self, call_of: &[TaskId], launch_latency: i64) {
        let g = &mut self.graph;
        let mut samples = Vec::new();
        for t in 0..g.task_count() {
            let call = call_of[t];
            let Some(pred) = g.lane_pred(TaskId(t as u32)) else {
                continue;
            };
            if call == TaskId::NONE || !g.kind[t].on_device() {
                continue;
            }
            let queued_at = g.rec_start_ns[call.index()]
                + launch_latency.min(g.rec_end_ns[call.index()] - g.rec_start_ns[call.index()]);
            if queued_at < g.rec_end_ns[pred.index()] {
                samples.push(g.rec_start_ns[t] - g.rec_end_ns[pred.index()]);
            }
        }
        samples.sort_unstable();
        let gap = samples.get(samples.len() / 2).copied().unwrap_or(0).max(0);
        self.report.dispatch_gap_ns = gap;
        for t in 0..g.task_count() {
            if g.kind[t].on_device() {
                g.gap_ns[t] = gap;
            }
        }
    }

    /// Each host task belongs to the step whose `ProfilerStep` range holds its start; each
    /// device task to the step of the call that launched it.
    fn assign_steps(&mut self, launches: &Launches) -> Vec<Step> {
        let trace = self.trace;
        let mut steps: Vec<Step> = trace
            .steps
            .iter()
            .map(|s| Step {
                number: s.number,
                trace_lane: Some(s.lane),
                start_ns: s.start_ns,
                marker_end_ns: s.end_ns(),
                synthetic: false,
            })
            .collect();
        if steps.is_empty() {
            let start = self.graph.rec_start_ns.iter().copied().min().unwrap_or(0);
            let end = self.graph.rec_end_ns.iter().copied().max().unwrap_or(0);
            steps.push(Step {
                number: 0,
                trace_lane: None,
                start_ns: start,
                marker_end_ns: end,
                synthetic: true,
            });
            self.report.notes.push(
                "the trace has no ProfilerStep markers: the whole window is treated as one step"
                    .to_string(),
            );
        }
        let starts: Vec<i64> = steps.iter().map(|s| s.start_ns).collect();
        let step_at = |t: i64| -> u32 {
            let i = starts.partition_point(|&s| s <= t);
            if i == 0 {
                return NO_STEP;
            }
            let step = &steps[i - 1];
            if t < step.marker_end_ns || step.synthetic && t <= step.marker_end_ns {
                (i - 1) as u32
            } else {
                NO_STEP
            }
        };
        let n = self.graph.task_count();
        for t in 0..n {
            if !self.graph.kind[t].on_device() {
                self.graph.step[t] = step_at(self.graph.rec_start_ns[t]);
            }
        }
        for t in 0..n {
            let call = launches.call_of[t];
            if self.graph.kind[t].on_device() && call != TaskId::NONE {
                self.graph.step[t] = self.graph.step[call.index()];
            }
        }
        steps
    }

    fn sync_edges(
        &mut self,
        calls: &FxHashMap<u64, TaskId>,
        call_of: &[TaskId],
        device_lanes: &DeviceLanes,
        edges: &mut Vec<PendingEdge>,
    ) {
        let trace = self.trace;
        let g = &self.graph;
        let mut new_edges: Vec<PendingEdge> = Vec::new();
        let mut rejected: BTreeMap<&'static str, u64> = BTreeMap::new();
        let start_of = |t: TaskId| g.rec_start_ns[t.index()];

        // Recorded synchronizations (CUPTI sync records, 2023+).
        let mut synced_calls = rustc_hash::FxHashSet::default();
        for sync in &trace.syncs {
            let Some(&call) = calls.get(&sync.correlation) else {
                *rejected
                    .entry("sync records whose call is not in the trace")
                    .or_default() += 1;
                continue;
            };
            let record_call = sync
                .wait_on_event_record_correlation
                .and_then(|c| calls.get(&c).copied());
            // The awaited work: the last task launched on the awaited stream before the event
            // was recorded (or before the waiting call, if no record is named).
            let awaited = |stream: i64| -> Option<TaskId> {
                let before = record_call.map_or(start_of(call), start_of);
                device_lanes.last_launched_before(sync.device, stream, before)
            };
            match sync.kind {
                SyncKind::StreamWaitEvent => {
                    let (Some(waiter), Some(source)) = (sync.stream, sync.wait_on_stream) else {
                        *rejected
                            .entry("stream waits without both streams")
                            .or_default() += 1;
                        continue;
                    };
                    let Some(from) = awaited(source) else {
                        *rejected
                            .entry("stream waits on a stream with no earlier work")
                            .or_default() += 1;
                        continue;
                    };
                    let Some(to) =
                        device_lanes.first_launched_after(sync.device, waiter, start_of(call))
                    else {
                        *rejected
                            .entry("stream waits followed by no work on the waiting stream")
                            .or_default() += 1;
                        continue;
                    };
                    new_edges.push(PendingEdge {
                        from,
                        to,
                        kind: EdgeKind::EventWait,
                        lag_ns: 0,
                    });
                }
                SyncKind::EventSync | SyncKind::StreamSync | SyncKind::ContextSync => {
                    let class = classify_call(trace.name(g.name[call.index()]));
                    if !class.may_block() {
                        // cudaEventQuery and friends are recorded as syncs but return at once.
                        continue;
                    }
                    synced_calls.insert(call);
                    let sources: Vec<TaskId> =
                        match (sync.kind, sync.wait_on_stream.or(sync.stream)) {
                            (SyncKind::ContextSync, _) | (_, None) => {
                                device_lanes.all_last_launched_before(sync.device, start_of(call))
                            }
                            (_, Some(stream)) => awaited(stream).into_iter().collect(),
                        };
                    for from in sources {
                        new_edges.push(PendingEdge {
                            from,
                            to: call,
                            kind: EdgeKind::HostSync,
                            lag_ns: 0,
                        });
                    }
                }
            }
        }

        // Calls whose semantics name what they wait for, when no sync record covers them.
        // Host thread (graph lane) → (device, stream) of the last work it launched.
        let mut last_launch_lane: FxHashMap<u32, (i64, i64)> = FxHashMap::default();
        let mut device_tasks_of_call: FxHashMap<TaskId, Vec<TaskId>> = FxHashMap::default();
        for (t, &call) in call_of.iter().enumerate() {
            if call != TaskId::NONE {
                device_tasks_of_call
                    .entry(call)
                    .or_default()
                    .push(TaskId(t as u32));
            }
        }
        for (lane_index, lane) in g.lanes.iter().enumerate() {
            if lane.kind != LaneKind::CpuThread {
                continue;
            }
            let lane_index = lane_index as u32;
            for t in lane.first_task..lane.first_task + lane.task_count {
                let call = TaskId(t);
                if g.kind[t as usize] != TaskKind::ApiCall {
                    continue;
                }
                let own = device_tasks_of_call.get(&call);
                let class = classify_call(trace.name(g.name[t as usize]));
                match class {
                    CallClass::SyncCopy | CallClass::AsyncCopy => {
                        for &task in own.into_iter().flatten() {
                            let pageable = trace.name(g.name[task.index()]).contains("Pageable");
                            if class == CallClass::SyncCopy || pageable {
                                new_edges.push(PendingEdge {
                                    from: task,
                                    to: call,
                                    kind: EdgeKind::HostSync,
                                    lag_ns: 0,
                                });
                            }
                        }
                    }
                    CallClass::DeviceSync if !synced_calls.contains(&call) => {
                        let device = last_launch_lane.get(&lane_index).map_or(0, |&(d, _)| d);
                        for from in device_lanes.all_last_launched_before(device, start_of(call)) {
                            new_edges.push(PendingEdge {
                                from,
                                to: call,
                                kind: EdgeKind::HostSync,
                                lag_ns: 0,
                            });
                        }
                    }
                    CallClass::StreamSync if !synced_calls.contains(&call) => {
                        // Without a sync record the stream is not recorded; PyTorch synchronizes
                        // the stream this thread last launched work on.
                        let awaited =
                            last_launch_lane
                                .get(&lane_index)
                                .and_then(|&(device, stream)| {
                                    device_lanes.last_launched_before(
                                        device,
                                        stream,
                                        start_of(call),
                                    )
                                });
                        if let Some(from) = awaited {
                            new_edges.push(PendingEdge {
                                from,
                                to: call,
                                kind: EdgeKind::HostSync,
                                lag_ns: 0,
                            });
                        }
                    }
                    _ => {}
                }
                if let Some(&last) = own.and_then(|v| v.last()) {
                    let stream =
                        &trace.lanes[g.lanes[g.lane[last.index()] as usize].trace_lane.index()];
                    last_launch_lane.insert(lane_index, (stream.pid, stream.tid));
                }
            }
        }

        // A recorded cause that contradicts the recorded times is wrong about this instance.
        for edge in new_edges {
            let from_end = g.rec_end_ns[edge.from.index()];
            let limit = if edge.kind.gates_completion() {
                g.rec_end_ns[edge.to.index()]
            } else {
                g.rec_start_ns[edge.to.index()]
            };
            if from_end > limit + TOLERANCE_NS {
                *rejected
                    .entry("sync dependencies contradicted by recorded times")
                    .or_default() += 1;
                continue;
            }
            edges.push(edge);
        }
        for (reason, count) in rejected {
            *self.report.rejected.entry(reason.to_string()).or_default() += count;
        }
    }

    /// NCCL/RCCL kernels wait for peers the trace does not show: their completion becomes an
    /// input of the replay, and their own cost the fastest instance of the same kernel.
    fn collectives(&mut self, steps: &[Step], edges: &mut Vec<PendingEdge>) {
        let anchors = step_anchors(&self.graph, steps);
        let g = &mut self.graph;
        let mut fastest: FxHashMap<stepcast_trace::NameId, i64> = FxHashMap::default();
        for t in 0..g.task_count() {
            if g.kind[t] != TaskKind::Kernel {
                continue;
            }
            let name = self.trace.name(g.name[t]);
            if !is_collective(name) {
                continue;
            }
            g.kind[t] = TaskKind::Collective;
            let entry = fastest.entry(g.name[t]).or_insert(i64::MAX);
            *entry = (*entry).min(g.dur_ns[t]);
        }
        for t in 0..g.task_count() {
            if g.kind[t] != TaskKind::Collective {
                continue;
            }
            let transfer = fastest[&g.name[t]];
            let peers_ready = g.rec_end_ns[t] - transfer;
            g.dur_ns[t] = transfer;
            self.report.collectives += 1;
            match anchors.get(g.step[t] as usize).copied().flatten() {
                Some(anchor) => edges.push(PendingEdge {
                    from: anchor,
                    to: TaskId(t as u32),
                    kind: EdgeKind::PeerArrival,
                    lag_ns: peers_ready - g.rec_start_ns[anchor.index()],
                }),
                None => g.peer_ready_ns[t] = peers_ready,
            }
        }
    }

    /// Waits that nothing recorded explains, explained by the task whose end they follow.
    fn inferred_edges(
        &mut self,
        device_lanes: &DeviceLanes,
        call_of: &[TaskId],
        steps: &[Step],
        edges: &[PendingEdge],
    ) -> Vec<PendingEdge> {
        let anchors = step_anchors(&self.graph, steps);
        let g = &self.graph;
        // The stream each call launched work on (its first device task's lane).
        let mut launched_on: FxHashMap<TaskId, u32> = FxHashMap::default();
        for (t, &call) in call_of.iter().enumerate() {
            if call != TaskId::NONE {
                launched_on.entry(call).or_insert(g.lane[t]);
            }
        }
        // Whether the thread told the stream to wait on an event since it last launched there:
        // a recorded `cudaStreamWaitEvent`, whose source stream the trace does not name.
        let waited_for_event = |call: TaskId, stream: u32| -> bool {
            let lane = &g.lanes[g.lane[call.index()] as usize];
            let mut t = call.0;
            let mut looked = 0;
            while t > lane.first_task && looked < 64 {
                t -= 1;
                looked += 1;
                if launched_on.get(&TaskId(t)) == Some(&stream) {
                    return false;
                }
                if self
                    .trace
                    .name(g.name[t as usize])
                    .contains("StreamWaitEvent")
                {
                    return true;
                }
            }
            false
        };
        let o = self.options;
        let n = g.task_count();
        // What the recorded causes explain, per task.
        let mut start_explained: Vec<i64> = (0..n)
            .map(|t| {
                let lane_ready = g
                    .lane_pred(TaskId(t as u32))
                    .map_or(i64::MIN, |p| g.rec_end_ns[p.index()] + g.gap_ns[p.index()]);
                lane_ready.max(g.not_before_ns[t])
            })
            .collect();
        let mut completion_explained: Vec<i64> = vec![i64::MIN; n];
        for e in edges.iter() {
            let ready = source_time(g, e) + e.lag_ns;
            let slot = if e.kind.gates_completion() {
                &mut completion_explained[e.to.index()]
            } else {
                &mut start_explained[e.to.index()]
            };
            *slot = (*slot).max(ready);
        }
        let mut added = Vec::new();
        for t in 0..n {
            let task = TaskId(t as u32);
            let kind = g.kind[t];
            if kind.on_device() {
                let unexplained = g.rec_start_ns[t] - start_explained[t];
                if start_explained[t] == i64::MIN || unexplained <= o.unexplained_device_wait_ns {
                    continue;
                }
                let lane = g.lane[t];
                let at = g.rec_start_ns[t];
                let edge = |from: TaskId, lag_ns: i64| PendingEdge {
                    from,
                    to: task,
                    kind: EdgeKind::InferredStreamWait,
                    lag_ns,
                };
                // 1. Work on another stream ended just before: a cross-stream wait whose
                //    record the trace lacks.
                let window = o.stream_wait_window_ns;
                if let Some(from) = device_lanes.latest_end_in(at - window, at + 1_000, Some(lane))
                {
                    added.push(edge(from, 0));
                    continue;
                }
                // 2. A kernel on another stream was draining its last wave: the device was full,
                //    and this task got its multiprocessors as that kernel's blocks finished.
                if let Some(from) = device_lanes.draining_at(at, o.drain_window_ns, lane) {
                    added.push(edge(from, at - g.rec_end_ns[from.index()]));
                    continue;
                }
                // 3. The thread made the stream wait on an event (a recorded call), but no
                //    device work explains when the wait ended: the event came from outside the
                //    trace. Like a collective's peers, its release is an input tied to the
                //    step's start. (A collective's own timing is already such an input.)
                let call = call_of[t];
                if kind != TaskKind::Collective
                    && call != TaskId::NONE
                    && waited_for_event(call, lane)
                {
                    let anchor = anchors.get(g.step[t] as usize).copied().flatten();
                    if let Some(anchor) = anchor.filter(|a| g.rec_end_ns[a.index()] <= at) {
                        added.push(edge(anchor, at - g.rec_end_ns[anchor.index()]));
                    }
                }
            } else if kind == TaskKind::ApiCall {
                let class = classify_call(self.trace.name(g.name[t]));
                if !matches!(
                    class,
                    CallClass::DeviceSync
                        | CallClass::StreamSync
                        | CallClass::EventSync
                        | CallClass::SyncCopy
                ) {
                    continue;
                }
                let returned = g.rec_end_ns[t];
                let explained = completion_explained[t].max(g.rec_start_ns[t]);
                if returned - explained <= o.unexplained_host_wait_ns {
                    continue;
                }
                if let Some(from) =
                    device_lanes.latest_end_in(returned - o.host_wake_window_ns, returned, None)
                {
                    added.push(PendingEdge {
                        from,
                        to: task,
                        kind: EdgeKind::InferredHostSync,
                        lag_ns: 0,
                    });
                }
            }
        }
        added
    }

    /// Of the candidate inferred edges, those the replay needs: a candidate whose target the
    /// recorded causes alone already hold back to its recorded time adds nothing. Keeps the
    /// edges inferred from timing to the minimum.
    fn needed(&self, candidates: Vec<PendingEdge>, recorded: &[PendingEdge]) -> Vec<PendingEdge> {
        if candidates.is_empty() {
            return candidates;
        }
        let mut provisional = self.graph.clone();
        install_edges(&mut provisional, recorded.to_vec());
        let Ok(timeline) = simulate(&provisional, &RecordedOrder, SimOptions::default()) else {
            return candidates;
        };
        let slack = self.options.unexplained_device_wait_ns;
        candidates
            .into_iter()
            .filter(|c| {
                let t = c.to.index();
                if c.kind.gates_completion() {
                    timeline.end_ns[t] < provisional.rec_end_ns[t] - slack
                } else {
                    timeline.begin_ns[t] < provisional.rec_start_ns[t] - slack
                }
            })
            .collect()
    }

    fn finish(mut self, edges: Vec<PendingEdge>, steps: Vec<Step>) -> Window {
        install_edges(&mut self.graph, edges);
        Window {
            graph: self.graph,
            steps,
            report: self.report,
        }
    }
}

/// Sets the edges of `g` (CSR by target, deterministic order) and, from the waits they
/// explain, the own cost of every blocking task.
fn install_edges(g: &mut Graph, mut edges: Vec<PendingEdge>) {
    let n = g.task_count();
    // A blocking call's own cost is what remains after the work it waited for was done.
    let mut wait_until = vec![i64::MIN; n];
    for e in &edges {
        if e.kind.gates_completion() {
            let ready = source_time(g, e) + e.lag_ns;
            let slot = &mut wait_until[e.to.index()];
            *slot = (*slot).max(ready);
        }
    }
    let mut recorded_wait_until = vec![i64::MIN; n];
    for e in edges
        .iter()
        .filter(|e| e.kind.gates_completion() && !e.kind.is_inferred())
    {
        let slot = &mut recorded_wait_until[e.to.index()];
        *slot = (*slot).max(source_time(g, e) + e.lag_ns);
    }
    g.dur_without_inferred_ns = g.dur_ns.clone();
    for t in 0..n {
        let own_cost = |wait: i64| (g.rec_end_ns[t] - wait.max(g.rec_start_ns[t])).max(0);
        if wait_until[t] != i64::MIN {
            g.dur_ns[t] = own_cost(wait_until[t]);
        }
        if recorded_wait_until[t] != i64::MIN {
            g.dur_without_inferred_ns[t] = own_cost(recorded_wait_until[t]);
        }
    }
    // CSR by target, in (target, kind, source) order: deterministic.
    edges.sort_unstable_by_key(|e| (e.to, e.kind, e.from, e.lag_ns));
    edges.dedup_by_key(|e| (e.to, e.kind, e.from));
    g.pred_offsets = Vec::with_capacity(n + 1);
    g.pred_offsets.push(0);
    let mut i = 0;
    for t in 0..n {
        while i < edges.len() && edges[i].to.index() == t {
            i += 1;
        }
        g.pred_offsets.push(i as u32);
    }
    g.pred = edges.iter().map(|e| e.from).collect();
    g.pred_kind = edges.iter().map(|e| e.kind).collect();
    g.pred_lag_ns = edges.iter().map(|e| e.lag_ns).collect();
}

/// The task where each step begins: its first host task on the thread of its step marker.
pub fn step_anchors(g: &Graph, steps: &[Step]) -> Vec<Option<TaskId>> {
    let mut anchors: Vec<Option<TaskId>> = vec![None; steps.len()];
    for t in 0..g.task_count() {
        let step = g.step[t];
        if step == NO_STEP || g.kind[t].on_device() {
            continue;
        }
        let marker_lane = steps[step as usize].trace_lane;
        if marker_lane.is_some_and(|l| g.lanes[g.lane[t] as usize].trace_lane != l) {
            continue;
        }
        let slot = &mut anchors[step as usize];
        if slot.is_none_or(|a| (g.rec_start_ns[t], t as u32) < (g.rec_start_ns[a.index()], a.0)) {
            *slot = Some(TaskId(t as u32));
        }
    }
    anchors
}

/// When an edge's source releases its target, as recorded.
fn source_time(g: &Graph, e: &PendingEdge) -> i64 {
    if e.kind.from_source_begin() {
        g.rec_start_ns[e.from.index()]
    } else {
        g.rec_end_ns[e.from.index()]
    }
}

/// Whether a kernel is a collective or point-to-point communication kernel.
pub fn is_collective(name: &str) -> bool {
    let lower = name.get(..12).unwrap_or(name).to_ascii_lowercase();
    lower.starts_with("nccl") || lower.starts_with("rccl") || name.contains("nccl:")
}

/// Device lanes with their tasks' launch times, for "the last work launched on stream S before
/// time T" queries.
struct DeviceLanes {
    /// (device, stream) → graph lane.
    by_stream: FxHashMap<(i64, i64), u32>,
    lanes: Vec<DeviceLane>,
}

struct DeviceLane {
    lane: u32,
    device: i64,
    /// Task ids and the start of their launching call (`i64::MIN` if not launched in the window),
    /// in stream order. Stream order is launch order, so `launched_at` is non-decreasing.
    tasks: Vec<TaskId>,
    launched_at: Vec<i64>,
    /// Recorded ends, non-decreasing along a stream.
    ends: Vec<i64>,
    /// Recorded starts, in stream order.
    starts: Vec<i64>,
}

impl DeviceLanes {
    fn new(trace: &Trace, g: &Graph, call_of: &[TaskId]) -> Self {
        let mut by_stream = FxHashMap::default();
        let mut lanes = Vec::new();
        for (i, lane) in g.lanes.iter().enumerate() {
            if lane.kind != LaneKind::DeviceStream {
                continue;
            }
            let range = lane.first_task..lane.first_task + lane.task_count;
            let tasks: Vec<TaskId> = range.map(TaskId).collect();
            let mut launched_at: Vec<i64> = tasks
                .iter()
                .map(|t| {
                    let call = call_of[t.index()];
                    if call == TaskId::NONE {
                        i64::MIN
                    } else {
                        g.rec_start_ns[call.index()]
                    }
                })
                .collect();
            // Keep the column monotone even if two threads interleave launches on one stream.
            for k in 1..launched_at.len() {
                launched_at[k] = launched_at[k].max(launched_at[k - 1]);
            }
            let mut ends: Vec<i64> = tasks.iter().map(|t| g.rec_end_ns[t.index()]).collect();
            for k in 1..ends.len() {
                ends[k] = ends[k].max(ends[k - 1]);
            }
            let stream = &trace.lanes[lane.trace_lane.index()];
            by_stream.insert((stream.pid, stream.tid), lanes.len() as u32);
            let starts: Vec<i64> = tasks.iter().map(|t| g.rec_start_ns[t.index()]).collect();
            lanes.push(DeviceLane {
                lane: i as u32,
                device: stream.pid,
                tasks,
                launched_at,
                ends,
                starts,
            });
        }
        DeviceLanes { by_stream, lanes }
    }
}

impl DeviceLanes {
    fn lane(&self, device: i64, stream: i64) -> Option<&DeviceLane> {
        self.by_stream
            .get(&(device, stream))
            .map(|&i| &self.lanes[i as usize])
    }

    /// The last task on `stream` launched before `time`.
    fn last_launched_before(&self, device: i64, stream: i64, time: i64) -> Option<TaskId> {
        let lane = self.lane(device, stream)?;
        let k = lane.launched_at.partition_point(|&at| at < time);
        (k > 0).then(|| lane.tasks[k - 1])
    }

    /// The first task on `stream` launched after `time`.
    fn first_launched_after(&self, device: i64, stream: i64, time: i64) -> Option<TaskId> {
        let lane = self.lane(device, stream)?;
        let k = lane.launched_at.partition_point(|&at| at <= time);
        lane.tasks.get(k).copied()
    }

    /// On every stream of `device`, the last task launched before `time`.
    fn all_last_launched_before(&self, device: i64, time: i64) -> Vec<TaskId> {
        self.lanes
            .iter()
            .filter(|l| l.device == device)
            .filter_map(|l| {
                let k = l.launched_at.partition_point(|&at| at < time);
                (k > 0).then(|| l.tasks[k - 1])
            })
            .collect()
    }

    /// Of the tasks running at `at` on other lanes of `lane`'s device, the one ending soonest,
    /// if it ends within `window` after `at`.
    fn draining_at(&self, at: i64, window: i64, lane: u32) -> Option<TaskId> {
        let device = self.lanes.iter().find(|l| l.lane == lane)?.device;
        self.lanes
            .iter()
            .filter(|l| l.lane != lane && l.device == device)
            .filter_map(|l| {
                let k = l.starts.partition_point(|&start| start < at);
                let task = *l.tasks.get(k.checked_sub(1)?)?;
                let end = l.ends[k - 1];
                (end > at && end <= at + window).then_some((end, task))
            })
            .min()
            .map(|(_, task)| task)
    }

    /// The task ending latest within `[from, to]`, on any device lane except `except`.
    fn latest_end_in(&self, from: i64, to: i64, except: Option<u32>) -> Option<TaskId> {
        let mut best: Option<(i64, TaskId)> = None;
        for lane in &self.lanes {
            if Some(lane.lane) == except {
                continue;
            }
            let k = lane.ends.partition_point(|&end| end <= to);
            if k == 0 || lane.ends[k - 1] < from {
                continue;
            }
            let candidate = (lane.ends[k - 1], lane.tasks[k - 1]);
            if best.is_none_or(|b| candidate > b) {
                best = Some(candidate);
            }
        }
        best.map(|(_, task)| task)
    }
}
