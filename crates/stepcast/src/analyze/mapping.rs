//! Every task mapped to the op, layer and phase it belongs to, synchronization-free
//! (Daydream §4.3, Zins & Dagenais Algorithm 2): device task → launching call (correlation) →
//! the op stack around that call on its thread → layer; backward ops → the forward op and
//! layer they differentiate; phase of every task, with the evidence used.
//!
//! Device work whose launching call is not in the trace (launched before the window) has none of
//! that evidence; a second, weaker one maps it when it agrees: the same kernel elsewhere in the
//! window, preferably at the same place in a step's sequence on its stream (`same_kernel`). It is
//! labelled [`Evidence::SameKernelElsewhere`], counted apart
//! ([`MappedTime::same_kernel_elsewhere`]) and never overrides a mapping found from a task's own
//! launch.
//!
//! Cost: one stack sweep over the trace's events and a few passes over the tasks, O(n).

mod executor;
mod names;
mod phase;
mod same_kernel;
mod stacks;

use std::num::NonZeroU64;

use stepcast_trace::{EventId, LaneId, LaneKind, NameId, Trace};

use crate::Window;
use crate::graph::{EdgeKind, Graph, NO_STEP, TaskId, TaskKind};

use names::{NameClassifier, NameFlags};
use phase::HostClock;
use stacks::Stacks;

/// Which part of a training step a task belongs to.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Phase {
    Forward,
    Backward,
    /// The optimizer step (weight update).
    Optimizer,
    Communication,
    /// Data loading and host-to-device input copies.
    DataLoading,
    Other,
}

impl Phase {
    pub const ALL: [Phase; 6] = [
        Phase::Forward,
        Phase::Backward,
        Phase::Optimizer,
        Phase::Communication,
        Phase::DataLoading,
        Phase::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::Optimizer => "optimizer",
            Phase::Communication => "communication",
            Phase::DataLoading => "data_loading",
            Phase::Other => "other",
        }
    }
}

/// How a task's phase (or layer) was decided (shown to the user, so a wrong phase can be traced
/// back).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Evidence {
    /// No evidence: the task could not be mapped (no launching call, no op around it).
    Unmapped,
    /// The task maps to an op, but neither its stack, its name nor its position names a phase
    /// (it lies outside every step): phase `Other`, and the task counts as unmapped
    /// ([`UnmappedCause::NoPhaseEvidence`]).
    OpOnly,
    /// The kernel's own name (NCCL, fused optimizer kernels...).
    KernelName,
    /// An op, annotation or Python frame on the launching thread's stack (`Optimizer.step`,
    /// `autograd::engine::evaluate_function`, `nn.Module: X`, `## forward ##`...).
    OpStack,
    /// The autograd backward thread, `Sequence number` / `Fwd thread id` or a `fwdbwd` flow.
    Autograd,
    /// Position in the step relative to tasks mapped by stronger evidence; in a step where
    /// nothing names backward, optimizer or data-loading work, the step is one inference pass
    /// and its tasks are forward.
    Position,
    /// Weaker: device work with no launching call in the trace takes the op, layer and phase of
    /// the same kernel (copies and memsets: same kind, direction and size class) launched in
    /// the window, preferably at the same place in a step's sequence on its stream, when those
    /// occurrences agree on the phase (see `mapping/same_kernel.rs`).
    SameKernelElsewhere,
}

impl Evidence {
    pub const ALL: [Evidence; 7] = [
        Evidence::Unmapped,
        Evidence::OpOnly,
        Evidence::KernelName,
        Evidence::OpStack,
        Evidence::Autograd,
        Evidence::Position,
        Evidence::SameKernelElsewhere,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Evidence::Unmapped => "unmapped",
            Evidence::OpOnly => "op_only",
            Evidence::KernelName => "kernel_name",
            Evidence::OpStack => "op_stack",
            Evidence::Autograd => "autograd",
            Evidence::Position => "position",
            Evidence::SameKernelElsewhere => "same_kernel_elsewhere",
        }
    }
}

