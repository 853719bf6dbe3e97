//! `stepcast.info/1`: what a trace holds and how its graph was built.

use std::collections::BTreeMap;

use serde::Serialize;
use stepcast::Window;
use stepcast::graph::{EdgeKind, NO_STEP};
use stepcast_trace::{LaneId, Trace};

use super::{Counts, DeviceJson, TraceJson, devices, lane_kind, main_device};

/// The `info` document: the trace's resources, steps and events, what the reader skipped, and
/// a summary of the dependency graph.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InfoJson {
    /// Always `stepcast.info/1`.
    pub schema: &'static str,
    /// What the trace is.
    pub trace: TraceJson,
    /// The device the trace's work ran on (the lowest-numbered device with streams), if any.
    pub device: Option<DeviceJson>,
    /// Every device the trace mentions, by index.
    pub devices: Vec<DeviceJson>,
    /// Execution lanes: CPU threads first, then device streams by device and stream.
    pub lanes: Vec<LaneJson>,
    /// The window's steps, by start. A trace without `ProfilerStep` markers has one synthetic
    /// step covering the whole window.
    pub steps: Vec<StepInfoJson>,
    /// Events of each kind (`cpu_op`, `user_annotation`, `python_function`, `runtime_call`,
    /// `driver_call`, `kernel`, `memcpy`, `memset`, `device_annotation`).
    pub events_by_kind: Counts,
    /// Recorded synchronizations (`cuda_sync` events).
    pub syncs: u64,
    /// Records read but not turned into events: reason → count.
    pub skipped: BTreeMap<String, u64>,
    /// Facts about how the trace was read, one sentence each.
    pub notes: Vec<String>,
    /// The dependency graph built from the trace.
    pub graph: GraphJson,
    /// `info --et FILE`: the Execution Trace of the same run and how its ops joined the
    /// trace's. Absent without `--et`. Filled in by the caller ([`ExecutionTraceJson::new`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_trace: Option<ExecutionTraceJson>,
}

/// An Execution Trace joined with the trace (`stepcast::et::join`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExecutionTraceJson {
    /// The ET file as the user named it (filled in by the caller).
    pub file: Option<String>,
    /// Its `schema` (`1.0.1`...).
    pub schema: String,
    /// Its op nodes (its own bookkeeping nodes left out).
    pub op_nodes: u64,
    /// Its nodes of a shape not read (no id or name), left out.
    pub nodes_unread: u64,
    /// `record_function_id` (the Kineto op's `External id` is the node's `rf_id`) or `order`
    /// (each thread's sequence of op names aligned).
    pub method: &'static str,
    /// Host ops (`cpu_op`, `user_annotation`) inside the span the ET covers (from its first
    /// joined op to its last, per thread).
    pub ops_in_span: u64,
    /// Of those, the ops joined to an ET node.
    pub joined: u64,
    /// `joined / ops_in_span`.
    pub coverage: f64,
    /// Host ops outside that span (the profiler's window is longer than the ET's).
    pub ops_outside_span: u64,
    /// ET op nodes no Kineto op was joined to.
    pub nodes_unjoined: u64,
    /// The data dependencies the ET states between joined ops (an input tensor and the op
    /// that last output it): across threads, whose recorded times allow them...
    pub data_links: u64,
    /// ...within one thread (its order holds them)...
    pub data_same_thread: u64,
    /// ...and across threads, contradicted by the recorded times (left out).
    pub data_contradicted: u64,
}

impl ExecutionTraceJson {
    /// The document of `et` joined with its trace as `joined`.
    pub fn new(
        et: &stepcast_trace::ExecutionTrace,
        joined: &stepcast::et::EtJoin,
        data: &stepcast::et::DataLinks,
    ) -> Self {
        ExecutionTraceJson {
            file: None,
            schema: et.schema.clone(),
            op_nodes: et.nodes.iter().filter(|n| !n.is_bookkeeping()).count() as u64,
            nodes_unread: et.nodes_unread,
            method: joined.method.as_str(),
            ops_in_span: joined.ops_in_span,
            joined: joined.joined,
            coverage: joined.coverage(),
            ops_outside_span: joined.ops_outside_span,
            nodes_unjoined: joined.nodes_unjoined,
            data_links: data.links.len() as u64,
            data_same_thread: data.same_thread_links.len() as u64,
            data_contradicted: data.contradicted,
        }
    }
}

/// One execution lane.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LaneJson {
    /// `cpu_thread` or `device_stream`.
    pub kind: &'static str,
    /// Process id of a CPU thread; device index of a stream.
    pub pid: i64,
    /// Thread id of a CPU thread; stream id of a stream.
    pub tid: i64,
    /// Thread name from the trace metadata, if any.
    pub name: Option<String>,
    /// Events on the lane.
    pub events: u64,
}

/// One step of the window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepInfoJson {
    /// `N` of `ProfilerStep#N`; 0 for a synthetic step.
    pub number: u64,
    /// Start of the step's host range.
    pub start_ns: i64,
    /// Length of the step's host range (device work launched in it may end later).
    pub duration_ns: i64,
    /// Graph tasks assigned to the step.
    pub tasks: u64,
    /// True when the trace has no step markers and the whole window stands as one step.
    pub synthetic: bool,
}

