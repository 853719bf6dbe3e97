//! What-if primitives, built-in models and scenario files on real traces (issue #4).

use std::sync::OnceLock;

use stepcast::Window;
use stepcast::analyze::mapping::{Mapping, map};
use stepcast::graph::{NO_STEP, TaskId, TaskKind};
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};
use stepcast::whatif::{
    Context, EditError, Hardware, HostGaps, Insert, InsertLaunch, Model, ModelParams, Resource,
    Scenario, Selection, WhatIfError, advise, apply_models, median_duration, predict, what_if,
};
use stepcast_trace::Trace;

use crate::load;

const DF_INDEX_RESOLVER: &str =
    "HolisticTraceAnalysis/tests/data/df_index_resolver/df_index_resolver.json.gz";
const NCCL_DATA: &str = "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz";
const RESNET50: &str =
    "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz";
const TRACES: [&str; 3] = [DF_INDEX_RESOLVER, NCCL_DATA, RESNET50];
/// ResNet-50 recorded by PARAM's et_replay tests (batch norm, a `DataLoader`, no memory events).
const RESNET_KINETO: &str = "param/et_replay/tests/inputs/resnet_kineto.json.gz";
/// Every trace these tests load (the cache's order).
const CACHED: [&str; 4] = [DF_INDEX_RESOLVER, NCCL_DATA, RESNET50, RESNET_KINETO];

pub(crate) struct Loaded {
    pub(crate) trace: Trace,
    pub(crate) window: Window,
    pub(crate) mapping: Mapping,
}

fn loaded(relative: &'static str) -> &'static Loaded {
    static CACHE: [OnceLock<Loaded>; 4] = [
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
        OnceLock::new(),
    ];
    let index = CACHED
        .iter()
        .position(|&t| t == relative)
        .expect("a trace of CACHED");
    CACHE[index].get_or_init(|| load_mapped(relative))
}

/// A trace, its window and its mapping, uncached (for traces only one test reads).
pub(crate) fn load_mapped(relative: &str) -> Loaded {
    let (trace, window) = load(relative);
    let mapping = map(&trace, &window);
    Loaded {
        trace,
        window,
        mapping,
    }
}

pub(crate) fn context(loaded: &Loaded) -> Context<'_> {
    Context {
        trace: &loaded.trace,
        window: &loaded.window,
        mapping: &loaded.mapping,
        peers: Default::default(),
        data: None,
    }
}

/// A deterministic pseudo-random sequence (64-bit LCG, Knuth's constants).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn unit(&mut self) -> f64 {
        (self.next() % 1_000_000) as f64 / 1_000_000.0
    }
}

