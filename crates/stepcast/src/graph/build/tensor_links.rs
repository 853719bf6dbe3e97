//! Dependencies the recording states between events (`Trace::links`): a tensor's
//! communication stages in order, the op that produced it and the op that reads it reduced
//! (Horovod's timeline joined with the framework's trace). Each becomes an edge between the
//! tasks that hold the two events (an op nested in a task waits, or is waited for, with it):
//! stages gate the next stage's begin; a gradient gates its negotiation's end (which is when
//! every rank is ready) and the reduced tensor the end of the task that blocks on it. A
//! data dependency (an op reads what an op of another thread produced) need not fall in one
//! task each side (a GPU trace's host tasks are runtime calls, not ops): it joins the task
//! the producer ends with to the task the consumer begins with.

use stepcast_trace::{EventId, LinkKind};

use super::{Builder, PendingEdge};
use crate::graph::{EdgeKind, TaskId};

impl Builder<'_> {
    pub(super) fn tensor_links(&mut self, edges: &mut Vec<PendingEdge>) {
        if self.trace.links.is_empty() {
            return;
        }
        let mut unplaced = 0usize;
        for link in &self.trace.links {
            let kind = match link.kind {
                LinkKind::DataFlow => {
                    unplaced += usize::from(!self.data_link(link.from, link.to, edges));
                    continue;
                }
                LinkKind::CommStage | LinkKind::GradientEnqueued => EdgeKind::TensorStage,
                LinkKind::GradientReady | LinkKind::ReducedTensorUsed => EdgeKind::TensorWait,
            };
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
                kind,
                lag_ns: 0,
            });
        }
        if unplaced > 0 {
            self.report.notes.push(format!(
                "{unplaced} recorded data dependencies join ops no tasks around them can carry \
                 (the task the producer ends with ends after the consumer's tasks begin)"
            ));
        }
    }

    /// A [`EdgeKind::Data`] edge for op `consumer` reading what op `producer` wrote: from the
    /// last task of the producer's lane that began before the producer ended, to the task of
    /// the consumer's lane that holds the consumer's start, or else the first one after it,
    /// the first of these that began after that task ended (an op with no task of its own is
    /// untraced time in a gap: the tasks around it carry the order). None where no such pair
    /// exists (`false`); none either where both are one lane's (its order holds it).
    fn data_link(
        &self,
        producer: EventId,
        consumer: EventId,
        edges: &mut Vec<PendingEdge>,
    ) -> bool {
        let found = (|| {
            let p = self.trace.events.get(producer.index())?;
            let c = self.trace.events.get(consumer.index())?;
            let g = &self.graph;
            let lane_of = |lane| g.lanes.iter().find(|l| l.trace_lane == lane);
            let (pl, cl) = (lane_of(p.lane)?, lane_of(c.lane)?);
            let tasks = |l: &crate::graph::GraphLane| {
                l.first_task as usize..(l.first_task + l.task_count) as usize
            };
            let (pt, ct) = (tasks(pl), tasks(cl));
            let k = g.rec_start_ns[pt.clone()].partition_point(|&s| s < p.end_ns());
            let from = pt.start + k.checked_sub(1)?;
            let end = g.rec_end_ns[from];
            let k = g.rec_start_ns[ct.clone()].partition_point(|&s| s <= c.start_ns);
            let holding =
                (k > 0 && g.rec_end_ns[ct.start + k - 1] > c.start_ns).then(|| ct.start + k - 1);
            let to = holding
                .into_iter()
                .chain(ct.start + k..ct.end)
                .find(|&t| g.rec_start_ns[t] >= end)?;
            Some((TaskId(from as u32), TaskId(to as u32)))
        })();
        let Some((from, to)) = found else {
            return false;
        };
        if self.graph.lane[from.index()] != self.graph.lane[to.index()] {
            edges.push(PendingEdge {
                from,
                to,
                kind: EdgeKind::Data,
                lag_ns: 0,
            });
        }
        true
    }

    /// The task whose time holds `event`: its own, or the task of its lane around it.
    fn task_holding(&self, event: EventId) -> Option<TaskId> {
        let trace_event = self.trace.events.get(event.index())?;
        let t = self
            .graph
            .task_holding(trace_event.lane, trace_event.start_ns)?;
        (self.graph.rec_end_ns[t.index()] >= trace_event.end_ns()).then_some(t)
    }
}
