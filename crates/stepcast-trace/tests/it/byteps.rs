//! The BytePS `comm.json` reader and its join with a framework trace. BytePS needs its
//! parameter servers to run and cannot be recorded here, so no recording is used:
//!
//! - the **documented example** is the two records of BytePS's `docs/timeline.md` ("Trace
//!   Format"), wrapped in the `{"traceEvents": [...]}` that `BytePSGlobal::OutputTraces` writes
//!   around its records;
//! - the other inputs are **synthetic**, made by this file in the layout `EmitTrace`
//!   (`byteps/common/global.cc`) writes, and labelled so; the join's is placed on the real
//!   PyTorch trace of `testdata/horovod/gloo_mlp_2proc/rank0.pt.trace.json.gz`, each tensor
//!   enqueued just after one of its recorded `AccumulateGrad` ops.
//!
//! Expected counts come from the same bytes read by `serde_json`, never from stepcast.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stepcast_trace::byteps::{self, join::join};
use stepcast_trace::{LinkKind, ReadError, ReadOptions, read_trace, read_trace_with};

use super::TempDir;

/// BytePS `docs/timeline.md`'s example records, verbatim, in the file's object.
const DOCUMENTED: &str = r#"{
    "traceEvents": [
{
    "ph": "X",
    "args": {
        "name": "Comm.byteps.gradient_0"
    },
    "pid": "Comm.byteps.gradient_0",
    "name": "Comm.byteps.gradient_0",
    "ts": 1574685989504865,
    "dur": 24026,
    "tid": "total"
},
{
    "ph": "X",
    "args": {
        "name": "Comm.byteps.gradient_0"
    },
    "pid": "Comm.byteps.gradient_0",
    "name": "Comm.byteps.gradient_0.BROADCAST",
    "ts": 1574685984662375,
    "dur": 1074,
    "tid": "26148864"
}
    ],
    "displayTimeUnit": "ms"
}
"#;

/// One record as `EmitTrace` writes it.
fn emit(tensor: &str, key: Option<u64>, stage: &str, ts: i64, dur: i64) -> String {
    let pid = format!("Comm.{tensor}");
    let (tid, name) = match key {
        None => ("total".to_string(), pid.clone()),
        Some(key) => (key.to_string(), format!("{pid}.{stage}")),
    };
    format!(
        "        {{\n            \"ph\": \"X\",\n            \"args\": {{\n                \"name\": \"{pid}\"\n            }},\n            \"pid\": \"{pid}\",\n            \"name\": \"{name}\",\n            \"ts\": {ts},\n            \"dur\": {dur},\n            \"tid\": \"{tid}\",\n            \"cat\": \"Comm\"\n        }}"
    )
}

/// The file `OutputTraces` writes around the records.
fn document(records: &[String]) -> String {
    format!(
        "{{\n    \"traceEvents\": [\n{}\n\n    ],\n    \"displayTimeUnit\": \"ms\"\n}}\n",
        records.join(",\n")
    )
}

/// The stages a worker's root GPU runs for one partition (one machine of one GPU: no
/// reduce or broadcast), with their durations in µs.
const ROOT_STAGES: [(&str, i64); 4] = [
    ("COORDINATE_PUSH", 3),
    ("PUSH", 40),
    ("PULL", 35),
    ("COPYH2D", 4),
];

/// Synthetic: each (tensor, partitions, enqueue time) runs [`ROOT_STAGES`] back to back per
/// partition, and a total.
fn synthetic(rounds: &[(String, u64, u16, i64)]) -> String {
    let mut records = Vec::new();
    for (tensor, declared, partitions, enqueue) in rounds {
        let mut end = *enqueue;
        for p in 0..*partitions {
            let key = (declared << 16) + u64::from(p);
            let mut at = enqueue + i64::from(p);
            for (stage, dur) in ROOT_STAGES {
                records.push(emit(tensor, Some(key), stage, at, dur));
                at += dur;
            }
            end = end.max(at);
        }
        records.push(emit(tensor, None, "", *enqueue, end - enqueue));
    }
    document(&records)
}

fn write(dir: &TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write");
    path
}

#[test]
fn the_documented_example_reads_as_one_broadcast_of_partition_0() {
    let dir = TempDir::new("byteps-doc");
    let path = write(&dir, "comm.json", DOCUMENTED);
    let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(trace.events.len(), 1);
    let event = &trace.events[0];
    assert_eq!(trace.name(event.name), "BROADCAST");
    assert_eq!(event.dur_ns, 1074 * 1000);
    assert_eq!(trace.origin_ns, 1574685984662375 * 1000);
    let (_, tensors) = &trace.comm_tensors[0];
    assert_eq!(tensors[0].name, "byteps.gradient_0");
    // tid 26148864 is key 399 << 16: partition 0 of declared key 399.
    assert_eq!(tensors[0].partition, Some(0));
    assert_eq!(byteps::partition_of(26148864), 0);
    assert!(
        trace
            .diagnostics
            .skipped
            .keys()
            .any(|k| k.contains("per-tensor totals"))
    );
}

