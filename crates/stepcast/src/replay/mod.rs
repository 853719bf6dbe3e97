//! Self-replay: replay the recorded window with its own durations and measure, step by step,
//! how closely the replay reproduces the recording. This is the proof that the graph holds the
//! dependencies that shaped the step; every prediction stands on it.

mod typical;

use crate::graph::{EdgeKind, Graph, NO_STEP, TaskId};
use crate::simulate::{RecordedOrder, SimError, SimOptions, Timeline, critical_path, simulate};
use crate::window::{Step, Window};

use typical::typical_step_of;
pub use typical::{TypicalStep, typical_step};

/// A task counts as faithful if its replayed start deviates from its recorded start by at
/// most this much more than its lane predecessor's did.
pub const FIDELITY_TOLERANCE_NS: i64 = 5_000;

/// How one step replays.
#[derive(Clone, Debug, PartialEq)]
pub struct StepReplay {
    pub number: u64,
    /// From the step's host start to the end of the last task launched inside it.
    pub measured_ns: i64,
    pub replayed_ns: i64,
    /// The same replay with inferred edges left out.
    pub replayed_without_inferred_ns: i64,
    pub tasks: u64,
    pub edges_by_kind: Vec<(EdgeKind, u64)>,
    /// Share of tasks whose replayed start deviates from the recorded start by at most
    /// [`FIDELITY_TOLERANCE_NS`] more than the previous task on the same lane: the deviation
    /// each task *adds*, not how close it is to its recorded start.
    pub added_deviation_fidelity: f64,
    /// Share of tasks replayed within [`FIDELITY_TOLERANCE_NS`] of their recorded start.
    pub absolute_fidelity: f64,
    pub critical_path_tasks: u64,
    pub critical_path_ns: i64,
    pub critical_path_host_ns: i64,
    pub critical_path_device_ns: i64,
    pub critical_path_wait_ns: i64,
    /// Whether the step counts as steady state (every step but the first, when there are 3+).
    pub steady: bool,
}

impl StepReplay {
    /// Relative error of the replay: `replayed / measured - 1`.
    pub fn error(&self) -> f64 {
        relative_error(self.replayed_ns, self.measured_ns)
    }

    pub fn error_without_inferred(&self) -> f64 {
        relative_error(self.replayed_without_inferred_ns, self.measured_ns)
    }
}

pub fn relative_error(predicted: i64, measured: i64) -> f64 {
    if measured == 0 {
        return if predicted == 0 { 0.0 } else { f64::INFINITY };
    }
    predicted as f64 / measured as f64 - 1.0
}

/// The self-replay of a whole window.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayReport {
    pub steps: Vec<StepReplay>,
    pub typical: Option<TypicalStep>,
}

/// Which steps are steady state: all but the first (warm-up) when there are at least three,
/// and never a step that launched nothing (a step cut short when the profiler stopped).
pub fn steady_steps(window: &Window) -> Vec<usize> {
    let n = window.steps.len();
    let mut has_tasks = vec![false; n];
    for &step in &window.graph.step {
        if step != NO_STEP {
            has_tasks[step as usize] = true;
        }
    }
    let first = if n >= 3 { 1 } else { 0 };
    (first..n)
        .filter(|&s| has_tasks[s] && !window.steps[s].teardown)
        .collect()
}

/// Replays the window and measures every step.
pub fn self_replay(window: &Window) -> Result<ReplayReport, SimError> {
    self_replay_with_timeline(window).map(|(report, _)| report)
}

/// [`self_replay`], also returning the replay's timeline (for analyses that walk it).
pub fn self_replay_with_timeline(window: &Window) -> Result<(ReplayReport, Timeline), SimError> {
    let graph = &window.graph;
    let timeline = simulate(graph, &RecordedOrder, SimOptions::default())?;
    // Without inferred edges the replay is the same one where the graph has none and no
    // task's cost depends on them: not run twice.
    let inferred = graph.pred_kind.iter().any(|kind| kind.is_inferred())
        || graph.dur_ns != graph.dur_without_inferred_ns;
    let without = if inferred {
        simulate(
            graph,
            &RecordedOrder,
            SimOptions {
                without_inferred: true,
                ..SimOptions::default()
            },
        )?
    } else {
        timeline.clone()
    };
    let steady = steady_steps(window);
    let tasks_by_step = tasks_by_step(graph, window.steps.len());
    let steps: Vec<StepReplay> = window
        .steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let tasks = &tasks_by_step[i];
            let measured_ns = measured_span(graph, step, tasks);
            let (replayed_ns, last, replay_start) = replayed_span(graph, &timeline, step, tasks);
            let (replayed_without_inferred_ns, _, _) = replayed_span(graph, &without, step, tasks);
            let path = last
                .map(|last| critical_path(graph, &timeline, last, replay_start))
                .unwrap_or_default();
            StepReplay {
                number: step.number,
                measured_ns,
                replayed_ns,
                replayed_without_inferred_ns,
                tasks: tasks.len() as u64,
                edges_by_kind: graph.edges_by_kind_of(tasks.iter().copied()),
                added_deviation_fidelity: added_deviation_fidelity(graph, &timeline, tasks),
                absolute_fidelity: absolute_fidelity(graph, &timeline, tasks),
                critical_path_tasks: path.tasks.len() as u64,
                critical_path_ns: path.length_ns(),
                critical_path_host_ns: path.host_ns,
                critical_path_device_ns: path.device_ns,
                critical_path_wait_ns: path.wait_ns,
                steady: steady.contains(&i),
            }
        })
        .collect();
    let mut typical = typical_step_of(window, &steady, &tasks_by_step)?;
    if let Some(typical) = &mut typical {
        typical.declined = contradiction(typical, &steps);
    }
    Ok((ReplayReport { steps, typical }, timeline))
}

