//! Dispatch gaps on a shared device: how much longer a stream's next task takes to start when
//! another stream of the same device is running.
//!
//! A device dispatches each stream's next task after its predecessor retires (the dispatch gap,
//! `Builder::dispatch_gaps`). That gap is not a constant of the device alone: on HTA's
//! trace_diff ranks (V100, DLRM) a backlogged compute stream's kernels follow each other in
//! 4 µs (mean) while the device is otherwise idle, but in 5.5 µs while a NCCL kernel runs on
//! another stream and 7.5 µs while a host-to-device copy does (the front end and the memory
//! system are shared); nodes of a CUDA graph slow the same way (a memset node after a kernel: 6
//! µs idle, 18 µs beside a copy). Which stream runs beside which is decided by the replay, not
//! copied: the engine applies `Graph::shared_gap_permille` to a lane-bound task's gap when another
//! stream of its device is busy during it (`simulate`), so a what-if that moves or removes the
//! other stream's work moves the slowdown with it. Calibrated here as the sum of the gaps of
//! queued pairs whose gap overlapped another stream's task over what the same pairs would have
//! taken at the mean gap of those whose gap did not (pairs compared within the gap the graph
//! gives them: eager, or a graph node's transition).

use rustc_hash::FxHashMap;

use super::super::{Graph, SHARED_GAP_NONE_PERMILLE as NONE_PERMILLE, TaskId};

/// Fewer samples than this on either side leave the factor at 1 (no slowdown modelled).
const MIN_SAMPLES: usize = 20;

/// A recorded gap longer than this many times the pair's dispatch gap is a wait, no sample.
const WAIT_GAPS: i64 = 20;

/// Whether another lane of the same device had a task running during `[from_ns, to_ns]`. Tasks
/// of a lane are in recorded order and do not overlap, so on each lane only the last task that
/// starts before `to_ns` can.
fn other_lane_busy(g: &Graph, lane: u32, from_ns: i64, to_ns: i64) -> bool {
    let Some(device) = g.lanes[lane as usize].device else {
        return false;
    };
    g.lanes.iter().enumerate().any(|(l, other)| {
        if l == lane as usize || other.device != Some(device) || other.task_count == 0 {
            return false;
        }
        let first = other.first_task as usize;
        let tasks = first..first + other.task_count as usize;
        let before = g.rec_start_ns[tasks.clone()].partition_point(|&s| s < to_ns.max(from_ns + 1));
        before > 0 && g.rec_end_ns[first + before - 1] > from_ns
    })
}

/// The factor by which a device task's dispatch gap grows while another stream of its device
/// runs, in thousandths, from the recorded gaps of the queued pairs `(predecessor, task)`;
/// [`NONE_PERMILLE`] where the trace does not show it (one stream, too few samples either way,
/// or no slowdown).
pub fn calibrate(g: &Graph, pairs: &[(TaskId, TaskId)]) -> u32 {
    // Pairs grouped by the gap the graph gives them (the eager dispatch gap, a graph node's
    // transition), so that a busy pair is compared with idle pairs of its own kind: graph
    // nodes follow each other faster than eager launches, and a trace's busy periods need not
    // hold the same mix of both as its idle ones.
    let mut groups: FxHashMap<i64, (Vec<i64>, Vec<i64>)> = FxHashMap::default();
    for &(pred, t) in pairs {
        let from = g.rec_end_ns[pred.index()];
        let to = g.rec_start_ns[t.index()];
        let given = g.gap_ns[pred.index()];
        // A gap many times its dispatch gap was a wait (behind a full device, a copy's
        // staging), not a slower dispatch.
        if to < from || given <= 0 || to - from > WAIT_GAPS * given {
            continue;
        }
        let group = groups.entry(given).or_default();
        if other_lane_busy(g, g.lane[t.index()], from, to) {
            group.1.push(to - from);
        } else {
            group.0.push(to - from);
        }
    }
    // The busy gaps' sum over what the same pairs would have taken at their group's mean idle
    // gap: a sum, not a median, because a backlogged stream's span accumulates its gaps (and
    // timestamps of 1 µs make the medians of µs gaps coarse).
    let (mut busy_ns, mut as_idle_ns, mut busy_pairs) = (0i64, 0i64, 0usize);
    for (idle, busy) in groups.into_values() {
        if idle.len() < MIN_SAMPLES || busy.is_empty() {
            continue;
        }
        let idle_sum: i64 = idle.iter().sum();
        busy_ns = busy_ns.saturating_add(busy.iter().sum());
        as_idle_ns = as_idle_ns
            .saturating_add(idle_sum.saturating_mul(busy.len() as i64) / idle.len() as i64);
        busy_pairs += busy.len();
    }
    if busy_pairs < MIN_SAMPLES || as_idle_ns <= 0 {
        return NONE_PERMILLE;
    }
    // Integer thousandths: the engine scales gaps without floating point (deterministic).
    (busy_ns.saturating_mul(1000) / as_idle_ns).clamp(i64::from(NONE_PERMILLE), i64::from(u32::MAX))
        as u32
}
