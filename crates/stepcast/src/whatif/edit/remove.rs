//! Removing tasks: each one's dependencies reconnected around it (composed edge kinds), its
//! launch call and the host time after it handled as [`HostGaps`] says.

use std::sync::Arc;

use crate::graph::{EdgeKind, NO_TIME, TaskId};

use super::{Edge, EditError, EditGraph, GONE, Selection, UNTYPICAL_GAP_FACTOR};

/// How [`EditGraph::remove`] treats the untraced host time after a removed host task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostGaps {
    /// Keep it on the lane (the framework work between calls still happens): Daydream's remove.
    Keep,
    /// Drop it with the call (the Python/dispatcher work that issued the call is gone too),
    /// up to what calls of its name typically leave after them: a gap more than 50 times
    /// that (a wait for a DataLoader worker inside `_MultiProcessingDataLoaderIter.__next__`
    /// after the optimizer's last call, 189 ms on `h200-pairs/loader-workers2`) keeps all but
    /// the typical part on the lane.
    Drop,
}

/// The kind of an edge standing for the path `first` then `second` through a removed task:
/// it leaves from where `first` leaves (begin or end of its source) and gates what `second`
/// gates (begin or completion of its target); inferred if either part is.
fn compose(first: EdgeKind, second: EdgeKind) -> EdgeKind {
    let from_begin = first.from_source_begin();
    let gates_completion = second.gates_completion();
    let inferred = first.is_inferred() || second.is_inferred();
    for kind in [second, first] {
        if kind.from_source_begin() == from_begin
            && kind.gates_completion() == gates_completion
            && kind.is_inferred() == inferred
            && kind != EdgeKind::LaneOrder
        {
            return kind;
        }
    }
    match (from_begin, gates_completion, inferred) {
        (true, false, _) => EdgeKind::Launch,
        (true, true, _) => EdgeKind::PeerArrival,
        (false, false, false) => EdgeKind::EventWait,
        (false, false, true) => EdgeKind::InferredStreamWait,
        (false, true, false) => EdgeKind::HostSync,
        (false, true, true) => EdgeKind::InferredHostSync,
    }
}

impl EditGraph {
    /// Removes the selected tasks, reconnecting dependencies: every path through a removed
    /// task is kept as an edge from its predecessor to its successor (lags added). Device
    /// tasks: the call that launched one is removed too unless it launches other work, and
    /// the stream's wait on other work (an event wait) moves to the next task of the stream.
    /// Host tasks: the untraced gap after a removed task is kept on its lane or dropped
    /// (`gaps`); what the removed task waited for is no longer waited for.
    pub fn remove(&mut self, selection: &Selection, gaps: HostGaps) -> Result<(), EditError> {
        for &task in selection.tasks() {
            self.check_live(task)?;
        }
        let mut launchers = Vec::new();
        for &task in selection.tasks() {
            if self.rows[task.index()].kind.on_device()
                && let Some(call) = self.launcher(task)
            {
                launchers.push(call);
            }
        }
        for &task in selection.tasks() {
            self.remove_one(task, gaps);
        }
        launchers.sort_unstable();
        launchers.dedup();
        for call in launchers {
            if self.is_alive(call) && self.launched(call).is_empty() {
                self.remove_one(call, gaps);
            }
        }
        Ok(())
    }

