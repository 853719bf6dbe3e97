//! Where a thread waited for gloo's work on another thread of its process, and where gloo's
//! worker thread took the work a thread posted.
//!
//! PyTorch's `ProcessGroupGloo` runs each collective on a worker thread (a `gloo:<collective>`
//! range there), and the thread that asked for it blocks in `work.wait()` where it needs the
//! result: DDP's reducer at the end of the backward pass, a tensor-parallel layer's
//! all-reduce, a pipeline schedule waiting on its transfers. Nothing is recorded while it
//! waits. Left to lane order, the wait is the thread's own time: an untraced gap charged to
//! the op after it (the critical path of a data-parallel step named `aten::as_strided` its
//! bottleneck), or the self time of the op it happened in. Either way no what-if could move
//! it: a faster exchange, or peers arriving earlier in a job's replay, would not release the
//! thread any sooner.
//!
//! Where the recording shows the thread blocked (it ran nothing for at least
//! [`MIN_BLOCKED_NS`] before a collective of another thread ended, and resumed at most
//! [`WAKE_NS`] after, or half as long after as it had been blocked), that stretch is a wait:
//! in a gap between its ops, or inside an op that had posted work (a `c10d::` op inside it
//! began). The thread's task around it is split there, into a piece before and a piece after,
//! and the piece after waits for the collective ([`EdgeKind::CollectiveWait`], lagged by the
//! recorded wake-up). The untraced time left on the lane is the wake-up, never the wait. Of
//! several collectives ending in one such stretch, the thread waited last for the latest.
//! Elsewhere the thread keeps its recorded gaps, as before.
//!
//! Each collective a worker thread took starts after the task that posted it began: the
//! latest `c10d::` op of another thread of the process that began before the worker took it
//! and after the worker took its previous one ([`EdgeKind::CollectivePost`], lagged by the
//! recorded delay). A worker idle for more than [`WAKE_NS`] before it keeps no gap of its own
//! there; a busy one keeps its recorded turnaround.

use std::collections::BTreeMap;
use std::ops::Range;

use stepcast_trace::{EventKind, LaneId, Trace};

use super::names::NameFacts;
use super::{Builder, PendingEdge};
use crate::graph::{EdgeKind, TaskId, TaskKind};

/// A thread that ran nothing for this long before a collective of another thread ended was
/// waiting for it. Python between two ops takes 10–60 µs on the recorded gloo jobs: a
/// collective ending inside such a gap says nothing.
pub const MIN_BLOCKED_NS: i64 = 100_000;

/// A thread resumed by a collective's end resumes within this, or within half the time it
/// had been blocked if that is longer (the recorded gloo jobs: median 152 µs, three in four
/// within 480 µs; with up to 8 processes on 2 cores a thread blocked 14 ms waited 5 ms more
/// for a core).
pub const WAKE_NS: i64 = 500_000;

/// The end of one of gloo's ranges: what a thread may have waited for.
#[derive(Clone, Copy, Debug)]
struct CollectiveEnd {
    end_ns: i64,
    event: usize,
    lane: usize,
}

/// The gloo ranges of a trace, by end, and the `c10d::` ops that post them, by start.
#[derive(Default)]
pub(super) struct GlooWork {
    ends: Vec<CollectiveEnd>,
    /// `(start_ns, event, lane)` of every `c10d::` op but the point-to-point ones, which run
    /// on the posting thread.
    posts: Vec<(i64, usize, usize)>,
}

/// A stretch of a thread's time in which it waited for a collective.
#[derive(Clone, Copy, Debug)]
pub(super) struct Wait {
    /// The thread ran nothing from here…
    blocked_from_ns: i64,
    /// …to here, when it resumed.
    resumed_ns: i64,
    /// The collective it waited for: its range's event and end.
    source_event: usize,
    source_end_ns: i64,
}

/// An event of a thread open at a moment (`Builder::split_at_waits`'s sweep).
struct Open {
    start_ns: i64,
    end_ns: i64,
    /// A `c10d::` op or a gloo range: the thread's own communication.
    communicates: bool,
    /// A `c10d::` op or gloo range inside it has begun.
    posted: bool,
}

