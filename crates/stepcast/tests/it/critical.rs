//! The critical path against HolisticTraceAnalysis's own, on the trace HTA ships with it.

use std::collections::BTreeMap;
use std::io::Read;

use stepcast::analyze::critical::step_critical_path;
use stepcast::simulate::{RecordedOrder, SimOptions, simulate};

use crate::{HTA, load, testdata};

type Intervals = BTreeMap<(i64, i64), Vec<(i64, i64)>>;

fn union_length(intervals: &mut [(i64, i64)]) -> i64 {
    intervals.sort_unstable();
    let (mut total, mut reach) = (0, i64::MIN);
    for &(start, end) in intervals.iter() {
        let start = start.max(reach);
        if end > start {
            total += end - start;
            reach = end;
        }
    }
    total
}

fn intersection_length(a: &mut [(i64, i64)], b: &mut [(i64, i64)]) -> i64 {
    // |A ∩ B| = |A| + |B| - |A ∪ B|, each a union of intervals.
    let mut both: Vec<(i64, i64)> = a.iter().chain(b.iter()).copied().collect();
    union_length(a) + union_length(b) - union_length(&mut both)
}

/// HTA's critical path: the events its output marks `"critical": 1`, per (pid, tid), in ns.
fn hta_critical_events(relative: &str) -> Intervals {
    let mut bytes = Vec::new();
    let file = std::fs::read(testdata(relative)).expect("HTA output in testdata");
    flate2::read::GzDecoder::new(&file[..])
        .read_to_end(&mut bytes)
        .expect("gunzip");
    let json: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    let mut out = Intervals::new();
    for e in json["traceEvents"].as_array().expect("events") {
        let critical = e["args"]["critical"].as_i64() == Some(1);
        if e["ph"] != "X" || !critical {
            continue;
        }
        let (Some(pid), Some(tid), Some(ts), Some(dur)) = (
            e["pid"].as_i64(),
            e["tid"].as_i64(),
            e["ts"].as_i64(),
            e["dur"].as_i64(),
        ) else {
            continue;
        };
        out.entry((pid, tid))
            .or_default()
            .push((ts * 1000, (ts + dur) * 1000));
    }
    out
}

#[test]
fn covers_htas_critical_path_on_simple_add() {
    let input =
        "HolisticTraceAnalysis/tests/data/critical_path/end_to_end/simple_add/input/trace.json.gz";
    let output = format!(
        "{HTA}/critical_path/end_to_end/simple_add/output/overlaid_critical_path_trace.json.gz"
    );
    let (trace, window) = load(input);
    assert_eq!(window.steps.len(), 1, "one (synthetic) step");
    let timeline = simulate(&window.graph, &RecordedOrder, SimOptions::default()).expect("replay");
    let ours = step_critical_path(&trace, &window, &timeline, 0);
    assert!(!ours.events.is_empty());

    // Our path as recorded-event intervals, per (pid, tid), in absolute ns.
    let mut mine = Intervals::new();
    for &event in &ours.events {
        let e = &trace.events[event.index()];
        let lane = trace.lane(e.lane);
        let start = trace.origin_ns + e.start_ns;
        mine.entry((lane.pid, lane.tid))
            .or_default()
            .push((start, start + e.dur_ns));
    }
    let mut theirs = hta_critical_events(&output);
    let (mut covered, mut total) = (0i64, 0i64);
    for (key, hta) in theirs.iter_mut() {
        total += union_length(&mut hta.clone());
        if let Some(ours) = mine.get_mut(key) {
            covered += intersection_length(hta, ours);
        }
    }
    let coverage = covered as f64 / total as f64;
    assert!(
        coverage >= 0.90,
        "stepcast's critical path covers {:.1}% of HTA's",
        coverage * 100.0
    );
}
