//! `stepcast.replay/1`: how closely the replay of a trace's graph reproduces each step.

use serde::Serialize;
use stepcast::Window;
use stepcast::replay::{ReplayReport, StepReplay, TypicalStep};
use stepcast_trace::Trace;

use super::info::{LaunchQueueJson, edge_counts};
use super::{Counts, DeviceJson, TraceJson, devices, finite, main_device, max_abs, median};

/// The `replay` document: the self-replay of a window, step by step, and its typical step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplayJson {
    /// Always `stepcast.replay/1`.
    pub schema: &'static str,
    /// What the trace is.
    pub trace: TraceJson,
    /// The device the trace's work ran on (the lowest-numbered device with streams), if any.
    pub device: Option<DeviceJson>,
    /// The step the document was restricted to, or `None` (`null`) for all steps.
    pub selected_step: Option<u64>,
    /// Tasks of the whole window's graph.
    pub tasks: u64,
    /// Calibrated delay from a launch call's start to its work starting on an idle stream.
    pub launch_latency_ns: i64,
    /// Launches onto an idle stream the latency was calibrated from (0: not calibrated).
    pub launch_latency_samples: u64,
    /// Calibrated idle time between consecutive tasks of a backlogged stream.
    pub dispatch_gap_ns: i64,
    /// Calibrated gap between consecutive nodes of one CUDA-graph launch, per transition
    /// (`kernel->memset`, ...), used after graph nodes instead of `dispatch_gap_ns`.
    pub graph_node_gaps_ns: std::collections::BTreeMap<String, i64>,
    /// Calibrated slowdown of a stream's dispatch gap while another stream of its device runs,
    /// in thousandths of the gap (1000: none).
    pub shared_gap_permille: u32,
    /// Edges of the whole window inferred from timing alone.
    pub inferred_edges: u64,
    /// Device tasks that fill their device more than once over (from their launch
    /// configuration or size): the replay holds other streams' work while they run.
    pub device_filling_tasks: u64,
    /// CUDA's launch queue as the trace shows it (`launch_queue` edges).
    pub launch_queue: LaunchQueueJson,
    /// Edges of the whole window by kind, zero counts included.
    pub edges_by_kind: Counts,
    /// The replayed steps, by start (only the selected step, if one was selected).
    pub steps: Vec<StepReplayJson>,
    /// The typical step, aggregated over the steady-state steps of the whole window; `None`
    /// (`null`) when no step has tasks.
    pub typical: Option<TypicalJson>,
    /// Aggregates over `steps`.
    pub summary: SummaryJson,
    /// Facts about how the graph was built, one sentence each.
    pub notes: Vec<String>,
}

/// The replay of one step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepReplayJson {
    /// `N` of `ProfilerStep#N`; 0 for a synthetic step.
    pub number: u64,
    /// Whether the step counts as steady state (every step but the first, when there are 3+).
    pub steady: bool,
    /// From the step's host start to the end of the last task launched inside it, as recorded.
    pub measured_ns: i64,
    /// The same span in the replay.
    pub replayed_ns: i64,
    /// The same span in a replay without the edges inferred from timing.
    pub replayed_without_inferred_ns: i64,
    /// `replayed_ns / measured_ns - 1`; `None` (`null`) if `measured_ns` is 0.
    pub error: Option<f64>,
    /// `replayed_without_inferred_ns / measured_ns - 1`; `None` (`null`) if `measured_ns` is 0.
    pub error_without_inferred: Option<f64>,
    /// Tasks of the step.
    pub tasks: u64,
    /// Edges into the step's tasks by kind, zero counts included.
    pub edges_by_kind: Counts,
    /// Share of the step's tasks, in `[0, 1]`, whose replayed start deviates from the recorded
    /// start by at most 5 µs more than their lane predecessor's (the deviation a task adds).
    pub added_deviation_fidelity: f64,
    /// Share of the step's tasks, in `[0, 1]`, replayed within 5 µs of their recorded start.
    pub absolute_fidelity: f64,
    /// How much of the replayed step the edges inferred from timing hold:
    /// `replayed_ns - replayed_without_inferred_ns`.
    pub inferred_held_ns: i64,
    /// The replay's critical path through the step.
    pub critical_path: CriticalPathJson,
}

