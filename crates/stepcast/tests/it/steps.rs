//! Issue #11: a step lasts from its marker's start to the later of the marker's end and the end
//! of the last device work launched inside it; a last step holding the profiler's teardown is
//! measured as recorded but kept out of the steady state.

use stepcast::graph::{BuildOptions, build};
use stepcast::replay::{self_replay, steady_steps};

use super::compare::{independent_steps, raw_events};
use super::{HTA, load};

/// `measured_ns` of every step, against the same reading done with serde_json alone
/// (`../shared/tools/independent_steps.py`'s), on real traces with `ProfilerStep` markers.
#[test]
fn measured_steps_match_an_independent_reading() {
    for relative in [
        format!("{HTA}/nccl_parser_config/nccl_data.json.gz"),
        format!("{HTA}/trace_diff/control/control.json.gz"),
        format!("{HTA}/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"),
        "kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_4/worker0.pt.trace.json.gz"
            .to_string(),
        "TraceLens/tests/traces/h100/Falconsai_nsfw_image_detection__1016002.json.gz".to_string(),
    ] {
        let expected = independent_steps(&raw_events(&relative));
        let (_, window) = load(&relative);
        let report = self_replay(&window).unwrap_or_else(|e| panic!("{relative}: {e}"));
        assert_eq!(report.steps.len(), expected.len(), "{relative}");
        for (step, &(_, _, span_ns)) in report.steps.iter().zip(&expected) {
            // Microsecond decimals read two ways: within 2 µs.
            assert!(
                (step.measured_ns - span_ns).abs() <= 2_000,
                "{relative} step {}: {} vs {span_ns}",
                step.number,
                step.measured_ns
            );
        }
    }
}

/// A derived case (the real nccl_data trace, its last marker stretched in memory by three
/// median steps of host time, as a profiler's teardown does): the last step is measured whole,
/// said to hold the teardown and left out of the steady state; the unchanged trace has none.
#[test]
fn a_teardown_step_is_measured_but_not_steady() {
    let relative = format!("{HTA}/nccl_parser_config/nccl_data.json.gz");
    let (mut trace, window) = load(&relative);
    assert!(window.steps.iter().all(|s| !s.teardown));
    let n = trace.steps.len();
    assert!(n >= 3);
    let mut spans: Vec<i64> = trace.steps.iter().map(|s| s.dur_ns).collect();
    spans.sort_unstable();
    let median = spans[n / 2];
    let last = trace.steps.last_mut().expect("steps");
    last.dur_ns += 3 * median;
    let stretched_end = last.end_ns();
    let window = build(&trace, &BuildOptions::default());
    let last = window.steps.last().expect("steps");
    assert!(last.teardown);
    assert!(window.report.notes.iter().any(|n| n.contains("teardown")));
    assert!(!steady_steps(&window).contains(&(n - 1)));
    let report = self_replay(&window).unwrap_or_else(|e| panic!("{e}"));
    let measured = report.steps[n - 1].measured_ns;
    assert_eq!(measured, stretched_end - last.start_ns);
    // The replay carries the host's tail after its last task: the step replays whole.
    let replayed = report.steps[n - 1].replayed_ns;
    assert!(
        (replayed - measured).abs() * 100 <= measured,
        "{replayed} vs {measured}"
    );
}
