//! Breakdowns, statistics, memory and HTA's temporal breakdown (issue #3), checked on real
//! traces against figures taken from the raw files with an independent reader (`serde_json`),
//! and against HolisticTraceAnalysis' own output.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use serde_json::Value;
use serde_json::value::RawValue;
use stepcast::analyze::analyze;
use stepcast::analyze::breakdown::{
    Breakdown, LaunchBound, breakdowns, step_breakdowns, window_breakdown,
};
use stepcast::analyze::hta::{TemporalBreakdown, temporal_breakdown};
use stepcast::analyze::mapping::{Mapping, Phase, map};
use stepcast::analyze::memory::memory;
use stepcast::analyze::stats::{
    NameStats, launch_apis, queue_latency, statistics, step_variability, top_kernels,
};
use stepcast::graph::TaskKind;
use stepcast::replay::self_replay;
use stepcast_trace::Trace;

use super::{load, testdata};

// ---------------------------------------------------------------------------------------------
// The raw file, read with serde_json only.

/// One record of `traceEvents`, its members kept as written.
type RawRecord = BTreeMap<String, Box<RawValue>>;

fn raw_events(relative: &str) -> Vec<RawRecord> {
    raw_document(relative).0
}

/// The records of `traceEvents`, and `baseTimeNanoseconds` (0 when absent).
fn raw_document(relative: &str) -> (Vec<RawRecord>, i64) {
    let path = testdata(relative);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut text = Vec::new();
    if bytes.starts_with(&[0x1f, 0x8b]) {
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut text)
            .expect("gzip");
    } else {
        text = bytes;
    }
    let mut base = 0;
    let events: Box<RawValue> = if text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        serde_json::from_slice(&text).expect("json")
    } else {
        let mut document: BTreeMap<String, Box<RawValue>> =
            serde_json::from_slice(&text).expect("json");
        if let Some(raw) = document.get("baseTimeNanoseconds") {
            base = raw.get().trim().parse().expect("baseTimeNanoseconds");
        }
        document
            .remove("traceEvents")
            .unwrap_or_else(|| panic!("{relative}: no traceEvents"))
    };
    let events: Vec<Box<RawValue>> = serde_json::from_str(events.get()).expect("array");
    let records = events
        .iter()
        .map(|e| serde_json::from_str(e.get()).expect("object"))
        .collect();
    (records, base)
}

/// A time or duration in nanoseconds, exactly, from the decimal microseconds as written.
fn exact_ns(record: &RawRecord, key: &str) -> Option<i64> {
    let text = record.get(key)?.get().trim();
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let mut digits: String = frac.chars().take(3).collect();
    while digits.len() < 3 {
        digits.push('0');
    }
    Some(int.parse::<i64>().ok()? * 1_000 + digits.parse::<i64>().ok()?)
}

/// A member as a JSON value.
fn member(record: &RawRecord, key: &str) -> Option<Value> {
    record
        .get(key)
        .map(|raw| serde_json::from_str::<Value>(raw.get()).expect("value"))
        .filter(|v| !v.is_null())
}

/// A number as Python's `json` reads it: `(value, whether it was written as a float)`. Parsed
/// from the text with Rust's correctly rounded `f64` parser, as Python's `float()` is.
fn number(record: &RawRecord, key: &str) -> Option<(f64, bool)> {
    let text = record.get(key)?.get().trim();
    let value: f64 = text.parse().ok()?;
    Some((value, text.contains(['.', 'e', 'E'])))
}

fn string(record: &RawRecord, key: &str) -> Option<String> {
    match member(record, key)? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// Python's `int(value)` as HTA applies it to `args` members, `-1` when it fails or is absent.
fn python_int(value: Option<&Value>) -> i64 {
    match value {
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f.trunc() as i64))
            .unwrap_or(-1),
        Some(Value::String(s)) => s.trim().parse().unwrap_or(-1),
        Some(Value::Bool(b)) => *b as i64,
        _ => -1,
    }
}

// ---------------------------------------------------------------------------------------------
// HTA's temporal breakdown.

/// HTA 0.5.0's `TraceAnalysis(trace_files={0: path}).get_temporal_breakdown(visualize=False)`
/// on each file, as HTA printed it: `(kernel_time, idle_time, compute_time, non_compute_time)`
/// in microseconds. Taken by running HTA 0.5.0 (PyPI `HolisticTraceAnalysis`) on these exact
/// files; HTA's own tests hold oracles only for traces not shared here (`vision_transformer`,
/// `mtia_trace_single_rank` in `tests/test_trace_analysis.py`).
const HTA_0_5_0: &[(&str, [i64; 4])] = &[
    (
        "HolisticTraceAnalysis/tests/data/df_index_resolver/df_index_resolver.json.gz",
        [1_396_669, 643_612, 496_485, 256_572],
    ),
    (
        "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz",
        [435_586, 338_781, 75_169, 21_636],
    ),
    (
        "HolisticTraceAnalysis/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        [384_634, 10_113, 372_150, 2_371],
    ),
    (
        "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz",
        [383_404, 62_119, 234_760, 86_525],
    ),
    (
        "HolisticTraceAnalysis/tests/data/trace_diff/test/test.json.gz",
        [628_371, 46_910, 429_216, 152_245],
    ),
    (
        "HolisticTraceAnalysis/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        [8_911, 8_780, 96, 35],
    ),
    (
        "HolisticTraceAnalysis/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
        [12_996_011, 12_929_684, 10_637, 55_690],
    ),
    (
        "HolisticTraceAnalysis/tests/data/critical_path/end_to_end/simple_add/input/trace.json.gz",
        [16_464_339, 16_414_376, 10_676, 39_287],
    ),
    (
        "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz",
        [263, 207, 49, 7],
    ),
    (
        "HolisticTraceAnalysis/tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz",
        [443_275, 19_235, 419_614, 4_426],
    ),
    (
        "HolisticTraceAnalysis/tests/data/with_gpu_user_annotation/step_based_trace_2543932.json.gz",
        [7_737, 7_446, 290, 1],
    ),
    (
        "TraceLens/tests/traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz",
        [1_078_287, 516_680, 547_123, 14_484],
    ),
    (
        "TraceLens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz",
        [10_742, 458, 10_250, 34],
    ),
    (
        "TraceLens/tests/traces/mi210/gpu_only_trace/gpu_only_trace.json.gz",
        [5_979, 1_199, 4_780, 0],
    ),
    (
        "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        [830_494, 327_463, 492_891, 10_140],
    ),
    (
        "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json",
        [18_749, 6_428, 1_246, 11_075],
    ),
    (
        "param/et_replay/tests/inputs/resnet_kineto.json.gz",
        [14_522_911, 9_789_089, 4_103_141, 630_681],
    ),
];

