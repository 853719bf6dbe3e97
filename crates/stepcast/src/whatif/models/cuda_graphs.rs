//! CUDA graphs: the host cost of launching a step's work.

use crate::analyze::host_time::inside_ns;
use std::collections::BTreeMap;

use stepcast_trace::EventKind;

use super::super::edit::{EditGraph, Selection};
use super::super::{Context, WhatIfError};
use super::steady::SteadySpans;
use crate::graph::{EdgeKind, NO_STEP, TaskId, TaskKind};

/// **CUDA graphs**: on every host thread, the region of each step from its first to its last
/// launch call is captured; replaying the graph costs one launch call, so every other host
/// task of the region costs nothing and the untraced host time between them is gone. The
/// device keeps its own work, its calibrated dispatch gaps and the launch latency: the GPU
/// stays bound by its own work.
///
/// Assumptions: blocking calls cannot be captured and are kept (with their host time), so a
/// region with synchronizations inside is captured as one graph per segment between them,
/// each costing one launch. Host work that launches nothing is not in a graph and stays: the
/// recorded ops, annotations and Python frames with no launch call inside (CPU tensor math,
/// logging), with the calls and untraced host time within them ([`host_only_ranges`]). A
/// graph launch costs one kernel launch call of this trace plus a cost per node (from this
/// trace's `cudaGraphLaunch` calls where it has them: [`graph_launch_cost`]), never more than
/// the segment's eager launches cost; a segment never spans two steps. Every other host task
/// is taken to be capturable (no dynamic shapes, no CPU-side control flow on device values):
/// an upper bound.
pub fn cuda_graphs(context: &Context<'_>, edit: &mut EditGraph) -> Result<usize, WhatIfError> {
    let graph = &context.window.graph;
    let (launch_cost, per_node_ns) = graph_launch_cost(context);
    // The captured region of each host thread and step: from the first to the last launch
    // call of the step as recorded in the input, so that a model applied before (a fused
    // optimizer removing launches) does not shrink it.
    let mut launches = vec![false; graph.task_count()];
    for t in 0..graph.task_count() {
        for e in graph.preds(TaskId(t as u32)) {
            let call = graph.pred[e].index();
            if graph.pred_kind[e] == EdgeKind::Launch && !graph.kind[call].on_device() {
                launches[call] = true;
            }
        }
    }
    let host_only = host_only_ranges(context, &launches);
    let mut zeroed = Vec::new();
    let mut kept_gaps: Vec<(TaskId, i64)> = Vec::new();
    let mut segment_heads: Vec<Segment> = Vec::new();
    for (lane, input_lane) in graph.lanes.iter().enumerate() {
        let empty = Vec::new();
        let ranges = host_only.get(&(lane as u32)).unwrap_or(&empty);
        let first_task = input_lane.first_task as usize;
        let input_tasks = first_task..first_task + input_lane.task_count as usize;
        // Per step: the recorded starts of the first and last launch call on this lane, and
        // the last call (the host time after it is outside the captured region).
        let mut bounds: BTreeMap<u32, (i64, i64, TaskId)> = BTreeMap::new();
        for t in input_tasks {
            let task = TaskId(t as u32);
            if launches[t] && !edit.is_frozen(task) {
                let start = graph.rec_start_ns[t];
                let entry = bounds.entry(graph.step[t]).or_insert((start, start, task));
                entry.0 = entry.0.min(start);
                if start >= entry.1 {
                    (entry.1, entry.2) = (start, task);
                }
            }
        }
        let mut in_segment = false;
        let mut segment_step = NO_STEP;
        for t in edit.lane_tasks(lane as u32) {
            let task = TaskId(t);
            // A graph is captured per step: one step's launches never join the next's.
            if edit.step(task) != segment_step {
                segment_step = edit.step(task);
                in_segment = false;
            }
            let bound = bounds.get(&edit.step(task));
            let inside = !edit.is_frozen(task)
                && bound.is_some_and(|&(first, last, _)| {
                    (first..=last).contains(&edit.rec_start_ns(task))
                });
            if !inside || edit.is_blocking(task) {
                in_segment = false;
                continue;
            }
            let start = edit.rec_start_ns(task);
            let original = edit.is_original(task);
            let end = if original {
                graph.rec_end_ns[task.index()]
            } else {
                start
            };
            // A task inserted by an earlier model launches what it was inserted for.
            let launches_work = !original || launches[task.index()];
            if !launches_work && inside_ns(ranges, start, end.max(start + 1)) > 0 {
                // A call of host-only work (inside an op that launches nothing): kept.
                in_segment = false;
                continue;
            }
            if !in_segment {
                segment_heads.push(Segment {
                    head: task,
                    nodes: 0,
                    eager_ns: 0,
                });
                in_segment = true;
            }
            let last = bound.is_some_and(|&(_, _, last)| last == task);
            if let Some(segment) = segment_heads.last_mut() {
                segment.nodes += edit.launched(task).len() as i64;
                // What launching this segment eagerly costs the host: its tasks' costs and
                // the untraced time between them that the graph removes.
                segment.eager_ns += edit.dur_ns(task);
                if !last {
                    segment.eager_ns += edit.gap_ns(task);
                }
            }
            zeroed.push((task, last));
            if !last && original {
                let kept = inside_ns(ranges, end, end + graph.gap_ns[task.index()]);
                kept_gaps.push((task, kept.min(edit.gap_ns(task))));
            }
        }
    }
    let all = Selection::new(zeroed.iter().map(|&(t, _)| t).collect());
    edit.set_duration(&all, 0)?;
    let gaps = Selection::new(
        zeroed
            .iter()
            .filter(|&&(_, last)| !last)
            .map(|&(t, _)| t)
            .collect(),
    );
    edit.set_gap(&gaps, 0)?;
    for (task, kept) in kept_gaps.into_iter().filter(|&(_, kept)| kept > 0) {
        edit.set_gap(&Selection::new(vec![task]), kept)?;
    }
    for segment in segment_heads {
        // A graph launch never costs the host more than launching its nodes one by one.
        let cost = launch_cost
            .saturating_add(segment.nodes.saturating_mul(per_node_ns))
            .min(segment.eager_ns);
        edit.set_duration(&Selection::new(vec![segment.head]), cost)?;
    }
    Ok(all.len())
}

