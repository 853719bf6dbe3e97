//! Graph and replay checks against real traces (copied byte for byte into `testdata/`).

mod accuracy;
mod breakdowns;
mod causes;
mod comm;
mod compare;
mod cpu_gist;
mod critical;
mod ddp;
mod device_only;
mod et;
mod gloo_waits;
mod horovod;
mod host_phase;
mod host_update;
mod hostile;
mod invariants;
mod job;
mod launch_queue;
mod mapping;
mod memory_trades;
mod nsys;
mod off_cpu;
mod optimize;
mod pairs;
mod profiler_cost;
mod ranks;
mod reduced;
mod steps;
mod timed_transfers;
mod trust;
mod whatif;

use std::path::PathBuf;

use stepcast::Window;
use stepcast::graph::{BuildOptions, EdgeKind, Graph, TaskId, build};
use stepcast::replay::{ReplayReport, self_replay};
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast_trace::{Trace, read_trace};

pub(crate) fn testdata(relative: &str) -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto"
    ))
    .join(relative)
}

pub(crate) fn load(relative: &str) -> (Trace, Window) {
    let path = testdata(relative);
    let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    let window = build(&trace, &BuildOptions::default());
    (trace, window)
}

/// [`load`] with the whole window read as one step, as a trace without steps is: a
/// `--step-range` that matches nothing keeps it so (no steps inferred from the loop's ranges).
pub(crate) fn load_as_one_window(relative: &str) -> (Trace, Window) {
    let options = stepcast_trace::ReadOptions {
        step_range: Some(regex::Regex::new("^no range has this name$").expect("regex")),
        ..stepcast_trace::ReadOptions::default()
    };
    let trace = stepcast_trace::read_trace_with(&testdata(relative), &options)
        .unwrap_or_else(|e| panic!("{e}"));
    let window = build(&trace, &BuildOptions::default());
    (trace, window)
}

const HTA: &str = "HolisticTraceAnalysis/tests/data";

// ---------------------------------------------------------------------------------------------
// Self-replay bars (issues #2 and #10), per multi-step trace.

/// Every multi-step trace in testdata, with the bars it is held to.
const MULTI_STEP: &[(&str, &Bars)] = &[
    (
        "HolisticTraceAnalysis/@b8cce2cd/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
        &BARS,
    ),
    (
        "HolisticTraceAnalysis/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
        &BARS,
    ),
    (
        "HolisticTraceAnalysis/tests/data/df_index_resolver/df_index_resolver.json.gz",
        &BARS,
    ),
    (
        "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz",
        &BARS,
    ),
    (
        "HolisticTraceAnalysis/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
        &BARS,
    ),
    (
        "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz",
        &BARS,
    ),
    (
        "HolisticTraceAnalysis/tests/data/trace_diff/test/test.json.gz",
        &BARS,
    ),
    (
        "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
        &BARS,
    ),
    ("stepcast/h100-pairs/loader-workers0.json.gz", &BARS),
    ("stepcast/h100-pairs/loader-workers4.json.gz", &BARS),
    ("stepcast/h100-pairs/mlp-amp.json.gz", &BARS),
    ("stepcast/h100-pairs/mlp-eager_capturable.json.gz", &BARS),
    ("stepcast/h100-pairs/mlp-fp32.json.gz", &BARS),
    ("stepcast/h100-pairs/mlp-fused.json.gz", &BARS),
    ("stepcast/h100-pairs/mlp-graphed.json.gz", &BARS),
    ("stepcast/h100-pairs/mlp-loop.json.gz", &BARS),
    ("stepcast/h100-pairs/resnet-amp.json.gz", &BARS),
    ("stepcast/h100-pairs/resnet-fp32.json.gz", &BARS),
    ("stepcast/h100-pairs/resnet-sync.json.gz", &BARS),
    ("stepcast/h100-pairs/transformer-amp.json.gz", &BARS),
    ("stepcast/h100-pairs/transformer-compiled.json.gz", &BARS),
    ("stepcast/h100-pairs/transformer-fp32.json.gz", &BARS),
    ("stepcast/h200/mlp-fp32.json.gz", &BARS),
    ("stepcast/h200/resnet-fp32.json.gz", &BARS),
    ("stepcast/h200/transformer-amp.json.gz", &BARS),
    ("stepcast/h200/transformer-fp32.json.gz", &BARS),
];

