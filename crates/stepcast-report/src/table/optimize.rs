//! The `optimize` document as text: the plan move by move, then the references.

use super::{ms, new_table, push_notes, push_section, sanitize, wrap};
use crate::json::{MoveJson, OptimizeJson};

/// A move in a few words, for a table cell.
fn move_label(m: &MoveJson) -> String {
    match m {
        MoveJson::FuseOps { phase, kernels } => {
            format!(
                "fuse {} {phase} kernels: {}",
                kernels.len(),
                kernels.join(" → ")
            )
        }
        MoveJson::FuseAllElementwise => "fuse every element-wise chain".to_string(),
        MoveJson::MergeBuckets { first, second } => {
            format!("merge all-reduces #{first} and #{second}")
        }
        MoveJson::BucketCap { bytes } => format!("DDP buckets of {} MiB", bytes / (1 << 20)),
        MoveJson::Partition { slot, chunks } => {
            format!("split all-reduce #{slot} into {chunks}")
        }
        MoveJson::Model { name } => name.clone(),
        MoveJson::Recompute { percent } => format!("recompute {percent} % of activations"),
        MoveJson::RecomputeBlocks => "recompute each repeated block".to_string(),
        MoveJson::Offload { percent } => format!("offload {percent} % of activations"),
    }
}

