//! CUDA graphs: the host cost of launching a step's work.

use std::collections::BTreeMap;

use super::super::edit::{EditGraph, Selection};
use super::super::{Context, WhatIfError};
use crate::graph::{EdgeKind, TaskId, TaskKind};

/// **CUDA graphs**: on every host thread, the region of each step from its first to its last
/// launch call is captured; replaying the graph costs one launch call, so every other host
/// task of the region costs nothing and the untraced host time between them is gone. The
/// device keeps its own work, its calibrated dispatch gaps and the launch latency: the GPU
/// stays bound by its own work.
///
/// Assumptions: blocking calls cannot be captured and are kept (with their host time), so a
/// region with synchronizations inside is captured as one graph per segment between them,
/// each costing one launch. The cost of a graph launch is the median `cudaGraphLaunch` of this
/// trace, else the median duration of its kernel launch calls (`cudaLaunchKernel`...).
pub fn cuda_graphs(context: &Context<'_>, edit: &mut EditGraph) -> Result<usize, WhatIfError> {
    let graph = &context.window.graph;
    let names = &context.trace.names;
    let launch_cost = names
        .lookup("cudaGraphLaunch")
        .and_then(|n| super::super::edit::median_duration(graph, n))
        .or_else(|| {
            let mut launches: Vec<i64> = (0..graph.task_count())
                .filter(|&t| {
                    graph.kind[t] == TaskKind::ApiCall
                        && names.get(graph.name[t]).contains("LaunchKernel")
                })
                .map(|t| graph.dur_ns[t])
                .collect();
            launches.sort_unstable();
            launches.get(launches.len().saturating_sub(1) / 2).copied()
        })
        .unwrap_or(0);
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
    let mut zeroed = Vec::new();
    let mut segment_heads = Vec::new();
    for (lane, input_lane) in graph.lanes.iter().enumerate() {
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
        for t in edit.lane_tasks(lane as u32) {
            let task = TaskId(t);
            let bound = bounds.get(&edit.step(task));
            let inside = !edit.is_frozen(task)
                && bound.is_some_and(|&(first, last, _)| {
                    (first..=last).contains(&edit.rec_start_ns(task))
                });
            if !inside || edit.is_blocking(task) {
                in_segment = false;
                continue;
            }
            if !in_segment {
                segment_heads.push(task);
                in_segment = true;
            }
            zeroed.push((task, bound.is_some_and(|&(_, _, last)| last == task)));
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
    edit.set_duration(&Selection::new(segment_heads), launch_cost)?;
    Ok(all.len())
}
