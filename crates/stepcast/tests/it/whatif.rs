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

struct Loaded {
    trace: Trace,
    window: Window,
    mapping: Mapping,
}

fn loaded(relative: &'static str) -> &'static Loaded {
    static CACHE: [OnceLock<Loaded>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let index = TRACES
        .iter()
        .position(|&t| t == relative)
        .expect("a trace of TRACES");
    CACHE[index].get_or_init(|| {
        let (trace, window) = load(relative);
        let mapping = map(&trace, &window);
        Loaded {
            trace,
            window,
            mapping,
        }
    })
}

fn context(loaded: &Loaded) -> Context<'_> {
    Context {
        trace: &loaded.trace,
        window: &loaded.window,
        mapping: &loaded.mapping,
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
        let before = simulate(&loaded.window.graph, &RecordedOrder, SimOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let after = simulate(&outcome.graph, &RecordedOrder, SimOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(before.begin_ns, after.begin_ns, "{relative}");
        assert_eq!(before.end_ns, after.end_ns, "{relative}");
        let g = &loaded.window.graph;
        assert_eq!(g.dur_ns, outcome.graph.dur_ns, "{relative}");
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
#[test]
fn builtin_models_never_slow_a_step_down() {
    for relative in TRACES {
        let context = context(loaded(relative));
        for model in Model::builtin() {
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
        (DF_INDEX_RESOLVER, "fused_optimizer", 1.0, 1.05),
        (DF_INDEX_RESOLVER, "cuda_graphs", 1.5, 2.5),
        (DF_INDEX_RESOLVER, "faster_cpu", 1.4, 2.0),
        (NCCL_DATA, "fused_optimizer", 1.01, 1.1),
        (NCCL_DATA, "cuda_graphs", 1.1, 1.5),
        (RESNET50, "cuda_graphs", 1.1, 1.5),
        (RESNET50, "amp", 1.005, 1.2),
        (RESNET50, "faster_gpu", 1.005, 1.2),
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

#[test]
fn new_model_speedups() {
    let cases: &[(&str, &str, f64, f64)] = &[
        (DF_INDEX_RESOLVER, "kernel_fusion", 1.02, 1.2),
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
        assert!(advice.candidates.iter().any(|c| c.models.len() > 2));
        // Every candidate is predicted against the same baseline, and matches a what-if run
        // on its own.
        let best = &advice.candidates[0];
        let alone = apply_models(&context, &best.models).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(alone.predicted, best.outcome.predicted, "{relative}");
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
            copy: 1.0
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
