//! Self-replay of every Nsight Systems export in `testdata/nsys/` (issue #14): each process of
//! each file, as one window and, where it has them, with steps from NVTX ranges.

use std::path::PathBuf;

use stepcast::graph::{BuildOptions, build};
use stepcast::replay::self_replay;
use stepcast_trace::{ReadOptions, read_processes};

fn export(relative: &str) -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/nsys")).join(relative)
}

/// Each export with the most a step's replay may be off, without the edges inferred from
/// timing, and the NVTX range that makes steps where the file has one.
const EXPORTS: &[(&str, f64, Option<&str>)] = &[
    ("nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite", 0.02, None),
    (
        "nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite",
        0.02,
        Some("^ncclGroupEnd$"),
    ),
    ("nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite", 0.02, None),
    (
        "pipit/pipit/tests/data/saxpy-mpi-cuda_nsys_perlmutter0.sqlite",
        0.02,
        None,
    ),
    (
        "pipit/pipit/tests/data/cloverleaf-nsys/perlmutter-cloverleaf-cuda.sqlite",
        0.02,
        None,
    ),
];

#[test]
fn nsys_self_replay_is_within_two_percent_without_inferred_edges() {
    let mut failures = Vec::new();
    for &(relative, bar, step_range) in EXPORTS {
        let options = ReadOptions {
            step_range: step_range.map(|r| regex::Regex::new(r).expect("regex")),
            ..ReadOptions::default()
        };
        let traces = read_processes(&export(relative), &options).unwrap_or_else(|e| panic!("{e}"));
        for trace in &traces {
            let window = build(trace, &BuildOptions::default());
            let report = self_replay(&window).unwrap_or_else(|e| panic!("{relative}: {e}"));
            assert!(!report.steps.is_empty());
            for step in &report.steps {
                let error = step.error_without_inferred().abs();
                if error > bar {
                    failures.push(format!(
                        "{relative} (process {:?}, steps {step_range:?}) step {}: |error| without inferred edges {error:.4}, bar {bar}",
                        trace.process_id, step.number
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "bars not met:\n{}",
        failures.join("\n")
    );
}