/// Why a task is not mapped to an op and a phase: the evidence the trace lacks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum UnmappedCause {
    /// Device work with no launching call in the trace (and no agreeing occurrence of the same
    /// kernel elsewhere, [`Evidence::SameKernelElsewhere`]), launched before the host recording
    /// began: its correlation id is below every recorded call's (CUPTI numbers them in launch
    /// order), or it started before the trace's first recorded call (host event, in a trace
    /// without calls). The op that launched it is not in the trace.
    LaunchedBeforeWindow,
    /// Device work with no launching call in the trace (nor an agreeing occurrence of the same
    /// kernel elsewhere) and no sign that it was launched before the window: no correlation id or flow, or one that no recorded call carries.
    NoLaunchRecorded,
    /// The launching call (or, for a host task, the call itself) has no op, annotation or
    /// Python frame around it, on its thread or, for an executor call, on the thread it runs for.
    NoOpAroundLaunch,
    /// An op was found, but nothing (stack, thread, kernel name, position in a step) names the
    /// phase: outside every step.
    NoPhaseEvidence,
}

impl UnmappedCause {
    pub const ALL: [UnmappedCause; 4] = [
        UnmappedCause::LaunchedBeforeWindow,
        UnmappedCause::NoLaunchRecorded,
        UnmappedCause::NoOpAroundLaunch,
        UnmappedCause::NoPhaseEvidence,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            UnmappedCause::LaunchedBeforeWindow => "launched_before_window",
            UnmappedCause::NoLaunchRecorded => "no_launch_recorded",
            UnmappedCause::NoOpAroundLaunch => "no_op_around_launch",
            UnmappedCause::NoPhaseEvidence => "no_phase_evidence",
        }
    }
}

/// The op a task maps to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    /// A `cpu_op`, `user_annotation` or Python frame around the launching call.
    Event(EventId),
    /// Nothing but the step's own `ProfilerStep#N` range (a `user_annotation` in Kineto)
    /// encloses the call: work launched straight from Python outside any op, such as
    /// `torch.cuda._sleep`'s kernel or a bare `cudaEventRecord`. The step is its op. Index
    /// into `Trace::steps`.
    Step(u32),
}

impl Op {
    /// The op's name as recorded.
    pub fn name(self, trace: &Trace) -> NameId {
        match self {
            Op::Event(event) => trace.events[event.index()].name,
            Op::Step(step) => trace.steps[step as usize].name,
        }
    }
}

/// The mapping of every task of a window's graph (one row per task, as the graph's columns).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mapping {
    /// The innermost op around the task's launching call: a `cpu_op` event, or, when no
    /// `cpu_op` encloses the call, the innermost `user_annotation` or Python frame, or, when
    /// none does, the step marker around it ([`Op::Step`]).
    pub op: Vec<Option<Op>>,
    /// The innermost container of any kind (op, annotation, Python frame) around the launching
    /// call: the top of its stack, walked down with [`Mapping::stack`]. A call the autograd
    /// engine makes outside any op, right after an autograd function (gradient accumulation),
    /// takes that function as its frame.
    pub frame: Vec<Option<EventId>>,
    /// The layer (module) the task belongs to, if known: an `nn.Module` python frame or a
    /// `user_annotation`, resolved through autograd for backward tasks.
    pub layer: Vec<Option<NameId>>,
    /// How the layer was found: `OpStack` (a module frame or annotation around the call),
    /// `Autograd` (the forward op with the backward op's `Sequence number`), `Unmapped` (none).
    pub layer_evidence: Vec<Evidence>,
    pub phase: Vec<Phase>,
    pub evidence: Vec<Evidence>,
    /// Per trace event: the innermost op, annotation or Python frame enclosing it.
    pub parent: Vec<Option<EventId>>,
    /// Host threads found to run the autograd backward pass.
    pub backward_lanes: Vec<LaneId>,
    /// Per trace lane: the outermost data-loading ranges on it (`enumerate(DataLoader)#...`,
    /// `## load_batch ##`, `torch/utils/data/` frames), sorted and disjoint. The host time
    /// inside them is data loading wherever the calls or untraced gaps fall
    /// (`analyze::host_time`).
    pub data_loading_ranges: Vec<Vec<(i64, i64)>>,
    /// Per task: `None` when it maps to an op and to a phase decided by evidence (anything but
    /// [`Evidence::Unmapped`] and [`Evidence::OpOnly`]), else why not.
    pub unmapped: Vec<Option<UnmappedCause>>,
    /// Device tasks mapped by [`Evidence::SameKernelElsewhere`], each with the launch-mapped
    /// task whose op, layer and phase it took; sorted by task.
    pub same_kernel_as: Vec<(TaskId, TaskId)>,
}

