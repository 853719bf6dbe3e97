//! One definition of a step's host time by phase, used by `analyze`'s phase table
//! ([`super::breakdown`]), `whatif`'s `phases` and the critical path's by-phase table.
//!
//! Host time is measured on the **step's marker thread** only (the thread that records
//! `ProfilerStep#N` and calls `backward()`): its busy time (its host tasks' own cost: runtime
//! calls, or CPU ops on a thread without calls) plus its untraced time (`Graph::gap_ns`, the
//! Python time between its tasks). On one thread these never overlap, so with "idle" (nothing
//! on the thread: blocked in a synchronizing call, or handing the backward pass to the autograd
//! thread) they sum to the step. Other threads' work is not added: it would count moments twice.
//!
//! Each piece takes the phase of what encloses it on that thread: the parts inside a
//! data-loading range (`Mapping::data_loading_ranges`: `enumerate(DataLoader)#...__next__` and
//! the like) are data loading, wherever calls or gaps fall; the rest takes the task's own phase
//! (`Mapping::phase`, decided from the stack around the call).

use stepcast_trace::{LaneId, Trace};

use crate::graph::{Graph, TaskId};

use super::mapping::{Mapping, Phase};

/// The thread whose host time is the step's host time: the step markers' thread.
pub fn marker_lane(trace: &Trace) -> Option<LaneId> {
    trace.steps.first().map(|s| s.lane)
}

/// Whether graph task `t` runs on the marker thread.
pub fn on_marker_lane(graph: &Graph, marker: Option<LaneId>, t: usize) -> bool {
    marker.is_some_and(|lane| {
        graph
            .lanes
            .get(graph.lane[t] as usize)
            .is_some_and(|l| l.trace_lane == lane)
    })
}

/// The data-loading ranges of graph task `t`'s thread (empty if none).
fn ranges_of<'a>(graph: &Graph, mapping: &'a Mapping, t: usize) -> &'a [(i64, i64)] {
    graph
        .lanes
        .get(graph.lane[t] as usize)
        .and_then(|l| mapping.data_loading_ranges.get(l.trace_lane.index()))
        .map_or(&[], Vec::as_slice)
}

/// Calls `f(start, end, inside)` for the pieces of `[start, end)` inside (`true`) and outside
/// the sorted, disjoint `ranges`, in order.
pub fn split(ranges: &[(i64, i64)], start: i64, end: i64, mut f: impl FnMut(i64, i64, bool)) {
    let mut at = start;
    let first = ranges.partition_point(|&(_, e)| e <= start);
    for &(s, e) in &ranges[first..] {
        if s >= end || at >= end {
            break;
        }
        if s > at {
            f(at, s, false);
            at = s;
        }
        let inside_end = e.min(end);
        if inside_end > at {
            f(at, inside_end, true);
            at = inside_end;
        }
    }
    if end > at {
        f(at, end, false);
    }
}

/// Nanoseconds of `[start, end)` inside the sorted, disjoint `ranges`.
pub fn inside_ns(ranges: &[(i64, i64)], start: i64, end: i64) -> i64 {
    let mut ns = 0;
    split(ranges, start, end, |s, e, inside| {
        if inside {
            ns += e - s;
        }
    });
    ns
}

/// The recorded host pieces of task `t` (its own cost, then its untraced gap), each with its
/// phase, as `f(start, end, phase)`.
pub fn recorded_pieces(
    graph: &Graph,
    mapping: &Mapping,
    t: usize,
    mut f: impl FnMut(i64, i64, Phase),
) {
    let phase = mapping.phase.get(t).copied().unwrap_or(Phase::Other);
    let ranges = ranges_of(graph, mapping, t);
    let end = graph.rec_end_ns[t];
    // A blocking call's own cost is the part after its wait: the wait is not busy.
    let own_start = (end - graph.dur_ns[t]).max(graph.rec_start_ns[t]);
    let gap_end = end + graph.gap_ns[t].max(0);
    for (s, e) in [(own_start, end), (end, gap_end)] {
        split(ranges, s, e, |s, e, inside| {
            f(s, e, if inside { Phase::DataLoading } else { phase })
        });
    }
}

