//! `info` and `replay` on a BytePS `comm.json`: the example of BytePS's `docs/timeline.md`
//! (documented, not recorded: BytePS needs its servers and cannot be recorded here), and a
//! **synthetic** `comm.json` made here in `EmitTrace`'s layout, joined with the real PyTorch
//! trace of `testdata/horovod/gloo_mlp_2proc/` (`--comm-timeline`).

use std::path::PathBuf;

use super::{TempDir, path_str, stepcast};

fn framework() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/horovod/gloo_mlp_2proc/rank0.pt.trace.json.gz"
    ))
}

/// BytePS `docs/timeline.md`'s two example records in the file's object.
const DOCUMENTED: &str = r#"{"traceEvents": [
{"ph": "X", "args": {"name": "Comm.byteps.gradient_0"}, "pid": "Comm.byteps.gradient_0", "name": "Comm.byteps.gradient_0", "ts": 1574685989504865, "dur": 24026, "tid": "total"},
{"ph": "X", "args": {"name": "Comm.byteps.gradient_0"}, "pid": "Comm.byteps.gradient_0", "name": "Comm.byteps.gradient_0.BROADCAST", "ts": 1574685984662375, "dur": 1074, "tid": "26148864"}
], "displayTimeUnit": "ms"}"#;

#[test]
fn info_and_replay_read_the_documented_example() {
    let dir = TempDir::new("byteps-doc");
    let path = dir.path().join("comm.json");
    std::fs::write(&path, DOCUMENTED).expect("write");
    let info = stepcast(&["info", path_str(&path), "--json"]);
    info.assert_success();
    let text = info.json().to_string();
    assert!(text.contains("BytePS communication trace"), "{text}");
    stepcast(&["replay", path_str(&path)]).assert_success();
}

#[test]
fn replay_joins_a_synthetic_comm_json_with_the_framework_trace() {
    // Synthetic: each recorded AccumulateGrad (with its input) followed 3 µs later by its
    // tensor's root-GPU stages, as BytePS's PyTorch hook would enqueue it.
    let bytes = {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(framework()).expect("trace"))
            .read_to_end(&mut out)
            .expect("gzip");
        out
    };
    let value: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    let mut ends: Vec<i64> = value["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.contains("AccumulateGrad"))
                && e["args"]["Input Dims"].is_array()
        })
        .map(|e| e["ts"].as_i64().unwrap_or(0) + e["dur"].as_i64().unwrap_or(0))
        .collect();
    ends.sort();
    let mut records = Vec::new();
    for (i, end) in ends.iter().enumerate() {
        let k = i % 8;
        let mut at = end + 3;
        for (stage, dur) in [
            ("COORDINATE_PUSH", 3),
            ("PUSH", 40),
            ("PULL", 35),
            ("COPYH2D", 4),
        ] {
            records.push(format!(
                r#"{{"ph": "X", "args": {{"name": "Comm.Gradient.p{k}"}}, "pid": "Comm.Gradient.p{k}", "name": "Comm.Gradient.p{k}.{stage}", "ts": {at}, "dur": {dur}, "tid": "{}", "cat": "Comm"}}"#,
                k << 16
            ));
            at += dur;
        }
    }
    let dir = TempDir::new("byteps-join");
    let comm = dir.path().join("comm.json");
    std::fs::write(
        &comm,
        format!(
            "{{\"traceEvents\": [{}], \"displayTimeUnit\": \"ms\"}}",
            records.join(",\n")
        ),
    )
    .expect("write");
    let run = stepcast(&[
        "replay",
        path_str(&framework()),
        "--comm-timeline",
        path_str(&comm),
        "--json",
    ]);
    run.assert_success();
    let text = run.json().to_string();
    assert!(text.contains("tensor_stage"), "{text}");
    let info = stepcast(&[
        "info",
        path_str(&framework()),
        "--comm-timeline",
        path_str(&comm),
        "--json",
    ]);
    info.assert_success();
    let text = info.json().to_string();
    assert!(
        text.contains("32 tensor rounds, 32 attached to the gradients"),
        "{text}"
    );
}

#[test]
fn a_cut_comm_json_is_one_line_naming_it() {
    let dir = TempDir::new("byteps-cut");
    let path = dir.path().join("comm.json");
    std::fs::write(&path, &DOCUMENTED[..DOCUMENTED.len() - 60]).expect("write");
    let run = stepcast(&["info", path_str(&path)]);
    let stderr = &run.stderr;
    assert_ne!(run.code, Some(0));
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains(path_str(&path)), "{stderr}");
}
