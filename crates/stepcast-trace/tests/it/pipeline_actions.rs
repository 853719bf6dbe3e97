//! The reader's pipeline transfers (`Trace::pipeline_transfers`) against an independent reading
//! of the same files: `serde_json` values of each `user_annotation` record whose name is one of
//! `torch.distributed.pipelining`'s transfer actions, matched by a regular expression over its
//! `_Action` form (stage, `SEND_F`/`RECV_F`/`SEND_B`/`RECV_B`, microbatch).

use regex::Regex;
use serde_json::Value;
use stepcast_trace::{PipelineTransfer, read_trace};

use super::{decompressed, kineto_file};

#[test]
fn every_pipeline_transfer_action_is_read_with_its_stage_direction_and_microbatch() {
    let action = Regex::new(r"^PP:(\d+)(SEND|RECV)_([FB])(\d+)$").expect("regex");
    for relative in [
        "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2/rank3.json.gz",
        "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-fsdp/rank0.json.gz",
        // The plain 1F1B schedule runs no action ranges: none read.
        "stepcast/cpu-jobs/pipelining-pp2dp2/rank0.json.gz",
    ] {
        let path = kineto_file(relative);
        let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
        let document: Value = serde_json::from_slice(&decompressed(&path))
            .unwrap_or_else(|e| panic!("{relative}: {e}"));
        let mut expected: Vec<(i64, PipelineTransfer)> = document["traceEvents"]
            .as_array()
            .unwrap_or_else(|| panic!("{relative}: no traceEvents"))
            .iter()
            .filter(|r| r["cat"] == "user_annotation" && r["ph"] == "X")
            .filter_map(|r| {
                let caps = action.captures(r["name"].as_str()?)?;
                let transfer = PipelineTransfer {
                    stage: caps[1].parse().ok()?,
                    sends: &caps[2] == "SEND",
                    forward: &caps[3] == "F",
                    microbatch: caps[4].parse().ok()?,
                };
                // Microseconds with a fraction: the reader's nanoseconds, rounded.
                let ts_ns = (r["ts"].as_f64()? * 1000.0).round() as i64;
                Some((ts_ns, transfer))
            })
            .collect();
        let mut read: Vec<(i64, PipelineTransfer)> = trace
            .pipeline_transfers
            .iter()
            .map(|&(event, transfer)| {
                let start_ns = trace.events[event.index()].start_ns + trace.origin_ns;
                (start_ns - trace.file_time_base_ns, transfer)
            })
            .collect();
        expected.sort();
        read.sort();
        assert_eq!(read.len(), expected.len(), "{relative}");
        for ((read_ns, read), (expected_ns, expected)) in read.iter().zip(&expected) {
            assert_eq!(read, expected, "{relative}");
            assert!(
                (read_ns - expected_ns).abs() <= 1,
                "{relative}: {read_ns} vs {expected_ns}"
            );
        }
        if relative.contains("interleaved") {
            // Four stages interleaved twice: a rank holds two virtual stages, four apart.
            let stages: std::collections::BTreeSet<u32> =
                read.iter().map(|(_, t)| t.stage).collect();
            let stages: Vec<u32> = stages.into_iter().collect();
            assert!(
                matches!(stages[..], [a, b] if b == a + 4),
                "{relative}: {stages:?}"
            );
        }
    }
    // Actions that are not transfers, or not whole, are not read as one.
    for name in [
        "PP:5WAIT_SEND_F0",
        "PP:1UNSHARD",
        "PP:1F0",
        "PP:SEND_F0",
        "PP:1SEND_F",
        "1SEND_F0",
    ] {
        assert_eq!(PipelineTransfer::parse(name), None, "{name}");
    }
    let parsed = PipelineTransfer::parse("PP:12RECV_B3").expect("a transfer");
    assert_eq!(
        (
            parsed.stage,
            parsed.sends,
            parsed.forward,
            parsed.microbatch
        ),
        (12, false, false, 3)
    );
}
