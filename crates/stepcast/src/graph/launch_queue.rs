//! CUDA's launch queue: a device holds a bounded number of launched-but-unfinished tasks, and
//! a launch call made while its device's queue is full does not return until the oldest
//! entry finishes (on an H100, 1022 entries: `transformer-fp32` blocks 408 launch calls for
//! 337 ms that way). Launch call `i` onto a device therefore cannot return before the device
//! task of launch `i − capacity` has finished: an [`EdgeKind::LaunchQueue`] edge.
//!
//! The queue is counted per device, in host call order (every thread's launches onto the
//! device in one sequence): the traces in testdata have one device per process, so per device
//! and per process context cannot be told apart there. A call counts once, whatever it
//! launched; its slot is held by its device task that ends last. Device tasks of the window
//! that no call of it launched were launched before it opened: they come first in the queue,
//! in their order on the device, so that the window's first calls wait for them too (on
//! `transformer-fp32`, the host runs three steps ahead: 1014 such tasks, and the returns of
//! the window's first calls agree with them at the same 1021 outstanding).
//!
//! The same counting serves the graph build (`build/launch_queue.rs`, which calibrates the
//! capacity) and an edited graph (`whatif/edit/finish.rs`, which recounts after its inserts, removals
//! and fusions: an inserted launch takes a slot, a removed one frees its slot).
//!
//! [`EdgeKind::LaunchQueue`]: super::EdgeKind::LaunchQueue

use super::{Graph, TaskId};

/// Timing tolerance when checking a queue edge against recorded times (Kineto's microsecond
/// clock in older traces).
const TOLERANCE_NS: i64 = 2_000;

/// One launch in its device's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub device: i64,
    /// The launch call, or `TaskId::NONE` for a launch made before the window opened.
    pub call: TaskId,
    /// Its device task ending last as recorded (ties to the later task): what frees its slot.
    pub holder: TaskId,
}

/// The queue entries of `graph`'s launches, sorted by device and then launch order: first
/// the device tasks of `before` (launched before the window opened: still in the queue when
/// it did, in their order on the device), then the calls of `launches` (`(call, device task)`
/// pairs, any order) in host call order (recorded start, then thread and task: an inserted
/// call carries its predecessor's recorded end as its start). Only the task columns and
/// lanes of `graph` are read, not its edges.
pub(crate) fn entries(
    graph: &Graph,
    launches: &[(TaskId, TaskId)],
    before: &[TaskId],
) -> Vec<Entry> {
    let device_of = |task: TaskId| graph.lanes[graph.lane[task.index()] as usize].device;
    let mut out: Vec<Entry> = before
        .iter()
        .filter_map(|&task| {
            Some(Entry {
                device: device_of(task)?,
                call: TaskId::NONE,
                holder: task,
            })
        })
        .collect();
    let mut by_call: Vec<(TaskId, TaskId)> = launches.to_vec();
    by_call.sort_unstable();
    let first_call = out.len();
    for &(call, task) in &by_call {
        let Some(device) = device_of(task) else {
            continue;
        };
        match out[first_call..].last_mut() {
            Some(last) if last.call == call => {
                // A call onto two devices counts on the device of its first task.
                let later = (graph.rec_end_ns[task.index()], task)
                    > (graph.rec_end_ns[last.holder.index()], last.holder);
                if last.device == device && later {
                    last.holder = task;
                }
            }
            _ => out.push(Entry {
                device,
                call,
                holder: task,
            }),
        }
    }
    // Keys computed once, not per comparison (each reads two task columns at random); they are
    // unique (`by` is), so this orders as an unstable sort would.
    out.sort_by_cached_key(|e| {
        let by = if e.call == TaskId::NONE {
            e.holder
        } else {
            e.call
        };
        (
            e.device,
            e.call != TaskId::NONE,
            graph.rec_start_ns[by.index()],
            graph.lane[by.index()],
            by,
        )
    });
    out
}

/// The queue edges `(holder of launch i − capacity, call i)` of every device with a capacity
/// in `capacity` (sorted by device), but none into a call `exempt` names.
pub(crate) fn edges(
    entries: &[Entry],
    capacity: &[(i64, u32)],
    exempt: impl Fn(TaskId) -> bool,
) -> Vec<(TaskId, TaskId)> {
    let mut out = Vec::new();
    for device_entries in entries.chunk_by(|a, b| a.device == b.device) {
        let device = device_entries[0].device;
        let Ok(k) = capacity.binary_search_by_key(&device, |&(d, _)| d) else {
            continue;
        };
        let q = capacity[k].1 as usize;
        if q == 0 {
            continue;
        }
        for (i, entry) in device_entries.iter().enumerate().skip(q) {
            if entry.call != TaskId::NONE && !exempt(entry.call) {
                out.push((device_entries[i - q].holder, entry.call));
            }
        }
    }
    out
}

/// The calls of `graph` (as recorded) whose queue edge the recorded times contradict: its
/// holder ended after the call returned (streams retiring out of launch order). They stay
/// out of the queue's edges, in the built graph and in every edit of it
/// (`Graph::launch_queue_exempt`), as a recorded cause that the times refute does elsewhere.
pub(crate) fn contradicted(
    graph: &Graph,
    entries: &[Entry],
    capacity: &[(i64, u32)],
) -> Vec<TaskId> {
    let mut out: Vec<TaskId> = edges(entries, capacity, |_| false)
        .into_iter()
        .filter(|&(holder, call)| {
            graph.rec_end_ns[holder.index()] > graph.rec_end_ns[call.index()] + TOLERANCE_NS
        })
        .map(|(_, call)| call)
        .collect();
    out.sort_unstable();
    out
}
