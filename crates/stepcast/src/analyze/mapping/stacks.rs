//! The op stack around every host event: which ops, annotations and Python frames enclose it,
//! found by one stack sweep per thread (events on a lane are sorted by start, containers first),
//! then summarized top-down so that a task reads its whole stack in O(1).

use rustc_hash::{FxHashMap, FxHashSet};
use stepcast_trace::{EventId, EventKind, LaneKind, NameId, SequenceNumber, Trace};

use super::names::{NameClassifier, NameFlags};

/// What the stack says at one event: inside it for a container, around it otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Context {
    /// Union of the flags of every enclosing container.
    pub flags: NameFlags,
    /// The innermost `cpu_op`.
    pub op: Option<EventId>,
    /// The innermost container of any kind (the top of the stack).
    pub frame: Option<EventId>,
    /// The innermost `nn.Module: X` Python frame.
    pub module: Option<NameId>,
    /// The innermost `user_annotation` that can name a layer (not a marker).
    pub annotation: Option<NameId>,
    /// `Sequence number` of the innermost autograd function (`XBackward0`, `evaluate_function`):
    /// the forward op it differentiates carries the same number.
    pub autograd_sequence: Option<i64>,
    /// `Sequence number` of the innermost op outside any autograd function: a forward op if a
    /// backward op carries the same number.
    pub forward_sequence: Option<i64>,
    /// A call the autograd engine made on the backward thread outside any op, right after an
    /// autograd function returned: the context is that function's (see [`engine_calls`]).
    pub after_autograd_function: bool,
}

impl Context {
    /// The layer named by the stack itself: the nearest module frame, else an annotation.
    pub fn own_layer(&self) -> Option<NameId> {
        self.module.or(self.annotation)
    }
}

/// Op stacks of a whole trace.
pub(super) struct Stacks {
    /// The innermost container enclosing each event (`None` at the top of its thread, and on
    /// device lanes).
    pub parent: Vec<Option<EventId>>,
    /// Per event, see [`Context`].
    pub context: Vec<Context>,
    /// Per trace lane: the thread runs autograd's backward pass.
    pub backward_lane: Vec<bool>,
    /// `Sequence number` of a forward op → the layer that op ran in.
    pub forward_layer: FxHashMap<i64, NameId>,
    /// The `Sequence number`s that backward ops carry: the forward ops that built the graph.
    pub differentiated: FxHashSet<i64>,
}

impl Stacks {
    /// The op around this context recorded a `Sequence number` that a backward op carries: it
    /// ran in the forward pass.
    pub fn is_differentiated_forward(&self, context: &Context) -> bool {
        context
            .forward_sequence
            .is_some_and(|sequence| self.differentiated.contains(&sequence))
    }
}

pub(super) fn is_container(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::CpuOp | EventKind::UserAnnotation | EventKind::PythonFunction
    )
}

impl Stacks {
    pub fn build(trace: &Trace) -> Stacks {
        let mut parent = parents(trace);
        super::executor::link_executor_calls(trace, &mut parent);
        let mut classifier = NameClassifier::new(&trace.names);
        let mut context = contexts(trace, &parent, &mut classifier);
        let backward_lane = backward_lanes(trace, &parent, &context);
        engine_calls(trace, &parent, &backward_lane, &mut context);
        let forward_layer = forward_layers(trace, &context, &backward_lane);
        let differentiated = differentiated(&context);
        Stacks {
            parent,
            context,
            backward_lane,
            forward_layer,
            differentiated,
        }
    }
}

/// The `Sequence number`s of autograd functions: every event inside one carries its number, so
/// runs of equal numbers are inserted once.
fn differentiated(context: &[Context]) -> FxHashSet<i64> {
    let mut numbers = FxHashSet::default();
    let mut last = None;
    for sequence in context.iter().filter_map(|c| c.autograd_sequence) {
        if last != Some(sequence) {
            numbers.insert(sequence);
            last = Some(sequence);
        }
    }
    numbers
}

/// Whether `container` encloses an event starting at `start_ns` and ending at `end_ns`. By
/// start: a child rounded to end a microsecond after its parent still belongs to it.
fn encloses(container: &stepcast_trace::Event, start_ns: i64, end_ns: i64) -> bool {
    start_ns < container.end_ns() || start_ns == container.start_ns && end_ns <= container.end_ns()
}

/// The innermost enclosing container of every event: one stack sweep per host thread.
fn parents(trace: &Trace) -> Vec<Option<EventId>> {
    let events = &trace.events;
    let mut parent = vec![None; events.len()];
    let mut stack: Vec<usize> = Vec::new();
    let mut lane_start = 0;
    while lane_start < events.len() {
        let lane = events[lane_start].lane;
        let lane_end = lane_start + events[lane_start..].partition_point(|e| e.lane == lane);
        if trace.lane(lane).kind == LaneKind::CpuThread {
            stack.clear();
            for i in lane_start..lane_end {
                let event = &events[i];
                while let Some(&top) = stack.last() {
                    if encloses(&events[top], event.start_ns, event.end_ns()) {
                        break;
                    }
                    stack.pop();
                }
                parent[i] = stack.last().map(|&top| EventId(top as u32));
                if is_container(event.kind) {
                    stack.push(i);
                }
            }
        }
        lane_start = lane_end;
    }
    parent
}

