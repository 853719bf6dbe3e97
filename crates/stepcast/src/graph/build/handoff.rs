//! The autograd engine's thread and the thread that called `backward()`.
//!
//! PyTorch runs a CUDA backward pass on its own engine thread (its ops are
//! `autograd::engine::evaluate_function: ...`) while the calling thread blocks in
//! `backward()` without recording anything. Lane order alone would pin each backward pass to
//! its recorded start (the engine thread's untraced gap spans the whole forward pass) and the
//! caller's next work to the recorded end of the backward pass (its gap spans it): a what-if
//! that shortens the forward pass would not move the backward pass, and one that shortens the
//! backward pass would not move the optimizer. Two edges per backward pass say what really
//! happened instead: the engine thread starts after the caller's last work (the *fork*), and
//! the caller resumes after the engine thread's last work (the *join*). Their lags are the
//! recorded untraced host time around the handoff (Python before and after the call), like a
//! lane's gap; the gaps they replace become zero, since the threads were idle there.
//!
//! A handoff is only taken where the evidence is unambiguous: the engine thread is known by
//! its ops, and the caller (the thread of the step markers) ran nothing while the backward
//! pass ran. PyTorch 1.8 and before recorded the engine's ops by their autograd node's name
//! alone (`NllLossBackward`, `ReluBackward1`): a thread other than the caller's running such
//! ops is the engine thread too.

use stepcast_trace::{LaneId, LaneKind, NameId, Trace};

use super::{Builder, PendingEdge};
use crate::graph::{EdgeKind, Graph, NO_TIME, TaskId};

/// Name prefix of the ops the autograd engine runs for each backward function.
const ENGINE_OP_PREFIX: &str = "autograd::engine::evaluate_function";

impl Builder<'_> {
    /// Fork and join edges between the step thread and each autograd engine thread.
    pub(super) fn autograd_handoffs(&mut self, edges: &mut Vec<PendingEdge>) {
        let trace = self.trace;
        let Some(caller) = step_thread(trace) else {
            return;
        };
        let g = &self.graph;
        let Some(caller_lane) = graph_lane(g, caller) else {
            return;
        };
        let engine_lanes: Vec<usize> = engine_threads(trace)
            .into_iter()
            .filter(|&lane| lane != caller)
            .filter_map(|lane| graph_lane(g, lane))
            .collect();
        let window_start_ns = (0..g.task_count()).map(|t| g.rec_start_ns[t]).min();
        let mut handoffs = 0u64;
        let passes: Vec<BackwardPass> = engine_lanes
            .into_iter()
            .flat_map(|engine_lane| backward_passes(g, engine_lane, caller_lane))
            .collect();
        for pass in passes {
            let g = &mut self.graph;
            let fork = pass.fork_source;
            edges.push(PendingEdge {
                from: fork,
                to: pass.first,
                kind: EdgeKind::ThreadHandoff,
                lag_ns: g.rec_start_ns[pass.first.index()] - g.rec_end_ns[fork.index()],
            });
            match g.lane_pred(pass.first) {
                Some(before) => g.gap_ns[before.index()] = 0,
                // The engine thread's first task: the fork explains its start, so it is no
                // longer pinned to the recorded one.
                None => g.not_before_ns[pass.first.index()] = window_start_ns.unwrap_or(NO_TIME),
            }
            handoffs += 1;
            if let Some(join) = pass.join_target {
                edges.push(PendingEdge {
                    from: pass.last,
                    to: join,
                    kind: EdgeKind::ThreadHandoff,
                    lag_ns: g.rec_start_ns[join.index()] - g.rec_end_ns[pass.last.index()],
                });
                // The caller was blocked from its last work before the pass to its first
                // work after it.
                g.gap_ns[fork.index()] = 0;
                handoffs += 1;
            }
        }
        if handoffs > 0 {
            self.report.notes.push(format!(
                "{handoffs} handoffs between the step thread and the autograd engine thread \
                 (`thread_handoff` edges): the backward pass starts after the forward pass's \
                 last host work and the optimizer after the backward pass, not at their \
                 recorded times"
            ));
        }
    }
}

