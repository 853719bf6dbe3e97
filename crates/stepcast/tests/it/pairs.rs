//! Predictions against measured outcomes: real before/after pairs (`testdata/kineto/kineto/`) and a
//! real host-bound trace whose measured AMP outcome is known to be a loss.

use stepcast::analyze::mapping::map;
use stepcast::graph::{BuildOptions, build};
use stepcast::replay::self_replay;
use stepcast::whatif::models::{
    DEFAULT_CONTENTION, LoaderHost, amp_with_costs, capture, delivery_ns, loader_in_workers,
    loader_work,
};
use stepcast::whatif::{AmpDtype, Context, Model, ModelParams, apply_models};
use stepcast_trace::read_trace;

use crate::load;

const NUM_WORKERS_0: &str =
    "kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_0/worker0.pt.trace.json.gz";
const NUM_WORKERS_4: &str =
    "kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_4/worker0.pt.trace.json.gz";
const RESNET50: &str =
    "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz";

fn pair_trace(relative: &str) -> (stepcast_trace::Trace, stepcast::Window) {
    let path = super::testdata(relative);
    let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    let window = build(&trace, &BuildOptions::default());
    (trace, window)
}

/// The measured step: the median of the steady steps' measured times (what
/// `shared/tools/whatif_pair.py` takes).
fn measured_step_ns(window: &stepcast::Window) -> f64 {
    let report = self_replay(window).unwrap_or_else(|e| panic!("{e}"));
    let mut steady: Vec<i64> = report
        .steps
        .iter()
        .filter(|s| s.steady)
        .map(|s| s.measured_ns)
        .collect();
    assert!(steady.len() >= 3, "steady steps: {}", steady.len());
    steady.sort_unstable();
    let n = steady.len();
    if n % 2 == 1 {
        steady[n / 2] as f64
    } else {
        (steady[n / 2 - 1] + steady[n / 2]) as f64 / 2.0
    }
}

