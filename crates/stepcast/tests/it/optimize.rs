//! `optimize` (issue #12): dPRO's strategy search. The plan is held to the defaults a user
//! has today and to `advise`'s best candidate, each predicted here through the what-if API
//! (an independent path: `apply_models`, not the search's own evaluation); its moves one by
//! one never make the prediction worse; a memory budget is met by the trade an exhaustive
//! search over the memory models picks; the JSON-level result is the same on every thread
//! count.

use std::sync::OnceLock;

use stepcast::Window;
use stepcast::analyze::mapping::{Mapping, map};
use stepcast::optimize::passes::{self, Facts};
use stepcast::optimize::{Move, NoHooks, Optimized, Options, PassId, apply_plan, optimize};
use stepcast::ranks::recorded_rank;
use stepcast::whatif::job::{Job, JobRank};
use stepcast::whatif::models::Model;
use stepcast::whatif::{Context, apply_models, predict};
use stepcast_trace::Trace;

use super::{load, testdata};

const DF_INDEX_RESOLVER: &str =
    "HolisticTraceAnalysis/tests/data/df_index_resolver/df_index_resolver.json.gz";
const NCCL_DATA: &str = "HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz";
const RESNET50: &str =
    "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz";
const DLRM: &str = "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto";

struct Loaded {
    trace: Trace,
    window: Window,
    mapping: Mapping,
}

fn load_mapped(relative: &str) -> Loaded {
    let (trace, window) = load(relative);
    let mapping = map(&trace, &window);
    Loaded {
        trace,
        window,
        mapping,
    }
}

/// The 8 DLRM rank traces, in file-name order (worker0 … worker7).
fn dlrm() -> &'static [Loaded] {
    static RANKS: OnceLock<Vec<Loaded>> = OnceLock::new();
    RANKS.get_or_init(|| {
        let mut names: Vec<String> = std::fs::read_dir(testdata(DLRM))
            .expect("the DLRM directory")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .filter(|n| n.ends_with(".json"))
            .collect();
        names.sort();
        assert_eq!(names.len(), 8);
        names
            .iter()
            .map(|n| load_mapped(&format!("{DLRM}/{n}")))
            .collect()
    })
}

fn single(relative: &'static str) -> &'static Loaded {
    static CACHE: [OnceLock<Loaded>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let index = [DF_INDEX_RESOLVER, NCCL_DATA, RESNET50]
        .iter()
        .position(|&t| t == relative)
        .expect("a cached trace");
    CACHE[index].get_or_init(|| load_mapped(relative))
}

fn context(loaded: &Loaded) -> Context<'_> {
    Context::new(&loaded.trace, &loaded.window, &loaded.mapping)
}

fn optimized(ranks: &[&Loaded], options: Options) -> Optimized {
    let contexts: Vec<Context<'_>> = ranks.iter().map(|l| context(l)).collect();
    optimize(&contexts, options, &NoHooks).unwrap_or_else(|e| panic!("{e}"))
}

/// The memory pass alone on one rank, with `budget_bytes`.
fn memory_plan(rank: &Loaded, budget_bytes: i64) -> Optimized {
    optimized(
        &[rank],
        Options {
            passes: vec![PassId::Memory],
            memory_budget_bytes: Some(budget_bytes),
        },
    )
}

/// The ranks as a job replayed as one graph (the what-if API's, not the search's).
fn job<'a>(ranks: &[&'a Loaded]) -> Job<'a> {
    let ranks = ranks
        .iter()
        .enumerate()
        .map(|(position, l)| JobRank {
            rank: recorded_rank(&l.trace).unwrap_or(position as i64),
            context: context(l),
        })
        .collect();
    Job::new(ranks).unwrap_or_else(|e| panic!("{e}"))
}

