//! The DDP what-if's insertion model on real traces: gradient sizes from recorded shapes,
//! DDP's buckets, strip-and-reinsert against measured 2-rank DDP steps, DGC, P3 and FSDP.

use stepcast::analyze::mapping::{Mapping, Phase, map};
use stepcast::comm::{Collective, calibrate, recorded_collectives};
use stepcast::graph::{NO_STEP, TaskKind};
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast::whatif::ddp::gradients::{GradientError, SizeSource, find_gradients};
use stepcast::whatif::ddp::insert::{
    DEFAULT_BUCKET_BYTES, Dgc, INSERT_NAMES, InsertNames, ddp_buckets, insert,
};
use stepcast::whatif::ddp::{DdpConfig, DdpInputs, DdpPlan, measured_step_ns, plan, sweep_with};
use stepcast::whatif::{Context, predict};
use stepcast::{Window, comm::Link};
use stepcast_trace::Trace;

use super::{HTA, load};

/// One GPU, ResNet-50, SGD, `record_shapes=True`: no collectives.
const RESNET50: &str =
    "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz";
/// Rank 0 of a 2-rank DDP ResNet-50 job (no shapes; NCCL sizes recorded).
const NCCL: &str = "nccl_parser_config/nccl_data.json.gz";
/// Rank 1 of a 2-rank job with one all-reduce per parameter (no sizes recorded).
const DF_INDEX: &str = "df_index_resolver/df_index_resolver.json.gz";

fn loaded(relative: &str) -> (Trace, Window, Mapping) {
    let (mut trace, window) = load(relative);
    for name in INSERT_NAMES {
        trace.names.intern(name);
    }
    let mapping = map(&trace, &window);
    (trace, window, mapping)
}

fn names(trace: &Trace) -> InsertNames {
    InsertNames::resolve(trace, stepcast_trace::NameId(0))
}

/// The recorded message bytes of the all-reduces of the trace's last step, in issue order.
fn last_step_all_reduce_bytes(trace: &Trace, window: &Window, mapping: &Mapping) -> Vec<i64> {
    let recorded = recorded_collectives(trace, window, mapping);
    let last_step = recorded
        .iter()
        .map(|r| r.step)
        .filter(|&s| s != NO_STEP)
        .max();
    recorded
        .iter()
        .filter(|r| Some(r.step) == last_step && r.collective == Collective::AllReduce)
        .filter_map(|r| r.bytes)
        .collect()
}

/// ResNet-50's gradient bytes in parameter order, from the one-GPU trace's shapes.
fn resnet50_parameters() -> Vec<i64> {
    let (trace, window, mapping) = loaded(RESNET50);
    let gradients = find_gradients(&trace, &window, &mapping, None).expect("gradients");
    let step = gradients.steps.values().last().expect("a step");
    step.iter().rev().map(|g| g.bytes).collect()
}

#[test]
fn recorded_shapes_give_the_buckets_a_ddp_run_of_the_same_model_recorded() {
    let (trace, window, mapping) = loaded(RESNET50);
    let gradients = find_gradients(&trace, &window, &mapping, None).expect("gradients");
    assert_eq!(gradients.source, SizeSource::RecordedShapes);
    assert!(gradients.ready_from_autograd);
    // torchvision's ResNet-50: 161 parameter tensors, 25,557,032 fp32 parameters.
    assert_eq!(gradients.parameters, 161);
    assert_eq!(gradients.bytes_per_step, 25_557_032 * 4);
    // Every step has its optimizer start after its gradients.
    for (step, grads) in &gradients.steps {
        let start = gradients.optimizer_start[step];
        let last = grads.last().expect("gradients").ready;
        assert!(window.graph.rec_start_ns[start.index()] >= window.graph.rec_end_ns[last.index()]);
    }
    // An independent recording: the all-reduce sizes of a 2-rank DDP ResNet-50 job.
    let (nccl, nccl_window, nccl_mapping) = loaded(&format!("{HTA}/{NCCL}"));
    let recorded_buckets = last_step_all_reduce_bytes(&nccl, &nccl_window, &nccl_mapping);
    let step = gradients.steps.values().last().expect("a step");
    let ours: Vec<i64> = ddp_buckets(step, DEFAULT_BUCKET_BYTES)
        .into_iter()
        .map(|r| step[r].iter().map(|g| g.bytes).sum())
        .collect();
    assert_eq!(ours, recorded_buckets);
}

