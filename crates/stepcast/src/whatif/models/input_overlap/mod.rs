//! Input pipeline overlap: prefetching the next batch (Zins & Dagenais §IV-A).
//!
//! The model's rooms: what the recorded loading is per batch and how a single-threaded worker
//! runs it (`work`), the host the workers would run on and the pace they deliver at, with the
//! reasons to decline where that host is unknown or leaves them no core (`host`), and what a
//! prediction rests on (`caveats`). This module holds the transform itself.

mod caveats;
mod host;
mod work;

pub use caveats::caveats;
pub use host::{
    LoaderHost, WORKER_TENSOR_SLOWDOWN, delivery_ns, host_unknown, oversubscribed, worker_slowdown,
};
pub use work::{LoaderWork, loader_work};

use crate::analyze::host_time::inside_ns;
use stepcast_trace::EventKind;

use super::super::edit::{EditGraph, Selection};
use super::super::{Context, WhatIfError};
use super::steady::SteadySpans;
use crate::analyze::mapping::Phase;
use crate::graph::{EdgeKind, NO_STEP, TaskId, TaskKind};

/// Whether an op, annotation or Python frame named `name` is data loading: PyTorch's
/// `enumerate(DataLoader)#...__next__` ranges and frames of `torch/utils/data/`.
pub(super) fn is_data_loading(name: &str) -> bool {
    name.contains("DataLoader") || name.contains("torch/utils/data/")
}

/// The recorded data-loading ranges of each host lane of the graph inside the steady steps:
/// `(graph lane, start, end)`, the outermost ranges only, sorted.
fn loading_ranges(context: &Context<'_>) -> Vec<(u32, i64, i64)> {
    let steady = SteadySpans::new(context.window);
    loading_ranges_where(context, |start| steady.contains(start))
}

/// The outermost data-loading ranges of each host lane whose start `keep` accepts:
/// `(graph lane, start, end)`, sorted.
fn loading_ranges_where(context: &Context<'_>, keep: impl Fn(i64) -> bool) -> Vec<(u32, i64, i64)> {
    let trace = context.trace;
    let window = context.window;
    let mut ranges = Vec::new();
    for (graph_lane, lane) in window.graph.lanes.iter().enumerate() {
        if lane.kind != stepcast_trace::LaneKind::CpuThread {
            continue;
        }
        let mut outer_end = i64::MIN;
        for event in trace.lane_events(lane.trace_lane) {
            let container = matches!(
                event.kind,
                EventKind::CpuOp | EventKind::UserAnnotation | EventKind::PythonFunction
            );
            if !container || event.start_ns < outer_end {
                continue;
            }
            if !is_data_loading(trace.names.get(event.name)) {
                continue;
            }
            let (start, end) = (event.start_ns, event.end_ns());
            if keep(start) {
                ranges.push((graph_lane as u32, start, end));
                outer_end = end;
            }
        }
    }
    ranges.sort_unstable();
    ranges
}

/// Whether the trace's loader already runs in worker processes: PyTorch names the iterator
/// of a `DataLoader(num_workers>0)` `_MultiProcessingDataLoaderIter` (its `__next__` range,
/// `enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__`, is then the training
/// process waiting for a worker's batch).
pub fn loader_in_workers(context: &Context<'_>) -> bool {
    let trace = context.trace;
    trace.events.iter().any(|event| {
        matches!(
            event.kind,
            EventKind::CpuOp | EventKind::UserAnnotation | EventKind::PythonFunction
        ) && trace
            .names
            .get(event.name)
            .contains("_MultiProcessingDataLoaderIter")
    })
}

/// The training process's mean wait per batch for its `DataLoader` workers (the untraced
/// time inside the `_MultiProcessingDataLoaderIter.__next__` ranges of the steady steps: ops
/// recorded there are work, the rest is the wait on the workers' queue), where the loader
/// already runs in worker processes; `None` otherwise.
pub fn workers_wait_ns(context: &Context<'_>) -> Option<i64> {
    if !loader_in_workers(context) {
        return None;
    }
    let work = loader_work(context);
    (work.batches > 0).then_some(work.untraced_ns)
}

