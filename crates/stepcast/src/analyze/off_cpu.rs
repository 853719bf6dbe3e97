//! Scheduler-explained host time: where the step's host thread was off its CPU (the kernel
//! scheduler's `sched_switch`, `Trace::off_cpu`), inside its untraced gaps, inside its recorded
//! events, and on the step's critical path; and why: preempted by another thread (runnable,
//! waiting for a CPU), or blocked until a wakeup (and by which thread), then runnable until
//! it ran.
//!
//! Zins & Dagenais put the kernel's scheduler events beside the framework's so that a gap on a
//! host thread reads as "descheduled" or "waiting" instead of "untraced". Only what the
//! scheduler recorded is reported: a gap with no off-CPU interval stays untraced time, on the
//! CPU.

use stepcast_trace::{LaneId, LaneKind, OffCpu, OffCpuReason, ThreadRef, Trace};

use super::critical::{CriticalPathBreakdown, StepCriticalPath};
use super::host_time::marker_lane;
use crate::window::Window;

/// Why a slice of off-CPU time passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OffCpuState {
    /// Preempted: runnable, another thread had the CPU.
    Preempted,
    /// Blocked, before its wakeup: waiting on something (a lock, a condition, I/O).
    Waiting,
    /// Woken, not yet running: waiting for a CPU.
    RunnableAfterWakeup,
}

impl OffCpuState {
    pub const ALL: [OffCpuState; 3] = [
        OffCpuState::Preempted,
        OffCpuState::Waiting,
        OffCpuState::RunnableAfterWakeup,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OffCpuState::Preempted => "preempted",
            OffCpuState::Waiting => "waiting",
            OffCpuState::RunnableAfterWakeup => "runnable_after_wakeup",
        }
    }
}

/// One off-CPU interval of the thread, clipped to the step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffCpuSlice {
    pub start_ns: i64,
    pub end_ns: i64,
    pub reason: OffCpuReason,
    /// The thread its CPU switched to.
    pub next: Option<ThreadRef>,
    /// Blocked: when it was woken and by which thread.
    pub wakeup_ns: Option<i64>,
    pub waker: Option<ThreadRef>,
    /// Of this slice: ns in the thread's untraced gaps (the rest lies inside recorded events).
    pub in_gap_ns: i64,
    /// Of this slice: ns on the step's critical path.
    pub critical_ns: i64,
}

/// One step's scheduler-explained host time, on its host thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepOffCpu {
    pub step: usize,
    /// The thread (the step marker's; without markers, the traced thread the scheduler
    /// recorded most off-CPU time of).
    pub lane: LaneId,
    /// The thread's untraced time in the step: between its recorded events.
    pub gap_ns: i64,
    /// Off-CPU ns in those gaps, by state ([`OffCpuState::ALL`] order); the rest of the gaps
    /// was on the CPU (or not recorded by the scheduler).
    pub gap_off_cpu_ns: [i64; 3],
    /// Off-CPU ns inside the thread's recorded events (their durations include it), by state.
    pub in_events_ns: [i64; 3],
    /// Off-CPU ns on the step's critical path, by state.
    pub critical_ns: [i64; 3],
    pub slices: Vec<OffCpuSlice>,
}

impl StepOffCpu {
    pub fn gap_off_cpu_total_ns(&self) -> i64 {
        self.gap_off_cpu_ns.iter().sum()
    }
}