/// The untraced pieces of the thread before its first task `t`, from `from_ns`: data loading
/// inside a loader range, else the first task's phase.
pub fn leading_pieces(
    graph: &Graph,
    mapping: &Mapping,
    t: usize,
    from_ns: i64,
    mut f: impl FnMut(i64, i64, Phase),
) {
    let phase = mapping.phase.get(t).copied().unwrap_or(Phase::Other);
    split(
        ranges_of(graph, mapping, t),
        from_ns,
        graph.rec_start_ns[t],
        |s, e, inside| f(s, e, if inside { Phase::DataLoading } else { phase }),
    );
}

/// A recorded piece of host time: its step, whether inside a data-loading range, its ns.
type Piece = (Option<usize>, bool, i64);

/// The step whose marker-thread time holds `time_ns`: from a step's start to the next one's
/// (the last step's runs on), as `analyze` clips each step's host time.
pub fn step_at(steps: &[crate::window::Step], time_ns: i64) -> Option<usize> {
    steps
        .partition_point(|s| s.start_ns <= time_ns)
        .checked_sub(1)
}

/// Host time of task `t` with (possibly edited) own cost `own_ns` and gap `gap_ns`, as
/// `f(step, phase, ns)` calls: each recorded piece in the step it ran in ([`step_at`]) and its
/// phase. The recorded split is kept: an edited own cost scales its pieces; an edited gap keeps
/// its time outside data-loading ranges first (the models that shorten gaps hide the loader's
/// time or remove untraced time outside captured work, not the step's other Python time), and
/// the rest is data loading, spread over the recorded loader pieces.
pub fn task_phase_ns(
    graph: &Graph,
    mapping: &Mapping,
    steps: &[crate::window::Step],
    t: usize,
    (own_ns, gap_ns): (i64, i64),
    mut f: impl FnMut(Option<usize>, Phase, i64),
) {
    let phase = mapping.phase.get(t).copied().unwrap_or(Phase::Other);
    let ranges = ranges_of(graph, mapping, t);
    let end = graph.rec_end_ns[t];
    let rec_own = graph.dur_ns[t].max(0);
    let own_start = (end - rec_own).max(graph.rec_start_ns[t]);
    let rec_gap = graph.gap_ns[t].max(0);
    let pieces = |s: i64, e: i64| {
        let mut out = Vec::new();
        split(ranges, s, e, |s, e, inside| {
            out.push((step_at(steps, s), inside, e - s))
        });
        out
    };
    let phase_of = |inside: bool| if inside { Phase::DataLoading } else { phase };
    // `total` spread over `pieces` in proportion to their recorded length; what rounding
    // leaves goes to the last one, or to the task's phase where no piece was recorded.
    let mut spread = |pieces: &[Piece], total: i64, fallback: i64| {
        let recorded: i64 = pieces.iter().map(|p| p.2).sum();
        if total <= 0 {
            return;
        }
        if recorded <= 0 {
            f(step_at(steps, fallback), phase, total);
            return;
        }
        let mut left = total;
        for (i, &(step, inside, ns)) in pieces.iter().enumerate() {
            let share = if i + 1 == pieces.len() {
                left
            } else {
                (total as i128 * ns as i128 / recorded as i128) as i64
            };
            left -= share;
            f(step, phase_of(inside), share);
        }
    };
    spread(&pieces(own_start, end), own_ns, own_start);
    let gap = pieces(end, end + rec_gap);
    let (loading, outside): (Vec<Piece>, Vec<Piece>) = gap.iter().partition(|p| p.1);
    let outside_rec: i64 = outside.iter().map(|p| p.2).sum();
    let gap_ns = gap_ns.max(0);
    spread(&outside, gap_ns.min(outside_rec), end);
    let rest = gap_ns - gap_ns.min(outside_rec);
    if loading.is_empty() {
        if rest > 0 {
            f(step_at(steps, end), phase, rest);
        }
    } else {
        spread(&loading, rest, end);
    }
}

