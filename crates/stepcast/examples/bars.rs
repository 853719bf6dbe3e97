#![allow(clippy::print_stdout)]
//! Diagnostic: the self-replay error of each trace given, per step, with and without inferred
//! edges, and its calibrated dispatch gap and shared-device factor. Given the traces of
//! `MULTI_STEP` (`tests/it/main.rs`) it runs them all in about a second, so a change to the
//! graph's model can be checked against every trace before the CLI or the integration tests
//! are rebuilt. With `--table`, the numeric columns of README's "How good is the replay"
//! table instead, one row per trace, in the order given.
use stepcast::graph::{BuildOptions, build};
use stepcast::replay::ReplayReport;

fn main() {
    let mut table = false;
    for arg in std::env::args().skip(1) {
        if arg == "--table" {
            table = true;
            continue;
        }
        let trace = stepcast_trace::read_trace(std::path::Path::new(&arg)).expect("read");
        let w = build(&trace, &BuildOptions::default());
        let r = stepcast::replay::self_replay(&w).expect("replay");
        let name = arg.rsplit('/').next().unwrap_or(&arg);
        if table {
            let inferred = w.graph.pred_kind.iter().filter(|k| k.is_inferred()).count();
            println!("{name} | {}", row(&r, inferred));
            continue;
        }
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

/// Steps | median error | max abs error | w/o inferred: median / max | added-deviation fidelity
/// | absolute fidelity | typical step vs median | inferred edges | held. Medians are upper
/// medians (as the test asserts them); the median error is signed as the step it comes from.
fn row(r: &ReplayReport, inferred: usize) -> String {
    let upper_median = |mut v: Vec<f64>| {
        v.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
        v[v.len() / 2]
    };
    let max_abs = |v: &[f64]| v.iter().map(|x| x.abs()).fold(0.0, f64::max);
    let with: Vec<f64> = r.steps.iter().map(|s| s.error() * 100.0).collect();
    let without: Vec<f64> = r
        .steps
        .iter()
        .map(|s| s.error_without_inferred() * 100.0)
        .collect();
    let fidelity = |f: &dyn Fn(&stepcast::replay::StepReplay) -> f64| {
        let mut v: Vec<f64> = r.steps.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2] * 100.0
    };
    let held = r
        .steps
        .iter()
        .map(|s| (s.replayed_ns - s.replayed_without_inferred_ns) as f64 / s.measured_ns as f64)
        .fold(0.0, f64::max)
        * 100.0;
    let typical = match &r.typical {
        Some(t) if t.declined.is_none() => format!("{} %", signed(t.error() * 100.0, 2)),
        Some(_) => "declined".to_string(),
        None => "none".to_string(),
    };
    format!(
        "{} | {} % | {:.3} % | {:.2} % / {:.2} % | {:.1} % | {:.1} % | {typical} | {inferred} | {:.2} %",
        r.steps.len(),
        signed(upper_median(with.clone()), 3),
        max_abs(&with),
        upper_median(without.clone()).abs(),
        max_abs(&without),
        fidelity(&|s| s.added_deviation_fidelity),
        fidelity(&|s| s.absolute_fidelity),
        held.max(0.0),
    )
}

/// `+0.123` or `−0.123` (a minus sign, as README writes it).
fn signed(value: f64, decimals: usize) -> String {
    let text = format!("{:+.*}", decimals, value);
    text.replacen('-', "−", 1)
}