/// Every trace with device work. HTA 0.5.0 itself fails on two of them (Qwen: its
/// `non_compute_time >= 0` assertion, the rounding leaving -17 µs; torch_compile_triton: a
/// pandas dtype error), the oracle does not.
const HTA_TRACES: &[&str] = &[
    "HolisticTraceAnalysis/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "HolisticTraceAnalysis/tests/data/call_stack/backward_thread.json",
    "HolisticTraceAnalysis/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz",
    "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
    "HolisticTraceAnalysis/tests/data/critical_path/end_to_end/simple_add/input/trace.json.gz",
    "HolisticTraceAnalysis/tests/data/df_index_resolver/df_index_resolver.json.gz",
    "HolisticTraceAnalysis/tests/data/execution_trace/benchmark_simple_add_trace.json.gz",
    "HolisticTraceAnalysis/tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz",
    "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz",
    "HolisticTraceAnalysis/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz",
    "HolisticTraceAnalysis/tests/data/trace_diff/test/test.json.gz",
    "HolisticTraceAnalysis/tests/data/trace_file_list/inference_rank_1.json.gz",
    "HolisticTraceAnalysis/tests/data/triton_example/triton_example.json.gz",
    "HolisticTraceAnalysis/tests/data/with_gpu_user_annotation/step_based_trace_2543932.json.gz",
    "TraceLens/tests/traces/h100/Falconsai_nsfw_image_detection__1016002.json.gz",
    "TraceLens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "TraceLens/tests/traces/h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
    "TraceLens/tests/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    "TraceLens/tests/traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz",
    "TraceLens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz",
    "TraceLens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz",
    "TraceLens/tests/traces/mi210/gpu_only_trace/gpu_only_trace.json.gz",
    "TraceLens/tests/traces/perf_model/normalization/normalization_layer_test.json.gz",
    // HTA counts its Triton `cpu_op` launch records (`args.stream: 0`) as kernels; stepcast
    // does not (a known difference, 0.12 percentage points here).
    "TraceLens/tests/traces/torch_compile_triton/trace.json.gz",
    "kineto/tb_plugin/samples/resnet50_autograd_api_num_workers_0/worker0.pt.trace.json.gz",
    "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json",
    "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker3_step_12.1694128201557.pt.trace.json",
    "param/et_replay/tests/inputs/linear_kineto.json.gz",
    "param/et_replay/tests/inputs/resnet_kineto.json.gz",
];

/// HTA's temporal breakdown recomputed from the raw JSON, independently of stepcast's reader:
/// the steps of `hta/common/trace_parser.py` (`_compress_df`, `round_down_time_stamps`),
/// `hta/common/trace.py` (`_filter_irrelevant_gpu_kernels`), `hta/common/trace_filter.py`
/// (`GPUKernelFilter`) and `hta/analyzers/breakdown_analysis.py` (`get_temporal_breakdown`),
/// in `f64` microseconds as pandas computes them. Returns
/// `(kernel_time, idle, compute, non_compute)` in microseconds.
fn hta_oracle(relative: &str) -> Option<[f64; 4]> {
    struct Row {
        ts: f64,
        end: f64,
        name: String,
        stream: i64,
        correlation: i64,
    }
    let events = raw_events(relative);
    let float_ts = events
        .iter()
        .any(|e| number(e, "ts").is_none_or(|(_, float)| float));
    let mut rows = Vec::new();
    for e in &events {
        let (Some((ts, _)), Some((dur, _)), Some(cat)) =
            (number(e, "ts"), number(e, "dur"), string(e, "cat"))
        else {
            continue;
        };
        if cat == "Trace" {
            continue;
        }
        let (ts, end) = if float_ts {
            (ts.ceil(), (ts + dur).floor())
        } else {
            (ts, ts + dur)
        };
        let args = member(e, "args");
        rows.push(Row {
            ts,
            end,
            name: string(e, "name").unwrap_or_default(),
            stream: python_int(args.as_ref().and_then(|a| a.get("stream"))),
            correlation: python_int(args.as_ref().and_then(|a| a.get("correlation"))),
        });
    }
    let step_names: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.name.contains("ProfilerStep"))
        .map(|r| r.name.as_str())
        .collect();
    let mut kept: Vec<&Row> = rows.iter().collect();
    if step_names.len() >= 2 {
        let is_gpu = |r: &Row| {
            r.stream >= 0 && r.correlation >= 0
                || r.name == "Event Sync"
                || r.name == "Context Sync"
        };
        let last = rows
            .iter()
            .filter(|r| !is_gpu(r) && step_names.contains(r.name.as_str()))
            .map(|r| r.ts)
            .fold(f64::MIN, f64::max);
        let cpu: Vec<&Row> = rows.iter().filter(|r| !is_gpu(r) && r.ts < last).collect();
        let correlations: BTreeSet<i64> = cpu.iter().map(|r| r.correlation).collect();
        kept = rows
            .iter()
            .filter(|r| is_gpu(r) && correlations.contains(&r.correlation))
            .chain(cpu)
            .collect();
    }
    let kernels: Vec<&Row> = kept.into_iter().filter(|r| r.stream != -1).collect();
    let merge = |mut intervals: Vec<(f64, f64)>| -> Option<(f64, f64, f64)> {
        intervals.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut groups: Vec<(f64, f64)> = Vec::new();
        let mut latest_end = f64::MIN;
        for (start, end) in intervals {
            match groups.last_mut() {
                Some(group) if start <= latest_end => group.1 = group.1.max(end),
                _ => groups.push((start, end)),
            }
            latest_end = latest_end.max(end);
        }
        let covered = groups.iter().map(|g| g.1 - g.0).sum();
        Some((groups.first()?.0, groups.last()?.1, covered))
    };
    let is_compute = |name: &str| {
        let nccl = name
            .strip_prefix("nccl")
            .is_some_and(|rest| rest.contains("Kernel"));
        !(nccl
            || name.starts_with("Memset")
            || name.starts_with("dma")
            || name.contains("Memcpy")
            || name.contains("Sync"))
    };
    let (first, last, covered) = merge(kernels.iter().map(|r| (r.ts, r.end)).collect())?;
    let compute = merge(
        kernels
            .iter()
            .filter(|r| is_compute(&r.name))
            .map(|r| (r.ts, r.end))
            .collect(),
    )
    .map_or(0.0, |m| m.2);
    let kernel_time = last - first;
    let idle = kernel_time - covered;
    Some([kernel_time, idle, compute, kernel_time - compute - idle])
}

