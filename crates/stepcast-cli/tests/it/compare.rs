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
