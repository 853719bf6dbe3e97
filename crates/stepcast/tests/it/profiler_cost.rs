//! Issue #25: the profiler's own cost, read from a trace, against the same program's steps
//! timed without the profiler (`*.timing.json` beside the H100 and H200 pairs: an independent
//! reference, measured with the profiler off).
//!
//! The bar: where the traced steady step exceeds the step timed without the profiler by more
//! than 10 %, the baseline less the estimated cost is closer to the timed step than the traced
//! one; and where the traced step is at least the timed one, the correction never takes it
//! more than 10 % below the timed step. (The second part was first written for every baseline
//! within 10 % of the timed step; it failed on the H200 `loader` traces, whose traced steps are
//! shorter than the steps timed without the profiler: 98.7 ms traced, 94.2 ms less the
//! profiler, 105.2 ms timed; the data loading varies more between runs than the profiler
//! costs, so there the timing tells nothing of the profiler.)

use std::path::{Path, PathBuf};

use stepcast::Window;
use stepcast::analyze::mapping::map;
use stepcast::graph::{BuildOptions, build};
use stepcast::whatif::profiler_cost::{ProfilerCost, estimate};
use stepcast::whatif::{Baseline, Context, Resource, apply_models, models::Model};
use stepcast_trace::Trace;

fn pairs() -> Vec<PathBuf> {
    timed_traces(&["h100-pairs", "h200-pairs"])
}

/// The traces under `testdata/kineto/stepcast/<dir>` for each of `dirs` that have their steps
/// timed without the profiler beside them.
fn timed_traces(dirs: &[&str]) -> Vec<PathBuf> {
    let root = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/stepcast"
    ));
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.to_string_lossy().ends_with(".json.gz"))
            .filter(|p| timing_of(p).is_some())
            .collect();
        files.sort();
        out.extend(files);
    }
    out
}

/// A trace read and replayed, the profiler's cost read from it, and its baseline step as
/// replayed and less that cost ([`ProfilerCost::without`]).
struct Estimated {
    trace: Trace,
    window: Window,
    cost: ProfilerCost,
    traced_ns: i64,
    without_ns: i64,
}

/// [`Estimated`] of the trace at `path`; `None` where the trace shows no profiler cost.
fn estimated(path: &Path) -> Option<Estimated> {
    let trace = stepcast_trace::read_trace(path).expect("reads");
    let window = build(&trace, &BuildOptions::default());
    let baseline = Baseline::of(&window).expect("replays").prediction;
    let cost = estimate(&trace, &window, &baseline.steady)?;
    let host_ns = baseline.bottleneck.by_resource[Resource::Host as usize];
    let without_ns = cost.without(baseline.step_ns, host_ns);
    Some(Estimated {
        trace,
        window,
        cost,
        traced_ns: baseline.step_ns,
        without_ns,
    })
}

/// The median step timed without the profiler, in ns.
fn timing_of(trace: &Path) -> Option<i64> {
    let name = trace.to_string_lossy().replace(".json.gz", ".timing.json");
    let text = std::fs::read_to_string(name).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    Some((value["median_ms"].as_f64()? * 1e6).round() as i64)
}

