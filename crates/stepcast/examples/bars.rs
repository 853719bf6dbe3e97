#![allow(clippy::print_stdout)]
//! Diagnostic: the self-replay error of each trace given, per step, with and without inferred
//! edges, and its calibrated dispatch gap and shared-device factor. Given the traces of
//! `MULTI_STEP` (`tests/it/main.rs`) it runs them all in about a second, so a change to the graph's model can be checked against every trace before the CLI
//! or the integration tests are rebuilt.
use stepcast::graph::{BuildOptions, build};
fn main() {
    for path in std::env::args().skip(1) {
        let trace = stepcast_trace::read_trace(std::path::Path::new(&path)).expect("read");
        let w = build(&trace, &BuildOptions::default());
        let r = stepcast::replay::self_replay(&w).expect("replay");
        let mut e: Vec<f64> = r.steps.iter().map(|s| s.error().abs() * 100.0).collect();
        let mut n: Vec<f64> = r
            .steps
            .iter()
            .map(|s| s.error_without_inferred().abs() * 100.0)
            .collect();
        let per: Vec<String> = r
            .steps
            .iter()
            .map(|s| format!("{:+.2}", s.error_without_inferred() * 100.0))
            .collect();
        e.sort_by(f64::total_cmp);
        n.sort_by(f64::total_cmp);
        let name = path.rsplit('/').next().unwrap_or(&path);
        println!(
            "{:40} med {:.2} max {:.2} | w/o med {:.2} max {:.2} | gap {} ×{}‰ | {}",
            &name[..name.len().min(40)],
            e[e.len() / 2],
            e[e.len() - 1],
            n[n.len() / 2],
            n[n.len() - 1],
            w.report.dispatch_gap_ns,
            w.report.shared_gap_permille,
            per.join(" ")
        );
    }
}
