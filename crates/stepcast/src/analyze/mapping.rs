//! Every task mapped to the op, layer and phase it belongs to, synchronization-free
//! (Daydream §4.3, Zins & Dagenais Algorithm 2): device task → launching call (correlation) →
//! the op stack around that call on its thread → layer; backward ops → the forward op and
//! layer they differentiate; phase of every task, with the evidence used.

use stepcast_trace::{EventId, NameId};

/// Which part of a training step a task belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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

/// How a task's phase was decided (shown to the user, so a wrong phase can be traced back).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Evidence {
    /// No evidence: the task could not be mapped (no launching call, no op around it).
    Unmapped,
    /// The kernel's own name (NCCL, memcpy kind...).
    KernelName,
    /// An op or annotation name on the launching thread's stack (`Optimizer.step`,
    /// `autograd::engine::evaluate_function`, `ProfilerStep`...).
    OpStack,
    /// The autograd backward thread, `Sequence number` / `Fwd thread id` or a `fwdbwd` flow.
    Autograd,
    /// Position in the step relative to tasks mapped by stronger evidence.
    Position,
}

/// The mapping of every task of a window's graph (one row per task, as the graph's columns).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mapping {
    /// The innermost op (`cpu_op` event) around the task's launching call, if any.
    pub op: Vec<Option<EventId>>,
    /// The layer (module) the task belongs to, if known: an `nn.Module` python frame or a
    /// `user_annotation`, resolved through autograd for backward tasks.
    pub layer: Vec<Option<NameId>>,
    pub phase: Vec<Phase>,
    pub evidence: Vec<Evidence>,
}
