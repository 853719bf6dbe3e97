//! A compact Markdown digest of `analyze` and `advise` (`--format md`): what an engineer
//! pastes in an issue, or an agent reads. The headline sentences are the text output's own
//! (`table::summary_sentences`); the tables are short (the top rows), each figure with its
//! unit, and every prediction with its bound and caveats.

use std::fmt::Write as _;

use crate::json::{AdviseJson, AnalyzeJson, NameStatsJson, NsMap};
use crate::table::{record_cell, step_list, summary_sentences};

/// Rows of each ranked table.
const TOP: usize = 5;

/// `text` safe inside a Markdown table cell (no pipe, no line break).
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn share(ns: i64, total: i64) -> String {
    if total > 0 {
        format!("{:.1}%", ns as f64 / total as f64 * 100.0)
    } else {
        "n/a".to_string()
    }
}

fn signed_percent(error: Option<f64>) -> String {
    error.map_or_else(|| "n/a".to_string(), |e| format!("{:+.2}%", e * 100.0))
}

fn speedup(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |s| format!("{s:.3}×"))
}

/// The digest of an `analyze` document.
pub fn analyze_markdown(analyze: &AnalyzeJson) -> String {
    let mut out = String::new();
    let file = analyze.trace.file.as_deref().unwrap_or("the trace");
    let _ = writeln!(out, "## stepcast analyze: `{}`\n", cell(file));
    if let Some(answer) = &analyze.answer {
        let _ = writeln!(out, "**{}**\n", answer.sentence);
    }
    for sentence in summary_sentences(analyze) {
        let _ = writeln!(out, "{sentence}\n");
    }
    out.push_str(
        "| step | steady | measured ms | replayed ms | replay error | bound (critical path) |\n",
    );
    out.push_str("|---:|:---:|---:|---:|---:|---|\n");
    for step in &analyze.steps {
        let path = &step.critical_path_breakdown;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            if step.synthetic {
                "window".to_string()
            } else {
                step.number.to_string()
            },
            if step.steady { "yes" } else { "no" },
            ms(step.measured_ns),
            ms(step.replayed_ns),
            signed_percent(step.error),
            match (path.bound, path.bound_share) {
                (Some(bound), Some(share)) => format!("{bound} {:.0}%", share * 100.0),
                _ => "n/a".to_string(),
            }
        );
    }
    let breakdown = match (&analyze.typical_step, analyze.steps.first()) {
        (Some(typical), _) => Some((
            format!(
                "the typical step (steps {})",
                step_list(&typical.steps_used)
            ),
            &typical.breakdown,
            typical.span_ns,
        )),
        (None, Some(step)) => Some((
            "the first step".to_string(),
            &step.breakdown,
            step.measured_ns,
        )),
        (None, None) => None,
    };
    if let Some((label, breakdown, span_ns)) = breakdown {
        let _ = writeln!(
            out,
            "\n### Where the time goes: {label}, {} ms\n",
            ms(span_ns)
        );
        out.push_str("| partition | part | ms | share |\n|---|---|---:|---:|\n");
        let idle_total = breakdown.device_idle_by_cause.total();
        let maps: [(&str, &NsMap, i64); 4] = [
            ("host/device", &breakdown.host_device, span_ns),
            (
                "device idle by cause",
                &breakdown.device_idle_by_cause,
                idle_total,
            ),
            (
                "device time by phase",
                &breakdown.device_time_by_phase,
                span_ns,
            ),
            ("host time by phase", &breakdown.host_time_by_phase, span_ns),
        ];
        // A trace without device work has no device partitions: its device is "idle" and
        // the idle charged to "host launch" throughout.
        let has_device_work = analyze.mapping.device_tasks > 0;
        for (partition, map, total) in maps {
            if !has_device_work && partition.starts_with("device") {
                continue;
            }
            for &(key, ns) in &map.0 {
                if ns != 0 {
                    let _ = writeln!(
                        out,
                        "| {partition} | {} | {} | {} |",
                        key.trim_end_matches("_ns").replace('_', " "),
                        ms(ns),
                        share(ns, total)
                    );
                }
            }
        }
        let comm = &breakdown.communication_overlap;
        if comm.overlapped_ns + comm.exposed_ns > 0 {
            let _ = writeln!(
                out,
                "\nCommunication: {} ms exposed, {} ms overlapped with computation ({:.1}% overlap).",
                ms(comm.exposed_ns),
                ms(comm.overlapped_ns),
                comm.overlap_fraction * 100.0
            );
        }
    }
    top_table(&mut out, "Top kernels", &analyze.statistics.top_kernels);
    top_table(&mut out, "Top ops (inclusive)", &analyze.statistics.top_ops);
    if !analyze.memory.is_empty() {
        out.push_str(
            "\n### Memory peaks\n\n| device | peak MiB | at ms | live op |\n|---|---:|---:|---|\n",
        );
        for memory in &analyze.memory {
            let _ = writeln!(
                out,
                "| {} | {:.1} | {} | {} |",
                if memory.device < 0 {
                    "host".to_string()
                } else {
                    memory.device.to_string()
                },
                memory.peak_bytes as f64 / (1024.0 * 1024.0),
                ms(memory.peak_at_ns),
                cell(memory.op.as_deref().unwrap_or("-"))
            );
        }
    }
    out
}