/// The critical path of a replayed step: the chain of tasks that ends last.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CriticalPathJson {
    /// Tasks on the path.
    pub tasks: u64,
    /// Length of the path: `host_ns + device_ns + wait_ns`.
    pub length_ns: i64,
    /// Time of the path spent in host tasks' own work and the untraced gaps after them.
    pub host_ns: i64,
    /// Time of the path spent in device tasks' own work.
    pub device_ns: i64,
    /// Time of the path spent waiting for launch latency or for collective peers.
    pub wait_ns: i64,
}

/// The typical step and what it predicts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TypicalJson {
    /// Predicted duration of a steady-state step; `None` (`null`) when declined (`reason`).
    pub predicted_ns: Option<i64>,
    /// Median measured duration over the steady-state steps.
    pub measured_median_ns: i64,
    /// `predicted_ns / measured_median_ns - 1`; `None` (`null`) if the median is 0.
    pub error: Option<f64>,
    /// Numbers of the steps aggregated.
    pub steps_used: Vec<u64>,
    /// Tasks of the typical step.
    pub tasks: u64,
    /// Why no prediction is offered, when none is: it would contradict the per-step replay.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Aggregates over the replayed steps; each is `None` (`null`) when no step defines it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SummaryJson {
    /// Steps aggregated.
    pub steps: u64,
    /// Median of the steps' `error`.
    pub error_median: Option<f64>,
    /// Largest absolute `error`.
    pub error_max_abs: Option<f64>,
    /// Median of the steps' absolute `error_without_inferred`: the replay held by causes only.
    pub error_without_inferred_median_abs: Option<f64>,
    /// Largest absolute `error_without_inferred`.
    pub error_without_inferred_max_abs: Option<f64>,
    /// Median of the steps' `added_deviation_fidelity`.
    pub added_deviation_fidelity_median: Option<f64>,
    /// Median of the steps' `absolute_fidelity`.
    pub absolute_fidelity_median: Option<f64>,
}

impl StepReplayJson {
    fn new(step: &StepReplay) -> Self {
        Self {
            number: step.number,
            steady: step.steady,
            measured_ns: step.measured_ns,
            replayed_ns: step.replayed_ns,
            replayed_without_inferred_ns: step.replayed_without_inferred_ns,
            error: finite(step.error()),
            error_without_inferred: finite(step.error_without_inferred()),
            tasks: step.tasks,
            edges_by_kind: edge_counts(step.edges_by_kind.clone()),
            added_deviation_fidelity: step.added_deviation_fidelity,
            absolute_fidelity: step.absolute_fidelity,
            inferred_held_ns: step.replayed_ns - step.replayed_without_inferred_ns,
            critical_path: CriticalPathJson {
                tasks: step.critical_path_tasks,
                length_ns: step.critical_path_ns,
                host_ns: step.critical_path_host_ns,
                device_ns: step.critical_path_device_ns,
                wait_ns: step.critical_path_wait_ns,
            },
        }
    }
}

impl TypicalJson {
    pub(crate) fn new(typical: &TypicalStep) -> Self {
        let offered = typical.declined.is_none();
        Self {
            predicted_ns: offered.then_some(typical.predicted_ns),
            measured_median_ns: typical.measured_median_ns,
            error: if offered {
                finite(typical.error())
            } else {
                None
            },
            steps_used: typical.steps_used.clone(),
            tasks: typical.tasks,
            reason: typical.declined.clone(),
        }
    }
}

impl SummaryJson {
    fn new(steps: &[StepReplayJson]) -> Self {
        Self {
            steps: steps.len() as u64,
            error_median: median(steps.iter().map(|step| step.error)),
            error_max_abs: max_abs(steps.iter().map(|step| step.error)),
            error_without_inferred_median_abs: median(
                steps
                    .iter()
                    .map(|step| step.error_without_inferred.map(f64::abs)),
            ),
            error_without_inferred_max_abs: max_abs(
                steps.iter().map(|step| step.error_without_inferred),
            ),
            added_deviation_fidelity_median: median(
                steps
                    .iter()
                    .map(|step| finite(step.added_deviation_fidelity)),
            ),
            absolute_fidelity_median: median(
                steps.iter().map(|step| finite(step.absolute_fidelity)),
            ),
        }
    }
}

