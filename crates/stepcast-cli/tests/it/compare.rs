//! `stepcast compare` on the real before/after pair (ResNet-50, `num_workers` 0 then 4): the
//! JSON contract, agreement with `whatif`, `-o` written whole, determinism, and errors that
//! name the file.

use super::{TempDir, path_str, stepcast};

pub(super) const BEFORE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/kineto/kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_0/worker0.pt.trace.json.gz"
);
pub(super) const AFTER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/kineto/kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_4/worker0.pt.trace.json.gz"
);

#[test]
fn compare_json_contract_and_whatif_agreement() {
    let run = stepcast(&[
        "compare",
        BEFORE,
        AFTER,
        "--model",
        "prefetch_inputs",
        "--json",
    ]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["schema"], "stepcast.compare/2");
    assert_eq!(json["before"]["trace"]["file"], BEFORE);
    let before = json["before"]["steps"]["period_ns"]
        .as_i64()
        .expect("period");
    let after = json["after"]["steps"]["period_ns"]
        .as_i64()
        .expect("period");
    // The period is the mean of the per-step periods (each rounded to the ns).
    for side in ["before", "after"] {
        let steps = &json[side]["steps"];
        let periods: Vec<i64> = steps["periods_ns"]
            .as_array()
            .expect("periods")
            .iter()
            .filter_map(serde_json::Value::as_i64)
            .collect();
        let mean = periods.iter().sum::<i64>() / periods.len() as i64;
        assert!((mean - steps["period_ns"].as_i64().expect("period")).abs() <= 1);
    }
    let speedup = json["speedup"].as_f64().expect("speedup");
    assert!((speedup - before as f64 / after as f64).abs() < 1e-12);
    assert_eq!(json["delta_ns"].as_i64(), Some(after - before));
    for table in [
        "phases_host",
        "phases_device",
        "ops_host",
        "ops_device",
        "kernels",
    ] {
        let t = &json[table];
        let mut sum = t["remainder"]["delta_ns"].as_i64().expect("remainder");
        sum += t["others"]["delta_ns"].as_i64().unwrap_or(0);
        for row in t["rows"].as_array().expect("rows") {
            sum += row["delta_ns"].as_i64().expect("delta");
        }
        assert_eq!(Some(sum), t["total"]["delta_ns"].as_i64(), "{table}");
    }
    // The model's speedup is `whatif`'s, on the same trace.
    let whatif = stepcast(&["whatif", BEFORE, "prefetch_inputs", "--json"]);
    whatif.assert_success();
    let model = &json["models"][0];
    assert_eq!(model["model"], "prefetch_inputs");
    assert_eq!(model["predicted_speedup"], whatif.json()["speedup"]);
    assert_eq!(model["measured_ns"].as_i64(), Some(after));
    let error = model["error"].as_f64().expect("error");
    assert!(error.abs() < 0.10, "prefetch_inputs error {error}");
    assert_eq!(model["phases"].as_array().map(Vec::len), Some(6));
}

#[test]
fn compare_output_file_is_whole_and_deterministic() {
    let dir = TempDir::new("compare");
    let file = dir.path().join("compare.txt");
    let run = stepcast(&[
        "compare",
        BEFORE,
        AFTER,
        "--model",
        "amp",
        "-o",
        path_str(&file),
    ]);
    run.assert_success();
    assert!(run.stdout.is_empty());
    let written = std::fs::read_to_string(&file).expect("written");
    let again = stepcast(&["compare", BEFORE, AFTER, "--model", "amp"]);
    again.assert_success();
    assert_eq!(written, again.stdout);
    let json = stepcast(&["compare", BEFORE, AFTER, "--json"]).json();
    let speedup = json["speedup"].as_f64().expect("speedup");
    assert!(
        written.contains(&format!("Measured speedup {speedup:.3}×")),
        "{written}"
    );
    assert!(written.contains("Model amp against the measured outcome"));
    assert_eq!(dir.entries(), vec!["compare.txt".to_string()]);
}