fn prefetch(contention: f64) -> Model {
    Model::with_params(
        "prefetch_inputs",
        &ModelParams {
            contention: Some(contention),
            ..ModelParams::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Issue #11's bar: `prefetch_inputs` on the `num_workers=0` trace predicts the measured
/// speedup of the `num_workers=4` recording within 10 %. The default contention was measured
/// on this pair (its lower end: see `DEFAULT_CONTENTION`), so the bar is also held without
/// contention; contention can only lower the prediction.
#[test]
fn prefetch_inputs_predicts_the_num_workers_pair() {
    let (before_trace, before) = pair_trace(NUM_WORKERS_0);
    let (_, after) = pair_trace(NUM_WORKERS_4);
    let measured = measured_step_ns(&before) / measured_step_ns(&after);
    assert!(measured > 1.2, "measured speedup {measured}");
    let mapping = map(&before_trace, &before);
    let context = Context::new(&before_trace, &before, &mapping);
    assert!(!loader_in_workers(&context));
    let mut predicted = Vec::new();
    for contention in [DEFAULT_CONTENTION, 0.0] {
        let outcome =
            apply_models(&context, &[prefetch(contention)]).unwrap_or_else(|e| panic!("{e}"));
        let error = outcome.speedup / measured - 1.0;
        assert!(
            error.abs() <= 0.10,
            "contention {contention}: predicted {} measured {measured} ({error:+.3})",
            outcome.speedup
        );
        predicted.push(outcome.speedup);
    }
    assert!(predicted[0] < predicted[1], "{predicted:?}");
}

/// The `num_workers=4` trace's loader already runs in worker processes
/// (`_MultiProcessingDataLoaderIter`): prefetching changes nothing there, and the measured
/// outcome of "more prefetching" on it is not a 3.87× gain.
#[test]
fn prefetch_inputs_leaves_a_loader_in_workers_alone() {
    let (trace, window) = pair_trace(NUM_WORKERS_4);
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    assert!(loader_in_workers(&context));
    let outcome =
        apply_models(&context, &[prefetch(DEFAULT_CONTENTION)]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.changes.changed + outcome.changes.removed, 0);
    assert!((outcome.speedup - 1.0).abs() < 1e-9, "{}", outcome.speedup);
    let caveats = prefetch(DEFAULT_CONTENTION).caveats(&context);
    assert!(
        caveats
            .iter()
            .any(|c| c.contains("more workers or cheaper transforms")),
        "{caveats:?}"
    );
    // On the single-process loader the caveats state the contention charged instead.
    let (trace0, window0) = pair_trace(NUM_WORKERS_0);
    let mapping0 = map(&trace0, &window0);
    let context0 = Context::new(&trace0, &window0, &mapping0);
    let caveats = prefetch(0.25).caveats(&context0);
    assert!(
        caveats
            .iter()
            .any(|c| c.contains("charges 25 % contention")),
        "{caveats:?}"
    );
    assert!(
        Model::CudaGraphs
            .caveats(&context0)
            .iter()
            .any(|c| c.contains("upper bound"))
    );
}

/// Issue #11's AMP bar: on a real host-bound step (the ResNet-50 sample: 92 % of its critical
/// path is host work) fp32 → autocast + GradScaler measured a loss, so the model must not
/// predict a gain. The kernels alone would gain (`faster_gpu`-like: the GPU idles); the
/// charged host costs (casts, the scaler's ops) must push the prediction to ≤ 1.0×.
#[test]
fn amp_charges_its_host_costs_on_a_host_bound_step() {
    let (trace, window) = load(RESNET50);
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let outcome = apply_models(&context, &[Model::Amp]).unwrap_or_else(|e| panic!("{e}"));
    assert!(outcome.speedup <= 1.0, "amp speedup {}", outcome.speedup);
    // What it charged: the casts autocast's op lists make (every FP32 input of a convolution
    // or linear layer, each way where it needs a gradient), eight scaler ops per steady step,
    // each with host time.
    let mut edit = context.edit();
    let (_, costs) =
        amp_with_costs(&context, &mut edit, AmpDtype::Fp16).unwrap_or_else(|e| panic!("{e}"));
    let steps = outcome.steady_steps;
    assert!(steps >= 3);
    // ResNet-50: 53 convolutions (no bias) and one linear layer (weight and bias), each
    // parameter cast each way, and the batch forward only (it needs no gradient). (Before the
    // casts followed autocast's lists, the linear layer's bias was not charged: 2 × 54 + 1.)
    assert_eq!(costs.casts % steps, 0, "{costs:?}");
    assert_eq!(costs.casts / steps, 2 * 55 + 1, "{costs:?}");
    assert_eq!(costs.backward_casts / steps, 55, "{costs:?}");
    assert_eq!(
        costs.scaler_tasks + 8 * costs.scaler_skipped,
        8 * steps,
        "{costs:?}"
    );
    assert!(costs.host_ns > 0 && costs.elementwise_bytes_per_ns.is_some());
    // Every step got its scaler, so the caveats do not say otherwise.
    assert!(
        !Model::Amp
            .caveats(&context)
            .iter()
            .any(|c| c.contains("left out")),
        "{:?}",
        Model::Amp.caveats(&context)
    );
    // The host time added per step is what the step lost and more: the faster kernels were
    // hidden behind the host.
    let added_host_per_step = costs.host_ns as f64 / steps as f64;
    let lost = outcome.predicted.step_ns as f64 - outcome.baseline.step_ns as f64;
    assert!(
        added_host_per_step >= lost,
        "{added_host_per_step} vs {lost}"
    );
}

/// The three AMP pairs recorded on an H100 (`testdata/kineto/stepcast/h100-pairs`, README
/// there): FP32 → `torch.autocast(float16)` + `GradScaler`, the steady period of each traced
/// step (time between consecutive step ends) measured in the AFTER trace. The prediction must
/// have the measured direction on all three; on the launch-bound MLP, where the model's
/// assumptions hold (the AFTER's unchanged ops cost the host what they did BEFORE), it must
/// be within 15 % of the AFTER's period. On the ResNet the AFTER trace's host ran 40-80 %
/// slower everywhere, outside autocast too (`Optimizer.step` 1.70 → 2.71 ms), which nothing in
/// the BEFORE trace predicts (the H200 machine's pair shows no such change): only the
/// direction is held. On the transformer the host's
/// launch calls block on the full launch queue (copied as host cost), so the device time is
/// held instead: the FP32 attention kernels' math path is not in their names and is taken
/// at the TF32 ratio, the low end, so the prediction stays above the measured device time.
#[test]
fn amp_on_the_h100_pairs_predicts_the_measured_direction() {
    const PAIRS: &str = "stepcast/h100-pairs";
    // (BEFORE, measured AFTER period ms, measured AFTER device busy ms per step)
    let cases: &[(&str, f64, f64)] = &[
        ("mlp-fp32.json.gz", 10.31, 0.99),
        ("resnet-fp32.json.gz", 22.32, 10.23),
        ("transformer-fp32.json.gz", 34.05, 15.96),
    ];
    for &(before, after_ms, after_device_ms) in cases {
        let (trace, window) = pair_trace(&format!("{PAIRS}/{before}"));
        let mapping = map(&trace, &window);
        let context = Context::new(&trace, &window, &mapping);
        let outcome = apply_models(&context, &[Model::Amp]).unwrap_or_else(|e| panic!("{e}"));
        let baseline_ms = outcome.baseline.step_ns as f64 / 1e6;
        let predicted_ms = outcome.predicted.step_ns as f64 / 1e6;
        let measured = baseline_ms / after_ms;
        assert_eq!(
            outcome.speedup < 1.0,
            measured < 1.0,
            "{before}: predicted {:.3}×, measured {measured:.3}×",
            outcome.speedup
        );
        let device_ms: f64 = outcome
            .phases
            .iter()
            .map(|p| p.device_after_ns as f64 / 1e6)
            .sum();
        match before {
            "mlp-fp32.json.gz" => {
                let error = (predicted_ms - after_ms) / after_ms;
                assert!(
                    error.abs() < 0.15,
                    "{before}: {predicted_ms} ms vs {after_ms}"
                );
            }
            "transformer-fp32.json.gz" => assert!(
                device_ms >= after_device_ms && device_ms < 1.4 * after_device_ms,
                "{before}: device {device_ms} ms vs {after_device_ms}"
            ),
            _ => {}
        }
    }
}

const H100_LOADER_0: &str = "stepcast/h100-pairs/loader-workers0.json.gz";

fn workers(n: u32) -> Model {
    Model::with_params(
        "prefetch_inputs",
        &ModelParams {
            workers: Some(n as f64),
            ..ModelParams::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// Issue #26: the loading a worker does is the training process's recorded loading, read
/// again from the file: per batch, the mean of the steady steps' `__next__` ranges (serde_json
/// alone); split into parts that sum to it.
#[test]
fn loader_work_is_the_recorded_loading_per_batch() {
    let (trace, window) = pair_trace(H100_LOADER_0);
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let work = loader_work(&context);
    let events = super::compare::raw_events(H100_LOADER_0);
    let steps = super::compare::independent_steps(&events);
    let name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
    let durations: Vec<f64> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == name)
        .filter(|e| {
            let ts = e["ts"].as_f64().unwrap_or(0.0);
            steps[1..]
                .iter()
                .any(|&(start, end, _)| start <= ts && ts < end)
        })
        .map(|e| e["dur"].as_f64().unwrap_or(0.0))
        .collect();
    assert_eq!(work.batches, durations.len());
    let mean_ns = durations.iter().sum::<f64>() * 1000.0 / durations.len() as f64;
    assert!(
        (work.recorded_ns as f64 - mean_ns).abs() <= 1_000.0,
        "{work:?} vs {mean_ns}"
    );
    let parts = work.parallel_ns + work.stall_ns + work.serial_ns + work.untraced_ns;
    assert!((parts - work.recorded_ns).abs() <= 2, "{work:?}");
    // The image's random draw (`aten::rand` with a generator: 24 ms of 42) is serial.
    assert!(work.serial_ns > work.parallel_ns, "{work:?}");
}

/// Issue #26: a parallel op's time past the median of its identical calls is a stall, which a
/// worker's one thread loses once: read again from the file (serde_json alone), the
/// `avg_pool2d` calls of the loading (one op on one shape, spread over the intra-op threads)
/// stalled about 7 times as long per batch on the H200 machine's BEFORE trace as on the H100's
/// (the H200 pairs' misses before the split), and the model's stalls include theirs.
#[test]
fn loader_stalls_are_calls_past_the_median_of_their_identical_calls() {
    const H200_LOADER_0: &str = "stepcast/h200-pairs/loader-workers0.json.gz";
    let mut stalls_ns = Vec::new();
    for relative in [H100_LOADER_0, H200_LOADER_0] {
        let (trace, window) = pair_trace(relative);
        let mapping = map(&trace, &window);
        let work = loader_work(&Context::new(&trace, &window, &mapping));
        let events = super::compare::raw_events(relative);
        let steps = super::compare::independent_steps(&events);
        let in_steady = |ts: f64| {
            steps[1..]
                .iter()
                .any(|&(start, end, _)| start <= ts && ts < end)
        };
        let mut pools_ns: Vec<i64> = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["name"] == "aten::avg_pool2d")
            .filter(|e| in_steady(e["ts"].as_f64().unwrap_or(0.0)))
            .map(|e| (e["dur"].as_f64().unwrap_or(0.0) * 1000.0).round() as i64)
            .collect();
        assert_eq!(
            pools_ns.len(),
            32 * work.batches,
            "{relative}: one per image"
        );
        pools_ns.sort_unstable();
        let n = pools_ns.len();
        let median = (pools_ns[n / 2 - 1] + pools_ns[n / 2]) / 2;
        let pool_stall_ns: i64 =
            pools_ns.iter().map(|d| (d - median).max(0)).sum::<i64>() / work.batches as i64;
        assert!(
            work.stall_ns >= pool_stall_ns - 1_000 && work.stall_ns < work.recorded_ns / 4,
            "{relative}: {work:?}, avg_pool2d stalls {pool_stall_ns} ns per batch"
        );
        stalls_ns.push(work.stall_ns);
    }
    assert!(stalls_ns[1] > 5 * stalls_ns[0], "{stalls_ns:?}");
}

/// The workers' contention is charged once for the process: on tb_plugin's `autograd_api`
/// ResNet-50 (no step markers: one window, 6 batches loaded on the main thread, the autograd
/// thread idle across each loading), counting the autograd thread's idle gaps as loading it no
/// longer did charged the contention twice, and moving the loading out predicted a step 0.6 %
/// slower, declined as a defect of the model. Charged no more than the loading taken off, the
/// step is not slower, with no anomaly; the contention still costs (less gain than without).
#[test]
fn prefetch_contention_is_charged_once_for_the_process() {
    // The whole window as one step, as it was read before steps were inferred from the loop's
    // ranges.
    let (trace, window) = super::load_as_one_window(
        "kineto/tb_plugin/samples/resnet50_autograd_api_num_workers_0/worker0.pt.trace.json.gz",
    );
    assert!(matches!(window.steps.as_slice(), [step] if step.synthetic));
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let charged = apply_models(&context, &[prefetch(0.1)]).unwrap_or_else(|e| panic!("{e}"));
    let free = apply_models(&context, &[prefetch(0.0)]).unwrap_or_else(|e| panic!("{e}"));
    assert!(charged.speedup >= 1.0, "{}", charged.speedup);
    assert!(charged.anomaly.is_none(), "{:?}", charged.anomaly);
    assert!(charged.declined.is_none(), "{:?}", charged.declined);
    assert!(
        charged.speedup < free.speedup,
        "{} {}",
        charged.speedup,
        free.speedup
    );
}

/// Issue #26: the step after moving the loading into N workers is at least their pace (a
/// batch's loading in one worker / N), shrinks as N grows until the step without loading
/// bounds it, and one worker, slower than the training process's own loading, is a loss
/// whose anomaly names the workers.
#[test]
fn prefetch_inputs_is_bounded_by_the_workers_pace() {
    let (trace, window) = pair_trace(H100_LOADER_0);
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let mut previous = i64::MAX;
    for n in [1, 2, 4, 8, 64] {
        let outcome = apply_models(&context, &[workers(n)]).unwrap_or_else(|e| panic!("{e}"));
        let pace =
            delivery_ns(&context, n, LoaderHost::default()).unwrap_or_else(|| panic!("no loading"));
        // The pace starts from the warm-up step's batch: within 3 % over five steps.
        assert!(
            outcome.predicted.step_ns as f64 >= 0.97 * pace as f64,
            "{n} workers: step {} below their pace {pace}",
            outcome.predicted.step_ns
        );
        assert!(outcome.predicted.step_ns <= previous, "{n} workers");
        previous = outcome.predicted.step_ns;
        if n == 1 {
            assert!(outcome.speedup < 1.0, "{}", outcome.speedup);
            let anomaly = outcome.anomaly.unwrap_or_default();
            assert!(anomaly.contains("1 loader workers deliver"), "{anomaly}");
        }
    }
    // Enough workers: the step without its loading (the pace no longer binds).
    let unbound = apply_models(&context, &[workers(64)]).unwrap_or_else(|e| panic!("{e}"));
    let pace = delivery_ns(&context, 64, LoaderHost::default()).unwrap_or(0);
    assert!(unbound.predicted.step_ns > 2 * pace);
}

/// Issues #25 and #26: given the host, `prefetch_inputs` responds to it as a machine would:
/// on every loader trace of `testdata/` (CPU-only and with device work), more cores never
/// predict a slower step for the same workers, and, with cores to spare, more workers never
/// do either.
#[test]
fn prefetch_inputs_is_never_slower_with_more_cores_or_workers() {
    let prefetch = |workers: u32, cores: u32| {
        Model::with_params(
            "prefetch_inputs",
            &ModelParams {
                workers: Some(workers as f64),
                cores: Some(cores as f64),
                threads: Some(1.0),
                ..ModelParams::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    for relative in [
        "stepcast/cpu-loader-pairs/loader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/heavyloader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/steady/textloader-workers0.json.gz",
        "stepcast/cpu-pairs/loader-workers0.json.gz",
        H100_LOADER_0,
        "stepcast/h200-pairs/loader-workers0.json.gz",
    ] {
        let (trace, window) = pair_trace(relative);
        let mapping = map(&trace, &window);
        let context = Context::new(&trace, &window, &mapping);
        let step = |workers: u32, cores: u32| {
            apply_models(&context, &[prefetch(workers, cores)])
                .unwrap_or_else(|e| panic!("{relative}: {e}"))
                .predicted
                .step_ns
        };
        for workers in [1, 2, 4, 8] {
            let steps: Vec<i64> = [2, 4, 8, 64].map(|cores| step(workers, cores)).to_vec();
            assert!(
                steps.windows(2).all(|w| w[1] <= w[0]),
                "{relative}, {workers} workers on 2, 4, 8, 64 cores: {steps:?}"
            );
        }
        let steps: Vec<i64> = [1, 2, 4, 8].map(|workers| step(workers, 64)).to_vec();
        assert!(
            steps.windows(2).all(|w| w[1] <= w[0]),
            "{relative}, 1, 2, 4, 8 workers on 64 cores: {steps:?}"
        );
    }
}

/// `advise` on a host with given cores prices `prefetch_inputs` at 1, 2 and 4 workers: it keeps
/// the model's default count, and its caveat gives what each count predicts, each the speedup
/// `whatif prefetch_inputs --workers N` gives with the same host.
#[test]
fn advise_on_given_cores_says_what_each_worker_count_predicts() {
    let host = LoaderHost {
        cores: Some(2),
        threads: Some(1),
    };
    for relative in [
        "stepcast/cpu-loader-pairs/heavyloader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/steady/textloader-workers0.json.gz",
    ] {
        let (trace, window) = pair_trace(relative);
        let mapping = map(&trace, &window);
        let context = Context::new(&trace, &window, &mapping);
        let advice = stepcast::whatif::advise_on(&context, host).unwrap_or_else(|e| panic!("{e}"));
        let [prefetch] = advice
            .candidates
            .iter()
            .filter(|c| matches!(c.models.as_slice(), [Model::PrefetchInputs { .. }]))
            .collect::<Vec<_>>()[..]
        else {
            panic!("{relative}: one prefetch_inputs candidate")
        };
        assert_eq!(prefetch.name(), "prefetch_inputs(cores=2,threads=1)");
        let curve = prefetch
            .outcome
            .caveats
            .iter()
            .find(|c| c.starts_with("1, 2 and 4 workers (--workers) predict "))
            .unwrap_or_else(|| panic!("{relative}: {:?}", prefetch.outcome.caveats));
        let speedups: Vec<String> = [1u32, 2, 4]
            .iter()
            .map(|&workers| {
                let model = Model::PrefetchInputs {
                    contention: 0.0,
                    workers,
                    host,
                };
                let speedup = apply_models(&context, &[model])
                    .unwrap_or_else(|e| panic!("{e}"))
                    .speedup;
                format!("×{speedup:.3}")
            })
            .collect();
        let expected = format!(
            "1, 2 and 4 workers (--workers) predict {}, {} and {}: ",
            speedups[0], speedups[1], speedups[2]
        );
        assert!(
            curve.starts_with(&expected),
            "{relative}: {curve} / {expected}"
        );
        assert_eq!(speedups[2], format!("×{:.3}", prefetch.outcome.speedup));
        // Where fewer workers predict the same step, the caveat names how few.
        if speedups[1] == speedups[2] && speedups[0] != speedups[2] {
            assert!(curve.contains(": 2 already predict the step"), "{curve}");
        }
    }
}

/// Issue #26: a CUDA graph's replay runs none of the captured region's host work. On the
/// eager MLP step (H100) the replay is left bound by its device: its step is at least the
/// device's busy time, and the host time it no longer runs includes the autograd engine's
/// handoffs. On HTA's `trace_diff/test` (V100, two ranks, 38 ms of waiting for peers per
/// step) removing host work is not slower.
#[test]
fn cuda_graphs_replay_runs_no_host_work_inside_the_region() {
    let (trace, window) = pair_trace("stepcast/h100-pairs/mlp-eager_capturable.json.gz");
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let outcome = apply_models(&context, &[Model::CudaGraphs]).unwrap_or_else(|e| panic!("{e}"));
    let device_ns: i64 = outcome.phases.iter().map(|p| p.device_after_ns).sum();
    assert!(outcome.predicted.step_ns >= device_ns);
    assert!(
        outcome.predicted.step_ns < 2 * device_ns,
        "{}",
        outcome.predicted.step_ns
    );
    let mut edit = context.edit();
    let captured = capture(&context, &mut edit).unwrap_or_else(|e| panic!("{e}"));
    assert!(captured.handoff_removed_ns > 0, "{captured:?}");
    assert!(captured.nodes_per_step >= 200.0, "{captured:?}");
    let (trace, window) =
        pair_trace("HolisticTraceAnalysis/tests/data/trace_diff/test/test.json.gz");
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let outcome = apply_models(&context, &[Model::CudaGraphs]).unwrap_or_else(|e| panic!("{e}"));
    assert!(outcome.speedup >= 1.0, "{}", outcome.speedup);
}
