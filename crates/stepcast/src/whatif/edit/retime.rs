//! Changing what tasks cost: scaled or set durations and gaps, handoff lags, peer waits, and
//! the inputs of one edge kind dropped.

use crate::graph::{EdgeKind, TaskId};

use super::{EditError, EditGraph, Selection, check_factor, scale_ns};

impl EditGraph {
    /// Multiplies the cost of every selected task by `factor` (rounded to the nearest ns).
    /// The untraced gap after a task is not scaled: use [`EditGraph::scale_gaps`].
    pub fn scale(&mut self, selection: &Selection, factor: f64) -> Result<(), EditError> {
        check_factor(factor)?;
        for &task in selection.tasks() {
            self.check_live(task)?;
            let cost = &mut self.costs[task.index()];
            let old_ns = cost.dur_ns;
            cost.dur_ns = scale_ns(cost.dur_ns, factor);
            cost.dur_without_inferred_ns = scale_ns(cost.dur_without_inferred_ns, factor);
            let new_ns = cost.dur_ns;
            self.retime_launches(task, old_ns, new_ns);
        }
        Ok(())
    }

    /// A launch call's work is ready a calibrated moment after the call returns (or, for a
    /// call that blocks on it, a latency after it begins, never after it returns): when the
    /// call's cost changes from `old_ns` to `new_ns`, so does the lag of its launch edges. The
    /// same for a host task that posts gloo work (`EdgeKind::CollectivePost`).
    fn retime_launches(&mut self, call: TaskId, old_ns: i64, new_ns: i64) {
        if self.rows[call.index()].kind.on_device() || old_ns == new_ns {
            return;
        }
        let mut targets = self.succs[call.index()].clone();
        targets.sort_unstable();
        targets.dedup();
        for target in targets {
            for edge in &mut self.preds[target as usize] {
                if edge.from != call.0
                    || !matches!(edge.kind, EdgeKind::Launch | EdgeKind::CollectivePost)
                {
                    continue;
                }
                edge.lag_ns = if edge.lag_ns >= old_ns {
                    (edge.lag_ns - old_ns + new_ns).max(0)
                } else {
                    edge.lag_ns.min(new_ns)
                };
            }
        }
    }

    /// Multiplies the untraced gap after every selected task by `factor`, and the untraced
    /// host time of a handoff from it to another thread (`EdgeKind::ThreadHandoff`'s lag),
    /// which is the same kind of time.
    pub fn scale_gaps(&mut self, selection: &Selection, factor: f64) -> Result<(), EditError> {
        check_factor(factor)?;
        for &task in selection.tasks() {
            self.check_live(task)?;
            let cost = &mut self.costs[task.index()];
            cost.gap_ns = scale_ns(cost.gap_ns, factor);
            let mut targets = self.succs[task.index()].clone();
            targets.sort_unstable();
            targets.dedup();
            for target in targets {
                for edge in &mut self.preds[target as usize] {
                    if edge.from == task.0 && edge.kind == EdgeKind::ThreadHandoff {
                        edge.lag_ns = scale_ns(edge.lag_ns, factor);
                    }
                }
            }
        }
        Ok(())
    }

    /// Sets to `ns` the lag of every handoff between two selected tasks
    /// (`EdgeKind::ThreadHandoff` from one selected task into another): the time a thread
    /// took to wake for work another thread handed it, which a program that no longer hands
    /// that work over (a CUDA graph's replay) does not spend. Handoffs into or out of the
    /// selection keep their lags. Returns the lag removed, in ns.
    pub fn set_handoff_lags_within(
        &mut self,
        selection: &Selection,
        ns: i64,
    ) -> Result<i64, EditError> {
        if ns < 0 {
            return Err(EditError::BadDuration { ns });
        }
        let mut removed = 0;
        for &task in selection.tasks() {
            self.check_live(task)?;
            for edge in &mut self.preds[task.index()] {
                if edge.kind == EdgeKind::ThreadHandoff && selection.contains(TaskId(edge.from)) {
                    removed += (edge.lag_ns - ns).max(0);
                    edge.lag_ns = ns;
                }
            }
        }
        Ok(removed)
    }

    /// Sets the cost of every selected task to `ns`. A blocking call keeps the part of its
    /// cost that only an inferred edge explained (`dur_without_inferred_ns - dur_ns`).
    pub fn set_duration(&mut self, selection: &Selection, ns: i64) -> Result<(), EditError> {
        if ns < 0 {
            return Err(EditError::BadDuration { ns });
        }
        for &task in selection.tasks() {
            self.check_live(task)?;
            let cost = &mut self.costs[task.index()];
            let extra = (cost.dur_without_inferred_ns - cost.dur_ns).max(0);
            let old_ns = cost.dur_ns;
            cost.dur_ns = ns;
            cost.dur_without_inferred_ns = ns + extra;
            self.retime_launches(task, old_ns, ns);
        }
        Ok(())
    }

    /// The declared wait of a collective for its peers (0 for any other task).
    pub fn peer_wait_ns(&self, task: TaskId) -> i64 {
        self.rows[task.index()].peer_wait_ns
    }

    /// Sets the declared wait of a collective for its peers (a merged collective waits for
    /// what its members waited for).
    pub fn set_peer_wait(&mut self, task: TaskId, ns: i64) -> Result<(), EditError> {
        self.check_live(task)?;
        if ns < 0 {
            return Err(EditError::BadDuration { ns });
        }
        self.rows[task.index()].peer_wait_ns = ns;
        Ok(())
    }

    /// Sets the untraced gap after every selected task to `ns`.
    pub fn set_gap(&mut self, selection: &Selection, ns: i64) -> Result<(), EditError> {
        if ns < 0 {
            return Err(EditError::BadDuration { ns });
        }
        for &task in selection.tasks() {
            self.check_live(task)?;
            self.costs[task.index()].gap_ns = ns;
        }
        Ok(())
    }

    /// Drops the stored edges of `kind` into every selected task (a collective's wait for its
    /// peers, when a model replaces what the recording said about them). `PeerArrival` also
    /// drops the declared wait for peers outside the graph (`Graph::peer_wait_ns`).
    pub fn drop_inputs(&mut self, selection: &Selection, kind: EdgeKind) -> Result<(), EditError> {
        for &task in selection.tasks() {
            self.check_live(task)?;
            if kind == EdgeKind::PeerArrival {
                self.rows[task.index()].peer_wait_ns = 0;
            }
            let dropped: Vec<u32> = self.preds[task.index()]
                .iter()
                .filter(|e| e.kind == kind)
                .map(|e| e.from)
                .collect();
            self.preds[task.index()].retain(|e| e.kind != kind);
            for from in dropped {
                if !self.preds[task.index()].iter().any(|e| e.from == from) {
                    self.succs[from as usize].retain(|&s| s != task.0);
                }
            }
        }
        Ok(())
    }
}