/// The phase of a critical-path host share of `ns` for task `t`: its own cost is at the end of
/// the share, the rest is the untraced time just before the task. Returns the ns inside
/// data-loading ranges (the rest is the task's phase). That time before the task is on its own
/// thread, or, for a thread that waits on the step's thread (the autograd engine thread, after
/// a handoff), on the marker thread: the larger of the two readings counts, never their sum.
pub fn share_loading_ns(
    graph: &Graph,
    mapping: &Mapping,
    marker: Option<LaneId>,
    task: TaskId,
    ns: i64,
) -> i64 {
    share_loading_pieces(graph, mapping, marker, task, ns).map_or(0, |loading| {
        loading.pieces.iter().map(|&(s, e)| e - s).sum()
    })
}

/// Where a critical-path share's data loading ([`share_loading_ns`]) was read: the thread, and
/// its pieces there with the loader range holding each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadingPieces {
    pub lane: LaneId,
    /// `[start, end)` of each piece, in order.
    pub pieces: Vec<(i64, i64)>,
    /// Per piece, the data-loading range (`Mapping::data_loading_ranges`) it lies in.
    pub ranges: Vec<(i64, i64)>,
}

/// The pieces [`share_loading_ns`] counts, on the thread it read them on; `None` where the
/// share has no data loading.
pub fn share_loading_pieces(
    graph: &Graph,
    mapping: &Mapping,
    marker: Option<LaneId>,
    task: TaskId,
    ns: i64,
) -> Option<LoadingPieces> {
    let t = task.index();
    if ns <= 0 {
        return None;
    }
    let end = graph.rec_end_ns[t];
    let own = graph.dur_ns[t].clamp(0, ns);
    let own_start = (end - own).max(graph.rec_start_ns[t]);
    let start = graph.rec_start_ns[t];
    let before = ns - own;
    let reading = |lane: LaneId, ranges: &[(i64, i64)]| {
        let mut loading = LoadingPieces {
            lane,
            pieces: Vec::new(),
            ranges: Vec::new(),
        };
        for (s, e) in [(own_start, end), (start - before, start)] {
            split(ranges, s, e, |s, e, inside| {
                if inside {
                    loading.pieces.push((s, e));
                    let holding = ranges.partition_point(|&(_, end)| end <= s);
                    loading
                        .ranges
                        .push(ranges.get(holding).copied().unwrap_or((s, e)));
                }
            });
        }
        loading
    };
    let loaded = |l: &LoadingPieces| -> i64 { l.pieces.iter().map(|&(s, e)| e - s).sum() };
    let own_lane = graph
        .lanes
        .get(graph.lane[t] as usize)
        .map(|l| reading(l.trace_lane, ranges_of(graph, mapping, t)));
    let marker_lane = marker.and_then(|lane| {
        mapping
            .data_loading_ranges
            .get(lane.index())
            .map(|ranges| reading(lane, ranges))
    });
    // The thread that reads more of it (the own thread on a tie).
    let best = match (own_lane, marker_lane) {
        (Some(own), Some(marker)) if loaded(&marker) > loaded(&own) => marker,
        (Some(own), _) => own,
        (None, marker) => marker?,
    };
    (loaded(&best) > 0).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_the_interval_in_order() {
        let ranges = [(10, 20), (30, 40)];
        let mut pieces = Vec::new();
        split(&ranges, 5, 35, |s, e, inside| pieces.push((s, e, inside)));
        assert_eq!(
            pieces,
            [
                (5, 10, false),
                (10, 20, true),
                (20, 30, false),
                (30, 35, true)
            ]
        );
        assert_eq!(inside_ns(&ranges, 15, 45), 15);
        assert_eq!(inside_ns(&ranges, 0, 5), 0);
    }
}