/// The job's step for `models` through the what-if API: its global replay with every rank
/// transformed (one rank: its prediction).
fn whatif_job_ns(ranks: &[&Loaded], models: &[Model]) -> i64 {
    if ranks.len() > 1 {
        return job(ranks)
            .predict(|_, c, e| {
                for model in models {
                    model.apply(c, e)?;
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{e}"))
            .predicted
            .period
            .step_ns;
    }
    ranks
        .iter()
        .map(|l| {
            apply_models(&context(l), models)
                .unwrap_or_else(|e| panic!("{e}"))
                .predicted
                .step_ns
        })
        .max()
        .expect("a rank")
}

/// The bars of issue #12 on one job.
fn check_plan(name: &str, ranks: &[&Loaded]) {
    let plan = optimized(ranks, Options::default());
    assert_eq!(plan.ranks, ranks.len(), "{name}");
    assert!(!plan.moves.is_empty(), "{name}: the plan is empty");
    // Move by move: the prediction never gets worse, and the last one is the plan's.
    let mut previous = plan.baseline_ns;
    for m in plan
        .moves
        .iter()
        .filter(|m| m.step.pass() != PassId::Memory)
    {
        assert!(
            m.after_ns <= previous,
            "{name}: {:?} makes the step {} ns, after {previous}",
            m.step,
            m.after_ns
        );
        previous = m.after_ns;
        assert!(!m.pytorch.is_empty(), "{name}");
        // Each move carries its trust, as `whatif`'s: a bound within the step, not exceeded
        // by the move's gain on the leader unless an anomaly says why.
        let bound = m.trust.bound_ns.expect("assessed");
        assert!(
            (0..=m.trust.baseline_ns).contains(&bound),
            "{name}: {:?}: bound {bound} ns on a {} ns step",
            m.step,
            m.trust.baseline_ns
        );
        let leader_gain = plan.per_rank[plan.leader].0 - m.alone_ns;
        if ranks.len() == 1 && m.trust.anomaly.is_none() {
            assert!(
                leader_gain <= bound + 1_000,
                "{name}: {:?} gains {leader_gain} ns alone, its bound is {bound} ns",
                m.step
            );
        }
        assert_eq!(m.trust.declined, plan.declined, "{name}");
    }
    assert_eq!(previous, plan.planned_ns, "{name}");
    assert!(plan.planned_ns < plan.baseline_ns, "{name}");
    // At least as fast as every default and advise's best candidate from the same passes.
    assert!(plan.references.len() >= 3, "{name}: {:?}", plan.references);
    for r in &plan.references {
        assert!(
            plan.planned_ns <= r.step_ns,
            "{name}: `{}` predicts {} ns, the plan {}",
            r.name,
            r.step_ns,
            plan.planned_ns
        );
    }
    // The references as the what-if API predicts them, independently of the search: the
    // recorded program, `kernel_fusion` (fuse every element-wise chain), and advise's best.
    let recorded = whatif_job_ns(ranks, &[]);
    assert_eq!(plan.baseline_ns, recorded, "{name}");
    let fuse_all = plan
        .references
        .iter()
        .find(|r| r.moves == [Move::FuseAllElementwise])
        .expect("the fuse-everything default");
    assert_eq!(
        fuse_all.step_ns,
        whatif_job_ns(ranks, &[Model::KernelFusion { factor: None }]),
        "{name}"
    );
    let advised = plan
        .references
        .iter()
        .find(|r| r.name.starts_with("advise's best"))
        .expect("advise's best candidate");
    let models: Vec<Model> = advised
        .moves
        .iter()
        .map(|m| match m {
            Move::FuseAllElementwise => Model::KernelFusion { factor: None },
            Move::Model { name } => Model::by_name(name).expect("a model"),
            other => panic!("{name}: {other:?} is no advise model"),
        })
        .collect();
    // The passes apply op fusion (`kernel_fusion`) first, then the program models in
    // `Model::advised` order, as advise applies them.
    let (mut models, program): (Vec<Model>, Vec<Model>) = models
        .into_iter()
        .partition(|m| matches!(m, Model::KernelFusion { .. }));
    models.extend(program);
    assert_eq!(advised.step_ns, whatif_job_ns(ranks, &models), "{name}");
    // The plan's graph, replayed on its own, predicts what the search said (every rank; a
    // job's ranks replayed as one job, each rank's own step in it).
    let moves: Vec<Move> = plan.moves.iter().map(|m| m.step.clone()).collect();
    if ranks.len() > 1 {
        assert!(
            plan.global,
            "{name}: a job's figures come from its global replay"
        );
        let facts: Vec<Facts> = ranks
            .iter()
            .map(|l| {
                let c = context(l);
                let steady = predict(&l.window, &l.window.graph)
                    .unwrap_or_else(|e| panic!("{e}"))
                    .steady
                    .count();
                Facts::find(&c, &c.edit(), steady)
            })
            .collect();
        let outcome = job(ranks)
            .predict(|r, c, e| passes::apply(c, &facts[r], &moves, e))
            .unwrap_or_else(|e| panic!("{e}"));
        let per_rank: Vec<i64> = outcome
            .predicted
            .period
            .ranks
            .iter()
            .map(|r| r.step_ns)
            .collect();
        let planned: Vec<i64> = plan.per_rank.iter().map(|r| r.1).collect();
        assert_eq!(per_rank, planned, "{name}");
        // One job: no rank's step is longer than the job's.
        assert!(planned.iter().all(|&ns| ns <= plan.planned_ns), "{name}");
        return;
    }
    for (rank, loaded) in ranks.iter().enumerate() {
        let graph = apply_plan(&context(loaded), &moves).unwrap_or_else(|e| panic!("{e}"));
        let predicted = predict(&loaded.window, &graph).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            predicted.step_ns, plan.per_rank[rank].1,
            "{name} rank {rank}"
        );
    }
}

#[test]
fn plan_beats_the_defaults_and_advise_on_df_index_resolver() {
    check_plan(DF_INDEX_RESOLVER, &[single(DF_INDEX_RESOLVER)]);
}

/// Without `--memory-budget`, the budget is the device's memory as the trace header states it
/// (`deviceProperties[].totalGlobalMem`, read here from the file with serde_json), and a peak
/// within it takes no memory move.
#[test]
fn the_default_memory_budget_is_the_devices_memory() {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(testdata(DF_INDEX_RESOLVER)).expect("the trace"),
    )
    .read_to_string(&mut text)
    .expect("gzip JSON");
    let document: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let device_bytes = document["deviceProperties"]
        .as_array()
        .expect("deviceProperties")
        .iter()
        .filter_map(|d| d["totalGlobalMem"].as_i64())
        .min()
        .expect("totalGlobalMem");
    let plan = optimized(
        &[single(DF_INDEX_RESOLVER)],
        Options {
            passes: vec![PassId::Memory],
            memory_budget_bytes: None,
        },
    );
    let memory = plan
        .memory
        .expect("df_index_resolver records memory events");
    assert_eq!(memory.budget_source, "device");
    assert_eq!(memory.budget_bytes, device_bytes);
    assert!(memory.peak_bytes < device_bytes);
    assert_eq!(memory.chosen, None);
    assert!(plan.moves.is_empty());
}

#[test]
fn plan_beats_the_defaults_and_advise_on_nccl_data() {
    check_plan(NCCL_DATA, &[single(NCCL_DATA)]);
}

#[test]
fn plan_beats_the_defaults_and_advise_on_the_8_rank_dlrm_job() {
    let ranks: Vec<&Loaded> = dlrm().iter().collect();
    check_plan(DLRM, &ranks);
}

/// A budget below the recorded peak (ResNet-50 with memory events): the plan fits it with
/// the trade an exhaustive search over the memory models picks: of those whose predicted peak
/// (recorded peak less what the model saves) fits, the fastest as `apply_models` predicts.
#[test]
fn memory_budget_is_met_by_the_least_slowdown_found_exhaustively() {
    let loaded = single(RESNET50);
    let context = context(loaded);
    let fractions = [0.25, 0.5, 0.75, 1.0];
    let mut exhaustive: Vec<(i64, Model, i64)> = Vec::new();
    let mut peak = None;
    for fraction in fractions {
        for model in [
            Model::Recompute {
                fraction: Some(fraction),
            },
            Model::Offload { fraction },
        ] {
            let effect = model.memory_effect(&context).expect("a memory trade");
            peak = effect.peak_bytes;
            let step = apply_models(&context, std::slice::from_ref(&model))
                .unwrap_or_else(|e| panic!("{e}"))
                .predicted
                .step_ns;
            exhaustive.push((step, model, effect.saved_bytes));
        }
    }
    let peak = peak.expect("ResNet-50 records memory events");
    // A budget that some trades meet and some do not: below the peak by less than the most
    // any saves, more than the least.
    let mut saved: Vec<i64> = exhaustive.iter().map(|e| e.2).collect();
    saved.sort_unstable();
    let budget = peak - (saved[saved.len() / 2] + saved[saved.len() / 2 + 1]) / 2;
    assert!(budget < peak);
    let fitting: Vec<&(i64, Model, i64)> =
        exhaustive.iter().filter(|e| peak - e.2 <= budget).collect();
    assert!(!fitting.is_empty() && fitting.len() < exhaustive.len());
    let best = fitting.iter().map(|e| e.0).min().expect("a fitting trade");
    let plan = optimized(
        &[loaded],
        Options {
            passes: vec![PassId::Memory],
            memory_budget_bytes: Some(budget),
        },
    );
    let memory = plan.memory.as_ref().expect("the memory pass ran");
    assert_eq!(memory.peak_bytes, peak);
    // This 2021 trace's memory events record no addresses: said so.
    assert_eq!(memory.peak_source, "activations_saved");
    assert!(memory.predicted_peak_bytes <= budget, "{memory:?}");
    let chosen = memory.chosen.clone().expect("a trade was chosen");
    assert_eq!(plan.moves.last().map(|m| &m.step), Some(&chosen));
    assert_eq!(plan.planned_ns, best, "{memory:?}");
    // And without a budget problem, no trade.
    let roomy = optimized(
        &[loaded],
        Options {
            passes: vec![PassId::Memory],
            memory_budget_bytes: Some(peak),
        },
    );
    assert!(roomy.moves.is_empty());
    assert_eq!(roomy.planned_ns, roomy.baseline_ns);
}

/// A budget the activations' saving would meet and the process's peak would not: on the CPU
/// transformer whose checkpointed step's peak did not move (`cpu-memory-probe`), each trade's
/// peak is read off the recorded memory timeline, and no trade is claimed to fit where the
/// recorded peak less the activations' saving (the figure the pass used before) would have.
#[test]
fn memory_budget_is_judged_on_the_peak_read_off_the_recorded_memory() {
    let loaded = load_mapped("stepcast/cpu-memory-probe/traces/transformer-base.json.gz");
    let context = context(&loaded);
    let budget = 12_000_000;
    // What the old rule would have claimed: some trade's recorded peak less its saving fits.
    let claimed = [0.25, 0.5, 0.75, 1.0].iter().any(|&fraction| {
        let effect = Model::Recompute {
            fraction: Some(fraction),
        }
        .memory_effect(&context)
        .expect("a memory trade");
        effect.peak_bytes.expect("memory events") - effect.saved_bytes <= budget
    });
    assert!(claimed);
    let plan = memory_plan(&loaded, budget);
    let memory = plan.memory.as_ref().expect("the memory pass ran");
    assert_eq!(memory.peak_source, "memory_timeline");
    assert!(memory.peak_bytes > budget);
    assert!(!memory.options.is_empty());
    for option in &memory.options {
        assert!(
            !option.fits && option.predicted_peak_bytes > budget,
            "{option:?}"
        );
        assert_eq!(
            option.saved_bytes,
            memory.peak_bytes - option.predicted_peak_bytes
        );
    }
    assert_eq!(memory.chosen, None);
    assert_eq!(memory.predicted_peak_bytes, memory.peak_bytes);
    assert!(plan.moves.is_empty());
}

/// Where the forward pass has repeated blocks, the memory pass also offers checkpointing them
/// one by one: on the wide residual MLP (`cpu-memory-probe`), a budget no front fraction meets
/// is met by it, and the program checkpointed that way measured a step peak that fits too
/// (its fall, 25,163,840 bytes, from the probe: `peaks-timeline.tsv`).
#[test]
fn memory_pass_checkpoints_the_repeated_blocks_where_no_front_fraction_fits() {
    let loaded = load_mapped("stepcast/cpu-memory-probe/traces/bigresmlp-base.json.gz");
    let budget = 50_000_000;
    let plan = memory_plan(&loaded, budget);
    let memory = plan.memory.as_ref().expect("the memory pass ran");
    assert_eq!(memory.peak_source, "memory_timeline");
    // A CPU-only trace: nothing to offload.
    assert!(
        memory
            .options
            .iter()
            .all(|o| !matches!(o.step, Move::Offload { .. }))
    );
    for option in &memory.options {
        let only_blocks = matches!(option.step, Move::RecomputeBlocks);
        assert_eq!(option.fits, only_blocks, "{option:?}");
    }
    assert_eq!(memory.chosen, Some(Move::RecomputeBlocks));
    assert!(memory.predicted_peak_bytes <= budget);
    let measured_fall = 25_163_840;
    assert!(memory.peak_bytes - measured_fall <= budget);
    assert!((memory.peak_bytes - memory.predicted_peak_bytes - measured_fall).abs() < 1 << 20);
    assert_eq!(
        plan.moves.last().map(|m| &m.step),
        Some(&Move::RecomputeBlocks)
    );
}

/// The same plan, figure for figure, with one thread and with four.
#[test]
fn plan_does_not_depend_on_the_thread_count() {
    let loaded = single(NCCL_DATA);
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool")
            .install(|| optimized(&[loaded], Options::default()))
    };
    assert_eq!(run(1), run(4));
}

