//! `compare` on the real before/after pair of `testdata/` (ResNet-50, `DataLoader(num_workers=0)`
//! then `num_workers=4`, pytorch/kineto `tb_plugin/samples/`), checked against independent
//! readings of the files; and `docs/accuracy.md`, the table of every pair's predictions
//! against its measured outcome, generated here.

use std::collections::BTreeMap;
use std::io::Read;

use stepcast::Window;
use stepcast::analyze::{Analysis, analyze};
use stepcast::compare::{
    CompareError, CompareOptions, Comparison, DiffTable, FindingKind, ModelCheck, Placement, Side,
    Status, Verdict, check::phase_times, check_model, compare, compare_with,
};
use stepcast::whatif::{Model, ModelParams};
use stepcast_trace::Trace;

const PAIR_BEFORE: &str =
    "kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_0/worker0.pt.trace.json.gz";
const PAIR_AFTER: &str =
    "kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_4/worker0.pt.trace.json.gz";

const H100: &str = "stepcast/h100-pairs";
const H100_TRANSFORMER_FP32: &str = "stepcast/h100-pairs/transformer-fp32.json.gz";
const H100_TRANSFORMER_AMP: &str = "stepcast/h100-pairs/transformer-amp.json.gz";

struct Loaded {
    trace: Trace,
    window: Window,
    analysis: Analysis,
}

impl Loaded {
    fn new(relative: &str) -> Loaded {
        let (trace, window) = super::load(relative);
        let analysis = analyze(&trace, &window, None).unwrap_or_else(|e| panic!("{relative}: {e}"));
        Loaded {
            trace,
            window,
            analysis,
        }
    }

    fn side(&self) -> Side<'_> {
        Side {
            trace: &self.trace,
            window: &self.window,
            analysis: &self.analysis,
        }
    }
}

fn compared(before: &Loaded, after: &Loaded) -> Comparison {
    compare(&before.side(), &after.side()).unwrap_or_else(|e| panic!("{e}"))
}

fn check(before: &Loaded, after: &Loaded, comparison: &Comparison, model: &str) -> ModelCheck {
    check_with(before, after, comparison, model, &ModelParams::default())
}

fn check_with(
    before: &Loaded,
    after: &Loaded,
    comparison: &Comparison,
    model: &str,
    params: &ModelParams,
) -> ModelCheck {
    let model = Model::with_params(model, params).unwrap_or_else(|e| panic!("{e}"));
    check_model(
        &before.side(),
        &comparison.before,
        &after.side(),
        &comparison.after,
        &model,
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// The trace's events, read with serde_json alone (not stepcast's reader).
pub(super) fn raw_events(relative: &str) -> Vec<serde_json::Value> {
    let file = std::fs::File::open(super::testdata(relative)).unwrap_or_else(|e| panic!("{e}"));
    let mut text = String::new();
    flate2::read::GzDecoder::new(file)
        .read_to_string(&mut text)
        .unwrap_or_else(|e| panic!("{e}"));
    let document: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    match document {
        serde_json::Value::Object(mut map) => match map.remove("traceEvents") {
            Some(serde_json::Value::Array(events)) => events,
            _ => panic!("{relative}: no traceEvents"),
        },
        serde_json::Value::Array(events) => events,
        _ => panic!("{relative}: not a trace"),
    }
}

fn micros(event: &serde_json::Value, key: &str) -> f64 {
    event[key].as_f64().unwrap_or(0.0)
}

/// A `ProfilerStep#N` marker on the host (not its `gpu_user_annotation` copy on the device).
fn is_step_marker(e: &serde_json::Value) -> bool {
    e["ph"] == "X"
        && e["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("ProfilerStep#"))
        && e["cat"] != "gpu_user_annotation"
}

/// Per `ProfilerStep#N` (host ranges only), as `../shared/tools/independent_steps.py` reads
/// them: (start µs, marker end µs, span ns), the span running from the marker's start to the
/// later of its end and the end of the last device work launched (by correlation id) inside it.
pub(super) fn independent_steps(events: &[serde_json::Value]) -> Vec<(f64, f64, i64)> {
    let mut steps: Vec<(f64, f64)> = events
        .iter()
        .filter(|e| is_step_marker(e))
        .map(|e| (micros(e, "ts"), micros(e, "ts") + micros(e, "dur")))
        .collect();
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut launch: BTreeMap<i64, f64> = BTreeMap::new();
    let mut device_end: BTreeMap<i64, f64> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X") {
        let Some(correlation) = e["args"]["correlation"].as_i64() else {
            continue;
        };
        match e["cat"].as_str().unwrap_or("") {
            "cuda_runtime" | "cuda_driver" | "Runtime" => {
                launch.insert(correlation, micros(e, "ts"));
            }
            "kernel" | "gpu_memcpy" | "gpu_memset" | "Kernel" | "Memcpy" | "Memset" => {
                let end = micros(e, "ts") + micros(e, "dur");
                let slot = device_end.entry(correlation).or_insert(end);
                *slot = slot.max(end);
            }
            _ => {}
        }
    }
    steps
        .into_iter()
        .map(|(start, end)| {
            let last = launch
                .iter()
                .filter(|&(_, &at)| start <= at && at <= end)
                .filter_map(|(c, _)| device_end.get(c))
                .fold(end, |a, &b| a.max(b));
            (start, end, ((last - start) * 1000.0).round() as i64)
        })
        .collect()
}

/// The median of the steps after the first (the warm-up), as stepcast's median is taken.
fn steady_median(mut spans: Vec<i64>) -> i64 {
    spans.remove(0);
    spans.sort_unstable();
    let n = spans.len();
    if n % 2 == 1 {
        spans[n / 2]
    } else {
        (spans[n / 2 - 1] + spans[n / 2]).div_euclid(2)
    }
}

/// The steady-state period of an independent reading: the mean time between the ends
/// (start + span) of consecutive steps after the first (the warm-up), in ns.
fn steady_period(steps: &[(f64, f64, i64)]) -> i64 {
    let ends: Vec<f64> = steps
        .iter()
        .map(|&(start, _, span_ns)| start * 1000.0 + span_ns as f64)
        .collect();
    let count = (ends.len() - 1) as f64;
    ((ends[ends.len() - 1] - ends[0]) / count).round() as i64
}

#[test]
fn pair_speedup_matches_an_independent_reading() {
    let before = Loaded::new(PAIR_BEFORE);
    let after = Loaded::new(PAIR_AFTER);
    let comparison = compared(&before, &after);
    let read = |relative: &str| independent_steps(&raw_events(relative));
    let (before_steps, after_steps) = (read(PAIR_BEFORE), read(PAIR_AFTER));
    let median = |steps: &[(f64, f64, i64)]| steady_median(steps.iter().map(|s| s.2).collect());
    // Kineto writes microseconds: allow one for rounding.
    for (side, steps) in [
        (&comparison.before, &before_steps),
        (&comparison.after, &after_steps),
    ] {
        assert!((side.median_ns - median(steps)).abs() <= 1_000, "span");
        assert!(
            (side.period_ns - steady_period(steps)).abs() <= 1_000,
            "period {} vs {}",
            side.period_ns,
            steady_period(steps)
        );
        assert_eq!(side.periods_ns.len(), steps.len() - 1);
    }
    let independent = steady_period(&before_steps) as f64 / steady_period(&after_steps) as f64;
    assert!(
        (comparison.speedup / independent - 1.0).abs() < 1e-3,
        "{independent}"
    );
    // num_workers=4 is faster, beyond the noise of either trace's steady steps.
    assert!(comparison.after.max_ns < comparison.before.min_ns);
    assert_eq!(comparison.before.numbers, vec![6, 7, 8, 9, 10]);
}

/// Where the host runs ahead of the device (an FP32 transformer whose launch calls block on
/// CUDA's full launch queue), a step's span covers the steps queued before it: the measured
/// step is the period between step ends, which the same steps timed without the profiler
/// (`*.timing.json`, recorded beside the trace) confirm.
#[test]
fn the_measured_step_is_the_period_where_the_host_runs_ahead() {
    let before = Loaded::new(H100_TRANSFORMER_FP32);
    let after = Loaded::new(H100_TRANSFORMER_AMP);
    let comparison = compared(&before, &after);
    let steps = independent_steps(&raw_events(H100_TRANSFORMER_FP32));
    assert!((comparison.before.period_ns - steady_period(&steps)).abs() <= 1_000);
    // The spans are three periods and more: the host is ~3 steps ahead.
    assert!(comparison.before.median_ns > 3 * comparison.before.period_ns);
    let unprofiled_ns = unprofiled_step_ns(H100_TRANSFORMER_FP32);
    assert!(
        (comparison.before.period_ns as f64 / unprofiled_ns as f64 - 1.0).abs() < 0.02,
        "period {} vs {unprofiled_ns} without the profiler",
        comparison.before.period_ns
    );
}

/// The step time recorded with the profiler off beside a trace recorded here
/// (`<config>.timing.json`: the median of three rounds of 30 timed steps), in ns.
fn unprofiled_step_ns(relative: &str) -> i64 {
    let path = super::testdata(relative)
        .with_extension("")
        .with_extension("timing.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let json: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let ms = json["median_ms"]
        .as_f64()
        .unwrap_or_else(|| panic!("{path:?}: no median_ms"));
    (ms * 1e6).round() as i64
}

fn assert_sums(name: &str, table: &DiffTable, before_ns: i64, after_ns: i64) {
    let rows = || {
        table
            .rows
            .iter()
            .chain(&table.others)
            .chain([&table.remainder])
    };
    assert_eq!(
        rows().map(|r| r.before_ns).sum::<i64>(),
        before_ns,
        "{name}"
    );
    assert_eq!(rows().map(|r| r.after_ns).sum::<i64>(), after_ns, "{name}");
    assert_eq!(
        (table.total.before_ns, table.total.after_ns),
        (before_ns, after_ns)
    );
    let deltas: Vec<i64> = table.rows.iter().map(|r| r.delta_ns().abs()).collect();
    assert!(
        deltas.windows(2).all(|w| w[0] >= w[1]),
        "{name}: not sorted"
    );
}

#[test]
fn pair_changes_name_the_documented_change_and_sum_to_the_step() {
    let before = Loaded::new(PAIR_BEFORE);
    let after = Loaded::new(PAIR_AFTER);
    let comparison = compared(&before, &after);
    let changes = &comparison.changes;
    let (b, a) = (comparison.before.mean_ns, comparison.after.mean_ns);
    for (name, table) in [
        ("phases_host", &changes.phases_host),
        ("phases_device", &changes.phases_device),
        ("ops_host", &changes.ops_host),
        ("ops_device", &changes.ops_device),
        ("kernels", &changes.kernels),
    ] {
        assert_sums(name, table, b, a);
    }
    // The change is num_workers 0 -> 4: the single-process loader's iterator is gone and the
    // multi-process one is new. Its host time per steady step, read independently: the mean
    // duration of the annotation inside the steady steps' markers.
    let events = raw_events(PAIR_BEFORE);
    let steps = independent_steps(&events);
    let single = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
    let total_us: f64 = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["name"] == single)
        .filter(|e| {
            let ts = micros(e, "ts");
            steps[1..]
                .iter()
                .any(|&(start, end, _)| start <= ts && ts < end)
        })
        .map(|e| micros(e, "dur"))
        .sum();
    let expected_ns = (total_us * 1000.0 / (steps.len() - 1) as f64).round() as i64;
    let row = |name: &str| {
        changes
            .ops_host
            .rows
            .iter()
            .find(|r| r.name == name)
            .cloned()
    };
    let gone = row(single).unwrap_or_else(|| panic!("no {single} row"));
    assert_eq!(gone.status, Status::Gone);
    assert!((gone.before_ns - expected_ns).abs() <= 1, "{expected_ns}");
    let multi = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
    assert_eq!(row(multi).map(|r| r.status), Some(Status::New));
    // Device busy time by phase hardly moves (same model, same GPU): the step got shorter
    // because the device waited less.
    assert!(changes.phases_device.remainder.status == Status::Faster);
    for row in &changes.phases_device.rows {
        if row.name != "data_loading" {
            assert_eq!(row.status, Status::Same, "{}", row.name);
        }
    }
}

#[test]
fn a_trace_compared_with_itself_changes_nothing() {
    let before = Loaded::new(PAIR_BEFORE);
    let comparison = compared(&before, &before);
    assert_eq!(comparison.speedup, 1.0);
    // Issue #25: identical steps are no measurable change, not a speedup, and nothing warns.
    assert_eq!(comparison.measured.verdict, Verdict::NoMeasurableChange);
    assert!(comparison.measured.contains(1.0));
    assert!(comparison.workload.findings.is_empty());
    assert_eq!(comparison.workload.op_similarity, Some(1.0));
    assert_eq!(comparison.workload.kernel_similarity, Some(1.0));
    let changes = &comparison.changes;
    for table in [
        &changes.phases_host,
        &changes.phases_device,
        &changes.ops_host,
        &changes.ops_device,
        &changes.kernels,
    ] {
        for row in table
            .rows
            .iter()
            .chain(&table.others)
            .chain([&table.remainder])
        {
            assert_eq!(row.delta_ns(), 0, "{}", row.name);
            assert_eq!(row.status, Status::Same, "{}", row.name);
        }
    }
}

/// The measured side of a phase check is the what-if's own figure, taken from a recorded
/// graph: on BEFORE it must equal the what-if's "before".
#[test]
fn measured_phase_times_are_the_whatif_figures() {
    let before = Loaded::new(PAIR_BEFORE);
    let after = Loaded::new(PAIR_AFTER);
    let comparison = compared(&before, &after);
    let check = check(&before, &after, &comparison, "prefetch_inputs");
    let recorded = phase_times(&before.trace, &before.window, &before.analysis.mapping);
    assert_eq!(check.phases.len(), recorded.len());
    for (p, &(phase, host, device)) in check.phases.iter().zip(&recorded) {
        assert_eq!(p.phase, phase);
        assert_eq!(
            (p.host_before_ns, p.device_before_ns),
            (host, device),
            "{phase:?}"
        );
    }
    let measured = phase_times(&after.trace, &after.window, &after.analysis.mapping);
    for (p, &(_, host, device)) in check.phases.iter().zip(&measured) {
        assert_eq!((p.host_measured_ns, p.device_measured_ns), (host, device));
    }
}

// ---------------------------------------------------------------------------------------------
// Issue #25, part 5: `compare` measures honestly.

/// Per steady step (every step after the first), the time from the previous step's end to its
/// own, the ends read independently (marker start + span): what the interval is made of.
fn independent_periods(steps: &[(f64, f64, i64)]) -> Vec<i64> {
    let ends: Vec<f64> = steps
        .iter()
        .map(|&(start, _, span_ns)| start * 1000.0 + span_ns as f64)
        .collect();
    ends.windows(2)
        .map(|w| (w[1] - w[0]).round() as i64)
        .collect()
}

/// The V100 pair's interval is the extremes of its per-step periods, read independently; it
/// is a measured speedup (every AFTER step shorter than every BEFORE one), and contains the
/// mean and the median ratios.
#[test]
fn pair_speedup_has_its_spread_from_an_independent_reading() {
    let before = Loaded::new(PAIR_BEFORE);
    let after = Loaded::new(PAIR_AFTER);
    let comparison = compared(&before, &after);
    let b = independent_periods(&independent_steps(&raw_events(PAIR_BEFORE)));
    let a = independent_periods(&independent_steps(&raw_events(PAIR_AFTER)));
    let (b_min, b_max) = (b.iter().min().copied(), b.iter().max().copied());
    let (a_min, a_max) = (a.iter().min().copied(), a.iter().max().copied());
    let ratio = |x: Option<i64>, y: Option<i64>| x.unwrap_or(0) as f64 / y.unwrap_or(1) as f64;
    let m = comparison.measured;
    // Kineto writes microseconds: a relative 1e-4 covers the rounding.
    assert!((m.low / ratio(b_min, a_max) - 1.0).abs() < 1e-4, "{m:?}");
    assert!((m.high / ratio(b_max, a_min) - 1.0).abs() < 1e-4, "{m:?}");
    assert_eq!(m.verdict, Verdict::Faster, "{m:?}");
    assert!(m.low > 1.0);
    assert!(m.contains(comparison.speedup) && m.contains(m.median_speedup));
    assert!(comparison.workload.findings.is_empty());
}

/// Every pair of `testdata/` is one workload (compared without force), and each measured
/// speedup comes with an interval that holds its mean and median ratios. Only the pairs on
/// another GPU warn about devices; a change of data type or compilation may warn that little
/// is shared, never refuse.
#[test]
fn every_pair_is_one_workload_and_its_speedup_has_its_spread() {
    for pair in PAIRS {
        let after_path = after_path(pair);
        let before = Loaded::new(pair.before);
        let after = Loaded::new(&after_path);
        // On a CPU, Inductor's C++ replaces the aten ops of a compiled model and no kernel
        // is left to match: `compare` may refuse such a pair (a known limit, said in
        // docs/accuracy.md); forced, it is compared.
        let cpu_compiled = pair.before.starts_with(CPU) && after_path.contains("compiled");
        let comparison = match compare(&before.side(), &after.side()) {
            Err(CompareError::NotOneWorkload { .. }) if cpu_compiled => compare_with(
                &before.side(),
                &after.side(),
                CompareOptions { force: true },
            )
            .unwrap_or_else(|e| panic!("{e}")),
            other => other.unwrap_or_else(|e| panic!("{} → {after_path}: {e}", pair.before)),
        };
        let m = comparison.measured;
        assert!(m.low <= m.high, "{m:?}");
        assert!(m.contains(comparison.speedup), "{}: {m:?}", pair.before);
        assert!(m.contains(m.median_speedup), "{}: {m:?}", pair.before);
        assert_ne!(m.verdict, Verdict::SpreadUnknown);
        let devices = comparison
            .workload
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::Devices);
        // The GPU differs where an H100 trace is compared with an H200 one.
        let other_gpu = pair.before.contains("h100") && after_path.contains("h200");
        assert_eq!(devices, other_gpu, "{after_path}");
        assert!(
            comparison
                .workload
                .findings
                .iter()
                .all(|f| !f.refuses || (cpu_compiled && f.kind == FindingKind::Names)),
            "{after_path}"
        );
    }
}

/// The steps of `relative`'s `ProfilerStep` markers (host ranges), read independently, cut to
/// the first two: one copy keeps the device work launched in them, the other drops every event
/// that ends after the second step's marker (a profiler stopped before the device finished).
/// The markers are identical; only the second step's device tail differs.
fn two_step_cuts(relative: &str, dir: &std::path::Path) -> (String, String) {
    let events = raw_events(relative);
    let mut starts: Vec<f64> = events
        .iter()
        .filter(|e| is_step_marker(e))
        .map(|e| micros(e, "ts"))
        .collect();
    starts.sort_by(f64::total_cmp);
    let cut = starts[2];
    let launched: std::collections::BTreeSet<i64> = events
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "cuda_runtime" && micros(e, "ts") < cut)
        .filter_map(|e| e["args"]["correlation"].as_i64())
        .collect();
    let timed = |e: &serde_json::Value| e.get("ts").is_some();
    let device = |e: &serde_json::Value| {
        matches!(
            e["cat"].as_str(),
            Some("kernel" | "gpu_memcpy" | "gpu_memset")
        )
    };
    let with_tail: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| {
            !timed(e)
                || if device(e) {
                    e["args"]["correlation"]
                        .as_i64()
                        .is_some_and(|c| launched.contains(&c))
                } else {
                    micros(e, "ts") < cut
                }
        })
        .collect();
    let without_tail: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| !timed(e) || micros(e, "ts") + micros(e, "dur") < cut)
        .collect();
    let write = |name: &str, events: &[&serde_json::Value]| {
        let path = dir.join(name);
        let text = serde_json::json!({ "traceEvents": events }).to_string();
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        path.to_string_lossy().into_owned()
    };
    (
        write("two-steps-with-tail.json", &with_tail),
        write("two-steps-without-tail.json", &without_tail),
    )
}

