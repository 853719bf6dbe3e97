//! The dependency graph of a profiled window: tasks on lanes, and typed edges between them.
//!
//! Tasks are numbered lane by lane in recorded order, so a task's lane predecessor is the task
//! just before it when both share a lane: lane order needs no stored edge. All other edges are
//! stored CSR-style by target (offsets + sources), with a kind and a lag column.

mod build;
mod calls;
pub(crate) mod launch_queue;

use stepcast_trace::{EventId, LaneId, LaneKind, NameId};

pub use build::{BuildOptions, build, is_host_collective};
pub use calls::{CallClass, classify_call};

/// A task of the graph (an index into its columns). `u32`: a window of 4 billion tasks would be
/// a 400 GB trace.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct TaskId(pub u32);

impl TaskId {
    pub const NONE: TaskId = TaskId(u32::MAX);

    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// What a task is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum TaskKind {
    /// A runtime or driver call on a host thread.
    ApiCall,
    /// An outermost op on a host thread that makes no runtime calls (CPU-only work).
    CpuOp,
    Kernel,
    Memcpy,
    Memset,
    /// A collective or point-to-point communication kernel (NCCL/RCCL).
    Collective,
}

impl TaskKind {
    pub fn on_device(self) -> bool {
        !matches!(self, TaskKind::ApiCall | TaskKind::CpuOp)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TaskKind::ApiCall => "api_call",
            TaskKind::CpuOp => "cpu_op",
            TaskKind::Kernel => "kernel",
            TaskKind::Memcpy => "memcpy",
            TaskKind::Memset => "memset",
            TaskKind::Collective => "collective",
        }
    }
}

/// Why one task waits for another.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum EdgeKind {
    /// The previous task on the same lane (implicit: not stored).
    LaneOrder,
    /// A host call launched this device task (correlation id).
    Launch,
    /// A blocking host call waited for this device task (recorded sync event, the call's own
    /// copy, or the documented semantics of a device-wide synchronize).
    HostSync,
    /// A stream waited on an event recorded on another stream (`cuda_sync` Stream Wait Event).
    EventWait,
    /// A stream waited on an event, as a recorded `cudaStreamWaitEvent` call says, in a trace
    /// without sync records: the event's stream is not recorded, so the wait is taken to cover,
    /// on each other stream of the device, the latest work launched before the call that the
    /// recorded times allow (guesses they contradict are dropped).
    StreamWaitCall,
    /// A device task started right when a task on another stream ended, with nothing recorded
    /// to explain the wait: inferred from timing alone.
    InferredStreamWait,
    /// A blocking host call returned right when a device task ended, with no recorded cause:
    /// inferred from timing alone.
    InferredHostSync,
    /// A peer's instance of the same collective (another rank's task, in a job replayed as
    /// one graph): the transfer completes once every peer has begun it. A one-rank graph has
    /// none: its peers are the declared input [`Graph::peer_wait_ns`].
    PeerArrival,
    /// A collective's instance began, and its release waits for every instance (a job
    /// replayed as one graph: the release task of a collective has one such edge per rank, and
    /// each instance completes after the release through a [`EdgeKind::PeerArrival`] edge:
    /// 2·R edges per collective instead of R·(R−1)).
    CollectiveArrival,
    /// The autograd engine thread starts a backward pass after the last work of the thread
    /// that called `backward()`, which resumes after the pass's last work (`build/handoff.rs`).
    ThreadHandoff,
    /// A thread resumed after a collective that gloo's worker thread ran for it: it had waited
    /// in `work.wait()`, which records nothing (`build/collective_waits.rs`). The lag is the
    /// recorded wake-up.
    CollectiveWait,
    /// gloo's worker thread took a collective after the thread's task that posted it (a
    /// `c10d::` op) began (`build/collective_waits.rs`).
    CollectivePost,
    /// A task that filled every multiprocessor of its device ([`SmDemand::Fills`]) held a
    /// task of another stream until its last waves. Never stored: the engine finds it while
    /// it replays (a binding, not an input), so a what-if that moves the full task moves
    /// what it holds.
    DeviceFull,
    /// The next stage of a tensor's communication begins after the previous one ends (a
    /// Horovod timeline's negotiate → fusion-buffer copy → all-reduce → copy out, as recorded
    /// in `Trace::links`).
    TensorStage,
    /// A task that cannot complete before a tensor is ready: a negotiation before this rank's
    /// gradient is produced (it ends once every rank is ready), a task that blocks on the
    /// reduced tensor (the optimizer step waiting in Horovod's `synchronize`) before its
    /// all-reduce ends. Gates completion, as a host sync does.
    TensorWait,
    /// CUDA's launch queue of the device was full: a launch call cannot return before the
    /// device task launched `capacity` launches earlier (onto that device, in host call order)
    /// has finished and freed its slot. Capacity calibrated on the trace
    /// (`graph/launch_queue.rs`); gates completion, as a host sync does.
    LaunchQueue,
    /// An op reads a tensor an op of another thread produced, as the recording states it (an
    /// Execution Trace's tensor ids, TensorFlow's `DataFlow` flows): the task the consumer
    /// begins with waits for the task the producer ends with. Ordering only: the untraced host
    /// time around them stays in their threads' gaps.
    Data,
}