#[test]
fn stages_per_tensor_and_partition_match_an_independent_reading() {
    // Synthetic (see the module's doc): 3 tensors, one cut in 3 partitions, 2 steps.
    let rounds: Vec<(String, u64, u16, i64)> = (0..2)
        .flat_map(|step| {
            (0..3u64).map(move |k| {
                (
                    format!("Gradient.layer{k}.weight"),
                    k,
                    if k == 1 { 3 } else { 1 },
                    1_700_000_000_000_000 + step * 10_000 + k as i64 * 100,
                )
            })
        })
        .collect();
    let text = synthetic(&rounds);
    let dir = TempDir::new("byteps-synthetic");
    let path = write(&dir, "comm.json", &text);
    let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));

    let value: serde_json::Value = serde_json::from_str(&text).expect("whole JSON");
    let records = value["traceEvents"].as_array().expect("events");
    let stages: Vec<&serde_json::Value> = records.iter().filter(|r| r["tid"] != "total").collect();
    // Per (tensor, stage): count and summed duration.
    let mut want: BTreeMap<(String, String), (usize, i64)> = BTreeMap::new();
    for r in &stages {
        let pid = r["pid"].as_str().expect("pid");
        let name = r["name"].as_str().expect("name");
        let stage = name.strip_prefix(&format!("{pid}.")).expect("stage name");
        let entry = want
            .entry((pid["Comm.".len()..].to_string(), stage.to_string()))
            .or_default();
        entry.0 += 1;
        entry.1 += r["dur"].as_i64().expect("dur") * 1000;
    }
    let mut got: BTreeMap<(String, String), (usize, i64)> = BTreeMap::new();
    for (event, tensors) in &trace.comm_tensors {
        let e = &trace.events[event.index()];
        let entry = got
            .entry((tensors[0].name.clone(), trace.name(e.name).to_string()))
            .or_default();
        entry.0 += 1;
        entry.1 += e.dur_ns;
    }
    assert_eq!(got, want);
    assert_eq!(trace.events.len(), stages.len());
    // Partitions: the distinct keys of each tensor.
    let keys: std::collections::BTreeSet<(String, u32)> = stages
        .iter()
        .map(|r| {
            let key: u64 = r["tid"].as_str().expect("tid").parse().expect("key");
            (
                r["pid"].as_str().expect("pid").to_string(),
                (key & 0xffff) as u32,
            )
        })
        .collect();
    let got_partitions: std::collections::BTreeSet<(String, u32)> = trace
        .comm_tensors
        .iter()
        .map(|(_, t)| {
            (
                format!("Comm.{}", t[0].name),
                t[0].partition.expect("partition"),
            )
        })
        .collect();
    assert_eq!(got_partitions, keys);
    assert_eq!(keys.len(), 5);
    // Each partition's stages linked in order within a step, never across steps: per
    // (partition, step), one link fewer than its stages.
    let rounds_of_partitions = 5 * 2;
    assert_eq!(
        trace
            .links
            .iter()
            .filter(|l| l.kind == LinkKind::CommStage)
            .count(),
        stages.len() - rounds_of_partitions
    );
    for link in &trace.links {
        assert!(trace.events[link.from.index()].end_ns() <= trace.events[link.to.index()].start_ns);
    }
}

fn framework() -> PathBuf {
    super::testdata().join("horovod/gloo_mlp_2proc/rank0.pt.trace.json.gz")
}

/// The real framework trace's gradient accumulations that record their input, by end time:
/// (end µs, shape).
fn accumulations() -> Vec<(i64, Vec<i64>)> {
    let bytes = super::decompressed(&framework());
    let value: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    let mut out: Vec<(i64, Vec<i64>)> = value["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| {
            e["ph"] == "X"
                && e["name"]
                    .as_str()
                    .is_some_and(|n| n.contains("AccumulateGrad"))
                && e["args"]["Input Dims"].is_array()
        })
        .map(|e| {
            let end = e["ts"].as_i64().expect("ts") + e["dur"].as_i64().expect("dur");
            let shape = e["args"]["Input Dims"][0]
                .as_array()
                .expect("dims")
                .iter()
                .map(|d| d.as_i64().expect("dim"))
                .collect();
            (end, shape)
        })
        .collect();
    out.sort();
    out
}

