//! The phase of every task, from the strongest evidence there is, in this order: a collective
//! kernel's name; communication, optimizer and autograd markers on the launching call's stack;
//! the autograd thread; data-loader and forward markers (`nn.Module`, `## forward ##`); a forward
//! op that a backward op differentiates (same `Sequence number`); a fused optimizer kernel or op;
//! last, the task's position in its step relative to the tasks and ops placed by that evidence.

use stepcast_trace::{EventId, Trace};

use crate::Window;
use crate::graph::{NO_STEP, TaskKind};

use super::names::NameFlags;
use super::stacks::{Context, Stacks};
use super::{Evidence, Phase};

/// A decided phase and what decided it.
pub(super) type Decision = (Phase, Evidence);

/// The phase the stack and thread of a host call say, if they say one. Markers outrank the
/// thread: communication or an optimizer step called from the autograd thread stays what it is.
/// `differentiated_forward`: the op around the call is the forward op of a recorded backward op
/// (same `Sequence number`).
pub(super) fn from_stack(
    context: &Context,
    on_backward_lane: bool,
    differentiated_forward: bool,
) -> Option<Decision> {
    if context.after_autograd_function {
        return Some((Phase::Backward, Evidence::Autograd));
    }
    if context.frame.is_none() {
        // Outside any op: only the thread can tell.
        return on_backward_lane.then_some((Phase::Backward, Evidence::Autograd));
    }
    let flags = context.flags;
    let stack_says = [
        (NameFlags::COMMUNICATION, Phase::Communication),
        (NameFlags::OPTIMIZER, Phase::Optimizer),
        (NameFlags::BACKWARD, Phase::Backward),
    ];
    for (flag, phase) in stack_says {
        if flags.contains(flag) {
            return Some((phase, Evidence::OpStack));
        }
    }
    if on_backward_lane {
        return Some((Phase::Backward, Evidence::Autograd));
    }
    let markers = [
        (NameFlags::DATA_LOADING, Phase::DataLoading),
        (NameFlags::FORWARD, Phase::Forward),
    ];
    if let Some((_, phase)) = markers.into_iter().find(|&(flag, _)| flags.contains(flag)) {
        return Some((phase, Evidence::OpStack));
    }
    if differentiated_forward {
        return Some((Phase::Forward, Evidence::Autograd));
    }
    flags
        .contains(NameFlags::FUSED_OPTIMIZER)
        .then_some((Phase::Optimizer, Evidence::OpStack))
}

/// The phase a device task's own name says: collectives are communication wherever they were
/// launched; a fused optimizer kernel is the weight update unless its stack said otherwise.
pub(super) fn from_kernel_name(kind: TaskKind, flags: NameFlags) -> Option<Decision> {
    if kind == TaskKind::Collective {
        return Some((Phase::Communication, Evidence::KernelName));
    }
    flags
        .contains(NameFlags::FUSED_OPTIMIZER)
        .then_some((Phase::Optimizer, Evidence::KernelName))
}

/// The host clock of each task: its own start for a host task, its launching call's start for
/// device work; `None` for device work with no launching call.
pub(super) struct HostClock<'a> {
    pub trace: &'a Trace,
    pub window: &'a Window,
    /// Per task, the host event its stack is read at.
    pub call: &'a [Option<EventId>],
}

impl HostClock<'_> {
    fn start_ns(&self, task: usize) -> Option<i64> {
        self.call[task].map(|e| self.trace.events[e.index()].start_ns)
    }
}

/// A task placed in a training phase by its stack, thread or name, on the host clock: the
/// landmarks that place the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Anchor {
    host_ns: i64,
    phase: Phase,
}

/// Tasks no evidence placed get their phase from the placed tasks around their host call in
/// the same step (`prev`, `next`): before a step's backward pass is forward; after a backward
/// task is backward; inside the optimizer step is the optimizer; after the optimizer step is
/// other, unless a new iteration follows (a window without step markers holds many). A step
/// with nothing placed, the synthetic step of a trace without step markers included, shows no
/// backward pass, optimizer step or data loading: it is an inference pass, forward. Only tasks
/// outside every step keep no phase (`Other`, [`Evidence::OpOnly`]).
pub(super) fn by_position(
    clock: &HostClock,
    stacks: &Stacks,
    decided: &[Option<Decision>],
    op_found: &[bool],
) -> Vec<Decision> {
    let graph = &clock.window.graph;
    // Placed by position: an op found, no evidence, a launching call inside a step.
    let by_position = |t: usize| {
        decided[t].is_none() && op_found[t] && clock.call[t].is_some() && graph.step[t] != NO_STEP
    };
    let anchors = if (0..decided.len()).any(by_position) {
        step_anchors(clock, stacks, decided)
    } else {
        Vec::new()
    };
    let mut phases = Vec::with_capacity(decided.len());
    for t in 0..decided.len() {
        if let Some(decision) = decided[t] {
            phases.push(decision);
            continue;
        }
        if !op_found[t] {
            // Nothing around the call: no stack to read, no op to place.
            phases.push((Phase::Other, Evidence::Unmapped));
            continue;
        }
        let no_evidence = (Phase::Other, Evidence::OpOnly);
        let (Some(host_ns), step) = (clock.start_ns(t), graph.step[t]) else {
            phases.push(no_evidence);
            continue;
        };
        if step == NO_STEP {
            phases.push(no_evidence);
            continue;
        }
        let anchors = &anchors[step as usize];
        let split = anchors.partition_point(|a| a.host_ns <= host_ns);
        let prev = split.checked_sub(1).map(|i| anchors[i].phase);
        let next = anchors.get(split).map(|a| a.phase);
        phases.push((phase_between(prev, next), Evidence::Position));
    }
    phases
}