/// The `replay` document of `replay`, the self-replay of `window` (built from `trace`).
///
/// With `step_filter`, only the steps numbered so are listed and summarized; a number that
/// matches no step leaves `steps` empty, so callers check it against `window.steps` first.
/// The typical step always covers the whole window.
pub fn replay_json(
    trace: &Trace,
    window: &Window,
    replay: &ReplayReport,
    step_filter: Option<u64>,
) -> ReplayJson {
    let steps: Vec<StepReplayJson> = replay
        .steps
        .iter()
        .filter(|step| step_filter.is_none_or(|number| step.number == number))
        .map(StepReplayJson::new)
        .collect();
    ReplayJson {
        schema: "stepcast.replay/1",
        trace: TraceJson::new(trace),
        device: main_device(&devices(trace)),
        selected_step: step_filter,
        tasks: window.graph.task_count() as u64,
        launch_latency_ns: window.report.launch_latency_ns,
        launch_latency_samples: window.report.launch_latency_samples,
        dispatch_gap_ns: window.report.dispatch_gap_ns,
        graph_node_gaps_ns: window.report.graph_node_gaps_ns.iter().cloned().collect(),
        shared_gap_permille: window.report.shared_gap_permille,
        inferred_edges: window.report.inferred_edges,
        device_filling_tasks: window.report.device_filling_tasks,
        launch_queue: LaunchQueueJson::new(window),
        edges_by_kind: edge_counts(window.graph.edges_by_kind(|_| true)),
        summary: SummaryJson::new(&steps),
        steps,
        typical: replay.typical.as_ref().map(TypicalJson::new),
        notes: window.report.notes.clone(),
    }
}

#[cfg(test)]
mod tests {
    use stepcast::graph::EdgeKind;

    use super::*;

    fn step(
        number: u64,
        measured_ns: i64,
        replayed_ns: i64,
        added_deviation_fidelity: f64,
    ) -> StepReplay {
        StepReplay {
            number,
            measured_ns,
            replayed_ns,
            replayed_without_inferred_ns: replayed_ns,
            tasks: 3,
            edges_by_kind: vec![(EdgeKind::LaneOrder, 2), (EdgeKind::Launch, 1)],
            added_deviation_fidelity,
            absolute_fidelity: added_deviation_fidelity,
            critical_path_tasks: 2,
            critical_path_ns: 10,
            critical_path_host_ns: 6,
            critical_path_device_ns: 3,
            critical_path_wait_ns: 1,
            steady: true,
        }
    }

    /// The summary of three steps (errors +1%, -2%, undefined), filtered by `step_filter`:
    /// `[steps, error_median, error_max_abs, added_deviation_fidelity_median]`.
    fn check(step_filter: Option<u64>, expected: [Option<f64>; 4]) {
        let replay = ReplayReport {
            steps: vec![
                step(1, 1000, 1010, 1.0),
                step(2, 1000, 980, 0.5),
                step(3, 0, 5, 0.75),
            ],
            typical: None,
        };
        let document = replay_json(&Trace::default(), &Window::default(), &replay, step_filter);
        let summary = &document.summary;
        let actual = [
            Some(summary.steps as f64),
            summary.error_median,
            summary.error_max_abs,
            summary.added_deviation_fidelity_median,
        ];
        for (actual, expected) in actual.into_iter().zip(expected) {
            match (actual, expected) {
                (Some(a), Some(e)) => assert!((a - e).abs() < 1e-12, "{actual:?} != {expected:?}"),
                _ => assert_eq!(actual, expected),
            }
        }
        assert_eq!(
            summary.error_max_abs,
            summary.error_without_inferred_max_abs
        );
        assert_eq!(document.typical, None);
    }

    #[test]
    fn summary_skips_undefined_errors() {
        // Step 3 has no measured span: its error is null and left out of the aggregates.
        check(None, [Some(3.0), Some(-0.005), Some(0.02), Some(0.75)]);
    }

    #[test]
    fn step_filter_keeps_one_step() {
        check(Some(2), [Some(1.0), Some(-0.02), Some(0.02), Some(0.5)]);
        check(Some(3), [Some(1.0), None, None, Some(0.75)]);
    }

    #[test]
    fn edge_counts_list_every_kind() {
        let replay = ReplayReport {
            steps: vec![step(1, 1000, 1010, 1.0)],
            typical: None,
        };
        let document = replay_json(&Trace::default(), &Window::default(), &replay, None);
        let text = serde_json::to_string(&document.steps[0].edges_by_kind).expect("serializable");
        assert_eq!(text, r#"{"lane_order":2,"launch":1}"#);
        let json = serde_json::to_value(&document).expect("serializable");
        assert_eq!(
            json["steps"][0]["error"],
            json["steps"][0]["error_without_inferred"]
        );
        assert_eq!(json["steps"][0]["critical_path"]["length_ns"], 10);
    }
}