fn label(m: &MoveJson) -> String {
    let text = sanitize(&move_label(m));
    if text.chars().count() > 70 {
        let cut: String = text.chars().take(69).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// `optimize`'s answer for a terminal.
pub fn optimize_text(doc: &OptimizeJson) -> String {
    let files: Vec<String> = doc
        .traces
        .iter()
        .map(|t| t.file.clone().unwrap_or_else(|| "(trace)".to_string()))
        .collect();
    let subject = match files.as_slice() {
        [one] => one.clone(),
        many => format!("{} ranks ({} …)", many.len(), many[0]),
    };
    let mut out = String::new();
    if let Some(reason) = &doc.declined {
        out.push_str(&wrap(
            &format!(
                "Declined: {}. The plan's figures below are the replay's, not a prediction.",
                sanitize(reason)
            ),
            "",
        ));
        out.push('\n');
    }
    out.push_str(&wrap(
        &format!(
            "Plan for {}: step {} ms now, {} ms with the plan ({:.3}×, {} ms less per step); \
             {} moves replayed in {} rounds, {} left out off the critical path and {} pruned by \
             their bound; search {}.",
            sanitize(&subject),
            ms(doc.baseline_ns),
            ms(doc.planned_ns),
            doc.speedup,
            ms(doc.gain_ns),
            doc.search.evaluated,
            doc.search.rounds,
            doc.search.off_path,
            doc.search.pruned,
            doc.search.stopped.replace('_', " "),
        ),
        "",
    ));
    out.push('\n');
    if let Some(line) = super::ranks::earlier_windows_words(&doc.earlier_windows) {
        out.push_str(&wrap(&line, ""));
        out.push('\n');
    }
    if doc.global_replay {
        let shares = |ranks: &[crate::json::RankShareJson]| -> String {
            let parts: Vec<String> = ranks
                .iter()
                .take(4)
                .map(|r| format!("rank {} ({} ms)", r.rank, ms(r.critical_path_ns)))
                .collect();
            if parts.is_empty() {
                "no rank".to_string()
            } else {
                parts.join(", ")
            }
        };
        out.push_str(&wrap(
            &format!(
                "The job's step is its global replay: every rank with the plan, replayed as one \
                 graph, each waiting for its peers. Bound by {} with the plan ({} now), of the \
                 critical path across ranks per step.",
                shares(&doc.bound_by),
                shares(&doc.bound_by_before)
            ),
            "",
        ));
        out.push('\n');
    }
    if doc.moves.is_empty() {
        push_section(
            &mut out,
            "Plan",
            "No move makes the step faster: keep the program as it is.",
        );
    } else {
        let mut table = new_table(&["#", "pass", "move", "alone ms", "after ms", "adds ms"], 3);
        for (i, m) in doc.moves.iter().enumerate() {
            table.add_row(vec![
                (i + 1).to_string(),
                m.pass.to_string(),
                label(&m.step),
                ms(m.alone_gain_ns),
                ms(m.after_ns),
                ms(m.gain_in_plan_ns),
            ]);
        }
        push_section(
            &mut out,
            "Plan, move by move (alone: its gain on its own; after: the step with the moves so far)",
            &table.to_string(),
        );
        let how: Vec<String> = doc
            .moves
            .iter()
            .enumerate()
            .map(|(i, m)| format!("{} {}", i + 1, m.pytorch))
            .collect();
        push_notes(&mut out, "In PyTorch", &how);
    }
    let mut table = new_table(&["instead of the plan", "step ms", "plan saves ms"], 1);
    for r in &doc.references {
        table.add_row(vec![sanitize(&r.name), ms(r.step_ns), ms(r.plan_gain_ns)]);
    }
    push_section(&mut out, "Against the defaults", &table.to_string());
    push_notes(&mut out, "Defaults not costed", &doc.reference_notes);
    if let Some(memory) = &doc.memory {
        let gib = |b: i64| format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64);
        let verdict = match (&memory.chosen, memory.peak_bytes > memory.budget_bytes) {
            (_, false) => "the recorded peak fits: no memory move".to_string(),
            (Some(m), true) => format!(
                "{} brings the peak to {}",
                label(m),
                gib(memory.predicted_peak_bytes)
            ),
            (None, true) => "no memory option fits the budget".to_string(),
        };
        let how = match memory.peak_source {
            "memory_timeline" => {
                " Each trade's peak is read off the recorded memory events, its activations \
                 moved and everything else (gradients, the optimizer's temporaries) as recorded."
            }
            _ => {
                " The memory events record no addresses: each trade's peak is the recorded \
                 peak less the activations' saving, which the process's peak may not fall by."
            }
        };
        push_section(
            &mut out,
            "Memory",
            &wrap(
                &format!(
                    "Peak {} recorded, budget {} ({}): {}.{how}",
                    gib(memory.peak_bytes),
                    gib(memory.budget_bytes),
                    memory.budget_source,
                    verdict
                ),
                "",
            ),
        );
    } else if let Some(note) = &doc.memory_note {
        push_section(&mut out, "Memory", &wrap(&format!("{note}."), ""));
    }
    if doc.ranks.len() > 1 && doc.global_replay {
        let mut table = new_table(&["rank", "step ms", "planned ms"], 1);
        for (trace, r) in doc.traces.iter().zip(&doc.ranks) {
            table.add_row(vec![
                trace
                    .rank
                    .map_or_else(|| "-".to_string(), |n| n.to_string()),
                ms(r.baseline_ns),
                ms(r.planned_ns),
            ]);
        }
        push_section(
            &mut out,
            "Ranks (one plan on every rank; each rank's own step in the job's replay)",
            &table.to_string(),
        );
    } else if doc.ranks.len() > 1 {
        let mut table = new_table(&["rank", "step ms", "planned ms", "replayed as"], 1);
        for (i, r) in doc.ranks.iter().enumerate() {
            table.add_row(vec![
                i.to_string(),
                ms(r.baseline_ns),
                ms(r.planned_ns),
                if r.replayed_as == i {
                    "itself".to_string()
                } else {
                    format!("rank {} (same program)", r.replayed_as)
                },
            ]);
        }
        let replayed = doc
            .ranks
            .iter()
            .enumerate()
            .filter(|&(i, r)| r.replayed_as == i)
            .count();
        push_section(
            &mut out,
            &format!(
                "Ranks (one plan; {replayed} of {} replayed, the others run the same program \
                 as one of them and move as it does)",
                doc.ranks.len()
            ),
            &table.to_string(),
        );
    }
    let mut caveats: Vec<String> = doc.caveats.clone();
    for m in &doc.moves {
        for c in &m.caveats {
            if !caveats.contains(c) {
                caveats.push(c.clone());
            }
        }
    }
    push_notes(&mut out, "Caveats", &caveats);
    // What `whatif` would say of a move's prediction beyond its caveats: it responds as no
    // machine would, or its gain rests on one task.
    let warnings: Vec<String> = doc
        .moves
        .iter()
        .flat_map(|m| {
            let name = move_label(&m.step);
            [&m.trust.anomaly, &m.trust.rests_on]
                .into_iter()
                .flatten()
                .map(move |w| format!("{name}: {w}"))
        })
        .collect();
    push_notes(&mut out, "Warnings", &warnings);
    out
}
