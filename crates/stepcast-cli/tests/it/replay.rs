//! `stepcast replay` on a real trace.

use super::{TRACE, TempDir, path_str, stepcast};

#[test]
fn replay_json_has_the_documented_fields() {
    let run = stepcast(&["replay", TRACE, "--json"]);
    run.assert_success();
    assert!(run.stdout.ends_with("}\n"), "JSON ends with a newline");
    let json = run.json();
    assert_eq!(json["schema"], "stepcast.replay/1");
    assert_eq!(json["trace"]["file"], TRACE);
    assert!(
        json["device"]["name"]
            .as_str()
            .is_some_and(|n| n.contains("A100"))
    );
    assert!(json["launch_latency_ns"].as_i64().is_some_and(|ns| ns > 0));
    assert!(json["inferred_edges"].as_u64().is_some());

    let steps = json["steps"].as_array().expect("steps is an array");
    assert_eq!(steps.len(), 1);
    let step = &steps[0];
    assert_eq!(step["number"], 100);
    let measured = step["measured_ns"].as_i64().expect("measured_ns");
    assert!(measured > 0);
    let replayed = step["replayed_ns"].as_i64().expect("replayed_ns");
    assert!(replayed > 0);
    assert!(
        step["replayed_without_inferred_ns"]
            .as_i64()
            .is_some_and(|ns| ns > 0)
    );
    let error = step["error"].as_f64().expect("error");
    let expected = replayed as f64 / measured as f64 - 1.0;
    assert!((error - expected).abs() < 1e-12);
    assert!(error.abs() < 0.5, "self-replay error {error}");
    let fidelity = step["added_deviation_fidelity"]
        .as_f64()
        .expect("added_deviation_fidelity");
    assert!((0.0..=1.0).contains(&fidelity));
    let edges = step["edges_by_kind"].as_object().expect("edges_by_kind");
    for kind in [
        "lane_order",
        "launch",
        "host_sync",
        "event_wait",
        "inferred_stream_wait",
        "inferred_host_sync",
    ] {
        assert!(edges[kind].as_u64().is_some(), "edges_by_kind.{kind}");
    }
    assert!(edges["launch"].as_u64().is_some_and(|n| n > 0));
    let path = &step["critical_path"];
    for field in ["tasks", "length_ns", "host_ns", "device_ns", "wait_ns"] {
        assert!(path[field].as_i64().is_some(), "critical_path.{field}");
    }

    let typical = &json["typical"];
    assert!(typical["predicted_ns"].as_i64().is_some_and(|ns| ns > 0));
    assert_eq!(typical["measured_median_ns"].as_i64(), Some(measured));
    assert_eq!(typical["steps_used"], serde_json::json!([100]));
    let summary = &json["summary"];
    assert_eq!(summary["error_median"].as_f64(), Some(error));
    assert_eq!(
        summary["added_deviation_fidelity_median"].as_f64(),
        Some(fidelity)
    );
}

#[test]
fn replay_output_is_byte_identical_across_runs() {
    for args in [
        &["replay", TRACE, "--json"][..],
        &["replay", TRACE][..],
        &["info", TRACE, "--json"][..],
    ] {
        let first = stepcast(args);
        first.assert_success();
        let second = stepcast(args);
        assert_eq!(first.stdout, second.stdout, "stepcast {args:?}");
    }
}

#[test]
fn replay_text_opens_with_a_summary_then_the_step_table() {
    let run = stepcast(&["replay", TRACE]);
    run.assert_success();
    let words: Vec<&str> = run.stdout.split_whitespace().collect();
    assert!(
        words
            .join(" ")
            .starts_with(&format!("Replayed 1 step (17 tasks) of {TRACE} on NVIDIA")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Typical step (from step 100)"));
    assert!(run.stdout.contains("\nSteps\n"));
    assert!(run.stdout.contains("launch latency calibrated from"));
    for line in run.stdout.lines() {
        assert!(
            line.chars().count() <= 120 || line.contains(TRACE),
            "line too wide: {line}"
        );
    }
}

#[test]
fn replay_step_selects_one_step() {
    let run = stepcast(&["replay", TRACE, "--step", "100", "--json"]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["selected_step"], 100);
    assert_eq!(json["steps"].as_array().map(Vec::len), Some(1));
}

#[test]
fn replay_unknown_step_lists_the_steps() {
    let dir = TempDir::new("unknown-step");
    let out = dir.path().join("out.json");
    let run = stepcast(&[
        "replay",
        TRACE,
        "--step",
        "7",
        "--json",
        "-o",
        path_str(&out),
    ]);
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.starts_with("stepcast: error: "),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("no step 7"), "{}", run.stderr);
    assert!(run.stderr.contains("its steps are 100"), "{}", run.stderr);
    assert!(dir.entries().is_empty());
}

#[test]
fn replay_output_file_matches_stdout() {
    let dir = TempDir::new("output-file");
    let out = dir.path().join("replay.json");
    let run = stepcast(&["replay", TRACE, "--json", "-o", path_str(&out)]);
    run.assert_success();
    assert!(run.stdout.is_empty(), "-o keeps stdout empty");
    let written = std::fs::read_to_string(&out).expect("output written");
    assert_eq!(written, stepcast(&["replay", TRACE, "--json"]).stdout);
    // Replacing an existing file leaves only the new file behind.
    stepcast(&["replay", TRACE, "--json", "-o", path_str(&out)]).assert_success();
    assert_eq!(dir.entries(), ["replay.json"]);
}

#[test]
fn output_into_a_missing_directory_is_an_error() {
    let dir = TempDir::new("missing-dir");
    let out = dir.path().join("no/such/dir/out.json");
    let run = stepcast(&["replay", TRACE, "-o", path_str(&out)]);
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("cannot write"), "{}", run.stderr);
    assert!(run.stderr.contains("out.json"), "{}", run.stderr);
}