impl Mapping {
    /// The task maps to an op and to a phase found by some evidence.
    pub fn is_mapped(&self, task: TaskId) -> bool {
        self.unmapped[task.index()].is_none()
    }

    /// The name of the task's op, if it has one.
    pub fn op_name(&self, trace: &Trace, task: TaskId) -> Option<NameId> {
        self.op[task.index()].map(|op| op.name(trace))
    }

    /// The op stack around the task's launching call, outermost first: ops, annotations and
    /// Python frames.
    pub fn stack(&self, task: TaskId) -> Vec<EventId> {
        let mut stack = Vec::new();
        let mut frame = self.frame[task.index()];
        while let Some(event) = frame {
            stack.push(event);
            frame = self.parent[event.index()];
        }
        stack.reverse();
        stack
    }

    /// The launch-mapped task whose mapping `task` took, if it was mapped by
    /// [`Evidence::SameKernelElsewhere`].
    pub fn same_kernel_as(&self, task: TaskId) -> Option<TaskId> {
        self.same_kernel_as
            .binary_search_by_key(&task, |&(t, _)| t)
            .ok()
            .map(|i| self.same_kernel_as[i].1)
    }
}

/// Maps every task of `window` (built from `trace`) to its op, layer and phase.
pub fn map(trace: &Trace, window: &Window) -> Mapping {
    map_with(
        trace,
        window,
        &super::launches::launch_calls(trace, &window.graph),
    )
}

/// [`map`], given each task's launching call by correlation (`launches::launch_calls`).
pub(crate) fn map_with(
    trace: &Trace,
    window: &Window,
    launch_calls: &[Option<EventId>],
) -> Mapping {
    let graph = &window.graph;
    let stacks = Stacks::build(trace);
    let call = host_calls(graph, launch_calls);
    let mut classifier = NameClassifier::new(&trace.names);
    let n = graph.task_count();
    let mut mapping = Mapping {
        op: Vec::with_capacity(n),
        frame: Vec::with_capacity(n),
        layer: Vec::with_capacity(n),
        layer_evidence: Vec::with_capacity(n),
        ..Mapping::default()
    };
    let mut decided = Vec::with_capacity(n);
    let step_markers = StepMarkers::new(trace);
    for t in 0..n {
        let context = call[t].map(|event| &stacks.context[event.index()]);
        let on_backward_lane = call[t]
            .is_some_and(|event| stacks.backward_lane[trace.events[event.index()].lane.index()]);
        // Zins & Dagenais' "current GPU operation": the innermost `cpu_op`; apex's fused
        // optimizers and CUDA-graph replays launch from a `record_function` range or a Python
        // frame with no `cpu_op` in between, and that range is then the op.
        let op = context.and_then(|c| c.op.or(c.frame)).map(Op::Event);
        mapping
            .op
            .push(op.or_else(|| call[t].and_then(|event| step_markers.around(trace, event))));
        mapping.frame.push(context.and_then(|c| c.frame));
        let (layer, layer_evidence) =
            context.map_or((None, Evidence::Unmapped), |c| layer_of(c, &stacks));
        mapping.layer.push(layer);
        mapping.layer_evidence.push(layer_evidence);
        let kernel_flags = if graph.kind[t].on_device() {
            classifier.flags(graph.name[t], trace.events[graph.event[t].index()].kind)
        } else {
            NameFlags::default()
        };
        let from_name = phase::from_kernel_name(graph.kind[t], kernel_flags);
        let from_stack = context.and_then(|c| {
            phase::from_stack(c, on_backward_lane, stacks.is_differentiated_forward(c))
        });
        decided.push(match (from_name, from_stack) {
            (Some(name @ (Phase::Communication, _)), _) => Some(name),
            (_, Some(stack)) => Some(stack),
            (name, None) => name,
        });
    }
    let op_found: Vec<bool> = mapping.op.iter().map(Option::is_some).collect();
    let clock = HostClock {
        trace,
        window,
        call: &call,
    };
    let mut phases = phase::by_position(&clock, &stacks, &decided, &op_found);
    phase::input_copies(&clock, &mut phases, |t| {
        graph.kind[t] == TaskKind::Memcpy && is_host_to_device(trace.name(graph.name[t]))
    });
    (mapping.phase, mapping.evidence) = phases.into_iter().unzip();
    mapping.unmapped = unmapped_causes(trace, graph, &mapping);
    // Last, and only for work the evidence above could not reach: it reads their mappings.
    let same_kernel_as = same_kernel::donors(trace, graph, &mapping);
    same_kernel::apply(&mut mapping, &same_kernel_as);
    mapping.same_kernel_as = same_kernel_as;
    mapping.data_loading_ranges = data_loading_ranges(trace, &stacks);
    mapping.parent = stacks.parent;
    mapping.backward_lanes = (0..trace.lanes.len())
        .filter(|&lane| stacks.backward_lane[lane])
        .map(|lane| LaneId(lane as u32))
        .collect();
    mapping
}

