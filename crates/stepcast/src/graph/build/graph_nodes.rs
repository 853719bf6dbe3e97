//! Dispatch gaps between the nodes of one CUDA-graph launch.
//!
//! A graph launch (`cudaGraphLaunch`, `hipGraphLaunch`: one call, many device tasks on one
//! stream) queues all its nodes at once, and the device walks the uploaded graph without the
//! host: a node follows its predecessor after the device's own inter-node latency, not the
//! eager stream's dispatch gap. That latency depends on what the two nodes are: on an H100 a
//! kernel follows a kernel in 0.45 µs, a memset follows a kernel in 1.4 µs and a kernel
//! follows a memset in 3.1 µs (mlp-graphed). It is calibrated per transition as the mean over
//! the trace's in-graph pairs (a mean, not a median: the nodes are back to back, so the sum of
//! the gaps is what a graph's span accumulates).

use rustc_hash::FxHashMap;

use super::super::{Graph, TaskId, TaskKind};

/// Fewer in-graph pairs of a transition than this keep the eager dispatch gap.
const MIN_SAMPLES: usize = 5;

/// What a node is, for its dispatch latency: memsets and copies are not kernel launches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeClass {
    Kernel,
    Memset,
    Copy,
}

fn class(kind: TaskKind) -> NodeClass {
    match kind {
        TaskKind::Memset => NodeClass::Memset,
        TaskKind::Memcpy => NodeClass::Copy,
        _ => NodeClass::Kernel,
    }
}

/// Sets the gap after every graph node that another node of its launch follows on its stream,
/// from that transition's calibrated mean; returns the calibrated gaps, sorted.
pub fn apply(g: &mut Graph, call_of: &[TaskId]) -> Vec<((NodeClass, NodeClass), i64)> {
    let mut tasks_per_call: FxHashMap<TaskId, u32> = FxHashMap::default();
    for &call in call_of.iter().filter(|&&c| c != TaskId::NONE) {
        *tasks_per_call.entry(call).or_default() += 1;
    }
    // (predecessor, transition) of every in-graph pair, and the recorded gaps per transition.
    let mut pairs = Vec::new();
    let mut samples: FxHashMap<(NodeClass, NodeClass), (i64, usize)> = FxHashMap::default();
    for t in 0..g.task_count() {
        let call = call_of[t];
        let Some(pred) = g.lane_pred(TaskId(t as u32)) else {
            continue;
        };
        if call == TaskId::NONE
            || call_of[pred.index()] != call
            || tasks_per_call.get(&call).is_none_or(|&n| n < 2)
        {
            continue;
        }
        let transition = (class(g.kind[pred.index()]), class(g.kind[t]));
        pairs.push((pred, transition));
        let sum = samples.entry(transition).or_default();
        sum.0 += g.rec_start_ns[t] - g.rec_end_ns[pred.index()];
        sum.1 += 1;
    }
    let mut gaps: Vec<((NodeClass, NodeClass), i64)> = samples
        .into_iter()
        .filter(|&(_, (_, n))| n >= MIN_SAMPLES)
        .map(|(transition, (sum, n))| (transition, (sum / n as i64).max(0)))
        .collect();
    gaps.sort_unstable();
    for (pred, transition) in pairs {
        if let Ok(i) = gaps.binary_search_by_key(&transition, |&(t, _)| t) {
            g.gap_ns[pred.index()] = gaps[i].1;
        }
    }
    gaps
}