fn percentages(kernel_time: f64, parts: [f64; 3]) -> [f64; 3] {
    parts.map(|p| 100.0 * p / kernel_time)
}

fn stepcast_percentages(b: &TemporalBreakdown) -> [f64; 3] {
    [b.idle_pct, b.compute_pct, b.non_compute_pct]
}

/// The bar of issue #3: within 0.5 percentage points of HTA's figures.
const HTA_BAR_PCT: f64 = 0.5;

fn assert_within(relative: &str, what: &str, got: [f64; 3], expected: [f64; 3], bar: f64) {
    for (i, label) in ["idle", "compute", "non-compute"].iter().enumerate() {
        assert!(
            (got[i] - expected[i]).abs() <= bar,
            "{relative}: {what} {label} {:.3} % vs {:.3} % (bar {bar} pp)",
            got[i],
            expected[i]
        );
    }
}

#[test]
fn hta_temporal_breakdown_agrees_with_hta_0_5_0() {
    for (relative, [kernel_time, idle, compute, non_compute]) in HTA_0_5_0 {
        let expected = percentages(
            *kernel_time as f64,
            [*idle as f64, *compute as f64, *non_compute as f64],
        );
        // The oracle reproduces HTA to the microsecond.
        let oracle = hta_oracle(relative).expect("oracle");
        assert_eq!(
            oracle.map(|v| v.round() as i64),
            [*kernel_time, *idle, *compute, *non_compute],
            "{relative}: oracle"
        );
        let (trace, _) = load(relative);
        let breakdown = temporal_breakdown(&trace).expect("kernels");
        assert_within(
            relative,
            "stepcast vs HTA 0.5.0",
            stepcast_percentages(&breakdown),
            expected,
            HTA_BAR_PCT,
        );
    }
}

#[test]
fn hta_temporal_breakdown_matches_the_oracle_on_every_trace() {
    for relative in HTA_TRACES {
        let oracle = hta_oracle(relative).expect("oracle");
        let (trace, _) = load(relative);
        let b = temporal_breakdown(&trace).expect("kernels");
        assert_eq!(
            b.idle_ns + b.compute_ns + b.non_compute_ns,
            b.kernel_time_ns,
            "{relative}: parts sum to the kernel time"
        );
        let expected = percentages(oracle[0], [oracle[1], oracle[2], oracle[3]]);
        assert_within(
            relative,
            "stepcast vs oracle",
            stepcast_percentages(&b),
            expected,
            HTA_BAR_PCT,
        );
        // Without rounding, both are exact: the same microseconds.
        if !b.microsecond_rounding {
            let ns = oracle.map(|us| (us * 1_000.0).round() as i64);
            assert_eq!(
                [b.kernel_time_ns, b.idle_ns, b.compute_ns, b.non_compute_ns],
                ns,
                "{relative}: exact"
            );
        }
    }
}

