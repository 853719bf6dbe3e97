//! The recorded Horovod run (`testdata/horovod/gloo_mlp_2proc/`): the timeline alone and
//! joined with rank 0's PyTorch trace self-replay within 2 % per step without timing-inferred
//! edges, and the joined graph holds the per-tensor communication edges. So do the
//! TensorFlow 1 `Timeline` steps recorded here (`testdata/tf_timeline/mlp_cpu/`).

use stepcast::graph::{BuildOptions, EdgeKind, build};
use stepcast::replay::self_replay;
use stepcast_trace::{ReadOptions, read_processes};

fn sample(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/horovod/gloo_mlp_2proc"
    ))
    .join(name)
}

#[test]
fn horovod_self_replay_is_within_two_percent_without_inferred_edges() {
    let joined = ReadOptions {
        comm_timeline: Some(sample("horovod_timeline.json.gz")),
        ..ReadOptions::default()
    };
    for (file, options) in [
        ("horovod_timeline.json.gz", ReadOptions::default()),
        ("rank0.pt.trace.json.gz", joined),
    ] {
        let trace = read_processes(&sample(file), &options)
            .unwrap_or_else(|e| panic!("{e}"))
            .remove(0);
        let window = build(&trace, &BuildOptions::default());
        let g = &window.graph;
        let count = |kind: EdgeKind| g.pred_kind.iter().filter(|&&k| k == kind).count();
        assert!(count(EdgeKind::TensorStage) > 0, "{file}: no stage edges");
        if options.comm_timeline.is_some() {
            // Gradient → negotiation and all-reduce → consumer.
            assert!(
                count(EdgeKind::TensorWait) > 0,
                "{file}: no producer/consumer edges"
            );
            assert!(window.steps.len() >= 4, "{file}: the ProfilerStep markers");
        }
        let report = self_replay(&window).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(!report.steps.is_empty());
        for step in &report.steps {
            let error = step.error_without_inferred().abs();
            assert!(
                error <= 0.02,
                "{file} step {}: |error| without inferred edges {error:.4}",
                step.number
            );
        }
    }
}

#[test]
fn tf_timeline_self_replay_is_within_two_percent_without_inferred_edges() {
    let dir = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/tf_timeline/mlp_cpu"
    ));
    for step in 0..3 {
        let path = dir.join(format!("step{step}.timeline.json.gz"));
        let trace = read_processes(&path, &ReadOptions::default())
            .unwrap_or_else(|e| panic!("{e}"))
            .remove(0);
        let window = build(&trace, &BuildOptions::default());
        let data_edges = window
            .graph
            .pred_kind
            .iter()
            .filter(|&&k| k == EdgeKind::Data)
            .count();
        assert!(data_edges > 0, "{}: DataFlow edges", path.display());
        let report = self_replay(&window).unwrap_or_else(|e| panic!("{e}"));
        for s in &report.steps {
            let error = s.error_without_inferred().abs();
            assert!(
                error <= 0.02,
                "{} step {}: {error:.4}",
                path.display(),
                s.number
            );
        }
    }
}
