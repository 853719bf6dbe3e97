//! The MXNet profiler reader on the CPU sample recorded here (`testdata/mxnet/mlp_cpu/`,
//! `record.py`), against the same bytes read by `serde_json`; and its bad inputs.

use std::collections::BTreeMap;
use std::path::Path;

use stepcast_trace::{EventKind, ReadOptions, read_trace, read_trace_bytes, read_trace_with};

use crate::TempDir;

fn sample() -> std::path::PathBuf {
    super::testdata().join("mxnet/mlp_cpu/profile.json.gz")
}

/// The sample's records, read by `serde_json`.
fn records() -> Vec<serde_json::Value> {
    let doc: serde_json::Value =
        serde_json::from_slice(&super::decompressed(&sample())).expect("json");
    doc["traceEvents"].as_array().expect("traceEvents").clone()
}

/// `(name, tid) → (count, summed µs)` of the begin/end pairs `keep` selects, paired in file
/// order per (pid, tid, id).
fn pairs(
    records: &[serde_json::Value],
    keep: impl Fn(&serde_json::Value) -> bool,
) -> BTreeMap<(String, u64), (u64, i64)> {
    let mut open: BTreeMap<(u64, u64, Option<u64>), Vec<i64>> = BTreeMap::new();
    let mut out: BTreeMap<(String, u64), (u64, i64)> = BTreeMap::new();
    for r in records.iter().filter(|r| keep(r)) {
        let key = (
            r["pid"].as_u64().expect("pid"),
            r["tid"].as_u64().expect("tid"),
            r["id"].as_u64(),
        );
        let ts = r["ts"].as_i64().expect("ts");
        match r["ph"].as_str() {
            Some("B" | "b") => open.entry(key).or_default().push(ts),
            Some("E" | "e") => {
                let begin = open.get_mut(&key).and_then(Vec::pop).expect("begin");
                let slot = out
                    .entry((r["name"].as_str().expect("name").to_string(), key.1))
                    .or_default();
                slot.0 += 1;
                slot.1 += ts - begin;
            }
            _ => {}
        }
    }
    out
}

/// The same from the trace: events of `kind` by name and the thread hash the file wrote.
fn events_of(
    trace: &stepcast_trace::Trace,
    kind: EventKind,
) -> BTreeMap<(String, u64), (u64, i64)> {
    let mut out: BTreeMap<(String, u64), (u64, i64)> = BTreeMap::new();
    for e in trace.events.iter().filter(|e| e.kind == kind) {
        let lane = &trace.lanes[e.lane.index()];
        let tid: u64 = lane
            .file_tid
            .as_deref()
            .and_then(|t| t.parse().ok())
            .expect("the thread hash as written");
        let slot = out
            .entry((trace.name(e.name).to_string(), tid))
            .or_default();
        slot.0 += 1;
        assert_eq!(e.dur_ns % 1000, 0);
        slot.1 += e.dur_ns / 1000;
    }
    out
}