/// Issue #25: two traces whose every `ProfilerStep` has the same duration (HTA's `test` trace
/// cut to its first two steps, 100.298 and 122.149 ms) gave "Measured speedup 1.234×": the
/// period of a two-step window runs to the end of the second step's device work, which one
/// copy does not hold. The per-step periods overlap: no measurable change.
#[test]
fn identical_steps_with_a_cut_device_tail_are_no_measurable_change() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compare-two-steps");
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{dir:?}: {e}"));
    let (with_tail, without_tail) = two_step_cuts(
        &format!("{}/trace_diff/test/test.json.gz", super::HTA),
        &dir,
    );
    let markers = |path: &str| -> Vec<i64> {
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{e}"));
        let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        let mut steps = independent_steps(json["traceEvents"].as_array().map_or(&[], |v| v));
        steps.sort_by(|x, y| x.0.total_cmp(&y.0));
        steps
            .iter()
            .map(|&(s, e, _)| ((e - s) * 1000.0).round() as i64)
            .collect()
    };
    assert_eq!(markers(&with_tail), vec![100_298_000, 122_149_000]);
    assert_eq!(markers(&with_tail), markers(&without_tail));
    let load = |path: &str| {
        let trace = stepcast_trace::read_trace(std::path::Path::new(path))
            .unwrap_or_else(|e| panic!("{e}"));
        let window = stepcast::graph::build(&trace, &stepcast::graph::BuildOptions::default());
        let analysis = analyze(&trace, &window, None).unwrap_or_else(|e| panic!("{e}"));
        Loaded {
            trace,
            window,
            analysis,
        }
    };
    let (before, after) = (load(&with_tail), load(&without_tail));
    let comparison = compared(&before, &after);
    // The mean ratio still moves (the figure the issue quotes) ...
    assert!(
        (comparison.speedup - 1.234).abs() < 0.01,
        "{}",
        comparison.speedup
    );
    // ... but within the steps' spread.
    assert_eq!(
        comparison.measured.verdict,
        Verdict::NoMeasurableChange,
        "{:?}",
        comparison.measured
    );
}

/// A ResNet-50 training trace (V100, 2021) against a ViT inference trace (H100, TraceLens) and
/// against an MLP training trace (H100): not one workload, refused; forced, the refusal stays
/// as a warning.
#[test]
fn unrelated_workloads_are_refused() {
    let resnet = Loaded::new(PAIR_BEFORE);
    let vit =
        Loaded::new("TraceLens/tests/traces/h100/Falconsai_nsfw_image_detection__1016002.json.gz");
    let mlp = Loaded::new("stepcast/h100-pairs/mlp-fp32.json.gz");
    for (other, kinds) in [
        (
            &vit,
            &[FindingKind::TrainingInference, FindingKind::Names][..],
        ),
        (&mlp, &[FindingKind::Names][..]),
    ] {
        match compare(&resnet.side(), &other.side()) {
            Err(CompareError::NotOneWorkload { reasons }) => assert_eq!(reasons.len(), kinds.len()),
            other => panic!("not refused: {:?}", other.map(|c| c.measured)),
        }
        let forced = compare_with(
            &resnet.side(),
            &other.side(),
            CompareOptions { force: true },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let refused: Vec<FindingKind> = forced
            .workload
            .findings
            .iter()
            .filter(|f| f.refuses)
            .map(|f| f.kind)
            .collect();
        assert_eq!(refused, kinds);
    }
    // The ViT trace has one step: its spread is unknown, and that is said.
    let forced = compare_with(&resnet.side(), &vit.side(), CompareOptions { force: true })
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(forced.measured.verdict, Verdict::SpreadUnknown);
    assert!(
        forced
            .workload
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::SpreadUnknown)
    );
}

