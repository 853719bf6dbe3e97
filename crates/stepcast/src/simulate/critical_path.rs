//! The critical path: walk back from the last task along the constraint that bound each task.

use super::{Binding, Timeline};
use crate::graph::{EdgeKind, Graph, TaskId};

/// The chain of tasks that determined when a replayed span ended, earliest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CriticalPath {
    pub tasks: Vec<TaskId>,
    /// Time on the path spent in host tasks' own work and their untraced gaps.
    pub host_ns: i64,
    /// Time on the path spent in device tasks' own work.
    pub device_ns: i64,
    /// Time on the path spent waiting for peers (collectives), launch latency or other
    /// edges' lags (except a thread handoff's, which is host time).
    pub wait_ns: i64,
    /// Of `wait_ns`, the waits for peers outside the graph (a collective's declared peer
    /// lateness): no change to this rank's own work removes them.
    pub peer_wait_ns: i64,
    /// The same time, task by task: each share is host work, device work or waiting, and
    /// belongs to the task it preceded or made up. Shares sum to `length_ns`.
    pub shares: Vec<PathShare>,
}

/// What a stretch of the critical path was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ShareKind {
    Host,
    Device,
    Wait,
}

/// A stretch of the critical path attributed to one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathShare {
    pub task: TaskId,
    pub kind: ShareKind,
    pub ns: i64,
}

impl CriticalPath {
    fn add(&mut self, task: TaskId, kind: ShareKind, ns: i64) {
        if ns <= 0 {
            return;
        }
        match kind {
            ShareKind::Host => self.host_ns += ns,
            ShareKind::Device => self.device_ns += ns,
            ShareKind::Wait => self.wait_ns += ns,
        }
        self.shares.push(PathShare { task, kind, ns });
    }
}

impl CriticalPath {
    pub fn length_ns(&self) -> i64 {
        self.host_ns + self.device_ns + self.wait_ns
    }
}

/// The critical path ending at `last`, cut where it enters time before `from_ns`.
///
/// The walk alternates between a task's end (what released its completion) and its begin
/// (what released its start), so a blocking call that launched the work it waits for is
/// followed call-begin → work → call-end without looping.
pub fn critical_path(
    graph: &Graph,
    timeline: &Timeline,
    last: TaskId,
    from_ns: i64,
) -> CriticalPath {
    let mut path = CriticalPath::default();
    let clip = |t: i64| t.max(from_ns);
    let mut task = last;
    // Walking backwards: the path so far covers [until, end of `last`].
    let mut until = clip(timeline.end_ns[last.index()]);
    let mut at_end = true;
    let mut steps = 0usize;
    loop {
        steps += 1;
        if steps > 4 * graph.task_count() + 4 {
            break; // defensive: bindings always point to earlier-processed nodes
        }
        let t = task.index();
        let begin = clip(timeline.begin_ns[t]);
        let on_device = graph.kind[t].on_device();
        if at_end {
            path.tasks.push(task);
            let work_start = clip(timeline.end_ns[t] - graph.dur_ns[t]).max(begin);
            let work = (until - work_start).max(0);
            let kind = if on_device {
                ShareKind::Device
            } else {
                ShareKind::Host
            };
            path.add(task, kind, work);
            until = until.min(work_start);
            match timeline.completion[t] {
                Some(Binding::Edge(pred, _)) if work_start > begin => {
                    let pred_end = clip(timeline.end_ns[pred.index()]);
                    path.add(task, ShareKind::Wait, until - pred_end);
                    until = until.min(pred_end);
                    task = pred;
                    continue;
                }
                Some(binding) => {
                    // Waited for peers (or a released edge) inside its own span.
                    if binding == Binding::PeerWait {
                        path.peer_wait_ns += (until - begin).max(0);
                    }
                    path.add(task, ShareKind::Wait, until - begin);
                    until = until.min(begin);
                }
                None => {}
            }
        }
        if until <= from_ns {
            break;
        }
        // From the task's begin: what released it.
        match timeline.binding[t] {
            Binding::Boundary | Binding::PeerWait => {
                // Nothing in the window released it: before it, its thread was busy with
                // untraced work (a host lane) or the device was waiting on the outside.
                let kind = if on_device {
                    ShareKind::Wait
                } else {
                    ShareKind::Host
                };
                path.add(task, kind, until - from_ns);
                break;
            }
            Binding::Lane(pred) => {
                let pred_end = clip(timeline.end_ns[pred.index()]);
                let kind = if on_device {
                    ShareKind::Wait
                } else {
                    ShareKind::Host
                };
                path.add(task, kind, until - pred_end);
                until = until.min(pred_end);
                task = pred;
                at_end = true;
            }
            Binding::Edge(pred, kind) => {
                let released_at = if kind.from_source_begin() {
                    clip(timeline.begin_ns[pred.index()])
                } else {
                    clip(timeline.end_ns[pred.index()])
                };
                // A handoff's lag is untraced host time around it (Python before and after
                // `backward()`), as is a gloo wait's (the thread waking, Python after
                // `work.wait()`) and a post's (the posting task's work before it); other lags
                // are latencies or waits.
                let lag_kind = if matches!(
                    kind,
                    EdgeKind::ThreadHandoff | EdgeKind::CollectiveWait | EdgeKind::CollectivePost
                ) {
                    ShareKind::Host
                } else {
                    ShareKind::Wait
                };
                path.add(task, lag_kind, until - released_at);
                until = until.min(released_at);
                task = pred;
                at_end = !kind.from_source_begin();
                if !at_end && !path.tasks.contains(&pred) {
                    path.tasks.push(pred);
                }
            }
        }
        if until <= from_ns {
            break;
        }
    }
    path.tasks.reverse();
    path
}