/// How the dependency graph was built.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphJson {
    /// Tasks (API calls, CPU-only ops and device work).
    pub tasks: u64,
    /// Edges of each kind (`lane_order`, `launch`, `host_sync`, `event_wait`, `stream_wait_call`,
    /// `inferred_stream_wait`, `inferred_host_sync`, `peer_arrival`).
    pub edges_by_kind: Counts,
    /// Calibrated delay from a launch call's start to its work starting on an idle stream.
    pub launch_latency_ns: i64,
    /// Launches onto an idle stream the latency was calibrated from (0: not calibrated).
    pub launch_latency_samples: u64,
    /// Calibrated delay from a launch call's return to its work starting on an idle stream
    /// (a call that launches one task queues it as it returns).
    pub launch_after_return_ns: i64,
    /// Calibrated delay from the end of awaited work to the waiting stream's next work.
    pub event_wait_latency_ns: i64,
    /// Calibrated idle time between consecutive tasks of a backlogged stream.
    pub dispatch_gap_ns: i64,
    /// Device tasks launched before the window opened.
    pub unlaunched_device_tasks: u64,
    /// API calls nested inside another call.
    pub nested_calls: u64,
    /// Collective kernels, whose completion waits on peers outside the trace.
    pub collectives: u64,
    /// Collectives whose transfer is costed from their recorded message size (α-β line fitted
    /// to the trace's own collectives); the rest of each is the peers' lateness.
    pub collective_cost_from_size: u64,
    /// Collectives without a recorded size, costed as the fastest kernel of the same name.
    pub collective_cost_from_name: u64,
    /// Edges inferred from timing alone.
    pub inferred_edges: u64,
    /// Device tasks that fill their device more than once over: the replay holds other
    /// streams' work while they run.
    pub device_filling_tasks: u64,
    /// CUDA's launch queue as this trace shows it (`launch_queue` edges).
    pub launch_queue: LaunchQueueJson,
    /// Recorded causes not turned into edges: reason → count.
    pub rejected: BTreeMap<String, u64>,
    /// Facts about how the graph was built, one sentence each.
    pub notes: Vec<String>,
}

/// CUDA's launch queue as the trace shows it: its capacity where it was full, and the launch
/// calls that waited for a slot (their own cost is the part after the slot freed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LaunchQueueJson {
    /// Launches per device the queue holds, calibrated on the trace; 0 where no launch call
    /// waited for a full queue (the graph then has no `launch_queue` edges).
    pub capacity: u64,
    /// Launch calls that waited for a slot as recorded, and the time they waited in all.
    pub held_calls: u64,
    pub held_ns: i64,
    /// Of those, the calls whose slot a launch from before the window held, and their wait.
    pub before_window_calls: u64,
    pub before_window_ns: i64,
}

impl LaunchQueueJson {
    pub fn new(window: &Window) -> Self {
        let report = &window.report;
        LaunchQueueJson {
            capacity: report.launch_queue_capacity,
            held_calls: report.launch_queue_held_calls,
            held_ns: report.launch_queue_held_ns,
            before_window_calls: report.launch_queue_before_window_calls,
            before_window_ns: report.launch_queue_before_window_ns,
        }
    }
}

impl GraphJson {
    fn new(window: &Window) -> Self {
        let report = &window.report;
        Self {
            tasks: window.graph.task_count() as u64,
            edges_by_kind: edge_counts(window.graph.edges_by_kind(|_| true)),
            launch_latency_ns: report.launch_latency_ns,
            launch_latency_samples: report.launch_latency_samples,
            launch_after_return_ns: report.launch_after_return_ns,
            event_wait_latency_ns: report.event_wait_latency_ns,
            dispatch_gap_ns: report.dispatch_gap_ns,
            unlaunched_device_tasks: report.unlaunched_device_tasks,
            nested_calls: report.nested_calls,
            collectives: report.collectives,
            collective_cost_from_size: report.collective_cost_from_size,
            collective_cost_from_name: report.collective_cost_from_name,
            inferred_edges: report.inferred_edges,
            device_filling_tasks: report.device_filling_tasks,
            launch_queue: LaunchQueueJson::new(window),
            rejected: report.rejected.clone(),
            notes: report.notes.clone(),
        }
    }
}

pub(super) fn edge_counts(counts: Vec<(EdgeKind, u64)>) -> Counts {
    Counts(
        counts
            .into_iter()
            .map(|(kind, n)| (kind.as_str(), n))
            .collect(),
    )
}

/// The `info` document of `trace` and the window built from it.
pub fn info_json(trace: &Trace, window: &Window) -> InfoJson {
    let devices = devices(trace);
    let lanes = trace
        .lanes
        .iter()
        .enumerate()
        .map(|(index, lane)| LaneJson {
            kind: lane_kind(lane.kind),
            pid: lane.pid,
            tid: lane.tid,
            name: lane.name.clone(),
            events: trace.lane_events(LaneId(index as u32)).len() as u64,
        })
        .collect();
    let mut tasks_by_step = vec![0u64; window.steps.len()];
    for &step in &window.graph.step {
        if step != NO_STEP
            && let Some(count) = tasks_by_step.get_mut(step as usize)
        {
            *count += 1;
        }
    }
    let steps = window
        .steps
        .iter()
        .zip(tasks_by_step)
        .map(|(step, tasks)| StepInfoJson {
            number: step.number,
            start_ns: step.start_ns,
            duration_ns: step.marker_end_ns - step.start_ns,
            tasks,
            synthetic: step.synthetic,
        })
        .collect();
    InfoJson {
        schema: "stepcast.info/1",
        trace: TraceJson::new(trace),
        device: main_device(&devices),
        devices,
        lanes,
        steps,
        events_by_kind: Counts(
            trace
                .events_by_kind()
                .into_iter()
                .map(|(kind, n)| (kind.as_str(), n as u64))
                .collect(),
        ),
        syncs: trace.syncs.len() as u64,
        skipped: trace.diagnostics.skipped.clone(),
        notes: trace.diagnostics.notes.clone(),
        graph: GraphJson::new(window),
        execution_trace: None,
    }
}