/// A typical step built from k steps must lie within their replayed range (with the 2 %
/// the replay is held to): otherwise it contradicts the replay it summarizes, which happens
/// when its steps depend on work of other steps that one step's copies cannot carry (the
/// device running a step behind the host, a pipeline's peers). Nor is one offered more than
/// 2 % from the median measured steady step. Says why, or `None`.
fn contradiction(typical: &TypicalStep, steps: &[StepReplay]) -> Option<String> {
    let replayed: Vec<i64> = steps
        .iter()
        .filter(|s| typical.steps_used.contains(&s.number))
        .map(|s| s.replayed_ns)
        .collect();
    let (Some(&low), Some(&high)) = (replayed.iter().min(), replayed.iter().max()) else {
        return Some("none of its steps was replayed".to_string());
    };
    let (floor, ceiling) = (low as f64 * 0.98, high as f64 * 1.02);
    let predicted = typical.predicted_ns as f64;
    if predicted < floor || predicted > ceiling {
        return Some(format!(
            "the typical step ({:.3} ms) contradicts the replay of the steps it is built from \
             ({:.3}-{:.3} ms): they depend on work outside a single step's copies",
            predicted / 1e6,
            low as f64 / 1e6,
            high as f64 / 1e6
        ));
    }
    // Consistent with the replay, yet a step the measured ones do not bear out: the replay's
    // own error on these steps, which a prediction must not hide.
    let error = typical.error();
    (error.abs() > 0.02).then(|| {
        format!(
            "the typical step ({:.3} ms) is {:+.1} % from the median measured steady step \
             ({:.3} ms): the replay of its steps is off by as much",
            predicted / 1e6,
            error * 100.0,
            typical.measured_median_ns as f64 / 1e6
        )
    })
}

pub(crate) fn tasks_by_step(graph: &Graph, n_steps: usize) -> Vec<Vec<TaskId>> {
    let mut by_step = vec![Vec::new(); n_steps];
    for (t, &step) in graph.step.iter().enumerate() {
        if step != NO_STEP {
            by_step[step as usize].push(TaskId(t as u32));
        }
    }
    by_step
}

/// From the step's host start (its marker's) to the later of its marker's end and the end of
/// the last device work launched inside it, as recorded: the host may work on after its last
/// launch, and the device after the marker ends.
pub(crate) fn measured_span(graph: &Graph, step: &Step, tasks: &[TaskId]) -> i64 {
    let device_end = tasks
        .iter()
        .filter(|t| graph.kind[t.index()].on_device())
        .map(|t| graph.rec_end_ns[t.index()])
        .max()
        .unwrap_or(i64::MIN);
    device_end.max(step.marker_end_ns).max(step.start_ns) - step.start_ns
}

/// The step marker's thread's last task as recorded (any host task's for a step without a
/// marker thread).
fn marker_thread_last(graph: &Graph, step: &Step, tasks: &[TaskId]) -> Option<TaskId> {
    tasks
        .iter()
        .copied()
        .filter(|t| {
            !graph.kind[t.index()].on_device()
                && step
                    .trace_lane
                    .is_none_or(|l| graph.lanes[graph.lane[t.index()] as usize].trace_lane == l)
        })
        .max_by_key(|t| (graph.rec_end_ns[t.index()], t.0))
}