/// One backward pass: a run of engine-thread tasks during which the caller ran nothing.
struct BackwardPass {
    first: TaskId,
    last: TaskId,
    /// The caller's last task before the pass (it ended before the pass began).
    fork_source: TaskId,
    /// The caller's first task after the pass, if the caller ran nothing during it.
    join_target: Option<TaskId>,
}

/// The runs of `engine` tasks between caller tasks, with the caller tasks around each run.
fn backward_passes(g: &Graph, engine: usize, caller: usize) -> Vec<BackwardPass> {
    let tasks = |lane: usize| {
        let l = &g.lanes[lane];
        (l.first_task..l.first_task + l.task_count).map(TaskId)
    };
    let caller_tasks: Vec<TaskId> = tasks(caller).collect();
    let start = |t: TaskId| g.rec_start_ns[t.index()];
    let end = |t: TaskId| g.rec_end_ns[t.index()];
    // Index of the first caller task starting at or after `time`.
    let caller_after = |time: i64| caller_tasks.partition_point(|&c| start(c) < time);

    let mut passes = Vec::new();
    let mut engine_tasks = tasks(engine).peekable();
    while let Some(first) = engine_tasks.next() {
        // The pass runs until the caller starts something.
        let next_caller = caller_after(start(first));
        let caller_resumes = caller_tasks
            .get(next_caller)
            .map_or(i64::MAX, |&c| start(c));
        let mut last = first;
        while let Some(&t) = engine_tasks.peek() {
            if start(t) >= caller_resumes {
                break;
            }
            last = t;
            engine_tasks.next();
        }
        // Only a pass the caller handed over: its last work ended before the pass began. A
        // pass that overlaps the caller's work (or precedes it) is not a blocking handoff.
        let before = next_caller.checked_sub(1).map(|i| caller_tasks[i]);
        let Some(fork_source) = before.filter(|&c| end(c) <= start(first)) else {
            continue;
        };
        let join_target = caller_tasks
            .get(next_caller)
            .copied()
            .filter(|&c| start(c) >= end(last));
        passes.push(BackwardPass {
            first,
            last,
            fork_source,
            join_target,
        });
    }
    passes
}

/// The host thread of the step markers: the one that calls `backward()`.
fn step_thread(trace: &Trace) -> Option<LaneId> {
    trace.steps.first().map(|s| s.lane)
}

/// Whether `name` is an autograd node's class name as PyTorch 1.8 recorded it: CamelCase
/// ending in `Backward`, maybe numbered (`CudnnConvolutionBackward`, `AddBackward0`).
fn is_backward_node(name: &str) -> bool {
    let stem = name.trim_end_matches(|c: char| c.is_ascii_digit());
    stem.len() > "Backward".len()
        && stem.ends_with("Backward")
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().all(|c| c.is_ascii_alphanumeric())
}

/// Host threads that run autograd engine ops.
fn engine_threads(trace: &Trace) -> Vec<LaneId> {
    let engine_name: Vec<bool> = (0..trace.names.len() as u32)
        .map(|id| {
            let name = trace.name(NameId(id));
            name.starts_with(ENGINE_OP_PREFIX) || is_backward_node(name)
        })
        .collect();
    if !engine_name.contains(&true) {
        return Vec::new();
    }
    // Events are sorted by lane: one look per lane until an engine op is found.
    let mut lanes = Vec::new();
    for (index, lane) in trace.lanes.iter().enumerate() {
        let id = LaneId(index as u32);
        if lane.kind == LaneKind::CpuThread
            && trace
                .lane_events(id)
                .iter()
                .any(|e| engine_name[e.name.index()])
        {
            lanes.push(id);
        }
    }
    lanes
}

fn graph_lane(g: &Graph, lane: LaneId) -> Option<usize> {
    g.lanes
        .iter()
        .position(|l| l.trace_lane == lane && l.task_count > 0)
}

#[cfg(test)]
mod tests {
    use super::is_backward_node;

    #[test]
    fn backward_nodes_are_known_by_their_class_names() {
        for name in [
            "NllLossBackward",
            "ReluBackward1",
            "CudnnConvolutionBackward",
            "AddBackward0",
        ] {
            assert!(is_backward_node(name), "{name}");
        }
        for name in [
            "Backward",
            "aten::convolution_backward",
            "nll_loss_backward",
            "Backward0",
            "My Backward",
        ] {
            assert!(!is_backward_node(name), "{name}");
        }
    }
}
