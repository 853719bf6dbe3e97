//! `stepcast info`, `replay` and `analyze` on the MXNet profiler sample recorded here
//! (`testdata/mxnet/mlp_cpu/profile.json.gz`); expected counts read with `serde_json`.

use std::io::Read;

use super::stepcast;

const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/mxnet/mlp_cpu/profile.json.gz"
);

fn records() -> Vec<serde_json::Value> {
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(SAMPLE).expect("sample"))
        .read_to_string(&mut text)
        .expect("gzip");
    let doc: serde_json::Value = serde_json::from_str(&text).expect("json");
    doc["traceEvents"].as_array().expect("traceEvents").clone()
}

#[test]
fn info_says_what_was_read_and_skipped() {
    let records = records();
    let count = |f: &dyn Fn(&serde_json::Value) -> bool| records.iter().filter(|r| f(r)).count();
    let ops = count(&|r| r["ph"] == "B" && r["cat"] == "operator");
    let calls = count(&|r| r["ph"] == "b" && r["cat"] == "MXNET_C_API");
    let duplicates =
        count(&|r| matches!(r["ph"].as_str(), Some("b" | "e")) && r["cat"] == "operator");
    let api_counters = count(&|r| r["ph"] == "C" && r["cat"] == "MXNET_C_API");
    let run = stepcast(&["info", "--json", SAMPLE]);
    run.assert_success();
    let info = run.json();
    assert_eq!(info["events_by_kind"]["cpu_op"].as_u64(), Some(ops as u64));
    assert_eq!(
        info["events_by_kind"]["runtime_call"].as_u64(),
        Some(calls as u64)
    );
    let skipped = info["skipped"].as_object().expect("skipped");
    let skipped_total: u64 = skipped.values().filter_map(|v| v.as_u64()).sum();
    assert_eq!(
        skipped_total,
        (duplicates + api_counters) as u64,
        "{skipped:?}"
    );
    assert_eq!(info["steps"].as_array().map(Vec::len), Some(3));
    let notes = info["notes"].as_array().expect("notes");
    assert!(
        notes.iter().any(|n| n
            .as_str()
            .is_some_and(|n| n.starts_with("read as MXNet profiler JSON"))),
        "{notes:?}"
    );
    let text = stepcast(&["info", SAMPLE]);
    text.assert_success();
    assert!(text.stdout.contains("read as MXNet profiler JSON"));
}

#[test]
fn self_replay_holds_each_step_within_two_percent_without_inferred_edges() {
    let run = stepcast(&["replay", "--json", SAMPLE]);
    run.assert_success();
    let json = run.json();
    let steps = json["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 3);
    for step in steps {
        let measured = step["measured_ns"].as_i64().expect("measured_ns");
        let replayed = step["replayed_without_inferred_ns"]
            .as_i64()
            .expect("replayed_without_inferred_ns");
        assert!(
            (replayed as f64 / measured as f64 - 1.0).abs() <= 0.02,
            "step {}: {replayed} vs {measured}",
            step["number"]
        );
    }
}

#[test]
fn analyze_runs_on_the_sample() {
    let run = stepcast(&["analyze", "--json", SAMPLE]);
    run.assert_success();
    assert_eq!(run.json()["schema"], "stepcast.analyze/1");
    let text = stepcast(&["analyze", SAMPLE]);
    text.assert_success();
}
