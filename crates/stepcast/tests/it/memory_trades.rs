//! The memory the trades say they save, held to what the same programs' steps really peaked
//! at (`testdata/kineto/stepcast/cpu-memory-probe/`: `probe.py`, its `peaks.tsv` and the
//! bars, fixed before it ran, in its README).

use stepcast::whatif::Model;

use crate::whatif::{context, load_mapped};

/// One pair: the program (`<workload>-base` is BEFORE's trace and configuration,
/// `<workload>-<variant>` AFTER's configuration), the model, and whether its saving meets the ±30 % bar today (a missed bar stays in
/// the list; the test fails when it is met, so that the list is kept true).
struct MemoryPair {
    folder: &'static str,
    workload: &'static str,
    variant: &'static str,
    model: Model,
    met: bool,
}

const RECOMPUTE: Model = Model::Recompute { fraction: None };
const GIST: Model = Model::Gist { fraction: 1.0 };

const PAIRS: [MemoryPair; 9] = [
    pair("cpu-recompute-pairs", "mlp", "checkpoint", RECOMPUTE, false),
    pair(
        "cpu-recompute-pairs",
        "transformer",
        "checkpoint",
        RECOMPUTE,
        false,
    ),
    pair("cpu-recompute-pairs", "cnn", "checkpoint", RECOMPUTE, false),
    pair("cpu-recompute-pairs", "gpt", "checkpoint", RECOMPUTE, true),
    pair(
        "cpu-recompute-pairs",
        "resmlp",
        "checkpoint",
        RECOMPUTE,
        false,
    ),
    pair("cpu-gist-pairs", "bigcnn", "gist", GIST, false),
    pair("cpu-gist-pairs", "bigresmlp", "gist", GIST, true),
    pair("cpu-gist-pairs", "biggpt", "gist", GIST, true),
    pair("cpu-gist-pairs", "bigtransformer", "gist", GIST, false),
];

/// The pair of `workload`'s `base` and `variant` configurations, BEFORE's trace in `folder`.
const fn pair(
    folder: &'static str,
    workload: &'static str,
    variant: &'static str,
    model: Model,
    met: bool,
) -> MemoryPair {
    MemoryPair {
        folder,
        workload,
        variant,
        model,
        met,
    }
}

/// The probe's lines: (configuration, start bytes, peak bytes) of each profiled step that
/// has a start.
fn probe_steps() -> Vec<(String, i64, i64)> {
    let path = crate::testdata("stepcast/cpu-memory-probe/peaks.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    assert!(
        header.contains("record_shapes=False"),
        "the probe must not hold tensors: {header}"
    );
    lines
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split('\t').collect();
            let [config, _, start, peak] = fields[..] else {
                panic!("{path:?}: {line}");
            };
            Some((config.to_string(), start.parse().ok()?, peak.parse().ok()?))
        })
        .collect()
}

/// A configuration's step peak above its start, in bytes: the median over its profiled steps
/// that have a start.
fn step_growth(steps: &[(String, i64, i64)], config: &str) -> i64 {
    let mut growth: Vec<i64> = steps
        .iter()
        .filter(|(c, _, _)| c == config)
        .map(|(_, start, peak)| peak - start)
        .collect();
    assert!(!growth.is_empty(), "{config}: no step with a start");
    growth.sort_unstable();
    growth[growth.len() / 2]
}

/// Each trade's `saves` against the measured drop of the step's peak: met or missed as listed
/// (±30 %, the README's bar), and never a saving claimed where the model has no activation
/// bytes.
#[test]
fn memory_trades_savings_meet_or_miss_the_measured_peaks_as_listed() {
    let peaks = probe_steps();
    for p in &PAIRS {
        let before = format!("{}-base", p.workload);
        let trace = format!("stepcast/{}/{before}.json.gz", p.folder);
        let loaded = load_mapped(&trace);
        let memory = p
            .model
            .memory_effect(&context(&loaded))
            .expect("a memory trade");
        assert!(memory.saved_bytes > 0, "{trace}");
        let after = format!("{}-{}", p.workload, p.variant);
        let measured = step_growth(&peaks, &before) - step_growth(&peaks, &after);
        let met = measured > 0 && (memory.saved_bytes as f64 / measured as f64 - 1.0).abs() <= 0.30;
        assert_eq!(
            met,
            p.met,
            "{trace} {}: saves {} bytes, the step's peak fell by {measured}",
            p.model.name(),
            memory.saved_bytes
        );
    }
}
