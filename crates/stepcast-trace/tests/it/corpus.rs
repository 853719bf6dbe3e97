//! Every vendored trace is read (or rejected, for Execution Traces), the result is internally
//! consistent, and per-file facts match what the files hold.

use std::cmp::Reverse;

use stepcast_trace::{EventKind, LaneKind, ReadError, Runtime, Trace};

use crate::{FileKind, corpus};

/// Kineto traces and Execution Traces under `testdata/kineto/` (see `testdata/README.md`).
const KINETO_FILES: usize = 628;
const EXECUTION_TRACES: usize = 5;

/// Checks that hold for any successfully read trace. Returns the problems found.
fn check_invariants(trace: &Trace) -> Vec<String> {
    let mut problems = Vec::new();
    let lanes = trace.lanes.len();

    if trace.events.is_empty() {
        problems.push("no events".to_string());
    }
    for (i, e) in trace.events.iter().enumerate() {
        if e.lane.index() >= lanes {
            problems.push(format!("event {i}: lane {} >= {lanes} lanes", e.lane.0));
            continue;
        }
        if e.dur_ns < 0 {
            problems.push(format!("event {i}: negative dur_ns {}", e.dur_ns));
        }
        if e.start_ns < 0 {
            problems.push(format!(
                "event {i}: starts before the origin ({})",
                e.start_ns
            ));
        }
        if e.name.index() >= trace.names.len() {
            problems.push(format!("event {i}: name id {} out of range", e.name.0));
        }
        if u64::from(e.file_index) >= trace.records {
            problems.push(format!(
                "event {i}: file_index {} >= records {}",
                e.file_index, trace.records
            ));
        }
        let on_device = e.kind.is_device_task() || e.kind == EventKind::DeviceAnnotation;
        let lane_kind = trace.lanes[e.lane.index()].kind;
        let want = if on_device {
            LaneKind::DeviceStream
        } else {
            LaneKind::CpuThread
        };
        if lane_kind != want {
            problems.push(format!(
                "event {i} ({}) on a {lane_kind:?} lane",
                e.kind.as_str()
            ));
        }
        if problems.len() > 20 {
            return problems;
        }
    }
    // Documented order: lane, then start, then longest first.
    for (i, w) in trace.events.windows(2).enumerate() {
        let key = |e: &stepcast_trace::Event| (e.lane, e.start_ns, Reverse(e.dur_ns));
        if key(&w[0]) > key(&w[1]) {
            problems.push(format!(
                "events {i} and {} out of (lane, start, longest-first) order",
                i + 1
            ));
            break;
        }
    }
    // Lanes: sorted, unique, CPU threads before device streams.
    for w in trace.lanes.windows(2) {
        if (w[0].kind, w[0].pid, w[0].tid) >= (w[1].kind, w[1].pid, w[1].tid) {
            problems.push(format!(
                "lanes not sorted/unique: {:?} then {:?}",
                w[0], w[1]
            ));
            break;
        }
    }
    for (i, s) in trace.steps.iter().enumerate() {
        if s.lane.index() >= lanes {
            problems.push(format!("step {i}: lane {} >= {lanes} lanes", s.lane.0));
        } else if trace.lanes[s.lane.index()].kind != LaneKind::CpuThread {
            problems.push(format!("step {i}: not on a CPU thread"));
        }
        if s.dur_ns < 0 {
            problems.push(format!("step {i}: negative dur_ns"));
        }
    }
    for w in trace.steps.windows(2) {
        if w[0].start_ns > w[1].start_ns || w[0].number >= w[1].number {
            problems.push(format!(
                "steps out of order: #{} at {} then #{} at {}",
                w[0].number, w[0].start_ns, w[1].number, w[1].start_ns
            ));
        }
    }
    for w in trace.syncs.windows(2) {
        if w[0].start_ns > w[1].start_ns {
            problems.push("syncs not sorted by start".to_string());
            break;
        }
    }
    // Nothing counted twice: each record becomes at most one event, sync, step or skip.
    let accounted = trace.diagnostics.total_skipped()
        + trace.events.len() as u64
        + trace.syncs.len() as u64
        + trace.steps.len() as u64;
    if accounted > trace.records {
        problems.push(format!(
            "{accounted} records accounted for (skipped {} + events {} + syncs {} + steps {}) \
             but only {} read",
            trace.diagnostics.total_skipped(),
            trace.events.len(),
            trace.syncs.len(),
            trace.steps.len(),
            trace.records
        ));
    }
    if trace.records < trace.events.len() as u64 {
        problems.push("fewer records than events".to_string());
    }
    if trace.input_bytes == 0 {
        problems.push("input_bytes is 0".to_string());
    }
    if trace.runtime.is_none() {
        problems.push("runtime not set".to_string());
    }
    problems
}

