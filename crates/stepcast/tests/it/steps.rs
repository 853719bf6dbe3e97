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

/// A trace without step markers takes the training loop's iterations as its steps: on the
/// program that never calls `prof.step()` (`cpu-step-ranges/userstep`), a step ends where each
/// `Optimizer.step#...` range ends, as read again from the file with serde_json alone, and the
/// steady steps are the iterations its own `train_step` ranges time (`--step-range`): the
/// same period within 5 %, where the whole window as one step was 6 iterations and the setup.
/// On tb_plugin's `autograd_api` ResNet-50 (PyTorch 1.8's autograd profiler), the 1.57 s
/// cold-start launch is in the warm-up step, out of the steady state.
#[test]
fn a_trace_without_markers_takes_the_loops_iterations_as_steps() {
    let relative = "stepcast/cpu-step-ranges/userstep.json.gz";
    let events = raw_events(relative);
    let ends_us = |prefix: &str| -> Vec<f64> {
        let mut ends: Vec<f64> = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .map(|e| e["ts"].as_f64().unwrap_or(0.0) + e["dur"].as_f64().unwrap_or(0.0))
            .collect();
        ends.sort_by(f64::total_cmp);
        ends
    };
    let updates = ends_us("Optimizer.step#");
    assert!(updates.len() >= 3, "{} updates", updates.len());
    let (_, window) = load(relative);
    assert_eq!(window.steps.len(), updates.len());
    assert!(window.steps.iter().all(|s| !s.synthetic));
    assert!(
        window
            .report
            .notes
            .iter()
            .any(|n| n.starts_with(stepcast::INFERRED_STEPS_NOTE) && n.contains("Optimizer.step#"))
    );
    // Time between consecutive step ends, against the file's: within 2 µs.
    for (pair, ends) in window.steps.windows(2).zip(updates.windows(2)) {
        let ours_ns = pair[1].marker_end_ns - pair[0].marker_end_ns;
        let file_ns = ((ends[1] - ends[0]) * 1e3).round() as i64;
        assert!((ours_ns - file_ns).abs() <= 2_000, "{ours_ns} vs {file_ns}");
    }
    // The same steady period as the program's own per-iteration ranges give.
    let period = |window: &stepcast::Window| {
        let report = self_replay(window).unwrap_or_else(|e| panic!("{e}"));
        let mut spans: Vec<i64> = report
            .steps
            .iter()
            .filter(|s| s.steady)
            .map(|s| s.measured_ns)
            .collect();
        spans.sort_unstable();
        spans[spans.len() / 2]
    };
    let path = super::testdata(relative);
    let options = stepcast_trace::ReadOptions {
        step_range: Some(regex::Regex::new("^train_step$").expect("regex")),
        ..stepcast_trace::ReadOptions::default()
    };
    let ranged = stepcast_trace::read_trace_with(&path, &options).unwrap_or_else(|e| panic!("{e}"));
    let ranged = build(&ranged, &BuildOptions::default());
    let (inferred, by_ranges) = (period(&window), period(&ranged));
    assert!(
        (inferred as f64 / by_ranges as f64 - 1.0).abs() < 0.05,
        "{inferred} vs {by_ranges}"
    );

    let (_, window) = load(
        "kineto/tb_plugin/samples/resnet50_autograd_api_num_workers_0/worker0.pt.trace.json.gz",
    );
    assert_eq!(window.steps.len(), 6);
    let report = self_replay(&window).unwrap_or_else(|e| panic!("{e}"));
    let steady: Vec<_> = report.steps.iter().filter(|s| s.steady).collect();
    assert!(steady.len() >= 3 && steady.iter().all(|s| s.number > 0));
    assert!(steady.iter().all(|s| s.measured_ns < 500_000_000));
}

/// An inference loop without markers or an optimizer: its steps run from one `DataLoader`
/// draw's start to the next's (`cpu-step-ranges/inference`, recorded here: 8 batches, and a
/// ninth draw that found the loader exhausted), each as long as the file says.
#[test]
fn an_inference_loop_takes_its_batches_as_steps() {
    let relative = "stepcast/cpu-step-ranges/inference.json.gz";
    let mut draws_us: Vec<f64> = raw_events(relative)
        .iter()
        .filter(|e| {
            e["ph"] == "X"
                && e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("enumerate(DataLoader)#"))
        })
        .map(|e| e["ts"].as_f64().unwrap_or(0.0))
        .collect();
    draws_us.sort_by(f64::total_cmp);
    assert_eq!(draws_us.len(), 9);
    let (_, window) = load(relative);
    assert_eq!(window.steps.len(), draws_us.len() - 1);
    for (step, draws) in window.steps.iter().zip(draws_us.windows(2)) {
        let file_ns = ((draws[1] - draws[0]) * 1e3).round() as i64;
        let ours_ns = step.marker_end_ns - step.start_ns;
        assert!((ours_ns - file_ns).abs() <= 2_000, "{ours_ns} vs {file_ns}");
    }
    assert!(window.report.notes.iter().any(|n| {
        n.starts_with(stepcast::INFERRED_STEPS_NOTE) && n.contains("enumerate(DataLoader)#")
    }));
}