/// What [`strip_and_reinsert`] predicted, against the measured step.
struct Reinserted {
    predicted: i64,
    measured: i64,
    source: SizeSource,
    /// The bytes of the last steady step's inserted all-reduces, in issue order.
    last_step_buckets: Vec<i64>,
}

impl Reinserted {
    fn error(&self) -> f64 {
        (self.predicted - self.measured) as f64 / self.measured as f64
    }
}

/// The step after removing the recorded collectives and inserting DDP's, 2 GPUs, gradient
/// sizes from `file` (else from the trace).
fn strip_and_reinsert(
    relative: &str,
    file: Option<Vec<i64>>,
    bucket_bytes: Option<i64>,
) -> Reinserted {
    let (trace, window, mapping) = loaded(relative);
    let context = Context {
        trace: &trace,
        window: &window,
        mapping: &mapping,
        peers: Default::default(),
        data: None,
    };
    let baseline = predict(&window, &window.graph).expect("baseline");
    let config = DdpConfig {
        gpus: 2,
        gpus_per_node: 2,
        reinsert: true,
        bucket_bytes,
        ..DdpConfig::default()
    };
    let inputs = DdpInputs {
        gradient_file: file,
        names: Some(names(&trace)),
    };
    let result = sweep_with(&context, &baseline, &[config], &inputs).expect("sweep");
    let inserted = result.plans[0].inserted.as_ref().expect("insertion model");
    assert!(inserted.stripped > 0);
    let graph = &result.last.as_ref().expect("outcome").graph;
    let steady = inserted.steady_steps;
    let all_reduce = names(&trace).all_reduce;
    let collectives = (0..graph.task_count())
        .filter(|&t| graph.kind[t] == TaskKind::Collective && graph.name[t] == all_reduce)
        .filter(|&t| graph.step[t] as usize >= window.steps.len() - steady)
        .count();
    assert_eq!(collectives, inserted.exchanges.len());
    // The recorded ones are free now.
    let recorded_cost: i64 = (0..graph.task_count())
        .filter(|&t| graph.kind[t] == TaskKind::Collective && graph.name[t] != all_reduce)
        .filter(|&t| graph.step[t] as usize >= window.steps.len() - steady)
        .map(|t| graph.dur_ns[t])
        .sum();
    assert_eq!(recorded_cost, 0);
    let last = inserted.exchanges.iter().map(|x| x.step).max();
    Reinserted {
        predicted: result.points[0].predicted_ns,
        measured: measured_step_ns(&window).expect("measured"),
        source: inserted.gradients.source,
        last_step_buckets: inserted
            .exchanges
            .iter()
            .filter(|x| Some(x.step) == last)
            .map(|x| x.bytes)
            .collect(),
    }
}

#[test]
fn strip_and_reinsert_resnet50_ddp_from_another_traces_shapes() {
    let reinserted =
        strip_and_reinsert(&format!("{HTA}/{NCCL}"), Some(resnet50_parameters()), None);
    assert_eq!(reinserted.source, SizeSource::File);
    assert!(reinserted.error().abs() <= 0.05, "{}", reinserted.error());
}

#[test]
fn strip_and_reinsert_one_all_reduce_per_parameter() {
    // Sizes: the recorded path's per-collective estimate (this trace records none), one
    // bucket per parameter as the job had.
    let (trace, window, mapping) = loaded(&format!("{HTA}/{DF_INDEX}"));
    let recorded = recorded_collectives(&trace, &window, &mapping);
    let calibration = calibrate(&recorded);
    let config = DdpConfig {
        gpus: 2,
        gpus_per_node: 2,
        ..DdpConfig::default()
    };
    let p: DdpPlan = plan(&recorded, &calibration, &config).expect("plan");
    let step = recorded
        .iter()
        .map(|r| r.step)
        .filter(|&s| s != NO_STEP)
        .max();
    let mut sizes: Vec<i64> = p
        .buckets
        .iter()
        .filter(|b| Some(b.recorded.step) == step)
        .map(|b| b.bytes.round() as i64)
        .collect();
    sizes.reverse();
    let reinserted = strip_and_reinsert(&format!("{HTA}/{DF_INDEX}"), Some(sizes), Some(1));
    assert!(reinserted.error().abs() <= 0.05, "{}", reinserted.error());
}