impl EdgeKind {
    pub const ALL: [EdgeKind; 17] = [
        EdgeKind::LaneOrder,
        EdgeKind::Launch,
        EdgeKind::HostSync,
        EdgeKind::EventWait,
        EdgeKind::StreamWaitCall,
        EdgeKind::InferredStreamWait,
        EdgeKind::InferredHostSync,
        EdgeKind::PeerArrival,
        EdgeKind::CollectiveArrival,
        EdgeKind::ThreadHandoff,
        EdgeKind::CollectiveWait,
        EdgeKind::CollectivePost,
        EdgeKind::DeviceFull,
        EdgeKind::TensorStage,
        EdgeKind::TensorWait,
        EdgeKind::LaunchQueue,
        EdgeKind::Data,
    ];

    pub fn is_inferred(self) -> bool {
        matches!(
            self,
            EdgeKind::InferredStreamWait | EdgeKind::InferredHostSync
        )
    }

    /// Launch edges count from when the call *begins*: the call submits its work and may then
    /// block on it (a synchronous copy), so its end cannot gate its own work.
    pub fn from_source_begin(self) -> bool {
        matches!(
            self,
            EdgeKind::Launch
                | EdgeKind::PeerArrival
                | EdgeKind::CollectiveArrival
                | EdgeKind::CollectivePost
        )
    }

    /// Host-sync edges gate when a blocking call can *return*, not when it starts: the call
    /// occupies its thread while it waits.
    pub fn gates_completion(self) -> bool {
        matches!(
            self,
            EdgeKind::HostSync
                | EdgeKind::InferredHostSync
                | EdgeKind::PeerArrival
                | EdgeKind::TensorWait
                | EdgeKind::LaunchQueue
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::LaneOrder => "lane_order",
            EdgeKind::Launch => "launch",
            EdgeKind::HostSync => "host_sync",
            EdgeKind::EventWait => "event_wait",
            EdgeKind::StreamWaitCall => "stream_wait_call",
            EdgeKind::InferredStreamWait => "inferred_stream_wait",
            EdgeKind::InferredHostSync => "inferred_host_sync",
            EdgeKind::PeerArrival => "peer_arrival",
            EdgeKind::CollectiveArrival => "collective_arrival",
            EdgeKind::ThreadHandoff => "thread_handoff",
            EdgeKind::CollectiveWait => "collective_wait",
            EdgeKind::CollectivePost => "collective_post",
            EdgeKind::DeviceFull => "device_full",
            EdgeKind::TensorStage => "tensor_stage",
            EdgeKind::TensorWait => "tensor_wait",
            EdgeKind::LaunchQueue => "launch_queue",
            EdgeKind::Data => "data",
        }
    }
}

/// A lane of the graph, as in the trace.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GraphLane {
    pub trace_lane: LaneId,
    pub kind: LaneKind,
    /// Tasks of this lane are `first_task .. first_task + task_count`.
    pub first_task: u32,
    pub task_count: u32,
    /// The device whose multiprocessors this lane's work shares (device lanes only): the
    /// engine's capacity is per device ([`SmDemand`]).
    pub device: Option<i64>,
}

/// What a device task asks of its device's multiprocessors, for the engine's capacity model.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum SmDemand {
    /// None: host work, or a copy the copy engines move.
    None,
    /// Some multiprocessors, not all: it starts when the device has room and holds no one.
    Shares,
    /// More resident blocks than the device holds at once, this many times over (waves, from
    /// its launch configuration or, for a device-to-device copy, its size): it holds the
    /// device until its last waves retire, and work of other streams waits for them.
    Fills { waves: f32 },
}