/// A `compare --model` row is judged against the interval and carries `whatif`'s trust.
#[test]
fn model_checks_are_judged_against_the_interval_with_their_trust() {
    let before = Loaded::new(PAIR_BEFORE);
    let after = Loaded::new(PAIR_AFTER);
    let comparison = compared(&before, &after);
    let check = check(&before, &after, &comparison, "prefetch_inputs");
    assert_eq!(check.measured, comparison.measured);
    let inside = comparison.measured.contains(check.predicted_speedup);
    assert_eq!(check.placement == Placement::Inside, inside);
    // The bound is whatif's own for the same model on the same trace.
    let context = before.side().context();
    let model = Model::with_params("prefetch_inputs", &ModelParams::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let outcome = stepcast::whatif::apply_models(&context, std::slice::from_ref(&model))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(check.trust.bound_ns, outcome.bound_ns);
    assert!(check.trust.bound_ns.is_some());
    assert_eq!(check.trust.caveats, outcome.caveats);
}

// ---------------------------------------------------------------------------------------------
// docs/accuracy.md

/// What one prediction is held to.
#[derive(Clone, Copy)]
enum Bar {
    /// |error| against AFTER as traced within this share.
    Traced(f64),
    /// |error| against the steps timed without the profiler within this share: where the
    /// profiler's own per-op cost weighs unequally on BEFORE and AFTER (the reason is in the
    /// check's `note`).
    Unprofiled(f64),
    /// The model is a ceiling: it must predict no less gain than measured, as traced (error
    /// at most this share above 0, for noise); its error is reported, not held.
    Ceiling(f64),
    /// The bar, fixed before the pair was recorded, that the model misses today: the row
    /// says so and the test fails once the model meets it (the bar then becomes the row's).
    Missed(&'static Bar),
}

impl Bar {
    /// How the table states the bar.
    fn text(&self) -> String {
        match self {
            Bar::Traced(bar) => format!("±{:.0}% traced", bar * 100.0),
            Bar::Unprofiled(bar) => format!("±{:.0}% without profiler", bar * 100.0),
            Bar::Ceiling(tolerance) => {
                format!("a ceiling (error ≤ +{:.0}% traced)", tolerance * 100.0)
            }
            Bar::Missed(bar) => format!("{}: **missed**", bar.text()),
        }
    }

    /// Whether `error` (traced) and `unprofiled_error` meet the bar; `None`: nothing is held.
    fn met(&self, error: f64, unprofiled_error: Option<f64>) -> Option<bool> {
        match self {
            Bar::Traced(bar) => Some(error.abs() <= *bar),
            Bar::Unprofiled(bar) => unprofiled_error.map(|e| e.abs() <= *bar),
            Bar::Ceiling(tolerance) => Some(error <= *tolerance),
            Bar::Missed(bar) => bar.met(error, unprofiled_error),
        }
    }
}

/// One model standing for a pair's change.
struct Check {
    model: &'static str,
    /// The model's parameters (`None`: its defaults).
    params: Option<&'static ModelParams>,
    /// `faster_hardware --cpu`, given: the host factor of the two machines measured on other
    /// configurations than the pair's ([`host_factor`]).
    host_from: Option<HostFrom>,
    bar: Bar,
    /// The predicted step must move the way the measured one did (gain or loss), as traced
    /// and, where timed, without the profiler (issue #11: `amp` must not predict a gain where
    /// the outcome is a loss).
    direction: bool,
    note: &'static str,
}

/// A before/after pair: one workload, one documented change, and the models standing for it.
struct Pair {
    before: &'static str,
    after: &'static str,
    change: &'static str,
    /// Recorded here with the same steps timed without the profiler (`*.timing.json`).
    timed: bool,
    checks: &'static [Check],
}

const fn held(model: &'static str, bar: Bar, direction: bool, note: &'static str) -> Check {
    Check {
        model,
        params: None,
        host_from: None,
        bar,
        direction,
        note,
    }
}

/// [`held`] with parameters.
const fn held_with(
    model: &'static str,
    params: &'static ModelParams,
    bar: Bar,
    direction: bool,
    note: &'static str,
) -> Check {
    Check {
        model,
        params: Some(params),
        host_from: None,
        bar,
        direction,
        note,
    }
}

const BF16: ModelParams = ModelParams {
    factor: None,
    compute: None,
    memory: None,
    cpu: None,
    copy: None,
    fraction: None,
    contention: None,
    to: None,
    dtype: Some(stepcast::whatif::AmpDtype::Bf16),
    workers: None,
    cores: None,
    threads: None,
};

/// `recompute --fraction 1`: every layer checkpointed, as `transformer-checkpoint` did.
const FRACTION_1: ModelParams = ModelParams {
    factor: None,
    compute: None,
    memory: None,
    cpu: None,
    copy: None,
    fraction: Some(1.0),
    contention: None,
    to: None,
    dtype: None,
    workers: None,
    cores: None,
    threads: None,
};

const FUSED_ON_H200: &str = "bar fixed before recording, missed (too much gain): the \
     prediction keeps 0.30 ms of the optimizer phase's host time where AFTER took 0.81. \
     AFTER's `Optimizer.step` took 0.53-0.59 ms on this host (0.41-0.57 on the H100 machine) \
     with 0.18 ms of ops and launches in it: the per-parameter Python the fused path still \
     runs around its one kernel, which the model does not keep. On the device the model keeps \
     the loop's 0.47 ms where the fused kernel took 0.14, hidden behind the host here";

const COMPILED_ON_H200: &str = "the bar was fixed before recording; the direction of a small \
     gain is not held (on the transformer the compiled step measured ×1.000: its time is the \
     FP32 attention and GEMMs, which Inductor leaves to cuBLAS and cuDNN)";

/// Where a host factor is measured: the same configurations recorded on the two machines
/// (`h100-pairs/<config>` and `<machine>/<config>`), all but the pair's own.
#[derive(Clone, Copy)]
struct HostFrom {
    machine: &'static str,
    configs: &'static [&'static str],
}

/// The configurations recorded on the H100 and on both H200 machines.
const HOST_CONFIGS: &[&str] = &[
    "mlp-fp32",
    "resnet-fp32",
    "transformer-fp32",
    "transformer-amp",
];

/// Median host time of each op name (`cpu_op` events, five or more), read with serde_json.
fn op_medians(relative: &str) -> BTreeMap<String, f64> {
    let mut by_name: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for e in raw_events(relative) {
        if e["cat"].as_str() == Some("cpu_op")
            && let Some(name) = e["name"].as_str()
        {
            by_name
                .entry(name.to_string())
                .or_default()
                .push(micros(&e, "dur"));
        }
    }
    by_name
        .into_iter()
        .filter(|(_, v)| v.len() >= 5)
        .map(|(name, mut v)| {
            v.sort_by(f64::total_cmp);
            (name, v[v.len() / 2])
        })
        .collect()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// How much faster `machine`'s host ran the same ops than the H100's: over the
/// configurations of `from` other than `config`, the median (over configurations) of the
/// median (over op names in both traces) ratio of the ops' median host times. What a user
/// would give as `--cpu` from having timed other programs on both machines.
fn host_factor(from: HostFrom, config: &str) -> f64 {
    median(
        from.configs
            .iter()
            .filter(|&&c| c != config)
            .map(|c| {
                let h100 = op_medians(&format!("{H100}/{c}.json.gz"));
                let other = op_medians(&format!("stepcast/{}/{c}.json.gz", from.machine));
                median(
                    h100.iter()
                        .filter_map(|(name, a)| other.get(name).map(|b| a / b))
                        .filter(|r| r.is_finite() && *r > 0.0)
                        .collect(),
                )
            })
            .collect(),
    )
}

/// The GPU named from its datasheet (H100 SXM → H200: the same GH100 multiprocessors at the
/// same clocks, 132 SMs at 1,980 MHz as both `nvidia-smi`s in `versions*.txt` say, HBM3 3.35
/// TB/s → HBM3e 4.8 TB/s).
const TO_H200: ModelParams = ModelParams {
    factor: None,
    compute: None,
    memory: None,
    cpu: None,
    copy: None,
    fraction: None,
    contention: None,
    to: Some("H200 SXM"),
    dtype: None,
    workers: None,
    cores: None,
    threads: None,
};

/// `faster_hardware --to h200` with the host factor of `machine` given ([`host_factor`],
/// measured on the other configurations recorded on both machines). The bar (±15 % where the
/// host is given) was fixed before these rows were computed (`h200-pairs/README.md`).
const fn to_h200(machine: &'static str, bar: Bar, note: &'static str) -> Check {
    Check {
        model: "faster_hardware",
        params: Some(&TO_H200),
        host_from: Some(HostFrom {
            machine,
            configs: HOST_CONFIGS,
        }),
        bar,
        // A missed row's traced step is host-bound where the unprofiled one is not: its
        // direction is not held.
        direction: !matches!(bar, Bar::Missed(_)),
        note,
    }
}

/// A program traced on an H100 (`h100-pairs/<config>`) and on an H200 machine
/// (`<machine>/<config>`).
const fn on_h200(before: &'static str, after: &'static str, checks: &'static [Check]) -> Pair {
    Pair {
        before,
        after,
        change: "the same program on an H200 machine instead of an H100 machine",
        timed: true,
        checks,
    }
}

const HOST_BOUND_THERE: &str = "without the profiler the H200 machine ran this program \
     faster (×1.086: device-bound on both, HBM3e); traced, its step was host-bound \
     (20.9 ms against 13.8 without the profiler): the profiler's per-op cost on a host 1.2-1.3× \
     slower (1.2 measured on the other configurations, 1.31 on this one's own ops), which the \
     H100's device-bound trace, whose host kept ahead of its device, does not expose";

/// A pair recorded on the second H200 machine (`stepcast/h200-pairs/`), its bars fixed
/// before it was recorded (its README).
const fn h200(
    before: &'static str,
    after: &'static str,
    change: &'static str,
    checks: &'static [Check],
) -> Pair {
    Pair {
        before,
        after,
        change,
        timed: true,
        checks,
    }
}

const fn h100(
    before: &'static str,
    after: &'static str,
    change: &'static str,
    checks: &'static [Check],
) -> Pair {
    Pair {
        before,
        after,
        change,
        timed: true,
        checks,
    }
}

const CPU: &str = "stepcast/cpu-pairs";

const SHARED_CORES: &str = "two threads on the two cores other processes were using (other \
     engineers compiled: load average 3 to 10 during the recording, `versions.txt`): OpenMP's \
     threads wait for each other at every op, and the step ran 4-16× slower than on one \
     thread. `faster_cpu` is the ceiling a second core could give (all host work ÷ 2), not an \
     estimate of a second thread on a busy machine";

const WORKERS_ON_QUIET_CORES: &str = "with `--workers N --cores 2 --threads 1`, on a machine \
     recorded as quiet (load average 0.9 to 1.3). **Not a blind test of what meets the bar**: \
     as the bar named it (`--workers N --cores 2`) the model missed by +54.1 %, +37.9 % and \
     +29.5 % (1, 2, 4 workers): it took the training process to have spread the loading's \
     tensor ops over both cores (a worker ×2 slower) where the script had set one thread, and \
     it shared the cores out fairly among N + 1 processes (×1.000 with 4 workers). `--threads` \
     (a worker ×1 with one thread) and the cores as a bound on the CPU work of a step \
     (training and loading over the cores) were added after those errors were seen";

/// The optimizer pairs recorded again on another host (`cpu-optimizer-pairs/xeon/`).
const FUSED_ON_A_XEON: &str = "the same programs recorded again on another host (a 2-core \
     Intel Xeon, where every earlier CPU pair ran on an AMD EPYC): a blind test on an unseen \
     host, the bars fixed before recording (`cpu-optimizer-pairs/README.md`). As recorded 3 \
     of 5 met, the model then pricing the fused op at the loop's ops beyond their dispatch × \
     7/19 (`mlp` +30.2 %, `widemlp` +19.2 %: too little gain; the fused update took 2.0 and \
     5.4 ms a step, the model gave 3.1 and 6.8). Since then the fused kernel's passes are paced \
     by the loop's multiply-add ops alone (`whatif/models/fused_optimizer/host.rs`), written \
     after these pairs were seen: not blind. On this host it prices the fused op at ×0.66 to \
     ×1.12 of the one measured (×0.82 to ×2.37 before)";

/// The loader pairs recorded again on another host (`cpu-loader-pairs/xeon/`).
const XEON_LOADER: &str = "the same programs recorded again on another host (a 2-core \
     Intel Xeon, where every earlier CPU pair ran on an AMD EPYC), no constant or mechanism of \
     the model changed since its last pair was seen: a blind test on an unseen host, the bars \
     fixed before recording (`cpu-loader-pairs/README.md`). With 4 workers on `loader` the \
     model gains the whole loading (25.0 ms a step, its bound): the cores' bound ((29.2 + 25.0) \
     / 2 ms) is below the training process's own 29.2 ms, so nothing is charged for the four \
     worker processes on two cores, and the traced steps took 28-44 ms, a period of 34.6 \
     (×1.57 without the profiler where ×1.86 is predicted): on this host the workers slowed the training process \
     beyond what the bound counts, where on the AMD host the same pairs were within +1.2 to \
     +9.6 %";

/// The same, where the traced AFTER ran faster than the traced BEFORE's CPU work allows.
const XEON_LOADER_UNTRACED_WORKERS: &str = "the same recording (a blind test on an unseen host, \
     bars fixed before recording): missed as traced, the model predicting too little gain. The \
     traced AFTER's step (58.4 and 53.9 ms with 2 and 4 workers) is below what 2 cores can do \
     with BEFORE's traced CPU work per batch (65.3 ms: 37.3 of training and 93.2 of loading, \
     over 2 cores): the workers are processes the profiler does not record, so their loading \
     runs without the profiler's cost, which BEFORE's traced loading carries (BEFORE took \
     130.6 ms a step traced, 120.0 without the profiler; with `record_shapes` each op's output \
     lands in memory not touched lately, `cpu-profiler-cost/`). Without the profiler the \
     errors are −0.7 % and −1.8 %";

const WORKERS_BLIND: &str = "a blind test of `--threads` and the cores' bound: this pair's \
     bar was committed after they were added and before it was recorded (load average 1.0 to \
     1.6), three times the loading per batch of `loader`, so that one worker's own pace binds";

const WORKERS_BLIND_OVERSUBSCRIBED: &str = "a blind test of `--threads` and the cores' bound \
     (as `heavyloader-workers2`). Traced, four workers made the step slower than two did \
     (86.5 ms against 66.7); without the profiler they did not (a median 80.1 ms against \
     83.2), and against that outcome the prediction is 1.4 % off: the profiler's cost in five \
     processes on two cores, which the model does not charge";

const WORKERS_BLIND_TWO_THREADS: &str = "a blind test of `--threads` and the cores' bound \
     (bar committed before recording; load average up to 2.1), missed: the training process \
     ran its ops on two intra-op threads, a worker could only run on a core one of them used, \
     and both 1 and 2 workers made the step slower (×0.74 and ×0.89 traced, ×0.64 and ×0.70 \
     without the profiler) where the model, counting only CPU work, predicted gains. After \
     this was seen, the model declines where the intra-op threads leave no core to the workers \
     and their parallel ops are a tenth of the training process's host time or more \
     (`input_overlap::oversubscribed`): the figures shown are the replay's, declined";

const FREE_CORES: &str = "the same programs as `cpu-pairs/`'s thread-count pairs, recorded \
     with the machine quiet (load average 0.7 to 1.1): a second intra-op thread on a free \
     core. `faster_cpu` divides all host work by 2, Python's dispatch included, which the \
     second thread does not run: the ceiling, not an estimate";

const FUSED_ON_CPU: &str = "recorded under a load average of 3 to 10 (`versions.txt`). The \
     host-side model (`whatif/models/fused_optimizer/host.rs`) was built on these two pairs, \
     then held to `cpu-optimizer-pairs/` (below); no constant of it is fitted. Here the BEFORE \
     trace's forward and backward ran 43 % slower than AFTER's, and its `aten::sqrt` took \
     314 µs per 65 k elements (median; 58 µs at least): the load, which no model of the \
     change can predict. On the CPU the default `Adam()` runs per tensor too (`foreach` is \
     the default for CUDA tensors only). Since 2026-12-01 the fused kernel's passes are paced \
     by the loop's multiply-add ops alone (written after these rows were seen): `mlp-base` \
     +21.0 % → −0.2 %, `mlp-loop` +41.4 % → +30.8 %";

const FUSED_ON_AN_UNSEEN_GPT: &str = "an unseen program (41 parameter tensors: embeddings, three \
     attention-and-MLP blocks, an untied head), its bar fixed before recording, after every \
     other CPU pair was seen (load average 0.8): a small gain, predicted within the rounds' \
     spread both traced and without the profiler";
const FUSED_WITHOUT_SHAPES: &str = "traced with `record_shapes=False`, the profiler's default: \
     a blind test of the model's reading of an update by its ops' names (bar committed after \
     that reading was written and before the pair was recorded; load average 1.1 to 1.2). It \
     counted 21 passes per parameter element for the loop (19 with shapes: the step counter's \
     one-element `add_` counts as a tensor's)";

const FUSED_OUT_OF_SAMPLE: &str = "recorded after its bar and before the host-side model was \
     written, on a quiet machine (load average under 0.9). The model first priced the fused op \
     at the loop's ops beyond their dispatch × the fused kernel's share of their traffic (7 of \
     19 passes for Adam): on the optimizer phase 5.3 ms against 1.7 measured (MLP), 7.9 \
     against 4.8 (wide MLP). Cause: the loop's `sqrt` and `div` cost more than their traffic. \
     The deep MLP's dead ReLU units leave `exp_avg_sq` exactly 0 in 25 to 77 % of a tensor's \
     elements, and PyTorch's CPU `sqrt` took 39-47 µs on a tensor without zeros and 102-213 µs \
     on those with them (`cpu-optimizer-pairs/zeros_in_sqrt.py`), while the fused kernel did \
     not slow down: a cost that depends on the values, which no trace records. Since \
     2026-12-01 the fused kernel's passes are paced by the loop's multiply-add ops alone \
     (written after these rows were seen): 1.2 ms (MLP) and 5.3 (wide MLP)";

const FUSED_PACED_BLIND: &str = "an unseen program, optimizer or option, recorded after the \
     fused kernel was paced by the loop's multiply-add passes, its bar fixed before recording \
     (`cpu-optimizer-pairs/README.md`; load average 1.2 to 1.4). The fused op itself was priced \
     within the bar's ×0.6 to ×1.4 on all four (`embmlp` ×1.10, `lstm` ×0.96, Adagrad ×0.63, \
     AMSGrad ×0.89: `host_update::the_fused_op_is_priced_near_the_one_measured`); the step met \
     ±15 % on two of four, a gain predicted and measured on all";

const FUSED_EMBEDDING_FAULTS: &str = "blind, missed by far (too little gain: ×3.7 predicted, ×7.6 \
     measured), the update priced within ×1.10 of the fused op measured (9.5 ms a step against \
     8.7; by all the loop's ops it would have been 29). The rest of the gain is outside the \
     optimizer: the loop's `sqrt` and `div` each allocate and free a result the size of the \
     25.6 MB embedding table every step, and the process took 18 700 to 18 800 minor page \
     faults a step with the loop and none with the fused update \
     (`cpu-optimizer-pairs/faults_per_step.py`): the table's gradient, zero-filled in the backward, took 16.4 ms a step after the loop's \
     update and 3.1 after the fused one. The allocator handing memory back to the kernel and \
     taking it again is a cost of the loop the model does not charge; the loop's `sqrt` (46 ms a \
     step on a state that is 0 in every row no batch touched) it no longer prices";

const FUSED_LSTM_DRIFT: &str = "blind, missed: the update priced within ×0.96 of the fused op \
     measured, but the forward and backward, which the change does not touch, ran 13 % faster \
     in AFTER's trace (the LSTM layers' `mkldnn_rnn_layer` and its backward 42.4 ms a step in \
     BEFORE, 35.9 in AFTER; not examined further); without the profiler the prediction is \
     4.2 % off";

const FUSED_FOREACH_PACED: &str = "bar fixed before recording and met as recorded. Since \
     2026-12-01 the fused kernel's passes are paced by the loop's multiply-add ops alone, and \
     the step error moved from −8.6 % to −15.1 % on the AMD host (missed) and from −4.0 % to \
     −15.0 % on the Intel Xeon (met, at the edge): on these 65 k-element tensors the \
     `_foreach_` multiply-add ops ran their passes faster than the fused kernel did (the fused \
     op priced at 2.0 ms a step against 1.7 measured on the AMD host, 1.0 against 1.3 on the \
     Intel Xeon), where pricing it by all the loop's ops gave 3.6 and 1.9";

const FUSED_PHASE_HELD: &str = "the optimizer phase itself was predicted within 14 % (CNN: \
     1.55 ms against 1.80) and 26 % (SGD: 1.46 against 1.98); the forward and backward, which \
     the change does not touch, ran 12-22 % slower in the AFTER trace than in BEFORE's, and \
     the step-level error is theirs. Without the profiler the fused update was no faster \
     either (the rounds' spread straddles ×1)";

const COMPILED_ON_CPU: &str = "the model fuses element-wise device kernels and a CPU-only \
     trace has none: it declines (the figures are the replay's, ×1.000; a row within its bar \
     says only that the gain was small). Inductor's C++ on a CPU also replaces the eager \
     dispatch of the ops it fuses, and `compare` can refuse such a pair as two workloads \
     (time-weighted op similarity 0.19 on the transformer, no kernel to match); the table \
     forces the comparison";

const WORKERS_ON_SHARED_CORES: &str = "with `--workers N --cores 2 --threads 1` (the \
     machine's 2 cores; the script set one intra-op thread). Recorded while other engineers' \
     compilers shared the two cores (load average 3 to 10): the CPU the model takes the two \
     cores to give, the training process and its workers did not get, and the prediction \
     expects more gain than came (without the profiler `num_workers=1` and `2` were slower \
     than loading in the training process: the spread of the rounds straddles ×1). The same \
     program on the machine quiet (`cpu-loader-pairs/`, below) meets the bar. History: with \
     ×9.4 these rows missed by +401 % and +107 %; capped at the cores (×2) they read +15 % and \
     −4 %, a cap added after seeing them";

/// A pair recorded on this machine's CPU (`testdata/kineto/stepcast/cpu-pairs/`: its README
/// fixed the bars before the recording), `before` and `after` configurations of that folder.
const fn cpu(
    before: &'static str,
    after: &'static str,
    change: &'static str,
    checks: &'static [Check],
) -> Pair {
    Pair {
        before,
        after,
        change,
        timed: true,
        checks,
    }
}

/// `prefetch_inputs --workers N`, as the H200 loader pairs' bars name it.
const fn workers(n: f64) -> ModelParams {
    ModelParams {
        factor: None,
        compute: None,
        memory: None,
        cpu: None,
        copy: None,
        fraction: None,
        contention: None,
        to: None,
        dtype: None,
        workers: Some(n),
        cores: None,
        threads: None,
    }
}

const WORKERS_1: ModelParams = workers(1.0);
const WORKERS_2: ModelParams = workers(2.0);
/// `--workers N --cores 2 --threads 1`: the CPU loader pairs, recorded on this 2-core machine
/// by scripts that set one intra-op thread (`torch.set_num_threads(1)`).
const WORKERS_1_ON_2_CORES: ModelParams = ModelParams {
    cores: Some(2.0),
    threads: Some(1.0),
    ..workers(1.0)
};
const WORKERS_4_ON_2_CORES: ModelParams = ModelParams {
    cores: Some(2.0),
    threads: Some(1.0),
    ..workers(4.0)
};
/// `--workers N --cores 2 --threads 2`: `cpu-loader-pairs/loader2t`, trained on two threads.
const WORKERS_1_ON_2_CORES_2_THREADS: ModelParams = ModelParams {
    threads: Some(2.0),
    ..WORKERS_1_ON_2_CORES
};
const WORKERS_2_ON_2_CORES_2_THREADS: ModelParams = ModelParams {
    threads: Some(2.0),
    ..WORKERS_2_ON_2_CORES
};
const WORKERS_2_ON_2_CORES: ModelParams = ModelParams {
    cores: Some(2.0),
    threads: Some(1.0),
    ..workers(2.0)
};
const WORKERS_4: ModelParams = workers(4.0);

const H200_LOADER: &str = "out of sample (`WORKER_TENSOR_SLOWDOWN` was fitted on the H100 \
     pair), not blind: the bar, fixed before recording (`h200-pairs/README.md`), was missed by \
     +42 to +54 % until the loading's parallel ops were split into their typical pace and their \
     stalls (`input_overlap::stalls`), written after those misses were seen. BEFORE's trace \
     ran them with 10.1 ms of stalls per batch (an `avg_pool2d` of 335 µs by the median of its \
     identical calls took up to 3.8 ms; 1.4 ms per batch on the H100's trace), and the model \
     multiplied them by the constant, as a worker's one thread does not. The same program \
     traced again on the machine later (`loader-workers0-prof_stack`, 1.1 ms of stalls) \
     predicts −7.6 %, −3.0 % and +0.1 % (1, 2, 4 workers)";

/// `prefetch_inputs --workers N` on an H200 loader pair, out of sample.
const fn loader_check(params: &'static ModelParams, direction: bool) -> Check {
    Check {
        model: "prefetch_inputs",
        params: Some(params),
        bar: Bar::Traced(0.15),
        direction,
        note: H200_LOADER,
        host_from: None,
    }
}

const LOADER_1: &[Check] = &[loader_check(&WORKERS_1, true)];
// Two workers: a gain traced (×1.03) and a loss without the profiler (×0.94): no direction to
// hold.
const LOADER_2: &[Check] = &[loader_check(&WORKERS_2, false)];
const LOADER_4: &[Check] = &[loader_check(&WORKERS_4, true)];

/// A `DataLoader(num_workers=0)` → `num_workers=N` pair recorded on the H200.
const fn h200_loader(after: &'static str, change: &'static str, checks: &'static [Check]) -> Pair {
    Pair {
        before: "stepcast/h200-pairs/loader-workers0.json.gz",
        after,
        change,
        timed: true,
        checks,
    }
}

/// Every pair in `testdata/`. The bar of issue #11: `prefetch_inputs` within 10 % on the
/// V100 pair; the H100 pairs recorded here (`testdata/kineto/stepcast/h100-pairs/`).
const PAIRS: &[Pair] = &[
    Pair {
        before: PAIR_BEFORE,
        after: PAIR_AFTER,
        change: "`DataLoader(num_workers=0)` → `num_workers=4` (ResNet-50, V100)",
        timed: false,
        checks: &[held("prefetch_inputs", Bar::Traced(0.10), true, "")],
    },
    h100(
        "stepcast/h100-pairs/mlp-fp32.json.gz",
        "mlp-amp",
        "FP32 → autocast FP16 + `GradScaler` (launch-bound MLP, H100)",
        &[held("amp", Bar::Traced(0.15), true, "")],
    ),
    h100(
        "stepcast/h100-pairs/transformer-fp32.json.gz",
        "transformer-amp",
        "FP32 → autocast FP16 + `GradScaler` (FP32 GEMMs, H100)",
        &[held(
            "amp",
            Bar::Traced(0.15),
            true,
            "held against AFTER as traced: without the profiler the AMP step is 22 ms, not \
             34; in the trace its host is the bottleneck (the profiler's per-op cost), and the \
             prediction inherits BEFORE's host, whose launch calls block on CUDA's full launch \
             queue (`cudaLaunchKernel` 164 µs on average, 8 µs median). On the device the prediction is 17.5 ms per step against 16.2 ms measured: the \
             FP32 attention kernels (`fmha_cutlass*_f32`, 16 ms, 3xTF32) are divided by 6 \
             (three times the TF32 ratio) and ran ~15× faster (FP16 selects cuDNN's flash \
             attention)",
        )],
    ),
    h100(
        "stepcast/h100-pairs/resnet-fp32.json.gz",
        "resnet-amp",
        "FP32 (TF32 convolutions) → autocast FP16 + `GradScaler` (ResNet-18, H100)",
        &[held(
            "amp",
            Bar::Missed(&Bar::Traced(0.15)),
            true,
            "−14 % on the amp model's own branch, −19 % once merged with this session's other \
             changes (the cause is not yet found; the bar, fixed before, is missed). The AFTER \
             run's host was slower than BEFORE's everywhere, autocast or not: `Optimizer.step` (outside autocast, the \
             same ops) 1.70 → 2.71 ms, `zero_grad` 71 → 112 µs, `add_` 12.1 → 17.5 µs, while \
             on the H200 machine's pair the same ops did not move (2.96 → 2.85 ms, 124 → 124 \
             µs, 18.5 → 19.1 µs) and the H100 trace recorded next (`resnet-sync`) had the fast \
             host again (`Optimizer.step` 1.92 ms). Autocast's own dispatch on the ops it does \
             not cast measured +0-9 % there: not charged. On the device the prediction is \
             3.3 + 7.4 ms (forward + backward) against 3.3 + 6.6 measured",
        )],
    ),
    h100(
        "stepcast/h100-pairs/mlp-loop.json.gz",
        "mlp-fused",
        "`Adam(foreach=False)` → `Adam(fused=True)` (MLP, H100)",
        &[held("fused_optimizer", Bar::Traced(0.10), true, "")],
    ),
    h100(
        "stepcast/h100-pairs/mlp-fp32.json.gz",
        "mlp-fused",
        "`Adam()` (foreach) → `Adam(fused=True)` (MLP, H100)",
        &[held("fused_optimizer", Bar::Traced(0.10), true, "")],
    ),
    h100(
        "stepcast/h100-pairs/mlp-eager_capturable.json.gz",
        "mlp-graphed",
        "eager → the whole step in one CUDA graph (MLP, H100)",
        &[held(
            "cuda_graphs",
            Bar::Traced(0.15),
            true,
            "held against AFTER as traced (bar fixed before the capture semantics' result was \
             seen): the prediction is the AFTER step from the traced BEFORE, and a replay runs \
             none of the host work the profiler slows, so the replayed step is the same traced \
             or not (1.63 / 1.57 ms); without the profiler the eager BEFORE is 6.0 ms, not 9.5, \
             a step the prediction never sees, so that ratio measures the profiler, not the \
             model. The device's gap between a replay's nodes (0.7 µs per node in AFTER) is \
             charged at the eager window's 1.17 µs",
        )],
    ),
    h100(
        "stepcast/h100-pairs/resnet-sync.json.gz",
        "resnet-fp32",
        "`torch.cuda.synchronize()` after forward, backward and step → none (ResNet-18, H100)",
        &[held("remove_syncs", Bar::Traced(0.15), true, "")],
    ),
    h100(
        "stepcast/h100-pairs/loader-workers0.json.gz",
        "loader-workers4",
        "`DataLoader(num_workers=0)` → `num_workers=4` (ResNet-18, CPU-side tensor \
         preprocessing, H100)",
        &[held(
            "prefetch_inputs",
            Bar::Traced(0.15),
            true,
            "in sample: this pair fitted `WORKER_TENSOR_SLOWDOWN` (10.2: AFTER's 4 workers \
             delivered a batch per 41.9 ms, 167.7 ms per batch in a worker, against 13.6 ms of \
             parallel tensor ops at their typical pace, 1.4 ms of their stalls and 27.2 ms of \
             serial and untraced work per batch in the training process); the bar holds the floor's mechanism (the step is the workers' pace, not \
             the loading removed: ×3.19 before the floor), not the constant",
        )],
    ),
    h100(
        "stepcast/h100-pairs/transformer-fp32.json.gz",
        "transformer-compiled",
        "eager → `torch.compile(model)` (transformer, H100)",
        &[held(
            "kernel_fusion",
            Bar::Traced(0.15),
            true,
            "Inductor also fuses across reductions and GEMM epilogues, which the model \
             does not; the model fuses only chains whose kernels read what the one before \
             wrote (one op's kernels, or the previous op's output shape among the next op's \
             inputs)",
        )],
    ),
    h200_loader(
        "stepcast/h200-pairs/loader-workers1.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=1` (ResNet-18, CPU-side tensor \
         preprocessing, H200)",
        LOADER_1,
    ),
    h200_loader(
        "stepcast/h200-pairs/loader-workers2.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=2` (ResNet-18, CPU-side tensor \
         preprocessing, H200)",
        LOADER_2,
    ),
    h200_loader(
        "stepcast/h200-pairs/loader-workers4.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=4` (ResNet-18, CPU-side tensor \
         preprocessing, H200)",
        LOADER_4,
    ),
    Pair {
        before: "stepcast/h200-pairs/mlp-eager_capturable.json.gz",
        after: "stepcast/h200-pairs/mlp-graphed.json.gz",
        change: "eager → the whole step in one CUDA graph (MLP, H200)",
        timed: true,
        checks: &[held(
            "cuda_graphs",
            Bar::Missed(&Bar::Unprofiled(0.15)),
            true,
            "out of sample. The bar fixed before recording (`h200-pairs/README.md`) was ±15 % \
             without the profiler, and the prediction misses it (−21.5 %: ×6.36 predicted, ×4.99 \
             measured); traced it is +10.6 %. Without the profiler the eager BEFORE is 7.2 ms, \
             not 10.7: a step the prediction, made from the traced BEFORE, never sees, while \
             the replayed AFTER is about the same either way (1.51 / 1.45 ms)",
        )],
    },
    on_h200(
        "stepcast/h100-pairs/mlp-fp32.json.gz",
        "stepcast/h200/mlp-fp32.json.gz",
        &[to_h200("h200", Bar::Traced(0.15), "")],
    ),
    on_h200(
        "stepcast/h100-pairs/resnet-fp32.json.gz",
        "stepcast/h200/resnet-fp32.json.gz",
        &[to_h200("h200", Bar::Traced(0.15), "")],
    ),
    on_h200(
        "stepcast/h100-pairs/transformer-fp32.json.gz",
        "stepcast/h200/transformer-fp32.json.gz",
        &[to_h200("h200", Bar::Traced(0.15), "")],
    ),
    on_h200(
        "stepcast/h100-pairs/transformer-amp.json.gz",
        "stepcast/h200/transformer-amp.json.gz",
        &[to_h200("h200", Bar::Traced(0.15), "")],
    ),
    on_h200(
        "stepcast/h100-pairs/mlp-fp32.json.gz",
        "stepcast/h200-pairs/mlp-fp32.json.gz",
        &[to_h200("h200-pairs", Bar::Traced(0.15), "")],
    ),
    on_h200(
        "stepcast/h100-pairs/resnet-fp32.json.gz",
        "stepcast/h200-pairs/resnet-fp32.json.gz",
        &[to_h200(
            "h200-pairs",
            Bar::Missed(&Bar::Traced(0.15)),
            HOST_BOUND_THERE,
        )],
    ),
    on_h200(
        "stepcast/h100-pairs/transformer-fp32.json.gz",
        "stepcast/h200-pairs/transformer-fp32.json.gz",
        &[to_h200("h200-pairs", Bar::Traced(0.15), "")],
    ),
    on_h200(
        "stepcast/h100-pairs/transformer-amp.json.gz",
        "stepcast/h200-pairs/transformer-amp.json.gz",
        &[to_h200("h200-pairs", Bar::Traced(0.15), "")],
    ),
    h200(
        "stepcast/h200-pairs/mlp-fp32.json.gz",
        "stepcast/h200-pairs/mlp-amp.json.gz",
        "FP32 → autocast FP16 + `GradScaler` (launch-bound MLP, H200)",
        &[held("amp", Bar::Traced(0.15), true, "")],
    ),
    h200(
        "stepcast/h200-pairs/mlp-fp32.json.gz",
        "stepcast/h200-pairs/mlp-bf16.json.gz",
        "FP32 → autocast BF16 (launch-bound MLP, H200)",
        &[held_with("amp", &BF16, Bar::Traced(0.15), true, "")],
    ),
    h200(
        "stepcast/h200-pairs/transformer-fp32.json.gz",
        "stepcast/h200-pairs/transformer-amp.json.gz",
        "FP32 → autocast FP16 + `GradScaler` (FP32 GEMMs, H200)",
        &[held("amp", Bar::Traced(0.15), true, "")],
    ),
    h200(
        "stepcast/h200-pairs/transformer-fp32.json.gz",
        "stepcast/h200-pairs/transformer-bf16.json.gz",
        "FP32 → autocast BF16 (FP32 GEMMs, H200)",
        &[held_with("amp", &BF16, Bar::Traced(0.15), true, "")],
    ),
    h200(
        "stepcast/h200-pairs/resnet-fp32.json.gz",
        "stepcast/h200-pairs/resnet-amp.json.gz",
        "FP32 → autocast FP16 + `GradScaler` (ResNet-18, H200)",
        &[held("amp", Bar::Traced(0.15), true, "")],
    ),
    h200(
        "stepcast/h200-pairs/resnet-fp32.json.gz",
        "stepcast/h200-pairs/resnet-bf16.json.gz",
        "FP32 → autocast BF16 (ResNet-18, H200)",
        &[held_with("amp", &BF16, Bar::Traced(0.15), true, "")],
    ),
    // The rest of `h200-pairs/README.md`'s bars, fixed before the recording; their rows were
    // computed a session after it, with the models as they stood then.
    h200(
        "stepcast/h200-pairs/mlp-loop.json.gz",
        "stepcast/h200-pairs/mlp-fused.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (MLP, H200)",
        &[held(
            "fused_optimizer",
            Bar::Missed(&Bar::Traced(0.10)),
            true,
            FUSED_ON_H200,
        )],
    ),
    h200(
        "stepcast/h200-pairs/resnet-sync.json.gz",
        "stepcast/h200-pairs/resnet-fp32.json.gz",
        "`torch.cuda.synchronize()` after forward, backward and step → none (ResNet-18, H200)",
        &[held("remove_syncs", Bar::Traced(0.15), true, "")],
    ),
    h200(
        "stepcast/h200-pairs/transformer-fp32.json.gz",
        "stepcast/h200-pairs/transformer-checkpoint.json.gz",
        "activation checkpointing of every encoder layer (transformer, H200)",
        &[held_with(
            "recompute",
            &FRACTION_1,
            Bar::Traced(0.15),
            true,
            "the model inserts every kernel of the checkpointed forward again before its \
             backward, with its recorded time; the step is device-bound, and AFTER's backward \
             took 30.3 ms more on the device (61.1 → 91.4 ms), the forward's 30.3 ms",
        )],
    ),
    h200(
        "stepcast/h200-pairs/transformer-fp32.json.gz",
        "stepcast/h200-pairs/transformer-compiled.json.gz",
        "eager → `torch.compile(model)` (transformer, H200)",
        &[held(
            "kernel_fusion",
            Bar::Traced(0.15),
            false,
            COMPILED_ON_H200,
        )],
    ),
    h200(
        "stepcast/h200-pairs/mlp-fp32.json.gz",
        "stepcast/h200-pairs/mlp-compiled.json.gz",
        "eager → `torch.compile(model)` (launch-bound MLP, H200)",
        &[held(
            "kernel_fusion",
            Bar::Traced(0.15),
            false,
            COMPILED_ON_H200,
        )],
    ),
    // Recorded on this machine's CPU; the bars are those its README fixed before recording.
    cpu(
        "stepcast/cpu-pairs/mlp-threads1.json.gz",
        "stepcast/cpu-pairs/mlp-threads2.json.gz",
        "`torch.set_num_threads(1)` → `2` (MLP, shared 2-core CPU)",
        &[held("faster_cpu", Bar::Ceiling(0.05), false, SHARED_CORES)],
    ),
    cpu(
        "stepcast/cpu-pairs/cnn-threads1.json.gz",
        "stepcast/cpu-pairs/cnn-threads2.json.gz",
        "`torch.set_num_threads(1)` → `2` (small CNN, shared 2-core CPU)",
        &[held("faster_cpu", Bar::Ceiling(0.05), false, SHARED_CORES)],
    ),
    cpu(
        "stepcast/cpu-pairs/transformer-threads1.json.gz",
        "stepcast/cpu-pairs/transformer-threads2.json.gz",
        "`torch.set_num_threads(1)` → `2` (transformer, shared 2-core CPU)",
        &[held("faster_cpu", Bar::Ceiling(0.05), false, SHARED_CORES)],
    ),
    cpu(
        "stepcast/cpu-pairs/mlp-loop.json.gz",
        "stepcast/cpu-pairs/mlp-fused.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (MLP, CPU)",
        &[held(
            "fused_optimizer",
            Bar::Missed(&Bar::Traced(0.15)),
            false,
            FUSED_ON_CPU,
        )],
    ),
    cpu(
        "stepcast/cpu-pairs/mlp-base.json.gz",
        "stepcast/cpu-pairs/mlp-fused.json.gz",
        "`Adam()` (foreach) → `Adam(fused=True)` (MLP, CPU)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.15),
            false,
            FUSED_ON_CPU,
        )],
    ),
    cpu(
        "stepcast/cpu-pairs/mlp-base.json.gz",
        "stepcast/cpu-pairs/mlp-compiled.json.gz",
        "eager → `torch.compile(model)` (MLP, CPU)",
        &[held(
            "kernel_fusion",
            Bar::Missed(&Bar::Traced(0.15)),
            false,
            COMPILED_ON_CPU,
        )],
    ),
    cpu(
        "stepcast/cpu-pairs/cnn-base.json.gz",
        "stepcast/cpu-pairs/cnn-compiled.json.gz",
        "eager → `torch.compile(model)` (small CNN, CPU)",
        &[held(
            "kernel_fusion",
            Bar::Traced(0.15),
            false,
            COMPILED_ON_CPU,
        )],
    ),
    cpu(
        "stepcast/cpu-pairs/transformer-base.json.gz",
        "stepcast/cpu-pairs/transformer-compiled.json.gz",
        "eager → `torch.compile(model)` (transformer, CPU)",
        &[held(
            "kernel_fusion",
            Bar::Missed(&Bar::Traced(0.15)),
            false,
            COMPILED_ON_CPU,
        )],
    ),
    cpu(
        "stepcast/cpu-pairs/loader-workers0.json.gz",
        "stepcast/cpu-pairs/loader-workers1.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=1` (small CNN, CPU-side preprocessing, \
         shared 2-core CPU)",
        &[Check {
            model: "prefetch_inputs",
            params: Some(&WORKERS_1_ON_2_CORES),
            bar: Bar::Missed(&Bar::Traced(0.10)),
            direction: false,
            note: WORKERS_ON_SHARED_CORES,
            host_from: None,
        }],
    ),
    cpu(
        "stepcast/cpu-pairs/loader-workers0.json.gz",
        "stepcast/cpu-pairs/loader-workers2.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=2` (small CNN, CPU-side preprocessing, \
         shared 2-core CPU)",
        &[Check {
            model: "prefetch_inputs",
            params: Some(&WORKERS_2_ON_2_CORES),
            bar: Bar::Missed(&Bar::Traced(0.10)),
            direction: false,
            note: WORKERS_ON_SHARED_CORES,
            host_from: None,
        }],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/mlp-adam-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/mlp-adam-fused.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (MLP, quiet CPU)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.15),
            true,
            FUSED_OUT_OF_SAMPLE,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/mlp-adam-foreach.json.gz",
        "stepcast/cpu-optimizer-pairs/mlp-adam-fused.json.gz",
        "`Adam(foreach=True)` → `Adam(fused=True)` (MLP, quiet CPU)",
        &[held(
            "fused_optimizer",
            Bar::Missed(&Bar::Traced(0.15)),
            true,
            FUSED_FOREACH_PACED,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/mlp-sgd-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/mlp-sgd-fused.json.gz",
        "`SGD(momentum=0.9, foreach=False)` → `fused=True` (MLP, quiet CPU)",
        &[held(
            "fused_optimizer",
            Bar::Missed(&Bar::Traced(0.15)),
            false,
            FUSED_PHASE_HELD,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/widemlp-adam-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/widemlp-adam-fused.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (4 linear layers of width 1024, quiet CPU)",
        &[held(
            "fused_optimizer",
            Bar::Missed(&Bar::Traced(0.15)),
            true,
            FUSED_OUT_OF_SAMPLE,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/gelumlp-adam-loop-noshapes.json.gz",
        "stepcast/cpu-optimizer-pairs/gelumlp-adam-fused-noshapes.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (6 linear layers of width 768 with GELU, \
         traced without shapes, quiet CPU)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.20),
            true,
            FUSED_WITHOUT_SHAPES,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/gpt-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/gpt-fused.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (tiny causal GPT, quiet CPU)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.15),
            true,
            FUSED_ON_AN_UNSEEN_GPT,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/cnn-adam-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/cnn-adam-fused.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (small CNN, quiet CPU)",
        &[held(
            "fused_optimizer",
            Bar::Missed(&Bar::Traced(0.15)),
            false,
            FUSED_PHASE_HELD,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/transformer-adamw-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/transformer-adamw-fused.json.gz",
        "`AdamW(foreach=False)` → `AdamW(fused=True)` (transformer, quiet CPU)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.15),
            true,
            FUSED_OUT_OF_SAMPLE,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/xeon/mlp-adam-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/xeon/mlp-adam-fused.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (MLP, quiet Intel Xeon)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.15),
            true,
            FUSED_ON_A_XEON,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/xeon/mlp-adam-foreach.json.gz",
        "stepcast/cpu-optimizer-pairs/xeon/mlp-adam-fused.json.gz",
        "`Adam(foreach=True)` → `Adam(fused=True)` (MLP, quiet Intel Xeon)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.15),
            true,
            FUSED_FOREACH_PACED,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/xeon/widemlp-adam-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/xeon/widemlp-adam-fused.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (4 linear layers of width 1024, quiet Intel \
         Xeon)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.15),
            true,
            FUSED_ON_A_XEON,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/xeon/cnn-adam-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/xeon/cnn-adam-fused.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (small CNN, quiet Intel Xeon)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.15),
            true,
            FUSED_ON_A_XEON,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/xeon/transformer-adamw-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/xeon/transformer-adamw-fused.json.gz",
        "`AdamW(foreach=False)` → `AdamW(fused=True)` (transformer, quiet Intel Xeon)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.15),
            true,
            FUSED_ON_A_XEON,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/xeon/embmlp-adam-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/xeon/embmlp-adam-fused.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (a 50 000 × 128 embedding table with a dense \
         gradient, quiet Intel Xeon)",
        &[held(
            "fused_optimizer",
            Bar::Missed(&Bar::Traced(0.15)),
            true,
            FUSED_EMBEDDING_FAULTS,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/xeon/lstm-adam-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/xeon/lstm-adam-fused.json.gz",
        "`Adam(foreach=False)` → `Adam(fused=True)` (2-layer LSTM, quiet Intel Xeon)",
        &[held(
            "fused_optimizer",
            Bar::Missed(&Bar::Traced(0.15)),
            true,
            FUSED_LSTM_DRIFT,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/xeon/mlp-adagrad-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/xeon/mlp-adagrad-fused.json.gz",
        "`Adagrad(foreach=False)` → `Adagrad(fused=True)` (MLP, quiet Intel Xeon)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.15),
            true,
            FUSED_PACED_BLIND,
        )],
    ),
    cpu(
        "stepcast/cpu-optimizer-pairs/xeon/gelumlp-amsgrad-loop.json.gz",
        "stepcast/cpu-optimizer-pairs/xeon/gelumlp-amsgrad-fused.json.gz",
        "`Adam(amsgrad=True, foreach=False)` → `fused=True` (6 linear layers of width 768 with \
         GELU, quiet Intel Xeon)",
        &[held(
            "fused_optimizer",
            Bar::Traced(0.15),
            true,
            FUSED_PACED_BLIND,
        )],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/loader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/loader-workers1.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=1` (small CNN, CPU-side \
         preprocessing, quiet 2-core CPU)",
        &[Check {
            model: "prefetch_inputs",
            params: Some(&WORKERS_1_ON_2_CORES),
            bar: Bar::Traced(0.10),
            direction: false,
            note: WORKERS_ON_QUIET_CORES,
            host_from: None,
        }],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/loader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/loader-workers2.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=2` (small CNN, CPU-side \
         preprocessing, quiet 2-core CPU)",
        &[Check {
            model: "prefetch_inputs",
            params: Some(&WORKERS_2_ON_2_CORES),
            bar: Bar::Traced(0.10),
            direction: false,
            note: WORKERS_ON_QUIET_CORES,
            host_from: None,
        }],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/loader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/loader-workers4.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=4` (more workers than cores) (small CNN, CPU-side \
         preprocessing, quiet 2-core CPU)",
        &[Check {
            model: "prefetch_inputs",
            params: Some(&WORKERS_4_ON_2_CORES),
            bar: Bar::Traced(0.10),
            direction: false,
            note: WORKERS_ON_QUIET_CORES,
            host_from: None,
        }],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/heavyloader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/heavyloader-workers1.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=1` (small CNN, 224 × 224 images, quiet 2-core \
         CPU)",
        &[Check {
            model: "prefetch_inputs",
            params: Some(&WORKERS_1_ON_2_CORES),
            bar: Bar::Traced(0.10),
            direction: false,
            note: WORKERS_BLIND,
            host_from: None,
        }],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/heavyloader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/heavyloader-workers2.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=2` (small CNN, 224 × 224 images, quiet 2-core \
         CPU)",
        &[Check {
            model: "prefetch_inputs",
            params: Some(&WORKERS_2_ON_2_CORES),
            bar: Bar::Missed(&Bar::Traced(0.10)),
            direction: false,
            note: WORKERS_BLIND,
            host_from: None,
        }],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/heavyloader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/heavyloader-workers4.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=4` (small CNN, 224 × 224 images, quiet 2-core \
         CPU)",
        &[Check {
            model: "prefetch_inputs",
            params: Some(&WORKERS_4_ON_2_CORES),
            bar: Bar::Missed(&Bar::Traced(0.10)),
            direction: false,
            note: WORKERS_BLIND_OVERSUBSCRIBED,
            host_from: None,
        }],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/loader2t-workers0.json.gz",
        "stepcast/cpu-loader-pairs/loader2t-workers1.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=1` (small CNN, training on two intra-op threads, quiet 2-core \
         CPU)",
        &[Check {
            model: "prefetch_inputs",
            params: Some(&WORKERS_1_ON_2_CORES_2_THREADS),
            bar: Bar::Missed(&Bar::Traced(0.10)),
            direction: false,
            note: WORKERS_BLIND_TWO_THREADS,
            host_from: None,
        }],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/loader2t-workers0.json.gz",
        "stepcast/cpu-loader-pairs/loader2t-workers2.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=2` (small CNN, training on two intra-op threads, quiet 2-core \
         CPU)",
        &[Check {
            model: "prefetch_inputs",
            params: Some(&WORKERS_2_ON_2_CORES_2_THREADS),
            bar: Bar::Missed(&Bar::Traced(0.10)),
            direction: false,
            note: WORKERS_BLIND_TWO_THREADS,
            host_from: None,
        }],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/xeon/loader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/xeon/loader-workers1.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=1` (small CNN, CPU-side preprocessing, quiet 2-core \
         Intel Xeon)",
        &[held_with(
            "prefetch_inputs",
            &WORKERS_1_ON_2_CORES,
            Bar::Traced(0.10),
            true,
            XEON_LOADER,
        )],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/xeon/loader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/xeon/loader-workers2.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=2` (small CNN, CPU-side preprocessing, quiet 2-core \
         Intel Xeon)",
        &[held_with(
            "prefetch_inputs",
            &WORKERS_2_ON_2_CORES,
            Bar::Traced(0.10),
            true,
            XEON_LOADER,
        )],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/xeon/loader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/xeon/loader-workers4.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=4` (small CNN, CPU-side preprocessing, quiet 2-core \
         Intel Xeon)",
        &[held_with(
            "prefetch_inputs",
            &WORKERS_4_ON_2_CORES,
            Bar::Missed(&Bar::Traced(0.10)),
            true,
            XEON_LOADER,
        )],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/xeon/heavyloader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/xeon/heavyloader-workers1.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=1` (small CNN, 224 × 224 images, quiet 2-core \
         Intel Xeon)",
        &[held_with(
            "prefetch_inputs",
            &WORKERS_1_ON_2_CORES,
            Bar::Traced(0.10),
            true,
            XEON_LOADER,
        )],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/xeon/heavyloader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/xeon/heavyloader-workers2.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=2` (small CNN, 224 × 224 images, quiet 2-core \
         Intel Xeon)",
        &[held_with(
            "prefetch_inputs",
            &WORKERS_2_ON_2_CORES,
            Bar::Missed(&Bar::Traced(0.10)),
            true,
            XEON_LOADER_UNTRACED_WORKERS,
        )],
    ),
    cpu(
        "stepcast/cpu-loader-pairs/xeon/heavyloader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/xeon/heavyloader-workers4.json.gz",
        "`DataLoader(num_workers=0)` → `num_workers=4` (small CNN, 224 × 224 images, quiet 2-core \
         Intel Xeon)",
        &[held_with(
            "prefetch_inputs",
            &WORKERS_4_ON_2_CORES,
            Bar::Missed(&Bar::Traced(0.10)),
            true,
            XEON_LOADER_UNTRACED_WORKERS,
        )],
    ),
    cpu(
        "stepcast/cpu-thread-pairs/mlp-threads1.json.gz",
        "stepcast/cpu-thread-pairs/mlp-threads2.json.gz",
        "`torch.set_num_threads(1)` → `2` (MLP, quiet 2-core CPU)",
        &[held("faster_cpu", Bar::Ceiling(0.05), false, FREE_CORES)],
    ),
    cpu(
        "stepcast/cpu-thread-pairs/cnn-threads1.json.gz",
        "stepcast/cpu-thread-pairs/cnn-threads2.json.gz",
        "`torch.set_num_threads(1)` → `2` (small CNN, quiet 2-core CPU)",
        &[held("faster_cpu", Bar::Ceiling(0.05), false, FREE_CORES)],
    ),
    cpu(
        "stepcast/cpu-thread-pairs/transformer-threads1.json.gz",
        "stepcast/cpu-thread-pairs/transformer-threads2.json.gz",
        "`torch.set_num_threads(1)` → `2` (transformer, quiet 2-core CPU)",
        &[held("faster_cpu", Bar::Ceiling(0.05), false, FREE_CORES)],
    ),
    cpu(
        "stepcast/cpu-recompute-pairs/cnn-base.json.gz",
        "stepcast/cpu-recompute-pairs/cnn-checkpoint.json.gz",
        "each convolution with its batch norm and ReLU, and the head, under \
         `torch.utils.checkpoint` (small CNN, quiet CPU)",
        &[held_with(
            "recompute",
            &FRACTION_1,
            Bar::Traced(0.15),
            true,
            RECOMPUTE_ON_CPU_CNN,
        )],
    ),
    cpu(
        "stepcast/cpu-recompute-pairs/mlp-base.json.gz",
        "stepcast/cpu-recompute-pairs/mlp-checkpoint.json.gz",
        "every linear layer with its ReLU under `torch.utils.checkpoint` (MLP, quiet CPU)",
        &[held_with(
            "recompute",
            &FRACTION_1,
            Bar::Missed(&Bar::Traced(0.15)),
            false,
            RECOMPUTE_ON_CPU_MLP,
        )],
    ),
    cpu(
        "stepcast/cpu-recompute-pairs/transformer-base.json.gz",
        "stepcast/cpu-recompute-pairs/transformer-checkpoint.json.gz",
        "each encoder layer under `torch.utils.checkpoint` (transformer, quiet CPU)",
        &[held_with(
            "recompute",
            &FRACTION_1,
            Bar::Traced(0.15),
            true,
            RECOMPUTE_ON_CPU,
        )],
    ),
    cpu(
        "stepcast/cpu-recompute-pairs/gpt-base.json.gz",
        "stepcast/cpu-recompute-pairs/gpt-checkpoint.json.gz",
        "each block under `torch.utils.checkpoint` (tiny causal GPT, quiet CPU)",
        RECOMPUTE_GPT,
    ),
    cpu(
        "stepcast/cpu-recompute-pairs/gpt-base.json.gz",
        "stepcast/cpu-recompute-pairs/gpt-reentrant.json.gz",
        "each block under `torch.utils.checkpoint(use_reentrant=True)` (tiny causal GPT, quiet \
         CPU)",
        RECOMPUTE_GPT,
    ),
    cpu(
        "stepcast/cpu-recompute-pairs/resmlp-base.json.gz",
        "stepcast/cpu-recompute-pairs/resmlp-checkpoint.json.gz",
        "each residual MLP block under `torch.utils.checkpoint` (quiet CPU)",
        &[held(
            "recompute",
            Bar::Missed(&Bar::Traced(0.15)),
            false,
            RECOMPUTE_ON_CPU_RESMLP,
        )],
    ),
    cpu(
        "stepcast/cpu-gist-pairs/bigcnn-base.json.gz",
        "stepcast/cpu-gist-pairs/bigcnn-gist.json.gz",
        "every saved FP32 activation stashed in FP16 (`saved_tensors_hooks`; small CNN at batch \
         32, quiet CPU)",
        &[held_with(
            "gist",
            &FRACTION_1,
            Bar::Traced(0.15),
            true,
            GIST_ON_CPU,
        )],
    ),
    cpu(
        "stepcast/cpu-gist-pairs/bigresmlp-base.json.gz",
        "stepcast/cpu-gist-pairs/bigresmlp-gist.json.gz",
        "every saved FP32 activation stashed in FP16 (residual MLP at batch 1024, loaded CPU)",
        &[held_with(
            "gist",
            &FRACTION_1,
            Bar::Traced(0.15),
            true,
            GIST_ON_CPU_RESMLP,
        )],
    ),
    cpu(
        "stepcast/cpu-gist-pairs/rerun/bigresmlp-base.json.gz",
        "stepcast/cpu-gist-pairs/rerun/bigresmlp-gist.json.gz",
        "every saved FP32 activation stashed in FP16 (residual MLP at batch 1024, recorded \
         again, quiet CPU)",
        &[held_with(
            "gist",
            &FRACTION_1,
            Bar::Traced(0.15),
            true,
            GIST_ON_CPU_RERUN,
        )],
    ),
    cpu(
        "stepcast/cpu-gist-pairs/biggpt-base.json.gz",
        "stepcast/cpu-gist-pairs/biggpt-gist.json.gz",
        "every saved FP32 activation stashed in FP16 (tiny GPT at 64 × 64 tokens, quiet CPU)",
        &[held_with(
            "gist",
            &FRACTION_1,
            Bar::Missed(&Bar::Traced(0.15)),
            true,
            GIST_ON_CPU_GPT,
        )],
    ),
    cpu(
        "stepcast/cpu-gist-pairs/bigtransformer-base.json.gz",
        "stepcast/cpu-gist-pairs/bigtransformer-gist.json.gz",
        "every saved FP32 activation stashed in FP16 (transformer at 32 × 64 tokens, quiet CPU)",
        &[held_with(
            "gist",
            &FRACTION_1,
            Bar::Unprofiled(0.15),
            // As traced the two steps are within each other's spread (×1.008): no direction.
            false,
            GIST_ON_CPU_TRANSFORMER,
        )],
    ),
    cpu(
        "stepcast/cpu-batchnorm-pairs/cnn-base.json.gz",
        "stepcast/cpu-batchnorm-pairs/cnn-bnfused.json.gz",
        "each batch norm with its ReLU under `torch.compile` (small CNN at batch 8, quiet CPU)",
        &[held(
            "reconstruct_batchnorm",
            Bar::Missed(&Bar::Traced(0.05)),
            false,
            BATCHNORM_COMPILED,
        )],
    ),
    cpu(
        "stepcast/cpu-batchnorm-pairs/bigcnn-base.json.gz",
        "stepcast/cpu-batchnorm-pairs/bigcnn-bnfused.json.gz",
        "each batch norm with its ReLU under `torch.compile` (small CNN at batch 32, quiet CPU)",
        &[held(
            "reconstruct_batchnorm",
            Bar::Missed(&Bar::Traced(0.05)),
            false,
            BATCHNORM_COMPILED,
        )],
    ),
    cpu(
        "stepcast/cpu-batchnorm-pairs/rerun/cnn-base.json.gz",
        "stepcast/cpu-batchnorm-pairs/rerun/cnn-bnrelu.json.gz",
        "each batch norm with its ReLU as one hand-fused function (small CNN at batch 8, quiet \
         CPU)",
        &[held(
            "reconstruct_batchnorm",
            Bar::Missed(&Bar::Traced(0.05)),
            false,
            BATCHNORM_BY_HAND_SMALL,
        )],
    ),
    cpu(
        "stepcast/cpu-batchnorm-pairs/rerun/bigcnn-base.json.gz",
        "stepcast/cpu-batchnorm-pairs/rerun/bigcnn-bnrelu.json.gz",
        "each batch norm with its ReLU as one hand-fused function (small CNN at batch 32, quiet \
         CPU)",
        &[held(
            "reconstruct_batchnorm",
            Bar::Traced(0.05),
            true,
            BATCHNORM_BY_HAND,
        )],
    ),
];

/// The CPU `reconstruct_batchnorm` pairs (`cpu-batchnorm-pairs/README.md`), `torch.compile`.
const BATCHNORM_COMPILED: &str = "the first pairs of the model, on a CPU-only trace (it declined \
     there before), their bar (±5 % traced, and the direction) fixed before recording with the \
     model's CPU rule (each batch-norm op's host time halved, the element-wise ops beside it \
     removed): missed, the change making the step far slower. Inductor compiled each batch norm, \
     its parameters requiring gradients, into a training graph whose forward took 26.4 ms on \
     one (32, 32, 32, 32) batch where eager took 3.5 and the same compiled module without \
     gradients 1.6 (`cpu-batchnorm-pairs/bn_probe.py`, torch 2.15): a cost of the compiler's \
     training graph on this CPU, not of the restructuring, which the `bnrelu` rows measure \
     without it";

/// The hand-fused `BatchNormReLU` pair at batch 8.
const BATCHNORM_BY_HAND_SMALL: &str = "the restructuring without the compiler's training graph: \
     a `torch.autograd.Function` whose forward and backward are each one compiled function \
     (checked against eager by `cpu-batchnorm-pairs/bn_probe.py`), its bar fixed after the \
     `bnfused` rows were seen and before it was recorded; missed. At batch 8 the fused function \
     took as long as the eager ops it replaced (4.9 ms a step, 2.3 forward and 2.6 backward, \
     against 2.6 and 2.0 for the batch norms and ReLUs): on tensors of at most 1 MiB its fixed \
     cost per call (the `Function`, the compiled functions' guards and wrappers, the running \
     statistics' updates) is as large as the passes it saves, where the model halves each \
     batch-norm op's time, its dispatch included. Without the profiler the step moved ×1.011";

/// The hand-fused `BatchNormReLU` pair at batch 32.
const BATCHNORM_BY_HAND: &str = "the same function and bar as the row above (fixed before \
     recording), met: on four times the batch the fused passes saved what the model takes off \
     (15.0 ms a step traced, 14.5 predicted)";

/// The CPU `gist` pairs (`cpu-gist-pairs/README.md`).
const GIST_ON_CPU: &str = "the first pairs of the model on a CPU-only trace (Gist's 16-bit \
     Delayed Precision Reduction, as `torch.autograd.graph.saved_tensors_hooks` runs it), its bar \
     fixed before recording: an encode host task after each forward op, a decode before its \
     first backward op, each one element-wise pass at the trace's own pace. The casts took 4.9 \
     ms a step as traced (about 2.0 encoding, 2.9 decoding), where the model inserts 6.7; the step \
     grew by 3.6 ms traced and 3.7 without the profiler. The memory saved, 11 MiB by the model, \
     against 14.7 MiB less stashed as counted by the hooks (the model also takes off the largest \
     activation, decoded at full size during its backward)";
const GIST_ON_CPU_RESMLP: &str = "held blind, then seen: the traces ran under another \
     process's load (load average 0.09 at the start, 2.55 at the end: the same `aten::addmm` \
     took 8 ms in some steps and 16-22 in others, BEFORE and AFTER alike; the rounds without \
     the profiler ranged from 225 to 439 ms), and the model, pricing each pass at `aten::gelu`'s \
     pace (1.9 GB/s), predicted ×0.874 (+2.3 %) where the casts had run three times faster: \
     the miss in the price hid in the load. After this was seen the CPU pace is read from the \
     ops that compute next to nothing per element (`models::ELEMENTWISE_OP`: ReLU, clamps, \
     arithmetic), and ops that keep no tensor for their backward count no activation \
     (`activations::KEEPS_NOTHING`, after the GPT pair): the figures shown are that model's, \
     not blind";
const GIST_ON_CPU_RERUN: &str = "the `bigresmlp` pair recorded again under its bar, the machine \
     quiet (load average 1.17 to 1.03), after the CPU pace was changed to the plain \
     element-wise ops (a blind test of it): the casts took 12.7 ms a step traced, the model \
     inserts 10.4 (`aten::add`'s pace, 8.6 GB/s); without the profiler the step grew by 7.7 ms";
const GIST_ON_CPU_GPT: &str = "an unseen program, its bar fixed after the first two pairs were \
     seen and before it was recorded: met blind (−12.0 % traced, +0.3 % without the profiler), \
     with the memory bar (±30 %) missed: the model counted 184 MiB of activations where autograd \
     saved 106, each view of a tensor (`transpose`, `split`, `view`, `flatten`, `reshape`: 74 \
     MiB) and each addition (14 MiB) counted by its first input. After this was seen those ops \
     keep nothing (`activations::KEEPS_NOTHING`): 96 MiB, and 40 MiB saved against 53 less \
     stashed; the step traced is then missed. The traced AFTER paid, besides its casts (41 ms a \
     step), about 60 ms more elsewhere, most in the backward ops that read the decoded tensors \
     (`GeluBackward0` +20, `AddmmBackward0` +26), and one step of 642 ms, where the untraced step grew by 41 ms in all: with \
     `record_shapes` the profiler keeps every op's inputs (`cpu-profiler-cost/`), so each \
     decoded FP32 tensor lands in memory not touched before, a cost of the traced run";
const GIST_ON_CPU_TRANSFORMER: &str = "an unseen program, its bar fixed after the GPT pair was \
     seen (on the outcome without the profiler, for the reason there) and before it was \
     recorded: met blind with both fixes. The casts took 10.9 ms a step traced and the step \
     grew by 10.9 ms without the profiler, where the model inserts 21.5 (the casts ran at \
     about 13 GB/s, `aten::relu` at 8.0 as traced); traced, the other ops ran 11 ms faster in \
     AFTER (`aten::mm`, the ReLUs) and the step did not grow. Memory: 33 MiB saved by the \
     model against 34 MiB less stashed";

/// The CPU `recompute` pairs (`cpu-recompute-pairs/README.md`).
const RECOMPUTE_ON_CPU: &str = "the first pairs of the model on a CPU-only trace, its bar fixed \
     before recording: each recomputed op's host task (and the host time after it) inserted \
     again before its first backward op. The backward phase was predicted within 3.5 % (35.1 ms \
     against 34.0); the optimizer phase, which the change does not touch, took 7.3 ms in \
     BEFORE's trace and 4.4 in AFTER's";
/// The GPT pairs' check: one bar for both ways of checkpointing.
const RECOMPUTE_GPT: &[Check] = &[held_with(
    "recompute",
    &FRACTION_1,
    Bar::Traced(0.15),
    true,
    RECOMPUTE_ON_CPU_GPT,
)];
const RECOMPUTE_ON_CPU_GPT: &str = "an unseen program, its bar fixed after the first three \
     pairs' results were seen and before it was recorded (load average 0.3 to 0.6): `--fraction \
     1` inserts the whole forward again before the backward, 17.0 ms a step, where the program \
     checkpoints only its three blocks (not the embeddings, the 512-way head or the loss): the \
     backward phase grew by 10.0 ms a step (non-reentrant) and 13.7 (reentrant: each block's \
     forward and a backward of its own inside `CheckpointFunctionBackward`) where the model \
     adds 16.1. Without the profiler checkpointing cost 14.0 and 14.4 ms a step (46.2 → 60.2 and \
     60.6 ms): the prediction's cost, made from the traced forward, is within 1 % of that";
const RECOMPUTE_ON_CPU_RESMLP: &str = "the default, the forward pass's repeated blocks \
     checkpointed one by one (written after the GPT pairs were seen), held blind: its bar fixed \
     before recording (load average 0.8 to 0.9). It found the program's 4 blocks; the change \
     itself grew the backward phase by 5.6 ms a step and the forward by 1.0 as traced, where \
     the model adds 9.9; and AFTER's trace ran the update it does not touch (`Adam.step`) in \
     8.1 ms a step where BEFORE's took 12.5, as the MLP pair's did: with BEFORE's update AFTER's \
     step would be 50.4 ms, and the error +6.7 %. Without the profiler checkpointing cost 7.5 ms a step (35.1 → 42.6 ms), and the \
     prediction is within about 1 % of that outcome";
const RECOMPUTE_ON_CPU_CNN: &str = "a third pair, its bar fixed after the first two's results \
     were seen and before it was recorded: the backward phase predicted at 21.7 ms a step \
     against 20.8 measured (+4.5 %), the forward at 7.7 against 7.8. Without the profiler \
     checkpointing cost 9.9 ms a step (19.6 → 29.4 ms), more than the 7.4 the model inserts \
     from the traced forward";
const RECOMPUTE_ON_CPU_MLP: &str = "recorded with `transformer`'s pair after the bar: the \
     forward and backward phases grew by 2.8 ms traced (3.1 → 4.2 ms and 8.5 → 10.1), where \
     the model adds 2.9; but BEFORE's trace ran `Adam.step` in 29.0 ms and AFTER's in 4.8 (the \
     same update of the same values, and 11.2 ms the whole untraced step), and \
     `AddmmBackward0` in 7.6 and 4.5 ms: AFTER as traced is faster than BEFORE by what the \
     change does not touch, and the traced error is that. Traced again in one process each \
     way, the base configuration's `aten::div` took 1.9-2.3 ms a step in every trace and the \
     checkpointed one's 0.33-2.1 (`cpu-recompute-pairs/order_probe.py`): a cost of the traced \
     run, not of the program or its values. Without the profiler checkpointing \
     cost 6.0 ms a step (11.2 → 17.2 ms), twice what the traced phases show";

const ACCURACY_MD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/accuracy.md");

fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// The AFTER trace of `pair` (`after` names its folder for the pair of `kineto/tb_plugin`,
/// its configuration for those recorded here).
fn after_path(pair: &Pair) -> String {
    if pair.after.ends_with(".json.gz") {
        pair.after.to_string()
    } else if pair.timed {
        format!("{H100}/{}.json.gz", pair.after)
    } else {
        pair.after.to_string()
    }
}

fn accuracy_markdown() -> Accuracy {
    let mut noise = String::new();
    for config in [
        "mlp-fp32",
        "resnet-fp32",
        "transformer-fp32",
        "transformer-amp",
    ] {
        let first = unprofiled_step_ns(&format!("{H100}/{config}.json.gz"));
        let second = unprofiled_step_ns(&format!("{H100}/rerun/{config}.rerun.json.gz"));
        noise.push_str(&format!(
            "| `{config}` | {} | {} | {:+.1}% |\n",
            ms(first),
            ms(second),
            (second as f64 / first as f64 - 1.0) * 100.0
        ));
    }
    let mut rows = String::new();
    let mut notes = String::new();
    let mut errors = Vec::new();
    // The figure without the profiler (`trust.without_profiler`) where a pair was timed.
    let mut profiler_rows = String::new();
    let mut profiler_errors: Vec<(f64, f64)> = Vec::new();
    for pair in PAIRS {
        let after_path = after_path(pair);
        let before = Loaded::new(pair.before);
        let after = Loaded::new(&after_path);
        // Each pair is one workload by construction (its script changes one thing), and
        // `compare` refuses one of them: on a CPU, Inductor replaces the aten ops of a
        // `torch.compile`d model by its own (op similarity 0.19 on the transformer).
        let comparison = compare_with(
            &before.side(),
            &after.side(),
            CompareOptions { force: true },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let unprofiled = pair.timed.then(|| {
            unprofiled_step_ns(pair.before) as f64 / unprofiled_step_ns(&after_path) as f64
        });
        let spread = match interleaved_speedups(pair.before, &after_path) {
            Some(speedups) => format!(
                " (×{:.3}–×{:.3} in {} rounds)",
                speedups[0],
                speedups[speedups.len() - 1],
                speedups.len()
            ),
            None => String::new(),
        };
        for c in pair.checks {
            let mut params = c.params.copied().unwrap_or_default();
            if let Some(from) = c.host_from {
                let config = pair
                    .before
                    .rsplit('/')
                    .next()
                    .unwrap_or(pair.before)
                    .trim_end_matches(".json.gz");
                params.cpu = Some((host_factor(from, config) * 100.0).round() / 100.0);
            }
            let check = check_with(&before, &after, &comparison, c.model, &params);
            let unprofiled_error = unprofiled.map(|u| u / check.predicted_speedup - 1.0);
            if let (Some(u), Some(without)) = (unprofiled, check.trust.without_profiler) {
                let corrected_error = u / without.speedup - 1.0;
                profiler_errors.push((unprofiled_error.unwrap_or(0.0), corrected_error));
                profiler_rows.push_str(&format!(
                    "| `{}` | `{}` | ×{:.3} | ×{:.3}{} | ×{u:.3} | {:+.1}% | {:+.1}% |\n",
                    pair.before,
                    check.model,
                    check.predicted_speedup,
                    without.speedup,
                    if without.upper_side { " †" } else { "" },
                    unprofiled_error.unwrap_or(0.0) * 100.0,
                    corrected_error * 100.0,
                ));
            }
            let bar = c.bar.text();
            match (c.bar, c.bar.met(check.error, unprofiled_error)) {
                (Bar::Missed(_), Some(met)) => assert!(
                    !met,
                    "{} on {}: error {:+.2}% now meets its bar {}: hold it (Bar::Missed → its bar)",
                    c.model,
                    pair.before,
                    check.error * 100.0,
                    c.bar.text(),
                ),
                (_, Some(met)) => assert!(
                    met,
                    "{} on {}: error {:+.2}% (without profiler {:?}) beyond its bar {}",
                    c.model,
                    pair.before,
                    check.error * 100.0,
                    unprofiled_error.map(|e| e * 100.0),
                    c.bar.text(),
                ),
                (_, None) => {}
            }
            let fitted: Vec<&str> =
                stepcast::whatif::record::fitted_on(c.model, pair.before, &after_path).collect();
            let sample = if fitted.is_empty() {
                "yes".to_string()
            } else {
                format!("no: `{}` fitted here", fitted.join("`, `"))
            };
            errors.push(RowError {
                model: c.model,
                in_sample: !fitted.is_empty(),
                error: check.error,
                unprofiled_error,
            });
            if c.direction {
                let gain = |speedup: f64| speedup > 1.0;
                assert_eq!(
                    gain(check.predicted_speedup),
                    gain(comparison.speedup),
                    "{} on {}: predicted ×{:.3}, measured ×{:.3}",
                    c.model,
                    pair.before,
                    check.predicted_speedup,
                    comparison.speedup
                );
                if let Some(u) = unprofiled {
                    assert_eq!(
                        gain(check.predicted_speedup),
                        gain(u),
                        "{} on {} without profiler: predicted ×{:.3}, measured ×{u:.3}",
                        c.model,
                        pair.before,
                        check.predicted_speedup
                    );
                }
            }
            let note = match c.note {
                "" => String::new(),
                text => {
                    // A note said once, for every row it explains.
                    let line = format!("`{}`, {}: {}", c.model, pair.change, text);
                    let n = match notes.lines().position(|l| l.ends_with(&line)) {
                        Some(i) => i + 1,
                        None => {
                            let n = notes.lines().count() + 1;
                            notes.push_str(&format!("{n}. {line}\n"));
                            n
                        }
                    };
                    format!(" ({n})")
                }
            };
            let no_profiler = match (unprofiled, unprofiled_error) {
                (Some(u), Some(e)) => format!("×{u:.3}{spread} | {:+.1}%", e * 100.0),
                _ => "– | –".to_string(),
            };
            // A prediction the model declines is shown, and said to be declined.
            let declined = if check.trust.declined.is_some() {
                ", **declined**"
            } else {
                ""
            };
            rows.push_str(&format!(
                "| `{}` → `{}` | {} | `{}` | ×{:.3} ({} ms){declined} | ×{:.3} ({} → {} ms) | {:+.1}% | {no_profiler} | {bar}{note} | {sample} |\n",
                pair.before,
                match pair.after.strip_prefix("stepcast/") {
                    Some(after) => after.trim_end_matches(".json.gz"),
                    None => pair.after.rsplit('/').nth(1).unwrap_or(pair.after),
                },
                pair.change,
                check.model,
                check.predicted_speedup,
                ms(check.predicted_step_ns),
                comparison.speedup,
                ms(comparison.before.period_ns),
                ms(comparison.after.period_ns),
                check.error * 100.0,
            ));
        }
    }
    let ddp = ddp_rows();
    let memory = crate::memory_trades::accuracy_rows();
    let median_abs = |pick: fn(&(f64, f64)) -> f64| {
        let mut v: Vec<f64> = profiler_errors.iter().map(|e| pick(e).abs()).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0) * 100.0
    };
    let (median_traced, median_corrected) = (median_abs(|e| e.0), median_abs(|e| e.1));
    let profiler_count = profiler_errors.len();
    let records = model_records(&errors);
    let summary = records_markdown(&records);
    let unrecorded = unrecorded_markdown(&records);
    let markdown = format!(
        "# Prediction accuracy on real before/after pairs\n\
         \n\
         <!-- Generated by `accuracy_table_is_current` in crates/stepcast/tests/it/compare.rs: \
         do not edit. Regenerate with `STEPCAST_WRITE_ACCURACY=1 cargo test --release -p stepcast \
         --test it accuracy`. -->\n\
         \n\
         Each row is one model predicted from the BEFORE trace of a real pair and checked against the \
         AFTER trace, as `stepcast compare BEFORE AFTER --model M` does. A trace's step is its \
         steady-state period on the recorded times (the mean time between consecutive steady steps' \
         ends, every step but the first), the measure a what-if predicts (not the median step: \
         where loader workers pace the step their batches arrive in bursts, and on \
         `h200-pairs/loader-workers2` steps of 207 and 21 ms alternate); the predicted step is \
         BEFORE's period divided by the model's predicted speedup; error = predicted / measured − 1 \
         (positive: the model predicted too small a gain). The pairs recorded here on an H100 \
         (`testdata/kineto/stepcast/h100-pairs/`) also carry the same steps timed with the \
         profiler off: the outcome a user gets, and the second error; those recorded on this \
         project's shared 2-core CPU (`testdata/kineto/stepcast/cpu-pairs/`, BEFORE and AFTER \
         timed in interleaved rounds) also the spread of that speedup over the rounds. The \
         test fails when an error leaves its bar or, where marked, when a predicted gain is a \
         measured loss or the reverse (traced and without the profiler); a bar marked \
         **missed** was fixed before the pair was recorded and the model misses it today (the \
         test fails once it meets it). *Out of sample*: no constant of the model was measured \
         or fitted on this pair (`stepcast::whatif::record::FITTED`). `faster_hardware` rows give \
         the host factor as `--cpu`: the median ratio of the same ops' host times between the two \
         machines, measured on the other configurations recorded on both (never the pair's own).\n\
         \n\
         | pair (under `testdata/kineto/`) | change | model | predicted | measured (traced) | error | measured without profiler | error | bar | out of sample |\n\
         |---|---|---|---|---|---|---|---|---|---|\n\
         {rows}\n\
         ## Notes\n\
         \n\
         {notes}\n\
         ## Each model, in sample and out of sample\n\
         \n\
         Per model, over the rows above: the pairs, those a constant of the model was fitted \
         on (in sample) and the others (out of sample), with the median and largest \
         |error| against AFTER as traced, and the same without the profiler where the pair was \
         timed. `advise` and `whatif` show the out-of-sample figures beside a prediction \
         (`stepcast::whatif::record::RECORDS`, generated with this file and checked against \
         it).\n\
         \n\
         | model | pairs | in sample | in-sample \\|error\\| (median) | out of sample | out-of-sample \\|error\\| traced, median / max | without profiler, median / max |\n\
         |---|---|---|---|---|---|---|\n\
         {summary}\n\
         Models with no pair yet, whose out-of-sample error is unknown (`advise` shows `none` \
         in their record column):\n\
         \n\
         {unrecorded}\n\
         ## The figure without the profiler\n\
         \n\
         Where the profiler's own host cost moves a baseline by 1 % or more, every prediction \
         also gives its baseline and predicted step less that cost (`trust.without_profiler`, \
         and the caveat that begins `the profiler recorded`: `stepcast::whatif::profiler_cost`). \
         Against the pairs timed without the profiler, that figure's speedup and the traced \
         prediction's, each held to the speedup measured without the profiler ({profiler_count} \
         predictions; median |error| {median_traced:.1} % for the traced prediction, \
         {median_corrected:.1} % for the figure without the profiler). The rows' bars hold the \
         traced prediction; these figures are checked here, not fitted: no constant of the \
         estimate is. †: the trace held its CPU tensors (`record_shapes` on a CPU-only run, \
         `cpu-profiler-cost/`), a cost inside its ops the estimate cannot see: both steps \
         without the profiler are upper sides (`upper_side`), and their ratio is bounded \
         neither way.\n\
         \n\
         | BEFORE (under `testdata/kineto/`) | model | predicted (traced) | predicted without the profiler | measured without profiler | error (traced prediction) | error (without the profiler) |\n\
         |---|---|---|---|---|---|---|\n\
         {profiler_rows}\n\
         ## Pairs looked for and left out\n\
         \n\
         - HolisticTraceAnalysis `tests/data/trace_diff/control/control.json.gz` and \
         `test/test.json.gz`: HTA's TraceDiff test inputs, but not one workload with one change: \
         `control` is rank 3 of 8 on an A100, `test` rank 1 of 2 on a V100, and no document says \
         what else differs. No model stands for that honestly.\n\
         - nsys-ai `mfu_2gpu_before.sqlite` (`../shared/traces/nsys/`): no AFTER of it is in the \
         collection.\n\
         - `offload`: its pairs need a GPU and a memory budget; one GPU at a time was lent (15 \
         minutes in all). `gist`'s and `reconstruct_batchnorm`'s pairs are on the CPU \
         (`cpu-gist-pairs/`: the same 16-bit encoding by `saved_tensors_hooks`; \
         `cpu-batchnorm-pairs/`: batch norm fused with its ReLU); GPU pairs of them are still to \
         be recorded.\n\
         \n\
         ## Data-parallel training from one process (`ddp`)\n\
         \n\
         `stepcast whatif BEFORE ddp --gpus N --gpus-per-node N --intra 1.1GB/s` against rank \
         0 of the job folder AFTER (the `mlp` in one process, then under \
         `DistributedDataParallel` over gloo in N, one intra-op thread each, the same batch \
         per process; four processes share the machine's two cores, given as `--cores 2`: \
         each one's host work ×2, `DdpConfig::host_share`), and the same for the transformer, \
         the small CNN and the tiny GPT of `cpu-pairs/record.py`. The link is a declared input \
         measured on the other recorded gloo jobs (`cpu-ddp-pairs/calibrate_gloo.py`), not on \
         these pairs. The gradients are ready at the host tasks holding their \
         `AccumulateGrad` ops, DDP's buckets (1 MiB, then up to 25 MiB) are all-reduced on a \
         worker thread beside the training thread, and the optimizer waits for the last; \
         gloo's CPU time is charged to the training thread only where `--cores` says no core \
         is left for it (a caveat of every such prediction says which).\n\
         \n\
         | pair (under `testdata/kineto/`) | change | predicted | measured (traced) | error | measured without profiler | error | bar |\n\
         |---|---|---|---|---|---|---|---|\n\
         {ddp}\n\
         Where `--cores` says the node's processes take all its cores, each all-reduce's \
         CPU time (its time on the link, times the time-sharing) is taken from the thread that \
         readied its last gradient (`insert::charge_exchange_cpu`): gloo's worker thread has no \
         core of its own. Written after the first three pairs' results were seen: with it the \
         four-process pair's error went from −25.3 % (its bar, ±25 %, missed) to the row \
         above, a met bar that is not a blind one; the two-process rows are predicted as their \
         bars say, without `--cores`. The tiny GPT's pair, recorded after the mechanism was \
         written and its bar committed, is the blind test of it (`--cores 2`). \
         On the quiet machine AFTER's first all-reduce (1.05 MB) took 5.0 ms where the link \
         gives 1.0 (it absorbs the ranks' skew and shares two cores with both training threads), \
         and DDP's own host work (its forward wrapper, the reducer's bucket copies in the \
         backward pass) is not charged: the traced error is −17 %. Without the profiler the \
         step is 11 ms, not 36 (the traced BEFORE's Adam loop carries the profiler's cost per \
         op), so the same exchanges weigh three times as much and the prediction, made from \
         the traced BEFORE, misses by −42 %. With four processes on the two cores (the bar \
         fixed with `--cores` before recording) the traced error was −25.3 % before gloo's CPU \
         time was charged; the exchanges of a group of four, never calibrated here, are what \
         it still leaves out. The \
         loaded machine's pair (load average 3 to 10) ran its two processes on cores other \
         engineers' compilers held. Two more programs were recorded blind, their bars fixed \
         before (`cpu-ddp-pairs/README.md`): on the transformer the prediction misses by \
         −40.7 %, every phase of AFTER's step having run 1.6-1.75× slower, the optimizer's \
         after the last all-reduce too: DDP's gloo work (about 9 ms of CPU a step, measured \
         outside the recorder) took the cores the model leaves to it. Recorded again half an \
         hour later (the row `transformer/rerun`), the same program measured ×0.824 traced \
         and ×0.795 without the profiler, and the model, predicting from that BEFORE, is \
         −10.4 % off, within the bar: \
         the first recording's BEFORE and AFTER were both slower, and the machine's state, \
         not the change, made most of its miss. The small CNN meets its \
         bar with a prediction of ×1.000 (its all-reduces finish behind the backward pass), \
         where the −13 % measured is what the model does not insert: the batch norms' \
         buffers broadcast before every forward pass, DDP's gradient hooks, and the wait for \
         the last all-reduce.\n\
         \n\
         ## Memory: the step's peak with a memory-for-time trade\n\
         \n\
         What `recompute` and `gist` do to the step's peak of allocated memory, predicted from \
         BEFORE's trace with memory events (`profile_memory=True`, `record_shapes=False`) and \
         held to the step peak the same program reached with the change \
         (`testdata/kineto/stepcast/cpu-memory-probe/`, its probe script and bars, fixed before \
         the model was written; the four blind rows probed after it was frozen; \
         `tests/it/memory_trades.rs` holds them). *saves* is the activations' own peak, the \
         figure every memory trade prints; *step peak falls* is read off the recorded memory \
         timeline with the trade's activations moved and everything else as recorded \
         (`models::step_peak`), the figure `optimize`'s memory pass judges a budget on. Bar: \
         within 30 % of the measured fall or 0.5 MiB. Memory, unlike time, measured the same \
         to the byte in every profiled step and on a second run.\n\
         \n\
         | BEFORE (under `testdata/kineto/stepcast/cpu-memory-probe/traces/`) | AFTER (probed) | model | saves | step peak falls (predicted) | measured | bar | blind |\n\
         |---|---|---|---|---|---|---|---|\n\
         {memory}\n\
         ## How much a measured outcome moves between two machines of one kind\n\
         \n\
         The same configurations timed without the profiler on two H100 machines the same day \
         (`stepcast/h100-pairs/` and its `rerun/`): where the host bounds the step, a \
         measured outcome is only as good as this.\n\
         \n\
         | configuration | first H100 (ms) | second H100 (ms) | difference |\n\
         |---|---|---|---|\n\
         {noise}"
    );
    Accuracy {
        markdown,
        records: records_rust(&records),
    }
}

/// Why each built-in model without a pair has none; every model of `Model::NAMES` has a row
/// of the table or a reason here (the test fails on a model with neither, or with both).
const UNRECORDED: &[(&str, &str)] = &[
    (
        "faster_gpu",
        "a GPU k× faster, k the user's: no pair changes the GPU alone. The H100 → H200 pairs \
         changed the host too, and are held to `faster_hardware`, which takes the target's \
         datasheet ratios and a host factor (the rows above)",
    ),
    (
        "faster_copies",
        "copies k× faster: its pair is a change of copy speed alone (pageable → pinned host \
         memory, `pin_memory=True`) on a GPU, not recorded in the device time lent so far",
    ),
    (
        "offload",
        "its pair needs a GPU and a memory budget (activations moved to host memory); on a \
         CPU-only trace it declines, the activations being in host memory already",
    ),
];

/// The models of `Model::NAMES` with no row, each with why ([`UNRECORDED`]), as a list.
fn unrecorded_markdown(records: &[Summary]) -> String {
    use stepcast::whatif::Model;
    let recorded = |name: &str| records.iter().any(|s| s.record.model == name);
    let mut out = String::new();
    for &name in Model::NAMES {
        let why = UNRECORDED.iter().find(|(model, _)| *model == name);
        match (recorded(name), why) {
            (true, None) => {}
            (false, Some((_, why))) => out.push_str(&format!("- `{name}`: {why}.\n")),
            (true, Some(_)) => panic!("{name} has pairs now: drop its UNRECORDED reason"),
            (false, None) => panic!("{name} has no pair and no UNRECORDED reason"),
        }
    }
    out
}

/// One model's record and its median and largest |error| without the profiler out of
/// sample (the document shows them; the library keeps the traced ones).
struct Summary {
    record: stepcast::whatif::record::ModelRecord,
    unprofiled: (Option<f64>, Option<f64>),
}

/// One row's error, for the per-model summary.
struct RowError {
    model: &'static str,
    in_sample: bool,
    error: f64,
    unprofiled_error: Option<f64>,
}

/// The two documents generated from the pairs: `docs/accuracy.md` and the library's table of
/// each model's record (`crates/stepcast/src/whatif/record_table.rs`).
struct Accuracy {
    markdown: String,
    records: String,
}

const RECORD_TABLE_RS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/whatif/record_table.rs");

/// The median and the largest of the absolute values (`None`: none).
fn median_max(values: impl Iterator<Item = f64>) -> (Option<f64>, Option<f64>) {
    let mut abs: Vec<f64> = values.map(f64::abs).collect();
    abs.sort_by(f64::total_cmp);
    if abs.is_empty() {
        return (None, None);
    }
    let n = abs.len();
    let median = if n % 2 == 1 {
        abs[n / 2]
    } else {
        (abs[n / 2 - 1] + abs[n / 2]) / 2.0
    };
    (Some(median), abs.last().copied())
}

/// Each model's record over `errors`, by name; the errors rounded to 0.1 % as the table
/// shows them, so the library's table and the document say the same.
fn model_records(errors: &[RowError]) -> Vec<Summary> {
    let round = |x: Option<f64>| x.map(|x| (x * 1000.0).round() / 1000.0);
    let mut models: Vec<&str> = errors.iter().map(|e| e.model).collect();
    models.sort_unstable();
    models.dedup();
    models
        .into_iter()
        .map(|model| {
            let rows = || errors.iter().filter(move |e| e.model == model);
            let (in_median, _) = median_max(rows().filter(|e| e.in_sample).map(|e| e.error));
            let (out_median, out_max) =
                median_max(rows().filter(|e| !e.in_sample).map(|e| e.error));
            let unprofiled = median_max(
                rows()
                    .filter(|e| !e.in_sample)
                    .filter_map(|e| e.unprofiled_error),
            );
            Summary {
                record: stepcast::whatif::record::ModelRecord {
                    model,
                    pairs: rows().count() as u32,
                    in_sample: rows().filter(|e| e.in_sample).count() as u32,
                    in_sample_median_error: round(in_median),
                    out_of_sample_median_error: round(out_median),
                    out_of_sample_max_error: round(out_max),
                },
                unprofiled: (round(unprofiled.0), round(unprofiled.1)),
            }
        })
        .collect()
}

fn percent(x: Option<f64>) -> String {
    x.map_or("–".to_string(), |x| format!("{:.1}%", x * 100.0))
}

fn records_markdown(records: &[Summary]) -> String {
    records
        .iter()
        .map(|summary| {
            let (r, (u_median, u_max)) = (&summary.record, &summary.unprofiled);
            let unprofiled = match (u_median, u_max) {
                (Some(_), Some(_)) => format!("{} / {}", percent(*u_median), percent(*u_max)),
                _ => "–".to_string(),
            };
            format!(
                "| `{}` | {} | {} | {} | {} | {} | {unprofiled} |\n",
                r.model,
                r.pairs,
                r.in_sample,
                percent(r.in_sample_median_error),
                r.out_of_sample(),
                match (r.out_of_sample_median_error, r.out_of_sample_max_error) {
                    (Some(_), Some(_)) => format!(
                        "{} / {}",
                        percent(r.out_of_sample_median_error),
                        percent(r.out_of_sample_max_error)
                    ),
                    _ => "unknown".to_string(),
                },
            )
        })
        .collect()
}

fn records_rust(records: &[Summary]) -> String {
    let option = |x: Option<f64>| x.map_or("None".to_string(), |x| format!("Some({x:?})"));
    let mut out = String::from(
        "// Generated by `accuracy_table_is_current` in crates/stepcast/tests/it/compare.rs from the rows of\n\
         // docs/accuracy.md: do not edit. Regenerate with\n\
         // `STEPCAST_WRITE_ACCURACY=1 cargo test --release -p stepcast --test it accuracy`.\n\
         \n\
         pub const RECORDS: &[ModelRecord] = &[\n",
    );
    for r in records.iter().map(|s| &s.record) {
        out.push_str(&format!(
            "    ModelRecord {{\n        model: {:?},\n        pairs: {},\n        in_sample: {},\n        \
             in_sample_median_error: {},\n        out_of_sample_median_error: {},\n        \
             out_of_sample_max_error: {},\n    }},\n",
            r.model,
            r.pairs,
            r.in_sample,
            option(r.in_sample_median_error),
            option(r.out_of_sample_median_error),
            option(r.out_of_sample_max_error),
        ));
    }
    out.push_str("];\n");
    out
}

/// The speedup of each interleaved round, BEFORE's round over AFTER's (sorted), where both
/// were timed in the same rounds (`interleaved_with` in their `.timing.json`).
fn interleaved_speedups(before: &str, after: &str) -> Option<Vec<f64>> {
    let timing = |relative: &str| -> Option<serde_json::Value> {
        let path = super::testdata(relative)
            .with_extension("")
            .with_extension("timing.json");
        serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
    };
    let (b, a) = (timing(before)?, timing(after)?);
    let partners = a["interleaved_with"].as_array()?;
    if !partners.iter().any(|p| p == &b["config"]) {
        return None;
    }
    let rounds = |t: &serde_json::Value| -> Option<Vec<f64>> {
        t["rounds_ms"]
            .as_array()?
            .iter()
            .map(|r| r.as_f64())
            .collect()
    };
    let (b, a) = (rounds(&b)?, rounds(&a)?);
    if b.len() != a.len() || b.is_empty() {
        return None;
    }
    let mut speedups: Vec<f64> = b.iter().zip(&a).map(|(b, a)| b / a).collect();
    speedups.sort_by(f64::total_cmp);
    Some(speedups)
}

/// One `ddp` pair: BEFORE (one process) and its job folder AFTER, and how it is predicted.
struct DdpPair {
    dir: &'static str,
    world: u32,
    /// `--cores`: the node's cores its processes share.
    cores: Option<f64>,
    /// The bar against AFTER as traced (±), and whether it is missed today (fixed before
    /// recording: the test fails once it is met).
    bar: Option<(f64, bool)>,
    /// Why a pair has no bar (with `bar: None`).
    unbarred: &'static str,
}

const DDP_PAIRS: [DdpPair; 7] = [
    DdpPair {
        dir: "stepcast/cpu-pairs",
        world: 2,
        cores: None,
        bar: None,
        unbarred: "none: recorded under a load average of 3 to 10, reported",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs",
        world: 2,
        cores: None,
        bar: Some((0.20, false)),
        unbarred: "",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs/world4",
        world: 4,
        cores: Some(2.0),
        bar: Some((0.25, false)),
        unbarred: "",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs/transformer",
        world: 2,
        cores: None,
        bar: Some((0.20, true)),
        unbarred: "",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs/transformer/rerun",
        world: 2,
        cores: None,
        bar: None,
        unbarred: "none: the row above recorded again, reported",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs/cnn",
        world: 2,
        cores: None,
        bar: Some((0.20, false)),
        unbarred: "",
    },
    DdpPair {
        dir: "stepcast/cpu-ddp-pairs/gpt",
        world: 2,
        cores: Some(2.0),
        bar: Some((0.20, false)),
        unbarred: "",
    },
];

/// The `ddp` rows of `docs/accuracy.md`: each pair's prediction (one process → N over gloo,
/// the declared link) against rank 0 of its job folder, traced and without the profiler,
/// each held to its bar.
fn ddp_rows() -> String {
    use stepcast::comm::{Link, Preset, parse_bandwidth};
    use stepcast::whatif::ddp::{DdpConfig, DdpInputs, sweep_with};
    let mut rows = String::new();
    for pair in DDP_PAIRS {
        let dir = pair.dir;
        let job = format!("{dir}/ddp-gloo{}", pair.world);
        let (single, rank0) = (
            format!("{dir}/ddp-single.json.gz"),
            format!("{job}/rank0.json.gz"),
        );
        let (before, after) = (Loaded::new(&single), Loaded::new(&rank0));
        let comparison = compare_with(
            &before.side(),
            &after.side(),
            CompareOptions { force: true },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let mapping = stepcast::analyze::mapping::map(&before.trace, &before.window);
        let context = stepcast::whatif::Context::new(&before.trace, &before.window, &mapping);
        let baseline = stepcast::whatif::predict(&before.window, &before.window.graph)
            .unwrap_or_else(|e| panic!("{e}"));
        let config = DdpConfig {
            gpus: pair.world,
            gpus_per_node: pair.world,
            intra: Some(Link {
                alpha_ns: Preset::Nvlink3.link().alpha_ns,
                bandwidth_bps: parse_bandwidth("1.1GB/s").expect("a bandwidth"),
            }),
            host_cores: pair.cores,
            ..DdpConfig::default()
        };
        let sweep = sweep_with(&context, &baseline, &[config], &DdpInputs::default())
            .unwrap_or_else(|e| panic!("{single}: {e}"));
        let predicted = sweep.points[0].speedup;
        let error = comparison.speedup / predicted - 1.0;
        let timing = format!("{job}-rank0.json.gz");
        let unprofiled = unprofiled_step_ns(&single) as f64 / unprofiled_step_ns(&timing) as f64;
        let unprofiled_error = unprofiled / predicted - 1.0;
        let spread = interleaved_speedups(&single, &timing)
            .map(|s| {
                format!(
                    " (×{:.3}–×{:.3} in {} rounds)",
                    s[0],
                    s[s.len() - 1],
                    s.len()
                )
            })
            .unwrap_or_default();
        let bar_text = match pair.bar {
            Some((bar, missed)) => {
                let met = error.abs() <= bar;
                assert!(
                    met != missed,
                    "ddp on {single}: error {:+.1}% against its bar ±{:.0}% (missed: {missed}); \
                     update DDP_PAIRS",
                    error * 100.0,
                    bar * 100.0
                );
                let missed = if missed { ": **missed**" } else { "" };
                format!("±{:.0}% traced{missed}", bar * 100.0)
            }
            None => pair.unbarred.to_string(),
        };
        let cores = pair
            .cores
            .map(|c| format!(", `--cores {c}`"))
            .unwrap_or_default();
        rows.push_str(&format!(
            "| `{single}` → `{job}/` | 1 → {} processes{cores} | ×{predicted:.3} | ×{:.3} ({} → {} ms) | {:+.1}% | ×{unprofiled:.3}{spread} | {:+.1}% | {bar_text} |\n",
            pair.world,
            comparison.speedup,
            ms(comparison.before.period_ns),
            ms(comparison.after.period_ns),
            error * 100.0,
            unprofiled_error * 100.0,
        ));
    }
    rows
}

#[test]
fn accuracy_table_is_current() {
    let generated = accuracy_markdown();
    if std::env::var_os("STEPCAST_WRITE_ACCURACY").is_some() {
        std::fs::write(ACCURACY_MD, &generated.markdown)
            .unwrap_or_else(|e| panic!("{ACCURACY_MD}: {e}"));
        std::fs::write(RECORD_TABLE_RS, &generated.records)
            .unwrap_or_else(|e| panic!("{RECORD_TABLE_RS}: {e}"));
        return;
    }
    let committed = std::fs::read_to_string(ACCURACY_MD).unwrap_or_default();
    assert!(
        committed == generated.markdown,
        "docs/accuracy.md is out of date: regenerate it with STEPCAST_WRITE_ACCURACY=1 \
         cargo test --release -p stepcast --test it accuracy"
    );
    // The library's record of each model is the same rows' (what `advise` shows).
    let committed = std::fs::read_to_string(RECORD_TABLE_RS).unwrap_or_default();
    assert!(
        committed == generated.records,
        "crates/stepcast/src/whatif/record_table.rs is out of date: regenerate it with \
         STEPCAST_WRITE_ACCURACY=1 cargo test --release -p stepcast --test it accuracy"
    );
}

/// The library's records, as compiled, are those of the committed table: a model's record
/// has its out-of-sample error wherever it has an out-of-sample pair.
#[test]
fn every_model_with_a_pair_has_its_record() {
    use stepcast::whatif::record::{RECORDS, model_record};
    assert!(!RECORDS.is_empty());
    for r in RECORDS {
        assert!(r.pairs >= 1 && r.in_sample <= r.pairs, "{r:?}");
        assert_eq!(
            r.out_of_sample_median_error.is_some(),
            r.out_of_sample() > 0,
            "{r:?}"
        );
        assert_eq!(model_record(r.model), Some(r));
    }
    // Each row of docs/accuracy.md names a model the records know.
    let committed = std::fs::read_to_string(ACCURACY_MD).unwrap_or_default();
    for pair in PAIRS {
        for c in pair.checks {
            assert!(model_record(c.model).is_some(), "{} has no record", c.model);
            assert!(
                committed.contains(&format!("| `{}` |", c.model)),
                "{}",
                c.model
            );
        }
    }
}