/// Waits found on one thread, to be tied to their collectives once every lane has its tasks.
#[derive(Clone, Debug, Default)]
pub(super) struct PendingWaits {
    /// `(graph lane, wait)`.
    waits: Vec<(u32, Wait)>,
}

impl GlooWork {
    /// The gloo work of `trace` (empty when it records none: no other work is done then).
    pub(super) fn new(trace: &Trace, names: &NameFacts) -> GlooWork {
        let mut ends = Vec::new();
        for (event_index, event) in trace.events.iter().enumerate() {
            if matches!(event.kind, EventKind::CpuOp | EventKind::UserAnnotation)
                && names.is_host_collective(event.name)
            {
                ends.push(CollectiveEnd {
                    end_ns: event.end_ns(),
                    event: event_index,
                    lane: event.lane.index(),
                });
            }
        }
        if ends.is_empty() {
            return GlooWork {
                ends,
                posts: Vec::new(),
            };
        }
        ends.sort_by_key(|e| (e.end_ns, e.event));
        let mut posts: Vec<(i64, usize, usize)> = trace
            .events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.kind == EventKind::CpuOp)
            .filter(|(_, e)| {
                let name = trace.name(e.name);
                name.starts_with("c10d::")
                    && !name.starts_with("c10d::send")
                    && !name.starts_with("c10d::recv")
            })
            .map(|(i, e)| (e.start_ns, i, e.lane.index()))
            .collect();
        posts.sort_unstable();
        GlooWork { ends, posts }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl Builder<'_> {
    /// Splits the tasks of the thread just built (graph lane `lane`, tasks from `first_task`
    /// on; trace events `events`, of which `transfers` went to lanes of their own) where it
    /// waited for a collective of another thread of its process, and remembers the waits.
    pub(super) fn split_at_waits(
        &mut self,
        lane: u32,
        first_task: usize,
        events: Range<usize>,
        transfers: &[usize],
    ) {
        if self.gloo.is_empty() {
            return;
        }
        let trace = self.trace;
        let trace_lane = trace.events[events.start..events.end]
            .first()
            .map(|e| e.lane.index());
        let Some(trace_lane) = trace_lane else {
            return;
        };
        let pid = trace.lanes[trace_lane].pid;
        // The thread's own time: its ops and annotations at every depth, not its transfers in
        // flight (they run beside it), by start (outer first), and whether each is a `c10d::`
        // op or gloo range of the thread's own.
        let mut own: Vec<(i64, i64, bool)> = Vec::new();
        for i in events {
            let event = &trace.events[i];
            if matches!(event.kind, EventKind::CpuOp | EventKind::UserAnnotation)
                && transfers.binary_search(&i).is_err()
            {
                let communicates = self.names.is_host_collective(event.name)
                    || trace.name(event.name).starts_with("c10d::");
                own.push((event.start_ns, event.end_ns(), communicates));
            }
        }
        own.sort_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
        let mut own_ends: Vec<i64> = own.iter().map(|&(_, end, _)| end).collect();
        own_ends.sort_unstable();
        // One wait per stretch the thread ran nothing in (keyed by it): the latest collective
        // ending in it.
        let mut waits: BTreeMap<(i64, i64), Wait> = BTreeMap::new();
        // The events open at the collective's end, outermost first, each with whether a
        // `c10d::` op inside it began by then (it posted work it may wait for), and the next
        // event to open.
        let mut open: Vec<Open> = Vec::new();
        let mut next = 0;
        for end in &self.gloo.ends {
            let own_transfer =
                end.lane == trace_lane && transfers.binary_search(&end.event).is_ok();
            if (end.lane == trace_lane && !own_transfer) || trace.lanes[end.lane].pid != pid {
                continue;
            }
            let ce = end.end_ns;
            while let Some(&(start, end_ns, communicates)) = own.get(next).filter(|e| e.0 < ce) {
                while open.last().is_some_and(|o| o.end_ns <= start) {
                    open.pop();
                }
                if communicates {
                    open.iter_mut().for_each(|o| o.posted = true);
                }
                open.push(Open {
                    start_ns: start,
                    end_ns,
                    communicates,
                    posted: false,
                });
                next += 1;
            }
            while open.last().is_some_and(|o| o.end_ns <= ce) {
                open.pop();
            }
            let before = own_ends.partition_point(|&e| e <= ce);
            let (Some(&ran_until), Some(&(ran_again, _, _))) =
                (before.checked_sub(1).map(|k| &own_ends[k]), own.get(next))
            else {
                continue;
            };
            let (mut from, mut resumed) = (ran_until, ran_again);
            // Inside an op, the thread waits in the op's own time after it posted work (a
            // tensor-parallel layer's all-reduce, FSDP's all-gather before a forward): an op
            // that posted nothing (a view op the thread was descheduled in) or that is the
            // thread's own communication is no wait for another thread.
            if let Some(innermost) = open.last() {
                if innermost.communicates || !innermost.posted {
                    continue;
                }
                from = from.max(innermost.start_ns);
                resumed = resumed.min(innermost.end_ns);
            }
            let blocked_ns = ce - from;
            let wake_ns = resumed - ce;
            if blocked_ns < MIN_BLOCKED_NS || wake_ns > WAKE_NS.max(blocked_ns / 2) || wake_ns < 0 {
                continue;
            }
            waits.insert(
                (from, resumed),
                Wait {
                    blocked_from_ns: from,
                    resumed_ns: resumed,
                    source_event: end.event,
                    source_end_ns: ce,
                },
            );
        }
        if waits.is_empty() {
            return;
        }
        self.split_tasks(lane, first_task, waits.values());
        self.pending_waits
            .waits
            .extend(waits.into_values().map(|w| (lane, w)));
    }

