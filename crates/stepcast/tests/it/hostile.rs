//! Hostile input: truncated and corrupted copies of real traces never panic, anywhere in the
//! pipeline. A document cut inside an event is an error naming the file (cut between events,
//! it reads as the Chrome trace format allows, and says so); a corrupted one that still reads
//! is built, replayed, analyzed, put through the what-ifs, the advisor, DDP and a two-rank
//! replay without a panic (its figures may be anything). Hostile values (nested `Input Dims`,
//! absurd scenario factors) get an error or a sane figure, never a wrapped one. The output
//! side (an input, a device, a pipe, a link or a folder of the user's given as `-o`) is the
//! CLI's, the only crate that writes: `crates/stepcast-cli/tests/it/outputs.rs`.

use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use stepcast::analyze::analyze;
use stepcast::analyze::mapping::map;
use stepcast::graph::{BuildOptions, build};
use stepcast::ranks::{RankTrace, replay_ranks};
use stepcast::replay::self_replay;
use stepcast::whatif::ddp::insert::{INSERT_NAMES, InsertNames};
use stepcast::whatif::ddp::{DdpConfig, DdpInputs, sweep_with};
use stepcast::whatif::{Context, Model, Scenario, advise, predict, what_if};
use stepcast_trace::{NameId, Trace, read_trace_bytes};

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
            pipeline(trace);
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

/// Every command's work on one trace. A corrupted graph may legitimately fail to replay or
/// predict: an error, not a panic.
fn pipeline(mut trace: Trace) {
    for name in INSERT_NAMES {
        trace.names.intern(name);
    }
    let window = build(&trace, &BuildOptions::default());
    let _ = self_replay(&window);
    let _ = analyze(&trace, &window, None);
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    // `whatif`: a model, and a scenario with the largest factor taken.
    let model = Model::by_name("faster_gpu").expect("a built-in model");
    let _ = what_if(&context, |edit| model.apply(&context, edit).map(|_| ()));
    let _ = Scenario::parse(MAX_SCALE_SCENARIO)
        .map(|scenario| what_if(&context, |edit| scenario.apply(&context, edit)));
    // `advise`.
    let _ = advise(&context);
    // `whatif ddp`, with the collectives inserted from the gradients.
    if let Ok(baseline) = predict(&window, &window.graph) {
        let config = DdpConfig {
            gpus: 2,
            gpus_per_node: 2,
            reinsert: true,
            ..DdpConfig::default()
        };
        let inputs = DdpInputs {
            gradient_file: None,
            names: Some(InsertNames::resolve(&trace, NameId(0))),
        };
        let _ = sweep_with(&context, &baseline, &[config], &inputs);
    }
    // Multi-rank replay: the trace as two ranks of one job.
    let ranks = [0, 1].map(|rank| RankTrace {
        rank,
        trace: &trace,
        window: &window,
    });
    let _ = replay_ranks(&ranks);
}

/// Every task a million times longer: the largest factor a scenario takes.
const MAX_SCALE_SCENARIO: &str = "[[transform]]\nselect = {}\nscale = 1e6\n";

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
                // Between two events the Chrome trace format allows the end; the reader must
                // then say that the array was not closed.
                Ok(true) => match read_trace_bytes(&json[..cut], Path::new("hostile.json")) {
                    Ok(trace)
                        if trace
                            .diagnostics
                            .notes
                            .iter()
                            .any(|n| n.contains("not closed")) => {}
                    _ => failures.push(format!("{relative}: cut at {cut} read as a whole trace")),
                },
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

// See: issue #11, item 5. A scenario factor of 1e300 saturated a cost, then the engine's sums
// wrapped and the prediction read 1.001x.
#[test]
fn an_absurd_factor_is_an_error_and_the_largest_taken_never_wraps() {
    let scenario = |scale: &str| format!("[[transform]]\nselect = {{}}\nscale = {scale}\n");
    for absurd in ["1e300", "1e7", "-1", "inf", "nan"] {
        let error = Scenario::parse(&scenario(absurd)).expect_err(absurd);
        assert!(
            error.to_string().contains("invalid factor"),
            "{absurd}: {error}"
        );
    }
    let (mut trace, _) = super::load(SMALL[2]);
    for name in INSERT_NAMES {
        trace.names.intern(name);
    }
    let window = build(&trace, &BuildOptions::default());
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let largest = Scenario::parse(MAX_SCALE_SCENARIO).expect("the largest factor is taken");
    let outcome = what_if(&context, |edit| largest.apply(&context, edit)).expect("predicts");
    assert!(
        outcome.predicted.step_ns > 1000 * outcome.baseline.step_ns,
        "every task a million times longer: {} ns, was {} ns",
        outcome.predicted.step_ns,
        outcome.baseline.step_ns
    );
    assert!(outcome.speedup < 1e-3, "speedup {}", outcome.speedup);
}
