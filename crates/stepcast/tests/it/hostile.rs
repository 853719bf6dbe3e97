//! Hostile input: truncated and corrupted copies of real traces never panic, anywhere in the
//! pipeline. A document cut short is an error naming the file; a corrupted one that still
//! reads is built, replayed and analyzed without a panic (its figures may be anything).

use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use stepcast::analyze::analyze;
use stepcast::graph::{BuildOptions, build};
use stepcast::replay::self_replay;
use stepcast_trace::read_trace_bytes;

use super::testdata;

fn json_of(relative: &str) -> Vec<u8> {
    let bytes = std::fs::read(testdata(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"));
    if !relative.ends_with(".gz") {
        return bytes;
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("{relative}: {e}"));
    out
}

/// What happened to one input: `Ok(true)` read and went through the pipeline, `Ok(false)` a
/// read error naming the file, `Err` a panic or an error that does not name the file.
fn run(bytes: &[u8]) -> Result<bool, String> {
    let path = Path::new("hostile.json");
    let outcome = catch_unwind(AssertUnwindSafe(|| match read_trace_bytes(bytes, path) {
        Err(e) => {
            if e.to_string().contains("hostile.json") {
                Ok(false)
            } else {
                Err(format!("error without the file's name: {e}"))
            }
        }
        Ok(trace) => {
            let window = build(&trace, &BuildOptions::default());
            // A corrupted graph may legitimately fail to replay (an error, not a panic).
            let _ = self_replay(&window);
            let _ = analyze(&trace, &window, None);
            Ok(true)
        }
    }));
    outcome.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(format!("panic: {message}"))
    })
}

/// Small real traces: a backward thread's call stacks, cross-stream event syncs, and a
/// two-step ROCm training run (steps, flows, `hip*` calls).
const SMALL: &[&str] = &[
    "HolisticTraceAnalysis/tests/data/call_stack/backward_thread.json",
    "HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz",
    "HolisticTraceAnalysis/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
];

#[test]
fn a_trace_cut_anywhere_is_an_error_never_a_panic() {
    let mut failures = Vec::new();
    for relative in SMALL {
        let json = json_of(relative);
        // The document's last byte that is not trailing whitespace: cutting before it always
        // loses part of the document.
        let end = json
            .iter()
            .rposition(|b| !b.is_ascii_whitespace())
            .expect("a non-empty document");
        let step = (end / 400).max(1);
        for cut in (0..end).step_by(step) {
            match run(&json[..cut]) {
                Ok(false) => {}
                Ok(true) => failures.push(format!("{relative}: cut at {cut} read as a trace")),
                Err(e) => failures.push(format!("{relative}: cut at {cut}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
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
}

#[test]
fn a_corrupted_trace_never_panics_in_the_pipeline() {
    // Bytes that change a JSON document's structure or numbers, and two arbitrary ones.
    const REPLACEMENTS: &[u8] = b"{}[]\":,0-9e.+ -\x00\xff";
    let mut rng = Lcg(0x5eed);
    let mut failures = Vec::new();
    let mut read = 0;
    for relative in SMALL {
        let json = json_of(relative);
        for _ in 0..400 {
            let mut bytes = json.clone();
            for _ in 0..1 + rng.next() % 3 {
                let at = (rng.next() as usize) % bytes.len();
                bytes[at] = REPLACEMENTS[(rng.next() as usize) % REPLACEMENTS.len()];
            }
            match run(&bytes) {
                Ok(true) => read += 1,
                Ok(false) => {}
                Err(e) => failures.push(format!("{relative}: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Most single-byte corruptions hit a value, not the structure: the pipeline really ran.
    assert!(read > 100, "only {read} corrupted traces read");
}
