//! One definition of host time by phase (`analyze::host_time`), checked against the raw trace:
//! the data loader's time on the ResNet-50 sample (no worker processes: the loader runs on the
//! step's thread inside `enumerate(DataLoader)#...__next__`) is data loading in `analyze`,
//! `whatif` and the critical path alike.

use stepcast::analyze::analyze;
use stepcast::analyze::mapping::Phase;
use stepcast::whatif::{Context, Model, apply_models};

use super::compare::raw_events;

const RESNET: &str =
    "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz";

/// Per `ProfilerStep#N`: N and the summed duration (ns) of the `enumerate(DataLoader)` ranges
/// that start inside its marker, read straight from the file.
fn loader_ns_by_step(events: &[serde_json::Value]) -> Vec<(u64, i64)> {
    let complete = |e: &&serde_json::Value| e["ph"] == "X";
    let name = |e: &serde_json::Value| e["name"].as_str().unwrap_or("").to_string();
    let us = |e: &serde_json::Value, key: &str| e[key].as_f64().unwrap_or(0.0);
    let steps: Vec<(u64, f64, f64)> = events
        .iter()
        .filter(complete)
        .filter_map(|e| {
            let number = name(e).strip_prefix("ProfilerStep#")?.parse().ok()?;
            Some((number, us(e, "ts"), us(e, "ts") + us(e, "dur")))
        })
        .collect();
    let loaders: Vec<(f64, f64)> = events
        .iter()
        .filter(complete)
        .filter(|e| name(e).starts_with("enumerate(DataLoader)#"))
        .map(|e| (us(e, "ts"), us(e, "dur")))
        .collect();
    steps
        .iter()
        .map(|&(number, start, end)| {
            let us_sum: f64 = loaders
                .iter()
                .filter(|&&(ts, _)| ts >= start && ts < end)
                .map(|&(_, dur)| dur)
                .sum();
            (number, (us_sum * 1000.0).round() as i64)
        })
        .collect()
}

#[test]
fn data_loading_host_time_is_the_loader_ranges_in_analyze_whatif_and_critical_path() {
    let (trace, window) = super::load(RESNET);
    let analysis = analyze(&trace, &window, None).unwrap_or_else(|e| panic!("{e}"));
    let reference = loader_ns_by_step(&raw_events(RESNET));
    assert!(!reference.is_empty(), "no steps in the raw trace");

    // analyze: per step, data loading host time = the loader ranges of that step (1 %), and
    // the phases plus idle are the step.
    let mut compared = 0;
    for b in &analysis.breakdowns.steps {
        let Some(&(_, expected)) = reference.iter().find(|r| Some(r.0) == b.step) else {
            continue;
        };
        let span = b.end_ns - b.start_ns;
        assert_eq!(b.host_by_phase.total_ns(), span, "step {:?}", b.step);
        assert!(b.host_by_phase.idle_ns >= 0, "step {:?}", b.step);
        let got = b.host_by_phase.get(Phase::DataLoading);
        assert!(
            expected > 40_000_000,
            "step {:?}: loader {expected} ns",
            b.step
        );
        let error = (got - expected).abs() as f64 / expected as f64;
        assert!(
            error < 0.01,
            "step {:?}: data loading {got} ns, loader ranges {expected} ns",
            b.step
        );
        compared += 1;
    }
    assert!(compared >= 3, "only {compared} steps compared");

    // whatif: the data-loading host time "before" is analyze's, over the same steps.
    let context = Context::new(&trace, &window, &analysis.mapping);
    let model = Model::by_name("prefetch_inputs").unwrap_or_else(|| panic!("no model"));
    let outcome = apply_models(&context, &[model]).unwrap_or_else(|e| panic!("{e}"));
    let loading = outcome
        .phases
        .iter()
        .find(|p| p.phase == Phase::DataLoading)
        .unwrap_or_else(|| panic!("no data-loading phase"));
    let typical = analysis
        .typical_breakdown
        .as_ref()
        .unwrap_or_else(|| panic!("no typical step"));
    let analyzed = typical.breakdown.host_by_phase.get(Phase::DataLoading);
    let error = (loading.host_before_ns - analyzed).abs() as f64 / analyzed as f64;
    assert!(
        error < 0.01,
        "whatif before {} ns, analyze {analyzed} ns",
        loading.host_before_ns
    );
    assert!(
        loading.host_after_ns < loading.host_before_ns / 10,
        "prefetching hides the loader: {} -> {} ns",
        loading.host_before_ns,
        loading.host_after_ns
    );

    // The critical path: the loader-bound step's path holds data loading.
    let step = analysis.analyzed_step.unwrap_or(0);
    let (_, path) = &analysis.critical[step];
    let on_path = path
        .by_phase
        .iter()
        .find(|p| p.0 == Phase::DataLoading)
        .map_or(0, |p| p.1);
    assert!(on_path > 0, "no data loading on the critical path");
}