/// The scheduler-explained host time of every step; `None` when the trace has no scheduler
/// events for its threads.
pub fn off_cpu(
    trace: &Trace,
    window: &Window,
    critical: &[(StepCriticalPath, CriticalPathBreakdown)],
) -> Option<Vec<StepOffCpu>> {
    if trace.off_cpu.is_empty() {
        return None;
    }
    let lane = marker_lane(trace).or_else(|| busiest_lane(trace))?;
    let intervals: Vec<&OffCpu> = trace.off_cpu.iter().filter(|o| o.lane == lane).collect();
    let covered = covered(trace, lane);
    let graph = &window.graph;
    let steps = window
        .steps
        .iter()
        .enumerate()
        .map(|(s, step)| {
            let start = step.start_ns;
            let end = step.marker_end_ns.max(start);
            let gaps = complement(&covered, start, end);
            // The critical path's time on this thread.
            let path: Vec<(i64, i64)> = critical
                .get(s)
                .map(|(c, _)| {
                    c.stretches
                        .iter()
                        .filter(|st| {
                            graph
                                .lanes
                                .get(st.lane as usize)
                                .is_some_and(|l| l.trace_lane == lane)
                        })
                        .map(|st| (st.start_ns, st.end_ns))
                        .collect()
                })
                .unwrap_or_default();
            let mut out = StepOffCpu {
                step: s,
                lane,
                gap_ns: gaps.iter().map(|(a, b)| b - a).sum(),
                gap_off_cpu_ns: [0; 3],
                in_events_ns: [0; 3],
                critical_ns: [0; 3],
                slices: Vec::new(),
            };
            for interval in &intervals {
                let (lo, hi) = (interval.start_ns.max(start), interval.end_ns().min(end));
                if lo >= hi {
                    continue;
                }
                let mut slice = OffCpuSlice {
                    start_ns: lo,
                    end_ns: hi,
                    reason: interval.reason,
                    next: interval.next.clone(),
                    wakeup_ns: interval.wakeup_ns,
                    waker: interval.waker.clone(),
                    in_gap_ns: 0,
                    critical_ns: 0,
                };
                for (state, a, b) in states(interval, lo, hi) {
                    let gap = overlap(&gaps, a, b);
                    let on_path = overlap(&path, a, b);
                    out.gap_off_cpu_ns[state as usize] += gap;
                    out.in_events_ns[state as usize] += (b - a) - gap;
                    out.critical_ns[state as usize] += on_path;
                    slice.in_gap_ns += gap;
                    slice.critical_ns += on_path;
                }
                out.slices.push(slice);
            }
            out
        })
        .collect();
    Some(steps)
}

/// The traced host thread with the most off-CPU time (ties: the lower lane).
fn busiest_lane(trace: &Trace) -> Option<LaneId> {
    let mut totals: Vec<(LaneId, i64)> = Vec::new();
    for o in &trace.off_cpu {
        if trace.lane(o.lane).kind != LaneKind::CpuThread {
            continue;
        }
        match totals.iter_mut().find(|(l, _)| *l == o.lane) {
            Some((_, ns)) => *ns += o.dur_ns,
            None => totals.push((o.lane, o.dur_ns)),
        }
    }
    totals
        .into_iter()
        .max_by_key(|&(lane, ns)| (ns, std::cmp::Reverse(lane)))
        .map(|(lane, _)| lane)
}

/// The pieces of `[lo, hi)` of an off-CPU interval by state.
fn states(interval: &OffCpu, lo: i64, hi: i64) -> Vec<(OffCpuState, i64, i64)> {
    match (interval.reason, interval.wakeup_ns) {
        (OffCpuReason::Preempted, _) => vec![(OffCpuState::Preempted, lo, hi)],
        (OffCpuReason::Blocked, None) => vec![(OffCpuState::Waiting, lo, hi)],
        (OffCpuReason::Blocked, Some(wake)) => {
            let wake = wake.clamp(lo, hi);
            vec![
                (OffCpuState::Waiting, lo, wake),
                (OffCpuState::RunnableAfterWakeup, wake, hi),
            ]
        }
    }
}

/// The union of the lane's recorded events, merged, in time order.
fn covered(trace: &Trace, lane: LaneId) -> Vec<(i64, i64)> {
    let mut merged: Vec<(i64, i64)> = Vec::new();
    for event in trace.lane_events(lane) {
        let (s, e) = (event.start_ns, event.end_ns());
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

/// `[start, end)` less the sorted, disjoint `covered`.
fn complement(covered: &[(i64, i64)], start: i64, end: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut at = start;
    for &(s, e) in covered {
        if e <= at {
            continue;
        }
        if s >= end {
            break;
        }
        if s > at {
            out.push((at, s));
        }
        at = at.max(e);
    }
    if at < end {
        out.push((at, end));
    }
    out
}

/// ns of `[a, b)` inside the intervals `within` (disjoint).
fn overlap(within: &[(i64, i64)], a: i64, b: i64) -> i64 {
    within
        .iter()
        .map(|&(s, e)| (e.min(b) - s.max(a)).max(0))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_the_step_less_its_events() {
        assert_eq!(
            complement(&[(10, 20), (30, 40)], 0, 50),
            vec![(0, 10), (20, 30), (40, 50)]
        );
        assert_eq!(complement(&[(0, 60)], 10, 50), vec![]);
        assert_eq!(overlap(&[(0, 10), (20, 30)], 5, 25), 10);
    }
}