/// The phase of a task between the placed tasks `prev` and `next` of its step.
fn phase_between(prev: Option<Phase>, next: Option<Phase>) -> Phase {
    match (prev, next) {
        // The batch is loaded: its forward pass follows.
        (Some(Phase::DataLoading), _) => Phase::Forward,
        // After the optimizer step, at the step's end or before the next batch: bookkeeping
        // (loss logging, syncs).
        (Some(Phase::Optimizer), None | Some(Phase::DataLoading)) => Phase::Other,
        // The next iteration's forward pass has begun (gradient accumulation, or many
        // iterations in one window).
        (Some(Phase::Backward | Phase::Optimizer), Some(Phase::Forward)) => Phase::Forward,
        (Some(Phase::Backward), _) => Phase::Backward,
        (Some(Phase::Optimizer), Some(Phase::Optimizer)) => Phase::Optimizer,
        // Between `zero_grad` and the backward pass: the forward pass.
        (Some(Phase::Optimizer), Some(Phase::Backward)) => Phase::Forward,
        _ => Phase::Forward,
    }
}

/// Per step, in host order: the tasks placed in forward, backward, the optimizer or data
/// loading by strong evidence, and the ops that open those phases.
fn step_anchors(
    clock: &HostClock,
    stacks: &Stacks,
    decided: &[Option<Decision>],
) -> Vec<Vec<Anchor>> {
    let graph = &clock.window.graph;
    let mut anchors = vec![Vec::new(); clock.window.steps.len()];
    for t in 0..decided.len() {
        let (Some((phase, evidence)), Some(host_ns)) = (decided[t], clock.start_ns(t)) else {
            continue;
        };
        let step = graph.step[t];
        let strong = matches!(
            evidence,
            Evidence::OpStack | Evidence::Autograd | Evidence::KernelName
        );
        if step != NO_STEP && strong && is_training_phase(phase) {
            anchors[step as usize].push(Anchor { host_ns, phase });
        }
    }
    for (host_ns, phase) in phase_openers(clock.trace, stacks) {
        if let Some(step) = step_at(clock.window, host_ns) {
            anchors[step].push(Anchor { host_ns, phase });
        }
    }
    // Pushed lane by lane, each lane's in time order: a merge of sorted runs (equal anchors are
    // identical, so a stable sort gives the unstable order).
    for step_anchors in &mut anchors {
        step_anchors.sort();
    }
    anchors
}

fn is_training_phase(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::Forward | Phase::Backward | Phase::Optimizer | Phase::DataLoading
    )
}

/// Ops, annotations and frames that open a phase (`enumerate(DataLoader)`,
/// `Optimizer.zero_grad`, an autograd function, `## forward ##`, `nn.Module: X`), with their
/// start. They place their neighbours even when they launch nothing and so are no task:
/// `zero_grad` with `set_to_none`, a data loader that only touches host memory.
fn phase_openers<'a>(
    trace: &'a Trace,
    stacks: &'a Stacks,
) -> impl Iterator<Item = (i64, Phase)> + 'a {
    let opens = [
        (NameFlags::OPTIMIZER, Phase::Optimizer),
        (NameFlags::BACKWARD, Phase::Backward),
        (NameFlags::DATA_LOADING, Phase::DataLoading),
        (NameFlags::FORWARD, Phase::Forward),
    ];
    trace
        .events
        .iter()
        .enumerate()
        .filter_map(move |(i, event)| {
            // Containers only: a container is the top of its own stack.
            if stacks.context[i].frame != Some(EventId(i as u32)) {
                return None;
            }
            let here = stacks.context[i].flags;
            let around =
                stacks.parent[i].map_or(NameFlags::default(), |p| stacks.context[p.index()].flags);
            opens
                .iter()
                .find(|&&(flag, _)| here.contains(flag) && !around.contains(flag))
                .map(|&(_, phase)| (event.start_ns, phase))
        })
}

/// The step whose host range holds `host_ns` (as the graph assigns host tasks to steps).
fn step_at(window: &Window, host_ns: i64) -> Option<usize> {
    let i = window.steps.partition_point(|s| s.start_ns <= host_ns);
    let step = &window.steps[i.checked_sub(1)?];
    (host_ns < step.marker_end_ns || step.synthetic && host_ns <= step.marker_end_ns)
        .then_some(i - 1)
}

/// Host-to-device copies launched before the step's first forward kernel carry the step's
/// input: data loading, unless their stack already named a phase.
pub(super) fn input_copies(
    clock: &HostClock,
    phases: &mut [Decision],
    is_input_copy: impl Fn(usize) -> bool,
) {
    let graph = &clock.window.graph;
    let mut first_forward_ns = vec![i64::MAX; clock.window.steps.len()];
    for t in 0..phases.len() {
        let (step, Some(host_ns)) = (graph.step[t], clock.start_ns(t)) else {
            continue;
        };
        if step == NO_STEP || !graph.kind[t].on_device() || is_input_copy(t) {
            continue;
        }
        if phases[t].0 == Phase::Forward {
            let first = &mut first_forward_ns[step as usize];
            *first = (*first).min(host_ns);
        }
    }
    for t in 0..phases.len() {
        let (step, Some(host_ns)) = (graph.step[t], clock.start_ns(t)) else {
            continue;
        };
        // Placed by position or by a shared `Sequence number` (the copy records the counter
        // the next forward op will take); not by an explicit forward marker.
        let weakly_forward = matches!(
            phases[t],
            (Phase::Forward, Evidence::Position | Evidence::Autograd)
        );
        if step == NO_STEP || !weakly_forward {
            continue;
        }
        if is_input_copy(t) && host_ns < first_forward_ns[step as usize] {
            phases[t] = (Phase::DataLoading, Evidence::Position);
        }
    }
}
