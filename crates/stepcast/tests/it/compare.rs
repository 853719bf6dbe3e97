//! `compare` on the real before/after pair of `testdata/` (ResNet-50, `DataLoader(num_workers=0)`
//! then `num_workers=4`, pytorch/kineto `tb_plugin/samples/`), checked against independent
//! readings of the files. `docs/accuracy.md`, every pair's predictions against its measured
//! outcome, is generated in `accuracy/` with these readings.

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

pub(crate) const PAIR_BEFORE: &str =
    "kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_0/worker0.pt.trace.json.gz";
pub(crate) const PAIR_AFTER: &str =
    "kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_4/worker0.pt.trace.json.gz";

pub(crate) const H100: &str = "stepcast/h100-pairs";
const H100_TRANSFORMER_FP32: &str = "stepcast/h100-pairs/transformer-fp32.json.gz";
const H100_TRANSFORMER_AMP: &str = "stepcast/h100-pairs/transformer-amp.json.gz";

/// A trace of a pair, built and analyzed as `compare` takes it.
pub(crate) struct Loaded {
    pub(crate) trace: Trace,
    pub(crate) window: Window,
    analysis: Analysis,
}

impl Loaded {
    pub(crate) fn new(relative: &str) -> Loaded {
        let (trace, window) = super::load(relative);
        let analysis = analyze(&trace, &window, None).unwrap_or_else(|e| panic!("{relative}: {e}"));
        Loaded {
            trace,
            window,
            analysis,
        }
    }

    pub(crate) fn side(&self) -> Side<'_> {
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

/// [`compared`] past `compare`'s check that the two traces share their ops, for pairs that are
/// one workload by construction (their script changes one thing): on a CPU, Inductor replaces
/// the aten ops of a `torch.compile`d model by its own (op similarity 0.19 on the
/// transformer), and a program is compared with its own recording again.
pub(crate) fn forced_comparison(before: &Loaded, after: &Loaded) -> Comparison {
    compare_with(
        &before.side(),
        &after.side(),
        CompareOptions { force: true },
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

fn check(before: &Loaded, after: &Loaded, comparison: &Comparison, model: &str) -> ModelCheck {
    check_with(before, after, comparison, model, &ModelParams::default())
}

pub(crate) fn check_with(
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

pub(crate) fn micros(event: &serde_json::Value, key: &str) -> f64 {
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
pub(crate) fn unprofiled_step_ns(relative: &str) -> i64 {
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