/// The host event each task's stack is read at: for device work, the very call that launched
/// it (its correlation id; the graph's `Launch` edge comes from the outermost call around it,
/// and MTIA's `predictor_executor::run` is a runtime call wrapping whole op trees); for a host
/// task, its own event. `None` for device work with no launching call in the window.
fn host_calls(graph: &Graph, launch_calls: &[Option<EventId>]) -> Vec<Option<EventId>> {
    (0..graph.task_count())
        .map(|t| {
            let task = TaskId(t as u32);
            if !graph.kind[t].on_device() {
                return Some(graph.event[t]);
            }
            let launcher = graph
                .preds(task)
                .find(|&e| graph.pred_kind[e] == EdgeKind::Launch)
                .map(|e| graph.pred[e])?;
            Some(launch_calls[t].unwrap_or(graph.event[launcher.index()]))
        })
        .collect()
}

/// The step markers of each host thread, to find the one around a call.
struct StepMarkers {
    /// Per trace lane: indices into `Trace::steps`, by start (markers on one thread never
    /// overlap).
    by_lane: Vec<Vec<u32>>,
}

impl StepMarkers {
    fn new(trace: &Trace) -> StepMarkers {
        let mut by_lane = vec![Vec::new(); trace.lanes.len()];
        for (i, step) in trace.steps.iter().enumerate() {
            by_lane[step.lane.index()].push(i as u32);
        }
        StepMarkers { by_lane }
    }

    /// The step marker on `event`'s thread that encloses its start.
    fn around(&self, trace: &Trace, event: EventId) -> Option<Op> {
        let event = &trace.events[event.index()];
        let markers = &self.by_lane[event.lane.index()];
        let after =
            markers.partition_point(|&i| trace.steps[i as usize].start_ns <= event.start_ns);
        let last = *markers.get(after.checked_sub(1)?)?;
        (event.start_ns < trace.steps[last as usize].end_ns()).then_some(Op::Step(last))
    }
}

/// A backward op's layer is its forward op's (same `Sequence number`); anything else takes the
/// nearest module frame or annotation on its own stack.
fn layer_of(context: &stacks::Context, stacks: &Stacks) -> (Option<NameId>, Evidence) {
    let through_autograd = context
        .autograd_sequence
        .and_then(|sequence| stacks.forward_layer.get(&sequence).copied());
    if let Some(layer) = through_autograd {
        return (Some(layer), Evidence::Autograd);
    }
    match context.own_layer() {
        Some(layer) => (Some(layer), Evidence::OpStack),
        None => (None, Evidence::Unmapped),
    }
}

/// `Memcpy HtoD (Pageable -> Device)` and the like.
fn is_host_to_device(name: &str) -> bool {
    name.contains("HtoD") || name.contains("HostToDevice")
}

