//! Device streams with their tasks' launch times, for "the last work launched on stream S
//! before time T" queries.

use rustc_hash::FxHashMap;
use stepcast_trace::{LaneKind, Trace};

use crate::graph::{Graph, TaskId};

pub(super) struct DeviceLanes {
    /// (device, stream) → graph lane.
    by_stream: FxHashMap<(i64, i64), u32>,
    lanes: Vec<DeviceLane>,
}

struct DeviceLane {
    lane: u32,
    device: i64,
    /// Task ids and the start of their launching call (`i64::MIN` if not launched in the window),
    /// in stream order. Stream order is launch order, so `launched_at` is non-decreasing.
    tasks: Vec<TaskId>,
    launched_at: Vec<i64>,
    /// Recorded ends, non-decreasing along a stream.
    ends: Vec<i64>,
    /// Recorded starts, in stream order.
    starts: Vec<i64>,
}

impl DeviceLanes {
    pub(super) fn new(trace: &Trace, g: &Graph, call_of: &[TaskId]) -> Self {
        let mut by_stream = FxHashMap::default();
        let mut lanes = Vec::new();
        for (i, lane) in g.lanes.iter().enumerate() {
            if lane.kind != LaneKind::DeviceStream {
                continue;
            }
            let range = lane.first_task..lane.first_task + lane.task_count;
            let tasks: Vec<TaskId> = range.map(TaskId).collect();
            let mut launched_at: Vec<i64> = tasks
                .iter()
                .map(|t| {
                    let call = call_of[t.index()];
                    if call == TaskId::NONE {
                        i64::MIN
                    } else {
                        g.rec_start_ns[call.index()]
                    }
                })
                .collect();
            // Keep the column monotone even if two threads interleave launches on one stream.
            for k in 1..launched_at.len() {
                launched_at[k] = launched_at[k].max(launched_at[k - 1]);
            }
            let mut ends: Vec<i64> = tasks.iter().map(|t| g.rec_end_ns[t.index()]).collect();
            for k in 1..ends.len() {
                ends[k] = ends[k].max(ends[k - 1]);
            }
            let stream = &trace.lanes[lane.trace_lane.index()];
            by_stream.insert((stream.pid, stream.tid), lanes.len() as u32);
            let starts: Vec<i64> = tasks.iter().map(|t| g.rec_start_ns[t.index()]).collect();
            lanes.push(DeviceLane {
                lane: i as u32,
                device: lane.device.unwrap_or(stream.pid),
                tasks,
                launched_at,
                ends,
                starts,
            });
        }
        DeviceLanes { by_stream, lanes }
    }
}

impl DeviceLanes {
    fn lane(&self, device: i64, stream: i64) -> Option<&DeviceLane> {
        self.by_stream
            .get(&(device, stream))
            .map(|&i| &self.lanes[i as usize])
    }

    /// The last task on `stream` launched before `time`.
    pub(super) fn last_launched_before(
        &self,
        device: i64,
        stream: i64,
        time: i64,
    ) -> Option<TaskId> {
        let lane = self.lane(device, stream)?;
        let k = lane.launched_at.partition_point(|&at| at < time);
        (k > 0).then(|| lane.tasks[k - 1])
    }

    /// The first task on `stream` launched after `time`.
    pub(super) fn first_launched_after(
        &self,
        device: i64,
        stream: i64,
        time: i64,
    ) -> Option<TaskId> {
        let lane = self.lane(device, stream)?;
        let k = lane.launched_at.partition_point(|&at| at <= time);
        lane.tasks.get(k).copied()
    }

    /// On every stream of `device`, the last task launched before `time`.
    /// The device of graph lane `lane` (0 if it is not a device lane).
    pub(super) fn device_of(&self, lane: u32) -> i64 {
        self.lanes
            .iter()
            .find(|l| l.lane == lane)
            .map_or(0, |l| l.device)
    }

    pub(super) fn all_last_launched_before(&self, device: i64, time: i64) -> Vec<TaskId> {
        self.lanes
            .iter()
            .filter(|l| l.device == device)
            .filter_map(|l| {
                let k = l.launched_at.partition_point(|&at| at < time);
                (k > 0).then(|| l.tasks[k - 1])
            })
            .collect()
    }

    /// Of the tasks running at `at` on other lanes of `lane`'s device, the one ending soonest,
    /// if it ends within `window` after `at`.
    pub(super) fn draining_at(&self, at: i64, window: i64, lane: u32) -> Option<TaskId> {
        let device = self.lanes.iter().find(|l| l.lane == lane)?.device;
        self.lanes
            .iter()
            .filter(|l| l.lane != lane && l.device == device)
            .filter_map(|l| {
                let k = l.starts.partition_point(|&start| start < at);
                let task = *l.tasks.get(k.checked_sub(1)?)?;
                let end = l.ends[k - 1];
                (end > at && end <= at + window).then_some((end, task))
            })
            .min()
            .map(|(_, task)| task)
    }

    /// The task ending latest within `[from, to]`, on any device lane except `except`.
    pub(super) fn latest_end_in(&self, from: i64, to: i64, except: Option<u32>) -> Option<TaskId> {
        let mut best: Option<(i64, TaskId)> = None;
        for lane in &self.lanes {
            if Some(lane.lane) == except {
                continue;
            }
            let k = lane.ends.partition_point(|&end| end <= to);
            if k == 0 || lane.ends[k - 1] < from {
                continue;
            }
            let candidate = (lane.ends[k - 1], lane.tasks[k - 1]);
            if best.is_none_or(|b| candidate > b) {
                best = Some(candidate);
            }
        }
        best.map(|(_, task)| task)
    }
}
