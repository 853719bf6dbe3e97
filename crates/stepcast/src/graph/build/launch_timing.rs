//! Calibrated timing of the edges that release device work: launches that block on their own
//! work, and the latency of a cross-stream event wait.

use super::{Builder, MIN_LATENCY_SAMPLES, PendingEdge, median};
use crate::graph::{EdgeKind, TaskId};

/// A stream released by an event starts its next work at most this long after the awaited
/// work ended for the wait to count as a sample of the event's latency (beyond it, something
/// else held the work).
const EVENT_WAIT_SAMPLE_NS: i64 = 50_000;

impl Builder<'_> {
    /// A call that blocks until its own copy is done or staged (a synchronous copy, a copy
    /// from pageable memory: `NameFacts::blocks_on_own_copy`, the rule that also gives it its
    /// host-sync edge) cannot queue that copy as it returns: the copy is ready the calibrated
    /// latency after the call begins. Decided by what the call is, not by whether the recorded
    /// times kept its sync edge: a pageable copy's call may return after its copy ended.
    pub(super) fn blocking_launches(&mut self, edges: &mut [PendingEdge]) {
        let g = &self.graph;
        for e in edges.iter_mut() {
            if e.kind == EdgeKind::Launch
                && self
                    .names
                    .blocks_on_own_copy(g.name[e.from.index()], g.name[e.to.index()])
            {
                let call_dur = g.rec_end_ns[e.from.index()] - g.rec_start_ns[e.from.index()];
                e.lag_ns = self.launch_latency_ns.min(call_dur);
            }
        }
    }

    /// A stream waiting on an event starts a moment after the awaited work ends (the event is
    /// signalled, the waiting stream polls it: 6 µs after an all-reduce on df_index_resolver).
    /// Calibrated on this trace as the median delay where the wait was what held the work
    /// back, and given to every event-wait edge as its lag.
    pub(super) fn event_wait_latency(&mut self, edges: &mut [PendingEdge]) {
        let g = &self.graph;
        let n = g.task_count();
        // When each device task was ready apart from event waits: its lane and its launch.
        let mut ready: Vec<i64> = (0..n)
            .map(|t| {
                g.lane_pred(TaskId(t as u32))
                    .map_or(i64::MIN, |p| g.rec_end_ns[p.index()] + g.gap_ns[p.index()])
                    .max(g.not_before_ns[t])
            })
            .collect();
        for e in edges.iter().filter(|e| e.kind == EdgeKind::Launch) {
            let at = g.rec_start_ns[e.from.index()] + e.lag_ns;
            let slot = &mut ready[e.to.index()];
            *slot = (*slot).max(at);
        }
        let is_event_wait =
            |k: EdgeKind| matches!(k, EdgeKind::EventWait | EdgeKind::StreamWaitCall);
        let mut samples: Vec<i64> = edges
            .iter()
            .filter(|e| is_event_wait(e.kind))
            .filter_map(|e| {
                let released = g.rec_end_ns[e.from.index()];
                let delay = g.rec_start_ns[e.to.index()] - released;
                let held = ready[e.to.index()] < released;
                (held && (0..=EVENT_WAIT_SAMPLE_NS).contains(&delay)).then_some(delay)
            })
            .collect();
        if samples.len() < MIN_LATENCY_SAMPLES {
            return;
        }
        let latency = median(&mut samples);
        self.report.event_wait_latency_ns = latency;
        for e in edges.iter_mut().filter(|e| is_event_wait(e.kind)) {
            e.lag_ns = latency;
        }
    }
}
