//! Adding work: a device task with its launch call, a host task on a thread, a lane, a task at
//! a lane's end, a dependency.

use std::sync::Arc;

use stepcast_trace::NameId;

use crate::graph::{EdgeKind, GraphLane, NO_TIME, SmDemand, TaskId, TaskKind};

use super::{Costs, EditError, EditGraph, Row};

/// A device task to insert with [`EditGraph::insert`].
#[derive(Clone, Debug)]
pub struct Insert {
    pub kind: TaskKind,
    pub name: NameId,
    pub dur_ns: i64,
    /// The device task it runs after, on that task's stream.
    pub after: TaskId,
    /// Its launch call, if any.
    pub launch: Option<InsertLaunch>,
}

/// A host task inserted after another on that task's thread: work the host runs again (an op
/// of a CPU-only trace that activation recomputation runs a second time).
#[derive(Clone, Debug)]
pub struct InsertHost {
    pub kind: TaskKind,
    pub name: NameId,
    pub dur_ns: i64,
    /// The host time after it before its thread's next task (the eager dispatch, Python).
    pub gap_ns: i64,
    /// The host task it runs after.
    pub after: TaskId,
}

/// The host call that launches an inserted device task.
#[derive(Clone, Debug)]
pub struct InsertLaunch {
    pub name: NameId,
    /// The host task the call runs after, on that task's thread.
    pub after: TaskId,
    /// The call's CPU cost; see [`median_duration`](super::median_duration) for the trace's
    /// own figure.
    pub dur_ns: i64,
}

impl EditGraph {
    /// Inserts a device task on the stream of `spec.after`, right after it, and its launch
    /// call (if given) on the thread of `spec.launch.after`, right after that task. The device
    /// task gets the window's calibrated dispatch gap, the launch edge its launch latency.
    /// Returns the new device task.
    pub fn insert(&mut self, spec: &Insert) -> Result<TaskId, EditError> {
        if spec.dur_ns < 0 {
            return Err(EditError::BadDuration { ns: spec.dur_ns });
        }
        let after = self.row_to_follow(spec.after, spec.kind)?;
        let device = self.push_row(
            Row {
                kind: spec.kind,
                name: spec.name,
                not_before_ns: NO_TIME,
                peer_wait_ns: 0,
                sm_demand: SmDemand::of_kind(spec.kind),
                rec_start_ns: after.rec_end_ns,
                ..after
            },
            Costs {
                dur_ns: spec.dur_ns,
                dur_without_inferred_ns: spec.dur_ns,
                gap_ns: self.dispatch_gap_ns,
            },
            spec.after,
        );
        if let Some(launch) = &spec.launch {
            if launch.dur_ns < 0 {
                return Err(EditError::BadDuration { ns: launch.dur_ns });
            }
            let host = self.row_to_follow(launch.after, TaskKind::ApiCall)?;
            let call = self.push_row(
                Row {
                    kind: TaskKind::ApiCall,
                    name: launch.name,
                    not_before_ns: NO_TIME,
                    peer_wait_ns: 0,
                    sm_demand: SmDemand::None,
                    rec_start_ns: host.rec_end_ns,
                    rec_end_ns: host.rec_end_ns,
                    ..host
                },
                Costs {
                    dur_ns: launch.dur_ns,
                    dur_without_inferred_ns: launch.dur_ns,
                    gap_ns: 0,
                },
                launch.after,
            );
            self.add_edge(call.0, device.0, EdgeKind::Launch, self.launch_latency_ns);
        }
        Ok(device)
    }

    /// Inserts a host task after `spec.after` on its thread; it takes that task's step, phase
    /// and layer, and waits for nothing but its thread. Returns it.
    pub fn insert_host(&mut self, spec: &InsertHost) -> Result<TaskId, EditError> {
        for ns in [spec.dur_ns, spec.gap_ns] {
            if ns < 0 {
                return Err(EditError::BadDuration { ns });
            }
        }
        let host = self.row_to_follow(spec.after, spec.kind)?;
        Ok(self.push_row(
            Row {
                kind: spec.kind,
                name: spec.name,
                not_before_ns: NO_TIME,
                peer_wait_ns: 0,
                sm_demand: SmDemand::None,
                rec_start_ns: host.rec_end_ns,
                rec_end_ns: host.rec_end_ns,
                ..host
            },
            Costs {
                dur_ns: spec.dur_ns,
                dur_without_inferred_ns: spec.dur_ns,
                gap_ns: spec.gap_ns,
            },
            spec.after,
        ))
    }