/// The name with the most exclusive time (its duration less its children's) inside the
/// `enumerate(DataLoader)` ranges of the step markers' thread in the raw file, each range
/// holding its own untraced time: events wholly inside a range, nested by time.
fn heaviest_in_loader(events: &[serde_json::Value]) -> Option<String> {
    let complete: Vec<(&serde_json::Value, f64, f64)> = events
        .iter()
        .filter(|e| e["ph"] == "X")
        .filter_map(|e| {
            let (ts, dur) = (e["ts"].as_f64()?, e["dur"].as_f64()?);
            (dur > 0.0).then_some((e, ts, ts + dur))
        })
        .collect();
    let thread = |e: &serde_json::Value| (e["pid"].to_string(), e["tid"].to_string());
    let marker = complete.iter().find(|(e, ..)| {
        e["cat"] == "user_annotation"
            && e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("ProfilerStep#"))
    })?;
    let on_thread: Vec<&(&serde_json::Value, f64, f64)> = complete
        .iter()
        .filter(|(e, ..)| thread(e) == thread(marker.0))
        .collect();
    let mut exclusive: std::collections::BTreeMap<String, f64> = Default::default();
    for &&(_, from, to) in on_thread.iter().filter(|(e, ..)| {
        e["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("enumerate(DataLoader)"))
    }) {
        let mut inside: Vec<(f64, f64, &str)> = on_thread
            .iter()
            .filter(|&&&(_, s, e)| s >= from && e <= to)
            .map(|&&(e, s, end)| (s, end, e["name"].as_str().unwrap_or("")))
            .collect();
        inside.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        // The range first (it holds the rest); each event's time less its direct children's.
        let mut own: Vec<f64> = inside.iter().map(|&(s, e, _)| e - s).collect();
        let mut open: Vec<usize> = Vec::new();
        for i in 0..inside.len() {
            while open.last().is_some_and(|&p| inside[p].1 <= inside[i].0) {
                open.pop();
            }
            if let Some(&parent) = open.last() {
                own[parent] -= inside[i].1 - inside[i].0;
            }
            open.push(i);
        }
        for (i, &(_, _, name)) in inside.iter().enumerate() {
            *exclusive.entry(name.to_string()).or_default() += own[i];
        }
    }
    exclusive
        .into_iter()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(name, _)| name)
}

/// Data loading on the critical path is named by what the loader spent it in (not by the call
/// after it, the input's copy to the device): the name `advise` gives most of it is the one
/// with the most exclusive time inside the loader's ranges, read straight from the file; on a
/// trace with Python frames (`with_stack`), one of those frames inside the loader.
#[test]
fn data_loading_is_named_by_what_the_loader_spent_it_in() {
    use stepcast::whatif::step_time::TimeKind;
    for relative in [
        "stepcast/h100-pairs/loader-workers0.json.gz",
        "stepcast/cpu-loader-pairs/loader-workers0.json.gz",
        "TraceLens/tests/traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz",
    ] {
        let raw = raw_events(relative);
        let (trace, window) = super::load(relative);
        let mapping = stepcast::analyze::mapping::map(&trace, &window);
        let context = Context::new(&trace, &window, &mapping);
        let advice = stepcast::whatif::advise(&context).unwrap_or_else(|e| panic!("{e}"));
        let loading = &advice.step_time.top[TimeKind::DataLoading as usize];
        let top = loading.first().expect("data loading on the path");
        let name = trace.name(top.name);
        if relative.contains("owlv2") {
            // The loader's image processing (`scipy.ndimage.zoom`), a Python frame recorded
            // inside a loader range of the file.
            let span = |e: &serde_json::Value| {
                let ts = e["ts"].as_f64().unwrap_or(f64::NAN);
                (ts, ts + e["dur"].as_f64().unwrap_or(f64::NAN))
            };
            let loaders: Vec<(f64, f64)> = raw
                .iter()
                .filter(|e| {
                    e["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("enumerate(DataLoader)"))
                })
                .map(span)
                .collect();
            let inside_a_loader = raw
                .iter()
                .filter(|e| e["name"] == name && e["cat"] == "python_function")
                .map(span)
                .any(|(s, e)| loaders.iter().any(|&(from, to)| s >= from && e <= to));
            assert!(
                inside_a_loader,
                "{relative}: {name} is no Python frame inside a loader range"
            );
        } else {
            let expected = heaviest_in_loader(&raw).expect("a loader range");
            assert_eq!(name, expected, "{relative}");
        }
        // Its loader range named beside it.
        let holder = top.op.map(|op| trace.name(op)).unwrap_or("");
        assert!(
            holder.contains("DataLoader") || holder.contains("torch/utils/data/"),
            "{relative}: {holder}"
        );
        let named: i64 = loading.iter().map(|i| i.ns).sum();
        assert!(
            named <= advice.step_time.ns(TimeKind::DataLoading),
            "{relative}"
        );
    }
}