impl SmDemand {
    /// The default for a task of `kind` whose launch configuration is not known.
    pub fn of_kind(kind: TaskKind) -> SmDemand {
        match kind {
            TaskKind::Kernel | TaskKind::Memset => SmDemand::Shares,
            // A communication kernel runs one small block per channel, which finds room beside
            // a full kernel: on trace_diff's V100 ranks, 25 of 37 NCCL kernels ready while a
            // full kernel ran started before its last waves (regular kernels: 38 of 158).
            TaskKind::Collective => SmDemand::None,
            TaskKind::ApiCall | TaskKind::CpuOp | TaskKind::Memcpy => SmDemand::None,
        }
    }

    /// How long before its end a task of `dur_ns` that fills the device leaves room: its last
    /// two waves (a wave's blocks do not retire at once). `None` when it never holds the
    /// device.
    pub fn room_before_end_ns(self, dur_ns: i64) -> Option<i64> {
        match self {
            SmDemand::Fills { waves } if waves > 2.0 => {
                Some((2.0 * dur_ns as f64 / f64::from(waves).ceil()).round() as i64)
            }
            _ => None,
        }
    }
}

/// `Graph::shared_gap_permille` of a device whose gaps do not grow beside other streams.
pub const SHARED_GAP_NONE_PERMILLE: u32 = 1000;

/// No value in an `i64` column.
pub const NO_TIME: i64 = i64::MIN;
/// No step in the `step` column.
pub const NO_STEP: u32 = u32::MAX;

/// The dependency graph, struct-of-arrays. Every column has one row per task.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Graph {
    pub lanes: Vec<GraphLane>,
    pub kind: Vec<TaskKind>,
    pub lane: Vec<u32>,
    pub name: Vec<NameId>,
    /// The trace event this task was made from.
    pub event: Vec<EventId>,
    /// The task's own cost. For a blocking call or a collective, the part after its wait.
    pub dur_ns: Vec<i64>,
    /// The task's own cost if inferred edges are left out: a blocking call then keeps the wait
    /// that only an inferred edge explained (what the recorded causes alone support).
    pub dur_without_inferred_ns: Vec<i64>,
    /// Untraced host time after the task on its lane (Daydream §4.2.1); 0 on device lanes.
    pub gap_ns: Vec<i64>,
    /// When the recording started and ended the task: kept to measure every prediction.
    pub rec_start_ns: Vec<i64>,
    pub rec_end_ns: Vec<i64>,
    /// Index into the window's steps, or [`NO_STEP`].
    pub step: Vec<u32>,
    /// Boundary condition: the task cannot start before this time ([`NO_TIME`] if none). Set on
    /// the first task of each host thread and on device work launched before the window opened.
    pub not_before_ns: Vec<i64>,
    /// Declared input of a collective (0 for every other task): how long after it was ready on
    /// this rank its last peer arrived, as recorded (the recorded kernel time less its
    /// transfer cost). Relative to this rank's own readiness, never to a clock: peers keep
    /// their lateness and otherwise run the same program (dPRO's symmetry), so a faster step
    /// is not held to a recorded time. Zeroed for a job without stragglers.
    pub peer_wait_ns: Vec<i64>,
    /// What each task asks of its device's multiprocessors (the engine's capacity model).
    pub sm_demand: Vec<SmDemand>,
    /// The launch queue's capacity per device, `(device, capacity)` sorted by device, where
    /// the trace shows the queue full (`graph/launch_queue.rs`); a device absent has no
    /// `LaunchQueue` edges. Kept so that an edited graph recounts its launches.
    pub launch_queue_capacity: Vec<(i64, u32)>,
    /// Launch calls (sorted) that no `LaunchQueue` edge gates: the recorded times contradict
    /// theirs (`launch_queue::contradicted`).
    pub launch_queue_exempt: Vec<TaskId>,
    /// How much longer a device task's gap after its lane predecessor is while another stream
    /// of its device runs, in thousandths of the gap (`graph/build/shared_gaps.rs`; 1000 or
    /// less: no slowdown). Applied by the engine as it replays, never stored per task.
    pub shared_gap_permille: u32,
    /// Incoming edges by target: `pred_offsets[t]..pred_offsets[t + 1]` index the columns below.
    pub pred_offsets: Vec<u32>,
    pub pred: Vec<TaskId>,
    pub pred_kind: Vec<EdgeKind>,
    /// The target may proceed `lag` after the source ends (or begins, for launch edges).
    pub pred_lag_ns: Vec<i64>,
}

