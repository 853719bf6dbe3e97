//! Device work is linked to the host call that launched it (CUPTI / roctracer correlation ids),
//! from `args` or, when `args` lack it, from the launch flow events.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;
use stepcast_trace::{EventKind, SyncKind, Trace};

use crate::{decompressed, kineto_file, loaded_trace};

const MTIA: &str =
    "HolisticTraceAnalysis/tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz";

fn runtime_correlations(trace: &Trace) -> HashSet<u64> {
    trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::RuntimeCall)
        .filter_map(|e| e.correlation.map(u64::from))
        .collect()
}

/// Traces where every kernel's launch is recorded: legacy (`Runtime`/`Kernel`, flows `async_gpu`
/// or `async`) and current (`cuda_runtime`/`kernel`, flows `ac2g` / `async_cpu_to_gpu`).
const LAUNCHED: &[(&str, usize)] = &[
    (
        "HolisticTraceAnalysis/tests/data/trace_file_list/inference_rank_1.json.gz",
        4,
    ),
    (
        "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        8772,
    ),
    (
        "kineto/tb_plugin/samples/resnet50_autograd_api_num_workers_0/worker0.pt.trace.json.gz",
        9329,
    ),
    (
        "HolisticTraceAnalysis/tests/data/critical_path/end_to_end/simple_add/input/trace.json.gz",
        79,
    ),
    (
        "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz",
        8568,
    ),
];