#[test]
fn compare_errors_name_the_file_or_the_model() {
    let missing = "no/such/trace.json";
    let run = stepcast(&["compare", BEFORE, missing]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains(missing), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    let run = stepcast(&["compare", BEFORE, AFTER, "--model", "warp_drive"]);
    assert_eq!(run.code, Some(1));
    assert!(run.stderr.contains("warp_drive"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

/// Issue #25: a measured speedup comes with its interval (the extremes of the per-step periods
/// the document lists), a trace against itself is no measurable change in every format, and a
/// `--model` row is placed against the interval and carries its trust.
#[test]
fn compare_gives_the_spread_and_no_change_for_identical_steps() {
    let json = stepcast(&[
        "compare",
        BEFORE,
        AFTER,
        "--model",
        "prefetch_inputs",
        "--json",
    ])
    .json();
    let periods = |side: &str| -> Vec<i64> {
        json[side]["steps"]["periods_ns"]
            .as_array()
            .expect("periods")
            .iter()
            .filter_map(serde_json::Value::as_i64)
            .collect()
    };
    let (b, a) = (periods("before"), periods("after"));
    let extreme = |v: &[i64], max: bool| {
        let it = v.iter().copied();
        (if max { it.max() } else { it.min() }).expect("steps") as f64
    };
    let low = extreme(&b, false) / extreme(&a, true);
    let high = extreme(&b, true) / extreme(&a, false);
    let measured = &json["measured"];
    assert!((measured["low"].as_f64().expect("low") - low).abs() < 1e-12);
    assert!((measured["high"].as_f64().expect("high") - high).abs() < 1e-12);
    assert_eq!(
        measured["verdict"],
        if low > 1.0 {
            "faster"
        } else {
            "no_measurable_change"
        }
    );
    let speedup = json["speedup"].as_f64().expect("speedup");
    assert!(low <= speedup && speedup <= high);
    assert_eq!(json["warnings"].as_array().map(Vec::len), Some(0));
    let model = &json["models"][0];
    let predicted = model["predicted_speedup"].as_f64().expect("predicted");
    let placement = if predicted > high {
        "above"
    } else if predicted < low {
        "below"
    } else {
        "inside"
    };
    assert_eq!(model["placement"], placement);
    assert!(model["trust"]["bound_ns"].as_i64().is_some(), "{model}");
    assert!(model["trust"]["caveats"].is_array());

    let itself = stepcast(&["compare", BEFORE, BEFORE, "--json"]).json();
    assert_eq!(itself["measured"]["verdict"], "no_measurable_change");
    let text = stepcast(&["compare", BEFORE, BEFORE]);
    text.assert_success();
    assert!(
        text.stdout.contains("No measurable change"),
        "{}",
        text.stdout
    );
    assert!(!text.stdout.contains("Measured speedup"), "{}", text.stdout);
    let html = stepcast(&["compare", BEFORE, BEFORE, "--format", "html"]);
    html.assert_success();
    assert!(html.stdout.contains("No measurable change"));
}

/// A ResNet-50 training trace (V100) against a ViT inference trace (H100): refused, with the
/// way out in the one-line error; forced, the refusals lead the text and stay in the JSON.
#[test]
fn compare_refuses_unrelated_workloads_unless_forced() {
    const VIT: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/TraceLens/tests/traces/h100/Falconsai_nsfw_image_detection__1016002.json.gz"
    );
    let run = stepcast(&["compare", BEFORE, VIT]);
    assert_eq!(run.code, Some(1));
    assert!(run.stdout.is_empty());
    assert!(run.stderr.contains("not one workload"), "{}", run.stderr);
    assert!(run.stderr.contains("--force"), "{}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);

    let forced = stepcast(&["compare", BEFORE, VIT, "--force", "--json"]);
    forced.assert_success();
    let json = forced.json();
    let warnings = json["warnings"].as_array().expect("warnings");
    let refused: Vec<&str> = warnings
        .iter()
        .filter(|w| w["refused"] == true)
        .filter_map(|w| w["kind"].as_str())
        .collect();
    assert_eq!(refused, vec!["training_inference", "names"]);
    assert!(warnings.iter().any(|w| w["kind"] == "spread_unknown"));
    assert_eq!(json["measured"]["verdict"], "spread_unknown");
    let text = stepcast(&["compare", BEFORE, VIT, "--force"]);
    assert!(text.stdout.starts_with("WARNING"), "{}", text.stdout);
}
