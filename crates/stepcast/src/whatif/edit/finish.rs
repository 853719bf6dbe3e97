//! [`EditGraph::finish`]: the edited tasks rebuilt into a valid [`Graph`] (numbered lane by
//! lane, edges sorted, the launch queue's edges, acyclic).

use std::sync::Arc;

use crate::graph::{EdgeKind, Graph, GraphLane, NO_TIME, TaskId};
use crate::simulate::{RecordedOrder, SimError, SimOptions, simulate};

use super::{EditError, EditGraph, GONE};

impl EditGraph {
    /// Whether this is a clone of `base` that no edit has written to: then it builds the
    /// same graph, and a caller may reuse what it predicted for `base`. Conservative: a
    /// write of an unchanged value counts as a change.
    pub fn is_unedited_clone_of(&self, base: &EditGraph) -> bool {
        // Every field named: a new one must say how it compares.
        let EditGraph {
            rows,
            costs,
            alive,
            frozen,
            preds,
            succs,
            lane_tasks,
            position,
            inserted,
            inserted_after,
            followers,
            lanes,
            launch_queue_capacity,
            launch_queue_exempt,
            shared_gap_permille,
            original_tasks,
            launch_latency_ns,
            dispatch_gap_ns,
            typical_gap_ns,
            carried_gap_ns,
        } = self;
        rows.shares_all_with(&base.rows)
            && costs.shares_all_with(&base.costs)
            && alive.shares_all_with(&base.alive)
            && frozen.shares_all_with(&base.frozen)
            && preds.shares_all_with(&base.preds)
            && succs.shares_all_with(&base.succs)
            && position.shares_all_with(&base.position)
            && lane_tasks.len() == base.lane_tasks.len()
            && lane_tasks
                .iter()
                .zip(&base.lane_tasks)
                .all(|(a, b)| Arc::ptr_eq(a, b))
            && *inserted == base.inserted
            && *inserted_after == base.inserted_after
            && *followers == base.followers
            && *lanes == base.lanes
            && *launch_queue_capacity == base.launch_queue_capacity
            && *launch_queue_exempt == base.launch_queue_exempt
            && *shared_gap_permille == base.shared_gap_permille
            && *original_tasks == base.original_tasks
            && *launch_latency_ns == base.launch_latency_ns
            && *dispatch_gap_ns == base.dispatch_gap_ns
            && Arc::ptr_eq(typical_gap_ns, &base.typical_gap_ns)
            && *carried_gap_ns == base.carried_gap_ns
    }

    /// Rebuilds a [`Graph`]: live tasks numbered lane by lane, edges sorted by (target, kind,
    /// source), checked for dangling edges and cycles. Also returns, per id of this edit, the
    /// task of the new graph (`TaskId::NONE` if removed).
    pub fn finish(&self) -> Result<(Graph, Vec<TaskId>), EditError> {
        let (graph, new_id) = self.build()?;
        match simulate(&graph, &RecordedOrder, SimOptions::default()) {
            Ok(_) => Ok((graph, new_id)),
            Err(SimError::Cycle { first, .. }) => Err(EditError::Cycle { task: first }),
            Err(e) => Err(EditError::Sim(e)),
        }
    }

