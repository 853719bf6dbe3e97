//! Edges inferred from timing alone, where nothing recorded explains a wait; kept to the ones
//! the replay needs.

use rustc_hash::FxHashMap;

use super::device_lanes::DeviceLanes;
use super::{Builder, PendingEdge, install_edges, source_time};
use crate::graph::calls::CallClass;
use crate::graph::{EdgeKind, TaskId, TaskKind};
use crate::simulate::{RecordedOrder, SimOptions, simulate};

impl Builder<'_> {
    /// Waits that nothing recorded explains, explained by the task whose end they follow.
    pub(super) fn inferred_edges(
        &mut self,
        device_lanes: &DeviceLanes,
        call_of: &[TaskId],
        edges: &[PendingEdge],
    ) -> Vec<PendingEdge> {
        let g = &self.graph;
        // The stream each call launched work on (its first device task's lane).
        let mut launched_on: FxHashMap<TaskId, u32> = FxHashMap::default();
        for (t, &call) in call_of.iter().enumerate() {
            if call != TaskId::NONE {
                launched_on.entry(call).or_insert(g.lane[t]);
            }
        }
        // Whether the thread told the stream to wait on an event since it last launched there:
        // a recorded `cudaStreamWaitEvent`, whose source stream the trace does not name.
        // The wait call, if so.
        let waited_for_event = |call: TaskId, stream: u32| -> Option<TaskId> {
            let lane = &g.lanes[g.lane[call.index()] as usize];
            let mut t = call.0;
            let mut looked = 0;
            while t > lane.first_task && looked < 64 {
                t -= 1;
                looked += 1;
                if launched_on.get(&TaskId(t)) == Some(&stream) {
                    return None;
                }
                if self.names.is_stream_wait_event(g.name[t as usize]) {
                    return Some(TaskId(t));
                }
            }
            None
        };
        let o = self.options;
        let n = g.task_count();
        // What the recorded causes explain, per task.
        let mut start_explained: Vec<i64> = (0..n)
            .map(|t| {
                let lane_ready = g
                    .lane_pred(TaskId(t as u32))
                    .map_or(i64::MIN, |p| g.rec_end_ns[p.index()] + g.gap_ns[p.index()]);
                lane_ready.max(g.not_before_ns[t])
            })
            .collect();
        let mut completion_explained: Vec<i64> = vec![i64::MIN; n];
        for e in edges.iter() {
            let ready = source_time(g, e) + e.lag_ns;
            let slot = if e.kind.gates_completion() {
                &mut completion_explained[e.to.index()]
            } else {
                &mut start_explained[e.to.index()]
            };
            *slot = (*slot).max(ready);
        }
        let mut added = Vec::new();
        for t in 0..n {
            let task = TaskId(t as u32);
            let kind = g.kind[t];
            if kind.on_device() {
                let unexplained = g.rec_start_ns[t] - start_explained[t];
                if start_explained[t] == i64::MIN || unexplained <= o.unexplained_device_wait_ns {
                    continue;
                }
                let lane = g.lane[t];
                let at = g.rec_start_ns[t];
                let edge = |from: TaskId, lag_ns: i64| PendingEdge {
                    from,
                    to: task,
                    kind: EdgeKind::InferredStreamWait,
                    lag_ns,
                };
                // 1. Work on another stream ended just before: a cross-stream wait whose
                //    record the trace lacks.
                let window = o.stream_wait_window_ns;
                if let Some(from) = device_lanes.latest_end_in(at - window, at + 1_000, Some(lane))
                {
                    added.push(edge(from, 0));
                    continue;
                }
                // 2. A kernel on another stream was draining its last wave: the device was full,
                //    and this task got its multiprocessors as that kernel's blocks finished.
                if let Some(from) = device_lanes.draining_at(at, o.drain_window_ns, lane) {
                    added.push(edge(from, at - g.rec_end_ns[from.index()]));
                    continue;
                }
                // 3. The thread made the stream wait on an event (a recorded call), but no
                //    device work explains when the wait ended: the event came from outside the
                //    trace. The wait is tied to the call that asked for it, the nearest recorded
                //    cause (never to the step's start: a faster step would still wait for the
                //    recorded clock). Like every inferred edge, it stays out of what-ifs.
                let call = call_of[t];
                if kind != TaskKind::Collective && call != TaskId::NONE {
                    let wait = waited_for_event(call, lane);
                    if let Some(wait) = wait.filter(|w| g.rec_end_ns[w.index()] <= at) {
                        added.push(edge(wait, at - g.rec_end_ns[wait.index()]));
                    }
                }
            } else if kind == TaskKind::ApiCall {
                let class = self.names.call_class(g.name[t]);
                if !matches!(
                    class,
                    CallClass::DeviceSync
                        | CallClass::StreamSync
                        | CallClass::EventSync
                        | CallClass::SyncCopy
                ) {
                    continue;
                }
                let returned = g.rec_end_ns[t];
                let explained = completion_explained[t].max(g.rec_start_ns[t]);
                if returned - explained <= o.unexplained_host_wait_ns {
                    continue;
                }
                if let Some(from) =
                    device_lanes.latest_end_in(returned - o.host_wake_window_ns, returned, None)
                {
                    added.push(PendingEdge {
                        from,
                        to: task,
                        kind: EdgeKind::InferredHostSync,
                        lag_ns: 0,
                    });
                }
            }
        }
        added
    }

    /// Of the candidate inferred edges, those the replay needs: a candidate whose target the
    /// recorded causes alone already hold back to its recorded time adds nothing. Keeps the
    /// edges inferred from timing to the minimum. Also says whether the graph now has exactly
    /// `recorded` and the kept edges installed (every candidate kept), so that `finish` need
    /// not install them again.
    pub(super) fn needed(
        &mut self,
        candidates: Vec<PendingEdge>,
        recorded: &[PendingEdge],
    ) -> (Vec<PendingEdge>, bool) {
        if candidates.is_empty() {
            return (candidates, false);
        }
        // The graph with every candidate, replayed without the inferred ones: the replay of
        // the recorded causes alone (it leaves out their edges and the waits only they
        // explain), and if every candidate is kept, the graph is already the final one.
        let mut all = Vec::with_capacity(recorded.len() + candidates.len());
        all.extend_from_slice(recorded);
        all.extend_from_slice(&candidates);
        // Installing sets the own cost of every task an edge holds from its recorded end, a
        // candidate's too: the costs before it, for installing again without the candidates
        // dropped.
        let dur_before = self.graph.dur_ns.clone();
        install_edges(&mut self.graph, all);
        let recorded_causes = SimOptions {
            without_inferred: true,
            ..SimOptions::default()
        };
        let g = &self.graph;
        let Ok(timeline) = simulate(g, &RecordedOrder, recorded_causes) else {
            return (candidates, true);
        };
        let slack = self.options.unexplained_device_wait_ns;
        let count = candidates.len();
        let kept: Vec<PendingEdge> = candidates
            .into_iter()
            .filter(|c| {
                let t = c.to.index();
                if c.kind.gates_completion() {
                    timeline.end_ns[t] < g.rec_end_ns[t] - slack
                } else {
                    timeline.begin_ns[t] < g.rec_start_ns[t] - slack
                }
            })
            .collect();
        let installed = kept.len() == count;
        if !installed {
            self.graph.dur_ns = dur_before;
        }
        (kept, installed)
    }
}