impl Graph {
    pub fn task_count(&self) -> usize {
        self.kind.len()
    }

    /// Whether any task runs on a device (a CPU-only trace has none: its host tasks are all
    /// the work there is).
    pub fn has_device_tasks(&self) -> bool {
        self.kind.iter().any(|k| k.on_device())
    }

    /// An empty graph whose per-task columns have room for `tasks`: a graph built task by
    /// task grows each column once instead of by doubling (copying it and faulting its fresh
    /// pages in again at every doubling).
    pub fn with_task_capacity(tasks: usize) -> Graph {
        Graph {
            kind: Vec::with_capacity(tasks),
            lane: Vec::with_capacity(tasks),
            name: Vec::with_capacity(tasks),
            event: Vec::with_capacity(tasks),
            dur_ns: Vec::with_capacity(tasks),
            dur_without_inferred_ns: Vec::with_capacity(tasks),
            gap_ns: Vec::with_capacity(tasks),
            rec_start_ns: Vec::with_capacity(tasks),
            rec_end_ns: Vec::with_capacity(tasks),
            step: Vec::with_capacity(tasks),
            not_before_ns: Vec::with_capacity(tasks),
            peer_wait_ns: Vec::with_capacity(tasks),
            sm_demand: Vec::with_capacity(tasks),
            ..Graph::default()
        }
    }

    /// Drops every task from `first` on (their edges are not installed yet): the builder
    /// rebuilds the last lane's tasks when it splits them.
    pub(crate) fn truncate_tasks(&mut self, first: usize) {
        self.kind.truncate(first);
        self.lane.truncate(first);
        self.name.truncate(first);
        self.event.truncate(first);
        self.dur_ns.truncate(first);
        self.dur_without_inferred_ns.truncate(first);
        self.gap_ns.truncate(first);
        self.rec_start_ns.truncate(first);
        self.rec_end_ns.truncate(first);
        self.step.truncate(first);
        self.not_before_ns.truncate(first);
        self.peer_wait_ns.truncate(first);
        self.sm_demand.truncate(first);
    }

    /// Incoming stored edges of `task` (lane order excluded).
    pub fn preds(&self, task: TaskId) -> std::ops::Range<usize> {
        self.pred_offsets[task.index()] as usize..self.pred_offsets[task.index() + 1] as usize
    }

    /// The previous task on the same lane, if any.
    pub fn lane_pred(&self, task: TaskId) -> Option<TaskId> {
        let lane = &self.lanes[self.lane[task.index()] as usize];
        (task.0 > lane.first_task).then(|| TaskId(task.0 - 1))
    }

    /// The task of trace lane `lane`'s own graph lane (its first: lanes of a thread's
    /// transfers in flight come after every trace lane's) that began at or before `at_ns` and
    /// had not ended before it: the task whose time holds that instant.
    pub fn task_holding(&self, lane: LaneId, at_ns: i64) -> Option<TaskId> {
        let lane = self.lanes.iter().find(|l| l.trace_lane == lane)?;
        let first = lane.first_task as usize;
        let starts = &self.rec_start_ns[first..first + lane.task_count as usize];
        let t = first + starts.partition_point(|&s| s <= at_ns).checked_sub(1)?;
        (self.rec_end_ns[t] >= at_ns).then_some(TaskId(t as u32))
    }

    /// Stored edges plus lane-order edges, by kind, over the tasks `filter` accepts.
    pub fn edges_by_kind(&self, mut filter: impl FnMut(TaskId) -> bool) -> Vec<(EdgeKind, u64)> {
        self.edges_by_kind_of(
            (0..self.task_count() as u32)
                .map(TaskId)
                .filter(|&t| filter(t)),
        )
    }

    /// [`Graph::edges_by_kind`] over the given tasks: a step's, without a pass over the
    /// whole window per step.
    pub fn edges_by_kind_of(
        &self,
        tasks: impl IntoIterator<Item = TaskId>,
    ) -> Vec<(EdgeKind, u64)> {
        let mut counts = [0u64; EdgeKind::ALL.len()];
        for task in tasks {
            if self.lane_pred(task).is_some() {
                counts[EdgeKind::LaneOrder as usize] += 1;
            }
            for e in self.preds(task) {
                counts[self.pred_kind[e] as usize] += 1;
            }
        }
        EdgeKind::ALL.iter().copied().zip(counts).collect()
    }
}
