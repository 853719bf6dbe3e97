//! Timestamps keep every nanosecond written in the file; 64-bit integers do not break reading.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use stepcast_trace::EventKind;

use crate::{decompressed, kineto_file, loaded_trace};

const NS_TRACE: &str = "HolisticTraceAnalysis/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz";
const LARGE_INT_TRACE: &str = "HolisticTraceAnalysis/tests/data/large_integer_trace/rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz";

#[derive(Deserialize)]
struct Doc<'a> {
    #[serde(borrow, rename = "traceEvents")]
    events: Vec<&'a RawValue>,
}

/// The fields of a record this test looks at, with numbers kept as written.
#[derive(Deserialize)]
struct Record<'a> {
    #[serde(borrow)]
    ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    ts: Option<&'a RawValue>,
    #[serde(borrow)]
    dur: Option<&'a RawValue>,
}

/// Microseconds written as decimal text (`1712195495502094.123`) → exact nanoseconds, with
/// integer arithmetic only. `None` when the text has more than 3 fraction digits (sub-ns).
fn exact_ns(text: &str) -> Option<i64> {
    let (int_part, frac) = text.split_once('.').unwrap_or((text, ""));
    if frac.len() > 3 || int_part.is_empty() || !int_part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ns: i64 = int_part.parse::<i64>().ok()?.checked_mul(1000)?;
    let mut scale = 100;
    for b in frac.bytes() {
        if !b.is_ascii_digit() {
            return None;
        }
        ns += i64::from(b - b'0') * scale;
        scale /= 10;
    }
    Some(ns)
}

#[test]
fn exact_ns_helper() {
    assert_eq!(
        exact_ns("1712195495502094.123"),
        Some(1_712_195_495_502_094_123)
    );
    assert_eq!(exact_ns("12.5"), Some(12_500));
    assert_eq!(exact_ns("7"), Some(7_000));
    assert_eq!(exact_ns("0.0015"), None);
}

#[test]
fn timestamps_keep_nanosecond_fractions() {
    let trace = loaded_trace(NS_TRACE);
    let text = decompressed(&kineto_file(NS_TRACE));
    let doc: Doc = serde_json::from_slice(&text).expect("ns_resolution_trace is JSON");
    let by_index: HashMap<u32, &stepcast_trace::Event> =
        trace.events.iter().map(|e| (e.file_index, e)).collect();

    let mut checked = 0usize;
    let mut beyond_f64 = 0usize;
    let mut step_starts: HashMap<u64, i64> = HashMap::new();
    for (index, raw) in doc.events.iter().enumerate() {
        let record: Record = serde_json::from_str(raw.get()).expect("record");
        if record.ph.as_deref() != Some("X") {
            continue;
        }
        let (Some(ts), Some(dur)) = (record.ts, record.dur) else {
            continue;
        };
        let ts_text = ts.get();
        if !ts_text.contains('.') {
            continue;
        }
        let want_start = exact_ns(ts_text).unwrap_or_else(|| panic!("ts {ts_text}"));
        let want_dur = exact_ns(dur.get()).unwrap_or_else(|| panic!("dur {}", dur.get()));
        if let Some(number) = record
            .name
            .as_deref()
            .and_then(|n| n.strip_prefix("ProfilerStep#"))
            .and_then(|n| n.parse().ok())
        {
            step_starts.insert(number, want_start);
        }
        let Some(event) = by_index.get(&(index as u32)) else {
            continue; // a step marker, sync, or skipped record
        };
        assert_eq!(
            event.start_ns + trace.origin_ns,
            want_start,
            "event #{index} ts {ts_text}"
        );
        assert_eq!(event.dur_ns, want_dur, "event #{index} dur {}", dur.get());
        // What a reader going through f64 would get.
        let via_f64 = (ts_text.parse::<f64>().expect("float") * 1000.0).round() as i64;
        if via_f64 != want_start {
            beyond_f64 += 1;
        }
        checked += 1;
    }
    assert!(
        checked > 40_000,
        "only {checked} fractional timestamps checked"
    );
    assert!(
        beyond_f64 > 0,
        "no timestamp in the file needs more than f64 precision; the test proves nothing"
    );
    assert_eq!(step_starts.len(), trace.steps.len());
    for step in &trace.steps {
        assert_eq!(
            Some(&(step.start_ns + trace.origin_ns)),
            step_starts.get(&step.number),
            "ProfilerStep#{}",
            step.number
        );
    }
}

#[test]
fn integers_beyond_i64_do_not_break_reading() {
    // The file itself must still hold the 64-bit value, or this test checks nothing.
    let text = String::from_utf8(decompressed(&kineto_file(LARGE_INT_TRACE))).expect("utf-8");
    let comms_id: u64 = "10159970886766084423".parse().expect("u64");
    assert!(comms_id > i64::MAX as u64);
    assert!(text.contains("\"Comms Id\": 10159970886766084423"));

    let trace = loaded_trace(LARGE_INT_TRACE);
    assert_eq!(trace.records, 2);
    let kinds: Vec<(EventKind, &str)> = trace
        .events
        .iter()
        .map(|e| (e.kind, trace.name(e.name)))
        .collect();
    assert_eq!(kinds.len(), 2);
    assert!(kinds.contains(&(EventKind::Kernel, "ncclKernel_AllReduce")));
    assert!(kinds.contains(&(EventKind::CpuOp, "record_param_comms")));
    assert_eq!(trace.diagnostics.total_skipped(), 0);
}