    /// [`EditGraph::finish`] without the replay that checks for cycles: for a caller that
    /// replays the graph anyway (and maps [`SimError::Cycle`] to [`EditError::Cycle`]).
    pub(crate) fn build(&self) -> Result<(Graph, Vec<TaskId>), EditError> {
        let mut new_id = vec![TaskId::NONE; self.rows.len()];
        // Each column reserved once: grown by doubling, the columns of a million-task graph
        // were copied and their fresh pages faulted in several times per what-if.
        let live = self.alive.iter().filter(|&&a| a).count();
        let mut graph = Graph::with_task_capacity(live);
        // The input's ids of the new graph's tasks, in the new graph's order.
        let mut order: Vec<u32> = Vec::with_capacity(self.rows.len());
        for lane_index in 0..self.lane_tasks.len() {
            let tasks = self.ordered_lane(lane_index as u32);
            let first_task = graph.task_count() as u32;
            for &t in tasks.iter().filter(|&&t| t != GONE) {
                if !self.alive[t as usize] {
                    return Err(EditError::Invalid(format!(
                        "removed task {t} is still on lane {lane_index}"
                    )));
                }
                if self.rows[t as usize].lane as usize != lane_index {
                    return Err(EditError::Invalid(format!(
                        "task {t} is listed on lane {lane_index} but belongs to another"
                    )));
                }
                new_id[t as usize] = TaskId(graph.task_count() as u32);
                order.push(t);
                let row = &self.rows[t as usize];
                graph.kind.push(row.kind);
                graph.lane.push(lane_index as u32);
                graph.name.push(row.name);
                graph.event.push(row.event);
                let cost = &self.costs[t as usize];
                graph.dur_ns.push(cost.dur_ns);
                graph
                    .dur_without_inferred_ns
                    .push(cost.dur_without_inferred_ns);
                graph.gap_ns.push(cost.gap_ns);
                graph.rec_start_ns.push(row.rec_start_ns);
                graph.rec_end_ns.push(row.rec_end_ns);
                graph.step.push(row.step);
                graph.not_before_ns.push(row.not_before_ns);
                graph.peer_wait_ns.push(row.peer_wait_ns);
                graph.sm_demand.push(row.sm_demand);
            }
            let lane = &self.lanes[lane_index];
            graph.lanes.push(GraphLane {
                trace_lane: lane.trace_lane,
                kind: lane.kind,
                first_task,
                task_count: graph.task_count() as u32 - first_task,
                device: lane.device,
            });
        }
        if live != graph.task_count() {
            return Err(EditError::Invalid(format!(
                "{} live tasks are on no lane",
                live - graph.task_count()
            )));
        }
        for (t, preds) in self.preds.iter().enumerate() {
            if !self.alive[t] {
                continue;
            }
            if let Some(e) = preds
                .iter()
                .find(|e| new_id[e.from as usize] == TaskId::NONE)
            {
                return Err(EditError::Invalid(format!(
                    "edge from removed task {} into task {t}",
                    e.from
                )));
            }
        }
        // Calls exempt from the queue, in the new ids (sorted: `order` is the new order).
        graph.launch_queue_exempt = order
            .iter()
            .filter(|&&t| {
                self.is_original(TaskId(t))
                    && self
                        .launch_queue_exempt
                        .binary_search(&self.origin(TaskId(t)))
                        .is_ok()
            })
            .map(|&t| new_id[t as usize])
            .collect();
        graph.launch_queue_capacity = self.launch_queue_capacity.clone();
        graph.shared_gap_permille = self.shared_gap_permille;
        let queue_from = self.launch_queue_edges(&graph, &order, &new_id);
        // Edges sorted by (target, kind, source), the smallest lag kept of a repeated edge:
        // targets come in order, so each task's few edges are sorted alone (sorting the
        // window's edges at once was a large share of every what-if's build).
        let edge_count: usize = order
            .iter()
            .map(|&t| self.preds[t as usize].len())
            .sum::<usize>()
            + queue_from.iter().filter(|&&f| f != TaskId::NONE).count();
        graph.pred_offsets.reserve(order.len() + 1);
        graph.pred.reserve(edge_count);
        graph.pred_kind.reserve(edge_count);
        graph.pred_lag_ns.reserve(edge_count);
        graph.pred_offsets.push(0);
        let mut edges: Vec<(EdgeKind, TaskId, i64)> = Vec::new();
        for &t in &order {
            edges.clear();
            edges.extend(
                self.preds[t as usize]
                    .iter()
                    .map(|e| (e.kind, new_id[e.from as usize], e.lag_ns)),
            );
            let from = queue_from[new_id[t as usize].index()];
            if from != TaskId::NONE {
                edges.push((EdgeKind::LaunchQueue, from, 0));
            }
            edges.sort_unstable();
            edges.dedup_by(|b, a| (a.0, a.1) == (b.0, b.1));
            for &(kind, from, lag_ns) in &edges {
                graph.pred.push(from);
                graph.pred_kind.push(kind);
                graph.pred_lag_ns.push(lag_ns);
            }
            graph.pred_offsets.push(graph.pred.len() as u32);
        }
        Ok((graph, new_id))
    }

    /// The launch-queue edge into each task of the built graph (its ids; `TaskId::NONE` for
    /// none), recounted over the live launches in host call order (`graph::launch_queue`):
    /// an inserted launch takes a slot, a removed or fused-away one frees its slot, and a
    /// call the recorded times exempted stays exempt. `graph` has its tasks and exemptions,
    /// not its edges.
    fn launch_queue_edges(&self, graph: &Graph, order: &[u32], new_id: &[TaskId]) -> Vec<TaskId> {
        let mut from = vec![TaskId::NONE; order.len()];
        if self.launch_queue_capacity.is_empty() {
            return from;
        }
        let mut launches: Vec<(TaskId, TaskId)> = Vec::new();
        // Input device tasks launched before the window (no launching call; a boundary time).
        let mut before: Vec<TaskId> = Vec::new();
        for &t in order {
            let row = &self.rows[t as usize];
            if !row.kind.on_device() {
                continue;
            }
            let mut launched = false;
            for e in &self.preds[t as usize] {
                if e.kind == EdgeKind::Launch && !self.rows[e.from as usize].kind.on_device() {
                    launches.push((new_id[e.from as usize], new_id[t as usize]));
                    launched = true;
                }
            }
            if !launched && self.is_original(TaskId(t)) && row.not_before_ns != NO_TIME {
                before.push(new_id[t as usize]);
            }
        }
        let entries = crate::graph::launch_queue::entries(graph, &launches, &before);
        let exempt = &graph.launch_queue_exempt;
        for (holder, call) in
            crate::graph::launch_queue::edges(&entries, &self.launch_queue_capacity, |c| {
                exempt.binary_search(&c).is_ok()
            })
        {
            from[call.index()] = holder;
        }
        from
    }
}