/// Tensor fusion's cost model on nccl_data's recorded all-reduces: merging the first adjacent
/// pair, in every steady step, leaves one collective fewer per step, cuts the collectives'
/// total cost by the α of the calibrated all-reduce fit per merge (never below the longer
/// member), and keeps every recorded wait for peers (moved to the merged all-reduce).
#[test]
fn a_bucket_merge_saves_one_fixed_cost_and_keeps_the_stragglers() {
    use stepcast::comm::{Collective, calibrate, recorded_collectives};
    use stepcast::graph::{NO_STEP, TaskKind};
    use stepcast::optimize::Facts;

    let loaded = single(NCCL_DATA);
    let context = context(loaded);
    let baseline = predict(&loaded.window, &loaded.window.graph).unwrap_or_else(|e| panic!("{e}"));
    let facts = Facts::find(&context, &context.edit(), baseline.steady.clone().count());
    let &((first, second), _) = facts.buckets.pairs.first().expect("adjacent all-reduces");
    // The fit, independently of the pass.
    let recorded = recorded_collectives(&loaded.trace, &loaded.window, &loaded.mapping);
    let alpha = calibrate(&recorded)
        .fits
        .iter()
        .filter(|f| f.collective == Collective::AllReduce)
        .max_by_key(|f| f.points)
        .map_or(0.0, |f| f.intercept_ns.max(0.0));
    // The steps where both members ran, and the cost the merge should cut there.
    let steady = |step: u32| step != NO_STEP && baseline.steady.contains(&(step as usize));
    let mut merges = 0;
    let mut cut_ns = 0i64;
    let mut steps: Vec<u32> = recorded
        .iter()
        .map(|r| r.step)
        .filter(|&s| steady(s))
        .collect();
    steps.sort_unstable();
    steps.dedup();
    for step in steps {
        let member = |slot: u32| {
            recorded
                .iter()
                .find(|r| r.step == step && r.slot == slot && r.collective == Collective::AllReduce)
        };
        if let (Some(a), Some(b)) = (member(first), member(second))
            && a.lane == b.lane
        {
            let (da, db) = (
                loaded.window.graph.dur_ns[a.task.index()],
                loaded.window.graph.dur_ns[b.task.index()],
            );
            let merged = ((da + db) as f64 - alpha).round() as i64;
            cut_ns += da + db - merged.max(da.max(db));
            merges += 1;
        }
    }
    assert!(merges > 0);
    let graph = apply_plan(&context, &[Move::MergeBuckets { first, second }])
        .unwrap_or_else(|e| panic!("{e}"));
    let collectives = |g: &stepcast::graph::Graph| {
        let tasks: Vec<usize> = (0..g.task_count())
            .filter(|&t| g.kind[t] == TaskKind::Collective && steady(g.step[t]))
            .collect();
        let dur: i64 = tasks.iter().map(|&t| g.dur_ns[t]).sum();
        let wait: i64 = tasks.iter().map(|&t| g.peer_wait_ns[t]).sum();
        (tasks.len(), dur, wait)
    };
    let (n_before, dur_before, wait_before) = collectives(&loaded.window.graph);
    let (n_after, dur_after, wait_after) = collectives(&graph);
    assert_eq!(n_before - n_after, merges);
    assert_eq!(dur_before - dur_after, cut_ns);
    assert_eq!(wait_before, wait_after);
}