    fn remove_one(&mut self, task: TaskId, gaps: HostGaps) {
        let r = task.index();
        if !self.alive[r] {
            return;
        }
        let row = self.rows[r].clone();
        let cost = self.costs[r];
        self.settle(row.lane);
        let position = self.position[r] as usize;
        debug_assert_eq!(self.lane_tasks[row.lane as usize][position], task.0);
        let lane_prev = self.live_neighbor(row.lane, position, false);
        let lane_next = self.live_neighbor(row.lane, position, true);
        let on_device = row.kind.on_device();

        // Paths through the removed task, as (source node, lag) reaching its begin / end.
        // A begin-gating predecessor reaches both nodes; a completion-gating one only the end.
        let preds = std::mem::take(&mut self.preds[r]);
        let mut into_begin: Vec<Edge> = Vec::new();
        let mut into_end: Vec<Edge> = Vec::new();
        for &e in &preds {
            if !self.alive[e.from as usize] {
                continue;
            }
            if !e.kind.gates_completion() {
                into_begin.push(e);
            }
            into_end.push(e);
        }
        // The lane predecessor gates the begin (after its gap).
        let lane_edge = lane_prev.map(|p| Edge {
            from: p,
            kind: EdgeKind::EventWait,
            lag_ns: self.costs[p as usize].gap_ns,
        });
        if let Some(e) = lane_edge {
            into_begin.push(e);
            into_end.push(e);
        }

        // Stored edges out of the removed task.
        let mut targets = std::mem::take(&mut self.succs[r]);
        targets.sort_unstable();
        targets.dedup();
        for s in targets {
            if !self.alive[s as usize] {
                continue;
            }
            let outgoing: Vec<Edge> = self.preds[s as usize]
                .iter()
                .copied()
                .filter(|e| e.from == task.0)
                .collect();
            self.preds[s as usize].retain(|e| e.from != task.0);
            // A device task launched by its own call keeps that launch as its host
            // dependency: a path from another call through the removed task would read as a
            // second launch.
            let own_launcher = self.launcher(TaskId(s)).map(|call| call.0);
            for out in outgoing {
                let reaching = if out.kind.from_source_begin() {
                    &into_begin
                } else {
                    &into_end
                };
                for &inp in reaching.iter() {
                    if inp.kind == EdgeKind::Launch && own_launcher.is_some_and(|c| c != inp.from) {
                        continue;
                    }
                    let kind = compose(inp.kind, out.kind);
                    if Some(inp) == lane_edge && inp.lag_ns > 0 {
                        *self.carried_gap_ns.entry(s).or_default() += inp.lag_ns;
                    }
                    self.add_edge(inp.from, s, kind, inp.lag_ns + out.lag_ns);
                }
            }
        }
        // On a stream, what the removed task waited for (an event wait recorded on the
        // stream) still holds the next task of the stream.
        if on_device && let Some(next) = lane_next {
            let waits: Vec<Edge> = preds
                .iter()
                .copied()
                .filter(|e| self.alive[e.from as usize] && e.kind != EdgeKind::Launch)
                .collect();
            for inp in waits {
                let kind = compose(inp.kind, EdgeKind::EventWait);
                self.add_edge(inp.from, next, kind, inp.lag_ns);
            }
        }
        // On a thread, a handoff that held the removed task's start (the autograd engine's
        // backward pass ending, a gloo collective the thread waited for) still holds the next
        // task of the thread: that thread was blocked until then, whatever it ran first.
        if !on_device && let Some(next) = lane_next {
            let handoffs: Vec<Edge> = preds
                .iter()
                .copied()
                .filter(|e| {
                    self.alive[e.from as usize]
                        && matches!(e.kind, EdgeKind::ThreadHandoff | EdgeKind::CollectiveWait)
                })
                .collect();
            for inp in handoffs {
                self.add_edge(inp.from, next, inp.kind, inp.lag_ns);
            }
        }
        // Drop it from its predecessors' successor lists.
        for e in &preds {
            self.succs[e.from as usize].retain(|&s| s != task.0);
        }

        // What stays on the lane of the untraced gap after a removed host task: all of it
        // (`Keep`), or (`Drop`) what is beyond its name's typical gap when the gap is far
        // beyond it: a wait for a DataLoader worker, a peer or the step's own Python after
        // the last call is not the dispatch work that issued that call.
        let kept_gap_ns = match gaps {
            HostGaps::Keep => cost.gap_ns,
            HostGaps::Drop => match self.typical_gap_ns.get(&row.name) {
                Some(&typical) if cost.gap_ns > typical.max(1) * UNTYPICAL_GAP_FACTOR => {
                    cost.gap_ns - typical
                }
                _ => 0,
            },
        };
        if !on_device && kept_gap_ns > 0 {
            match (lane_prev, lane_next) {
                (Some(p), _) => self.costs[p as usize].gap_ns += kept_gap_ns,
                (None, Some(n)) => {
                    let next = &mut self.rows[n as usize];
                    if row.not_before_ns != NO_TIME {
                        next.not_before_ns = next
                            .not_before_ns
                            .max(row.not_before_ns + cost.dur_ns + kept_gap_ns);
                    }
                }
                (None, None) => {}
            }
        }
        if lane_prev.is_none()
            && let Some(n) = lane_next
            && row.not_before_ns != NO_TIME
            && self.rows[n as usize].not_before_ns == NO_TIME
        {
            // The lane's boundary moves to its new first task.
            self.rows[n as usize].not_before_ns = row.not_before_ns;
        }
        Arc::make_mut(&mut self.lane_tasks[row.lane as usize])[position] = GONE;
        self.alive[r] = false;
    }
}
