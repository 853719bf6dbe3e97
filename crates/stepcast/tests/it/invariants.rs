//! Issue #25: predictions respond to change as a machine would, on every trace in `testdata/`
//! (every format stepcast reads), for every model and every combination `advise` tries:
//!
//! - identity: everything ×1 predicts exactly the baseline;
//! - uniform: everything k× faster gives between 1× and k×, growing with k;
//! - monotone: a transform that only removes or shortens work is not slower, unless its
//!   `anomaly` names the constraint that made it so (an anomaly declined as the engine's or
//!   the model's defect names none);
//! - bound: the gain never exceeds the bound, and the bound never exceeds the step;
//! - anchored: the baseline is within 3 % of the measured steady period, or every prediction
//!   is declined with the reason;
//! - self-replay: every step of the window (warm-up too) replays (without inferred edges)
//!   within 2 % of its measured span, as `replay` reports it, or every prediction is declined
//!   naming the step.
//!
//! `../shared/tools/invariants.py` checks the same from outside, through the CLI.

use std::path::{Path, PathBuf};

use stepcast::analyze::mapping::map;
use stepcast::graph::{BuildOptions, build};
use stepcast::whatif::{
    Context, Hardware, Model, Outcome, advise, apply_models, recorded_timeline, steady_period,
};

/// The replay's rounding of per-step means, and what `invariants.py` allows.
const SHARE: f64 = 0.005;
const GAIN_TOLERANCE_NS: i64 = 1_000;

/// Every trace file under `testdata/` that stepcast reads (by content, as the CLI does).
fn traces() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        entries.sort();
        for path in entries {
            let name = path.to_string_lossy().to_string();
            if path.is_dir() {
                walk(&path, out);
            } else if (name.ends_with(".json") || name.ends_with(".json.gz"))
                && !name.ends_with(".timing.json")
                || name.ends_with(".sqlite")
                || name.ends_with(".xplane.pb")
            {
                out.push(path);
            }
        }
    }
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata"));
    let mut out = Vec::new();
    walk(&root, &mut out);
    out
}

/// Every factor of the machine `k`: compute, memory, host and copies.
pub(crate) fn everything(k: f64) -> Model {
    Model::FasterHardware(Hardware {
        compute: k,
        memory: k,
        cpu: k,
        copy: k,
        ..Hardware::default()
    })
}

fn gain_ns(outcome: &Outcome) -> i64 {
    outcome.baseline.step_ns - outcome.predicted.step_ns
}

