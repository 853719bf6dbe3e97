//! Trace → [`Window`]: tasks, edges and steps of the whole profiled window.
//!
//! The window is one graph, not a graph per step: the device often runs tens of milliseconds
//! behind the host, so a step's kernels overlap the next step's host work, and only a replay
//! of the whole window reproduces the backlog each step inherits.

mod async_transfers;
mod collective_waits;
mod collectives;
mod device_lanes;
mod graph_nodes;
mod handoff;
mod infer;
mod iterations;
mod launch_queue;
mod launch_timing;
mod names;
mod saturation;
mod shared_gaps;
mod sync;
mod tensor_links;

use rustc_hash::FxHashMap;
use stepcast_trace::{EventId, EventKind, LaneKind, Trace};

use super::{EdgeKind, Graph, GraphLane, NO_STEP, NO_TIME, TaskId, TaskKind};
use crate::window::{BuildReport, Step, Window};
use device_lanes::DeviceLanes;

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

/// Fewer launches onto an idle stream than this calibrate no launch latency.
const MIN_LATENCY_SAMPLES: usize = 5;

/// A gap between back-to-back tasks of a stream longer than this many times the median is a
/// wait for something else, not the device's dispatch: left out of the dispatch gap's mean.
/// 3–5 keep every multi-step trace of `testdata/` within the replay bars; 2 cuts into the
/// dispatch gaps themselves (`trace_diff/test`'s whole-µs gaps: 1.2 % median), 10 lets waits
/// in (0.52 %).
const DISPATCH_WAIT_FACTOR: i64 = 5;

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
        names: names::NameFacts::new(trace),
        options,
        graph: Graph::default(),
        report: BuildReport::default(),
        launch_latency_ns: i64::MAX,
        transfer_posts: Vec::new(),
        gloo: collective_waits::GlooWork::default(),
        pending_waits: collective_waits::PendingWaits::default(),
    };
    let host_calls = b.tasks();
    let calls = b.call_index(&host_calls);
    let mut launcher = b.launch_edges(&calls);
    let mut steps = b.assign_steps(&launcher);
    b.mark_teardown(&mut steps);
    let mut edges = std::mem::take(&mut launcher.edges);
    edges.append(&mut b.transfer_posts);
    b.collective_waits(&mut edges);
    let device_lanes = DeviceLanes::new(trace, &b.graph, &launcher.call_of);
    b.sync_edges(&calls, &launcher.call_of, &device_lanes, &mut edges);
    // After the sync edges: a launch-latency sample held by a wait is not one.
    b.launch_lags(&launcher, &mut edges);
    b.blocking_launches(&mut edges);
    b.event_wait_latency(&mut edges);
    // After the calibrations that read launch lags as recorded (it shortens the lags of the
    // calls it finds waiting), before the inferred edges (a cause they need not guess).
    b.launch_queue(&launcher.call_of, &mut edges);
    b.collectives(&launcher.call_of);
    // After `collectives`, which tells communication kernels apart.
    b.sm_demand();
    b.autograd_handoffs(&mut edges);
    b.tensor_links(&mut edges);
    // Whether `edges` are installed in the graph already.
    let mut installed = false;
    if options.infer_edges {
        let candidates = b.inferred_edges(&device_lanes, &launcher.call_of, &edges);
        let (needed, now_installed) = b.needed(candidates, &edges);
        b.report.inferred_edges = needed.len() as u64;
        edges.extend(needed);
        installed = now_installed;
    }
    b.finish(edges, steps, installed)
}

struct Builder<'t> {
    trace: &'t Trace,
    names: names::NameFacts,
    options: &'t BuildOptions,
    graph: Graph,
    report: BuildReport,
    /// Calibrated delay from a launch call's begin to its work (`i64::MAX`: not calibrated).
    launch_latency_ns: i64,
    /// The edges from the tasks that posted gloo's asynchronous transfers to them
    /// (`async_transfers.rs`).
    transfer_posts: Vec<PendingEdge>,
    /// gloo's collectives and their posts, and the waits for them found on each thread
    /// (`collective_waits.rs`).
    gloo: collective_waits::GlooWork,
    pending_waits: collective_waits::PendingWaits,
}

