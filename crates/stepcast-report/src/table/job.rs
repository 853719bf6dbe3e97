//! `whatif DIR` and `advise DIR` as text: the job's step before and after the change, the ranks
//! that bound it, and what each rank alone would have said.

use super::whatif::speedup;
use super::{ms, new_table, push_notes, push_section, sanitize, step_list, wrap};
use crate::json::{AdviseJobJson, RankShareJson, WhatIfJobJson};

/// `rank 7 (13.485 ms), rank 4 (7.305 ms)`: the ranks holding the critical path, at most four.
fn shares(ranks: &[RankShareJson]) -> String {
    let mut parts: Vec<String> = ranks
        .iter()
        .take(4)
        .map(|r| format!("rank {} ({} ms)", r.rank, ms(r.critical_path_ns)))
        .collect();
    if ranks.len() > 4 {
        parts.push(format!("{} more", ranks.len() - 4));
    }
    if parts.is_empty() {
        "no rank".to_string()
    } else {
        parts.join(", ")
    }
}

/// The ranks of the world not given, as a sentence, if any.
fn missing(missing_ranks: &[i64], world_size: Option<i64>) -> Option<String> {
    if missing_ranks.is_empty() {
        return None;
    }
    let list: Vec<String> = missing_ranks.iter().map(i64::to_string).collect();
    Some(format!(
        "Missing: rank{} {} of the {} the traces declare were not given; the job's figures are \
         those of the ranks given, waiting for no one else.",
        if missing_ranks.len() == 1 { "" } else { "s" },
        list.join(", "),
        world_size.map_or_else(|| "world".to_string(), |w| w.to_string()),
    ))
}

/// `whatif DIR MODEL` as text: the job's prediction first, then its ranks.
pub fn whatif_job_text(doc: &WhatIfJobJson) -> String {
    let what = match &doc.scenario {
        Some(file) => format!("scenario {} ({})", sanitize(&doc.name), sanitize(file)),
        None => sanitize(&doc.name),
    };
    let mut out = String::new();
    if let Some(reason) = &doc.declined {
        out.push_str(&wrap(
            &format!("Declined: {reason}. The figures below are the replay's, not a prediction."),
            "",
        ));
        out.push('\n');
    }
    out.push_str(&wrap(
        &format!(
            "What if {what} on every rank of the job ({} ranks, replayed as one graph): \
             predicted step {} ms vs {} ms now ({} ms as recorded), speedup {}, over steady \
             steps {}.",
            doc.ranks_given,
            ms(doc.predicted_ns),
            ms(doc.baseline_ns),
            ms(doc.measured_ns),
            speedup(doc.speedup),
            step_list(&doc.steady_steps),
        ),
        "",
    ));
    out.push('\n');
    out.push_str(&wrap(
        &format!(
            "Bound by: {} after the change ({} before), of the critical path across ranks per \
             step.",
            shares(&doc.bound_by),
            shares(&doc.bound_by_before)
        ),
        "",
    ));
    out.push('\n');
    if let Some(line) = missing(&doc.missing_ranks, doc.world_size) {
        out.push_str(&wrap(&line, ""));
        out.push('\n');
    }
    if let Some(line) = super::ranks::earlier_windows_words(&doc.earlier_windows) {
        out.push_str(&wrap(&line, ""));
        out.push('\n');
    }
    if let Some(bound) = doc.trust.bound_ns {
        let most = match doc.trust.bound_speedup {
            Some(s) => format!("at most {} ms per step ({})", ms(bound), speedup(Some(s))),
            None => format!("at most {} ms per step (the whole step)", ms(bound)),
        };
        out.push_str(&wrap(
            &format!(
                "Bound: the change can gain the job {most}, from what it cuts along the job's \
                 critical path."
            ),
            "",
        ));
        out.push('\n');
    }
    push_notes(&mut out, "Caveats", &doc.trust.caveats);
    let mut table = new_table(
        &[
            "rank",
            "step ms\nnow",
            "step ms\npredicted",
            "ends before\njob ms",
            "alone\nspeedup",
        ],
        1,
    );
    for r in &doc.ranks {
        let alone = match &r.alone.declined {
            Some(_) => "declined".to_string(),
            None => speedup(r.alone.speedup),
        };
        table.add_row(vec![
            r.rank.to_string(),
            ms(r.baseline_ns),
            ms(r.predicted_ns),
            ms(r.ends_before_job_ns),
            alone,
        ]);
    }
    push_section(
        &mut out,
        "Ranks (each rank's own step in the job's replay; alone: its trace's own what-if, its \
         peers at their recorded lateness)",
        &table.to_string(),
    );
    if doc.collectives.dropped > 0 {
        out.push_str(&wrap(
            &format!(
                "{} of {} matched collectives lost an instance to the change.",
                doc.collectives.dropped, doc.collectives.matched
            ),
            "",
        ));
        out.push('\n');
    }
    out
}