/// A trace with DDP's all-reduces but no shapes: their recorded message sizes are the
/// gradients, so `--reinsert` (and P3, FSDP, DGC) need no `--gradients` file; re-bucketed with
/// DDP's rule they give the recorded buckets back. Without recorded sizes it still asks.
#[test]
fn recorded_all_reduce_sizes_stand_for_the_gradients() {
    let (trace, window, mapping) = loaded(&format!("{HTA}/{NCCL}"));
    assert_eq!(
        find_gradients(&trace, &window, &mapping, None).err(),
        Some(GradientError::NoSizes),
        "no shapes of its own"
    );
    let reinserted = strip_and_reinsert(&format!("{HTA}/{NCCL}"), None, None);
    assert_eq!(reinserted.source, SizeSource::RecordedBuckets);
    let recorded_buckets = last_step_all_reduce_bytes(&trace, &window, &mapping);
    assert_eq!(recorded_buckets.len(), 5);
    assert_eq!(reinserted.last_step_buckets, recorded_buckets);
    assert!(reinserted.error().abs() <= 0.05, "{}", reinserted.error());

    // df_index_resolver's all-reduces record no sizes: inferring them from transfer times
    // would plan on waits, so the command asks for the sizes.
    let (trace, window, mapping) = loaded(&format!("{HTA}/{DF_INDEX}"));
    let context = Context {
        trace: &trace,
        window: &window,
        mapping: &mapping,
        peers: Default::default(),
        data: None,
    };
    let baseline = predict(&window, &window.graph).expect("baseline");
    let config = DdpConfig {
        reinsert: true,
        ..DdpConfig::default()
    };
    let inputs = DdpInputs {
        gradient_file: None,
        names: Some(names(&trace)),
    };
    let Err(error) = sweep_with(&context, &baseline, &[config], &inputs) else {
        panic!("df_index_resolver records no sizes");
    };
    assert!(error.to_string().contains("--gradients"), "{error}");
}

fn one_gpu_context() -> (Trace, Window, Mapping) {
    loaded(RESNET50)
}

/// A slow network: 64 GPUs on 1 Gb/s, where communication bounds the step.
fn slow(config: DdpConfig) -> DdpConfig {
    DdpConfig {
        gpus: 64,
        gpus_per_node: 8,
        inter: Some(Link::gbits(1.0, 5_000.0)),
        ..config
    }
}

#[test]
fn dgc_sends_ratio_of_the_bytes_and_costs_at_most_its_kernels() {
    let (trace, window, mapping) = one_gpu_context();
    let context = Context {
        trace: &trace,
        window: &window,
        mapping: &mapping,
        peers: Default::default(),
        data: None,
    };
    let baseline = predict(&window, &window.graph).expect("baseline");
    let ratio = 0.001;
    let inputs = DdpInputs {
        gradient_file: None,
        names: Some(names(&trace)),
    };
    for fast in [false, true] {
        let ddp = if fast {
            DdpConfig::default()
        } else {
            slow(DdpConfig::default())
        };
        let dgc = DdpConfig {
            compression: Some(Dgc { ratio }),
            ..ddp
        };
        let result = sweep_with(&context, &baseline, &[ddp, dgc], &inputs).expect("sweep");
        let [plain, compressed] = [&result.plans[0], &result.plans[1]].map(|p| {
            let (_, wire, comm, kernels) = p.inserted.as_ref().expect("inserted").per_step();
            (wire, comm, kernels)
        });
        let n = f64::from(ddp.gpus);
        // Each rank's share: values and indices of `ratio` of the elements, gathered from n.
        let expected = n * 2.0 * ratio * plain.0;
        assert!(
            (compressed.0 - expected).abs() <= 1e-6 * expected,
            "{compressed:?}"
        );
        let [p, c] = [result.points[0].predicted_ns, result.points[1].predicted_ns];
        // Never slower than the compression kernels it adds.
        assert!(c - p <= compressed.2, "{c} vs {p} + {}", compressed.2);
        if !fast {
            // Comm-bound: compression wins.
            assert!(c < p, "{c} vs {p}");
        }
    }
}