    /// Rebuilds the tasks of `lane` from `first_task` on (the last lane built) with each task
    /// that holds a wait split around it: the piece before ends where the thread stopped
    /// running, the piece after begins where it resumed.
    fn split_tasks<'w>(
        &mut self,
        lane: u32,
        first_task: usize,
        waits: impl Iterator<Item = &'w Wait>,
    ) {
        let mut cuts: Vec<(i64, i64)> = waits.map(|w| (w.blocked_from_ns, w.resumed_ns)).collect();
        cuts.sort_unstable();
        // The cuts inside a task: those that begin in it and end by its end (a wait between
        // two tasks, in the thread's gap, splits nothing).
        let inside = |start: i64, end: i64| {
            let first = cuts.partition_point(|&(from, _)| from < start);
            cuts[first..]
                .iter()
                .take_while(move |&&(from, _)| from < end)
                .filter(move |&&(_, resumed)| resumed <= end)
                .copied()
        };
        let g = &self.graph;
        let built: Vec<(TaskKind, usize, i64, i64)> = (first_task..g.task_count())
            .map(|t| {
                (
                    g.kind[t],
                    g.event[t].index(),
                    g.rec_start_ns[t],
                    g.rec_end_ns[t],
                )
            })
            .collect();
        if built
            .iter()
            .all(|&(_, _, start, end)| inside(start, end).next().is_none())
        {
            return;
        }
        self.graph.truncate_tasks(first_task);
        for (kind, event, start, end) in built {
            let mut piece_start = start;
            for (from, resumed) in inside(start, end) {
                self.push_task_at(kind, lane, event, piece_start, from);
                piece_start = resumed;
            }
            self.push_task_at(kind, lane, event, piece_start, end);
        }
    }

    /// The edges of the waits found while the threads were built (every lane has its tasks
    /// and gaps now), and the posts of collectives to worker threads. Each wait's lane keeps
    /// the recorded wake-up as its gap before the piece that resumed, and an idle worker no
    /// gap before the collective it took.
    pub(super) fn collective_waits(&mut self, edges: &mut Vec<PendingEdge>) {
        let gloo = std::mem::take(&mut self.gloo);
        let pending = std::mem::take(&mut self.pending_waits);
        if gloo.is_empty() {
            return;
        }
        // The task of each gloo range: the one ending last (a range split into stretches
        // around its calls ends with its last).
        let mut task_of: BTreeMap<usize, TaskId> = BTreeMap::new();
        let g = &self.graph;
        for t in 0..g.task_count() {
            if !g.kind[t].on_device() && self.names.is_host_collective(g.name[t]) {
                let event = g.event[t].index();
                let later = task_of
                    .get(&event)
                    .is_none_or(|&o| g.rec_end_ns[o.index()] <= g.rec_end_ns[t]);
                if later {
                    task_of.insert(event, TaskId(t as u32));
                }
            }
        }
        let mut waited = 0u64;
        for (lane, wait) in pending.waits {
            let Some(&source) = task_of.get(&wait.source_event) else {
                continue;
            };
            let g = &mut self.graph;
            let l = &g.lanes[lane as usize];
            let tasks = l.first_task as usize..(l.first_task + l.task_count) as usize;
            let k = g.rec_start_ns[tasks.clone()].partition_point(|&s| s < wait.resumed_ns);
            let resumed = TaskId((tasks.start + k) as u32);
            if k == 0 || !tasks.contains(&resumed.index()) {
                continue;
            }
            let wake_ns = wait.resumed_ns - wait.source_end_ns;
            let before = resumed.index() - 1;
            g.gap_ns[before] = g.gap_ns[before].min(wake_ns);
            edges.push(PendingEdge {
                from: source,
                to: resumed,
                kind: EdgeKind::CollectiveWait,
                lag_ns: wake_ns,
            });
            waited += 1;
        }
        let posted = self.collective_posts(&gloo, &task_of, edges);
        if waited + posted > 0 {
            self.report.notes.push(format!(
                "{waited} waits of a thread for a gloo collective on another thread \
                 (`collective_wait` edges) and {posted} collectives a worker thread took after \
                 their post (`collective_post` edges): the threads resume after \
                 the collectives, not at their recorded times"
            ));
        }
    }

    /// `CollectivePost` edges: each gloo range a worker thread took, from the task of the
    /// `c10d::` op that posted it. Returns how many.
    fn collective_posts(
        &mut self,
        gloo: &GlooWork,
        task_of: &BTreeMap<usize, TaskId>,
        edges: &mut Vec<PendingEdge>,
    ) -> u64 {
        let trace = self.trace;
        let mut posted = 0;
        for (&event, &task) in task_of {
            let name = trace.name(trace.events[event].name);
            // Transfers run on the posting thread or a lane of their own, posted already.
            if name == "gloo:send" || name == "gloo:recv" {
                continue;
            }
            let g = &self.graph;
            let start = g.rec_start_ns[task.index()];
            let before = g.lane_pred(task);
            let worker_lane = trace.events[event].lane.index();
            let pid = trace.lanes[worker_lane].pid;
            // The latest post of another thread of the process before the worker took it,
            // made after the worker took its previous collective (an earlier one was that
            // collective's). The worker's first collective of the window takes the latest
            // post before it: without one it would start at its recorded time whatever its
            // poster did.
            let previous_start_ns = before.map_or(i64::MIN, |b| g.rec_start_ns[b.index()]);
            let latest = gloo.posts.partition_point(|&(s, _, _)| s <= start);
            let Some(&(post_ns, _, post_lane)) = gloo.posts[..latest]
                .iter()
                .rev()
                .take_while(|&&(s, _, _)| s > previous_start_ns)
                .find(|&&(_, _, l)| l != worker_lane && trace.lanes[l].pid == pid)
            else {
                continue;
            };
            let Some(holder) = g.task_holding(LaneId(post_lane as u32), post_ns) else {
                continue;
            };
            let g = &mut self.graph;
            // A worker idle when the work came has no time of its own before it; a busy one
            // keeps its recorded turnaround after its previous collective.
            if let Some(before) = before
                && start - g.rec_end_ns[before.index()] > WAKE_NS
            {
                g.gap_ns[before.index()] = 0;
            }
            edges.push(PendingEdge {
                from: holder,
                to: task,
                kind: EdgeKind::CollectivePost,
                lag_ns: start - g.rec_start_ns[holder.index()],
            });
            posted += 1;
        }
        posted
    }
}
