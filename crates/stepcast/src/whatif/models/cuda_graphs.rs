//! CUDA graphs: what a graph's replay runs, and what it does not.

use crate::analyze::host_time::inside_ns;
use std::collections::{BTreeMap, BTreeSet};

use stepcast_trace::EventKind;

use super::super::edit::{EditGraph, Selection};
use super::super::{Context, WhatIfError};
use super::steady::SteadySpans;
use crate::graph::{EdgeKind, NO_STEP, TaskId, TaskKind};

/// **CUDA graphs** (`torch.cuda.graph`, `make_graphed_callables`, `torch.compile(mode=
/// "reduce-overhead")`): each steady step is captured once and replayed. A replay runs the
/// device work of the captured region in its recorded dependency order (the same kernels,
/// copies and memsets on the same streams), submitted by one `cudaGraphLaunch`; it runs none
/// of the region's host work.
///
/// - **The captured region** of a step runs from its first to its last launch call, on any
///   thread (the recorded starts); it holds, on every thread that launches device work in the
///   step (the training thread, the autograd engine's thread for the backward pass), the host
///   tasks that start inside it.
/// - **What a replay does not run**: every host task of the region (launch calls, ops with no
///   device work such as `aten::t`, `empty_strided`, `AccumulateGrad`, the dispatcher's and
///   the autograd engine's bookkeeping), the untraced host time between them, and the handoffs
///   between host threads inside the region (the recorded lag of the autograd engine's thread
///   waking for the backward pass and of the training thread resuming after it): their costs,
///   gaps and handoff lags go to zero. The eager launch calls' waits for CUDA's full launch
///   queue go with them.
/// - **What it costs**: one graph launch per segment: a kernel launch call of this trace,
///   charged on the segment's first call, plus a cost per node (from this trace's own
///   `cudaGraphLaunch` calls where it has them, else [`GRAPH_LAUNCH_NS_PER_NODE`]:
///   `graph_launch_cost`), charged where each node was launched eagerly: the driver submits
///   a graph's nodes in order, so the first run while the last are submitted, and each thread
///   is charged for the nodes its own calls launched (the sum is one launch of the step's
///   nodes, plus one fixed part per thread). No call is charged more than it cost eagerly,
///   and no segment more than launching it eagerly cost.
/// - **What stays**: the device work with its recorded durations and the window's calibrated
///   dispatch gaps and launch latency (the GPU stays bound by its own work; a replay's nodes
///   can follow each other faster than eager kernels did, which this does not take); blocking
///   calls (a synchronization cannot be captured: the region is captured as one graph per
///   segment between them, each costing one launch; a segment never spans two steps); data
///   loading inside the region (`DataLoader` ranges: host work every step needs); the host
///   work before the region and after it.
///
/// Every other host task of the region is taken to be capturable (no dynamic shapes, no
/// CPU-side control flow on device values, no CPU work whose result a step needs): an upper
/// bound on what capture saves on the host.
pub fn cuda_graphs(context: &Context<'_>, edit: &mut EditGraph) -> Result<usize, WhatIfError> {
    Ok(capture(context, edit)?.tasks)
}

/// What [`cuda_graphs`] did to a window, per steady step: for its caveats.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Capture {
    /// Host tasks captured (their cost and untraced gaps removed), over the window.
    pub tasks: usize,
    /// Graph launches (segments) and the device tasks they launch, per steady step.
    pub launches_per_step: f64,
    pub nodes_per_step: f64,
    /// Host cost (tasks' own costs and untraced gaps) the region no longer runs, per steady
    /// step, before the graph launches are charged.
    pub host_removed_ns: i64,
    /// Recorded handoff lags between the region's threads removed, per steady step.
    pub handoff_removed_ns: i64,
    /// Host cost charged for the graph launches, per steady step.
    pub launch_charged_ns: i64,
    /// The graph launch's cost: its fixed part (a kernel launch call) and per node.
    pub cost: LaunchCost,
}

/// The host cost of a graph launch and where its per-node part comes from.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LaunchCost {
    pub fixed_ns: i64,
    pub per_node_ns: i64,
    /// Whether the per-node part was measured on this trace's own `cudaGraphLaunch` calls
    /// (else it is [`GRAPH_LAUNCH_NS_PER_NODE`]).
    pub from_trace: bool,
}

