//! Fusing tasks of one lane into one, and finding the runs of consecutive selected tasks.

use crate::graph::{EdgeKind, TaskId};

use super::{Edge, EditError, EditGraph, GONE, HostGaps, Selection, check_factor, scale_ns};

/// The cost of a fused task.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FusedCost {
    Fixed(i64),
    /// The sum of the fused tasks' costs × this factor.
    SumTimes(f64),
}

impl EditGraph {
    /// Fuses the selected tasks, all on one lane, into the first of them: its cost becomes
    /// `dur_ns`, or the sum of their costs × `factor`. The others are removed (their
    /// dependencies reconnected to the fused task's successors; the calls that launched only
    /// them removed, with their gaps per `gaps`). Returns the fused task.
    pub fn fuse(
        &mut self,
        selection: &Selection,
        cost: FusedCost,
        gaps: HostGaps,
    ) -> Result<Option<TaskId>, EditError> {
        let Some(&first) = selection.tasks().first() else {
            return Ok(None);
        };
        for &task in selection.tasks() {
            self.check_live(task)?;
            let (a, b) = (self.lane(first), self.lane(task));
            if a != b {
                return Err(EditError::FuseAcrossLanes {
                    first: a,
                    second: b,
                });
            }
        }
        // The first task in lane order survives.
        self.settle(self.lane(first));
        let keep = *selection
            .tasks()
            .iter()
            .min_by_key(|t| self.position[t.index()])
            .unwrap_or(&first);
        let dur = match cost {
            FusedCost::Fixed(ns) => ns,
            FusedCost::SumTimes(factor) => {
                check_factor(factor)?;
                let sum: i64 = selection.tasks().iter().map(|&t| self.dur_ns(t)).sum();
                scale_ns(sum, factor)
            }
        };
        if dur < 0 {
            return Err(EditError::BadDuration { ns: dur });
        }
        let rest = Selection(
            selection
                .tasks()
                .iter()
                .copied()
                .filter(|&t| t != keep)
                .collect(),
        );
        // The fused task inherits every wait of the fused-away tasks (they ran after it on the
        // lane, so their inputs are now its inputs).
        for &t in rest.tasks() {
            let inputs: Vec<Edge> = self.preds[t.index()]
                .iter()
                .copied()
                .filter(|e| {
                    e.kind != EdgeKind::Launch
                        && e.kind != EdgeKind::LaneOrder
                        && !e.kind.gates_completion()
                })
                .collect();
            for e in inputs {
                if e.from != keep.0 && self.is_alive(TaskId(e.from)) {
                    self.add_edge(e.from, keep.0, e.kind, e.lag_ns);
                }
            }
        }
        self.remove(&rest, gaps)?;
        let cost = &mut self.costs[keep.index()];
        cost.dur_ns = dur;
        cost.dur_without_inferred_ns = dur;
        Ok(Some(keep))
    }

    /// Splits `selection` into runs: tasks adjacent on their lane (nothing unselected between
    /// them) and in the same step, in lane order. An element-wise chain is such a run. A task
    /// that waits for work on another lane (an event wait, a handoff) starts a new run: that
    /// work may itself wait for the run's earlier tasks, so fusing across it would make the
    /// fused task wait for itself.
    pub fn runs(&self, selection: &Selection) -> Vec<Selection> {
        // Only the lanes the selection has tasks on: the host threads' lanes hold most of a
        // window's tasks and, for a selection of kernels, none of its runs.
        let mut selected_lanes = vec![false; self.lane_tasks.len()];
        for &task in selection.tasks() {
            if let Some(row) = self.rows.get(task.index()) {
                selected_lanes[row.lane as usize] = true;
            }
        }
        let mut runs = Vec::new();
        for (lane_index, _) in selected_lanes.iter().enumerate().filter(|(_, hit)| **hit) {
            let lane = self.ordered_lane(lane_index as u32);
            let mut current: Vec<TaskId> = Vec::new();
            for &t in lane.iter().filter(|&&t| t != GONE) {
                let task = TaskId(t);
                if !selection.contains(task) {
                    if !current.is_empty() {
                        runs.push(Selection::new(std::mem::take(&mut current)));
                    }
                    continue;
                }
                let same_step = current
                    .last()
                    .is_none_or(|&p| self.rows[p.index()].step == self.rows[t as usize].step);
                let waits_elsewhere = self.preds[t as usize].iter().any(|e| {
                    e.kind != EdgeKind::Launch
                        && self.alive[e.from as usize]
                        && self.rows[e.from as usize].lane != self.rows[t as usize].lane
                });
                if (waits_elsewhere || !same_step) && !current.is_empty() {
                    runs.push(Selection::new(std::mem::take(&mut current)));
                }
                current.push(task);
            }
            if !current.is_empty() {
                runs.push(Selection::new(current));
            }
        }
        runs
    }
}
