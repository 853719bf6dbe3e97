//! Tests' traces of one CPU thread, its ops written by hand to pin down how nesting is read.

use stepcast_trace::{Event, EventKind, Lane, LaneId, LaneKind, Trace};

/// A trace with one CPU thread and no events.
pub fn trace() -> Trace {
    let mut trace = Trace::default();
    trace.lanes.push(Lane {
        kind: LaneKind::CpuThread,
        pid: 1,
        tid: 1,
        name: None,
        file_pid: None,
        file_tid: None,
    });
    trace
}

/// Appends a CPU op on the thread (events in start order, as readers sort them).
pub fn op(trace: &mut Trace, name: &str, start_ns: i64, dur_ns: i64) {
    let name = trace.names.intern(name);
    trace.events.push(Event {
        kind: EventKind::CpuOp,
        lane: LaneId(0),
        name,
        start_ns,
        dur_ns,
        correlation: None,
        external_id: None,
        bytes: None,
        sequence_number: None,
        file_index: trace.events.len() as u32,
    });
}