#[test]
fn identity_transform_replays_byte_identically() {
    for relative in TRACES {
        let loaded = loaded(relative);
        let context = context(loaded);
        let outcome = what_if(&context, |_| Ok(())).unwrap_or_else(|e| panic!("{relative}: {e}"));
        assert_eq!(outcome.baseline, outcome.predicted, "{relative}");
        assert_eq!(outcome.speedup, 1.0, "{relative}");
        // A what-if graph is the window's graph without its edges inferred from timing: the
        // window's own replay without them, to the nanosecond.
        assert_eq!(outcome.pinned_edges, 0, "{relative}");
        assert!(
            !outcome.graph.pred_kind.iter().any(|k| k.is_inferred()),
            "{relative}"
        );
        let without_inferred = SimOptions {
            without_inferred: true,
            ..SimOptions::default()
        };
        let before = simulate(&loaded.window.graph, &RecordedOrder, without_inferred)
            .unwrap_or_else(|e| panic!("{e}"));
        let after = simulate(&outcome.graph, &RecordedOrder, SimOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(before.begin_ns, after.begin_ns, "{relative}");
        assert_eq!(before.end_ns, after.end_ns, "{relative}");
        let g = &loaded.window.graph;
        assert_eq!(
            g.dur_without_inferred_ns, outcome.graph.dur_ns,
            "{relative}"
        );
        assert_eq!(g.gap_ns, outcome.graph.gap_ns, "{relative}");
        assert_eq!(g.lanes, outcome.graph.lanes, "{relative}");
    }
}

/// With lane order fixed, shortening any selection of tasks never makes any task, and so any
/// step, end later (the replay is a longest-path computation, monotone in every cost).
#[test]
fn shorter_tasks_never_make_a_step_longer() {
    let mut random = Lcg(4);
    for relative in TRACES {
        let loaded = loaded(relative);
        let context = context(loaded);
        let base = simulate(&loaded.window.graph, &RecordedOrder, SimOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let baseline =
            predict(&loaded.window, &loaded.window.graph).unwrap_or_else(|e| panic!("{e}"));
        for round in 0..6 {
            let share = random.next() % 100 + 1;
            let factor = random.unit();
            let seed = random.next();
            let outcome = what_if(&context, |edit| {
                let mut pick = Lcg(seed);
                let selection = edit.select_where(|_| pick.next() % 100 < share);
                edit.scale(&selection, factor)?;
                if round % 2 == 1 {
                    edit.scale_gaps(&selection, factor)?;
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{relative}: {e}"));
            let after = simulate(&outcome.graph, &RecordedOrder, SimOptions::default())
                .unwrap_or_else(|e| panic!("{e}"));
            for t in 0..base.end_ns.len() {
                assert!(
                    after.end_ns[t] <= base.end_ns[t],
                    "{relative} round {round}: task {t} ends later ({} > {})",
                    after.end_ns[t],
                    base.end_ns[t]
                );
            }
            for (s, (a, b)) in outcome
                .predicted
                .step_end_ns
                .iter()
                .zip(&baseline.step_end_ns)
                .enumerate()
            {
                assert!(a <= b, "{relative} round {round}: step {s} ends later");
            }
            assert!(outcome.predicted.window_end_ns <= baseline.window_end_ns);
        }
    }
}

/// Removing a kernel (with its launch call) and inserting it back, launched by a call that
/// costs the trace's median for that API, restores the step time within the launch-cost
/// model's error.
#[test]
fn remove_then_insert_restores_the_step() {
    for relative in TRACES {
        let loaded = loaded(relative);
        let context = context(loaded);
        let g = &loaded.window.graph;
        let edit = context.edit();
        // Kernels of the last step launched by a call that launches only them, with a task
        // before them on their stream and before their call on its thread.
        let last_step = (loaded.window.steps.len() - 1) as u32;
        let candidates: Vec<(TaskId, TaskId)> = (0..g.task_count() as u32)
            .map(TaskId)
            .filter(|&t| g.kind[t.index()] == TaskKind::Kernel && g.step[t.index()] == last_step)
            .filter_map(|t| edit.launcher(t).map(|call| (t, call)))
            .filter(|&(t, call)| {
                edit.launched(call).len() == 1
                    && g.lane_pred(t).is_some()
                    && g.lane_pred(call).is_some()
            })
            .collect();
        assert!(candidates.len() > 10, "{relative}");
        for k in 0..5 {
            let (kernel, call) = candidates[k * candidates.len() / 5];
            let outcome = what_if(&context, |edit| {
                edit.remove(&Selection::new(vec![kernel]), HostGaps::Keep)?;
                assert!(
                    !edit.is_alive(call),
                    "the launch call goes with its only kernel"
                );
                let call_name = g.name[call.index()];
                edit.insert(&Insert {
                    kind: TaskKind::Kernel,
                    name: g.name[kernel.index()],
                    dur_ns: g.dur_ns[kernel.index()],
                    after: g.lane_pred(kernel).expect("filtered"),
                    launch: Some(InsertLaunch {
                        name: call_name,
                        after: g.lane_pred(call).expect("filtered"),
                        dur_ns: median_duration(g, call_name).unwrap_or(0),
                    }),
                })?;
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{relative}: {e}"));
            assert_eq!(outcome.tasks_after, outcome.tasks_before, "{relative}");
            let error = (outcome.speedup - 1.0).abs();
            assert!(
                error < 0.01,
                "{relative}: kernel {kernel:?} restored with speedup {}",
                outcome.speedup
            );
        }
    }
}

#[test]
fn a_transform_that_makes_a_cycle_is_an_error() {
    let loaded = loaded(RESNET50);
    let context = context(loaded);
    let g = &loaded.window.graph;
    // A blocking call waiting for a kernel; insert a kernel before that one on its stream,
    // launched after the blocking call returns: the kernel would wait for itself.
    let (sync, waited) = (0..g.task_count() as u32)
        .map(TaskId)
        .filter(|t| g.step[t.index()] != NO_STEP && !g.kind[t.index()].on_device())
        .find_map(|t| {
            g.preds(t)
                .find(|&e| g.pred_kind[e] == stepcast::graph::EdgeKind::HostSync)
                .map(|e| (t, g.pred[e]))
                .filter(|&(_, d)| g.lane_pred(d).is_some())
        })
        .expect("resnet50 has a blocking call");
    let result = what_if(&context, |edit| {
        edit.insert(&Insert {
            kind: TaskKind::Kernel,
            name: g.name[waited.index()],
            dur_ns: 1_000,
            after: g.lane_pred(waited).expect("filtered"),
            launch: Some(InsertLaunch {
                name: g.name[sync.index()],
                after: sync,
                dur_ns: 1_000,
            }),
        })?;
        Ok(())
    });
    assert!(
        matches!(result, Err(WhatIfError::Edit(EditError::Cycle { .. }))),
        "{result:?}"
    );
}

#[test]
fn primitives_reject_bad_input() {
    let loaded = loaded(RESNET50);
    let context = context(loaded);
    let g = &loaded.window.graph;
    let mut edit = context.edit();
    let host = TaskId(g.lanes[0].first_task);
    let other = (0..g.task_count() as u32)
        .map(TaskId)
        .find(|t| g.lane[t.index()] != g.lane[host.index()])
        .expect("two lanes");
    assert!(matches!(
        edit.fuse(
            &Selection::new(vec![host, other]),
            stepcast::whatif::FusedCost::SumTimes(1.0),
            HostGaps::Keep
        ),
        Err(EditError::FuseAcrossLanes { .. })
    ));
    assert!(matches!(
        edit.scale(&Selection::new(vec![host]), -1.0),
        Err(EditError::BadFactor { .. })
    ));
    assert!(matches!(
        edit.scale(&Selection::new(vec![TaskId(u32::MAX - 1)]), 0.5),
        Err(EditError::NoSuchTask { .. })
    ));
}

/// Every built-in model gives a speedup of at least 1 on every trace: each can only help.
/// (Memory-for-time trades are not built-in speedups: `Model::memory_trades`.)
#[test]
fn builtin_models_never_slow_a_step_down() {
    for relative in CACHED {
        let context = context(loaded(relative));
        // `amp` and `prefetch_inputs` charge what they cost (casts and the gradient scaler;
        // the loader's workers' contention): they may slow a step down (`pairs.rs`).
        for model in Model::builtin()
            .into_iter()
            .filter(|m| !matches!(m, Model::Amp | Model::PrefetchInputs { .. }))
        {
            let outcome = apply_models(&context, std::slice::from_ref(&model))
                .unwrap_or_else(|e| panic!("{relative} {}: {e}", model.name()));
            assert!(
                outcome.speedup >= 1.0,
                "{relative} {}: speedup {}",
                model.name(),
                outcome.speedup
            );
        }
    }
}

/// Measured speedups on the shared traces, pinned loosely (a change of model shows here).
#[test]
fn builtin_model_speedups() {
    let cases: &[(&str, &str, f64, f64)] = &[
        // Host-bound: the update's 28 ms of host work per 348 ms step is at most 1.088.
        (DF_INDEX_RESOLVER, "fused_optimizer", 1.03, 1.09),
        (DF_INDEX_RESOLVER, "cuda_graphs", 1.5, 2.5),
        (DF_INDEX_RESOLVER, "faster_cpu", 1.4, 2.0),
        (NCCL_DATA, "fused_optimizer", 1.01, 1.1),
        // 210 ms of host work a step is captured; about 51 ms of device work remains (the
        // NCCL watchdog thread polling every 100 ms no longer ends a step: 1.23× while it did).
        (NCCL_DATA, "cuda_graphs", 3.5, 4.8),
        // The backward pass runs on the engine thread, forked after the forward pass (PyTorch
        // 1.8's node names): capture shortens the forward pass and the backward follows it.
        (RESNET50, "cuda_graphs", 1.3, 1.8),
        // Host-bound: the casts' and the scaler's host time (36 eager ops' worth a step,
        // `SCALER_HOST_OPS`) outweigh the faster kernels.
        (RESNET50, "amp", 0.95, 1.0),
        (RESNET50, "faster_gpu", 1.005, 1.2),
        (DF_INDEX_RESOLVER, "kernel_fusion", 1.1, 1.25),
        (NCCL_DATA, "kernel_fusion", 1.05, 1.4),
        (RESNET50, "kernel_fusion", 1.005, 1.1),
        (RESNET50, "faster_copies", 1.0, 1.05),
    ];
    for &(relative, name, low, high) in cases {
        let context = context(loaded(relative));
        let model = Model::by_name(name).expect("a model name");
        let outcome = apply_models(&context, &[model]).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            (low..=high).contains(&outcome.speedup),
            "{relative} {name}: speedup {}",
            outcome.speedup
        );
    }
}

#[test]
fn fused_optimizer_leaves_one_kernel_per_step_and_stream() {
    let loaded = loaded(RESNET50);
    let context = context(loaded);
    let outcome = apply_models(&context, &[Model::FusedOptimizer { factor: 1.0 }])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(outcome.tasks_after < outcome.tasks_before - 1000);
}

fn example(name: &str) -> String {
    let path = format!(
        "{}/../../examples/scenarios/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn example_scenarios_parse_and_apply() {
    let context = context(loaded(RESNET50));
    for name in [
        "halve_backward_gemms.toml",
        "fused_optimizer_and_cuda_graphs.toml",
        "fuse_elementwise.toml",
        "faster_host.toml",
        "compile_reduce_overhead.toml",
    ] {
        let scenario = Scenario::parse(&example(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!scenario.transforms.is_empty(), "{name}");
        let outcome = what_if(&context, |edit| scenario.apply(&context, edit))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(outcome.speedup >= 1.0, "{name}: {}", outcome.speedup);
    }
}

/// Bad scenario files: (text, line, column, what the message says).
const BAD_SCENARIOS: &[(&str, usize, usize, &str)] = &[
    (
        "[[transform]]\nselect = { phase = \"backwards\" }\nscale = 0.5\n",
        2,
        20,
        "unknown phase `backwards`",
    ),
    (
        "[[transform]]\nselect = { name = \"gemm(\" }\nscale = 0.5\n",
        2,
        19,
        "invalid regular expression",
    ),
    (
        "[[transform]]\nselect = { name = \"gemm\" }\nscael = 0.5\n",
        3,
        1,
        "unknown field `scael`",
    ),
    (
        "[[transform]]\nmodel = \"fused_adamw\"\n",
        2,
        9,
        "unknown model `fused_adamw`",
    ),
    (
        "[[transform]]\nselect = { kind = \"kernel\" }\nscale = -2.0\n",
        3,
        9,
        "invalid factor",
    ),
    (
        "name = \"x\"\n\n[[transform]]\nselect = { kind = \"kernel\" }\n",
        3,
        1,
        "this transform does nothing",
    ),
];

#[test]
fn scenario_errors_point_at_the_offending_line() {
    for &(text, line, column, message) in BAD_SCENARIOS {
        let error = Scenario::parse(text).expect_err(text);
        assert_eq!((error.line, error.column), (line, column), "{error}");
        assert!(error.message.contains(message), "{error}");
    }
}

/// Kernel fusion removes kernels and their launches, and never makes a fused kernel shorter
/// than its longest part or longer than the sum: the device time it saves is at most half of
/// the element-wise time of the forward and backward passes.
#[test]
fn kernel_fusion_removes_kernels_and_saves_device_time() {
    for relative in TRACES {
        let context = context(loaded(relative));
        let outcome = apply_models(&context, &[Model::KernelFusion { factor: None }])
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(outcome.changes.removed > 0, "{relative}");
        assert_eq!(outcome.changes.added, 0, "{relative}");
        let saved = outcome.device_saved_ns();
        let device_before: i64 = outcome.phases.iter().map(|p| p.device_before_ns).sum();
        assert!(
            saved > 0 && saved < device_before / 2,
            "{relative}: {saved}"
        );
    }
}

/// The identity what-if changes nothing: no task counted as changed, the per-phase times
/// before and after agree, and the bottleneck is the baseline's.
#[test]
fn identity_outcome_reports_no_change() {
    for relative in TRACES {
        let context = context(loaded(relative));
        let outcome = what_if(&context, |_| Ok(())).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcome.changes, Default::default(), "{relative}");
        for phase in &outcome.phases {
            assert_eq!(phase.host_before_ns, phase.host_after_ns, "{relative}");
            assert_eq!(phase.device_before_ns, phase.device_after_ns, "{relative}");
        }
        assert_eq!(outcome.host_saved_ns(), 0);
        assert_eq!(
            outcome.baseline.bottleneck, outcome.predicted.bottleneck,
            "{relative}"
        );
        // The bottleneck covers the steady period (integer means: within a few ns per step).
        let length = outcome.baseline.bottleneck.length_ns();
        assert!(
            (length - outcome.baseline.step_ns).abs() <= 8,
            "{relative}: path {length} vs period {}",
            outcome.baseline.step_ns
        );
    }
}

/// CUDA graphs on a host-bound trace: host time goes, the bottleneck moves off the host.
#[test]
fn cuda_graphs_move_the_bottleneck_off_the_host() {
    let context = context(loaded(DF_INDEX_RESOLVER));
    let outcome = apply_models(&context, &[Model::CudaGraphs]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.baseline.bottleneck.bound(), Resource::Host);
    assert_ne!(outcome.predicted.bottleneck.bound(), Resource::Host);
    assert!(outcome.host_saved_ns() > 0);
    assert_eq!(outcome.device_saved_ns(), 0);
}

/// Regression: a fused optimizer applied before CUDA graphs removed the step's last launch
/// calls, which shrank the captured region and left the host's wait for the backward pass
/// as host time: the combination predicted less than CUDA graphs alone (1.28 vs 1.85).
#[test]
fn fused_optimizer_then_cuda_graphs_is_no_worse_than_cuda_graphs() {
    for relative in TRACES {
        let context = context(loaded(relative));
        let alone = apply_models(&context, &[Model::CudaGraphs]).unwrap_or_else(|e| panic!("{e}"));
        let both = apply_models(
            &context,
            &[Model::FusedOptimizer { factor: 1.0 }, Model::CudaGraphs],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            both.speedup >= alone.speedup * 0.995,
            "{relative}: {} < {}",
            both.speedup,
            alone.speedup
        );
    }
}

#[test]
fn advise_ranks_every_model_and_useful_combinations() {
    for relative in [DF_INDEX_RESOLVER, NCCL_DATA] {
        let context = context(loaded(relative));
        let advice = advise(&context).unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<String> = advice.candidates.iter().map(|c| c.name()).collect();
        for model in Model::advised() {
            assert!(
                names.contains(&model.name()),
                "{relative}: {}",
                model.name()
            );
        }
        // Best first, ties by name.
        for pair in advice.candidates.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert!(
                a.outcome.speedup > b.outcome.speedup
                    || (a.outcome.speedup == b.outcome.speedup && a.name() < b.name()),
                "{relative}: {} before {}",
                a.name(),
                b.name()
            );
        }
        // No combination includes a model that does not help on its own.
        let useless: Vec<String> = advice
            .candidates
            .iter()
            .filter(|c| c.models.len() == 1 && !c.is_useful())
            .map(|c| c.name())
            .collect();
        for candidate in advice.candidates.iter().filter(|c| c.models.len() > 1) {
            for model in &candidate.models {
                assert!(!useless.contains(&model.name()), "{}", candidate.name());
            }
        }
        // A combination ranks only where it adds a useful step to its best member: one whose
        // extra models add nothing never sits above the model that does the work.
        for candidate in advice.candidates.iter().filter(|c| c.models.len() > 1) {
            let best_member = advice
                .candidates
                .iter()
                .filter(|c| c.models.len() == 1 && candidate.models.contains(&c.models[0]))
                .map(|c| c.outcome.speedup)
                .fold(1.0, f64::max);
            assert!(
                candidate.outcome.speedup >= best_member * stepcast::whatif::advise::USEFUL_SPEEDUP,
                "{relative}: {} at {} over its best member's {}",
                candidate.name(),
                candidate.outcome.speedup,
                best_member
            );
        }
        // Every candidate is predicted against the same baseline, and matches a what-if run
        // on its own: the best, and every single model (those that change nothing share one
        // replay in `advise`; the figure under the other peers' choice is replayed there on
        // the graph already built).
        let best = &advice.candidates[0];
        let alone = apply_models(&context, &best.models).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(alone.predicted, best.outcome.predicted, "{relative}");
        for candidate in advice.candidates.iter().filter(|c| c.models.len() == 1) {
            let alone = apply_models(&context, &candidate.models).unwrap_or_else(|e| panic!("{e}"));
            let name = candidate.name();
            assert_eq!(
                alone.predicted, candidate.outcome.predicted,
                "{relative}: {name}"
            );
            assert_eq!(
                alone.changes, candidate.outcome.changes,
                "{relative}: {name}"
            );
            assert_eq!(
                alone.other_peers_speedup, candidate.outcome.other_peers_speedup,
                "{relative}: {name}"
            );
            assert!(
                candidate.outcome.graph.task_count() == 0,
                "{relative}: {name}"
            );
        }
        let again = advise(&context).unwrap_or_else(|e| panic!("{e}"));
        let again: Vec<String> = again.candidates.iter().map(|c| c.name()).collect();
        assert_eq!(names, again, "{relative}: deterministic order");
    }
}

/// Model parameters: (model, params, the model or the error's text).
#[test]
fn model_params_are_checked() {
    let ok = Model::with_params(
        "faster_hardware",
        &ModelParams {
            compute: Some(2.0),
            memory: Some(1.5),
            cpu: Some(1.2),
            ..ModelParams::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        ok,
        Model::FasterHardware(Hardware {
            compute: 2.0,
            memory: 1.5,
            cpu: 1.2,
            copy: 1.0,
            target: None,
            cpu_given: true,
        })
    );
    let fused = Model::with_params(
        "fused_optimizer",
        &ModelParams {
            factor: Some(0.5),
            ..ModelParams::default()
        },
    );
    assert_eq!(fused, Ok(Model::FusedOptimizer { factor: 0.5 }));
    let cases: &[(&str, ModelParams, &str)] = &[
        (
            "fused_adamw",
            ModelParams::default(),
            "unknown model `fused_adamw`; the models are: fused_optimizer, cuda_graphs",
        ),
        (
            "cuda_graphs",
            ModelParams {
                factor: Some(0.5),
                ..ModelParams::default()
            },
            "cuda_graphs takes no --factor; it takes none",
        ),
        (
            "amp",
            ModelParams {
                cpu: Some(2.0),
                ..ModelParams::default()
            },
            "amp takes no --cpu",
        ),
        (
            "faster_gpu",
            ModelParams {
                compute: Some(0.0),
                ..ModelParams::default()
            },
            "invalid --compute 0",
        ),
        (
            "fused_optimizer",
            ModelParams {
                compute: Some(2.0),
                ..ModelParams::default()
            },
            "it takes --factor",
        ),
    ];
    for (name, params, message) in cases {
        let error = Model::with_params(name, params)
            .expect_err(name)
            .to_string();
        assert!(error.contains(message), "{error}");
    }
}

/// Input tasks of `loaded`'s graph whose event is no longer in `after` (device tasks only).
fn removed_device_tasks(loaded: &Loaded, after: &stepcast::graph::Graph) -> Vec<TaskId> {
    let g = &loaded.window.graph;
    let kept: std::collections::BTreeSet<_> = after.event.iter().copied().collect();
    (0..g.task_count() as u32)
        .map(TaskId)
        .filter(|t| g.kind[t.index()].on_device() && !kept.contains(&g.event[t.index()]))
        .collect()
}

/// Whether input task `t` is a batch-norm kernel, by its name or its op stack.
fn is_batch_norm(loaded: &Loaded, t: TaskId) -> bool {
    let names = &loaded.trace.names;
    let g = &loaded.window.graph;
    let name = names.get(g.name[t.index()]).to_ascii_lowercase();
    name.contains("bn_fw")
        || name.contains("bn_bw")
        || name.contains("batch_norm")
        || name.contains("batchnorm")
        || loaded.mapping.stack(t).iter().any(|e| {
            let op = names
                .get(loaded.trace.events[e.index()].name)
                .to_ascii_lowercase();
            op.contains("batch_norm") || op.contains("batchnorm")
        })
}

/// Reconstructed batch norm removes exactly the element-wise kernels next to batch norm (after
/// it in the forward pass, before it in the backward pass, on its stream), halves the
/// batch-norm kernels, and never lengthens the step. The saved device time is exactly the
/// removed kernels' plus half the batch-norm kernels' recorded time.
#[test]
fn reconstruct_batchnorm_removes_the_elementwise_kernels_next_to_batch_norm() {
    use stepcast::analyze::mapping::Phase;
    for relative in [RESNET50, RESNET_KINETO] {
        let loaded = loaded(relative);
        let context = context(loaded);
        let g = &loaded.window.graph;
        let names = &loaded.trace.names;
        let outcome = apply_models(&context, &[Model::ReconstructBatchnorm])
            .unwrap_or_else(|e| panic!("{relative}: {e}"));
        assert!(outcome.speedup >= 1.0, "{relative}: {}", outcome.speedup);
        let removed = removed_device_tasks(loaded, &outcome.graph);
        assert!(!removed.is_empty(), "{relative}: nothing removed");
        let is_removed = |t: TaskId| removed.binary_search(&t).is_ok();
        let first_steady = if loaded.window.steps.len() >= 3 { 1 } else { 0 };
        let steady = |t: TaskId| g.step[t.index()] != NO_STEP && g.step[t.index()] >= first_steady;
        let elementwise = |t: TaskId| {
            let name = names.get(g.name[t.index()]);
            g.kind[t.index()] == TaskKind::Kernel
                && (name.contains("elementwise") || name.contains("pointwise"))
                && !is_batch_norm(loaded, t)
        };
        let phase = |t: TaskId| loaded.mapping.phase[t.index()];
        // Each removed kernel is element-wise, and the run of removed kernels it is in
        // touches a batch-norm kernel of its pass on the side the model names.
        for &r in &removed {
            assert!(
                elementwise(r),
                "{relative}: removed {}",
                names.get(g.name[r.index()])
            );
            let forward = phase(r) == Phase::Forward;
            assert!(forward || phase(r) == Phase::Backward, "{relative}");
            let mut t = r;
            let neighbour = loop {
                let next = if forward {
                    g.lane_pred(t)
                } else {
                    lane_succ(g, t)
                };
                match next {
                    Some(n) if is_removed(n) => t = n,
                    other => break other,
                }
            };
            let neighbour = neighbour.expect("a neighbour on the stream");
            assert!(is_batch_norm(loaded, neighbour), "{relative}");
            assert_eq!(phase(neighbour), phase(r), "{relative}");
        }
        // And every steady forward element-wise kernel right after a batch-norm kernel went.
        let mut expected_after = 0;
        let mut bn_ns = 0i64;
        for t in (0..g.task_count() as u32).map(TaskId) {
            if !steady(t) || !matches!(phase(t), Phase::Forward | Phase::Backward) {
                continue;
            }
            if g.kind[t.index()] == TaskKind::Kernel && is_batch_norm(loaded, t) {
                bn_ns += g.dur_ns[t.index()] - (g.dur_ns[t.index()] as f64 * 0.5).round() as i64;
                if phase(t) == Phase::Forward
                    && let Some(n) = lane_succ(g, t)
                    && elementwise(n)
                    && phase(n) == Phase::Forward
                    && g.step[n.index()] == g.step[t.index()]
                {
                    expected_after += 1;
                    assert!(
                        is_removed(n),
                        "{relative}: {} kept",
                        names.get(g.name[n.index()])
                    );
                }
            }
        }
        assert!(expected_after > 0, "{relative}");
        let removed_ns: i64 = removed.iter().map(|t| g.dur_ns[t.index()]).sum();
        let steps = outcome.steady_steps as i64;
        let expected = (removed_ns + bn_ns) / steps;
        let saved = outcome.device_saved_ns();
        assert!(
            (saved - expected).abs() <= 8,
            "{relative}: saved {saved} vs {expected}"
        );
    }
    // No batch norm, nothing changes.
    let context = context(loaded(DF_INDEX_RESOLVER));
    let outcome =
        apply_models(&context, &[Model::ReconstructBatchnorm]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.changes, Default::default());
}

/// The next task of `t`'s lane in the input graph.
fn lane_succ(g: &stepcast::graph::Graph, t: TaskId) -> Option<TaskId> {
    let lane = &g.lanes[g.lane[t.index()] as usize];
    (t.0 + 1 < lane.first_task + lane.task_count).then_some(TaskId(t.0 + 1))
}

/// Prefetching the input keeps every input copy with its recorded duration, saves host time
/// where the trace records data loading, and, without worker contention, never lengthens the
/// step.
#[test]
fn prefetch_inputs_keeps_the_copies_and_never_lengthens_the_step() {
    use stepcast::analyze::mapping::Phase;
    for relative in [RESNET50, RESNET_KINETO, DF_INDEX_RESOLVER] {
        let loaded = loaded(relative);
        let context = context(loaded);
        let outcome = apply_models(
            &context,
            &[Model::PrefetchInputs {
                contention: 0.0,
                workers: stepcast::whatif::models::DEFAULT_WORKERS,
                host: Default::default(),
            }],
        )
        .unwrap_or_else(|e| panic!("{relative}: {e}"));
        assert!(outcome.speedup >= 1.0, "{relative}: {}", outcome.speedup);
        assert_eq!(outcome.changes.removed, 0, "{relative}");
        assert_eq!(outcome.device_saved_ns(), 0, "{relative}: copies stay");
        assert!(outcome.host_saved_ns() >= 0, "{relative}");
        let g = &loaded.window.graph;
        let copies = (0..g.task_count())
            .filter(|&t| {
                g.kind[t] == TaskKind::Memcpy && loaded.mapping.phase[t] == Phase::DataLoading
            })
            .count();
        let kept = (0..outcome.graph.task_count())
            .filter(|&t| outcome.graph.kind[t] == TaskKind::Memcpy)
            .count();
        let before = (0..g.task_count())
            .filter(|&t| g.kind[t] == TaskKind::Memcpy)
            .count();
        assert_eq!(kept, before, "{relative}: {copies} input copies");
    }
    // ResNet-50 loads its batches on the main thread (num_workers=0): that time goes.
    let context = context(loaded(RESNET50));
    let outcome = apply_models(
        &context,
        &[Model::PrefetchInputs {
            contention: 0.0,
            workers: stepcast::whatif::models::DEFAULT_WORKERS,
            host: Default::default(),
        }],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(outcome.host_saved_ns() > 0);
}

/// Sums of (name, duration) of device tasks: what a transform inserted is the difference.
fn device_multiset(g: &stepcast::graph::Graph) -> std::collections::BTreeMap<(u32, i64), i64> {
    let mut out = std::collections::BTreeMap::new();
    for t in 0..g.task_count() {
        if g.kind[t].on_device() {
            *out.entry((g.name[t].0, g.dur_ns[t])).or_insert(0) += 1;
        }
    }
    out
}

/// By default `recompute` checkpoints the forward pass's repeated blocks one by one, as the
/// recorded programs did (`cpu-pairs/record.py`): the tiny GPT's 3 blocks, the transformer's
/// 2 encoder layers, the CNN's 5 convolution blocks and the MLP's 15 linear-and-ReLU pairs
/// (of 16 linear layers). The caveat names that count; the ops it recomputes are whole
/// blocks, and no more than `--fraction 1` recomputes (the embeddings, head and loss stay).
#[test]
fn recompute_by_default_checkpoints_the_repeated_blocks_the_program_has() {
    for (relative, blocks) in [
        ("stepcast/cpu-recompute-pairs/gpt-base.json.gz", 3),
        ("stepcast/cpu-recompute-pairs/transformer-base.json.gz", 2),
        ("stepcast/cpu-recompute-pairs/cnn-base.json.gz", 5),
        ("stepcast/cpu-recompute-pairs/mlp-base.json.gz", 15),
    ] {
        let loaded = load_mapped(relative);
        let context = context(&loaded);
        let default = Model::by_name("recompute").expect("a model");
        let caveats = default.caveats(&context).join(" ");
        assert!(
            caveats.contains(&format!("{blocks} repeated blocks of")),
            "{relative}: {caveats}"
        );
        let memory = default.memory_effect(&context).expect("a memory trade");
        assert!(
            memory.units > 0 && memory.units.is_multiple_of(blocks),
            "{relative}: {} units",
            memory.units
        );
        let whole = Model::Recompute {
            fraction: Some(1.0),
        };
        let by_blocks = apply_models(&context, std::slice::from_ref(&default))
            .unwrap_or_else(|e| panic!("{relative}: {e}"));
        let by_whole = apply_models(&context, std::slice::from_ref(&whole))
            .unwrap_or_else(|e| panic!("{relative}: {e}"));
        assert!(
            0 < by_blocks.changes.added && by_blocks.changes.added < by_whole.changes.added,
            "{relative}: {} vs {}",
            by_blocks.changes.added,
            by_whole.changes.added
        );
        assert!(
            by_blocks.predicted.step_ns <= by_whole.predicted.step_ns,
            "{relative}"
        );
    }
}

/// Recomputation inserts copies of recorded forward kernels only (same name and duration),
/// removes nothing, and slows the step down by at most what it inserted.
#[test]
fn recompute_reinserts_recorded_forward_kernels_and_is_bounded() {
    use stepcast::analyze::mapping::Phase;
    for relative in [RESNET50, DF_INDEX_RESOLVER] {
        let loaded = loaded(relative);
        let context = context(loaded);
        let g = &loaded.window.graph;
        let forward: std::collections::BTreeSet<(u32, i64)> = (0..g.task_count())
            .filter(|&t| g.kind[t].on_device() && loaded.mapping.phase[t] == Phase::Forward)
            .map(|t| (g.name[t].0, g.dur_ns[t]))
            .collect();
        let mut last_added = 0;
        for fraction in [0.25, 1.0] {
            let model = Model::Recompute {
                fraction: Some(fraction),
            };
            let outcome = apply_models(&context, std::slice::from_ref(&model))
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(outcome.changes.removed, 0, "{relative}");
            assert!(outcome.changes.added > 0, "{relative} {fraction}");
            // A larger share recomputes no fewer ops.
            assert!(outcome.changes.added >= last_added, "{relative} {fraction}");
            last_added = outcome.changes.added;
            let before = device_multiset(g);
            let mut inserted_ns = 0i64;
            let mut inserted = 0i64;
            for (key, n) in device_multiset(&outcome.graph) {
                let extra = n - before.get(&key).copied().unwrap_or(0);
                assert!(extra >= 0, "{relative}");
                if extra > 0 {
                    assert!(forward.contains(&key), "{relative}: not a forward kernel");
                    inserted_ns += extra * key.1;
                    inserted += extra;
                }
            }
            let steps = outcome.steady_steps as i64;
            let forward_ns: i64 = outcome
                .phases
                .iter()
                .filter(|p| p.phase == Phase::Forward)
                .map(|p| p.device_before_ns)
                .sum();
            assert!(inserted_ns / steps <= forward_ns, "{relative}");
            assert_eq!(
                -outcome.device_saved_ns(),
                inserted_ns / steps,
                "{relative}"
            );
            // Slower by at most the inserted kernels, their calls (and the host time copied
            // after them), and one launch latency and dispatch gap each.
            let report = &loaded.window.report;
            let bound = inserted_ns / steps
                + (-outcome.host_saved_ns()).max(0)
                + inserted * (report.launch_latency_ns + report.dispatch_gap_ns) / steps;
            let slower = outcome.predicted.step_ns - outcome.baseline.step_ns;
            assert!(slower <= bound, "{relative}: {slower} > {bound}");
            assert!(
                outcome.speedup <= 1.0 + 1e-3,
                "{relative}: {}",
                outcome.speedup
            );
            let memory = model.memory_effect(&context).expect("a memory trade");
            assert!(memory.saved_bytes > 0, "{relative}");
            // The peak goes from T to max(T - C, C): at most half of T is saved.
            assert!(
                memory.saved_bytes <= memory.activation_bytes / 2 + 1,
                "{relative}"
            );
            assert!(memory.chosen_bytes <= memory.activation_bytes, "{relative}");
            let peak = memory.peak_bytes.expect("memory events");
            assert!(memory.activation_bytes <= peak, "{relative}");
        }
    }
}

/// On a CPU-only trace recomputation inserts copies of forward host ops only (same name,
/// duration and gap), each on the thread of its backward, removes nothing, slows the step by
/// at most what it inserted, and recomputes more with a larger share; offload, which moves
/// activations to host memory, declines there (gist on the CPU: `cpu_gist.rs`;
/// reconstruct_batchnorm: the test after this one). The MLP of `cpu-recompute-pairs`: its
/// forward ops are `aten::linear` and `aten::relu`, whose backward nodes carry their inner
/// ops' sequence numbers (`AddmmBackward0`).
#[test]
fn recompute_on_a_cpu_trace_reinserts_forward_host_ops_and_is_bounded() {
    use stepcast::analyze::mapping::Phase;
    use stepcast::graph::TaskKind;
    let loaded = load_mapped("stepcast/cpu-recompute-pairs/mlp-base.json.gz");
    let context = context(&loaded);
    let g = &loaded.window.graph;
    assert!(!g.has_device_tasks());
    let host_ops = |g: &stepcast::graph::Graph| {
        let mut out = std::collections::BTreeMap::new();
        for t in 0..g.task_count() {
            if g.kind[t] == TaskKind::CpuOp {
                *out.entry((g.name[t].0, g.dur_ns[t], g.gap_ns[t]))
                    .or_insert(0i64) += 1;
            }
        }
        out
    };
    let forward: std::collections::BTreeSet<(u32, i64, i64)> = (0..g.task_count())
        .filter(|&t| g.kind[t] == TaskKind::CpuOp && loaded.mapping.phase[t] == Phase::Forward)
        .map(|t| (g.name[t].0, g.dur_ns[t], g.gap_ns[t]))
        .collect();
    let mut last_added = 0;
    for fraction in [0.25, 1.0] {
        let model = Model::Recompute {
            fraction: Some(fraction),
        };
        assert_eq!(model.outside_domain(&context), None);
        let outcome =
            apply_models(&context, std::slice::from_ref(&model)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(outcome.changes.removed, 0);
        assert!(outcome.changes.added > last_added, "{fraction}");
        last_added = outcome.changes.added;
        let before = host_ops(g);
        let mut inserted_ns = 0i64;
        for (key, n) in host_ops(&outcome.graph) {
            let extra = n - before.get(&key).copied().unwrap_or(0);
            assert!(extra >= 0);
            if extra > 0 {
                assert!(forward.contains(&key), "not a forward op: {key:?}");
                inserted_ns += extra * (key.1 + key.2);
            }
        }
        let steps = outcome.steady_steps as i64;
        let slower = outcome.predicted.step_ns - outcome.baseline.step_ns;
        assert!(slower > 0, "{fraction}");
        assert!(
            slower <= inserted_ns / steps + 1,
            "{slower} > {inserted_ns} / {steps}"
        );
        // The inserted host time is the backward phase's.
        let backward_added: i64 = outcome
            .phases
            .iter()
            .filter(|p| p.phase == Phase::Backward)
            .map(|p| p.host_after_ns - p.host_before_ns)
            .sum();
        assert!(backward_added > 0, "{fraction}");
    }
    // The whole forward once more: fraction 1 adds (about) every forward op of each steady
    // step (the loss's too; an op whose backward the trace does not link is left), and each
    // step runs the same program.
    let mut forward_ops_by_step = std::collections::BTreeMap::new();
    for t in 0..g.task_count() {
        if g.kind[t] == TaskKind::CpuOp && loaded.mapping.phase[t] == Phase::Forward {
            *forward_ops_by_step.entry(g.step[t]).or_insert(0usize) += 1;
        }
    }
    let per_step = forward_ops_by_step.values().copied().max().unwrap_or(0);
    let steady = apply_models(
        &context,
        &[Model::Recompute {
            fraction: Some(1.0),
        }],
    )
    .unwrap_or_else(|e| panic!("{e}"))
    .steady_steps;
    assert!(
        last_added <= per_step * steady,
        "{last_added} > {per_step} × {steady}"
    );
    assert!(
        last_added * 10 >= per_step * steady * 9,
        "{last_added} of {per_step} × {steady}"
    );
    let why = Model::Offload { fraction: 1.0 }
        .outside_domain(&context)
        .expect("declined on a CPU");
    assert!(why.contains("CPU-only"), "{why}");
}

/// On a CPU-only trace `reconstruct_batchnorm` rewrites host ops: it removes exactly the
/// element-wise ops run right after a batch norm in the forward pass and right before a batch
/// norm's backward (the ReLUs and their gradients), as read again from the trace with
/// serde_json; it saves at least those ops' time and half the batch norms'; the step is
/// never slower and the gain stays within the bound. `cpu-batchnorm-pairs/rerun/cnn-base`:
/// five convolutions, each with its batch norm and ReLU.
#[test]
fn reconstruct_batchnorm_on_a_cpu_trace_halves_batch_norm_ops_and_removes_their_relus() {
    const TRACE: &str = "stepcast/cpu-batchnorm-pairs/rerun/cnn-base.json.gz";
    let loaded = load_mapped(TRACE);
    let g = &loaded.window.graph;
    assert!(!g.has_device_tasks());
    let context = context(&loaded);
    assert_eq!(Model::ReconstructBatchnorm.outside_domain(&context), None);
    let outcome =
        apply_models(&context, &[Model::ReconstructBatchnorm]).unwrap_or_else(|e| panic!("{e}"));
    assert!(outcome.speedup > 1.0, "{}", outcome.speedup);
    let gain_ns = outcome.baseline.step_ns - outcome.predicted.step_ns;
    let bound_ns = outcome.bound_ns.expect("assessed");
    // Within the replay's rounding of per-step means (1 µs, as `invariants.py` allows).
    assert!(
        gain_ns <= bound_ns + 1_000,
        "gain {gain_ns} ns, bound {bound_ns} ns"
    );
    assert_eq!(outcome.anomaly, None);

    // The reference: the thread's outermost ops in the steady steps (every ProfilerStep but
    // the first), in order, from the file.
    let events = crate::compare::raw_events(TRACE);
    let micros = |e: &serde_json::Value, key: &str| e[key].as_f64().unwrap_or(0.0);
    let mut steps: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| {
            e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("ProfilerStep#"))
        })
        .map(|e| (micros(e, "ts"), micros(e, "ts") + micros(e, "dur")))
        .collect();
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    let steady = &steps[1..];
    let mut ops: Vec<(&str, f64, f64)> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "cpu_op")
        .filter_map(|e| Some((e["name"].as_str()?, micros(e, "ts"), micros(e, "dur"))))
        .collect();
    ops.sort_by(|a, b| a.1.total_cmp(&b.1).then(b.2.total_cmp(&a.2)));
    let mut outermost: Vec<(&str, f64)> = Vec::new();
    let mut outer_end = f64::MIN;
    for (name, ts, dur) in ops {
        if ts >= outer_end {
            outer_end = ts + dur;
            if steady.iter().any(|&(start, end)| ts >= start && ts < end) {
                outermost.push((name, dur));
            }
        }
    }
    let steady_steps = steady.len() as f64;
    let (mut removed_expected, mut saved_expected_us) = (0usize, 0.0);
    for (i, &(name, dur)) in outermost.iter().enumerate() {
        let next = outermost.get(i + 1).map(|o| o.0);
        if name == "aten::batch_norm" {
            saved_expected_us += dur / 2.0;
            if let Some(relu) = next.filter(|n| n.starts_with("aten::relu")) {
                removed_expected += 1;
                saved_expected_us += outermost[i + 1].1;
                assert!(relu == "aten::relu" || relu == "aten::relu_");
            }
        }
        if name.ends_with(": NativeBatchNormBackward0") {
            saved_expected_us += dur / 2.0;
        }
        if name.ends_with(": ReluBackward0")
            && next.is_some_and(|n| n.ends_with(": NativeBatchNormBackward0"))
        {
            removed_expected += 1;
            saved_expected_us += dur;
        }
    }
    // Five batch norms a step, each with its ReLU and its ReLU's gradient.
    assert_eq!(removed_expected, 10 * steady.len(), "{outermost:?}");

    // The host ops the prediction no longer runs.
    let kept: std::collections::BTreeSet<_> = outcome.graph.event.iter().copied().collect();
    let mut removed_names: Vec<&str> = (0..g.task_count())
        .filter(|&t| g.kind[t] == TaskKind::CpuOp && !kept.contains(&g.event[t]))
        .filter(|&t| g.step[t] != NO_STEP && g.step[t] >= 1)
        .map(|t| loaded.trace.names.get(g.name[t]))
        .collect();
    removed_names.sort_unstable();
    assert_eq!(removed_names.len(), removed_expected, "{removed_names:?}");
    assert!(
        removed_names
            .iter()
            .all(|n| n.starts_with("aten::relu") || n.ends_with(": ReluBackward0"))
    );
    // Saved: at least the removed ops and half the batch norms (the Python between removed
    // ops goes too), within 1 µs a step of rounding.
    let saved_per_step_ns = outcome.host_saved_ns() as f64;
    let expected_ns = saved_expected_us * 1e3 / steady_steps;
    assert!(
        saved_per_step_ns >= expected_ns - 1e3,
        "saved {saved_per_step_ns} ns a step, expected at least {expected_ns}"
    );
    // And not much more: only the Python after each removed op goes with it.
    assert!(
        saved_per_step_ns <= expected_ns * 1.3,
        "saved {saved_per_step_ns} ns a step against {expected_ns}"
    );
}

/// vDNN offloading: two copies per offloaded op on one new stream; the step is slower by at
/// most the copies' time; the memory saved is at most what the offloaded ops kept. TraceLens'
/// normalization test runs several forward and backward passes in one step, and
/// `trace_diff/control` interleaves them too: the copy stream stays acyclic.
#[test]
fn offload_adds_copies_on_a_copy_stream_and_is_bounded() {
    const INTERLEAVED: [&str; 2] = [
        "TraceLens/tests/traces/perf_model/normalization/normalization_layer_test.json.gz",
        "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz",
    ];
    let uncached: Vec<(&str, Loaded)> = INTERLEAVED
        .iter()
        .map(|&relative| (relative, load_mapped(relative)))
        .collect();
    let cached = [RESNET50, DF_INDEX_RESOLVER].map(|relative| (relative, loaded(relative)));
    let all = cached.into_iter().chain(
        uncached
            .iter()
            .map(|(relative, loaded)| (*relative, loaded)),
    );
    for (relative, loaded) in all {
        let context = context(loaded);
        let model = Model::Offload { fraction: 0.5 };
        let outcome =
            apply_models(&context, std::slice::from_ref(&model)).unwrap_or_else(|e| panic!("{e}"));
        let memory = model.memory_effect(&context).expect("a memory trade");
        let g = &loaded.window.graph;
        assert_eq!(outcome.changes.removed, 0, "{relative}");
        assert_eq!(outcome.graph.lanes.len(), g.lanes.len() + 1, "{relative}");
        let steps = outcome.steady_steps;
        assert_eq!(
            outcome.changes.added,
            2 * memory.units * steps,
            "{relative}"
        );
        let copies: i64 = (0..outcome.graph.task_count())
            .filter(|&t| outcome.graph.lane[t] as usize == g.lanes.len())
            .map(|t| outcome.graph.dur_ns[t])
            .sum();
        assert!(copies > 0, "{relative}");
        let slower = outcome.predicted.step_ns - outcome.baseline.step_ns;
        assert!(
            slower <= copies / steps as i64 + 1000,
            "{relative}: {slower}"
        );
        assert!(outcome.speedup <= 1.0 + 1e-3, "{relative}");
        assert!(memory.saved_bytes >= 0 && memory.saved_bytes <= memory.chosen_bytes);
        // One compiled forward (df_index_resolver) is one op: it cannot be offloaded while
        // it runs, so nothing is saved; models of many layers can.
        assert_eq!(
            memory.saved_bytes > 0,
            relative != DF_INDEX_RESOLVER,
            "{relative}"
        );
    }
}

/// Gist: an encode and a decode kernel (with launch calls) per encoded op, each an
/// element-wise pass at the trace's own measured throughput; memory saved at most half of
/// what the encoded ops kept.
#[test]
fn gist_inserts_encode_and_decode_kernels_and_is_bounded() {
    // df_index_resolver's forward pass is compiled (Triton kernels): no element-wise op of
    // its own to measure the throughput on, so Gist cannot be timed and changes nothing.
    let context_df = context(loaded(DF_INDEX_RESOLVER));
    let model = Model::Gist { fraction: 0.5 };
    let outcome =
        apply_models(&context_df, std::slice::from_ref(&model)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(outcome.changes, Default::default());
    // What a stash would do to memory does not depend on how fast it is encoded: its one
    // compiled op keeps all the activations, and the largest of them, decoded at full size,
    // leaves no activation saving (never a negative one); its compiled backward frees them
    // all at once, so the recorded timeline, each decoded beside its stash at that use, says
    // the step's peak rises.
    let memory = model.memory_effect(&context_df).expect("a memory trade");
    assert_eq!((memory.units, memory.saved_bytes), (1, 0));
    let peak = memory.step_peak.expect("memory events with addresses");
    assert!(peak.fall_bytes < 0, "{peak:?}");
    assert_eq!(memory.step_peak_saved_bytes, Some(peak.fall_bytes));
    let relative = RESNET50;
    let loaded = loaded(relative);
    let context = context(loaded);
    let model = Model::Gist { fraction: 0.5 };
    let outcome =
        apply_models(&context, std::slice::from_ref(&model)).unwrap_or_else(|e| panic!("{e}"));
    let memory = model.memory_effect(&context).expect("a memory trade");
    let steps = outcome.steady_steps;
    assert!(memory.units > 0, "{relative}");
    assert_eq!(
        outcome.changes.added,
        4 * memory.units * steps,
        "{relative}"
    );
    let added_device = -outcome.device_saved_ns();
    assert!(added_device > 0, "{relative}");
    let slower = outcome.predicted.step_ns - outcome.baseline.step_ns;
    let report = &loaded.window.report;
    let bound = added_device
        + (-outcome.host_saved_ns()).max(0)
        + (2 * memory.units) as i64 * (report.launch_latency_ns + report.dispatch_gap_ns);
    assert!(slower <= bound, "{relative}: {slower} > {bound}");
    assert!(outcome.speedup <= 1.0 + 1e-3, "{relative}");
    assert!(memory.saved_bytes <= memory.chosen_bytes / 2, "{relative}");
}

/// `advise` lists the memory-for-time trades apart, with their memory, never among the
/// ranked gains.
#[test]
fn advise_lists_memory_trades_apart() {
    let context = context(loaded(RESNET50));
    let advice = advise(&context).unwrap_or_else(|e| panic!("{e}"));
    let trades: Vec<String> = advice.memory_trades.iter().map(|c| c.name()).collect();
    assert_eq!(trades, ["recompute", "offload", "gist"]);
    for c in &advice.memory_trades {
        assert!(
            c.memory.as_ref().is_some_and(|m| m.saved_bytes > 0),
            "{}",
            c.name()
        );
    }
    for c in &advice.candidates {
        assert!(
            c.models.iter().all(|m| !m.is_memory_trade()),
            "{}",
            c.name()
        );
        assert!(c.memory.is_none());
    }
    let names: Vec<String> = advice.candidates.iter().map(|c| c.name()).collect();
    assert!(names.contains(&"reconstruct_batchnorm".to_string()));
    assert!(names.contains(&"prefetch_inputs".to_string()));
}

/// A fused kernel never waits for itself: element-wise runs break where a kernel waits for
/// another stream (DLRM's side streams, trace_diff's copies), which used to make kernel fusion
/// cyclic on these traces. And `advise` never fails as a whole: a candidate it cannot predict
/// is listed with why, on every trace with steps in testdata.
#[test]
fn fusion_stops_at_cross_stream_waits_and_advise_survives_a_failing_model() {
    for relative in [
        "HolisticTraceAnalysis/tests/data/trace_diff/test/test.json.gz",
        "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json",
    ] {
        let loaded = load_mapped(relative);
        let context = context(&loaded);
        let outcome = apply_models(&context, &[Model::KernelFusion { factor: None }])
            .unwrap_or_else(|e| panic!("{relative}: {e}"));
        assert!(outcome.changes.removed > 0, "{relative}: nothing fused");
        assert!(outcome.speedup >= 1.0, "{relative}: {}", outcome.speedup);
    }
    for relative in [
        "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz",
        "TraceLens/tests/traces/perf_model/normalization/normalization_layer_test.json.gz",
    ] {
        let loaded = load_mapped(relative);
        let context = context(&loaded);
        let advice = advise(&context).unwrap_or_else(|e| panic!("{relative}: {e}"));
        assert!(!advice.candidates.is_empty(), "{relative}");
        for failed in &advice.failed {
            let name = &failed.name;
            assert!(!name.is_empty() && !failed.error.is_empty(), "{relative}");
            assert!(
                advice.candidates.iter().all(|c| &c.name() != name),
                "{relative}: {name} both failed and ranked"
            );
        }
    }
}

/// Inserts are placed lazily (O(1) each, the lane put in order once when needed): the lane
/// order they give is the one a plain vector gives when each insert goes right after its
/// anchor (the reference), for inserts after the same task, chains of inserts, inserts after
/// inserted tasks, and removals in between.
#[test]
fn lazy_inserts_give_the_lane_order_of_inserting_in_place() {
    use stepcast::whatif::{EditGraph, HostGaps, Insert, Selection};
    let (_, window) = crate::load(NCCL_DATA);
    let graph = &window.graph;
    let lane = (0..graph.lanes.len())
        .max_by_key(|&l| {
            let device = graph.lanes[l].kind == stepcast_trace::LaneKind::DeviceStream;
            (device, graph.lanes[l].task_count)
        })
        .unwrap_or(0) as u32;
    let mut edit = EditGraph::new(graph, 0, 0);
    let mut reference: Vec<u32> = edit.lane_tasks(lane);
    assert!(reference.len() > 20, "{}", reference.len());
    let name = graph.name[reference[0] as usize];
    let insert_after = |edit: &mut EditGraph, reference: &mut Vec<u32>, after: u32| {
        let task = edit
            .insert(&Insert {
                kind: TaskKind::Kernel,
                name,
                dur_ns: 1_000,
                after: TaskId(after),
                launch: None,
            })
            .unwrap_or_else(|e| panic!("{e}"));
        let at = reference.iter().position(|&t| t == after).unwrap_or(0);
        reference.insert(at + 1, task.0);
        task.0
    };
    // Three inserts after one task, a chain of three, inserts after inserted tasks.
    let anchor = reference[3];
    let mut inserted = Vec::new();
    for _ in 0..3 {
        inserted.push(insert_after(&mut edit, &mut reference, anchor));
    }
    let mut last = reference[10];
    for _ in 0..3 {
        last = insert_after(&mut edit, &mut reference, last);
        inserted.push(last);
    }
    insert_after(&mut edit, &mut reference, inserted[1]);
    insert_after(&mut edit, &mut reference, inserted[4]);
    // Each task's predecessor, found without putting the lane in order (pending inserts).
    let check_prev = |edit: &EditGraph, reference: &[u32]| {
        for (i, &t) in reference.iter().enumerate() {
            let expected = i.checked_sub(1).map(|p| TaskId(reference[p]));
            assert_eq!(edit.lane_prev(TaskId(t)), expected, "before task {t}");
        }
    };
    check_prev(&edit, &reference);
    assert_eq!(edit.lane_tasks(lane), reference);
    // A removal puts the lane in order; inserts continue after it.
    let removed = reference[5];
    edit.remove(&Selection::new(vec![TaskId(removed)]), HostGaps::Keep)
        .unwrap_or_else(|e| panic!("{e}"));
    reference.retain(|&t| t != removed);
    insert_after(&mut edit, &mut reference, inserted[0]);
    let head = reference[0];
    insert_after(&mut edit, &mut reference, head);
    check_prev(&edit, &reference);
    assert_eq!(edit.lane_tasks(lane), reference);
    // The built graph's lane holds the tasks in that order.
    let (built, new_id) = edit.finish().unwrap_or_else(|e| panic!("{e}"));
    let first = built.lanes[lane as usize].first_task;
    let order: Vec<u32> = reference.iter().map(|&t| new_id[t as usize].0).collect();
    let expected: Vec<u32> = (first..first + reference.len() as u32).collect();
    assert_eq!(order, expected);
}

/// An edit graph knows whether it is a clone nothing wrote to (what lets `advise` share one
/// replay among the candidates that change nothing): a write counts even of the value that
/// was there.
#[test]
fn an_unwritten_clone_is_told_from_a_written_one() {
    let context = context(loaded(DF_INDEX_RESOLVER));
    let base = context.edit();
    let copy = base.clone();
    assert!(copy.is_unedited_clone_of(&base));
    let task = (0..base.id_bound() as u32)
        .map(TaskId)
        .find(|&t| base.is_alive(t))
        .expect("a live task");
    let mut rewritten = base.clone();
    let gap = rewritten.gap_ns(task);
    rewritten
        .set_gap(&Selection::new(vec![task]), gap)
        .expect("sets");
    assert!(!rewritten.is_unedited_clone_of(&base));
    // Unchanged figures all the same: the same graph is built.
    assert_eq!(rewritten.gap_ns(task), base.gap_ns(task));
}

/// `--to` and `--dtype`: the parameters as the models take them, and their refusals.
#[test]
fn target_gpu_and_amp_dtype_params() {
    use stepcast::whatif::{AmpDtype, dtype_param, target_param};
    assert_eq!(target_param("h200"), Ok("H200 SXM"));
    assert_eq!(target_param("H100-PCIe"), Ok("H100 PCIe"));
    assert_eq!(target_param("a100"), Ok("A100"));
    assert_eq!(target_param("b200"), Ok("B200 HGX"));
    assert_eq!(target_param("MI300X"), Ok("MI300X"));
    assert!(target_param("rtx9090").is_err_and(|e| e.to_string().contains("the GPUs are")));
    assert_eq!(dtype_param("bfloat16"), Ok(AmpDtype::Bf16));
    assert!(dtype_param("fp8").is_err());
    let to = |cpu: Option<f64>, compute: Option<f64>| {
        Model::with_params(
            "faster_hardware",
            &ModelParams {
                to: Some("H200 SXM"),
                cpu,
                compute,
                ..ModelParams::default()
            },
        )
    };
    let Ok(Model::FasterHardware(h)) = to(None, None) else {
        panic!("faster_hardware --to h200");
    };
    assert!(h.target == Some("H200 SXM") && !h.cpu_given && h.cpu == 1.0);
    let Ok(Model::FasterHardware(h)) = to(Some(1.5), None) else {
        panic!("faster_hardware --to h200 --cpu 1.5");
    };
    assert!(h.cpu_given && h.cpu == 1.5);
    assert!(to(None, Some(2.0)).is_err_and(|e| e.to_string().contains("not both")));
    let bf16 = ModelParams {
        dtype: Some(AmpDtype::Bf16),
        ..ModelParams::default()
    };
    assert_eq!(Model::with_params("amp", &bf16), Ok(Model::AmpBf16));
    assert!(
        Model::with_params("cuda_graphs", &bf16).is_err_and(|e| e.to_string().contains("--dtype"))
    );
}

/// `faster_hardware --to h200` on an H100 trace: the kernels take the datasheets' ratios (the
/// same SMs and clocks, HBM3e ×1.43), so the step gains at most ×1.43; with the host unknown
/// the caveats give the step at both ends of the measured host factors, around the prediction
/// (×1), and a host given moves the prediction the way it says. A V100 trace to an A100 gains
/// at most the largest datasheet ratio (FP16 tensor 312/125 = 2.5).
#[test]
fn faster_hardware_to_a_named_gpu() {
    let loaded = load_mapped("stepcast/h100-pairs/mlp-fp32.json.gz");
    let context = context(&loaded);
    let with = |cpu: Option<f64>| {
        let model = Model::with_params(
            "faster_hardware",
            &ModelParams {
                to: Some("H200 SXM"),
                cpu,
                ..ModelParams::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        apply_models(&context, &[model]).unwrap_or_else(|e| panic!("{e}"))
    };
    let unknown = with(None);
    assert!(
        unknown.speedup >= 1.0 && unknown.speedup <= 1.43 + 1e-9,
        "{}",
        unknown.speedup
    );
    let range = unknown
        .caveats
        .iter()
        .find(|c| c.contains("the host is unknown"))
        .unwrap_or_else(|| panic!("{:?}", unknown.caveats));
    let numbers: Vec<f64> = range
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.parse().ok())
        .collect();
    // "... which gives SLOW to FAST ms per step": the two numbers before "ms".
    let (slow_ms, fast_ms) = (numbers[numbers.len() - 2], numbers[numbers.len() - 1]);
    let step_ms = unknown.predicted.step_ns as f64 / 1e6;
    assert!(
        slow_ms > step_ms && step_ms > fast_ms,
        "{range} vs {step_ms}"
    );
    let faster_host = with(Some(1.5));
    assert!(faster_host.speedup > unknown.speedup);
    assert!(
        !faster_host
            .caveats
            .iter()
            .any(|c| c.contains("the host is unknown"))
    );
    // A V100 trace (the ResNet-50 sample) predicted on an A100.
    let v100 = loaded_context_speedup(RESNET50, "A100");
    assert!((1.0..=312.0 / 125.0 + 1e-9).contains(&v100), "{v100}");
}

fn loaded_context_speedup(relative: &'static str, to: &'static str) -> f64 {
    let loaded = loaded(relative);
    let context = context(loaded);
    let model = Model::with_params(
        "faster_hardware",
        &ModelParams {
            to: Some(to),
            cpu: Some(1.0),
            ..ModelParams::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    apply_models(&context, &[model])
        .unwrap_or_else(|e| panic!("{e}"))
        .speedup
}

/// Kernel fusion joins only kernels that depend on each other: on the recorded transformer
/// (every op's inputs recorded), some element-wise kernels adjacent on a stream are not one
/// chain, and in every chain each kernel's op takes a tensor of the shape of the previous
/// op's output, or both are one op's kernels (read here from the ops' recorded inputs).
#[test]
fn kernel_fusion_fuses_only_dependent_kernels() {
    use stepcast::whatif::models::elementwise_runs;
    let loaded = load_mapped("stepcast/h100-pairs/transformer-fp32.json.gz");
    let context = context(&loaded);
    let edit = context.edit();
    let runs = elementwise_runs(&context, &edit);
    assert!(!runs.is_empty());
    let trace = &loaded.trace;
    let shapes = |t: TaskId| -> (Option<stepcast_trace::EventId>, Vec<Vec<i64>>) {
        let ops: Vec<_> = loaded
            .mapping
            .stack(t)
            .into_iter()
            .filter(|e| trace.events[e.index()].kind == stepcast_trace::EventKind::CpuOp)
            .collect();
        let inputs = ops
            .iter()
            .rev()
            .find_map(|&e| trace.inputs_of(e).filter(|i| !i.is_empty()))
            .unwrap_or(&[]);
        let tensors = inputs
            .iter()
            .filter_map(|i| match i {
                stepcast_trace::OpInput::Tensor { shape, .. } => Some(shape.clone()),
                _ => None,
            })
            .collect();
        (ops.first().copied(), tensors)
    };
    let mut fused_pairs = 0;
    for (_, run) in &runs {
        for pair in run.tasks().windows(2) {
            let (op_a, a) = shapes(pair[0]);
            let (op_b, b) = shapes(pair[1]);
            let out = a.iter().max_by_key(|s| s.iter().product::<i64>());
            assert!(
                op_a == op_b || out.is_some_and(|o| b.contains(o)),
                "{:?} → {:?}",
                a,
                b
            );
            fused_pairs += 1;
        }
    }
    // Adjacency alone would have joined more: the check cut some runs.
    let names = &trace.names;
    let g = &loaded.window.graph;
    let adjacent: usize = (0..g.lanes.len() as u32)
        .map(|lane| {
            let tasks: Vec<u32> = edit.lane_tasks(lane);
            tasks
                .windows(2)
                .filter(|w| {
                    w.iter().all(|&t| {
                        let t = TaskId(t);
                        g.kind[t.index()] == TaskKind::Kernel
                            && matches!(
                                loaded.mapping.phase[t.index()],
                                stepcast::analyze::mapping::Phase::Forward
                                    | stepcast::analyze::mapping::Phase::Backward
                            )
                            && names.get(g.name[t.index()]).contains("elementwise")
                    }) && g.step[w[0] as usize] == g.step[w[1] as usize]
                        && loaded.mapping.phase[w[0] as usize]
                            == loaded.mapping.phase[w[1] as usize]
                })
                .count()
        })
        .sum();
    assert!(fused_pairs < adjacent, "{fused_pairs} of {adjacent}");
}

/// Fusing the optimizer drops the Python and dispatcher work that issued its calls, not a
/// wait that happens to follow its last call. On `h200-pairs/loader-workers2` the training
/// process waits for its two `DataLoader` workers inside
/// `_MultiProcessingDataLoaderIter.__next__` right after the previous step's last optimizer
/// call: 189 ms of untraced time after that call. Dropped with it, the step read 4.6× faster;
/// kept (all but the call's typical gap), fusing a few optimizer calls barely changes it.
/// Against an independent reading: the recorded wait, the longest untraced gap on the
/// thread, is more than 50 times its name's median gap.
#[test]
fn removing_a_call_keeps_the_wait_that_follows_it() {
    let loaded = load_mapped("stepcast/h200-pairs/loader-workers2.json.gz");
    let context = context(&loaded);
    let graph = &loaded.window.graph;
    // The recorded wait: the longest gap after a host task, far beyond its name's median.
    let longest = (0..graph.task_count())
        .filter(|&t| !graph.kind[t].on_device())
        .max_by_key(|&t| graph.gap_ns[t])
        .expect("host tasks");
    let mut same: Vec<i64> = (0..graph.task_count())
        .filter(|&t| graph.name[t] == graph.name[longest])
        .map(|t| graph.gap_ns[t])
        .collect();
    same.sort_unstable();
    let median = same[same.len() / 2].max(1);
    assert!(
        graph.gap_ns[longest] > 50 * median && graph.gap_ns[longest] > 100_000_000,
        "{} ns after {}, median {median}",
        graph.gap_ns[longest],
        loaded.trace.name(graph.name[longest])
    );
    let outcome =
        apply_models(&context, &[Model::FusedOptimizer { factor: 1.0 }]).expect("predicts");
    assert!(
        outcome.speedup > 0.99 && outcome.speedup < 1.05,
        "{}",
        outcome.speedup
    );
}

/// Where every kernel of a chain has its op's shapes recorded, the fused kernel's share of
/// the chain's time is its bytes' (the op model's): at least one part's share of the bytes
/// (never fewer than the largest part's), at most all of them; most chains of the transformer
/// have every part's shapes.
#[test]
fn fused_chains_take_their_share_from_the_op_models_bytes() {
    use stepcast::whatif::models::{elementwise_runs, traffic_shares};
    let loaded = load_mapped("stepcast/h100-pairs/transformer-fp32.json.gz");
    let context = context(&loaded);
    let edit = context.edit();
    let runs = elementwise_runs(&context, &edit);
    let shares = traffic_shares(&context, &edit, &runs);
    assert_eq!(shares.len(), runs.len());
    let known: Vec<(usize, f64)> = runs
        .iter()
        .zip(&shares)
        .filter_map(|((_, run), share)| share.map(|s| (run.len(), s)))
        .collect();
    assert!(
        known.len() * 2 >= runs.len(),
        "{} of {}",
        known.len(),
        runs.len()
    );
    for (n, share) in known {
        assert!(share > 0.0 && share <= 1.0, "{share}");
        assert!(
            share >= 1.0 / n as f64 - 1e-9,
            "at least one part's bytes: {share}"
        );
    }
}