/// [`cuda_graphs`], with what it did.
pub fn capture(context: &Context<'_>, edit: &mut EditGraph) -> Result<Capture, WhatIfError> {
    let graph = &context.window.graph;
    let cost = graph_launch_cost(context);
    let launches = launch_calls(graph);
    let loading = loading_ranges(context);
    let no_ranges = Vec::new();
    // Per step, the region: the recorded starts of its first and last launch call on any
    // thread, as recorded in the input, so that a model applied before (a fused optimizer
    // removing launches) does not shrink it; and the threads that launch in it.
    let mut region: BTreeMap<u32, (i64, i64)> = BTreeMap::new();
    let mut launching: BTreeSet<(u32, u32)> = BTreeSet::new();
    for t in (0..graph.task_count()).filter(|&t| launches[t]) {
        let task = TaskId(t as u32);
        if edit.is_frozen(task) || graph.step[t] == NO_STEP {
            continue;
        }
        let start = graph.rec_start_ns[t];
        let entry = region.entry(graph.step[t]).or_insert((start, start));
        entry.0 = entry.0.min(start);
        entry.1 = entry.1.max(start);
        launching.insert((graph.lane[t], graph.step[t]));
    }
    let mut captured: Vec<TaskId> = Vec::new();
    // Captured tasks whose untraced gap after them stays (in part): the last captured task
    // of a thread in a step (the host time after the region), a gap running into data
    // loading.
    let mut kept_gaps: Vec<(TaskId, i64)> = Vec::new();
    let mut segments: Vec<Segment> = Vec::new();
    let mut host_removed = 0i64;
    for lane in 0..graph.lanes.len() as u32 {
        if graph.lanes[lane as usize].kind != stepcast_trace::LaneKind::CpuThread {
            continue;
        }
        let loading = loading.get(&lane).unwrap_or(&no_ranges);
        let tasks = edit.lane_tasks(lane);
        // The position of the last captured task of each step on this lane.
        let inside: Vec<bool> = tasks
            .iter()
            .map(|&t| {
                let task = TaskId(t);
                let step = edit.step(task);
                let start = edit.rec_start_ns(task);
                !edit.is_frozen(task)
                    && launching.contains(&(lane, step))
                    && region
                        .get(&step)
                        .is_some_and(|&(first, last)| (first..=last).contains(&start))
            })
            .collect();
        let mut in_segment = false;
        let mut segment_step = NO_STEP;
        for (i, &t) in tasks.iter().enumerate() {
            let task = TaskId(t);
            let step = edit.step(task);
            if step != segment_step {
                segment_step = step;
                in_segment = false;
            }
            if !inside[i] || breaks_capture(edit, task) {
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
            if inside_ns(loading, start, end.max(start + 1)) > 0 {
                // Data loading inside the region: host work every step needs, kept.
                in_segment = false;
                continue;
            }
            if !in_segment {
                segments.push(Segment {
                    head: task,
                    eager_ns: 0,
                    tasks: Vec::new(),
                });
                in_segment = true;
            }
            let last = !inside.get(i + 1).copied().unwrap_or(false)
                || tasks
                    .get(i + 1)
                    .is_some_and(|&next| edit.step(TaskId(next)) != step);
            let gap = if last {
                // The host time after the region stays.
                edit.gap_ns(task)
            } else if original {
                let recorded = graph.gap_ns[task.index()];
                inside_ns(loading, end, end + recorded).min(edit.gap_ns(task))
            } else {
                0
            };
            if let Some(segment) = segments.last_mut() {
                // What launching this segment eagerly costs the host: its tasks' costs and
                // the untraced time between them that the replay does not run.
                segment.eager_ns += edit.dur_ns(task) + edit.gap_ns(task) - gap;
                let nodes = edit.launched(task).len() as i64;
                segment.tasks.push((task, nodes, edit.dur_ns(task)));
            }
            if edit.step(task) != NO_STEP {
                host_removed += edit.dur_ns(task) + edit.gap_ns(task) - gap;
            }
            captured.push(task);
            kept_gaps.push((task, gap));
        }
    }
    let all = Selection::new(captured);
    edit.set_duration(&all, 0)?;
    edit.set_gap(&all, 0)?;
    for &(task, gap) in kept_gaps.iter().filter(|&&(_, gap)| gap > 0) {
        edit.set_gap(&Selection::new(vec![task]), gap)?;
    }
    // The eager calls' waits for a full launch queue and the threads' handoffs inside the
    // region: a replay neither queues those launches nor hands work between threads.
    edit.drop_inputs(&all, EdgeKind::LaunchQueue)?;
    let handoff_removed = edit.set_handoff_lags_within(&all, 0)?;
    let mut charged = 0i64;
    let mut nodes = 0i64;
    for segment in &segments {
        // The per-node part where each node was launched eagerly (the driver submits a
        // graph's nodes in order: the first can run while the last are submitted), never
        // more than that call cost eagerly; the fixed part on the segment's first call, the
        // whole never more than launching the segment eagerly cost.
        let mut others = 0i64;
        for &(task, n, eager_ns) in segment.tasks.iter().filter(|t| t.0 != segment.head) {
            let ns = n.saturating_mul(cost.per_node_ns).min(eager_ns);
            edit.set_duration(&Selection::new(vec![task]), ns)?;
            others += ns;
        }
        let head_nodes = segment
            .tasks
            .iter()
            .find(|t| t.0 == segment.head)
            .map_or(0, |t| t.1);
        let head_ns = cost
            .fixed_ns
            .saturating_add(head_nodes.saturating_mul(cost.per_node_ns))
            .min((segment.eager_ns - others).max(0));
        edit.set_duration(&Selection::new(vec![segment.head]), head_ns)?;
        charged += others + head_ns;
        nodes += segment.tasks.iter().map(|t| t.1).sum::<i64>();
    }
    let window = context.window;
    let steps = (window.steps.len() - crate::whatif::first_steady(window)).max(1) as i64;
    let per_step = |n: f64| n / steps as f64;
    Ok(Capture {
        tasks: all.len(),
        launches_per_step: per_step(segments.len() as f64),
        nodes_per_step: per_step(nodes as f64),
        host_removed_ns: host_removed / steps,
        handoff_removed_ns: handoff_removed / steps,
        launch_charged_ns: charged / steps,
        cost,
    })
}

/// One captured segment: its first call (charged the launch's fixed part), what its tasks
/// cost the host when launched eagerly (the cap of what the launch is charged), and each
/// captured task with the nodes it launched and its eager cost.
struct Segment {
    head: TaskId,
    eager_ns: i64,
    tasks: Vec<(TaskId, i64, i64)>,
}

/// Whether `task` is a host call that launches device work (a stored launch edge out of it).
fn launch_calls(graph: &crate::graph::Graph) -> Vec<bool> {
    let mut launches = vec![false; graph.task_count()];
    for t in 0..graph.task_count() {
        for e in graph.preds(TaskId(t as u32)) {
            let call = graph.pred[e].index();
            if graph.pred_kind[e] == EdgeKind::Launch && !graph.kind[call].on_device() {
                launches[call] = true;
            }
        }
    }
    launches
}

/// Whether host task `task` synchronizes with the device (a recorded or inferred host sync, a
/// tensor wait): a synchronization cannot be captured, so it ends a segment. A launch call
/// held by CUDA's full launch queue is no synchronization of the program: it is captured.
fn breaks_capture(edit: &EditGraph, task: TaskId) -> bool {
    edit.is_blocking(task) && !edit.waits_only_for_launch_queue(task)
}

/// The host cost of a graph launch: a fixed part and a part per node. The fixed part is the
/// median kernel launch call of this trace (a graph launch is one call). The part per node
/// comes from this trace's own `cudaGraphLaunch` calls where they launch device work that the
/// trace correlates (the median over them of what the call took beyond the fixed part, per
/// node it launched: each call is one step's replay, so a step is charged its own nodes),
/// else [`GRAPH_LAUNCH_NS_PER_NODE`]. A `cudaGraphLaunch` median alone would charge every
/// segment the launch of the trace's largest graphs (a 1.2 ms launch of thousands of nodes,
/// charged to each of a step's hundreds of segments).
pub fn graph_launch_cost(context: &Context<'_>) -> LaunchCost {
    let graph = &context.window.graph;
    let names = &context.trace.names;
    let mut launches: Vec<i64> = (0..graph.task_count())
        .filter(|&t| {
            graph.kind[t] == TaskKind::ApiCall && names.get(graph.name[t]).contains("LaunchKernel")
        })
        .map(|t| graph.dur_ns[t])
        .collect();
    launches.sort_unstable();
    let fixed_ns = launches
        .get(launches.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0);
    let default = LaunchCost {
        fixed_ns,
        per_node_ns: GRAPH_LAUNCH_NS_PER_NODE,
        from_trace: false,
    };
    let Some(graph_launch) = names.lookup("cudaGraphLaunch") else {
        return default;
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
        .map(|t| (graph.dur_ns[t] - fixed_ns).max(0) / nodes[t])
        .collect();
    per_node.sort_unstable();
    match per_node.get(per_node.len().saturating_sub(1) / 2) {
        Some(&per_node_ns) => LaunchCost {
            fixed_ns,
            per_node_ns,
            from_trace: true,
        },
        None => default,
    }
}

/// Host time a graph launch adds per device task (node) it holds, in ns. Measured in public:
/// a chain of N no-op kernels replayed as a graph cost about 15 µs plus 0.58 µs per node
/// (RTX 5070 Ti, CUDA 13.3, median of 200 replays, N = 8…117; ahrefs/ocannl issue #488,
/// "Measured: what graph replay is actually worth on this hardware"). That figure includes the
/// device running the nodes, so it bounds the host's share from above; NVIDIA's CUDA 12.6
/// notes ("Constant Time Launch for Straight-Line CUDA Graphs") make straight-line graphs
/// cheaper still. The repository's own H100 trace of a replayed step
/// (`testdata/kineto/stepcast/h100-pairs/mlp-graphed.json.gz`) shows `cudaGraphLaunch` at
/// about 1 µs per node: a trace with graph launches of its own is charged its own figure.
pub const GRAPH_LAUNCH_NS_PER_NODE: i64 = 580;

/// Per graph lane: the recorded `DataLoader` ranges (ops, annotations, Python frames of
/// `torch/utils/data/`) of the steady steps, outermost, sorted: host work a graph cannot
/// capture.
fn loading_ranges(context: &Context<'_>) -> BTreeMap<u32, Vec<(i64, i64)>> {
    let graph = &context.window.graph;
    let trace = context.trace;
    let steady = SteadySpans::new(context.window);
    let mut out = BTreeMap::new();
    for (lane, input_lane) in graph.lanes.iter().enumerate() {
        if input_lane.kind != stepcast_trace::LaneKind::CpuThread {
            continue;
        }
        let mut ranges: Vec<(i64, i64)> = Vec::new();
        for e in trace.lane_events(input_lane.trace_lane) {
            let container = matches!(
                e.kind,
                EventKind::CpuOp | EventKind::UserAnnotation | EventKind::PythonFunction
            );
            if !container || !steady.contains(e.start_ns) {
                continue;
            }
            if !super::input_overlap::is_data_loading(trace.names.get(e.name)) {
                continue;
            }
            match ranges.last_mut() {
                Some(last) if e.start_ns <= last.1 => last.1 = last.1.max(e.end_ns()),
                _ => ranges.push((e.start_ns, e.end_ns())),
            }
        }
        if !ranges.is_empty() {
            out.insert(lane as u32, ranges);
        }
    }
    out
}

/// What a `cuda_graphs` prediction on this window rests on, with its numbers: what the
/// replay no longer runs, what a launch is charged and where that comes from, and the device
/// gaps it keeps.
pub fn caveats(context: &Context<'_>) -> Vec<String> {
    let mut edit = context.edit();
    let Ok(capture) = capture(context, &mut edit) else {
        return Vec::new();
    };
    let ms = |ns: i64| ns as f64 / 1e6;
    let cost = capture.cost;
    let dispatch_gap_ns = context.window.report.dispatch_gap_ns;
    vec![
        format!(
            "a replay runs none of the captured region's host work: {:.3} ms per step of host \
             tasks and the untraced time between them (launch calls, ops with no device work, \
             the dispatcher's and autograd's bookkeeping) and {:.3} ms of recorded handoff lags \
             between its threads; capturing every host task between the first and last launch \
             of a step is an upper bound on what capture saves on the host: dynamic shapes, \
             CPU-side control flow on device values and CPU work a step needs break capture",
            ms(capture.host_removed_ns),
            ms(capture.handoff_removed_ns),
        ),
        format!(
            "{:.1} graph launches per step holding {:.0} device tasks, each launch charged the \
             trace's launch call ({:.1} µs) plus {} ns per node ({}): {:.3} ms per step",
            capture.launches_per_step,
            capture.nodes_per_step,
            cost.fixed_ns as f64 / 1e3,
            cost.per_node_ns,
            if cost.from_trace {
                "this trace's own cudaGraphLaunch calls"
            } else {
                "a public measurement on another GPU; an H100 trace of this repository shows \
                 about 1 µs per node"
            },
            ms(capture.launch_charged_ns),
        ),
        format!(
            "the device keeps its own work and the window's calibrated gap between kernels \
             ({:.2} µs, {:.3} ms per step over the graph's nodes); a replay's nodes can follow \
             each other faster, so on a device-bound step the gain can exceed this",
            dispatch_gap_ns as f64 / 1e3,
            ms((dispatch_gap_ns as f64 * capture.nodes_per_step) as i64),
        ),
    ]
}
