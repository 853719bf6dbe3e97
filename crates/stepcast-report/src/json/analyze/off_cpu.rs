//! Host threads' time off the CPU, from an LTTng trace's scheduler events.

use super::*;

/// A step's host thread off its CPU (`stepcast::analyze::off_cpu`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OffCpuJson {
    /// The thread: the step marker's (without markers, the traced thread off its CPU most).
    pub thread: SchedThreadJson,
    /// The thread's untraced time in the step: between its recorded events.
    pub gap_ns: i64,
    /// Of `gap_ns`, off its CPU: `preempted` (runnable, another thread had the CPU),
    /// `waiting` (blocked until a wakeup), `runnable_after_wakeup` (woken, waiting for a CPU).
    /// The rest of the gaps was on the CPU, as far as the scheduler recorded.
    pub gap_off_cpu_ns: NsMap,
    /// Off-CPU time inside the thread's recorded events (their durations include it).
    pub in_events_ns: NsMap,
    /// Off-CPU time on the step's critical path.
    pub critical_path_ns: NsMap,
    /// Each off-CPU interval, clipped to the step, in time order.
    pub intervals: Vec<OffCpuIntervalJson>,
}

/// A thread the scheduler named.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SchedThreadJson {
    /// Thread id.
    pub tid: i64,
    /// Its command name as the scheduler recorded it.
    pub name: String,
}

/// One interval a thread was off its CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OffCpuIntervalJson {
    /// When it left its CPU (or the step began), ns from the trace's origin.
    pub start_ns: i64,
    /// When it ran again (or the step ended).
    pub end_ns: i64,
    /// `preempted` or `blocked`.
    pub reason: &'static str,
    /// The thread its CPU switched to (for `preempted`: the one that took its CPU).
    pub switched_to: Option<SchedThreadJson>,
    /// `blocked`: when a wakeup made it runnable (`null` when none was recorded).
    pub wakeup_ns: Option<i64>,
    /// `blocked`: the thread that woke it, where the trace says.
    pub woken_by: Option<SchedThreadJson>,
    /// Of the interval, ns in the thread's untraced gaps.
    pub in_gap_ns: i64,
    /// Of the interval, ns on the step's critical path.
    pub critical_path_ns: i64,
}

impl OffCpuJson {
    pub(super) fn new(trace: &Trace, step: &stepcast::analyze::off_cpu::StepOffCpu) -> Self {
        use stepcast::analyze::off_cpu::OffCpuState;
        let by_state = |ns: &[i64; 3]| {
            NsMap(
                OffCpuState::ALL
                    .iter()
                    .map(|state| (state.as_str(), ns[*state as usize]))
                    .collect(),
            )
        };
        let thread = |t: &stepcast_trace::ThreadRef| SchedThreadJson {
            tid: t.tid,
            name: t.name.clone(),
        };
        let lane = trace.lane(step.lane);
        OffCpuJson {
            thread: SchedThreadJson {
                tid: lane.tid,
                name: lane.name.clone().unwrap_or_default(),
            },
            gap_ns: step.gap_ns,
            gap_off_cpu_ns: by_state(&step.gap_off_cpu_ns),
            in_events_ns: by_state(&step.in_events_ns),
            critical_path_ns: by_state(&step.critical_ns),
            intervals: step
                .slices
                .iter()
                .map(|slice| OffCpuIntervalJson {
                    start_ns: slice.start_ns,
                    end_ns: slice.end_ns,
                    reason: slice.reason.as_str(),
                    switched_to: slice.next.as_ref().map(thread),
                    wakeup_ns: slice.wakeup_ns,
                    woken_by: slice.waker.as_ref().map(thread),
                    in_gap_ns: slice.in_gap_ns,
                    critical_path_ns: slice.critical_ns,
                })
                .collect(),
        }
    }
}