#[test]
fn hta_temporal_breakdown_is_none_without_kernels() {
    let (trace, _) = load(
        "HolisticTraceAnalysis/@b8cce2cd/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    );
    assert_eq!(temporal_breakdown(&trace), None);
}

// ---------------------------------------------------------------------------------------------
// Breakdowns per step and for the window.

const DF_INDEX: &str =
    "HolisticTraceAnalysis/tests/data/df_index_resolver/df_index_resolver.json.gz";
const NCCL_DATA: &str = "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz";
const OWLV2: &str =
    "TraceLens/tests/traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz";
const CPU_ONLY: &str = "HolisticTraceAnalysis/@b8cce2cd/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz";

/// Traces of every kind: multi-step training (DDP, ROCm, 2021 schema, nanosecond timestamps),
/// inference with Python stacks, synchronizing micro-benchmarks, CPU only.
const BREAKDOWN_TRACES: &[&str] = &[
    DF_INDEX,
    NCCL_DATA,
    "HolisticTraceAnalysis/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "HolisticTraceAnalysis/tests/data/trace_diff/test/test.json.gz",
    "HolisticTraceAnalysis/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "HolisticTraceAnalysis/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
    "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    "kineto/tb_plugin/samples/resnet50_autograd_api_num_workers_0/worker0.pt.trace.json.gz",
    "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker3_step_12.1694128201557.pt.trace.json",
    OWLV2,
    CPU_ONLY,
];

fn check_sums(name: &str, b: &Breakdown) {
    let span = b.span_ns();
    let what = format!("{name} step {:?}", b.step);
    assert!(span >= 0, "{what}: span {span}");
    assert_eq!(b.host_device.total_ns(), span, "{what}: host/device");
    assert_eq!(
        b.device_idle.total_ns(),
        b.host_device.device_idle_ns(),
        "{what}: device idle causes"
    );
    assert_eq!(b.communication.total_ns(), span, "{what}: communication");
    assert_eq!(b.device_by_phase.total_ns(), span, "{what}: device phases");
    assert_eq!(b.device_by_layer.total_ns(), span, "{what}: device layers");
    assert_eq!(b.host_by_phase.total_ns(), span, "{what}: host phases");
    assert_eq!(b.host_by_layer.total_ns(), span, "{what}: host layers");
    assert_eq!(
        b.host_by_layer.idle_ns, b.host_by_phase.idle_ns,
        "{what}: host idle is the same in both partitions"
    );
    assert_eq!(
        b.device_by_phase.idle_ns,
        b.host_device.device_idle_ns(),
        "{what}: device idle is the same in every partition"
    );
    let parts = [
        b.host_device.cpu_only_ns,
        b.host_device.gpu_only_ns,
        b.host_device.overlap_ns,
        b.host_device.idle_ns,
        b.device_idle.host_launch_ns,
        b.device_idle.synchronization_ns,
        b.device_idle.communication_ns,
        b.device_idle.other_stream_ns,
        b.device_idle.unexplained_ns,
        b.communication.compute_only_ns,
        b.communication.overlapped_ns,
        b.communication.exposed_ns,
        b.communication.neither_ns,
        b.host_by_phase.idle_ns,
    ];
    assert!(
        parts.iter().all(|&p| p >= 0),
        "{what}: negative part {parts:?}"
    );
    assert!(
        b.device_by_phase.busy.iter().all(|&(_, ns)| ns >= 0)
            && b.device_by_layer.busy.iter().all(|&(_, ns)| ns > 0),
        "{what}: negative phase or layer time"
    );
    assert!(
        b.launch_bound.launch_bound <= b.launch_bound.kernels,
        "{what}"
    );
}

#[test]
fn every_breakdown_sums_to_its_span() {
    for relative in BREAKDOWN_TRACES {
        let (trace, window) = load(relative);
        let mapping = map(&trace, &window);
        let replay = self_replay(&window).expect("replay");
        let all = breakdowns(&trace, &window, &mapping);
        assert_eq!(all.steps.len(), window.steps.len(), "{relative}");
        for (b, r) in all.steps.iter().zip(&replay.steps) {
            // The span is the replay's measured step, to the nanosecond.
            assert_eq!(b.step, Some(r.number), "{relative}");
            assert_eq!(b.span_ns(), r.measured_ns, "{relative} step {}", r.number);
            check_sums(relative, b);
        }
        let g = &window.graph;
        assert_eq!(
            all.window.span_ns(),
            g.rec_end_ns.iter().max().expect("tasks") - g.rec_start_ns.iter().min().expect("tasks"),
            "{relative}: the window spans its tasks"
        );
        check_sums(relative, &all.window);
        assert_eq!(all.steps, step_breakdowns(&trace, &window, &mapping));
        assert_eq!(all.window, window_breakdown(&trace, &window, &mapping));
    }
}

/// Every part of a breakdown, by name, as a list (layers keyed by their name; a layer a step
/// lacks counts 0 there).
fn named_parts(trace: &Trace, b: &Breakdown) -> BTreeMap<String, i64> {
    let mut parts: BTreeMap<String, i64> = [
        ("span", b.span_ns()),
        ("cpu_only", b.host_device.cpu_only_ns),
        ("gpu_only", b.host_device.gpu_only_ns),
        ("overlap", b.host_device.overlap_ns),
        ("idle", b.host_device.idle_ns),
        ("idle host_launch", b.device_idle.host_launch_ns),
        ("idle synchronization", b.device_idle.synchronization_ns),
        ("idle communication", b.device_idle.communication_ns),
        ("idle other_stream", b.device_idle.other_stream_ns),
        ("idle unexplained", b.device_idle.unexplained_ns),
        ("comm compute_only", b.communication.compute_only_ns),
        ("comm overlapped", b.communication.overlapped_ns),
        ("comm exposed", b.communication.exposed_ns),
        ("comm neither", b.communication.neither_ns),
        ("device phase idle", b.device_by_phase.idle_ns),
        ("host phase idle", b.host_by_phase.idle_ns),
        ("launch-bound kernels", b.launch_bound.launch_bound as i64),
        ("launch-bound kernel_ns", b.launch_bound.kernel_ns),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for phase in Phase::ALL {
        parts.insert(format!("device {phase:?}"), b.device_by_phase.get(phase));
        parts.insert(format!("host {phase:?}"), b.host_by_phase.get(phase));
    }
    let layer = |l: Option<stepcast_trace::NameId>| l.map_or("(none)", |n| trace.name(n));
    for &(l, ns) in &b.device_by_layer.busy {
        parts.insert(format!("device layer {}", layer(l)), ns);
    }
    for &(l, ns) in &b.host_by_layer.busy {
        parts.insert(format!("host layer {}", layer(l)), ns);
    }
    parts
}

#[test]
fn the_typical_breakdown_averages_the_steady_steps_it_is_built_from() {
    let mut several = false;
    for relative in [NCCL_DATA, DF_INDEX] {
        let (trace, window) = load(relative);
        let analysis = analyze(&trace, &window, None).expect("analyze");
        let typical_step = analysis.replay.typical.as_ref().expect("a typical step");
        let typical = analysis
            .typical_breakdown
            .as_ref()
            .expect("a typical breakdown");
        // It comes from the typical step's own steps, all steady (df_index_resolver: steps
        // 3, 4 and 6 share a structure; nccl_data: step 5 alone, whose breakdown it then is).
        assert_eq!(typical.steps_used, typical_step.steps_used, "{relative}");
        assert!(!typical.steps_used.is_empty(), "{relative}");
        several |= typical.steps_used.len() >= 2;
        let used: Vec<&Breakdown> = analysis
            .breakdowns
            .steps
            .iter()
            .zip(&analysis.replay.steps)
            .filter(|(b, _)| b.step.is_some_and(|n| typical.steps_used.contains(&n)))
            .map(|(b, r)| {
                assert!(r.steady, "{relative}: step {} is not steady", r.number);
                b
            })
            .collect();
        assert_eq!(used.len(), typical.steps_used.len(), "{relative}");

        let b = &typical.breakdown;
        check_sums(&format!("{relative} typical"), b);
        let parts = named_parts(&trace, b);
        let step_parts: Vec<BTreeMap<String, i64>> =
            used.iter().map(|s| named_parts(&trace, s)).collect();
        let keys: BTreeSet<&String> = step_parts
            .iter()
            .flat_map(|p| p.keys())
            .chain(parts.keys())
            .collect();
        for key in keys {
            let values: Vec<i64> = step_parts
                .iter()
                .map(|p| p.get(key).copied().unwrap_or(0))
                .collect();
            let (min, max) = (
                *values.iter().min().expect("steps"),
                *values.iter().max().expect("steps"),
            );
            let got = parts.get(key).copied().unwrap_or(0);
            assert!(
                (min..=max).contains(&got),
                "{relative} {key}: typical {got} outside the steps' [{min}, {max}]"
            );
            // Within rounding of the mean (top-level parts: within 1 ns; nested ones are
            // rounded to an already rounded total, 2 ns).
            let n = values.len() as i64;
            let sum: i64 = values.iter().sum();
            assert!(
                (got * n - sum).abs() < 2 * n,
                "{relative} {key}: typical {got}, mean {}",
                sum as f64 / n as f64
            );
        }
        let n = used.len() as i64;
        let spans: i64 = used.iter().map(|s| s.span_ns()).sum();
        assert!(
            (b.span_ns() * n - spans).abs() * 2 <= n,
            "{relative}: span is the mean"
        );
    }
    assert!(several, "one trace averages several steps");
}

/// Sorted, merged intervals.
fn union(mut intervals: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    intervals.retain(|i| i.1 > i.0);
    intervals.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in intervals {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn covered(intervals: &[(i64, i64)], a: i64, b: i64) -> i64 {
    intervals
        .iter()
        .map(|&(s, e)| (e.min(b) - s.max(a)).max(0))
        .sum()
}

/// The intersection of two unions (two-pointer sweep).
fn intersection(x: &[(i64, i64)], y: &[(i64, i64)]) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < x.len() && j < y.len() {
        let (s, e) = (x[i].0.max(y[j].0), x[i].1.min(y[j].1));
        if s < e {
            out.push((s, e));
        }
        if x[i].1 < y[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

/// Device intervals of the raw file, relative to the trace's origin: `(kernels that are not
/// NCCL, NCCL kernels, copies and memsets)`.
fn raw_device_intervals(relative: &str, origin_ns: i64) -> [Vec<(i64, i64)>; 3] {
    let (events, base) = raw_document(relative);
    let mut out: [Vec<(i64, i64)>; 3] = Default::default();
    for e in &events {
        let (Some(cat), Some(ts), Some(dur)) =
            (string(e, "cat"), exact_ns(e, "ts"), exact_ns(e, "dur"))
        else {
            continue;
        };
        let start = ts + base - origin_ns;
        let interval = (start, start + dur);
        match cat.as_str() {
            "kernel" if string(e, "name").is_some_and(|n| n.starts_with("nccl")) => {
                out[1].push(interval)
            }
            "kernel" => out[0].push(interval),
            "gpu_memcpy" | "gpu_memset" => out[2].push(interval),
            _ => {}
        }
    }
    out.map(union)
}

#[test]
fn device_activity_and_communication_overlap_match_the_raw_file() {
    for relative in [DF_INDEX, NCCL_DATA, OWLV2] {
        let (trace, window) = load(relative);
        let all = breakdowns(&trace, &window, &map(&trace, &window));
        let [compute, nccl, copies] = raw_device_intervals(relative, trace.origin_ns);
        let device = union([compute.clone(), nccl.clone(), copies].concat());
        let overlapped = intersection(&compute, &nccl);
        for b in all.steps.iter().chain([&all.window]) {
            let (a, z) = (b.start_ns, b.end_ns);
            let what = format!("{relative} step {:?}", b.step);
            assert_eq!(
                b.host_device.gpu_only_ns + b.host_device.overlap_ns,
                covered(&device, a, z),
                "{what}: device busy"
            );
            assert_eq!(
                b.communication.overlapped_ns,
                covered(&overlapped, a, z),
                "{what}"
            );
            assert_eq!(
                b.communication.overlapped_ns + b.communication.exposed_ns,
                covered(&nccl, a, z),
                "{what}: communication"
            );
            assert_eq!(
                b.communication.compute_only_ns + b.communication.overlapped_ns,
                covered(&compute, a, z),
                "{what}: computation"
            );
        }
    }
}

#[test]
fn device_idle_is_classified_by_what_held_the_next_task() {
    // df_index_resolver is host-bound (HTA: 46 % idle), its NCCL all-reduces wait on the
    // other rank, and it makes no synchronizing call inside its steps.
    let (trace, window) = load(DF_INDEX);
    let all = breakdowns(&trace, &window, &map(&trace, &window));
    for b in &all.steps {
        let idle = &b.device_idle;
        assert!(
            idle.host_launch_ns * 10 > idle.total_ns() * 9,
            "step {:?}: {idle:?}",
            b.step
        );
        assert!(idle.communication_ns > 0, "step {:?}: {idle:?}", b.step);
        assert_eq!(idle.synchronization_ns, 0, "step {:?}", b.step);
    }
    // owlv2's generation loop synchronizes (`.item()`): most of its device idle time follows a
    // synchronizing call.
    let (trace, window) = load(OWLV2);
    let b = window_breakdown(&trace, &window, &map(&trace, &window));
    assert!(
        b.device_idle.synchronization_ns * 2 > b.device_idle.total_ns(),
        "{:?}",
        b.device_idle
    );
    // Without device work, the device waits on the host the whole span.
    let (trace, window) = load(CPU_ONLY);
    let all = breakdowns(&trace, &window, &map(&trace, &window));
    for b in all.steps.iter().chain([&all.window]) {
        assert_eq!(b.device_idle.host_launch_ns, b.span_ns());
        assert_eq!(b.host_device.gpu_only_ns + b.host_device.overlap_ns, 0);
        assert!(b.host_device.cpu_only_ns > 0);
    }
}

#[test]
fn time_by_phase_and_layer_follows_the_mapping() {
    // nccl_data overlaps all-reduces with computation; df_index_resolver does not.
    for relative in [NCCL_DATA, DF_INDEX] {
        let (trace, window) = load(relative);
        let g = &window.graph;
        let n = g.task_count();
        // A hand-made mapping: collectives are communication, everything else forward, in
        // one layer. Communication then takes exactly the exposed collective time.
        let layer = trace.names.lookup("aten::mm").expect("a name");
        let mapping = Mapping {
            phase: (0..n)
                .map(|t| match g.kind[t] {
                    TaskKind::Collective => Phase::Communication,
                    _ => Phase::Forward,
                })
                .collect(),
            layer: vec![Some(layer); n],
            ..Default::default()
        };
        let all = breakdowns(&trace, &window, &mapping);
        for b in all.steps.iter().chain([&all.window]) {
            let busy = b.host_device.gpu_only_ns + b.host_device.overlap_ns;
            assert_eq!(
                b.device_by_phase.get(Phase::Communication),
                b.communication.exposed_ns,
                "{relative} step {:?}",
                b.step
            );
            assert_eq!(
                b.device_by_phase.get(Phase::Forward),
                busy - b.communication.exposed_ns
            );
            assert_eq!(b.device_by_layer.busy, vec![(Some(layer), busy)]);
        }
        if relative == NCCL_DATA {
            assert!(all.window.communication.overlapped_ns > 0);
        }
    }
    let (trace, window) = load(DF_INDEX);
    // An empty mapping: every task is `Other` and has no layer.
    let all = breakdowns(&trace, &window, &Mapping::default());
    let busy = all.window.host_device.gpu_only_ns + all.window.host_device.overlap_ns;
    assert_eq!(all.window.device_by_phase.get(Phase::Other), busy);
    assert_eq!(all.window.device_by_layer.busy, vec![(None, busy)]);
    // The real mapping: a training step runs forward, backward and optimizer kernels.
    let all = breakdowns(&trace, &window, &map(&trace, &window));
    for b in &all.steps {
        for phase in [Phase::Forward, Phase::Backward, Phase::Optimizer] {
            assert!(
                b.device_by_phase.get(phase) > 0,
                "step {:?}: {phase:?}",
                b.step
            );
        }
    }
}

#[test]
fn launch_bound_kernels_match_the_raw_file() {
    let (trace, window) = load(DF_INDEX);
    let b = window_breakdown(&trace, &window, &map(&trace, &window));
    let events = raw_events(DF_INDEX);
    let mut calls: BTreeMap<i64, i64> = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| string(e, "cat").as_deref() == Some("cuda_runtime"))
    {
        let args = member(e, "args");
        let correlation = python_int(args.as_ref().and_then(|a| a.get("correlation")));
        calls.insert(correlation, exact_ns(e, "dur").expect("dur"));
    }
    let (mut kernels, mut bound, mut kernel_ns, mut call_ns) = (0u64, 0u64, 0i64, 0i64);
    for e in events
        .iter()
        .filter(|e| string(e, "cat").as_deref() == Some("kernel"))
    {
        let args = member(e, "args");
        let correlation = python_int(args.as_ref().and_then(|a| a.get("correlation")));
        let Some(&call) = calls.get(&correlation) else {
            continue;
        };
        let dur = exact_ns(e, "dur").expect("dur");
        kernels += 1;
        if dur < call {
            bound += 1;
            kernel_ns += dur;
            call_ns += call;
        }
    }
    assert_eq!(
        b.launch_bound,
        LaunchBound {
            kernels,
            launch_bound: bound,
            kernel_ns,
            launch_call_ns: call_ns,
        }
    );
    assert!(bound > 0 && bound < kernels);
}

// ---------------------------------------------------------------------------------------------
// Statistics.

/// Per name, the durations of the raw file's events of category `cat` (names starting with
/// `ProfilerStep` left out: stepcast reads those as step markers, not ops).
fn raw_durations_by_name(events: &[RawRecord], cat: &str) -> BTreeMap<String, Vec<i64>> {
    let mut by_name: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for e in events {
        if string(e, "cat").as_deref() != Some(cat) || number(e, "dur").is_none() {
            continue;
        }
        let name = string(e, "name").unwrap_or_default();
        if name.starts_with("ProfilerStep") {
            continue;
        }
        by_name
            .entry(name)
            .or_default()
            .push(exact_ns(e, "dur").expect("dur"));
    }
    by_name
}

/// Names by total time, longest first, then by name; with (count, total, min, max, sample std).
fn ranked(by_name: &BTreeMap<String, Vec<i64>>) -> Vec<(String, [i64; 4], f64)> {
    let mut out: Vec<(String, [i64; 4], f64)> = by_name
        .iter()
        .map(|(name, durs)| {
            let n = durs.len() as f64;
            let total: i64 = durs.iter().sum();
            let mean = total as f64 / n;
            let var = if durs.len() < 2 {
                0.0
            } else {
                durs.iter().map(|&d| (d as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0)
            };
            let min = *durs.iter().min().expect("a duration");
            let max = *durs.iter().max().expect("a duration");
            (
                name.clone(),
                [durs.len() as i64, total, min, max],
                var.sqrt(),
            )
        })
        .collect();
    out.sort_by(|a, b| b.1[1].cmp(&a.1[1]).then_with(|| a.0.cmp(&b.0)));
    out
}

fn check_ranking(
    trace: &Trace,
    what: &str,
    got: &[NameStats],
    expected: &[(String, [i64; 4], f64)],
) {
    assert_eq!(got.len(), expected.len().min(10), "{what}");
    for (g, (name, [count, total, min, max], std)) in got.iter().zip(expected) {
        assert_eq!(trace.name(g.name), name, "{what}: ranking");
        let i = &g.instances;
        assert_eq!(
            [i.count as i64, i.total_ns, i.min_ns, i.max_ns],
            [*count, *total, *min, *max],
            "{what}: {name}"
        );
        assert!(
            (i.std_ns - std).abs() <= 1e-6 * std.max(1.0),
            "{what}: {name} std {} vs {std}",
            i.std_ns
        );
        assert!((i.mean_ns - *total as f64 / *count as f64).abs() < 1e-6);
    }
}

#[test]
fn top_kernels_and_ops_match_the_raw_file() {
    for relative in [DF_INDEX, OWLV2] {
        let (trace, window) = load(relative);
        let stats = statistics(&trace, &window, 10);
        let events = raw_events(relative);
        let kernels = ranked(&raw_durations_by_name(&events, "kernel"));
        check_ranking(&trace, relative, &stats.top_kernels, &kernels);
        let ops = ranked(&raw_durations_by_name(&events, "cpu_op"));
        check_ranking(&trace, relative, &stats.top_ops, &ops);
        // Per step: one value per step, adding up to no more than all instances.
        for s in stats.top_kernels.iter().chain(&stats.top_ops) {
            assert_eq!(s.per_step.count, window.steps.len() as u64);
            assert!(s.per_step.total_ns <= s.instances.total_ns);
        }
    }
    // df_index_resolver's top kernel is its NCCL all-reduce, launched inside the steps.
    let (trace, window) = load(DF_INDEX);
    let top = &top_kernels(&trace, &window, 1)[0];
    assert!(trace.name(top.name).starts_with("ncclKernel_AllReduce"));
    assert_eq!(top.per_step.total_ns, top.instances.total_ns);
}

#[test]
fn queue_latency_and_launch_apis_match_the_raw_file() {
    let (trace, window) = load(DF_INDEX);
    let events = raw_events(DF_INDEX);
    let correlation = |e: &RawRecord| {
        let args = member(e, "args");
        python_int(args.as_ref().and_then(|a| a.get("correlation")))
    };
    let mut calls: BTreeMap<i64, (String, i64)> = BTreeMap::new();
    for e in events
        .iter()
        .filter(|e| string(e, "cat").as_deref() == Some("cuda_runtime"))
    {
        let name = string(e, "name").unwrap_or_default();
        calls.insert(correlation(e), (name, exact_ns(e, "ts").expect("ts")));
    }
    // Per API: device tasks; per kernel name: latencies.
    let mut per_api: BTreeMap<String, u64> = BTreeMap::new();
    let mut latencies: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for e in &events {
        let cat = string(e, "cat").unwrap_or_default();
        if !matches!(cat.as_str(), "kernel" | "gpu_memcpy" | "gpu_memset") {
            continue;
        }
        let (api, call_ts) = calls
            .get(&correlation(e))
            .expect("every launch is recorded");
        *per_api.entry(api.clone()).or_default() += 1;
        latencies
            .entry(string(e, "name").unwrap_or_default())
            .or_default()
            .push(exact_ns(e, "ts").expect("ts") - call_ts);
    }
    let apis = launch_apis(&trace, &window);
    let got: BTreeMap<String, u64> = apis
        .iter()
        .map(|a| {
            (
                trace.name(a.api.expect("launched")).to_string(),
                a.device_tasks,
            )
        })
        .collect();
    assert_eq!(got, per_api);
    // One launch call per device task here (no CUDA graphs).
    assert!(
        apis.iter()
            .all(|a| a.calls == a.device_tasks && a.tasks_per_call() == 1.0)
    );

    let got = queue_latency(&trace, &window);
    assert_eq!(got.len(), latencies.len());
    let expected = ranked(&latencies);
    for (g, (name, [count, total, min, max], _)) in got.iter().zip(&expected).take(20) {
        assert_eq!(trace.name(g.name), name);
        let l = &g.latency;
        assert_eq!(
            [l.count as i64, l.total_ns, l.min_ns, l.max_ns],
            [*count, *total, *min, *max]
        );
    }
}

#[test]
fn cuda_graph_launches_count_many_kernels_per_call() {
    // vLLM decode replays CUDA (HIP) graphs: one `hipGraphLaunch` launches many kernels.
    let (trace, window) =
        load("TraceLens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz");
    let apis = launch_apis(&trace, &window);
    let graph = apis
        .iter()
        .find(|a| a.api.is_some_and(|n| trace.name(n).contains("GraphLaunch")))
        .expect("a graph launch");
    assert!(graph.tasks_per_call() > 10.0, "{graph:?}");
}

#[test]
fn step_variability_is_over_the_measured_steps() {
    let (_, window) = load(DF_INDEX);
    let replay = self_replay(&window).expect("replay");
    let v = step_variability(&window);
    let spans: Vec<(u64, i64)> = replay
        .steps
        .iter()
        .map(|s| (s.number, s.measured_ns))
        .collect();
    assert_eq!(v.spans_ns, spans);
    let values: Vec<f64> = spans.iter().map(|&(_, ns)| ns as f64).collect();
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let std =
        (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (values.len() - 1) as f64).sqrt();
    assert!((v.all.cv() - std / mean).abs() < 1e-12);
    assert_eq!(
        v.steady.count,
        replay.steps.iter().filter(|s| s.steady).count() as u64
    );
}

// ---------------------------------------------------------------------------------------------
// Memory.

/// The raw file's `[memory]` events: (absolute time in ns, device, total allocated, pid, tid).
fn raw_memory(relative: &str) -> Vec<(i64, i64, i64, i64, i64)> {
    let (events, base) = raw_document(relative);
    events
        .iter()
        .filter(|e| string(e, "name").as_deref() == Some("[memory]"))
        .map(|e| {
            let args = member(e, "args").expect("args");
            let int = |key: &str| python_int(args.get(key));
            let device = if int("Device Type") == 0 {
                -1
            } else {
                int("Device Id")
            };
            let pid = python_int(member(e, "pid").as_ref());
            let tid = python_int(member(e, "tid").as_ref());
            (
                exact_ns(e, "ts").expect("ts") + base,
                device,
                int("Total Allocated"),
                pid,
                tid,
            )
        })
        .collect()
}

/// The innermost raw `cpu_op` on `(pid, tid)` holding absolute time `t`: the latest to start,
/// the shortest among those.
fn raw_innermost_op(relative: &str, pid: i64, tid: i64, t: i64) -> Option<String> {
    let (events, base) = raw_document(relative);
    events
        .iter()
        .filter(|e| string(e, "cat").as_deref() == Some("cpu_op"))
        .filter(|e| {
            python_int(member(e, "pid").as_ref()) == pid
                && python_int(member(e, "tid").as_ref()) == tid
        })
        .filter(|e| {
            !string(e, "name")
                .unwrap_or_default()
                .starts_with("ProfilerStep")
        })
        .filter_map(|e| {
            let start = exact_ns(e, "ts")? + base;
            let dur = exact_ns(e, "dur")?;
            (start <= t && t < start + dur).then(|| (start, -dur, string(e, "name")))
        })
        .max()
        .and_then(|(_, _, name)| name)
}

#[test]
fn memory_events_are_read_into_the_trace() {
    let (trace, _) = load(DF_INDEX);
    let raw = raw_memory(DF_INDEX);
    assert_eq!(trace.memory.len(), raw.len());
    assert_eq!(raw.len(), 28_010);
    assert!(
        trace
            .diagnostics
            .skipped
            .keys()
            .all(|k| !k.contains("memory")),
        "{:?}",
        trace.diagnostics.skipped
    );
    assert!(
        trace
            .memory
            .windows(2)
            .all(|w| w[0].time_ns <= w[1].time_ns)
    );
    assert!(
        trace
            .memory
            .iter()
            .all(|m| m.lane.is_some() && m.total_allocated.is_some())
    );
    let devices: BTreeSet<i64> = trace.memory.iter().map(|m| m.device).collect();
    assert_eq!(devices, BTreeSet::from([-1, 1]));
}

#[test]
fn memory_peak_is_the_largest_total_allocated_and_is_attributed() {
    for relative in [
        DF_INDEX,
        OWLV2,
        "TraceLens/tests/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    ] {
        let (trace, window) = load(relative);
        let mapping = map(&trace, &window);
        let devices = memory(&trace, &window, &mapping);
        let raw = raw_memory(relative);
        let raw_devices: BTreeSet<i64> = raw.iter().map(|m| m.1).collect();
        assert_eq!(
            devices.iter().map(|d| d.device).collect::<BTreeSet<_>>(),
            raw_devices,
            "{relative}"
        );
        for d in &devices {
            let of_device: Vec<_> = raw.iter().filter(|m| m.1 == d.device).collect();
            let max = of_device.iter().map(|m| m.2).max().expect("events");
            // The first event reaching the maximum, in time order (file order among ties).
            let mut in_time = of_device.clone();
            in_time.sort_by_key(|m| m.0);
            let first = in_time.iter().find(|m| m.2 == max).expect("the maximum");
            let what = format!("{relative} device {}", d.device);
            assert_eq!(d.peak.allocated_bytes, max, "{what}");
            assert_eq!(trace.origin_ns + d.peak.time_ns, first.0, "{what}");
            assert_eq!(d.timeline.len(), of_device.len(), "{what}");
            let lane = trace.lane(d.peak.lane.expect("a lane"));
            assert_eq!((lane.pid, lane.tid), (first.3, first.4), "{what}");
            let expected = raw_innermost_op(relative, first.3, first.4, first.0);
            let got = d
                .peak
                .op
                .map(|op| trace.name(trace.events[op.index()].name).to_string());
            assert_eq!(got, expected, "{what}: op");
            assert_eq!(d.peak.op_stack.last().copied(), d.peak.op, "{what}");
            // A GPU peak happens inside a training or inference step's host work.
            if d.device >= 0 {
                assert!(d.peak.task.is_some() && d.peak.phase.is_some(), "{what}");
            }
        }
    }
}