#[test]
fn p3_never_delays_the_first_layers_gradients() {
    let (trace, window, mapping) = one_gpu_context();
    let context = Context {
        trace: &trace,
        window: &window,
        mapping: &mapping,
        peers: Default::default(),
        data: None,
    };
    let baseline = predict(&window, &window.graph).expect("baseline");
    let inputs = DdpInputs {
        gradient_file: None,
        names: Some(names(&trace)),
    };
    let ddp = slow(DdpConfig::default());
    let p3 = DdpConfig { p3: true, ..ddp };
    let names = names(&trace);
    let mut first_layer_end = Vec::new();
    for config in [ddp, p3] {
        let result = sweep_with(&context, &baseline, &[config], &inputs).expect("sweep");
        let inserted = result.plans[0].inserted.clone().expect("inserted");
        // Replay the edit ourselves to follow each exchange.
        let mut edit = context.edit();
        let done = insert(
            &mut edit,
            &inserted.gradients,
            &inserted.exchanges,
            &inserted.order,
            &names,
            &inserted.forward_gates,
        )
        .expect("insert");
        let (graph, new_id) = edit.finish().expect("graph");
        let timeline = simulate(&graph, &RecordedOrder, SimOptions::default()).expect("replay");
        // The exchange carrying the last-readied gradient (the first layer's) of the last step.
        let last_step = inserted
            .exchanges
            .iter()
            .map(|x| x.step)
            .max()
            .expect("steps");
        let end = inserted
            .exchanges
            .iter()
            .zip(&done.exchanges)
            .filter(|(x, _)| {
                x.step == last_step
                    && x.first_gradient + x.gradients == inserted.gradients.parameters as u32
            })
            .map(|(x, &task)| {
                // From when the gradient is ready in this replay (steps move with the config).
                timeline.end_ns[new_id[task.index()].index()]
                    - timeline.end_ns[new_id[x.ready.index()].index()]
            })
            .max()
            .expect("the first layer's exchange");
        first_layer_end.push(end);
    }
    assert!(
        first_layer_end[1] <= first_layer_end[0],
        "P3 {} vs DDP {}",
        first_layer_end[1],
        first_layer_end[0]
    );
}

#[test]
fn fsdp_gathers_twice_and_scatters_once_per_unit() {
    let (trace, window, mapping) = one_gpu_context();
    let context = Context {
        trace: &trace,
        window: &window,
        mapping: &mapping,
        peers: Default::default(),
        data: None,
    };
    let baseline = predict(&window, &window.graph).expect("baseline");
    let names = names(&trace);
    let inputs = DdpInputs {
        gradient_file: None,
        names: Some(names),
    };
    let config = DdpConfig {
        fsdp: true,
        ..DdpConfig::default()
    };
    let result = sweep_with(&context, &baseline, &[config], &inputs).expect("sweep");
    let inserted = result.plans[0].inserted.as_ref().expect("inserted");
    let units = inserted.fsdp_units.len();
    assert!(units >= inserted.steady_steps, "{units}");
    let graph = &result.last.as_ref().expect("outcome").graph;
    let count = |name| {
        (0..graph.task_count())
            .filter(|&t| graph.name[t] == name && graph.kind[t] == TaskKind::Collective)
            .count()
    };
    assert_eq!(count(names.all_gather), 2 * units);
    assert_eq!(count(names.reduce_scatter), units);
    assert_eq!(count(names.all_reduce), 0);
    // Each rank updates its shard: optimizer kernels take 1/8 of their time, never less than
    // the fastest one, and nothing else is re-costed.
    let floor = (0..window.graph.task_count())
        .filter(|&t| {
            window.graph.kind[t] == TaskKind::Kernel && mapping.phase[t] == Phase::Optimizer
        })
        .map(|t| window.graph.dur_ns[t])
        .filter(|&d| d > 0)
        .min()
        .expect("optimizer kernels");
    assert!(!inserted.sharded_optimizer.is_empty());
    let mut saved_ns = 0;
    for &(task, ns) in &inserted.sharded_optimizer {
        let t = task.index();
        assert_eq!(mapping.phase[t], Phase::Optimizer);
        let recorded = window.graph.dur_ns[t];
        assert_eq!(ns, (recorded / 8).max(floor), "{recorded}");
        assert!(ns < recorded);
        saved_ns += recorded - ns;
    }
    // Gathering parameters costs time: the step is no faster than without them, but for
    // what the sharded optimizer saves.
    let saved_per_step = saved_ns / inserted.steady_steps as i64;
    assert!(
        result.points[0].predicted_ns + saved_per_step >= baseline.step_ns,
        "{} + {saved_per_step} < {}",
        result.points[0].predicted_ns,
        baseline.step_ns
    );
}