#[test]
fn every_trace_is_read_or_named_as_an_execution_trace() {
    let corpus = corpus();
    let kineto = corpus.iter().filter(|l| l.kind == FileKind::Kineto).count();
    let et = corpus
        .iter()
        .filter(|l| l.kind == FileKind::ExecutionTrace)
        .count();
    assert_eq!(
        (kineto, et),
        (KINETO_FILES, EXECUTION_TRACES),
        "files found under testdata/kineto (Kineto, Execution Trace)"
    );

    let mut failures = Vec::new();
    for loaded in corpus {
        let shown = loaded.path.display().to_string();
        match (loaded.kind, &loaded.result) {
            (FileKind::Kineto, Ok(trace)) => {
                for problem in check_invariants(trace) {
                    failures.push(format!("{}: {problem}", loaded.relative));
                }
            }
            (FileKind::Kineto, Err(e)) => {
                failures.push(format!("{}: failed to read: {e}", loaded.relative));
            }
            (FileKind::ExecutionTrace, Err(e @ ReadError::ExecutionTrace { .. })) => {
                if !e.to_string().contains(&shown) {
                    failures.push(format!("{}: message lacks the path: {e}", loaded.relative));
                }
            }
            (FileKind::ExecutionTrace, Err(e)) => failures.push(format!(
                "{}: wrong error for an Execution Trace: {e:?}",
                loaded.relative
            )),
            (FileKind::ExecutionTrace, Ok(_)) => failures.push(format!(
                "{}: an Execution Trace was read as a Kineto trace",
                loaded.relative
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Rank information of a trace: `distributedInfo` absent, or its rank and world size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dist {
    Absent,
    Present(Option<i64>, Option<i64>),
}

/// Facts of one file, counted in the file itself with Python's `json` module.
struct Expect {
    file: &'static str,
    /// Elements of `traceEvents`.
    records: u64,
    runtime: Runtime,
    /// Host-side `ProfilerStep#N` ranges (`cpu_op` / `user_annotation`; the GPU-side
    /// `gpu_user_annotation` copy of a step is a device event, not a step marker).
    steps: usize,
    /// `X` events of category `kernel` / `Kernel` / `mtia_ccp_events`.
    kernels: usize,
    /// `X` events of category `cuda_sync`.
    syncs: usize,
    distributed: Dist,
}

const HTA: &str = "HolisticTraceAnalysis/tests/data/";

#[rustfmt::skip]
const EXPECT: &[Expect] = &[
    Expect { file: "HolisticTraceAnalysis/@b8cce2cd/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", records: 7604, runtime: Runtime::CpuOnly, steps: 5, kernels: 0, syncs: 0, distributed: Dist::Present(Some(34), Some(300)) },
    Expect { file: "HolisticTraceAnalysis/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", records: 220, runtime: Runtime::Rocm, steps: 2, kernels: 14, syncs: 0, distributed: Dist::Absent },
    Expect { file: "HolisticTraceAnalysis/tests/data/call_stack/backward_thread.json", records: 7, runtime: Runtime::Cuda, steps: 1, kernels: 1, syncs: 0, distributed: Dist::Present(Some(0), None) },
    Expect { file: "HolisticTraceAnalysis/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", records: 1408, runtime: Runtime::Cuda, steps: 0, kernels: 79, syncs: 41, distributed: Dist::Present(Some(0), None) },
    Expect { file: "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz", records: 92, runtime: Runtime::Cuda, steps: 1, kernels: 4, syncs: 4, distributed: Dist::Present(Some(0), None) },
    Expect { file: "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz", records: 149, runtime: Runtime::Cuda, steps: 0, kernels: 3, syncs: 5, distributed: Dist::Present(Some(0), None) },
    Expect { file: "HolisticTraceAnalysis/tests/data/critical_path/end_to_end/simple_add/input/trace.json.gz", records: 1348, runtime: Runtime::Cuda, steps: 0, kernels: 79, syncs: 41, distributed: Dist::Present(Some(0), None) },
    Expect { file: "HolisticTraceAnalysis/tests/data/critical_path/end_to_end/simple_add/output/overlaid_critical_path_trace.json.gz", records: 1732, runtime: Runtime::Cuda, steps: 0, kernels: 79, syncs: 41, distributed: Dist::Present(Some(0), None) },
    Expect { file: "HolisticTraceAnalysis/tests/data/df_index_resolver/df_index_resolver.json.gz", records: 216092, runtime: Runtime::Cuda, steps: 5, kernels: 19370, syncs: 0, distributed: Dist::Present(Some(1), Some(2)) },
    Expect { file: "HolisticTraceAnalysis/tests/data/distributed_info_unavailable/distributed_info_not_found.json.gz", records: 2467, runtime: Runtime::CpuOnly, steps: 1, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "HolisticTraceAnalysis/tests/data/execution_trace/benchmark_simple_add_trace.json.gz", records: 111, runtime: Runtime::Cuda, steps: 0, kernels: 4, syncs: 0, distributed: Dist::Present(Some(0), None) },
    Expect { file: "HolisticTraceAnalysis/tests/data/large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz", records: 2, runtime: Runtime::Cuda, steps: 0, kernels: 1, syncs: 0, distributed: Dist::Absent },
    Expect { file: "HolisticTraceAnalysis/tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz", records: 16158, runtime: Runtime::Mtia, steps: 0, kernels: 1313, syncs: 0, distributed: Dist::Absent },
    Expect { file: "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz", records: 40573, runtime: Runtime::Cuda, steps: 3, kernels: 2700, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "HolisticTraceAnalysis/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", records: 68692, runtime: Runtime::Cuda, steps: 5, kernels: 4350, syncs: 0, distributed: Dist::Present(Some(0), Some(1)) },
    Expect { file: "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz", records: 109123, runtime: Runtime::Cuda, steps: 6, kernels: 8568, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "HolisticTraceAnalysis/tests/data/trace_diff/test/test.json.gz", records: 105167, runtime: Runtime::Cuda, steps: 6, kernels: 9876, syncs: 0, distributed: Dist::Present(Some(1), Some(2)) },
    Expect { file: "HolisticTraceAnalysis/tests/data/trace_file_list/inference_rank_1.json.gz", records: 54, runtime: Runtime::Cuda, steps: 0, kernels: 4, syncs: 0, distributed: Dist::Present(Some(1), None) },
    Expect { file: "HolisticTraceAnalysis/tests/data/triton_example/triton_example.json.gz", records: 71, runtime: Runtime::Cuda, steps: 1, kernels: 1, syncs: 0, distributed: Dist::Absent },
    Expect { file: "HolisticTraceAnalysis/tests/data/with_gpu_user_annotation/step_based_trace_2543932.json.gz", records: 1344, runtime: Runtime::Cuda, steps: 0, kernels: 130, syncs: 0, distributed: Dist::Present(Some(0), None) },
    Expect { file: "TraceLens/tests/traces/h100/Falconsai_nsfw_image_detection__1016002.json.gz", records: 5138, runtime: Runtime::Cuda, steps: 1, kernels: 154, syncs: 0, distributed: Dist::Absent },
    Expect { file: "TraceLens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz", records: 18221, runtime: Runtime::Cuda, steps: 1, kernels: 1465, syncs: 0, distributed: Dist::Absent },
    Expect { file: "TraceLens/tests/traces/h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz", records: 50125, runtime: Runtime::Cuda, steps: 1, kernels: 446, syncs: 0, distributed: Dist::Absent },
    Expect { file: "TraceLens/tests/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz", records: 2551, runtime: Runtime::Cuda, steps: 1, kernels: 60, syncs: 0, distributed: Dist::Absent },
    Expect { file: "TraceLens/tests/traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz", records: 132152, runtime: Runtime::Cuda, steps: 1, kernels: 4330, syncs: 0, distributed: Dist::Absent },
    Expect { file: "TraceLens/tests/traces/inference/vllm_decode_full/graph_execution.json.gz", records: 1993, runtime: Runtime::Rocm, steps: 0, kernels: 425, syncs: 0, distributed: Dist::Present(Some(0), Some(1)) },
    Expect { file: "TraceLens/tests/traces/inference/vllm_prefilldecode_piecewise/graph_execution.json.gz", records: 19289, runtime: Runtime::Rocm, steps: 0, kernels: 413, syncs: 0, distributed: Dist::Present(Some(0), Some(1)) },
    Expect { file: "TraceLens/tests/traces/mi210/gpu_only_trace/gpu_only_trace.json.gz", records: 2443, runtime: Runtime::Rocm, steps: 0, kernels: 562, syncs: 0, distributed: Dist::Absent },
    Expect { file: "TraceLens/tests/traces/perf_model/normalization/normalization_layer_test.json.gz", records: 8500, runtime: Runtime::Rocm, steps: 0, kernels: 168, syncs: 0, distributed: Dist::Absent },
    Expect { file: "TraceLens/tests/traces/torch_compile_triton/trace.json.gz", records: 246, runtime: Runtime::Rocm, steps: 0, kernels: 12, syncs: 0, distributed: Dist::Absent },
    Expect { file: "kineto/tb_plugin/samples/resnet50_autograd_api_num_workers_0/worker0.pt.trace.json.gz", records: 79711, runtime: Runtime::Cuda, steps: 0, kernels: 9329, syncs: 0, distributed: Dist::Absent },
    Expect { file: "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz", records: 75718, runtime: Runtime::Cuda, steps: 6, kernels: 8772, syncs: 0, distributed: Dist::Absent },
    Expect { file: "kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_0/worker0.pt.trace.json.gz", records: 73639, runtime: Runtime::Cuda, steps: 6, kernels: 9564, syncs: 0, distributed: Dist::Absent },
    Expect { file: "kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_4/worker0.pt.trace.json.gz", records: 67781, runtime: Runtime::Cuda, steps: 6, kernels: 9456, syncs: 0, distributed: Dist::Absent },
    Expect { file: "param/et_replay/tests/inputs/linear_kineto.json.gz", records: 86859, runtime: Runtime::Cuda, steps: 0, kernels: 8716, syncs: 0, distributed: Dist::Absent },
    Expect { file: "param/et_replay/tests/inputs/resnet_kineto.json.gz", records: 111631, runtime: Runtime::Cuda, steps: 0, kernels: 9628, syncs: 0, distributed: Dist::Absent },
    Expect { file: "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json", records: 3290, runtime: Runtime::Cuda, steps: 1, kernels: 245, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json", records: 3424, runtime: Runtime::Cuda, steps: 1, kernels: 310, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker2_step_12.1694128201554.pt.trace.json", records: 3268, runtime: Runtime::Cuda, steps: 1, kernels: 246, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker3_step_12.1694128201557.pt.trace.json", records: 3474, runtime: Runtime::Cuda, steps: 1, kernels: 315, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker4_step_12.1694128201547.pt.trace.json", records: 3310, runtime: Runtime::Cuda, steps: 1, kernels: 251, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker5_step_12.1694128201549.pt.trace.json", records: 3250, runtime: Runtime::Cuda, steps: 1, kernels: 245, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker6_step_12.1694128201553.pt.trace.json", records: 3272, runtime: Runtime::Cuda, steps: 1, kernels: 246, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker7_step_12.1694128201553.pt.trace.json", records: 3250, runtime: Runtime::Cuda, steps: 1, kernels: 246, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
Expect { file: "stepcast/cpu-loader-pairs/heavyloader-workers0.json.gz", records: 4475, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/bigcnn-base.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/bigcnn-bnfused.json.gz", records: 4607, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/cnn-base.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/cnn-bnfused.json.gz", records: 4607, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/rerun/bigcnn-base.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/rerun/bigcnn-bnrelu.json.gz", records: 4967, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/rerun/cnn-base.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/rerun/cnn-bnrelu.json.gz", records: 4967, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/third/cnn64-base.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/third/cnn64-bnrelu.json.gz", records: 4967, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/third/midcnn-base.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-batchnorm-pairs/third/midcnn-bnrelu.json.gz", records: 4967, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/heavyloader-workers1.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/heavyloader-workers2.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/heavyloader-workers4.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/loader-workers0.json.gz", records: 4475, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/loader-workers1.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/loader-workers2.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/loader-workers4.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/loader2t-workers0.json.gz", records: 4475, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/loader2t-workers1.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/loader2t-workers2.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/rerun/textloader-workers0.json.gz", records: 8811, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/rerun/textloader-workers1.json.gz", records: 8371, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/rerun/textloader-workers2.json.gz", records: 8371, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/rerun/textloader-workers4.json.gz", records: 8371, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/steady-heavyloader-workers0.json.gz", records: 7451, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/steady-heavyloader-workers1.json.gz", records: 5491, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/steady-heavyloader-workers2.json.gz", records: 5491, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/steady-heavyloader-workers4.json.gz", records: 5491, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/textloader-workers0.json.gz", records: 8811, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/textloader-workers1.json.gz", records: 8371, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/textloader-workers2.json.gz", records: 8371, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/steady/textloader-workers4.json.gz", records: 8371, runtime: Runtime::CpuOnly, steps: 10, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/xeon/heavyloader-workers0.json.gz", records: 4475, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/xeon/heavyloader-workers1.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/xeon/heavyloader-workers2.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/xeon/heavyloader-workers4.json.gz", records: 3303, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/xeon/loader-workers0.json.gz", records: 4475, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/xeon/loader-workers1.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/xeon/loader-workers2.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-loader-pairs/xeon/loader-workers4.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/cnn-adam-fused.json.gz", records: 3383, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/cnn-adam-loop.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/mlp-adam-foreach.json.gz", records: 10655, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/mlp-adam-fused.json.gz", records: 6941, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/mlp-adam-loop.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/mlp-sgd-fused.json.gz", records: 5399, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/mlp-sgd-loop.json.gz", records: 6737, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/transformer-adamw-fused.json.gz", records: 8471, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/transformer-adamw-loop.json.gz", records: 11771, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/widemlp-adam-fused.json.gz", records: 1835, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/cnn-adam-fused.json.gz", records: 3383, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/cnn-adam-loop.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/embmlp-adam-fused.json.gz", records: 1325, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/embmlp-adam-loop.json.gz", records: 1853, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/gelumlp-amsgrad-fused.json.gz", records: 2657, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/gelumlp-amsgrad-loop.json.gz", records: 4013, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/lstm-adam-fused.json.gz", records: 1817, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/lstm-adam-loop.json.gz", records: 2885, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/mlp-adagrad-fused.json.gz", records: 6941, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/mlp-adagrad-loop.json.gz", records: 8273, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/mlp-adam-foreach.json.gz", records: 10655, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/mlp-adam-fused.json.gz", records: 6941, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/mlp-adam-loop.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/transformer-adamw-fused.json.gz", records: 8471, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/transformer-adamw-loop.json.gz", records: 11771, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/widemlp-adam-fused.json.gz", records: 1835, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/xeon/widemlp-adam-loop.json.gz", records: 2687, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/big/bigcnn-base.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/big/bigcnn-checkpoint.json.gz", records: 6311, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/big/biggpt-base.json.gz", records: 15569, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/big/biggpt-checkpoint.json.gz", records: 18053, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/big/bigresmlp-base.json.gz", records: 8747, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/big/bigresmlp-checkpoint.json.gz", records: 9683, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/big/bigtransformer-base.json.gz", records: 11051, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/big/bigtransformer-checkpoint.json.gz", records: 13043, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-step-ranges/userstep.json.gz", records: 1361, runtime: Runtime::CpuOnly, steps: 0, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-step-ranges/inference.json.gz", records: 2080, runtime: Runtime::CpuOnly, steps: 0, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/widemlp-adam-loop.json.gz", records: 2687, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/gelumlp-adam-loop-noshapes.json.gz", records: 3941, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/gelumlp-adam-fused-noshapes.json.gz", records: 2657, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/gpt-loop.json.gz", records: 15569, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-optimizer-pairs/gpt-fused.json.gz", records: 11153, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/cnn-base.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/cnn-compiled.json.gz", records: 3833, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/cnn-threads1.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/cnn-threads2.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-ddp-pairs/ddp-gloo2/rank0.json.gz", records: 12147, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/ddp-gloo2/rank1.json.gz", records: 12147, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/ddp-single.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/world4/ddp-gloo4/rank0.json.gz", records: 12147, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-ddp-pairs/world4/ddp-gloo4/rank1.json.gz", records: 12147, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-ddp-pairs/world4/ddp-gloo4/rank2.json.gz", records: 12147, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-ddp-pairs/world4/ddp-gloo4/rank3.json.gz", records: 12147, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-ddp-pairs/world4/ddp-single.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-ddp-pairs/transformer/rerun/ddp-single.json.gz", records: 11051, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/transformer/rerun/ddp-gloo2/rank0.json.gz", records: 12381, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/transformer/rerun/ddp-gloo2/rank1.json.gz", records: 12381, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/gpt/ddp-single.json.gz", records: 15569, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/gpt/ddp-gloo2/rank0.json.gz", records: 17817, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/gpt/ddp-gloo2/rank1.json.gz", records: 17817, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/cnn/ddp-single.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/cnn/ddp-gloo2/rank0.json.gz", records: 6759, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/cnn/ddp-gloo2/rank1.json.gz", records: 6759, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/transformer/ddp-single.json.gz", records: 11051, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/transformer/ddp-gloo2/rank0.json.gz", records: 12381, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-ddp-pairs/transformer/ddp-gloo2/rank1.json.gz", records: 12381, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(2)) },
    Expect { file: "stepcast/cpu-pairs/ddp-gloo2/rank0.json.gz", records: 12147, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-pairs/ddp-gloo2/rank1.json.gz", records: 12147, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(2)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp2-adam-fused/rank0.json.gz", records: 4273, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp2-adam-fused/rank1.json.gz", records: 4273, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp2-adam-fused/rank2.json.gz", records: 4273, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp2-adam-fused/rank3.json.gz", records: 4273, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp2-adam-loop/rank0.json.gz", records: 5557, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp2-adam-loop/rank1.json.gz", records: 5557, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp2-adam-loop/rank2.json.gz", records: 5557, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp2-adam-loop/rank3.json.gz", records: 5557, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-fused/rank0.json.gz", records: 4273, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(6)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-fused/rank1.json.gz", records: 4273, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(6)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-fused/rank2.json.gz", records: 4273, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(6)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-fused/rank3.json.gz", records: 4273, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(6)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-fused/rank4.json.gz", records: 4273, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(6)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-fused/rank5.json.gz", records: 4273, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(6)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-loop/rank0.json.gz", records: 5557, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(6)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-loop/rank1.json.gz", records: 5557, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(6)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-loop/rank2.json.gz", records: 5557, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(6)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-loop/rank3.json.gz", records: 5557, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(6)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-loop/rank4.json.gz", records: 5557, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(6)) },
    Expect { file: "stepcast/cpu-job-pairs/tp2dp3-adam-loop/rank5.json.gz", records: 5557, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/fsdp2x2/rank0.json.gz", records: 9697, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/fsdp2x2/rank1.json.gz", records: 9697, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/fsdp2x2/rank2.json.gz", records: 9697, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/fsdp2x2/rank3.json.gz", records: 9697, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-et/cnn_kineto.json.gz", records: 1244, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-jobs/tp2dp2/rank0.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2/rank1.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2/rank2.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2/rank3.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-dp-major/rank0.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-dp-major/rank1.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-dp-major/rank2.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-dp-major/rank3.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp3/rank0.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp3/rank1.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp3/rank2.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp3/rank3.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp3/rank4.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp3/rank5.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2/rank0.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2/rank1.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2/rank2.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2/rank3.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2/rank4.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2/rank5.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2/rank6.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2/rank7.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3/rank0.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3/rank1.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3/rank2.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3/rank3.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3/rank4.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3/rank5.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2/rank0.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2/rank1.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2/rank2.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2/rank3.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2/rank4.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2/rank5.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2/rank6.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2/rank7.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2/rank0.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2/rank1.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2/rank2.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2/rank3.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2/rank0.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2/rank1.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2/rank2.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2/rank3.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2/rank4.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2/rank5.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2/rank6.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2/rank7.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank0.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank1.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank2.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank3.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank4.json.gz", records: 6445, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank5.json.gz", records: 6445, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank6.json.gz", records: 6445, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank7.json.gz", records: 6445, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank8.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(8), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank9.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(9), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank10.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(10), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp3dp2/rank11.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(11), Some(12)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-2hosts/rank0.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-2hosts/rank1.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-2hosts/rank2.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-2hosts/rank3.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-2hosts/rank0.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-2hosts/rank1.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-2hosts/rank2.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-2hosts/rank3.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-2hosts/rank4.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-2hosts/rank5.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-2hosts/rank6.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-2hosts/rank7.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp4-2hosts/rank0.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp4-2hosts/rank1.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp4-2hosts/rank2.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp4-2hosts/rank3.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp4-2hosts/rank4.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp4-2hosts/rank5.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp4-2hosts/rank6.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp4-2hosts/rank7.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-2hosts/rank0.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-2hosts/rank1.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-2hosts/rank2.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-2hosts/rank3.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/fsdp2x2-2hosts/rank0.json.gz", records: 9697, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/fsdp2x2-2hosts/rank1.json.gz", records: 9697, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/fsdp2x2-2hosts/rank2.json.gz", records: 9697, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/fsdp2x2-2hosts/rank3.json.gz", records: 9697, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-2hosts/rank0.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-2hosts/rank1.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-2hosts/rank2.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-2hosts/rank3.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank0.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank1.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank2.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank3.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank4.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank5.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank6.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank7.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank8.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(8), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank9.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(9), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank10.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(10), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank11.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(11), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank12.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(12), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank13.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(13), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank14.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(14), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp4/rank15.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(15), Some(16)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-token/rank0.json.gz", records: 11753, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-token/rank1.json.gz", records: 11753, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-token/rank2.json.gz", records: 11753, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-token/rank3.json.gz", records: 11753, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp2dp2/rank0.json.gz", records: 15193, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp2dp2/rank1.json.gz", records: 15193, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp2dp2/rank2.json.gz", records: 15193, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp2dp2/rank3.json.gz", records: 15193, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp4dp2/rank0.json.gz", records: 16489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp4dp2/rank1.json.gz", records: 16489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp4dp2/rank2.json.gz", records: 16489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp4dp2/rank3.json.gz", records: 16489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp4dp2/rank4.json.gz", records: 16489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp4dp2/rank5.json.gz", records: 16489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp4dp2/rank6.json.gz", records: 16489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dtensor-tp4dp2/rank7.json.gz", records: 16489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2/rank0.json.gz", records: 4887, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2/rank1.json.gz", records: 4887, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2/rank2.json.gz", records: 5765, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2/rank3.json.gz", records: 5765, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp4dp2/rank0.json.gz", records: 4887, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp4dp2/rank1.json.gz", records: 4887, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp4dp2/rank2.json.gz", records: 5153, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp4dp2/rank3.json.gz", records: 5153, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp4dp2/rank4.json.gz", records: 5153, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp4dp2/rank5.json.gz", records: 5153, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp4dp2/rank6.json.gz", records: 5765, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp4dp2/rank7.json.gz", records: 5765, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp2dp2-fsdp/rank0.json.gz", records: 11775, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp2dp2-fsdp/rank1.json.gz", records: 11775, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp2dp2-fsdp/rank2.json.gz", records: 12885, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp2dp2-fsdp/rank3.json.gz", records: 12885, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2/rank0.json.gz", records: 10371, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2/rank1.json.gz", records: 10371, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2/rank2.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2/rank3.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2/rank4.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2/rank5.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2/rank6.json.gz", records: 11249, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2/rank7.json.gz", records: 11249, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dp4-bookkeeping/rank0.json.gz", records: 3409, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dp4-bookkeeping/rank1.json.gz", records: 3253, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dp4-bookkeeping/rank2.json.gz", records: 3253, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dp4-bookkeeping/rank3.json.gz", records: 3253, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dp8-bookkeeping/rank0.json.gz", records: 4153, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dp8-bookkeeping/rank1.json.gz", records: 3853, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dp8-bookkeeping/rank2.json.gz", records: 3853, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dp8-bookkeeping/rank3.json.gz", records: 3853, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dp8-bookkeeping/rank4.json.gz", records: 3853, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dp8-bookkeeping/rank5.json.gz", records: 3853, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dp8-bookkeeping/rank6.json.gz", records: 3853, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dp8-bookkeeping/rank7.json.gz", records: 3853, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/dp4-bookkeeping-compiled/rank0.json.gz", records: 3445, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dp4-bookkeeping-compiled/rank1.json.gz", records: 3289, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dp4-bookkeeping-compiled/rank2.json.gz", records: 3289, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/dp4-bookkeeping-compiled/rank3.json.gz", records: 3289, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2-2hosts/rank0.json.gz", records: 4887, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2-2hosts/rank1.json.gz", records: 4887, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2-2hosts/rank2.json.gz", records: 5765, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2-2hosts/rank3.json.gz", records: 5765, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-titan/rank0.json.gz", records: 25525, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-titan/rank1.json.gz", records: 25525, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-titan/rank2.json.gz", records: 25525, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-titan/rank3.json.gz", records: 25525, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-titan/rank4.json.gz", records: 26611, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-titan/rank5.json.gz", records: 26611, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-titan/rank6.json.gz", records: 26611, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-titan/rank7.json.gz", records: 26611, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp2dp2/rank0.json.gz", records: 10515, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp2dp2/rank1.json.gz", records: 10515, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp2dp2/rank2.json.gz", records: 11489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp2dp2/rank3.json.gz", records: 11489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-fsdp/rank0.json.gz", records: 12351, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-fsdp/rank1.json.gz", records: 12351, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-fsdp/rank2.json.gz", records: 13449, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-fsdp/rank3.json.gz", records: 13449, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-fsdp/rank4.json.gz", records: 13449, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-fsdp/rank5.json.gz", records: 13449, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-fsdp/rank6.json.gz", records: 13989, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-fsdp/rank7.json.gz", records: 13989, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-2x2/rank0.json.gz", records: 7723, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-2x2/rank1.json.gz", records: 8947, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-2x2/rank2.json.gz", records: 7723, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-2x2/rank3.json.gz", records: 8947, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-4x2/rank0.json.gz", records: 9019, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-4x2/rank1.json.gz", records: 9019, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-4x2/rank2.json.gz", records: 9019, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-4x2/rank3.json.gz", records: 10243, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-4x2/rank4.json.gz", records: 9019, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-4x2/rank5.json.gz", records: 9019, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-4x2/rank6.json.gz", records: 9019, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp1-4x2/rank7.json.gz", records: 10243, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp4/rank0.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp4/rank1.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp4/rank2.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp4/rank3.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp8/rank0.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp8/rank1.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp8/rank2.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp8/rank3.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp8/rank4.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp8/rank5.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp8/rank6.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/zero-dp8/rank7.json.gz", records: 2671, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp2dp2/rank0.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp2dp2/rank1.json.gz", records: 8006, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp2dp2/rank2.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp2dp2/rank3.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp4dp2/rank0.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp4dp2/rank1.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp4dp2/rank2.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp4dp2/rank3.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp4dp2/rank4.json.gz", records: 8006, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp4dp2/rank5.json.gz", records: 8006, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp4dp2/rank6.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp4dp2/rank7.json.gz", records: 8145, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-noshapes/rank0.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-noshapes/rank1.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-noshapes/rank2.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-noshapes/rank3.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-noshapes/rank4.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-noshapes/rank5.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-noshapes/rank6.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp4dp2-noshapes/rank7.json.gz", records: 4189, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-noshapes/rank0.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-noshapes/rank1.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-noshapes/rank2.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/ep2dp2-noshapes/rank3.json.gz", records: 8789, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-noshapes/rank0.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-noshapes/rank1.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-noshapes/rank2.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-noshapes/rank3.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-noshapes/rank0.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-noshapes/rank1.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-noshapes/rank2.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-noshapes/rank3.json.gz", records: 5821, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-noshapes/rank4.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-noshapes/rank5.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-noshapes/rank6.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/tp2pp2dp2-noshapes/rank7.json.gz", records: 6949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pp3dp2-noshapes/rank0.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp3dp2-noshapes/rank1.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp3dp2-noshapes/rank2.json.gz", records: 5985, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp3dp2-noshapes/rank3.json.gz", records: 5985, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp3dp2-noshapes/rank4.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp3dp2-noshapes/rank5.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-2hosts-noshapes/rank0.json.gz", records: 10371, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-2hosts-noshapes/rank1.json.gz", records: 10371, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-2hosts-noshapes/rank2.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-2hosts-noshapes/rank3.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-2hosts-noshapes/rank4.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-2hosts-noshapes/rank5.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-2hosts-noshapes/rank6.json.gz", records: 11249, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-2hosts-noshapes/rank7.json.gz", records: 11249, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-noshapes/rank0.json.gz", records: 10515, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-noshapes/rank1.json.gz", records: 10515, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-noshapes/rank2.json.gz", records: 10949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-noshapes/rank3.json.gz", records: 10949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-noshapes/rank4.json.gz", records: 10949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-noshapes/rank5.json.gz", records: 10949, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-noshapes/rank6.json.gz", records: 11489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-zero-bubble-pp4dp2-noshapes/rank7.json.gz", records: 11489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-noshapes/rank0.json.gz", records: 10371, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-noshapes/rank1.json.gz", records: 10371, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-noshapes/rank2.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-noshapes/rank3.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-noshapes/rank4.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-noshapes/rank5.json.gz", records: 10709, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-noshapes/rank6.json.gz", records: 11249, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp4dp2-noshapes/rank7.json.gz", records: 11249, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2-2hosts-noshapes/rank0.json.gz", records: 4887, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2-2hosts-noshapes/rank1.json.gz", records: 4887, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2-2hosts-noshapes/rank2.json.gz", records: 5765, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-pp2dp2-2hosts-noshapes/rank3.json.gz", records: 5765, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp4dp2-2hosts-noshapes/rank0.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pp4dp2-2hosts-noshapes/rank1.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pp4dp2-2hosts-noshapes/rank2.json.gz", records: 5985, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pp4dp2-2hosts-noshapes/rank3.json.gz", records: 5985, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pp4dp2-2hosts-noshapes/rank4.json.gz", records: 5985, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pp4dp2-2hosts-noshapes/rank5.json.gz", records: 5985, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pp4dp2-2hosts-noshapes/rank6.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pp4dp2-2hosts-noshapes/rank7.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-2hosts-noshapes/rank0.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-2hosts-noshapes/rank1.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-2hosts-noshapes/rank2.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2-2hosts-noshapes/rank3.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3-noshapes/rank0.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3-noshapes/rank1.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3-noshapes/rank2.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3-noshapes/rank3.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3-noshapes/rank4.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp3-noshapes/rank5.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2-noshapes/rank0.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2-noshapes/rank1.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2-noshapes/rank2.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2-noshapes/rank3.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2-noshapes/rank4.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2-noshapes/rank5.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2-noshapes/rank6.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/fsdp4x2-noshapes/rank7.json.gz", records: 10777, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp2dp2-fsdp-noshapes/rank0.json.gz", records: 11775, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp2dp2-fsdp-noshapes/rank1.json.gz", records: 11775, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp2dp2-fsdp-noshapes/rank2.json.gz", records: 12885, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pipelining-interleaved-pp2dp2-fsdp-noshapes/rank3.json.gz", records: 12885, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-tensorboard/vm_18089.1796023331586411806.pt.trace.json.gz", records: 2104, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-tensorboard/vm_18089.1796023332432871162.pt.trace.json.gz", records: 2104, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-tensorboard/vm_18090.1796023331568816826.pt.trace.json.gz", records: 2104, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-tensorboard/vm_18090.1796023332389847989.pt.trace.json.gz", records: 2104, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-tensorboard/vm_18091.1796023331587008345.pt.trace.json.gz", records: 2104, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-tensorboard/vm_18091.1796023332442877099.pt.trace.json.gz", records: 2104, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-tensorboard/vm_18092.1796023331575399752.pt.trace.json.gz", records: 2104, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/tp2dp2-tensorboard/vm_18092.1796023332427298730.pt.trace.json.gz", records: 2104, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp2dp3/rank0.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp2dp3/rank1.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp2dp3/rank2.json.gz", records: 8145, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp2dp3/rank3.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp2dp3/rank4.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/powersgd-tp2dp3/rank5.json.gz", records: 7867, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(6)) },
    Expect { file: "stepcast/cpu-jobs/ep4dp2/rank0.json.gz", records: 8813, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/ep4dp2/rank1.json.gz", records: 8813, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/ep4dp2/rank2.json.gz", records: 8813, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/ep4dp2/rank3.json.gz", records: 8813, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/ep4dp2/rank4.json.gz", records: 8813, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(4), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/ep4dp2/rank5.json.gz", records: 8813, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(5), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/ep4dp2/rank6.json.gz", records: 8813, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(6), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/ep4dp2/rank7.json.gz", records: 8813, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(7), Some(8)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2/rank0.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2/rank1.json.gz", records: 5601, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2/rank2.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/cpu-jobs/pp2dp2/rank3.json.gz", records: 6489, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/cpu-pairs/ddp-single.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/cpu-pairs/loader-workers0.json.gz", records: 4475, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/loader-workers1.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/loader-workers2.json.gz", records: 3299, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/mlp-base.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/mlp-compiled.json.gz", records: 7247, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/mlp-fused.json.gz", records: 6941, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/mlp-loop.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/mlp-threads1.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/mlp-threads2.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/transformer-base.json.gz", records: 11051, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/transformer-compiled.json.gz", records: 5837, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/transformer-threads1.json.gz", records: 11051, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-pairs/transformer-threads2.json.gz", records: 11087, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/cnn-base.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/cnn-checkpoint.json.gz", records: 6311, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/mlp-base.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/mlp-checkpoint.json.gz", records: 12035, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/transformer-base.json.gz", records: 11051, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/transformer-checkpoint.json.gz", records: 13043, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/gpt-base.json.gz", records: 15569, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/gpt-checkpoint.json.gz", records: 18053, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/gpt-reentrant.json.gz", records: 17693, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/resmlp-base.json.gz", records: 8747, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-recompute-pairs/resmlp-checkpoint.json.gz", records: 9683, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-gist-pairs/bigcnn-base.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-gist-pairs/bigcnn-gist.json.gz", records: 5975, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-gist-pairs/bigresmlp-base.json.gz", records: 8747, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-gist-pairs/bigresmlp-gist.json.gz", records: 10139, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-gist-pairs/rerun/bigresmlp-base.json.gz", records: 8747, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-gist-pairs/rerun/bigresmlp-gist.json.gz", records: 10139, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-gist-pairs/biggpt-base.json.gz", records: 15569, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-gist-pairs/biggpt-gist.json.gz", records: 18065, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-gist-pairs/bigtransformer-base.json.gz", records: 11051, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-gist-pairs/bigtransformer-gist.json.gz", records: 12587, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/mlp-base.json.gz", records: 7680, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/transformer-base.json.gz", records: 7649, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/cnn-base.json.gz", records: 4477, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/gpt-base.json.gz", records: 11121, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/resmlp-base.json.gz", records: 6701, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/bigcnn-base.json.gz", records: 4477, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/bigresmlp-base.json.gz", records: 6701, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/biggpt-base.json.gz", records: 11123, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/bigtransformer-base.json.gz", records: 7650, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/bigcnn-checkpoint.json.gz", records: 5503, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/bigresmlp-checkpoint.json.gz", records: 7338, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/biggpt-checkpoint.json.gz", records: 12659, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-memory-probe/traces/bigtransformer-checkpoint.json.gz", records: 8890, runtime: Runtime::CpuOnly, steps: 3, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-thread-pairs/cnn-threads1.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-thread-pairs/cnn-threads2.json.gz", records: 5207, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-thread-pairs/mlp-threads1.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-thread-pairs/mlp-threads2.json.gz", records: 10385, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-thread-pairs/transformer-threads1.json.gz", records: 11051, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/cpu-thread-pairs/transformer-threads2.json.gz", records: 11087, runtime: Runtime::CpuOnly, steps: 6, kernels: 0, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/ddp-gloo-w1/rank0.json.gz", records: 13369, runtime: Runtime::Cuda, steps: 6, kernels: 1104, syncs: 0, distributed: Dist::Present(Some(0), Some(1)) },
    Expect { file: "stepcast/h200-pairs/ddp-gloo-w2/rank0.json.gz", records: 13377, runtime: Runtime::Cuda, steps: 6, kernels: 1107, syncs: 0, distributed: Dist::Present(Some(0), Some(2)) },
    Expect { file: "stepcast/h200-pairs/ddp-gloo-w2/rank1.json.gz", records: 13371, runtime: Runtime::Cuda, steps: 6, kernels: 1104, syncs: 0, distributed: Dist::Present(Some(1), Some(2)) },
    Expect { file: "stepcast/h200-pairs/ddp-gloo-w4/rank0.json.gz", records: 13379, runtime: Runtime::Cuda, steps: 6, kernels: 1108, syncs: 0, distributed: Dist::Present(Some(0), Some(4)) },
    Expect { file: "stepcast/h200-pairs/ddp-gloo-w4/rank1.json.gz", records: 13385, runtime: Runtime::Cuda, steps: 6, kernels: 1111, syncs: 0, distributed: Dist::Present(Some(1), Some(4)) },
    Expect { file: "stepcast/h200-pairs/ddp-gloo-w4/rank2.json.gz", records: 13373, runtime: Runtime::Cuda, steps: 6, kernels: 1104, syncs: 0, distributed: Dist::Present(Some(2), Some(4)) },
    Expect { file: "stepcast/h200-pairs/ddp-gloo-w4/rank3.json.gz", records: 13377, runtime: Runtime::Cuda, steps: 6, kernels: 1108, syncs: 0, distributed: Dist::Present(Some(3), Some(4)) },
    Expect { file: "stepcast/h200-pairs/loader-workers0-prof_stack.json.gz", records: 39507, runtime: Runtime::Cuda, steps: 6, kernels: 2256, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/loader-workers0.json.gz", records: 26963, runtime: Runtime::Cuda, steps: 6, kernels: 2256, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/loader-workers1.json.gz", records: 22385, runtime: Runtime::Cuda, steps: 6, kernels: 2256, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/loader-workers2.json.gz", records: 22401, runtime: Runtime::Cuda, steps: 6, kernels: 2263, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/loader-workers4.json.gz", records: 22385, runtime: Runtime::Cuda, steps: 6, kernels: 2256, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/mlp-amp.json.gz", records: 12719, runtime: Runtime::Cuda, steps: 6, kernels: 1080, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/mlp-bf16.json.gz", records: 12251, runtime: Runtime::Cuda, steps: 6, kernels: 1032, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/mlp-compiled.json.gz", records: 5913, runtime: Runtime::Cuda, steps: 6, kernels: 732, syncs: 0, distributed: Dist::Present(Some(0), Some(1)) },
    Expect { file: "stepcast/h200-pairs/mlp-compiled_ro.json.gz", records: 4041, runtime: Runtime::Cuda, steps: 6, kernels: 744, syncs: 0, distributed: Dist::Present(Some(0), Some(1)) },
    Expect { file: "stepcast/h200-pairs/mlp-eager_capturable.json.gz", records: 11393, runtime: Runtime::Cuda, steps: 6, kernels: 1344, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/mlp-fp32-prof_all.json.gz", records: 18883, runtime: Runtime::Cuda, steps: 6, kernels: 912, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/mlp-fp32-prof_memory.json.gz", records: 11393, runtime: Runtime::Cuda, steps: 6, kernels: 912, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/mlp-fp32-prof_minimal.json.gz", records: 9833, runtime: Runtime::Cuda, steps: 6, kernels: 912, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/mlp-fp32-prof_stack.json.gz", records: 17319, runtime: Runtime::Cuda, steps: 6, kernels: 912, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/mlp-fp32.json.gz", records: 9833, runtime: Runtime::Cuda, steps: 6, kernels: 912, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/mlp-fused.json.gz", records: 8495, runtime: Runtime::Cuda, steps: 6, kernels: 882, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/mlp-graphed.json.gz", records: 4009, runtime: Runtime::Cuda, steps: 6, kernels: 1792, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/mlp-loop.json.gz", records: 16499, runtime: Runtime::Cuda, steps: 6, kernels: 2214, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/resnet-amp.json.gz", records: 28613, runtime: Runtime::Cuda, steps: 6, kernels: 2586, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/resnet-bf16.json.gz", records: 28863, runtime: Runtime::Cuda, steps: 6, kernels: 2793, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/resnet-fp32-prof_all.json.gz", records: 45187, runtime: Runtime::Cuda, steps: 6, kernels: 2396, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/resnet-fp32-prof_minimal.json.gz", records: 25201, runtime: Runtime::Cuda, steps: 6, kernels: 2360, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/resnet-fp32-prof_stack.json.gz", records: 40895, runtime: Runtime::Cuda, steps: 6, kernels: 2360, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/resnet-fp32.json.gz", records: 25201, runtime: Runtime::Cuda, steps: 6, kernels: 2360, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/resnet-sync.json.gz", records: 25205, runtime: Runtime::Cuda, steps: 6, kernels: 2346, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/shape-ddp_compiled.json.gz", records: 28287, runtime: Runtime::Cuda, steps: 6, kernels: 1788, syncs: 0, distributed: Dist::Present(Some(0), Some(1)) },
    Expect { file: "stepcast/h200-pairs/transformer-amp.json.gz", records: 38117, runtime: Runtime::Cuda, steps: 6, kernels: 2550, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/transformer-bf16.json.gz", records: 37577, runtime: Runtime::Cuda, steps: 6, kernels: 2484, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/transformer-checkpoint.json.gz", records: 44174, runtime: Runtime::Cuda, steps: 6, kernels: 3481, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200-pairs/transformer-compiled.json.gz", records: 19704, runtime: Runtime::Cuda, steps: 6, kernels: 2763, syncs: 0, distributed: Dist::Present(Some(0), Some(1)) },
    Expect { file: "stepcast/h200-pairs/transformer-fp32.json.gz", records: 36265, runtime: Runtime::Cuda, steps: 6, kernels: 2951, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/loader-workers0.json.gz", records: 26983, runtime: Runtime::Cuda, steps: 6, kernels: 2264, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/loader-workers4.json.gz", records: 22407, runtime: Runtime::Cuda, steps: 6, kernels: 2265, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/mlp-amp.json.gz", records: 12719, runtime: Runtime::Cuda, steps: 6, kernels: 1080, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/mlp-eager_capturable.json.gz", records: 11393, runtime: Runtime::Cuda, steps: 6, kernels: 1344, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/mlp-fp32.json.gz", records: 9833, runtime: Runtime::Cuda, steps: 6, kernels: 912, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/mlp-fused.json.gz", records: 8495, runtime: Runtime::Cuda, steps: 6, kernels: 882, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/mlp-graphed.json.gz", records: 4427, runtime: Runtime::Cuda, steps: 6, kernels: 1992, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/mlp-loop.json.gz", records: 16499, runtime: Runtime::Cuda, steps: 6, kernels: 2214, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/resnet-amp.json.gz", records: 28613, runtime: Runtime::Cuda, steps: 6, kernels: 2586, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/resnet-fp32.json.gz", records: 25955, runtime: Runtime::Cuda, steps: 6, kernels: 2718, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/resnet-sync.json.gz", records: 25205, runtime: Runtime::Cuda, steps: 6, kernels: 2346, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/transformer-amp.json.gz", records: 38121, runtime: Runtime::Cuda, steps: 6, kernels: 2552, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/transformer-compiled.json.gz", records: 19607, runtime: Runtime::Cuda, steps: 6, kernels: 2664, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h100-pairs/transformer-fp32.json.gz", records: 36329, runtime: Runtime::Cuda, steps: 6, kernels: 2951, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200/mlp-fp32.json.gz", records: 9833, runtime: Runtime::Cuda, steps: 6, kernels: 912, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200/resnet-fp32.json.gz", records: 26087, runtime: Runtime::Cuda, steps: 6, kernels: 2778, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200/transformer-amp.json.gz", records: 38121, runtime: Runtime::Cuda, steps: 6, kernels: 2552, syncs: 0, distributed: Dist::Absent },
    Expect { file: "stepcast/h200/transformer-fp32.json.gz", records: 36562, runtime: Runtime::Cuda, steps: 6, kernels: 2951, syncs: 0, distributed: Dist::Absent },
];

/// Compares one trace with its expected facts. Returns the mismatches.
fn check_expect(trace: &Trace, expect: &Expect) -> Vec<String> {
    let kernels = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Kernel)
        .count();
    let distributed = match &trace.distributed {
        None => Dist::Absent,
        Some(d) => Dist::Present(d.rank, d.world_size),
    };
    let mut problems = Vec::new();
    let mut compare = |what: &str, got: String, want: String| {
        if got != want {
            problems.push(format!("{what}: got {got}, want {want}"));
        }
    };
    compare(
        "records",
        trace.records.to_string(),
        expect.records.to_string(),
    );
    compare(
        "runtime",
        format!("{:?}", trace.runtime),
        format!("{:?}", Some(expect.runtime)),
    );
    compare(
        "ProfilerStep markers",
        trace.steps.len().to_string(),
        expect.steps.to_string(),
    );
    compare("kernels", kernels.to_string(), expect.kernels.to_string());
    compare(
        "cuda_sync events",
        trace.syncs.len().to_string(),
        expect.syncs.to_string(),
    );
    compare(
        "distributed",
        format!("{distributed:?}"),
        format!("{:?}", expect.distributed),
    );
    problems
}

#[test]
fn per_trace_facts_match_the_files() {
    let corpus = corpus();
    let mut failures = Vec::new();
    // The table covers every Kineto file, and names no file that is not there.
    for loaded in corpus.iter().filter(|l| l.kind == FileKind::Kineto) {
        if !EXPECT.iter().any(|e| e.file == loaded.relative) {
            failures.push(format!("{}: not in the EXPECT table", loaded.relative));
        }
    }
    for expect in EXPECT {
        let Some(loaded) = corpus.iter().find(|l| l.relative == expect.file) else {
            failures.push(format!("{}: listed but not found", expect.file));
            continue;
        };
        match &loaded.result {
            Ok(trace) => {
                for problem in check_expect(trace, expect) {
                    failures.push(format!("{}: {problem}", expect.file));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", expect.file)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn step_numbers_and_rank_of_the_ddp_trace() {
    let trace = crate::loaded_trace(&format!("{HTA}df_index_resolver/df_index_resolver.json.gz"));
    let distributed = trace.distributed.as_ref().expect("distributedInfo");
    assert_eq!(
        (distributed.rank, distributed.world_size),
        (Some(1), Some(2))
    );
    assert_eq!(distributed.backend.as_deref(), Some("nccl"));

    // ProfilerStep#101..#105 in ns_resolution_trace, one per step, on one host thread.
    let trace = crate::loaded_trace(&format!(
        "{HTA}ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    ));
    let numbers: Vec<u64> = trace.steps.iter().map(|s| s.number).collect();
    assert_eq!(numbers, [101, 102, 103, 104, 105]);
    assert!(trace.steps.iter().all(|s| s.lane == trace.steps[0].lane));
}

#[test]
fn process_groups_as_declared_and_as_each_collective_records_them() {
    let file = format!("{HTA}nccl_parser_config/nccl_data.json.gz");
    let trace = crate::loaded_trace(&file);
    // The reference: the same file's JSON, read apart from the reader.
    let bytes = std::fs::read(crate::kineto_dir().join(&file)).expect("read");
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
        .expect("gunzip");
    let json: serde_json::Value = serde_json::from_slice(&text).expect("JSON");
    let config = json["distributedInfo"]["pg_config"]
        .as_array()
        .expect("pg_config");
    let groups = &trace
        .distributed
        .as_ref()
        .expect("distributedInfo")
        .process_groups;
    assert_eq!(groups.len(), config.len());
    for (group, declared) in groups.iter().zip(config) {
        assert_eq!(Some(group.name.as_str()), declared["pg_name"].as_str());
        assert_eq!(group.description.as_deref(), declared["pg_desc"].as_str());
        let ranks: Vec<i64> = declared["ranks"]
            .as_array()
            .expect("ranks")
            .iter()
            .filter_map(serde_json::Value::as_i64)
            .collect();
        assert_eq!(group.ranks, ranks);
    }
    // `Process Group Ranks` is a string holding a list: every record of one is read as one
    // (`[]`, with `Group size` 1, names no group).
    let recorded: Vec<Vec<i64>> = json["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["args"]["Process Group Ranks"].as_str())
        .map(|list| serde_json::from_str::<Vec<i64>>(list).expect("a list of ranks"))
        .filter(|ranks| !ranks.is_empty())
        .collect();
    let read: Vec<&Vec<i64>> = trace
        .comm_args
        .iter()
        .filter_map(|(_, args)| args.group_ranks.as_ref())
        .collect();
    assert!(!recorded.is_empty());
    assert_eq!(read.len(), recorded.len());
    assert!(read.iter().zip(&recorded).all(|(a, b)| *a == b));
}

#[test]
fn gpu_side_step_annotation_is_a_device_event_not_a_step() {
    // The H100 traces hold `ProfilerStep#6` twice: a `user_annotation` on the host (the step
    // marker) and a `gpu_user_annotation` on the device timeline.
    let trace = crate::loaded_trace(
        "TraceLens/tests/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz",
    );
    assert_eq!(trace.steps.len(), 1);
    assert_eq!(trace.steps[0].number, 6);
    let device_steps: Vec<_> = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::DeviceAnnotation && trace.name(e.name) == "ProfilerStep#6")
        .collect();
    assert_eq!(device_steps.len(), 1);
    assert_eq!(
        trace.lane(device_steps[0].lane).kind,
        LaneKind::DeviceStream
    );
}

#[test]
fn eight_ranks_of_one_job() {
    let mut ranks: Vec<i64> = crate::corpus()
        .iter()
        .filter(|l| l.relative.contains("dlrm_kineto__extracted/"))
        .map(|l| {
            let trace = l.result.as_ref().expect("DLRM worker trace reads");
            let d = trace.distributed.as_ref().expect("distributedInfo");
            assert_eq!(d.world_size, Some(8), "{}", l.relative);
            d.rank.expect("rank")
        })
        .collect();
    ranks.sort_unstable();
    assert_eq!(ranks, (0..8).collect::<Vec<i64>>());
}
