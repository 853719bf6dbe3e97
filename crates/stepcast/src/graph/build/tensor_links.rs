//! Dependencies the recording states between events (`Trace::links`): a tensor's
//! communication stages in order, the op that produced it and the op that reads it reduced
//! (Horovod's timeline joined with the framework's trace). Each becomes an edge between the
//! tasks that hold the two events (an op nested in a task waits, or is waited for, with it):
//! stages gate the next stage's begin; a gradient gates its negotiation's end (which is when
//! every rank is ready) and the reduced tensor the end of the task that blocks on it.

use stepcast_trace::{EventId, LinkKind};

use super::{Builder, PendingEdge};
use crate::graph::{EdgeKind, TaskId};

impl Builder<'_> {
    pub(super) fn tensor_links(&mut self, edges: &mut Vec<PendingEdge>) {
        if self.trace.links.is_empty() {
            return;
        }
        for link in &self.trace.links {
            let (Some(from), Some(to)) = (self.task_holding(link.from), self.task_holding(link.to))
            else {
                self.report.notes.push(format!(
                    "a recorded {:?} dependency joins an event that is part of no task",
                    link.kind
                ));
                continue;
            };
            if from == to {
                continue;
            }
            edges.push(PendingEdge {
                from,
                to,
                kind: match link.kind {
                    LinkKind::CommStage | LinkKind::GradientEnqueued | LinkKind::DataFlow => {
                        EdgeKind::TensorStage
                    }
                    LinkKind::GradientReady | LinkKind::ReducedTensorUsed => EdgeKind::TensorWait,
                },
                lag_ns: 0,
            });
        }
    }

    /// The task whose time holds `event`: its own, or the task of its lane around it.
    fn task_holding(&self, event: EventId) -> Option<TaskId> {
        let trace_event = self.trace.events.get(event.index())?;
        let g = &self.graph;
        let lane = g.lanes.iter().find(|l| l.trace_lane == trace_event.lane)?;
        let first = lane.first_task as usize;
        let starts = &g.rec_start_ns[first..first + lane.task_count as usize];
        let k = starts.partition_point(|&s| s <= trace_event.start_ns);
        let t = first + k.checked_sub(1)?;
        (g.rec_end_ns[t] >= trace_event.end_ns()).then_some(TaskId(t as u32))
    }
}