/// One captured segment: the call that now launches the graph, its nodes, and what its
/// tasks cost the host when launched eagerly (the cap of the graph launch's cost).
struct Segment {
    head: TaskId,
    nodes: i64,
    eager_ns: i64,
}

/// The host cost of a graph launch: a fixed part and a part per node. The fixed part is the
/// median kernel launch call of this trace (a graph launch is one call). The part per node
/// comes from this trace's own `cudaGraphLaunch` calls where they launch device work that the
/// trace correlates (the median over them of what the call took beyond the fixed part, per
/// node it launched), else [`GRAPH_LAUNCH_NS_PER_NODE`]. A `cudaGraphLaunch` median alone
/// would charge every segment the launch of the trace's largest graphs (a 1.2 ms launch of
/// thousands of nodes, charged to each of a step's hundreds of segments).
fn graph_launch_cost(context: &Context<'_>) -> (i64, i64) {
    let graph = &context.window.graph;
    let names = &context.trace.names;
    let mut launches: Vec<i64> = (0..graph.task_count())
        .filter(|&t| {
            graph.kind[t] == TaskKind::ApiCall && names.get(graph.name[t]).contains("LaunchKernel")
        })
        .map(|t| graph.dur_ns[t])
        .collect();
    launches.sort_unstable();
    let fixed = launches
        .get(launches.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0);
    let Some(graph_launch) = names.lookup("cudaGraphLaunch") else {
        return (fixed, GRAPH_LAUNCH_NS_PER_NODE);
    };
    let mut nodes = vec![0i64; graph.task_count()];
    for t in 0..graph.task_count() {
        for e in graph.preds(TaskId(t as u32)) {
            if graph.pred_kind[e] == EdgeKind::Launch {
                nodes[graph.pred[e].index()] += 1;
            }
        }
    }
    let mut per_node: Vec<i64> = (0..graph.task_count())
        .filter(|&t| graph.name[t] == graph_launch && nodes[t] > 0)
        .map(|t| (graph.dur_ns[t] - fixed).max(0) / nodes[t])
        .collect();
    per_node.sort_unstable();
    let per_node_ns = per_node
        .get(per_node.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(GRAPH_LAUNCH_NS_PER_NODE);
    (fixed, per_node_ns)
}

/// Host time a graph launch adds per device task (node) it holds, in ns. Measured in public:
/// a chain of N no-op kernels replayed as a graph cost about 15 µs plus 0.58 µs per node
/// (RTX 5070 Ti, CUDA 13.3, median of 200 replays, N = 8…117; ahrefs/ocannl issue #488,
/// "Measured: what graph replay is actually worth on this hardware"). That figure includes the
/// device running the nodes, so it bounds the host's share from above; NVIDIA's CUDA 12.6
/// notes ("Constant Time Launch for Straight-Line CUDA Graphs") make straight-line graphs
/// cheaper still.
pub const GRAPH_LAUNCH_NS_PER_NODE: i64 = 580;

/// Per graph lane: the recorded host ranges (ops, annotations, Python frames) of the steady
/// steps with no launch call inside, merged, sorted: host work a graph cannot capture.
fn host_only_ranges(context: &Context<'_>, launches: &[bool]) -> BTreeMap<u32, Vec<(i64, i64)>> {
    let graph = &context.window.graph;
    let trace = context.trace;
    let steady = SteadySpans::new(context.window);
    let mut out = BTreeMap::new();
    for (lane, input_lane) in graph.lanes.iter().enumerate() {
        if input_lane.kind != stepcast_trace::LaneKind::CpuThread {
            continue;
        }
        let first = input_lane.first_task as usize;
        let mut starts: Vec<i64> = (first..first + input_lane.task_count as usize)
            .filter(|&t| launches[t])
            .map(|t| graph.rec_start_ns[t])
            .collect();
        if starts.is_empty() {
            continue;
        }
        starts.sort_unstable();
        let mut ranges: Vec<(i64, i64)> = trace
            .lane_events(input_lane.trace_lane)
            .iter()
            .filter(|e| {
                matches!(
                    e.kind,
                    EventKind::CpuOp | EventKind::UserAnnotation | EventKind::PythonFunction
                ) && e.dur_ns > 0
                    && steady.contains(e.start_ns)
            })
            .map(|e| (e.start_ns, e.end_ns()))
            .filter(|&(start, end)| {
                let i = starts.partition_point(|&s| s < start);
                starts.get(i).is_none_or(|&s| s >= end)
            })
            .collect();
        ranges.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
        for (start, end) in ranges {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        if !merged.is_empty() {
            out.insert(lane as u32, merged);
        }
    }
    out
}