/// The violations of one trace, one line each; `None` when stepcast does not read it as a
/// trace with steps (an Execution Trace, a memory export: nothing to predict).
fn violations(path: &Path) -> Option<Vec<String>> {
    let trace = stepcast_trace::read_trace(path).ok()?;
    let window = build(&trace, &BuildOptions::default());
    if window.steps.is_empty() || window.graph.task_count() == 0 {
        return None;
    }
    let mapping = map(&trace, &window);
    let context = Context::new(&trace, &window, &mapping);
    let name = path.display();
    let mut out = Vec::new();
    let Ok(identity) = apply_models(&context, &[everything(1.0)]) else {
        return None;
    };
    // Anchored: the baseline against the recorded steady period, or declined.
    let graph = &window.graph;
    let measured = steady_period(&window, graph, &recorded_timeline(graph))?.step_ns;
    let off = identity.baseline.step_ns as f64 / measured.max(1) as f64 - 1.0;
    if identity.declined.is_none() && off.abs() > 0.03 {
        out.push(format!(
            "{name}: anchored: baseline {} ns is {:+.1} % off the measured period {measured} ns, \
             and nothing is declined",
            identity.baseline.step_ns,
            off * 100.0
        ));
    }
    // Self-replay: every step of the window, as `replay` measures them.
    let report = stepcast::replay::self_replay(&window).expect("replays");
    let worst = report
        .steps
        .iter()
        .filter(|s| s.measured_ns > 0)
        .max_by(|a, b| {
            a.error_without_inferred()
                .abs()
                .total_cmp(&b.error_without_inferred().abs())
        });
    if let Some(worst) = worst
        && worst.error_without_inferred().abs() > 0.02
    {
        let named = format!("step {}", worst.number);
        match &identity.declined {
            None => out.push(format!(
                "{name}: self-replay: step {} is {:+.1} % off without inferred edges, and \
                 nothing is declined",
                worst.number,
                worst.error_without_inferred() * 100.0
            )),
            Some(reason) if off.abs() <= 0.03 && !reason.contains(&named) => out.push(format!(
                "{name}: self-replay: declined without naming {named}: {reason}"
            )),
            Some(_) => {}
        }
    }
    if let Some(reason) = &identity.declined {
        assert!(!reason.is_empty());
        let advice = advise(&context).expect("advises");
        if !advice.candidates.is_empty() || advice.declined.is_none() {
            out.push(format!("{name}: declined, yet advise offers candidates"));
        }
        return Some(out);
    }
    if identity.predicted.step_ns != identity.baseline.step_ns {
        out.push(format!(
            "{name}: identity: everything ×1 predicts {} ns, the baseline is {} ns",
            identity.predicted.step_ns, identity.baseline.step_ns
        ));
    }
    let mut previous = 1.0 - SHARE;
    for k in [1.5, 2.0, 4.0] {
        let outcome = apply_models(&context, &[everything(k)]).expect("predicts");
        let s = outcome.speedup;
        if s < previous - SHARE || s > k * (1.0 + SHARE) {
            out.push(format!(
                "{name}: uniform: everything ×{k} faster predicts {s:.4}×, after {previous:.4}×"
            ));
        }
        previous = s;
    }
    let advice = advise(&context).expect("advises");
    for c in &advice.candidates {
        let outcome = &c.outcome;
        let bound = outcome.bound_ns.expect("assessed");
        let step = outcome.baseline.step_ns;
        if bound > step {
            out.push(format!(
                "{name}: bound: {}'s bound {bound} ns exceeds the step {step} ns",
                c.name()
            ));
        }
        if gain_ns(outcome) > bound + GAIN_TOLERANCE_NS {
            out.push(format!(
                "{name}: bound: {} gains {} ns, its bound is {bound} ns",
                c.name(),
                gain_ns(outcome)
            ));
        }
        let removes = c.models.iter().all(Model::only_removes_work);
        // An anomaly the tool declines as its own defect names no constraint.
        let unexplained = outcome.anomaly.is_some() && outcome.declined == outcome.anomaly;
        if removes && outcome.speedup < 1.0 - SHARE && (outcome.anomaly.is_none() || unexplained) {
            out.push(format!(
                "{name}: monotone: {} only removes work but predicts {:.4}×, with no constraint \
                 named: {}",
                c.name(),
                outcome.speedup,
                outcome.anomaly.as_deref().unwrap_or("no anomaly")
            ));
        }
    }
    Some(out)
}

/// Violations found and not yet fixed, each with its trace, the start of its message after the
/// trace's name, and what is known of its cause. The test fails on any other violation, and on
/// a listed one that no longer occurs (then remove it here): the list only shrinks.
const KNOWN_OPEN: &[(&str, &str, &str)] = &[];

#[test]
fn predictions_respond_to_change_as_a_machine_would() {
    let traces = traces();
    let mut checked = 0;
    let mut all = Vec::new();
    for path in &traces {
        if let Some(found) = violations(path) {
            checked += 1;
            all.extend(found);
        }
    }
    // Every format's testdata: dozens of traces, not a handful that happened to read.
    assert!(
        checked >= 60,
        "only {checked} of {} files checked",
        traces.len()
    );
    let is_known = |v: &str, &(file, start, _): &(&str, &str, &str)| {
        v.split_once(": ")
            .is_some_and(|(path, what)| path.ends_with(file) && what.starts_with(start))
    };
    let stale: Vec<String> = KNOWN_OPEN
        .iter()
        .filter(|known| !all.iter().any(|v| is_known(v, known)))
        .map(|(file, start, _)| format!("{file}: {start}"))
        .collect();
    all.retain(|v| !KNOWN_OPEN.iter().any(|known| is_known(v, known)));
    assert!(
        stale.is_empty(),
        "listed in KNOWN_OPEN but no longer found (remove them there):\n{}",
        stale.join("\n")
    );
    assert!(
        all.is_empty(),
        "{} violations:\n{}",
        all.len(),
        all.join("\n")
    );
}