struct Bars {
    error_median: f64,
    error_max: f64,
    error_without_inferred_median: f64,
    error_without_inferred_max: f64,
    fidelity_median: f64,
    /// The typical step is within this of the median measured step, or declined with a reason.
    typical_error: f64,
}

/// The bars: the replay within 0.5 % (median) and 2 % (max) of every measured step, with and
/// without the edges inferred from timing (issue #10).
const BARS: Bars = Bars {
    error_median: 0.005,
    error_max: 0.02,
    error_without_inferred_median: 0.005,
    error_without_inferred_max: 0.02,
    fidelity_median: 0.95,
    typical_error: 0.02,
};

// trace_diff's two ranks (DLRM on a V100: a compute stream beside fbgemm's, NCCL's and
// host-to-device copies' streams) were held at known gaps: control at 0.96 % median without
// inferred edges, test at 0.72 % once CUDA-graph nodes got their own gaps (it had met the bars
// on main only because the eager 3 µs gap given to its graph nodes stood in for the time lost
// below). What both lacked: a backlogged stream dispatches its next task more slowly while
// another stream of the device runs (eager kernels 4.3 µs alone, 5.5 µs beside a NCCL kernel,
// 7.5 µs beside a copy; graph nodes alike), a slowdown the engine now applies as it replays
// (`Graph::shared_gap_permille`, `graph/build/shared_gaps.rs`: ×1.58 on control, ×1.35 on
// test). Both meet the bars: control 0.06 % / 0.53 % with inferred edges, 0.29 % / 1.09 %
// without; test 0.31 % / 1.07 %, 0.41 % / 0.83 %. Neither the graph nodes' waits behind
// fbgemm's `permute_indices_weights` (31 328 blocks of 1024 threads, 196 waves: `SmDemand::Fills`
// already) nor another occupancy limit was the missing cause: in the replay that kernel ran
// ~1 ms early relative to the graph stream, because the stream lost its dispatch slowdown.
//
// mlp-graphed (a whole training step in one CUDA graph, on an H100) was held at 2.9 % / 3.4 %
// before graph nodes got their per-transition gaps (0.45/1.41/3.10 µs, kernel→kernel,
// kernel→memset, memset→kernel); it now meets the bars at 0.19 % median, 0.24 % max.

// ResNet-18 on an H200 (recorded here; device-bound, the host queued a few steps ahead) was
// held at 0.52-0.58 % median, 1.12 % max: each step's replay a little short, a shortfall that
// accumulated over the steps queued. The same program on an H100 drifted the other way (+0.34 %
// median). The cause was the statistic of the one dispatch gap between back-to-back kernels:
// the median of skewed gaps (Hopper's 1.0 and 2.0 µs modes, kernels beginning before their
// predecessor ends), where the sum of the gaps is what a backlogged stream loses. The mean of
// the gaps up to 5 medians (`graph/build.rs`, `DISPATCH_WAIT_FACTOR`) replays the H200 run at
// 0.06 %, the H100 one at 0.10 % and ns_resolution_trace at 0.03 % (was 0.16 %).

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn check_bars(name: &str, report: &ReplayReport, bars: &Bars) -> Vec<String> {
    let mut failures = Vec::new();
    let steps = &report.steps;
    let errors: Vec<f64> = steps.iter().map(|s| s.error().abs()).collect();
    let without: Vec<f64> = steps
        .iter()
        .map(|s| s.error_without_inferred().abs())
        .collect();
    let fidelity: Vec<f64> = steps.iter().map(|s| s.added_deviation_fidelity).collect();
    let mut check = |what: &str, value: f64, bar: f64, at_most: bool| {
        let ok = if at_most { value <= bar } else { value >= bar };
        if !ok {
            failures.push(format!("{name}: {what} = {value:.4}, bar {bar}"));
        }
    };
    check(
        "median |error|",
        median(errors.clone()),
        bars.error_median,
        true,
    );
    check(
        "max |error|",
        errors.iter().copied().fold(0.0, f64::max),
        bars.error_max,
        true,
    );
    check(
        "median |error| without inferred edges",
        median(without.clone()),
        bars.error_without_inferred_median,
        true,
    );
    check(
        "max |error| without inferred edges",
        without.iter().copied().fold(0.0, f64::max),
        bars.error_without_inferred_max,
        true,
    );
    check(
        "median event fidelity",
        median(fidelity),
        bars.fidelity_median,
        false,
    );
    match &report.typical {
        Some(typical) if typical.declined.is_some() => {}
        Some(typical) => check(
            "|typical step error|",
            typical.error().abs(),
            bars.typical_error,
            true,
        ),
        None => failures.push(format!("{name}: no typical step")),
    }
    failures
}