/// **Input pipeline overlap** (prefetching: `DataLoader(num_workers>0, pin_memory=True,
/// prefetch_factor)`, `tf.data.prefetch`; Zins & Dagenais §IV-A): the next batch is loaded
/// while the current step computes, so the step no longer waits for it.
///
/// - Host: the recorded data-loading time of the steady steps (`DataLoader` op ranges and
///   `torch/utils/data/` frames on each thread) leaves the thread: host tasks inside it cost
///   nothing (blocking calls keep their cost) and the untraced host time inside it goes, on
///   that thread and on any thread idle across it (an untraced gap spanning it: an autograd
///   engine thread waits that way for the next backward pass where no `thread_handoff` edge
///   ties it to the step thread).
/// - Device: the input copies (device copies of the data-loading phase, per the mapping) stay
///   on their stream with their recorded duration; only the host's wait for them goes (a
///   pinned, non-blocking copy issued ahead of time).
///
/// Assumptions: the background loader keeps up (it produces a batch in no more than a
/// predicted step; otherwise the step is bound by loading, which this does not model), and the
/// copies stay where they were on the stream (a copy on a side stream issued during the
/// previous step would also hide its device time: this is the conservative end).
///
/// - **Contention**: the workers run beside the training process, so its own host work of
///   the steady steps (host tasks, except blocking calls, which mostly wait for the device,
///   and the untraced host time) outside data loading is charged `1 + contention` times its
///   cost ([`super::DEFAULT_CONTENTION`]: measured on a recorded pair), every thread alike, but
///   never more in all than the loading its threads no longer do (a thread's own loading
///   ranges and the untraced time in them; not a thread's idle time while another loaded):
///   the workers contend for the CPU only while they load, and they load what those threads
///   did. Where there is little loading to take off (a step that loads nothing), there is
///   little contention to charge. Where the host's cores are given, none is charged: the
///   cores bound the workers' pace instead ([`delivery_ns`]).
/// - A loader **already in worker processes** ([`loader_in_workers`]): its recorded range is
///   the wait for a batch the workers did not have ready; prefetching does not shorten it
///   (more workers or cheaper transforms would), so nothing changes.
pub fn prefetch_inputs(
    context: &Context<'_>,
    edit: &mut EditGraph,
    contention: f64,
    workers: u32,
    host: LoaderHost,
) -> Result<usize, WhatIfError> {
    if !(contention >= 0.0 && contention.is_finite()) {
        return Err(super::super::edit::EditError::BadFactor { factor: contention }.into());
    }
    if loader_in_workers(context) {
        return Ok(0);
    }
    let graph = &context.window.graph;
    let ranges = loading_ranges(context);
    // Every range, merged: a thread idle across a loading range (the autograd thread waiting
    // for the next backward pass) is timed by the untraced gap that spans it.
    let mut all: Vec<(i64, i64)> = ranges.iter().map(|r| (r.1, r.2)).collect();
    all.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(all.len());
    for (start, end) in all {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    let mut changed = 0;
    let mut own: Vec<(i64, i64)> = Vec::new();
    // Per thread: its steady work the workers slow down (computing tasks, and every task's
    // untraced gap), charged once every thread's loading is known.
    let mut slowed_lanes: Vec<(Vec<TaskId>, Vec<TaskId>)> = Vec::new();
    let (mut taken_off, mut charged) = (0i64, 0i64);
    for (lane, graph_lane) in graph.lanes.iter().enumerate() {
        if graph_lane.kind != stepcast_trace::LaneKind::CpuThread || merged.is_empty() {
            continue;
        }
        let lane = lane as u32;
        own.clear();
        own.extend(ranges.iter().filter(|r| r.0 == lane).map(|r| (r.1, r.2)));
        let (mut free, mut gaps) = (Vec::new(), Vec::new());
        for t in edit.lane_tasks(lane) {
            let task = TaskId(t);
            if !edit.is_original(task) {
                continue;
            }
            let (start, end) = (
                graph.rec_start_ns[task.index()],
                graph.rec_end_ns[task.index()],
            );
            // A warm-up task keeps its cost (the step stays as recorded); the untraced time
            // after it that a steady step's loading fills is that step's.
            if !edit.is_frozen(task)
                && !edit.is_blocking(task)
                && inside_ns(&own, start, end) >= end - start
                && end > start
            {
                free.push(task);
            }
            let gap_end = end + graph.gap_ns[task.index()];
            let hidden = inside_ns(&merged, end, gap_end);
            if hidden > 0 {
                // Only the thread's own loading is work taken off it: the rest of the gap
                // cut was a thread idle while another one loaded (the autograd thread
                // between backward passes), no CPU the workers now use.
                let loaded = inside_ns(&own, end, gap_end).min(hidden);
                gaps.push((task, (edit.gap_ns(task) - hidden).max(0), loaded));
            }
        }
        changed += free.len() + gaps.len();
        // The rest of the thread's steady work shares the CPU with the workers.
        let slowed: Vec<TaskId> = if contention > 0.0 {
            edit.lane_tasks(lane)
                .into_iter()
                .map(TaskId)
                .filter(|&t| {
                    edit.is_original(t)
                        && !edit.is_frozen(t)
                        && edit.step(t) != NO_STEP
                        && free.binary_search(&t).is_err()
                })
                .collect()
        } else {
            Vec::new()
        };
        // The loading this thread no longer does, which bounds the contention charged.
        taken_off += free.iter().map(|&t| edit.dur_ns(t)).sum::<i64>();
        taken_off += gaps.iter().map(|&(_, _, loaded)| loaded).sum::<i64>();
        edit.set_duration(&Selection::new(free), 0)?;
        for (task, gap, _) in gaps {
            edit.set_gap(&Selection::new(vec![task]), gap)?;
        }
        let computing: Vec<TaskId> = slowed
            .iter()
            .copied()
            .filter(|&t| !edit.is_blocking(t))
            .collect();
        charged += computing.iter().map(|&t| edit.dur_ns(t)).sum::<i64>()
            + slowed.iter().map(|&t| edit.gap_ns(t)).sum::<i64>();
        slowed_lanes.push((computing, slowed));
    }
    // The workers contend for the CPU only while they load, and they load what the training
    // process's threads did: all its threads together are charged no more than that loading.
    // A thread idle while another loaded took no loading off: counting the autograd thread's
    // idle gaps as loading charged the contention twice, and tb_plugin's
    // `resnet50_autograd_api` was predicted 0.6 % slower for the loading taken off.
    let contention = if charged > 0 {
        contention.min(taken_off as f64 / charged as f64)
    } else {
        contention
    };
    for (computing, slowed) in slowed_lanes {
        edit.scale(&Selection::new(computing), 1.0 + contention)?;
        edit.scale_gaps(&Selection::new(slowed), 1.0 + contention)?;
    }
    // The input copies: the calls that launched them, and the synchronizing calls of the
    // data-loading phase (`.to(device)` then a stream synchronize), no longer wait for them.
    let in_loading = |t: TaskId| {
        edit.is_original(t)
            && edit.step(t) != NO_STEP
            && context.mapping.phase[t.index()] == Phase::DataLoading
    };
    let copies = edit.select_where(|t| edit.kind(t) == TaskKind::Memcpy && in_loading(t));
    let mut waiting: Vec<TaskId> = copies
        .tasks()
        .iter()
        .filter_map(|&t| edit.launcher(t))
        .collect();
    waiting.extend(
        edit.select_where(|t| !edit.kind(t).on_device() && in_loading(t))
            .tasks(),
    );
    let launchers = Selection::new(
        waiting
            .into_iter()
            .filter(|&call| edit.is_blocking(call))
            .collect(),
    );
    edit.drop_inputs(&launchers, EdgeKind::HostSync)?;
    edit.drop_inputs(&launchers, EdgeKind::InferredHostSync)?;
    let paced = pace_deliveries(context, edit, workers, host)?;
    Ok(changed + launchers.len() + paced)
}

/// The workers' pace: each batch the training thread takes is ready no sooner than
/// [`delivery_ns`] after the one before. Per loading thread, the first task after each
/// loading range (the first use of the batch `__next__` returned) cannot complete before the
/// first task after the previous range ended plus that delivery time, once per batch between
/// them (a `TensorWait`: the thread goes on once the batch is there). The warm-up step's
/// batch, loaded as recorded, is where the pace starts. Returns the waits added.
fn pace_deliveries(
    context: &Context<'_>,
    edit: &mut EditGraph,
    workers: u32,
    host: LoaderHost,
) -> Result<usize, WhatIfError> {
    let Some(delivery) = delivery_ns(context, workers, host) else {
        return Ok(0);
    };
    let ranges = loading_ranges_where(context, |_| true);
    let mut added = 0;
    let lanes: std::collections::BTreeSet<u32> = ranges.iter().map(|r| r.0).collect();
    for lane in lanes {
        let tasks: Vec<TaskId> = edit
            .lane_tasks(lane)
            .into_iter()
            .map(TaskId)
            .filter(|&t| edit.is_original(t) && edit.step(t) != NO_STEP)
            .collect();
        let mut previous: Option<TaskId> = None;
        let mut batches = 0i64;
        for &(_, start, end) in ranges.iter().filter(|r| r.0 == lane) {
            batches += 1;
            // The first task after the range: the loading is untraced time or ops before it,
            // so holding its completion holds everything the step does with the batch.
            let after = tasks.partition_point(|&t| edit.rec_start_ns(t) < end.max(start + 1));
            let Some(&handed) = tasks.get(after) else {
                continue;
            };
            if let Some(before) = previous
                && !edit.is_frozen(handed)
            {
                edit.add_dependency(
                    before,
                    handed,
                    EdgeKind::TensorWait,
                    delivery.saturating_mul(batches),
                )?;
                added += 1;
            }
            previous = Some(handed);
            batches = 0;
        }
    }
    Ok(added)
}
