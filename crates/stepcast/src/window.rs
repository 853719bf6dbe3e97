//! A profiled window: its dependency graph, its steps, and how the graph was built.

use std::collections::BTreeMap;

use stepcast_trace::LaneId;

use crate::graph::Graph;

/// How the build note begins where the trace had no step markers and the steps are the
/// training loop's iterations, inferred from its own ranges (`graph::build`'s `iterations`).
pub const INFERRED_STEPS_NOTE: &str = "the trace has no ProfilerStep markers: its";

/// One training step of the window.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Step {
    /// `N` of `ProfilerStep#N` (0 for a synthetic step; in time order from 0 for the loop's
    /// iterations of a trace without markers, [`INFERRED_STEPS_NOTE`]).
    pub number: u64,
    /// The host thread of the step marker, or of the loop's ranges the step was inferred from
    /// (`None` for a synthetic step).
    pub trace_lane: Option<LaneId>,
    /// Where the step's host work begins: the start of its `ProfilerStep` range (of an
    /// inferred step: the previous update's end, or its batch's draw).
    pub start_ns: i64,
    /// End of the `ProfilerStep` range on the host (of an inferred step: its update's end, or
    /// the next batch's draw). Device work launched inside it may end later.
    pub marker_end_ns: i64,
    /// True when the trace had no step markers and the whole window stands as one step.
    pub synthetic: bool,
    /// The window's last step whose marker holds the profiler's teardown: host time after its
    /// last work longer than a whole typical step. Measured as recorded, but left out of the
    /// steady state (a note says so).
    pub teardown: bool,
}

/// Facts about graph construction, for `info` and `replay` to show.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BuildReport {
    /// Calibrated from this trace: median delay from a launch call's start to its work starting
    /// on an idle stream.
    pub launch_latency_ns: i64,
    pub launch_latency_samples: u64,
    /// Calibrated from this trace: median delay from a launch call's return to its work
    /// starting on an idle stream (a call that launches one task queues it as it returns).
    pub launch_after_return_ns: i64,
    /// Calibrated from this trace: median delay from the end of the work a stream waits on
    /// (an event) to the start of the waiting stream's next work, where the wait held it.
    pub event_wait_latency_ns: i64,
    /// Calibrated from this trace: median idle time between consecutive tasks of a backlogged
    /// stream (retire and dispatch), applied as the gap after every device task.
    pub dispatch_gap_ns: i64,
    /// Calibrated from this trace: the mean gap between consecutive nodes of one CUDA-graph
    /// launch, per transition (`kernel->memset`, ...), applied after graph nodes instead of
    /// `dispatch_gap_ns` (`graph/build/graph_nodes.rs`); empty without graph launches.
    pub graph_node_gaps_ns: Vec<(String, i64)>,
    /// Calibrated from this trace: how much longer a device task's dispatch gap is while
    /// another stream of its device runs, in thousandths (median gap beside other work over
    /// median gap alone; 1000 where the trace does not show it), applied by the engine
    /// (`graph/build/shared_gaps.rs`).
    pub shared_gap_permille: u32,
    /// Device tasks without a launching call in the window (launched before it opened).
    pub unlaunched_device_tasks: u64,
    /// API calls nested inside another call (e.g. a driver call inside a runtime call).
    pub nested_calls: u64,
    /// Collectives (NCCL/RCCL kernels, gloo's host-run ones) whose completion waits on peers
    /// outside the trace.
    pub collectives: u64,
    /// Collectives whose own cost (transfer) comes from their recorded message size, on the
    /// α-β line fitted to the trace's own collectives; the rest of each is waiting for peers.
    pub collective_cost_from_size: u64,
    /// Collectives without a recorded size: their own cost is the fastest instance of the same
    /// kernel name.
    pub collective_cost_from_name: u64,
    /// Edges inferred from timing alone.
    pub inferred_edges: u64,
    /// Device tasks whose resident blocks fill their device more than once over
    /// (`SmDemand::Fills`): the engine holds other streams' work while they run.
    pub device_filling_tasks: u64,
    /// The capacity of CUDA's launch queue, in launches per device, where the trace shows it
    /// full (the largest over devices); 0 where no launch call waited for a full queue, and
    /// the graph then has no `LaunchQueue` edges.
    pub launch_queue_capacity: u64,
    /// Launch calls that waited for a slot of the full queue as recorded, and the time they
    /// waited in all: their own cost is the part after the slot freed (`LaunchQueue` edges).
    pub launch_queue_held_calls: u64,
    pub launch_queue_held_ns: i64,
    /// Launch calls that waited for slots held by launches from before the window (no task
    /// of the window frees them: they keep their recorded cost), and the time they waited.
    pub launch_queue_before_window_calls: u64,
    pub launch_queue_before_window_ns: i64,
    /// Recorded causes not turned into edges, by reason.
    pub rejected: BTreeMap<String, u64>,
    pub notes: Vec<String>,
}

/// The whole profiled window as one graph.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Window {
    pub graph: Graph,
    pub steps: Vec<Step>,
    pub report: BuildReport,
}