#[test]
fn self_replay_meets_the_bars_on_every_multi_step_trace() {
    let mut failures = Vec::new();
    for &(relative, bars) in MULTI_STEP {
        let (trace, window) = load(relative);
        assert!(
            trace.steps.len() >= 2,
            "{relative} has {} steps",
            trace.steps.len()
        );
        let report = self_replay(&window).unwrap_or_else(|e| panic!("{relative}: {e}"));
        assert_eq!(report.steps.len(), trace.steps.len());
        for step in &report.steps {
            assert!(
                step.measured_ns > 0 || step.tasks == 0,
                "{relative}: step {} empty",
                step.number
            );
            assert!((0.0..=1.0).contains(&step.added_deviation_fidelity));
        }
        failures.extend(check_bars(relative, &report, bars));
    }
    assert!(
        failures.is_empty(),
        "bars not met:\n{}",
        failures.join("\n")
    );
}

/// A replay that only copies the recording would reproduce any step; this one must not. Taking
/// the recorded gaps away from the host threads makes every host-bound step shorter.
#[test]
fn replay_responds_to_the_graph_not_to_recorded_times() {
    let (_, mut window) = load(
        "HolisticTraceAnalysis/@b8cce2cd/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    );
    let before = self_replay(&window).expect("replay");
    window.graph.gap_ns.iter_mut().for_each(|gap| *gap = 0);
    let after = self_replay(&window).expect("replay");
    for (b, a) in before.steps.iter().zip(&after.steps) {
        assert!(
            a.replayed_ns < b.replayed_ns,
            "step {}: {} !< {}",
            b.number,
            a.replayed_ns,
            b.replayed_ns
        );
    }
}

/// The autograd engine thread runs one backward pass per step, handed over from the step
/// thread and back: a fork and a join edge per pass, each between those two threads, and the
/// untraced gaps they replace gone.
#[test]
fn backward_passes_are_handed_over_between_threads() {
    for relative in [
        "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz",
        "HolisticTraceAnalysis/tests/data/df_index_resolver/df_index_resolver.json.gz",
    ] {
        let (trace, window) = load(relative);
        let g = &window.graph;
        let step_lane = trace.steps[0].lane;
        let mut forks = 0;
        let mut joins = 0;
        for t in 0..g.task_count() {
            for e in g.preds(TaskId(t as u32)) {
                if g.pred_kind[e] != EdgeKind::ThreadHandoff {
                    continue;
                }
                let from = g.pred[e].index();
                let from_lane = g.lanes[g.lane[from] as usize].trace_lane;
                let to_lane = g.lanes[g.lane[t] as usize].trace_lane;
                assert_ne!(
                    from_lane, to_lane,
                    "{relative}: a handoff stays on its thread"
                );
                assert!(
                    g.pred_lag_ns[e] >= 0,
                    "{relative}: a handoff before its source"
                );
                if from_lane == step_lane {
                    forks += 1;
                    // The engine thread was idle before the pass: no gap pins it.
                    if let Some(before) = g.lane_pred(TaskId(t as u32)) {
                        assert_eq!(g.gap_ns[before.index()], 0, "{relative}");
                    }
                } else {
                    assert_eq!(
                        to_lane, step_lane,
                        "{relative}: a join returns to the caller"
                    );
                    joins += 1;
                }
            }
        }
        // One backward pass per profiled step whose forward pass is in the window.
        assert!(forks >= window.steps.len() - 1, "{relative}: {forks} forks");
        assert_eq!(forks, joins, "{relative}");
    }
}

/// Shortening the forward pass's host work moves the backward pass earlier: the engine thread
/// is no longer pinned to its recorded start.
#[test]
fn a_faster_forward_pass_moves_the_backward_pass() {
    let (trace, mut window) =
        load("HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz");
    let baseline = simulate(&window.graph, &RecordedOrder, SimOptions::default()).expect("replay");
    let step_lane = trace.steps[0].lane;
    let g = &mut window.graph;
    let forks: Vec<usize> = (0..g.task_count())
        .filter(|&t| {
            g.preds(TaskId(t as u32)).any(|e| {
                g.pred_kind[e] == EdgeKind::ThreadHandoff
                    && g.lanes[g.lane[g.pred[e].index()] as usize].trace_lane == step_lane
            })
        })
        .collect();
    assert!(!forks.is_empty());
    for t in 0..g.task_count() {
        if g.lanes[g.lane[t] as usize].trace_lane == step_lane {
            g.gap_ns[t] /= 2;
        }
    }
    let faster = simulate(&window.graph, &RecordedOrder, SimOptions::default()).expect("replay");
    for t in forks {
        assert!(
            faster.begin_ns[t] < baseline.begin_ns[t] - 1_000_000,
            "backward pass at {} did not move from {}",
            faster.begin_ns[t],
            baseline.begin_ns[t]
        );
    }
}

#[test]
fn replay_is_deterministic() {
    let relative = "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz";
    let (_, first) = load(relative);
    let (_, second) = load(relative);
    let a = self_replay(&first).expect("replay");
    let b = self_replay(&second).expect("replay");
    assert_eq!(a, b);
}

/// With lane order fixed, making any one task shorter never makes the window longer.
#[test]
fn a_shorter_task_never_lengthens_the_window() {
    let (_, window) = load(&format!("{HTA}/nccl_parser_config/nccl_data.json.gz"));
    let graph = &window.graph;
    let makespan = |g: &Graph| {
        let timeline = simulate(g, &RecordedOrder, SimOptions::default()).expect("replay");
        timeline.end_ns.iter().copied().max().unwrap_or(0)
    };
    let base = makespan(graph);
    // A deterministic spread of tasks across the window.
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..40 {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let t = (seed >> 33) as usize % graph.task_count();
        let mut shorter = graph.clone();
        shorter.dur_ns[t] /= 2;
        shorter.dur_without_inferred_ns[t] /= 2;
        assert!(
            makespan(&shorter) <= base,
            "halving task {t} lengthened the window"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Edge kinds, pinned on HTA's small critical-path traces (they carry `cuda_sync` records).

/// A non-launch edge named by the correlation ids of its ends.
struct ExpectedEdge {
    trace: &'static str,
    kind: EdgeKind,
    from_correlation: u64,
    to_correlation: u64,
}

const EVENT_SYNC: &str = "critical_path/cuda_event_sync/event_sync_trace.json.gz";
const MULTI_STREAM: &str = "critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz";
const SIMPLE_ADD: &str = "critical_path/end_to_end/simple_add/input/trace.json.gz";

const EXPECTED_EDGES: &[ExpectedEdge] = &[
    // A copy to pageable memory blocks its call until the copy is done.
    ExpectedEdge {
        trace: EVENT_SYNC,
        kind: EdgeKind::HostSync,
        from_correlation: 1511,
        to_correlation: 1511,
    },
    // cudaStreamSynchronize (Stream Sync record) waits for the copy before it.
    ExpectedEdge {
        trace: EVENT_SYNC,
        kind: EdgeKind::HostSync,
        from_correlation: 1511,
        to_correlation: 1512,
    },
    // cudaEventSynchronize (Event Sync record) waits for the kernel before the event record.
    ExpectedEdge {
        trace: EVENT_SYNC,
        kind: EdgeKind::HostSync,
        from_correlation: 1526,
        to_correlation: 1536,
    },
    // cudaDeviceSynchronize (Context Sync) waits for every stream's last work.
    ExpectedEdge {
        trace: EVENT_SYNC,
        kind: EdgeKind::HostSync,
        from_correlation: 1526,
        to_correlation: 1549,
    },
    ExpectedEdge {
        trace: MULTI_STREAM,
        kind: EdgeKind::HostSync,
        from_correlation: 27,
        to_correlation: 1424,
    },
    ExpectedEdge {
        trace: MULTI_STREAM,
        kind: EdgeKind::HostSync,
        from_correlation: 57,
        to_correlation: 1424,
    },
    ExpectedEdge {
        trace: MULTI_STREAM,
        kind: EdgeKind::HostSync,
        from_correlation: 1413,
        to_correlation: 1424,
    },
    // Stream 24 waits (cudaStreamWaitEvent, corr 1389) on the event recorded on stream 20 after
    // the sgemm of corr 27; the first work launched on stream 24 afterwards is the memset 1411.
    ExpectedEdge {
        trace: MULTI_STREAM,
        kind: EdgeKind::EventWait,
        from_correlation: 27,
        to_correlation: 1411,
    },
];

fn edges_of(trace: &Trace, graph: &Graph) -> Vec<(EdgeKind, Option<u64>, Option<u64>)> {
    let correlation = |t: TaskId| {
        trace.events[graph.event[t.index()].index()]
            .correlation
            .map(u64::from)
    };
    (0..graph.task_count())
        .flat_map(|t| {
            let task = TaskId(t as u32);
            graph
                .preds(task)
                .map(move |e| (graph.pred_kind[e], graph.pred[e], task))
        })
        .map(|(kind, from, to)| (kind, correlation(from), correlation(to)))
        .collect()
}

#[test]
fn recorded_sync_edges_are_pinned() {
    for expected in EXPECTED_EDGES {
        let (trace, window) = load(&format!("{HTA}/{}", expected.trace));
        let edges = edges_of(&trace, &window.graph);
        let wanted = (
            expected.kind,
            Some(expected.from_correlation),
            Some(expected.to_correlation),
        );
        assert!(
            edges.contains(&wanted),
            "{}: missing {:?}",
            expected.trace,
            wanted
        );
    }
}

#[test]
fn non_blocking_queries_get_no_host_sync() {
    // cudaEventQuery (corr 24, 54, 1410) is recorded as an Event Sync but returns at once.
    let (trace, window) = load(&format!("{HTA}/{MULTI_STREAM}"));
    for (kind, _, to) in edges_of(&trace, &window.graph) {
        if kind == EdgeKind::HostSync {
            assert!(
                !matches!(to, Some(24 | 54 | 1410)),
                "host sync into a query call {to:?}"
            );
        }
    }
}

#[test]
fn every_edge_kind_is_counted_and_respects_recorded_time() {
    for relative in [EVENT_SYNC, MULTI_STREAM, SIMPLE_ADD] {
        let (trace, window) = load(&format!("{HTA}/{relative}"));
        let g = &window.graph;
        let counts: std::collections::BTreeMap<EdgeKind, u64> =
            g.edges_by_kind(|_| true).into_iter().collect();
        // Lane order: one edge per task but the first of each lane.
        let lanes_with_tasks = g.lanes.iter().filter(|l| l.task_count > 0).count() as u64;
        assert_eq!(
            counts[&EdgeKind::LaneOrder],
            g.task_count() as u64 - lanes_with_tasks
        );
        // Launch: one edge per device task whose call is in the trace.
        let device_tasks = (0..g.task_count())
            .filter(|&t| g.kind[t].on_device())
            .count() as u64;
        assert_eq!(
            counts[&EdgeKind::Launch],
            device_tasks - window.report.unlaunched_device_tasks
        );
        assert!(counts[&EdgeKind::HostSync] > 0, "{relative}: no host sync");
        // These traces record their syncs: hardly anything needs inferring from timing (a
        // wait whose record Kineto dropped, "no kernels have run yet on stream").
        let inferred = counts[&EdgeKind::InferredStreamWait] + counts[&EdgeKind::InferredHostSync];
        assert!(
            inferred * 20 <= device_tasks,
            "{relative}: {inferred} inferred edges"
        );
        // No dependency points backwards in recorded time.
        for t in 0..g.task_count() {
            for e in g.preds(TaskId(t as u32)) {
                let from = g.pred[e].index();
                // A negative lag releases before the source ends (a draining kernel); a
                // positive one (launch latency) is a median, not a bound, so it is left out.
                let released = if g.pred_kind[e].from_source_begin() {
                    g.rec_start_ns[from]
                } else {
                    g.rec_end_ns[from]
                } + g.pred_lag_ns[e].min(0);
                let gate = if g.pred_kind[e].gates_completion() {
                    g.rec_end_ns[t]
                } else {
                    g.rec_start_ns[t]
                };
                assert!(
                    released <= gate + 2_000,
                    "{relative}: {:?} edge {from} -> {t} goes back in time",
                    g.pred_kind[e]
                );
            }
        }
        let _ = trace;
    }
    let (_, window) = load(&format!("{HTA}/{SIMPLE_ADD}"));
    let counts: std::collections::BTreeMap<EdgeKind, u64> =
        window.graph.edges_by_kind(|_| true).into_iter().collect();
    assert!(
        counts[&EdgeKind::EventWait] > 0,
        "simple_add records stream waits"
    );
}

/// Older traces have no sync records: cross-stream waits there are inferred, counted, and a
/// minority of device tasks.
#[test]
fn inferred_edges_are_counted_and_few() {
    let (trace, window) = load(&format!(
        "{HTA}/df_index_resolver/df_index_resolver.json.gz"
    ));
    assert!(trace.syncs.is_empty());
    let g = &window.graph;
    let inferred: u64 = g
        .edges_by_kind(|_| true)
        .iter()
        .filter(|(k, _)| k.is_inferred())
        .map(|(_, c)| c)
        .sum();
    assert_eq!(inferred, window.report.inferred_edges);
    let device_tasks = (0..g.task_count())
        .filter(|&t| g.kind[t].on_device())
        .count() as u64;
    // Most of DDP's stream waits are explained by its `cudaStreamWaitEvent` calls; what is
    // left to infer is about one device task in twenty-five.
    assert!(
        inferred * 100 <= device_tasks * 5,
        "{inferred} inferred edges for {device_tasks} device tasks"
    );
}

#[test]
fn a_trace_without_steps_is_one_synthetic_step() {
    let (_, window) = load(&format!("{HTA}/{MULTI_STREAM}"));
    assert_eq!(window.steps.len(), 1);
    assert!(window.steps[0].synthetic);
    assert!(
        window
            .report
            .notes
            .iter()
            .any(|n| n.contains("no ProfilerStep"))
    );
}

/// Without markers, the step opens with the host's recording: device work that ran before the
/// host recorded anything belongs to no step (as work before a first marker), and is told.
#[test]
fn a_synthetic_step_opens_with_the_hosts_recording() {
    for relative in [
        "large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz",
        "mtia_inference_trace/mtia_inference_rank_0.json.gz",
    ] {
        let (_, window) = load(&format!("{HTA}/{relative}"));
        let graph = &window.graph;
        let step = &window.steps[0];
        assert!(step.synthetic, "{relative}");
        let host_start = (0..graph.task_count())
            .filter(|&t| !graph.kind[t].on_device())
            .map(|t| graph.rec_start_ns[t])
            .min()
            .expect("host tasks");
        assert_eq!(step.start_ns, host_start, "{relative}");
        let before = (0..graph.task_count())
            .filter(|&t| graph.kind[t].on_device() && graph.rec_start_ns[t] < host_start)
            .count();
        assert!(before > 0, "{relative}: device work before the host's");
        let note = format!("{before} device task");
        assert!(
            window
                .report
                .notes
                .iter()
                .any(|n| n.starts_with(&note) && n.contains("before the host's recording")),
            "{relative}: {:?}",
            window.report.notes
        );
    }
}