fn top_table(out: &mut String, title: &str, rows: &[NameStatsJson]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n### {title}\n");
    out.push_str("| name | count | total ms | mean µs |\n|---|---:|---:|---:|\n");
    let rows = &rows[..rows.len().min(TOP)];
    let full: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    let names = crate::names::short_names(&full, 80);
    for (row, name) in rows.iter().zip(names) {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {:.1} |",
            cell(&name),
            row.instances.count,
            ms(row.instances.total_ns),
            row.instances.mean_ns / 1e3
        );
    }
}

/// The digest of an `advise` document.
pub fn advise_markdown(advise: &AdviseJson) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n## What to try (stepcast advise)\n\n**{}**\n\nBaseline: {} ms per steady step (the \
         steady-state period, steps {}). Speedups are predicted by replaying the transformed \
         graph; the bound is the most a change can gain, from the trace.\n",
        advise.answer.sentence,
        ms(advise.baseline_ns),
        step_list(&advise.steady_steps),
    );
    out.push_str("Changes to the program:\n\n| # | what-if | predicted ms | speedup | bound | record (pairs) | caveats |\n|---:|---|---:|---:|---:|---|---|\n");
    for (rank, candidate) in advise
        .candidates
        .iter()
        .filter(|c| c.useful && !c.hardware)
        .take(2 * TOP)
        .enumerate()
    {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            rank + 1,
            cell(&candidate.name),
            ms(candidate.predicted_ns),
            speedup(candidate.speedup),
            speedup(candidate.trust.bound_speedup),
            cell(&record_cell(candidate)),
            cell(&candidate.trust.caveat_text())
        );
    }
    let hardware: Vec<String> = advise
        .candidates
        .iter()
        .filter(|c| c.useful && c.hardware)
        .take(TOP)
        .map(|c| format!("- {}: {}", cell(&c.name), speedup(c.speedup)))
        .collect();
    if !hardware.is_empty() {
        let _ = writeln!(
            out,
            "\nA faster machine (what it would buy, not a change to the program):\n\n{}",
            hardware.join("\n")
        );
    }
    let useless = advise.candidates.iter().filter(|c| !c.useful).count();
    let _ = writeln!(
        out,
        "\n{} candidate(s) predicted below {} are left out.",
        useless,
        speedup(Some(advise.useful_speedup))
    );
    if !advise.memory_trades.is_empty() {
        out.push_str("\nMemory-for-time trades:\n\n");
        for trade in &advise.memory_trades {
            let saved = trade.memory.as_ref().map_or_else(String::new, |m| {
                format!(
                    ", saves {:.1} MiB of activations, the step's peak falls: {}",
                    m.saved_bytes as f64 / (1024.0 * 1024.0),
                    m.step_peak_cell()
                )
            });
            let _ = writeln!(
                out,
                "- {}: {}{} (record: {})",
                cell(&trade.name),
                speedup(trade.speedup),
                saved,
                record_cell(trade)
            );
        }
    }
    out
}
