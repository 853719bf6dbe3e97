//! Edges from recorded synchronizations: `cuda_sync` records, blocking copies and the
//! documented semantics of synchronizing calls.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use stepcast_trace::{LaneKind, SyncKind};

use super::device_lanes::DeviceLanes;
use super::{Builder, PendingEdge, TOLERANCE_NS};
use crate::graph::calls::CallClass;
use crate::graph::{EdgeKind, TaskId, TaskKind};

/// How many launches back on the recording stream an unnamed event's source is looked for
/// (`Work::wait` on an asynchronous collective a few collectives earlier).
const MAX_EVENT_WALK_BACK: usize = 16;

impl Builder<'_> {
    pub(super) fn sync_edges(
        &mut self,
        calls: &FxHashMap<u64, TaskId>,
        call_of: &[TaskId],
        device_lanes: &DeviceLanes,
        edges: &mut Vec<PendingEdge>,
    ) {
        let trace = self.trace;
        let g = &self.graph;
        let mut new_edges: Vec<PendingEdge> = Vec::new();
        let mut rejected: BTreeMap<&'static str, u64> = BTreeMap::new();
        let start_of = |t: TaskId| g.rec_start_ns[t.index()];

        // Recorded synchronizations (CUPTI sync records, 2023+).
        let mut synced_calls = rustc_hash::FxHashSet::default();
        // Calls whose stream wait a record describes; the others are read by their semantics.
        let mut recorded_waits = rustc_hash::FxHashSet::default();
        for sync in &trace.syncs {
            let Some(&call) = calls.get(&sync.correlation) else {
                *rejected
                    .entry("sync records whose call is not in the trace")
                    .or_default() += 1;
                continue;
            };
            if sync.kind == SyncKind::StreamWaitEvent {
                recorded_waits.insert(call);
            }
            let record_call = sync
                .wait_on_event_record_correlation
                .and_then(|c| calls.get(&c).copied());
            // The awaited work: the last task launched on the awaited stream before the event
            // was recorded (or before the waiting call, if no record is named).
            let awaited = |stream: i64| -> Option<TaskId> {
                let before = record_call.map_or(start_of(call), start_of);
                device_lanes.last_launched_before(sync.device, stream, before)
            };
            match sync.kind {
                SyncKind::StreamWaitEvent => {
                    let (Some(waiter), Some(source)) = (sync.stream, sync.wait_on_stream) else {
                        *rejected
                            .entry("stream waits without both streams")
                            .or_default() += 1;
                        continue;
                    };
                    let Some(from) = awaited(source) else {
                        *rejected
                            .entry("stream waits on a stream with no earlier work")
                            .or_default() += 1;
                        continue;
                    };
                    let Some(to) =
                        device_lanes.first_launched_after(sync.device, waiter, start_of(call))
                    else {
                        *rejected
                            .entry("stream waits followed by no work on the waiting stream")
                            .or_default() += 1;
                        continue;
                    };
                    new_edges.push(PendingEdge {
                        from,
                        to,
                        kind: EdgeKind::EventWait,
                        lag_ns: 0,
                    });
                }
                SyncKind::EventSync | SyncKind::StreamSync | SyncKind::ContextSync => {
                    let class = self.names.call_class(g.name[call.index()]);
                    if !class.may_block() {
                        // cudaEventQuery and friends are recorded as syncs but return at once.
                        continue;
                    }
                    synced_calls.insert(call);
                    let sources: Vec<TaskId> =
                        match (sync.kind, sync.wait_on_stream.or(sync.stream)) {
                            (SyncKind::ContextSync, _) | (_, None) => {
                                device_lanes.all_last_launched_before(sync.device, start_of(call))
                            }
                            (_, Some(stream)) => awaited(stream).into_iter().collect(),
                        };
                    for from in sources {
                        new_edges.push(PendingEdge {
                            from,
                            to: call,
                            kind: EdgeKind::HostSync,
                            lag_ns: 0,
                        });
                    }
                }
            }
        }

        // Calls whose semantics name what they wait for, when no sync record covers them.
        // Host thread (graph lane) → (device, stream) of the last work it launched.
        let mut last_launch_lane: FxHashMap<u32, (i64, i64)> = FxHashMap::default();
        // The device tasks of each call, in task order: CSR by call (one allocation, not one
        // per call).
        let mut launched_from = vec![0u32; g.task_count() + 1];
        for &call in call_of.iter().filter(|&&c| c != TaskId::NONE) {
            launched_from[call.index() + 1] += 1;
        }
        for i in 0..g.task_count() {
            launched_from[i + 1] += launched_from[i];
        }
        let mut launched = vec![TaskId::NONE; launched_from[g.task_count()] as usize];
        let mut fill = launched_from.clone();
        for (t, &call) in call_of.iter().enumerate() {
            if call != TaskId::NONE {
                launched[fill[call.index()] as usize] = TaskId(t as u32);
                fill[call.index()] += 1;
            }
        }
        let device_tasks_of_call = |call: TaskId| -> &[TaskId] {
            let i = call.index();
            &launched[launched_from[i] as usize..launched_from[i + 1] as usize]
        };
        for (lane_index, lane) in g.lanes.iter().enumerate() {
            if lane.kind != LaneKind::CpuThread {
                continue;
            }
            let lane_index = lane_index as u32;
            for t in lane.first_task..lane.first_task + lane.task_count {
                let call = TaskId(t);
                if g.kind[t as usize] != TaskKind::ApiCall {
                    continue;
                }
                let own = device_tasks_of_call(call);
                let name = g.name[t as usize];
                if !recorded_waits.contains(&call) && self.names.is_stream_wait_event(name) {
                    // Without a sync record (none in the trace, or none for this call: an nsys
                    // export without its CUDA_EVENT rows cannot say which stream a wait is
                    // on, and its reader drops such records) the event's source stream is not
                    // recorded. The waiting stream is the one this thread launches on next;
                    // PyTorch records the event on another stream just before, so the wait
                    // covers the work already launched on every other stream of the device.
                    // Guesses the recorded times contradict are dropped below.
                    let next = (t + 1..lane.first_task + lane.task_count)
                        .take(64)
                        .find_map(|n| device_tasks_of_call(TaskId(n)).first());
                    if let Some(&to) = next {
                        let waiting_lane = g.lane[to.index()];
                        let device = device_lanes.device_of(waiting_lane);
                        for last in device_lanes.all_last_launched_before(device, start_of(call)) {
                            if g.lane[last.index()] == waiting_lane {
                                continue;
                            }
                            // The event may have been recorded before the stream's latest
                            // launch: PyTorch makes the compute stream wait for the
                            // communication stream's state before a collective it has just
                            // launched there, and `Work::wait` waits for an event recorded
                            // right after its own collective, several launches back. The
                            // source is the latest work on that stream the recorded times
                            // allow (the pair is the recording's, like a lane's order; the
                            // time stays the cause's).
                            let mut from = last;
                            let mut steps = 0;
                            while g.rec_end_ns[from.index()]
                                > g.rec_start_ns[to.index()] + TOLERANCE_NS
                            {
                                match g.lane_pred(from) {
                                    Some(before) if steps < MAX_EVENT_WALK_BACK => {
                                        from = before;
                                        steps += 1;
                                    }
                                    _ => break,
                                }
                            }
                            new_edges.push(PendingEdge {
                                from,
                                to,
                                kind: EdgeKind::StreamWaitCall,
                                lag_ns: 0,
                            });
                        }
                    }
                }
                let class = self.names.call_class(name);
                match class {
                    CallClass::SyncCopy | CallClass::AsyncCopy => {
                        for &task in own {
                            if self.names.blocks_on_own_copy(name, g.name[task.index()]) {
                                new_edges.push(PendingEdge {
                                    from: task,
                                    to: call,
                                    kind: EdgeKind::HostSync,
                                    lag_ns: 0,
                                });
                            }
                        }
                    }
                    CallClass::DeviceSync if !synced_calls.contains(&call) => {
                        let device = last_launch_lane.get(&lane_index).map_or(0, |&(d, _)| d);
                        for from in device_lanes.all_last_launched_before(device, start_of(call)) {
                            new_edges.push(PendingEdge {
                                from,
                                to: call,
                                kind: EdgeKind::HostSync,
                                lag_ns: 0,
                            });
                        }
                    }
                    CallClass::StreamSync if !synced_calls.contains(&call) => {
                        // Without a sync record the stream is not recorded; PyTorch synchronizes
                        // the stream this thread last launched work on.
                        let awaited =
                            last_launch_lane
                                .get(&lane_index)
                                .and_then(|&(device, stream)| {
                                    device_lanes.last_launched_before(
                                        device,
                                        stream,
                                        start_of(call),
                                    )
                                });
                        if let Some(from) = awaited {
                            new_edges.push(PendingEdge {
                                from,
                                to: call,
                                kind: EdgeKind::HostSync,
                                lag_ns: 0,
                            });
                        }
                    }
                    _ => {}
                }
                if let Some(&last) = own.last() {
                    let stream =
                        &trace.lanes[g.lanes[g.lane[last.index()] as usize].trace_lane.index()];
                    last_launch_lane.insert(lane_index, (stream.pid, stream.tid));
                }
            }
        }

        // A recorded cause that contradicts the recorded times is wrong about this instance.
        for edge in new_edges {
            let from_end = g.rec_end_ns[edge.from.index()];
            let limit = if edge.kind.gates_completion() {
                g.rec_end_ns[edge.to.index()]
            } else {
                g.rec_start_ns[edge.to.index()]
            };
            if from_end > limit + TOLERANCE_NS {
                *rejected
                    .entry("sync dependencies contradicted by recorded times")
                    .or_default() += 1;
                continue;
            }
            edges.push(edge);
        }
        for (reason, count) in rejected {
            *self.report.rejected.entry(reason.to_string()).or_default() += count;
        }
    }
}
