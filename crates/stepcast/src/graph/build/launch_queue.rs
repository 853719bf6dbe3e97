//! Launch-queue edges: the capacity of each device's launch queue, calibrated on the trace,
//! and an edge from the task of launch `i − capacity` to launch call `i`
//! (`graph/launch_queue.rs` says why).
//!
//! Calibration: a call cannot return while `capacity` earlier launches onto its device are
//! unfinished, so the most launches ever outstanding when a call returned is `capacity − 1`
//! wherever the queue filled. The queue counts as full only where calls show it: at least
//! [`MIN_LATENCY_SAMPLES`] calls that found their slot held when they began and spent most of
//! their time waiting for it (on `transformer-fp32`, 1021 outstanding at 599 returns, and
//! 400 calls held). A trace whose queue never filled tells only a lower bound of the
//! capacity: it gets no queue edges (its report says capacity 0), so a what-if never blocks
//! a call at a depth the trace did not show.

use super::{Builder, MIN_LATENCY_SAMPLES, PendingEdge, TOLERANCE_NS};
use crate::graph::launch_queue::{self, Entry};
use crate::graph::{EdgeKind, TaskId};

impl Builder<'_> {
    pub(super) fn launch_queue(&mut self, call_of: &[TaskId], edges: &mut Vec<PendingEdge>) {
        let g = &self.graph;
        let launches: Vec<(TaskId, TaskId)> = call_of
            .iter()
            .enumerate()
            .filter(|&(_, &call)| call != TaskId::NONE)
            .map(|(t, &call)| (call, TaskId(t as u32)))
            .collect();
        // Device tasks without a launching call were launched before the window opened.
        let before: Vec<TaskId> = (0..g.task_count())
            .filter(|&t| g.kind[t].on_device() && call_of[t] == TaskId::NONE)
            .map(|t| TaskId(t as u32))
            .collect();
        let entries = launch_queue::entries(g, &launches, &before);
        let mut capacity: Vec<(i64, u32)> = Vec::new();
        for device_entries in entries.chunk_by(|a, b| a.device == b.device) {
            if let Some(q) = self.calibrate(device_entries) {
                capacity.push((device_entries[0].device, q));
            }
        }
        if capacity.is_empty() {
            return;
        }
        let exempt = launch_queue::contradicted(g, &entries, &capacity);
        if !exempt.is_empty() {
            *self
                .report
                .rejected
                .entry("launch-queue edges the recorded times contradict".to_string())
                .or_default() += exempt.len() as u64;
        }
        let pairs = launch_queue::edges(&entries, &capacity, |c| exempt.binary_search(&c).is_ok());
        // The part of each call spent waiting for its slot leaves its own cost (through the
        // edge, in `install_edges`); its launch edges' lags, counted from its begin, lose it
        // too, so that a call whose slot frees sooner queues its work sooner.
        let mut waited_ns = vec![0i64; g.task_count()];
        for &(holder, call) in &pairs {
            let (start, end) = (g.rec_start_ns[call.index()], g.rec_end_ns[call.index()]);
            let freed = g.rec_end_ns[holder.index()].min(end);
            if freed > start {
                waited_ns[call.index()] = freed - start;
                self.report.launch_queue_held_calls += 1;
                self.report.launch_queue_held_ns += freed - start;
                if call_of[holder.index()] == TaskId::NONE {
                    self.report.launch_queue_before_window_calls += 1;
                    self.report.launch_queue_before_window_ns += freed - start;
                }
            }
            edges.push(PendingEdge {
                from: holder,
                to: call,
                kind: EdgeKind::LaunchQueue,
                lag_ns: 0,
            });
        }
        for e in edges.iter_mut().filter(|e| e.kind == EdgeKind::Launch) {
            let waited = waited_ns[e.from.index()];
            if waited > 0 {
                let call_dur = g.rec_end_ns[e.from.index()] - g.rec_start_ns[e.from.index()];
                let own = call_dur - waited;
                e.lag_ns = if e.lag_ns >= call_dur {
                    (e.lag_ns - waited).max(0)
                } else {
                    e.lag_ns.min(own)
                };
            }
        }
        self.report.launch_queue_capacity = capacity
            .iter()
            .map(|&(_, q)| u64::from(q))
            .max()
            .unwrap_or(0);
        self.report.notes.push(format!(
            "the launch queue was full: {} launch calls waited {:.3} ms in all for a slot \
             (capacity {} launches per device, calibrated on this trace; {} of them, {:.3} ms, \
             for launches made before the window, whose tasks run at their recorded start); \
             each call's own cost is the part after its slot freed",
            self.report.launch_queue_held_calls,
            self.report.launch_queue_held_ns as f64 / 1e6,
            self.report.launch_queue_capacity,
            self.report.launch_queue_before_window_calls,
            self.report.launch_queue_before_window_ns as f64 / 1e6,
        ));
        self.graph.launch_queue_capacity = capacity;
        self.graph.launch_queue_exempt = exempt;
    }

    /// The capacity of one device's queue (its entries in host call order), where the trace
    /// shows it full.
    fn calibrate(&self, entries: &[Entry]) -> Option<u32> {
        let g = &self.graph;
        let end_of = |e: &Entry| g.rec_end_ns[e.holder.index()];
        let mut outstanding = Outstanding::new(entries.iter().map(end_of).collect());
        let mut most_at_return = 0usize;
        for e in entries {
            if e.call != TaskId::NONE {
                let at_return = outstanding.after(g.rec_end_ns[e.call.index()]);
                most_at_return = most_at_return.max(at_return);
            }
            outstanding.insert(end_of(e));
        }
        let q = most_at_return + 1;
        // Calls held by the launch `q` before: it ended after the call began and before it
        // returned, and the call spent most of its time waiting for it.
        let held = entries
            .iter()
            .enumerate()
            .skip(q)
            .filter(|&(i, e)| {
                if e.call == TaskId::NONE {
                    return false;
                }
                let freed = end_of(&entries[i - q]);
                let (start, end) = (g.rec_start_ns[e.call.index()], g.rec_end_ns[e.call.index()]);
                freed > start && freed <= end + TOLERANCE_NS && freed - start > end - freed
            })
            .count();
        (held >= MIN_LATENCY_SAMPLES).then_some(q as u32)
    }
}

/// Counts the recorded ends later than an instant among those inserted so far (a Fenwick tree
/// over the ends' ranks): O(log n) per call, whatever order the streams retire in.
struct Outstanding {
    sorted_ends: Vec<i64>,
    tree: Vec<usize>,
    inserted: usize,
}

impl Outstanding {
    fn new(mut ends: Vec<i64>) -> Self {
        ends.sort_unstable();
        let n = ends.len();
        Outstanding {
            sorted_ends: ends,
            tree: vec![0; n + 1],
            inserted: 0,
        }
    }

    fn insert(&mut self, end_ns: i64) {
        let mut i = self.sorted_ends.partition_point(|&e| e < end_ns) + 1;
        while i < self.tree.len() {
            self.tree[i] += 1;
            i += i & i.wrapping_neg();
        }
        self.inserted += 1;
    }

    /// How many inserted ends are later than `at_ns`.
    fn after(&self, at_ns: i64) -> usize {
        // Inserted ends at or before `at_ns`: ranks 1..=k.
        let mut i = self.sorted_ends.partition_point(|&e| e <= at_ns);
        let mut not_after = 0;
        while i > 0 {
            not_after += self.tree[i];
            i -= i & i.wrapping_neg();
        }
        self.inserted - not_after
    }
}