/// Synthetic comm.json over the real trace: tensor i of each step enqueued 3 µs after its
/// gradient's accumulation ended.
fn synthetic_over_framework() -> (String, Vec<(i64, Vec<i64>)>) {
    let acc = accumulations();
    assert_eq!(acc.len(), 32, "8 gradients × 4 steps");
    let rounds: Vec<(String, u64, u16, i64)> = acc
        .iter()
        .enumerate()
        .map(|(i, (end, _))| {
            let k = (i % 8) as u64;
            (
                format!("Gradient.p{k}"),
                k,
                if k == 0 { 2 } else { 1 },
                end + 3,
            )
        })
        .collect();
    (synthetic(&rounds), acc)
}

#[test]
fn the_join_attaches_every_round_to_the_gradient_that_produced_it() {
    let (text, acc) = synthetic_over_framework();
    let dir = TempDir::new("byteps-join");
    let comm = write(&dir, "comm.json", &text);
    let framework = read_trace(&framework()).unwrap_or_else(|e| panic!("{e}"));
    let byteps = read_trace(&comm).unwrap_or_else(|e| panic!("{e}"));
    let (merged, report) = join(framework, byteps);
    assert_eq!(report.rounds, 32);
    assert_eq!(report.unmatched_rounds, 0);
    assert_eq!(report.producers, 32);
    assert_eq!(report.sized, 32);
    assert!(report.consumers > 0, "{report:?}");
    // Each producer link leaves the accumulation the round was placed after, and carries its
    // shape.
    let producers: Vec<_> = merged
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::GradientEnqueued)
        .collect();
    assert_eq!(producers.len(), 32 + 4, "one per partition head: p0 has 2");
    for link in producers {
        let op = &merged.events[link.from.index()];
        let stage = &merged.events[link.to.index()];
        let end_us = (merged.origin_ns + op.end_ns()) / 1000;
        let start_us = (merged.origin_ns + stage.start_ns) / 1000;
        let tensors = &merged.comm_tensors[merged
            .comm_tensors
            .binary_search_by_key(&link.to, |(e, _)| *e)
            .expect("tensors")]
        .1;
        // Partition p's first stage was placed p µs after the tensor's enqueue.
        let partition = i64::from(tensors[0].partition.expect("partition"));
        assert_eq!(
            start_us - end_us,
            3 + partition,
            "enqueued 3 µs after its producer"
        );
        let shape = acc
            .iter()
            .find(|(end, _)| *end == end_us)
            .map(|(_, s)| s.clone());
        assert_eq!(tensors[0].shape, shape);
    }
    for link in merged
        .links
        .iter()
        .filter(|l| l.kind == LinkKind::ReducedTensorUsed)
    {
        assert!(
            merged.events[link.from.index()].end_ns() <= merged.events[link.to.index()].start_ns
        );
    }
}

#[test]
fn the_join_through_read_options_notes_what_it_attached() {
    let (text, _) = synthetic_over_framework();
    let dir = TempDir::new("byteps-options");
    let comm = write(&dir, "comm.json", &text);
    let options = ReadOptions {
        comm_timeline: Some(comm),
        ..ReadOptions::default()
    };
    let trace = read_trace_with(&framework(), &options).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        trace
            .diagnostics
            .notes
            .iter()
            .any(|n| n.contains("32 tensor rounds, 32 attached")),
        "{:?}",
        trace.diagnostics.notes
    );
}

fn error_of(path: &Path) -> ReadError {
    match read_trace(path) {
        Err(e) => e,
        Ok(_) => panic!("{} must be refused", path.display()),
    }
}

#[test]
fn bad_input_is_one_line_naming_the_file() {
    let dir = TempDir::new("byteps-bad");
    // Cut inside a record.
    let cut = &DOCUMENTED[..DOCUMENTED.len() - 80];
    let truncated = write(&dir, "cut.json", cut);
    let e = error_of(&truncated);
    assert!(matches!(e, ReadError::Truncated { .. }), "{e:?}");
    // Totals only: no stage, nothing to replay.
    let totals = write(
        &dir,
        "totals.json",
        &document(&[emit("byteps.gradient_0", None, "", 100, 40)]),
    );
    let e = error_of(&totals);
    let empty = write(&dir, "empty.json", "");
    let e2 = error_of(&empty);
    for (e, path) in [(e, &totals), (e2, &empty)] {
        let message = e.to_string();
        assert!(!message.contains('\n'), "{message}");
        assert!(message.contains(&*path.to_string_lossy()), "{message}");
    }
    // Another format given as the communication timeline.
    let options = ReadOptions {
        comm_timeline: Some(framework()),
        ..ReadOptions::default()
    };
    match read_trace_with(&framework(), &options) {
        Err(ReadError::NotATrace { detail, .. }) => assert!(detail.contains("BytePS"), "{detail}"),
        other => panic!("a Kineto trace is no communication timeline: {other:?}"),
    }
}