/// Why each task is not mapped, if it is not (see [`UnmappedCause`]).
fn unmapped_causes(trace: &Trace, graph: &Graph, mapping: &Mapping) -> Vec<Option<UnmappedCause>> {
    // One pass over the host events: the lowest correlation of a call, the earliest call (or,
    // in a trace without calls, host event). Device work that started before any recorded call
    // cannot have been launched by one.
    let mut first_call_correlation: Option<NonZeroU64> = None;
    let mut first_call_ns: Option<i64> = None;
    let mut first_host_ns: Option<i64> = None;
    for e in &trace.events {
        if trace.lane(e.lane).kind != LaneKind::CpuThread {
            continue;
        }
        if e.kind.is_api_call() {
            first_call_ns = Some(first_call_ns.map_or(e.start_ns, |s| s.min(e.start_ns)));
            if let Some(correlation) = e.correlation {
                first_call_correlation =
                    Some(first_call_correlation.map_or(correlation, |c| c.min(correlation)));
            }
        }
        first_host_ns = Some(first_host_ns.map_or(e.start_ns, |s| s.min(e.start_ns)));
    }
    let first_launch_ns = first_call_ns.or(first_host_ns);
    (0..graph.task_count())
        .map(|t| {
            let device = graph.kind[t].on_device();
            if device && !is_launched(graph, t) {
                let event = &trace.events[graph.event[t].index()];
                let numbered_before = event
                    .correlation
                    .zip(first_call_correlation)
                    .is_some_and(|(own, first)| own < first);
                let ran_before = first_launch_ns.is_some_and(|first| event.start_ns < first);
                return Some(if numbered_before || ran_before {
                    UnmappedCause::LaunchedBeforeWindow
                } else {
                    UnmappedCause::NoLaunchRecorded
                });
            }
            if mapping.op[t].is_none() {
                return Some(UnmappedCause::NoOpAroundLaunch);
            }
            matches!(mapping.evidence[t], Evidence::Unmapped | Evidence::OpOnly)
                .then_some(UnmappedCause::NoPhaseEvidence)
        })
        .collect()
}

/// The device task has a launching call in the window.
fn is_launched(graph: &Graph, task: usize) -> bool {
    graph
        .preds(TaskId(task as u32))
        .any(|e| graph.pred_kind[e] == EdgeKind::Launch)
}

/// Device time of a task as recorded (a collective's wait for its peers included).
fn device_ns(graph: &Graph, task: usize) -> i64 {
    graph.rec_end_ns[task] - graph.rec_start_ns[task]
}

/// The step each device task counts in: its launching call's step, or, for work with no
/// launching call in the window, the step during which it ran (so that it lowers that step's
/// mapped fraction instead of vanishing from it).
fn device_steps(window: &Window) -> Vec<u32> {
    let graph = &window.graph;
    let starts: Vec<i64> = window.steps.iter().map(|s| s.start_ns).collect();
    (0..graph.task_count())
        .map(|t| {
            if !graph.kind[t].on_device() || is_launched(graph, t) {
                return graph.step[t];
            }
            match starts.partition_point(|&s| s <= graph.rec_start_ns[t]) {
                0 => NO_STEP,
                i => (i - 1) as u32,
            }
        })
        .collect()
}

/// A number of tasks and their recorded device time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TasksNs {
    pub tasks: u64,
    pub ns: i64,
}

impl TasksNs {
    fn add(&mut self, ns: i64) {
        self.tasks += 1;
        self.ns += ns;
    }
}

/// Device time of a step (or the window) and how much of it is mapped; the rest by cause.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MappedTime {
    /// Every device task counted here, and its time.
    pub device: TasksNs,
    /// The mapped ones.
    pub mapped: TasksNs,
    /// The part of `mapped` mapped by the weaker [`Evidence::SameKernelElsewhere`].
    pub same_kernel_elsewhere: TasksNs,
    /// The unmapped ones, in [`UnmappedCause::ALL`] order; sums to `device - mapped`.
    pub unmapped: [TasksNs; UnmappedCause::ALL.len()],
}

impl MappedTime {
    fn add(&mut self, mapping: &Mapping, task: usize, ns: i64) {
        self.device.add(ns);
        match mapping.unmapped[task] {
            None if mapping.evidence[task] == Evidence::SameKernelElsewhere => {
                self.mapped.add(ns);
                self.same_kernel_elsewhere.add(ns);
            }
            None => self.mapped.add(ns),
            Some(cause) => self.unmapped[cause as usize].add(ns),
        }
    }

    /// Share of device time mapped to an op and a phase (1.0 without device time).
    pub fn fraction(&self) -> f64 {
        if self.device.ns == 0 {
            1.0
        } else {
            self.mapped.ns as f64 / self.device.ns as f64
        }
    }

    pub fn unmapped(&self, cause: UnmappedCause) -> TasksNs {
        self.unmapped[cause as usize]
    }
}

