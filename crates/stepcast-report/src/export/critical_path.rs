//! The replayed critical path as flow arrows: one arrow per hop of the path, from the instant
//! one task released the next to the instant it gated.
//!
//! `CriticalPath::tasks` lists each task once, but the walk that found it
//! (`stepcast::simulate::critical_path`) can pass a task twice: a blocking call is entered at
//! its end (it waited for the work it launched), and left again from its begin (which launched
//! that work). Arrows between neighbours of that list would then skip the call and point back in
//! time, so the hops are retraced here from the same bindings, within the path's tasks.

use std::collections::BTreeSet;

use stepcast::graph::{EdgeKind, Graph, TaskId};
use stepcast::simulate::{Binding, Timeline};

/// One hop of a critical path: `to` waited for `from`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Hop {
    pub from: TaskId,
    pub to: TaskId,
    /// When `from` released `to` (its begin for a launch, else its end, plus the edge's lag),
    /// moved inside `from`'s slice (an edge whose lag is negative releases before `from` ends)
    /// and not after `in_ns`.
    pub out_ns: i64,
    /// When `to` was gated: its begin, or its last nanosecond when `from` held back its
    /// completion (the work a blocking call waits for).
    pub in_ns: i64,
}

/// The hops of the critical path over `path` (as `critical_path` returns it), earliest first.
///
/// Both instants of a hop lie inside their task's slice (`begin <= instant <= max(begin,
/// end - 1)`), so flow events placed there bind to the slices that enclose them, and the arrow
/// never points back in time (`out_ns <= in_ns`).
pub(super) fn hops(graph: &Graph, timeline: &Timeline, path: &[TaskId]) -> Vec<Hop> {
    let Some(&last) = path.last() else {
        return Vec::new();
    };
    let on_path: BTreeSet<TaskId> = path.iter().copied().collect();
    let begin = |task: TaskId| timeline.begin_ns[task.index()];
    let last_instant = |task: TaskId| (timeline.end_ns[task.index()] - 1).max(begin(task));
    // When the edge `pred` → `task` of `kind` released `task` (the latest such edge, as the
    // replay takes the latest).
    let release = |task: TaskId, pred: TaskId, kind: EdgeKind| {
        let source = if kind.from_source_begin() {
            begin(pred)
        } else {
            timeline.end_ns[pred.index()]
        };
        let lag = graph
            .preds(task)
            .filter(|&e| graph.pred[e] == pred && graph.pred_kind[e] == kind)
            .map(|e| graph.pred_lag_ns[e])
            .max()
            .unwrap_or(0);
        source + lag
    };
    let mut hops = Vec::new();
    // Where the walk stands: a task, at its end or at its begin. A point seen twice ends the
    // walk (the path's own walk stops at the step's start; this one stops leaving the path).
    let mut seen: BTreeSet<(TaskId, bool)> = BTreeSet::new();
    let (mut task, mut at_end) = (last, true);
    while seen.insert((task, at_end)) {
        let t = task.index();
        let work_start = (timeline.end_ns[t] - graph.dur_ns[t]).max(begin(task));
        // As in `critical_path`: from a task's end, the edge that held back its completion, if
        // it did; otherwise (and from its begin) what released its begin.
        let waited = match timeline.completion[t] {
            Some(Binding::Edge(pred, kind)) if at_end && work_start > begin(task) => {
                Some((pred, release(task, pred, kind), true, last_instant(task)))
            }
            _ => None,
        };
        let released = || match timeline.binding[t] {
            Binding::Lane(pred) => {
                let ready = timeline.end_ns[pred.index()] + graph.gap_ns[pred.index()];
                Some((pred, ready, true, begin(task)))
            }
            Binding::Edge(pred, kind) => Some((
                pred,
                release(task, pred, kind),
                !kind.from_source_begin(),
                begin(task),
            )),
            Binding::Boundary | Binding::PeerWait => None,
        };
        let Some((pred, released_ns, pred_at_end, in_ns)) = waited.or_else(released) else {
            break;
        };
        if !on_path.contains(&pred) {
            break;
        }
        // Inside `pred`'s slice, and not after the arrow's head. Only a hop between slices that
        // meet at one instant (a zero-length copy ending as the blocking call waiting for it
        // returns) has no such point: it is left out, and the walk goes on.
        let out_ns = released_ns
            .min(last_instant(pred))
            .min(in_ns)
            .max(begin(pred));
        if out_ns <= in_ns {
            hops.push(Hop {
                from: pred,
                to: task,
                out_ns,
                in_ns,
            });
        }
        (task, at_end) = (pred, pred_at_end);
    }
    hops.reverse();
    hops
}