    /// Adds an empty lane like `like`: a new stream of its device (a communication library's
    /// own stream), or a new thread of its process (a communication library's worker thread,
    /// as gloo's on CPU tensors). Returns its index.
    pub fn add_lane(&mut self, like: u32) -> Result<u32, EditError> {
        let Some(lane) = self.lanes.get(like as usize).cloned() else {
            return Err(EditError::Invalid(format!("no lane {like}")));
        };
        self.lanes.push(GraphLane {
            first_task: 0,
            task_count: 0,
            ..lane
        });
        self.lane_tasks.push(Arc::new(Vec::new()));
        self.inserted.push(Vec::new());
        Ok(self.lanes.len() as u32 - 1)
    }

    /// Appends a task at the end of lane `lane`: a device task on a device lane, with the
    /// window's calibrated dispatch gap after it, or a host task on a host thread, with none.
    /// It takes the step, phase and layer of `like` (an input task); it waits for nothing but
    /// its lane until dependencies are added ([`EditGraph::add_dependency`]).
    pub fn append(
        &mut self,
        lane: u32,
        kind: TaskKind,
        name: NameId,
        dur_ns: i64,
        like: TaskId,
    ) -> Result<TaskId, EditError> {
        self.check_live(like)?;
        if dur_ns < 0 {
            return Err(EditError::BadDuration { ns: dur_ns });
        }
        let Some(lane_kind) = self.lanes.get(lane as usize).map(|l| l.kind) else {
            return Err(EditError::Invalid(format!("no lane {lane}")));
        };
        let on_device_lane = lane_kind == stepcast_trace::LaneKind::DeviceStream;
        if on_device_lane != kind.on_device() {
            let (found, expected) = if on_device_lane {
                ("host", "device")
            } else {
                ("device", "host")
            };
            return Err(EditError::WrongLane {
                task: like.0,
                found,
                expected,
            });
        }
        let base = self.rows[like.index()].clone();
        let id = self.rows.len() as u32;
        self.rows.push(Row {
            kind,
            lane,
            name,
            not_before_ns: NO_TIME,
            peer_wait_ns: 0,
            sm_demand: SmDemand::of_kind(kind),
            rec_start_ns: base.rec_end_ns,
            rec_end_ns: base.rec_end_ns,
            ..base
        });
        self.costs.push(Costs {
            dur_ns,
            dur_without_inferred_ns: dur_ns,
            gap_ns: if on_device_lane {
                self.dispatch_gap_ns
            } else {
                0
            },
        });
        let tasks = Arc::make_mut(&mut self.lane_tasks[lane as usize]);
        self.position.push(tasks.len() as u32);
        tasks.push(id);
        self.alive.push(true);
        self.frozen.push(false);
        self.preds.push(Vec::new());
        self.succs.push(Vec::new());
        Ok(TaskId(id))
    }

    /// Makes `to` wait for `from` through an edge of `kind` with `lag_ns` (a stream waiting on
    /// an event: [`EdgeKind::EventWait`]).
    pub fn add_dependency(
        &mut self,
        from: TaskId,
        to: TaskId,
        kind: EdgeKind,
        lag_ns: i64,
    ) -> Result<(), EditError> {
        self.check_live(from)?;
        self.check_live(to)?;
        self.add_edge(from.0, to.0, kind, lag_ns);
        Ok(())
    }

    /// The row of `after`, a live task a new task of kind `kind` is to follow on its lane: a
    /// device task follows a device task, a host task a host task.
    fn row_to_follow(&self, after: TaskId, kind: TaskKind) -> Result<Row, EditError> {
        self.check_live(after)?;
        let row = self.rows[after.index()].clone();
        let lane = |device: bool| if device { "device" } else { "host" };
        if row.kind.on_device() != kind.on_device() {
            return Err(EditError::WrongLane {
                task: after.0,
                found: lane(row.kind.on_device()),
                expected: lane(kind.on_device()),
            });
        }
        Ok(row)
    }

    /// Adds `row` to the lane of `after`, right after it (pending until the lane is next put
    /// in order: O(1)).
    fn push_row(&mut self, row: Row, costs: Costs, after: TaskId) -> TaskId {
        let id = self.rows.len() as u32;
        self.inserted[row.lane as usize].push((after.0, id));
        self.inserted_after.insert(id, after.0);
        self.followers.entry(after.0).or_default().push(id);
        self.position.push(u32::MAX);
        self.rows.push(row);
        self.costs.push(costs);
        self.alive.push(true);
        self.frozen.push(false);
        self.preds.push(Vec::new());
        self.succs.push(Vec::new());
        TaskId(id)
    }
}