/// Per step of the window: its device time (the work launched in it, and work with no launching
/// call in the window that ran during it), mapped and unmapped by cause.
pub fn mapped_time_by_step(window: &Window, mapping: &Mapping) -> Vec<MappedTime> {
    let graph = &window.graph;
    let mut steps = vec![MappedTime::default(); window.steps.len()];
    for (t, step) in device_steps(window).into_iter().enumerate() {
        if step != NO_STEP && graph.kind[t].on_device() {
            steps[step as usize].add(mapping, t, device_ns(graph, t));
        }
    }
    steps
}

/// Per step of the window: the share of its device time whose task maps to an op and a phase
/// (1.0 for a step without device time).
pub fn gpu_time_mapped_fraction(window: &Window, mapping: &Mapping) -> Vec<f64> {
    mapped_time_by_step(window, mapping)
        .iter()
        .map(MappedTime::fraction)
        .collect()
}

/// Counts of a mapping over the whole window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MappingSummary {
    /// Device work of the whole window (steps or not), mapped and unmapped by cause.
    pub device: MappedTime,
    /// Device time with a layer.
    pub layered_device_ns: i64,
    /// Device time per phase, in [`Phase::ALL`] order.
    pub device_ns_by_phase: Vec<(Phase, i64)>,
    /// Device time per phase evidence, in [`Evidence::ALL`] order.
    pub device_ns_by_evidence: Vec<(Evidence, i64)>,
    /// Tasks (host and device) per phase, in [`Phase::ALL`] order.
    pub tasks_by_phase: Vec<(Phase, u64)>,
}

impl MappingSummary {
    /// Share of device time mapped to an op and a phase (1.0 without device time).
    pub fn mapped_fraction(&self) -> f64 {
        self.device.fraction()
    }

    pub fn device_ns_in(&self, phase: Phase) -> i64 {
        self.device_ns_by_phase[phase as usize].1
    }
}

pub fn summarize(window: &Window, mapping: &Mapping) -> MappingSummary {
    let graph = &window.graph;
    let mut summary = MappingSummary::default();
    let mut by_phase = [0i64; Phase::ALL.len()];
    let mut by_evidence = [0i64; Evidence::ALL.len()];
    let mut tasks_by_phase = [0u64; Phase::ALL.len()];
    for t in 0..graph.task_count() {
        let phase = mapping.phase[t];
        tasks_by_phase[phase as usize] += 1;
        if !graph.kind[t].on_device() {
            continue;
        }
        let ns = device_ns(graph, t);
        summary.device.add(mapping, t, ns);
        by_phase[phase as usize] += ns;
        by_evidence[mapping.evidence[t] as usize] += ns;
        if mapping.layer[t].is_some() {
            summary.layered_device_ns += ns;
        }
    }
    summary.device_ns_by_phase = Phase::ALL.iter().copied().zip(by_phase).collect();
    summary.device_ns_by_evidence = Evidence::ALL.iter().copied().zip(by_evidence).collect();
    summary.tasks_by_phase = Phase::ALL.iter().copied().zip(tasks_by_phase).collect();
    summary
}

/// Per trace lane, the outermost data-loading containers: those whose enclosing stack is not
/// already data loading. Events come lane by lane in start order, so each lane's list is
/// sorted, and outermost containers of one thread do not overlap.
fn data_loading_ranges(trace: &Trace, stacks: &Stacks) -> Vec<Vec<(i64, i64)>> {
    let mut ranges = vec![Vec::new(); trace.lanes.len()];
    for (i, event) in trace.events.iter().enumerate() {
        // Containers only: a container is the top of its own stack.
        if stacks.context[i].frame != Some(EventId(i as u32))
            || !stacks.context[i].flags.contains(NameFlags::DATA_LOADING)
        {
            continue;
        }
        let around =
            stacks.parent[i].map_or(NameFlags::default(), |p| stacks.context[p.index()].flags);
        if !around.contains(NameFlags::DATA_LOADING) {
            let lane: &mut Vec<(i64, i64)> = &mut ranges[event.lane.index()];
            let end = event.end_ns();
            match lane.last_mut() {
                // Defensive: a malformed trace could nest or overlap them; keep them disjoint.
                Some(last) if event.start_ns < last.1 => last.1 = last.1.max(end),
                _ => lane.push((event.start_ns, end)),
            }
        }
    }
    ranges
}