/// `advise DIR` as text: the job's step, then every change best first.
pub fn advise_job_text(doc: &AdviseJobJson) -> String {
    let mut out = String::new();
    out.push_str(&wrap(
        &format!(
            "Advice for the job ({} ranks, each change applied to every rank and replayed as one \
             graph): step {} ms now ({} ms as recorded), over steady steps {}; bound by {}.",
            doc.ranks_given,
            ms(doc.baseline_ns),
            ms(doc.measured_ns),
            step_list(&doc.steady_steps),
            shares(&doc.bound_by),
        ),
        "",
    ));
    out.push('\n');
    if let Some(line) = missing(&doc.missing_ranks, doc.world_size) {
        out.push_str(&wrap(&line, ""));
        out.push('\n');
    }
    if let Some(line) = super::ranks::earlier_windows_words(&doc.earlier_windows) {
        out.push_str(&wrap(&line, ""));
        out.push('\n');
    }
    if let Some(reason) = &doc.declined {
        out.push_str(&wrap(
            &format!("Declined: {reason}. No change is offered."),
            "",
        ));
        out.push('\n');
        return out;
    }
    let mut table = new_table(
        &[
            "change",
            "step ms",
            "speedup",
            "bound ms",
            "alone\nspeedups",
            "bound by",
        ],
        1,
    );
    for c in &doc.candidates {
        let alone: Vec<f64> = c.alone_speedups.iter().flatten().copied().collect();
        let range = match (
            alone.iter().copied().reduce(f64::min),
            alone.iter().copied().reduce(f64::max),
        ) {
            (Some(lo), Some(hi)) => format!("{lo:.2}–{hi:.2}×"),
            _ => "n/a".to_string(),
        };
        table.add_row(vec![
            sanitize(&c.name),
            ms(c.predicted_ns),
            speedup(c.speedup),
            c.trust.bound_ns.map_or_else(|| "n/a".to_string(), ms),
            range,
            c.bound_by
                .first()
                .map_or_else(|| "-".to_string(), |r| format!("rank {}", r.rank)),
        ]);
    }
    push_section(
        &mut out,
        "Changes, best first (alone: what each rank's trace predicts by itself, its peers at \
         their recorded lateness)",
        &table.to_string(),
    );
    // The answer's change is the program's: hardware is ranked in the table beside it.
    let best = doc.candidates.iter().find(|c| !c.hardware);
    if let Some(best) = best {
        out.push_str(&wrap(
            &format!(
                "Best change to the program: {}, {} ms per step ({}).",
                sanitize(&best.name),
                ms(best.predicted_ns),
                speedup(best.speedup)
            ),
            "",
        ));
        out.push('\n');
    }
    let caveats: Vec<String> = best.map(|c| c.trust.caveats.clone()).unwrap_or_default();
    push_notes(&mut out, "Caveats of the best change", &caveats);
    let failed: Vec<String> = doc
        .failed
        .iter()
        .map(|(name, why)| format!("{name}: {why}"))
        .collect();
    push_notes(&mut out, "Not offered", &failed);
    out
}