struct Launches {
    /// One per launched device task, its lag set by [`Builder::launch_lags`] once the
    /// waits that could have held the work are known.
    edges: Vec<PendingEdge>,
    /// For each task: the call that launched it (device tasks) or `NONE`.
    call_of: Vec<TaskId>,
    /// Work that started on an idle stream: the launch latency's candidate samples.
    idle_starts: Vec<IdleStart>,
}

/// A device task whose stream was idle when its call began: its start measures the launch
/// latency, unless a wait on another stream held it (`Builder::launch_lags` decides).
struct IdleStart {
    task: TaskId,
    call: TaskId,
    /// From the call's begin to the task's start.
    after_begin_ns: i64,
    /// From the call's return to the task's start.
    after_return_ns: i64,
}

impl Builder<'_> {
    fn push_task(&mut self, kind: TaskKind, lane: u32, event_index: usize) {
        let event = &self.trace.events[event_index];
        self.push_task_at(kind, lane, event_index, event.start_ns, event.end_ns());
    }

    /// The host collectives of [`host_collective_stretches`] that start by `before_ns`, as
    /// tasks of `lane`, in order.
    fn push_stretches(
        &mut self,
        lane: u32,
        stretches: &mut std::iter::Peekable<std::vec::IntoIter<(usize, i64, i64)>>,
        before_ns: i64,
    ) {
        while let Some((event_index, start, end)) = stretches.next_if(|s| s.1 <= before_ns) {
            self.push_task_at(TaskKind::CpuOp, lane, event_index, start, end);
        }
    }

    /// A task of event `event_index` that runs from `start_ns` to `end_ns` (part of the
    /// event's time, where calls nested in it are tasks of their own).
    fn push_task_at(
        &mut self,
        kind: TaskKind,
        lane: u32,
        event_index: usize,
        start_ns: i64,
        end_ns: i64,
    ) {
        let event = &self.trace.events[event_index];
        let g = &mut self.graph;
        g.kind.push(kind);
        g.lane.push(lane);
        g.name.push(event.name);
        g.event.push(EventId(event_index as u32));
        g.dur_ns.push(end_ns - start_ns);
        g.gap_ns.push(0);
        g.rec_start_ns.push(start_ns);
        g.rec_end_ns.push(end_ns);
        g.step.push(NO_STEP);
        g.not_before_ns.push(NO_TIME);
        g.peer_wait_ns.push(0);
    }

    /// One task per outermost API call on each host thread (or per outermost op on a thread
    /// that makes no calls), and one per device kernel, copy and memset. Returns, per lane,
    /// the start and correlation id of its calls that have one, nested ones included (for
    /// [`Builder::call_index`], which then need not read the events again).
    fn tasks(&mut self) -> Vec<Vec<(i64, u64)>> {
        let trace = self.trace;
        let mut host_calls = vec![Vec::new(); trace.lanes.len()];
        let mut async_transfers: Vec<(usize, Vec<usize>)> = Vec::new();
        self.gloo = collective_waits::GlooWork::new(trace, &self.names);
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
                    // gloo's asynchronous transfers go on lanes of their own, once the
                    // thread's tasks are built (`async_transfers.rs`).
                    let transfers = if has_calls {
                        Vec::new()
                    } else {
                        self.async_transfers(events.clone())
                    };
                    let calls = &mut host_calls[lane_index];
                    // On a thread that makes calls, a host-run collective (gloo on CUDA
                    // tensors: its copies' calls inside it) is the stretch between them.
                    let mut collectives = if has_calls {
                        host_collective_stretches(trace, &self.names, events.clone())
                    } else {
                        Vec::new()
                    }
                    .into_iter()
                    .peekable();
                    for i in events.clone() {
                        let event = &trace.events[i];
                        if transfers.binary_search(&i).is_ok() {
                            continue;
                        }
                        if let (true, Some(corr)) = (event.kind.is_api_call(), event.correlation) {
                            calls.push((event.start_ns, corr.get()));
                        }
                        let is_task = if has_calls {
                            event.kind.is_api_call()
                        } else {
                            matches!(event.kind, EventKind::CpuOp | EventKind::UserAnnotation)
                        };
                        if !is_task {
                            continue;
                        }
                        if event.start_ns < outer_end {
                            // gloo's point-to-point ranges start inside the op that posted
                            // them (`c10d::send`, `c10d::recv_`): one that outlasts it
                            // (`gloo:recv` waiting for the peer) is a task for the rest of its
                            // range, not a gap; one wholly inside it (`gloo:send`, done before
                            // the op returned) makes that op's task the transfer, under its
                            // name. Inside any other op (a `record_function` around the
                            // transfer) it stays that op's time.
                            let posted_by_previous = !has_calls
                                && self.names.is_host_collective(event.name)
                                && self.graph.task_count() > first_task as usize
                                && self
                                    .trace
                                    .name(self.graph.name[self.graph.task_count() - 1])
                                    .starts_with("c10d::");
                            if posted_by_previous && event.end_ns() > outer_end {
                                self.push_task_at(
                                    TaskKind::CpuOp,
                                    lane_index as u32,
                                    i,
                                    outer_end,
                                    event.end_ns(),
                                );
                                outer_end = event.end_ns();
                                continue;
                            }
                            if posted_by_previous {
                                let g = &mut self.graph;
                                let last = g.task_count() - 1;
                                g.name[last] = event.name;
                                g.event[last] = EventId(i as u32);
                                continue;
                            }
                            // Nested inside the previous task (a driver call inside a runtime
                            // call, an op inside an op): part of that task's time.
                            if event.kind.is_api_call() {
                                self.report.nested_calls += 1;
                            }
                            continue;
                        }
                        self.push_stretches(lane_index as u32, &mut collectives, event.start_ns);
                        outer_end = event.end_ns();
                        let kind = if has_calls {
                            TaskKind::ApiCall
                        } else {
                            TaskKind::CpuOp
                        };
                        self.push_task(kind, lane_index as u32, i);
                    }
                    self.push_stretches(lane_index as u32, &mut collectives, i64::MAX);
                    if !has_calls {
                        self.split_at_waits(
                            lane_index as u32,
                            first_task as usize,
                            events,
                            &transfers,
                        );
                    }
                    if !transfers.is_empty() {
                        async_transfers.push((lane_index, transfers));
                    }
                }
                LaneKind::DeviceStream => {
                    for i in events {
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
                // The device whose multiprocessors the stream's work shares (the capacity
                // model's unit); a stream's process id is its device in every reader.
                device: (lane.kind == LaneKind::DeviceStream).then_some(lane.pid),
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
        // After the threads' gaps: a lane of transfers in flight has none (each transfer
        // begins when the task that posted it ends).
        for (thread, transfers) in async_transfers {
            let posts = self.transfer_lanes(thread, &transfers);
            self.transfer_posts.extend(posts);
        }
        host_calls
    }

    /// Correlation id → host call task, including calls nested inside a task, from each
    /// lane's calls as [`Builder::tasks`] found them.
    fn call_index(&self, host_calls: &[Vec<(i64, u64)>]) -> FxHashMap<u64, TaskId> {
        let g = &self.graph;
        let mut index =
            FxHashMap::with_capacity_and_hasher(g.task_count(), rustc_hash::FxBuildHasher);
        for (lane, calls) in g.lanes.iter().zip(host_calls) {
            if lane.kind != LaneKind::CpuThread || lane.task_count == 0 {
                continue;
            }
            let first = lane.first_task as usize;
            let starts = &g.rec_start_ns[first..first + lane.task_count as usize];
            // The task holding a call: the last one starting at or before it. A lane's calls
            // are in start order, so the holder only moves forward: a walk over the pairs,
            // where a binary search per call over the events read again took 2.4 ms of the
            // build on df_index_resolver.
            let mut k = 0;
            for &(start_ns, corr) in calls {
                while k < starts.len() && starts[k] <= start_ns {
                    k += 1;
                }
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
        let mut idle_starts = Vec::new();
        for t in 0..n {
            if !self.graph.kind[t].on_device() {
                continue;
            }
            let event = &self.trace.events[self.graph.event[t].index()];
            match event.correlation.and_then(|c| calls.get(&c.get())) {
                Some(&call) => {
                    call_of[t] = call;
                    let task = TaskId(t as u32);
                    let idle = self.graph.lane_pred(task).is_none_or(|p| {
                        self.graph.rec_end_ns[p.index()] <= self.graph.rec_start_ns[call.index()]
                    });
                    if idle {
                        let start = self.graph.rec_start_ns[t];
                        idle_starts.push(IdleStart {
                            task,
                            call,
                            after_begin_ns: start - self.graph.rec_start_ns[call.index()],
                            after_return_ns: start - self.graph.rec_end_ns[call.index()],
                        });
                    }
                    edges.push(PendingEdge {
                        from: call,
                        to: task,
                        kind: EdgeKind::Launch,
                        lag_ns: 0,
                    });
                }
                None => {
                    // Launched before the window opened (or by an untraced call): a boundary
                    // condition, the stream is busy with it when the recording says.
                    self.graph.not_before_ns[t] = self.graph.rec_start_ns[t];
                    self.report.unlaunched_device_tasks += 1;
                }
            }
        }
        Launches {
            edges,
            call_of,
            idle_starts,
        }
    }

    /// Consecutive tasks on a backlogged stream are not back to back: the device takes a
    /// moment to retire one and dispatch the next. Calibrated on this trace as the mean gap
    /// between a task and its stream predecessor when it was queued before the predecessor
    /// ended, and applied to every device task. The mean, not the median: a backlogged
    /// stream's step is the sum of its tasks and their gaps, and the gaps are skewed (on
    /// Hopper, 1.0 µs and 2.0 µs modes, and kernels that begin before their predecessor ends:
    /// programmatic dependent launch), so the median put a device-bound step 0.5 % short on an
    /// H200 and 0.4 % long on an H100, a drift that grew with every step queued. A gap over
    /// [`DISPATCH_WAIT_FACTOR`] medians is a wait (for another stream, for the host) that the
    /// graph's own edges carry, not dispatch: left out. Copies are no samples: a copy from pageable
    /// memory starts only once the host has staged it, so its gap is the staging, not the
    /// device's dispatch (50 µs per copy on pipit's CloverLeaf export, whose kernels are never
    /// queued behind busy streams: a gap from its copies put every kernel 40 µs late).
    fn dispatch_gaps(&mut self, call_of: &[TaskId], launch_latency: i64) {
        let g = &mut self.graph;
        let mut samples = Vec::new();
        let mut queued = Vec::new();
        for t in 0..g.task_count() {
            let call = call_of[t];
            let Some(pred) = g.lane_pred(TaskId(t as u32)) else {
                continue;
            };
            if call == TaskId::NONE || !matches!(g.kind[t], TaskKind::Kernel | TaskKind::Collective)
            {
                continue;
            }
            let queued_at = g.rec_start_ns[call.index()]
                + launch_latency.min(g.rec_end_ns[call.index()] - g.rec_start_ns[call.index()]);
            if queued_at < g.rec_end_ns[pred.index()] {
                samples.push(g.rec_start_ns[t] - g.rec_end_ns[pred.index()]);
                queued.push((pred, TaskId(t as u32)));
            }
        }
        samples.sort_unstable();
        let median = samples.get(samples.len() / 2).copied().unwrap_or(0).max(0);
        let longest = median.saturating_mul(DISPATCH_WAIT_FACTOR);
        let dispatch = &samples[..samples.partition_point(|&g| g <= longest)];
        // In i128: a sum of recorded gaps from an input cannot wrap.
        let sum: i128 = dispatch.iter().map(|&g| i128::from(g)).sum();
        let gap = match i128::try_from(dispatch.len()) {
            Ok(count) if count > 0 => i64::try_from(sum / count).unwrap_or(median).max(0),
            _ => median,
        };
        self.report.dispatch_gap_ns = gap;
        for t in 0..g.task_count() {
            if g.kind[t].on_device() {
                g.gap_ns[t] = gap;
            }
        }
        // The nodes of a graph launch are dispatched by the device alone: their own gaps.
        self.report.graph_node_gaps_ns = graph_nodes::apply(g, call_of)
            .into_iter()
            .map(|((from, to), gap)| (format!("{from:?}->{to:?}").to_lowercase(), gap))
            .collect();
        // Another stream running beside a backlogged one slows its dispatch (`shared_gaps.rs`):
        // calibrated against the gaps just set, graph nodes' included.
        let g = &mut self.graph;
        g.shared_gap_permille = shared_gaps::calibrate(g, &queued);
        self.report.shared_gap_permille = g.shared_gap_permille;
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
                teardown: false,
            })
            .collect();
        let matched_none = trace
            .diagnostics
            .notes
            .iter()
            .any(|note| note.starts_with(stepcast_trace::STEP_RANGE_MATCHED_NONE));
        if steps.is_empty() && !matched_none {
            let g = &self.graph;
            let host_start = (0..g.task_count())
                .filter(|&t| !g.kind[t].on_device())
                .map(|t| g.rec_start_ns[t])
                .min();
            if let Some(start) = host_start
                && let Some((inferred, note)) = iterations::infer(trace, start)
            {
                steps = inferred;
                self.report.notes.push(note);
            }
        }
        if steps.is_empty() {
            // The step opens with the host's recording, as a `ProfilerStep` range would: device
            // work that ran before the host recorded anything was launched before the profiler
            // started (its tail flushed with the device's buffer) and, like work before a
            // trace's first marker, belongs to no step. A trace with no host work spans its
            // device work.
            let g = &self.graph;
            let host_start = (0..g.task_count())
                .filter(|&t| !g.kind[t].on_device())
                .map(|t| g.rec_start_ns[t])
                .min();
            let start = host_start
                .or_else(|| g.rec_start_ns.iter().copied().min())
                .unwrap_or(0);
            let end = g.rec_end_ns.iter().copied().max().unwrap_or(0);
            steps.push(Step {
                number: 0,
                trace_lane: None,
                start_ns: start,
                marker_end_ns: end,
                synthetic: true,
                teardown: false,
            });
            self.report.notes.push(
                "the trace has no ProfilerStep markers: the whole window is treated as one step"
                    .to_string(),
            );
            let before: Vec<i64> = (0..g.task_count())
                .filter(|&t| g.kind[t].on_device() && g.rec_start_ns[t] < start)
                .map(|t| g.rec_end_ns[t] - g.rec_start_ns[t])
                .collect();
            if !before.is_empty() {
                let (count, tasks) = match before.len() {
                    1 => ("1".to_string(), "task"),
                    n => (n.to_string(), "tasks"),
                };
                self.report.notes.push(format!(
                    "{count} device {tasks} ({:.3} ms) ran before the host's recording began: \
                     launched before the profiler started, outside the step",
                    before.iter().sum::<i64>() as f64 / 1e6
                ));
            }
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
        let device_only = (0..n).all(|t| self.graph.kind[t].on_device());
        if n > 0 && device_only && steps.iter().all(|s| s.synthetic) {
            // A trace of device work alone (rocprofv3 without `--hip-trace`): no call says which
            // step launched a task, so the one window holds every task that runs in it.
            for t in 0..n {
                self.graph.step[t] = step_at(self.graph.rec_start_ns[t]);
            }
            self.report.notes.push(
                "the trace holds device work only (no launching calls): the window is one step \
                 of all of it, and each task waits for its recorded start (nothing recorded \
                 says when it could have begun), so the replay checks stream order and device \
                 capacity only and a what-if cannot move work earlier"
                    .to_string(),
            );
        }
        steps
    }

    /// The last marker of a profile often holds the profiler's own teardown (stopping,
    /// flushing buffers): host time after the step's last work, with nothing recorded to
    /// explain it. When that tail is longer than a whole median step of the others, the step
    /// is measured as recorded (its marker is what it is) but kept out of the steady state.
    fn mark_teardown(&mut self, steps: &mut [Step]) {
        let n = steps.len();
        if n < 3 || steps.iter().any(|s| s.synthetic) {
            return;
        }
        let g = &self.graph;
        let mut work_end = vec![i64::MIN; n];
        for t in 0..g.task_count() {
            let step = g.step[t];
            if step != NO_STEP {
                let slot = &mut work_end[step as usize];
                *slot = (*slot).max(g.rec_end_ns[t]);
            }
        }
        let mut spans: Vec<i64> = steps[..n - 1]
            .iter()
            .map(|s| s.marker_end_ns - s.start_ns)
            .collect();
        let median_ns = median(&mut spans);
        let last = &mut steps[n - 1];
        let tail_ns = last.marker_end_ns - work_end[n - 1].max(last.start_ns);
        if median_ns > 0 && tail_ns > median_ns {
            last.teardown = true;
            self.report.notes.push(format!(
                "step {} ends with {:.3} ms of host time after its last work (a median step \
                 is {:.3} ms): profiler teardown, left out of the steady state",
                last.number,
                tail_ns as f64 / 1e6,
                median_ns as f64 / 1e6
            ));
        }
    }

    /// The window, with `edges` installed unless they are (`installed`).
    fn finish(mut self, edges: Vec<PendingEdge>, steps: Vec<Step>, installed: bool) -> Window {
        if !installed {
            install_edges(&mut self.graph, edges);
        }
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

/// When an edge's source releases its target, as recorded.
fn source_time(g: &Graph, e: &PendingEdge) -> i64 {
    if e.kind.from_source_begin() {
        g.rec_start_ns[e.from.index()]
    } else {
        g.rec_end_ns[e.from.index()]
    }
}

/// The middle value of `values` (upper median), reordering them.
fn median(values: &mut [i64]) -> i64 {
    let mid = values.len() / 2;
    *values.select_nth_unstable(mid).1
}

/// Whether a kernel is a collective or point-to-point communication kernel.
pub fn is_collective(name: &str) -> bool {
    let lower = name.get(..12).unwrap_or(name).to_ascii_lowercase();
    lower.starts_with("nccl") || lower.starts_with("rccl") || name.contains("nccl:")
}

/// Whether a host op is a collective that its thread runs: gloo's work records each one as a
/// `gloo:<collective>` range on the worker thread that runs it (PyTorch's `ProcessGroupGloo`),
/// from when the thread took it to when the peers' data was in.
pub fn is_host_collective(name: &str) -> bool {
    name.starts_with("gloo:")
}

/// The host-run collectives among a thread's `events` (the outermost annotations that
/// [`is_host_collective`] names) on a thread whose tasks are its API calls: each as
/// `(event, start, end)`, the longest stretch of it that no outermost call covers, sorted.
/// gloo on CUDA tensors synchronizes, exchanges over its transport (untraced) and copies the
/// result back inside its `gloo:` range: the exchange is the stretch between those calls.
fn host_collective_stretches(
    trace: &Trace,
    names: &names::NameFacts,
    events: std::ops::Range<usize>,
) -> Vec<(usize, i64, i64)> {
    let lane_events = &trace.events[events.clone()];
    let mut out = Vec::new();
    let mut outer_end = i64::MIN;
    // The latest end of the calls that started before the event at hand: a stretch never
    // begins inside one (it would overlap that call's task).
    let mut calls_end = i64::MIN;
    for (offset, event) in lane_events.iter().enumerate() {
        if event.kind.is_api_call() {
            calls_end = calls_end.max(event.end_ns());
            continue;
        }
        let is_collective = matches!(event.kind, EventKind::CpuOp | EventKind::UserAnnotation)
            && names.is_host_collective(event.name);
        if !is_collective || event.start_ns < outer_end {
            continue;
        }
        outer_end = event.end_ns();
        // The outermost calls inside it, in start order (events are sorted by start).
        let mut cursor = event.start_ns.max(calls_end);
        let from = cursor.min(event.end_ns());
        let mut best = (from, from);
        let mut call_end = i64::MIN;
        for call in lane_events[offset + 1..]
            .iter()
            .take_while(|e| e.start_ns < event.end_ns())
            .filter(|e| e.kind.is_api_call())
        {
            if call.start_ns < call_end {
                continue;
            }
            if call.start_ns - cursor > best.1 - best.0 {
                best = (cursor, call.start_ns);
            }
            call_end = call.end_ns();
            cursor = cursor.max(call_end);
        }
        if event.end_ns() - cursor > best.1 - best.0 {
            best = (cursor, event.end_ns());
        }
        out.push((events.start + offset, best.0, best.1));
    }
    out
}