/// Rank symmetry (issue #15 item 4): ranks that run one program are replayed through one
/// representative. Four copies of nccl_data form one group; the plan and every rank's figures
/// equal the single rank's, and each rank's prediction equals the plan's graph replayed on its
/// own (`apply_plan`, which replays every rank).
#[test]
fn ranks_of_one_program_are_replayed_through_one_representative() {
    let one = single(NCCL_DATA);
    let alone = optimized(&[one], Options::default());
    let job = optimized(&[one, one, one, one], Options::default());
    assert_eq!(job.groups.len(), 1, "{:?}", job.groups);
    assert_eq!(job.groups[0].members, vec![0, 1, 2, 3]);
    assert_eq!(job.groups[0].representative, 0);
    let moves = |o: &Optimized| -> Vec<Move> { o.moves.iter().map(|m| m.step.clone()).collect() };
    assert_eq!(moves(&job), moves(&alone));
    assert_eq!(job.planned_ns, alone.planned_ns);
    let graph = apply_plan(&context(one), &moves(&job)).unwrap_or_else(|e| panic!("{e}"));
    let direct = predict(&one.window, &graph).unwrap_or_else(|e| panic!("{e}"));
    for &(_, planned_ns) in &job.per_rank {
        assert_eq!(planned_ns, direct.step_ns);
    }
    // Ranks of different programs are their own groups: the 8 DLRM ranks' windows hold
    // different tasks, and each is replayed (check_plan holds every rank to its own replay).
    let dlrm: Vec<&Loaded> = dlrm().iter().collect();
    let contexts: Vec<Context<'_>> = dlrm.iter().map(|l| context(l)).collect();
    let optimizer = stepcast::optimize::Optimizer::new(&contexts, Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(optimizer.groups().len(), 8);
}