/// P3 gates each layer's next forward pass on its own slices (not the optimizer on every
/// slice), so it hides more of its communication behind computation than DDP: at 64 GPUs on
/// 1 Gb/s its step exceeds its communication by less than DDP's does. Every slice pays the
/// collective's latency (643 slices against 5 buckets), so with 5 µs per hop P3 sends ~54 ms
/// more per step than DDP and loses; with 0.5 µs per hop that overhead is small and P3 wins.
/// Before the gates P3 could never win (298 ms against DDP's 244 ms at 5 µs).
#[test]
fn p3_hides_more_communication_than_ddp_and_wins_when_slices_are_cheap() {
    let (trace, window, mapping) = one_gpu_context();
    let context = Context::new(&trace, &window, &mapping);
    let baseline = predict(&window, &window.graph).expect("baseline");
    let inputs = DdpInputs {
        gradient_file: None,
        names: Some(names(&trace)),
    };
    let run = |config: DdpConfig| {
        let result = sweep_with(&context, &baseline, &[config], &inputs).expect("sweep");
        result.points[0].clone()
    };
    let ddp = run(slow(DdpConfig::default()));
    let p3 = run(slow(DdpConfig {
        p3: true,
        ..DdpConfig::default()
    }));
    let exposed = |p: &stepcast::whatif::ddp::SweepPoint| p.predicted_ns - p.comm_ns;
    assert!(
        exposed(&p3) < exposed(&ddp),
        "P3 {} - {} vs DDP {} - {}",
        p3.predicted_ns,
        p3.comm_ns,
        ddp.predicted_ns,
        ddp.comm_ns
    );
    let cheap = |config: DdpConfig| DdpConfig {
        inter: Some(Link::gbits(1.0, 500.0)),
        ..slow(config)
    };
    let ddp = run(cheap(DdpConfig::default()));
    let p3 = run(cheap(DdpConfig {
        p3: true,
        ..DdpConfig::default()
    }));
    assert!(
        p3.predicted_ns < ddp.predicted_ns,
        "P3 {} vs DDP {}",
        p3.predicted_ns,
        ddp.predicted_ns
    );
}

/// A CPU-only trace (`cpu-ddp-pairs/ddp-single`, the `mlp` on one core): where the node's
/// cores are given and its processes take them all, each exchange's CPU time is taken from
/// the training thread, a `gloo:cpu (inserted)` host task of its modeled time (times the
/// processes' time-sharing) right after the host task that readied its last gradient; with a
/// core to spare, or the cores not given, nothing is charged.
#[test]
fn gloo_cpu_time_is_taken_from_training_only_where_no_core_is_spare() {
    let (trace, window, mapping) = loaded("stepcast/cpu-ddp-pairs/ddp-single.json.gz");
    let context = Context::new(&trace, &window, &mapping);
    let baseline = predict(&window, &window.graph).expect("replays");
    let inputs = DdpInputs {
        gradient_file: None,
        names: Some(names(&trace)),
    };
    let cpu = trace.names.lookup("gloo:cpu (inserted)").expect("interned");
    let run = |gpus: u32, cores: Option<f64>| {
        let config = DdpConfig {
            gpus,
            gpus_per_node: gpus,
            intra: Some(Link {
                alpha_ns: 10_000.0,
                bandwidth_bps: 1.1e9,
            }),
            host_cores: cores,
            ..DdpConfig::default()
        };
        let sweep = sweep_with(&context, &baseline, &[config], &inputs).expect("predicts");
        let outcome = sweep.last.expect("an outcome");
        let graph = &outcome.graph;
        let charged: Vec<i64> = (0..graph.task_count())
            .filter(|&t| graph.name[t] == cpu)
            .map(|t| graph.dur_ns[t])
            .collect();
        let exchanges: Vec<i64> = sweep.plans[0]
            .inserted
            .as_ref()
            .expect("inserted")
            .exchanges
            .iter()
            .map(|x| x.predicted_ns)
            .collect();
        (sweep.points[0].predicted_ns, charged, exchanges)
    };
    let (unsaid, none, _) = run(2, None);
    let (spare, none_either, _) = run(2, Some(4.0));
    assert!(none.is_empty() && none_either.is_empty());
    assert_eq!(unsaid, spare, "a core to spare changes nothing");
    // Two processes on two cores: each exchange's time, once.
    let (taken, charged, exchanges) = run(2, Some(2.0));
    assert_eq!(charged.len(), exchanges.len());
    let mut sorted = (charged.clone(), exchanges.clone());
    sorted.0.sort_unstable();
    sorted.1.sort_unstable();
    assert_eq!(sorted.0, sorted.1);
    assert!(taken > unsaid, "{taken} ns, not more than {unsaid} ns");
    // Four processes on two cores: twice each exchange's time.
    let (_, charged, exchanges) = run(4, Some(2.0));
    let total = |v: &[i64]| v.iter().sum::<i64>();
    assert!((total(&charged) - 2 * total(&exchanges)).abs() <= charged.len() as i64);
}