/// When the step's marker ends in a replay: its last host task on the marker's thread ends,
/// then the host works on for the recorded time after it (untraced host work, e.g. Python
/// after the last launch), scaled as that task's untraced gap was in this graph. A step without
/// host tasks on its thread keeps its marker's recorded length from `start_ns`.
pub(crate) fn replayed_marker_end(
    graph: &Graph,
    timeline: &Timeline,
    step: &Step,
    tasks: &[TaskId],
    start_ns: i64,
) -> i64 {
    let Some(last) = marker_thread_last(graph, step, tasks) else {
        return start_ns + (step.marker_end_ns - step.start_ns);
    };
    let recorded_tail = (step.marker_end_ns - graph.rec_end_ns[last.index()]).max(0);
    // The recorded gap after `last` (to its lane successor), against the gap this graph gives
    // it: a what-if that halves host gaps halves this tail too.
    let recorded_gap = graph
        .lanes
        .get(graph.lane[last.index()] as usize)
        .filter(|lane| last.0 + 1 < lane.first_task + lane.task_count)
        .map(|_| graph.rec_start_ns[last.index() + 1] - graph.rec_end_ns[last.index()]);
    // A thread that waited for a collective after `last` (`EdgeKind::CollectiveWait` into its
    // next task) was blocked when the marker ended: the marker ends as long before the thread
    // resumed as it did in the recording, not a share of the wake-up left as the gap.
    if recorded_gap.is_some() {
        let next = TaskId(last.0 + 1);
        let waited = graph
            .preds(next)
            .any(|e| graph.pred_kind[e] == EdgeKind::CollectiveWait);
        let before_resuming = graph.rec_start_ns[next.index()] - step.marker_end_ns;
        if waited && before_resuming >= 0 {
            return timeline.end_ns[last.index()]
                .max(timeline.begin_ns[next.index()].saturating_sub(before_resuming));
        }
    }
    let tail = match recorded_gap {
        Some(gap) if gap > 0 && gap >= recorded_tail => {
            (recorded_tail as i128 * graph.gap_ns[last.index()] as i128 / gap as i128) as i64
        }
        _ => recorded_tail,
    };
    timeline.end_ns[last.index()].saturating_add(tail)
}

/// The same span in a replay. The step's start moves with its first host task.
/// Returns (span, the task ending last, the replayed step start).
pub fn replayed_span(
    graph: &Graph,
    timeline: &Timeline,
    step: &Step,
    tasks: &[TaskId],
) -> (i64, Option<TaskId>, i64) {
    let first_host = tasks
        .iter()
        .filter(|t| !graph.kind[t.index()].on_device())
        .filter(|t| {
            step.trace_lane
                .is_none_or(|l| graph.lanes[graph.lane[t.index()] as usize].trace_lane == l)
        })
        .min_by_key(|t| (graph.rec_start_ns[t.index()], t.0));
    let shift = first_host.map_or(0, |t| {
        timeline.begin_ns[t.index()] - graph.rec_start_ns[t.index()]
    });
    let start = step.start_ns + shift;
    let last = tasks
        .iter()
        .copied()
        .filter(|t| graph.kind[t.index()].on_device())
        .max_by_key(|t| (timeline.end_ns[t.index()], std::cmp::Reverse(t.0)));
    let device_end = last.map_or(i64::MIN, |t| timeline.end_ns[t.index()]);
    let marker_end = replayed_marker_end(graph, timeline, step, tasks, start);
    // The task that ends the step: its last device work, else its marker thread's last task
    // (the one `replayed_marker_end` measures from: another thread's, a watchdog polling on
    // its own clock, ends no step).
    let ending = if device_end >= marker_end {
        last
    } else {
        marker_thread_last(graph, step, tasks).or(last)
    };
    (device_end.max(marker_end) - start, ending, start)
}

/// Share of `tasks` replayed within [`FIDELITY_TOLERANCE_NS`] of their recorded start.
fn absolute_fidelity(graph: &Graph, timeline: &Timeline, tasks: &[TaskId]) -> f64 {
    if tasks.is_empty() {
        return 1.0;
    }
    let faithful = tasks
        .iter()
        .filter(|&&t| {
            (timeline.begin_ns[t.index()] - graph.rec_start_ns[t.index()]).abs()
                <= FIDELITY_TOLERANCE_NS
        })
        .count();
    faithful as f64 / tasks.len() as f64
}

fn added_deviation_fidelity(graph: &Graph, timeline: &Timeline, tasks: &[TaskId]) -> f64 {
    if tasks.is_empty() {
        return 1.0;
    }
    let deviation =
        |t: TaskId| (timeline.begin_ns[t.index()] - graph.rec_start_ns[t.index()]).abs();
    let faithful = tasks
        .iter()
        .filter(|&&t| {
            let inherited = graph.lane_pred(t).map_or(0, deviation);
            deviation(t) <= inherited + FIDELITY_TOLERANCE_NS
        })
        .count();
    faithful as f64 / tasks.len() as f64
}
