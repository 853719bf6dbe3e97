//! gloo's asynchronous point-to-point transfers (`isend`, `irecv`, `batch_isend_irecv`: what
//! `torch.distributed.pipelining`'s schedules post). A transfer's `gloo:send`/`gloo:recv`
//! range runs from its post to the return of its wait, and the thread runs on meanwhile: it
//! posts the batch's other transfers, computes the next microbatch, and waits wherever the
//! schedule waits (often inside the next action that needs the data). Such a range is no
//! stretch of its thread's own time, which the thread's tasks are: each is a task of a lane of
//! the thread's transfers in flight (as many lanes as transfers overlap), beginning when the
//! thread's task that posted it ends (an [`EdgeKind::Data`] edge from that task) and ending
//! where the recording ends it. A range is asynchronous when an op of its thread starts inside
//! it: a blocking transfer's range holds nothing but the thread's wait.

use std::ops::Range;

use stepcast_trace::LaneKind;

use super::{Builder, PendingEdge};
use crate::graph::{EdgeKind, GraphLane, TaskId, TaskKind};

/// The names of gloo's point-to-point ranges.
fn is_transfer(name: &str) -> bool {
    name == "gloo:send" || name == "gloo:recv"
}

impl Builder<'_> {
    /// The asynchronous transfers among one thread's `events` (trace order: by start): the
    /// event indices of the transfer ranges inside which the thread's next event starts.
    pub(super) fn async_transfers(&self, events: Range<usize>) -> Vec<usize> {
        let lane = &self.trace.events[events.clone()];
        lane.iter()
            .enumerate()
            .filter(|&(k, e)| {
                is_transfer(self.trace.name(e.name))
                    && lane
                        .get(k + 1)
                        .is_some_and(|next| next.start_ns < e.end_ns())
            })
            .map(|(k, _)| events.start + k)
            .collect()
    }

    /// The lanes of the transfers in flight of the thread whose graph lane is `thread` (its
    /// tasks built): each transfer of `transfers` (event indices, by start) a task on the
    /// first such lane free when it begins, from when the thread's task that posted it ends
    /// (the range's start where it began outside a task, or the task holds all of it) to its
    /// recorded end. Returns the edges from the posting tasks.
    pub(super) fn transfer_lanes(
        &mut self,
        thread: usize,
        transfers: &[usize],
    ) -> Vec<PendingEdge> {
        let lane = self.graph.lanes[thread].clone();
        let tasks = lane.first_task as usize..(lane.first_task + lane.task_count) as usize;
        let mut placed: Vec<(usize, Option<TaskId>, i64, i64)> = Vec::new();
        for &i in transfers {
            let event = &self.trace.events[i];
            let (start_ns, end_ns) = (event.start_ns, event.end_ns());
            let starts = &self.graph.rec_start_ns[tasks.clone()];
            let before = starts.partition_point(|&s| s <= start_ns);
            let holder = before.checked_sub(1).map(|k| tasks.start + k);
            let (posted_by, from_ns) = match holder {
                Some(h) if self.graph.rec_end_ns[h] > start_ns => {
                    if self.graph.rec_end_ns[h] < end_ns {
                        (Some(h), self.graph.rec_end_ns[h])
                    } else {
                        (h.checked_sub(1).filter(|&p| p >= tasks.start), start_ns)
                    }
                }
                other => (other, start_ns),
            };
            placed.push((i, posted_by.map(|t| TaskId(t as u32)), from_ns, end_ns));
        }
        // Greedy interval partitioning: each transfer on the first lane free at its start.
        let mut lanes: Vec<Vec<usize>> = Vec::new();
        let mut lane_end: Vec<i64> = Vec::new();
        for (k, &(_, _, from_ns, end_ns)) in placed.iter().enumerate() {
            match lane_end.iter().position(|&end| end <= from_ns) {
                Some(l) => {
                    lanes[l].push(k);
                    lane_end[l] = end_ns;
                }
                None => {
                    lanes.push(vec![k]);
                    lane_end.push(end_ns);
                }
            }
        }
        let mut edges = Vec::new();
        for members in lanes {
            let index = self.graph.lanes.len() as u32;
            let first_task = self.graph.task_count() as u32;
            for k in members {
                let (event, posted_by, from_ns, end_ns) = placed[k];
                self.push_task_at(TaskKind::CpuOp, index, event, from_ns, end_ns);
                let task = TaskId(self.graph.task_count() as u32 - 1);
                match posted_by {
                    Some(from) => edges.push(PendingEdge {
                        from,
                        to: task,
                        kind: EdgeKind::Data,
                        lag_ns: 0,
                    }),
                    None => self.graph.not_before_ns[task.index()] = from_ns,
                }
            }
            self.graph.lanes.push(GraphLane {
                trace_lane: lane.trace_lane,
                kind: LaneKind::CpuThread,
                first_task,
                task_count: self.graph.task_count() as u32 - first_task,
                device: None,
            });
        }
        edges
    }
}
