//! What the build asks of a task's name, answered once per distinct name: a window has tens of
//! thousands of tasks but a few thousand names, and the questions are substring searches.

use stepcast_trace::{NameId, Trace};

use super::{is_collective, is_host_collective};
use crate::graph::calls::{CallClass, classify_call};

/// Facts about every interned name of a trace, indexed by [`NameId`].
pub(super) struct NameFacts {
    call_class: Vec<CallClass>,
    stream_wait_event: Vec<bool>,
    pageable: Vec<bool>,
    collective: Vec<bool>,
    host_collective: Vec<bool>,
}

impl NameFacts {
    pub(super) fn new(trace: &Trace) -> NameFacts {
        let count = trace.names.len();
        let mut facts = NameFacts {
            call_class: Vec::with_capacity(count),
            stream_wait_event: Vec::with_capacity(count),
            pageable: Vec::with_capacity(count),
            collective: Vec::with_capacity(count),
            host_collective: Vec::with_capacity(count),
        };
        for id in 0..count as u32 {
            let name = trace.name(NameId(id));
            facts.call_class.push(classify_call(name));
            facts
                .stream_wait_event
                .push(name.contains("StreamWaitEvent"));
            facts.pageable.push(name.contains("Pageable"));
            facts.collective.push(is_collective(name));
            facts.host_collective.push(is_host_collective(name));
        }
        facts
    }

    /// [`classify_call`] of the name.
    pub(super) fn call_class(&self, name: NameId) -> CallClass {
        self.call_class[name.index()]
    }

    /// A `cudaStreamWaitEvent` call (any API spelling).
    pub(super) fn is_stream_wait_event(&self, name: NameId) -> bool {
        self.stream_wait_event[name.index()]
    }

    /// A copy from or to pageable host memory (synchronous whatever the call).
    pub(super) fn is_pageable(&self, name: NameId) -> bool {
        self.pageable[name.index()]
    }

    /// Whether a call named `call` holds its thread until its own copy named `work` is done
    /// (or staged): a synchronous copy, or any copy from or to pageable memory.
    pub(super) fn blocks_on_own_copy(&self, call: NameId, work: NameId) -> bool {
        match self.call_class(call) {
            CallClass::SyncCopy => true,
            CallClass::AsyncCopy => self.is_pageable(work),
            _ => false,
        }
    }

    /// A collective or point-to-point communication kernel.
    pub(super) fn is_collective(&self, name: NameId) -> bool {
        self.collective[name.index()]
    }

    /// A collective run by a host thread (gloo's `gloo:all_reduce`, ...).
    pub(super) fn is_host_collective(&self, name: NameId) -> bool {
        self.host_collective[name.index()]
    }
}
