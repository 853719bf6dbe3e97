//! Calibrated timing of the edges that release device work: launches that block on their own
//! work, and the latency of a cross-stream event wait.

use rustc_hash::FxHashMap;

use super::{Builder, Launches, MIN_LATENCY_SAMPLES, PendingEdge, median};
use crate::graph::{EdgeKind, TaskId};

/// A stream released by an event starts its next work at most this long after the awaited
/// work ended for the wait to count as a sample of the event's latency (beyond it, something
/// else held the work).
const EVENT_WAIT_SAMPLE_NS: i64 = 50_000;

impl Builder<'_> {
    /// Launch latency, calibrated on this trace: how long after a launch call begins its work
    /// starts on an idle stream (median), and how long after it returns. Only work nothing else
    /// held counts: a kernel whose stream was idle but that waited for another stream (an event
    /// recorded behind that stream's backlog) started when the wait ended, not a latency after
    /// its launch. Such starts, 8 to 29 ms after their calls on a trace whose side stream waits
    /// for the main stream's backlog every step, outnumbered the true samples there, and every
    /// kernel of the step was then replayed 17 ms after its launch. Only calls that launch one
    /// task count: the kernels of a graph launch start one after another, not after a latency.
    /// With too few samples nothing is calibrated and work is ready when its call returns.
    pub(super) fn launch_lags(&mut self, launches: &Launches, edges: &mut [PendingEdge]) {
        let g = &self.graph;
        let n = g.task_count();
        let call_of = &launches.call_of;
        // The latest recorded end of what each device task waits for on another stream.
        let mut awaited_end = vec![i64::MIN; n];
        for e in edges.iter().filter(|e| e.kind != EdgeKind::Launch) {
            let slot = &mut awaited_end[e.to.index()];
            *slot = (*slot).max(g.rec_end_ns[e.from.index()]);
        }
        let mut tasks_per_call = vec![0u32; n];
        for &call in call_of.iter().filter(|&&c| c != TaskId::NONE) {
            tasks_per_call[call.index()] += 1;
        }
        let single: Vec<_> = launches
            .idle_starts
            .iter()
            .filter(|s| tasks_per_call[s.call.index()] == 1)
            .filter(|s| awaited_end[s.task.index()] <= g.rec_start_ns[s.call.index()])
            .collect();
        let mut delays: Vec<i64> = single.iter().map(|s| s.after_begin_ns).collect();
        let calibrated = delays.len() >= MIN_LATENCY_SAMPLES;
        let latency = if calibrated {
            median(&mut delays).max(0)
        } else {
            i64::MAX
        };
        self.report.launch_latency_ns = if calibrated { latency } else { 0 };
        self.report.launch_latency_samples = if calibrated { delays.len() as u64 } else { 0 };
        // A call that launches one task queues it when it returns: its work starts a moment
        // after (median 1-2 µs on every trace in testdata, whatever the call lasted), while the
        // delay from the call's begin is the call's own length: 8 µs into a `cudaLaunchKernel`
        // but 17 µs into a `cudaMemcpyAsync` on df_index_resolver. Calibrated per call name
        // where the name has enough samples, then over all single launches.
        let mut after_return: Vec<i64> = single.iter().map(|s| s.after_return_ns).collect();
        let after_return_ns =
            (after_return.len() >= MIN_LATENCY_SAMPLES).then(|| median(&mut after_return));
        let mut by_name: FxHashMap<stepcast_trace::NameId, Vec<i64>> = FxHashMap::default();
        for s in &single {
            by_name
                .entry(g.name[s.call.index()])
                .or_default()
                .push(s.after_return_ns);
        }
        let after_return_of: FxHashMap<stepcast_trace::NameId, i64> = by_name
            .into_iter()
            .filter(|(_, d)| d.len() >= MIN_LATENCY_SAMPLES)
            .map(|(name, mut d)| (name, median(&mut d)))
            .collect();
        self.report.launch_after_return_ns = after_return_ns.unwrap_or(0).max(0);
        for e in edges.iter_mut().filter(|e| e.kind == EdgeKind::Launch) {
            let call = e.from;
            let call_dur = g.rec_end_ns[call.index()] - g.rec_start_ns[call.index()];
            // Where work starts before its call returns (as on traces whose clocks put the
            // kernel ahead of the call's end), the call does not queue it as it returns: the
            // begin latency stands.
            let after_return = after_return_of
                .get(&g.name[call.index()])
                .copied()
                .or(after_return_ns)
                .filter(|&d| d > 0);
            e.lag_ns = match after_return {
                // Queued as the call returns (a call that blocks on its own work is moved back
                // to the begin-latency: `blocking_launches`).
                Some(after) if tasks_per_call[call.index()] == 1 => call_dur + after,
                // Ready `latency` after the call begins, but never after the call has
                // returned: by then the work is queued.
                _ => latency.min(call_dur),
            };
        }
        self.launch_latency_ns = latency;
        self.dispatch_gaps(call_of, latency);
    }

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