#[test]
fn the_profilers_cost_moves_baselines_toward_steps_timed_without_it() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in pairs() {
        let timed_ns = timing_of(&path).expect("timed");
        let Some(Estimated {
            traced_ns,
            without_ns,
            ..
        }) = estimated(&path)
        else {
            continue;
        };
        let name = path.file_name().map(|n| n.to_string_lossy().to_string());
        let ms = |ns: i64| ns as f64 / 1e6;
        let line = format!(
            "{name:?}: traced {:.3} ms, less the profiler {:.3} ms, timed without it {:.3} ms",
            ms(traced_ns),
            ms(without_ns),
            ms(timed_ns)
        );
        assert!(without_ns <= traced_ns, "{line}");
        if traced_ns as f64 > 1.1 * timed_ns as f64 {
            checked += 1;
            if (without_ns - timed_ns).abs() >= (traced_ns - timed_ns).abs() {
                failures.push(format!("not closer: {line}"));
            }
        }
        if traced_ns >= timed_ns && (without_ns as f64) < 0.9 * timed_ns as f64 {
            failures.push(format!("overcorrected: {line}"));
        }
    }
    // The host-bound `mlp`, `resnet`, `transformer-amp` configurations of both machines.
    assert!(checked >= 15, "only {checked} host-bound traces checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Whether the trace file says it was recorded with `record_shapes` (Kineto's top-level
/// `"record_shapes": 1`), read with serde_json: the reference for the reader's option.
fn recorded_with_shapes(path: &Path) -> bool {
    let file = std::fs::File::open(path).expect("opens");
    let value: serde_json::Value =
        serde_json::from_reader(flate2::read::GzDecoder::new(file)).expect("JSON");
    value["record_shapes"].as_i64() == Some(1)
}

/// On a CPU-only run `record_shapes` holds the step's tensors (`cpu-profiler-cost/`), a cost
/// the estimate does not take off: the caveat says so, and says the figure without the
/// profiler is an upper side. Held against the CPU pairs' steps timed without the profiler:
/// where the traced step exceeds the timed one by more than 10 %, the baseline less the
/// counted cost is still at or above it (the uncounted costs all lie the way the caveat
/// says), and never more than the traced step.
#[test]
fn on_cpu_runs_the_cost_left_uncounted_is_said_and_the_estimate_stays_an_upper_side() {
    let dirs = [
        "cpu-pairs",
        "cpu-loader-pairs",
        "cpu-optimizer-pairs",
        "cpu-recompute-pairs",
        "cpu-thread-pairs",
        "cpu-ddp-pairs",
        "cpu-ddp-pairs/world4",
        "cpu-ddp-pairs/transformer",
        "cpu-ddp-pairs/transformer/rerun",
        "cpu-ddp-pairs/cnn",
        "cpu-ddp-pairs/gpt",
    ];
    let (mut with_shapes, mut without_shapes, mut above) = (0, 0, 0);
    let mut failures = Vec::new();
    for path in timed_traces(&dirs) {
        let timed_ns = timing_of(&path).expect("timed");
        let Some(Estimated {
            trace,
            window,
            cost,
            traced_ns,
            without_ns,
        }) = estimated(&path)
        else {
            continue;
        };
        let name = path.file_name().map(|n| n.to_string_lossy().to_string());
        let shapes = recorded_with_shapes(&path);
        assert_eq!(cost.retains_host_tensors, shapes, "{name:?}");
        if shapes {
            with_shapes += 1;
        } else {
            without_shapes += 1;
        }
        let mapping = map(&trace, &window);
        let context = Context::new(&trace, &window, &mapping);
        let outcome = apply_models(&context, &[Model::CudaGraphs]).expect("predicts");
        let said = outcome
            .caveats
            .iter()
            .any(|c| c.starts_with("the profiler recorded") && c.contains("#133444"));
        let profiler_caveat = outcome
            .caveats
            .iter()
            .any(|c| c.starts_with("the profiler recorded"));
        if profiler_caveat && said != shapes {
            failures.push(format!(
                "{name:?}: retention said {said}, record_shapes {shapes}"
            ));
        }
        assert!(without_ns <= traced_ns, "{name:?}");
        if traced_ns as f64 > 1.1 * timed_ns as f64 {
            above += 1;
            if without_ns < timed_ns {
                failures.push(format!(
                    "{name:?}: less the profiler {:.3} ms, below the {:.3} ms timed without it",
                    without_ns as f64 / 1e6,
                    timed_ns as f64 / 1e6
                ));
            }
        }
    }
    // Every CPU workload traced with shapes, the two optimizer pairs traced without them.
    assert!(with_shapes >= 50, "{with_shapes} traces with shapes");
    assert!(
        without_shapes >= 2,
        "{without_shapes} traces without shapes"
    );
    assert!(
        above >= 20,
        "only {above} traces timed >10 % below their traced step"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn options_are_read_from_the_trace_and_said_beside_each_prediction() {
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/stepcast/h200-pairs/"
    );
    for (file, options) in [
        ("mlp-fp32-prof_minimal.json.gz", vec![]),
        ("mlp-fp32.json.gz", vec!["record_shapes"]),
        (
            "mlp-fp32-prof_stack.json.gz",
            vec!["record_shapes", "with_stack"],
        ),
        (
            "mlp-fp32-prof_memory.json.gz",
            vec!["record_shapes", "profile_memory"],
        ),
        (
            "mlp-fp32-prof_all.json.gz",
            vec!["record_shapes", "with_stack", "profile_memory"],
        ),
    ] {
        let trace = stepcast_trace::read_trace(Path::new(&format!("{root}{file}"))).expect("reads");
        let window = build(&trace, &BuildOptions::default());
        let baseline = Baseline::of(&window).expect("replays").prediction;
        let cost = estimate(&trace, &window, &baseline.steady).expect("a cost");
        assert_eq!(cost.options, options, "{file}");
        // Python frames are events too: with_stack records more per step.
        assert!(cost.per_event_ns > 0 && cost.events_per_step > 0, "{file}");
        let mapping = map(&trace, &window);
        let context = Context::new(&trace, &window, &mapping);
        let outcome = apply_models(&context, &[Model::CudaGraphs]).expect("predicts");
        assert!(
            outcome
                .caveats
                .iter()
                .any(|c| c.starts_with("the profiler recorded") && c.contains("instead of")),
            "{file}: {:?}",
            outcome.caveats
        );
    }
}