#[test]
fn every_kernel_links_to_its_runtime_call() {
    let mut failures = Vec::new();
    for &(file, kernels) in LAUNCHED {
        let trace = loaded_trace(file);
        let launches = runtime_correlations(trace);
        let mut linked = 0;
        for e in trace.events.iter().filter(|e| e.kind == EventKind::Kernel) {
            match e.correlation.map(u64::from) {
                Some(c) if launches.contains(&c) => linked += 1,
                Some(c) => failures.push(format!(
                    "{file}: kernel #{} correlation {c} matches no runtime call",
                    e.file_index
                )),
                None => failures.push(format!(
                    "{file}: kernel #{} has no correlation",
                    e.file_index
                )),
            }
        }
        if linked != kernels {
            failures.push(format!("{file}: {linked} kernels linked, want {kernels}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn mtia_device_events_keep_their_correlations() {
    // In the file, 991 of the 1,313 `mtia_ccp_events` carry `args.correlation`; the other 322
    // have no launch flow either (checked with Python: no `ac2g` flow shares their pid, tid and
    // ts), so nothing can be recovered for them and nothing must be invented.
    let trace = loaded_trace(MTIA);
    let launches = runtime_correlations(trace);
    let device: Vec<_> = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Kernel)
        .collect();
    assert_eq!(device.len(), 1313);
    let with: Vec<u64> = device
        .iter()
        .filter_map(|e| e.correlation.map(u64::from))
        .collect();
    assert_eq!(with.len(), 991);
    let unmatched = with.iter().filter(|c| !launches.contains(c)).count();
    assert_eq!(
        unmatched, 0,
        "MTIA device events without their mtia_runtime call"
    );
    // Device events sit on their queue (`args.stream`), not on the `tid` they were written with.
    let queues: HashSet<i64> = device.iter().map(|e| trace.lane(e.lane).tid).collect();
    assert_eq!(queues, (101..=112).collect::<HashSet<i64>>());
}

/// The trace `file` with `args.correlation` removed from every `X` event of category `cat`;
/// returns the new bytes and the removed values by record index.
fn strip_correlations(file: &str, cat: &str) -> (Vec<u8>, HashMap<u32, Option<u64>>) {
    let mut doc: Value =
        serde_json::from_slice(&decompressed(&kineto_file(file))).expect("trace is JSON");
    let events = doc
        .get_mut("traceEvents")
        .and_then(Value::as_array_mut)
        .expect("traceEvents array");
    let mut removed = HashMap::new();
    for (index, event) in events.iter_mut().enumerate() {
        if event.get("ph").and_then(Value::as_str) != Some("X")
            || event.get("cat").and_then(Value::as_str) != Some(cat)
        {
            continue;
        }
        let old = event
            .get_mut("args")
            .and_then(Value::as_object_mut)
            .and_then(|args| args.remove("correlation"))
            .and_then(|c| c.as_u64());
        removed.insert(index as u32, old);
    }
    (serde_json::to_vec(&doc).expect("serialize"), removed)
}

/// Real traces with the device side's `args.correlation` removed in memory (the files are not
/// touched): the reader must take the ids back from the launch flows (`f` events share the
/// device event's pid, tid and ts, and their id is the correlation id).
/// (file, category stripped, events whose correlation the flows give back)
const RECOVER: &[(&str, &str, usize)] = &[
    (
        "HolisticTraceAnalysis/tests/data/trace_file_list/inference_rank_1.json.gz",
        "Kernel",
        4,
    ),
    (
        "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        "Kernel",
        8772,
    ),
    (
        "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz",
        "kernel",
        8568,
    ),
    (
        "HolisticTraceAnalysis/tests/data/critical_path/end_to_end/simple_add/input/trace.json.gz",
        "kernel",
        79,
    ),
    // MTIA: flows sit on the raw (pid 17, tid 3xxx), not on the queue lane (`args.stream`).
    (MTIA, "mtia_ccp_events", 991),
];

#[test]
fn correlations_are_recovered_from_launch_flows() {
    let mut failures = Vec::new();
    for &(file, cat, want_recovered) in RECOVER {
        let (bytes, removed) = strip_correlations(file, cat);
        let name = format!("{}-without-correlation.json", file.replace('/', "_"));
        let trace = match stepcast_trace::read_trace_bytes(&bytes, Path::new(&name)) {
            Ok(trace) => trace,
            Err(e) => {
                failures.push(format!("{file}: {e}"));
                continue;
            }
        };
        let mut recovered = 0;
        for e in &trace.events {
            let Some(original) = removed.get(&e.file_index) else {
                continue;
            };
            match (e.correlation.map(u64::from), original) {
                (Some(got), Some(want)) if got == *want => recovered += 1,
                (None, _) => {}
                (got, want) => failures.push(format!(
                    "{file}: event #{}: correlation {got:?}, the file had {want:?}",
                    e.file_index
                )),
            }
        }
        if recovered != want_recovered {
            failures.push(format!(
                "{file}: {recovered} correlations recovered, want {want_recovered}"
            ));
        }
        let noted = trace
            .diagnostics
            .notes
            .iter()
            .any(|n| n.contains("recovered") && n.contains(&want_recovered.to_string()));
        if !noted {
            failures.push(format!(
                "{file}: no note on {want_recovered} recovered correlations: {:?}",
                trace.diagnostics.notes
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn sync_events_of_the_critical_path_traces() {
    // (file, cuda_sync events by kind: event sync, stream sync, context sync, stream wait event)
    let cases = [
        (
            "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz",
            [2, 1, 1, 0],
        ),
        (
            "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
            [3, 0, 1, 1],
        ),
        (
            "HolisticTraceAnalysis/tests/data/critical_path/end_to_end/simple_add/input/trace.json.gz",
            [0, 16, 5, 20],
        ),
    ];
    for (file, by_kind) in cases {
        let trace = loaded_trace(file);
        let count = |kind| trace.syncs.iter().filter(|s| s.kind == kind).count();
        assert_eq!(
            [
                count(SyncKind::EventSync),
                count(SyncKind::StreamSync),
                count(SyncKind::ContextSync),
                count(SyncKind::StreamWaitEvent),
            ],
            by_kind,
            "{file}"
        );
        // Each sync was performed by a recorded runtime call.
        let calls = runtime_correlations(trace);
        for s in &trace.syncs {
            assert!(
                calls.contains(&s.correlation),
                "{file}: sync {s:?} has no runtime call"
            );
        }
    }

    // The cross-stream wait: stream 24 waits for the event recorded (correlation 1385) on
    // stream 20. `-1` in the file means "none".
    let trace = loaded_trace(
        "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
    );
    let wait = trace
        .syncs
        .iter()
        .find(|s| s.kind == SyncKind::StreamWaitEvent)
        .expect("a stream wait event");
    assert_eq!(
        (
            wait.correlation,
            wait.stream,
            wait.wait_on_stream,
            wait.wait_on_event_record_correlation
        ),
        (1389, Some(24), Some(20), Some(1385))
    );
    let first = trace
        .syncs
        .iter()
        .find(|s| s.correlation == 24)
        .expect("the event sync of correlation 24");
    assert_eq!(
        (
            first.stream,
            first.wait_on_stream,
            first.wait_on_event_record_correlation
        ),
        (None, None, None)
    );
}

/// 2021 traces write `"external id": 0` for calls outside any op: that is "none", not op 0.
#[test]
fn external_id_zero_means_none() {
    let trace = loaded_trace(
        "kineto/tb_plugin/samples/resnet50_autograd_api_num_workers_0/worker0.pt.trace.json.gz",
    );
    assert!(trace.events.iter().any(|e| e.external_id.is_some()));
    // `Event::external_id` cannot hold 0 (a `NonZeroU64`): the file's zeros are calls without
    // one, not calls dropped.
    let calls_without = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::RuntimeCall && e.external_id.is_none())
        .count();
    assert!(calls_without > 0);
}

/// Since 2023 Kineto writes `ts` relative to `baseTimeNanoseconds`; the origin is absolute.
#[test]
fn origin_includes_the_base_time() {
    // nccl_data.json.gz (recorded 2024-05): baseTimeNanoseconds 1711964646000000000;
    // without it, `ts` alone (~4.46e15 ns) reads as 1970.
    let trace =
        loaded_trace("HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz");
    let year_2020_ns: i64 = 1_577_836_800_000_000_000;
    assert!(
        trace.origin_ns > year_2020_ns,
        "origin {} is not absolute",
        trace.origin_ns
    );
}