/// Every event's context, top-down: a parent's context is final before a child reads it. On
/// one thread a parent precedes its children in `events`; an executor call's parent may lie on
/// another thread, later in `events`, so each event's uncomputed ancestors are computed first.
fn contexts(
    trace: &Trace,
    parent: &[Option<EventId>],
    classifier: &mut NameClassifier,
) -> Vec<Context> {
    let n = trace.events.len();
    let mut context = vec![Context::default(); n];
    let mut done = vec![false; n];
    let mut chain: Vec<usize> = Vec::new();
    for i in 0..n {
        let mut at = Some(i);
        while let Some(j) = at {
            // `chain.len() <= n` guards against a cycle of parents, which the sweep never makes.
            if done[j] || chain.len() > n {
                break;
            }
            chain.push(j);
            at = parent[j].map(EventId::index);
        }
        while let Some(j) = chain.pop() {
            let around = parent[j].filter(|p| done[p.index()]);
            context[j] = context_of(trace, j, around.map(|p| &context[p.index()]), classifier);
            done[j] = true;
        }
    }
    context
}

/// The context of event `i` given the context around it.
fn context_of(
    trace: &Trace,
    i: usize,
    around: Option<&Context>,
    classifier: &mut NameClassifier,
) -> Context {
    let event = &trace.events[i];
    let mut here = around.copied().unwrap_or_default();
    if is_container(event.kind) {
        let flags = classifier.flags(event.name, event.kind);
        here.flags = here.flags.union(flags);
        here.frame = Some(EventId(i as u32));
        if event.kind == EventKind::CpuOp {
            here.op = Some(EventId(i as u32));
        }
        if flags.contains(NameFlags::MODULE) {
            here.module = Some(event.name);
        }
        if event.kind == EventKind::UserAnnotation && !flags.contains(NameFlags::MARKER) {
            here.annotation = Some(event.name);
        }
        if event.sequence_number.is_some() {
            if here.flags.contains(NameFlags::BACKWARD) {
                if flags.contains(NameFlags::BACKWARD) {
                    here.autograd_sequence = event.sequence_number.map(SequenceNumber::get);
                }
            } else if event.kind == EventKind::CpuOp {
                here.forward_sequence = event.sequence_number.map(SequenceNumber::get);
            }
        }
    }
    here
}

/// Threads that run the backward pass. Autograd runs it on a device thread of its own (the
/// trace's `Fwd thread id` points back to the forward thread): a thread with autograd functions
/// at its top level and no forward op of its own, i.e. no op recording a `Sequence number`
/// outside an autograd function. Measured on the testdata traces: autograd threads hold none,
/// main threads hundreds to thousands. The threads holding step markers never qualify (when
/// backward runs there, its ops are recognized by name instead).
fn backward_lanes(trace: &Trace, parent: &[Option<EventId>], context: &[Context]) -> Vec<bool> {
    let mut autograd_top_level = vec![0u64; trace.lanes.len()];
    let mut forward_ops = vec![0u64; trace.lanes.len()];
    for (i, event) in trace.events.iter().enumerate() {
        let lane = event.lane.index();
        let in_autograd = context[i].flags.contains(NameFlags::BACKWARD);
        if parent[i].is_none() && is_container(event.kind) && in_autograd {
            autograd_top_level[lane] += 1;
        }
        if event.kind == EventKind::CpuOp && event.sequence_number.is_some() && !in_autograd {
            forward_ops[lane] += 1;
        }
    }
    let mut backward: Vec<bool> = (0..trace.lanes.len())
        .map(|lane| autograd_top_level[lane] > 0 && forward_ops[lane] == 0)
        .collect();
    for step in &trace.steps {
        backward[step.lane.index()] = false;
    }
    backward
}

/// Calls on a backward thread outside any op. The autograd engine runs them after a function's
/// own range closed: it accumulates the function's output gradients into the next function's
/// inputs (`AddFunctor` kernels) and reduces broadcast gradients (`sum` kernels), e.g. 102 such
/// launches in tb_plugin's `resnet50_autograd_api` trace (PyTorch 1.8). They belong to the
/// autograd function just before them, whose context they take.
fn engine_calls(
    trace: &Trace,
    parent: &[Option<EventId>],
    backward_lane: &[bool],
    context: &mut [Context],
) {
    let mut last_function: Option<(stepcast_trace::LaneId, usize)> = None;
    for (i, event) in trace.events.iter().enumerate() {
        if parent[i].is_some() || !backward_lane[event.lane.index()] {
            continue;
        }
        if is_container(event.kind) {
            last_function = context[i]
                .flags
                .contains(NameFlags::BACKWARD)
                .then_some((event.lane, i));
            continue;
        }
        if let Some((lane, function)) = last_function
            && lane == event.lane
        {
            context[i] = Context {
                after_autograd_function: true,
                ..context[function]
            };
        }
    }
}

/// The layer of every forward op that records a `Sequence number`, so that the backward op with
/// the same number inherits it. Ops record the autograd counter's current value and the op that
/// creates a graph node advances it, so several ops share a number and the last of them (in a
/// thread's order) is the one the backward op differentiates: the last op with a layer wins.
fn forward_layers(
    trace: &Trace,
    context: &[Context],
    backward_lane: &[bool],
) -> FxHashMap<i64, NameId> {
    let mut layers = FxHashMap::default();
    for (i, event) in trace.events.iter().enumerate() {
        let Some(sequence) = event.sequence_number else {
            continue;
        };
        let here = &context[i];
        if event.kind != EventKind::CpuOp
            || here.flags.contains(NameFlags::BACKWARD)
            || backward_lane[event.lane.index()]
        {
            continue;
        }
        if let Some(layer) = here.own_layer() {
            layers.insert(sequence.get(), layer);
        }
    }
    layers
}