#[test]
fn operators_calls_memory_and_steps_match_an_independent_reading() {
    let records = records();
    // The device slots' pids, from the `M` records.
    let devices: Vec<u64> = records
        .iter()
        .filter(|r| r["ph"] == "M")
        .filter(|r| {
            let name = r["args"]["name"].as_str().unwrap_or("");
            name.starts_with("cpu") || name.starts_with("gpu")
        })
        .filter_map(|r| r["pid"].as_u64())
        .collect();
    let ops = pairs(&records, |r| {
        matches!(r["ph"].as_str(), Some("B" | "E"))
            && r["pid"].as_u64().is_some_and(|p| devices.contains(&p))
    });
    let calls = pairs(&records, |r| {
        matches!(r["ph"].as_str(), Some("b" | "e")) && r["cat"] == "MXNET_C_API"
    });
    let trace = read_trace(&sample()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(events_of(&trace, EventKind::CpuOp), ops);
    assert_eq!(events_of(&trace, EventKind::RuntimeCall), calls);
    assert_eq!(ops.values().map(|v| v.0).sum::<u64>(), 96);
    assert_eq!(calls.values().map(|v| v.0).sum::<u64>(), 231);
    assert_eq!(trace.events.len(), 96 + 231);
    // Ops run on two threads: the engine's worker and, for a few, the Python thread.
    let threads: std::collections::BTreeSet<u64> = ops.keys().map(|k| k.1).collect();
    assert_eq!(threads.len(), 2);

    // Steps: the `train` domain's ranges, in order, with their recorded times.
    let train: Vec<&serde_json::Value> = records.iter().filter(|r| r["cat"] == "train").collect();
    assert_eq!(train.len(), 6);
    assert_eq!(trace.steps.len(), 3);
    let origin_us = records
        .iter()
        .filter(|r| matches!(r["ph"].as_str(), Some("B" | "b")))
        .filter(|r| {
            r["cat"] != "operator" || r["pid"].as_u64().is_some_and(|p| devices.contains(&p))
        })
        .filter_map(|r| r["ts"].as_i64())
        .min()
        .expect("a begin");
    for (step, range) in trace.steps.iter().zip(train.chunks(2)) {
        let (begin, end) = (
            range[0]["ts"].as_i64().unwrap_or(0),
            range[1]["ts"].as_i64().unwrap_or(0),
        );
        assert_eq!(
            trace.name(step.name),
            range[0]["name"].as_str().unwrap_or("")
        );
        assert_eq!(step.start_ns, (begin - origin_us) * 1000);
        assert_eq!(step.dur_ns, (end - begin) * 1000);
    }

    // Memory: every `Device Storage` counter sample, its value the total in use.
    let counters: Vec<i64> = records
        .iter()
        .filter(|r| r["ph"] == "C" && r["cat"] == "Device Storage")
        .filter_map(|r| r["args"]["Memory: cpu/0"].as_i64())
        .collect();
    assert_eq!(trace.memory.len(), counters.len());
    assert_eq!(trace.memory.len(), 108);
    assert!(trace.memory.iter().all(|m| m.device == -1));
    let net: i64 = trace.memory.iter().map(|m| m.bytes).sum();
    assert_eq!(Some(net), counters.last().copied());
    let mut totals: Vec<i64> = trace
        .memory
        .iter()
        .filter_map(|m| m.total_allocated)
        .collect();
    let mut expected = counters.clone();
    totals.sort_unstable();
    expected.sort_unstable();
    assert_eq!(totals, expected);
}

#[test]
fn hashes_beyond_i64_are_read_whole() {
    let records = records();
    // The sample itself holds a pid and a tid beyond i64 (the `Device Storage` category's hash,
    // the Python thread's).
    let big = |key: &str| {
        records
            .iter()
            .filter_map(|r| r[key].as_u64())
            .filter(|v| *v > i64::MAX as u64)
            .max()
    };
    let (Some(pid), Some(tid)) = (big("pid"), big("tid")) else {
        panic!("the sample has a pid and a tid beyond i64");
    };
    let trace = read_trace(&sample()).unwrap_or_else(|e| panic!("{e}"));
    assert!(pid > i64::MAX as u64);
    assert!(
        trace
            .lanes
            .iter()
            .any(|l| l.file_tid.as_deref() == Some(tid.to_string().as_str()))
    );
    // Hand-made: pids and tids at u64::MAX, and one beyond u64 (counted, never wrapped).
    let max = u64::MAX;
    let text = format!(
        r#"{{"traceEvents": [
  {{"ph": "M", "args": {{"name": "cpu/0"}}, "pid": 0, "name": "process_name"}},
  {{"ph": "M", "args": {{"name": "MXNET_C_API"}}, "pid": {max}, "name": "process_name"}},
  {{"name": "A", "cat": "operator", "ph": "B", "ts": 10, "pid": 0, "tid": {max}}},
  {{"name": "A", "cat": "operator", "ph": "E", "ts": 15, "pid": 0, "tid": {max}}},
  {{"name": "MXNDArrayFree", "cat": "MXNET_C_API", "ph": "b", "ts": 11, "id": {max}, "pid": {max}, "tid": {max}}},
  {{"name": "MXNDArrayFree", "cat": "MXNET_C_API", "ph": "e", "ts": 12, "id": {max}, "pid": {max}, "tid": {max}}},
  {{"name": "B", "cat": "operator", "ph": "B", "ts": 20, "pid": 0, "tid": 99999999999999999999}},
  {{"name": "B", "cat": "operator", "ph": "E", "ts": 21, "pid": 0, "tid": 99999999999999999999}}
], "displayTimeUnit": "ms"}}"#
    );
    let trace =
        read_trace_bytes(text.as_bytes(), Path::new("hand.json")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(trace.events.len(), 2);
    assert_eq!(trace.lanes.len(), 1);
    assert_eq!(
        trace.lanes[0].file_tid.as_deref(),
        Some(max.to_string().as_str())
    );
    assert_eq!(
        trace.diagnostics.total_skipped(),
        2,
        "{:?}",
        trace.diagnostics
    );
}

#[test]
fn step_range_replaces_the_train_domain() {
    let options = ReadOptions {
        step_range: Some(regex::Regex::new("^step[12]$").expect("regex")),
        ..ReadOptions::default()
    };
    let trace = read_trace_with(&sample(), &options).unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = trace.steps.iter().map(|s| trace.name(s.name)).collect();
    assert_eq!(names, ["step1", "step2"]);
    assert_eq!(trace.steps[0].number, 0);
    // The range not taken is an annotation.
    let annotations: Vec<&str> = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::UserAnnotation)
        .map(|e| trace.name(e.name))
        .collect();
    assert_eq!(annotations, ["step0"]);
}

#[test]
fn truncated_and_empty_files_are_one_line_errors() {
    let dir = TempDir::new("mxnet-bad");
    let bytes = super::decompressed(&sample());
    let cases = [
        ("truncated.json", &bytes[..bytes.len() / 2]),
        ("empty.json", &bytes[..0]),
    ];
    for (name, content) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, content).expect("write");
        let error = read_trace(&path).expect_err(name).to_string();
        assert_eq!(error.lines().count(), 1, "{error}");
        assert!(error.contains(name), "{error}");
    }
}
