//! `compare` as text: the measured speedup with each trace's steady-step spread, what changed
//! by phase, op and kernel, and each model's prediction against the measured outcome.

use super::{ms, new_table, push_section, sanitize, signed_percent, step_list, wrap};
use crate::json::{CompareJson, DiffRowJson, DiffTableJson, ModelCheckJson, SideJson};

/// The `compare` document as text for a terminal.
pub fn compare_text(doc: &CompareJson) -> String {
    let mut out = String::new();
    let file = |side: &SideJson| {
        side.trace
            .file
            .as_deref()
            .map_or_else(|| "the trace".to_string(), sanitize)
    };
    let speedup = doc
        .speedup
        .map_or_else(|| "n/a".to_string(), |s| format!("{s:.3}×"));
    out.push_str(&wrap(
        &format!(
            "Compared {} (BEFORE) with {} (AFTER). Measured speedup {speedup}: steady-state \
             step (mean time between consecutive step ends) {} ms → {} ms ({} ms).",
            file(&doc.before),
            file(&doc.after),
            ms(doc.before.steps.period_ns),
            ms(doc.after.steps.period_ns),
            signed_ms(doc.delta_ns),
        ),
        "",
    ));
    out.push('\n');

    let mut steps = new_table(
        &[
            "trace",
            "steady steps",
            "period ms",
            "period min ms",
            "period max ms",
            "span median ms",
            "span min ms",
            "span max ms",
            "span mean ms",
        ],
        2,
    );
    for (label, side) in [("BEFORE", &doc.before), ("AFTER", &doc.after)] {
        let s = &side.steps;
        steps.add_row(vec![
            label.to_string(),
            step_list(&s.steady_steps),
            ms(s.period_ns),
            ms(s.periods_ns.iter().copied().min().unwrap_or(0)),
            ms(s.periods_ns.iter().copied().max().unwrap_or(0)),
            ms(s.median_ns),
            ms(s.min_ns),
            ms(s.max_ns),
            ms(s.mean_ns),
        ]);
    }
    push_section(
        &mut out,
        "Steady steps (measured; a span runs from the step's host start to its last device \
         work, and overlaps the steps queued before it where the host runs ahead)",
        &steps.to_string(),
    );

    out.push('\n');
    out.push_str(&wrap(
        &format!(
            "Tables: ms per steady step (mean), largest changes first; each sums to the mean \
             step. A change within {:.0}% of the before time or {} µs is `same`.",
            doc.noise.fraction * 100.0,
            doc.noise.floor_ns / 1000
        ),
        "",
    ));
    out.push('\n');
    for (title, table) in [
        ("By phase, host busy", &doc.phases_host),
        ("By phase, device busy", &doc.phases_device),
        ("By op, host (outermost ops)", &doc.ops_host),
        ("By op, device", &doc.ops_device),
        ("By kernel", &doc.kernels),
    ] {
        push_section(&mut out, title, &diff_table(table));
    }
    for check in &doc.models {
        model_section(&mut out, check);
    }
    out
}

fn signed_ms(ns: i64) -> String {
    if ns > 0 {
        format!("+{}", ms(ns))
    } else {
        ms(ns)
    }
}

fn diff_table(table: &DiffTableJson) -> String {
    let mut out = new_table(&["name", "before", "after", "delta", "status"], 1);
    let rows = table
        .rows
        .iter()
        .chain(table.others.iter())
        .chain([&table.remainder, &table.total]);
    for row in rows {
        out.add_row(diff_row(row));
    }
    out.to_string()
}

fn diff_row(row: &DiffRowJson) -> Vec<String> {
    vec![
        sanitize(&row.name),
        ms(row.before_ns),
        ms(row.after_ns),
        signed_ms(row.delta_ns),
        row.status.to_string(),
    ]
}

fn model_section(out: &mut String, check: &ModelCheckJson) {
    let speedup = check
        .predicted_speedup
        .map_or_else(|| "n/a".to_string(), |s| format!("{s:.3}×"));
    let mut text = wrap(
        &format!(
            "Predicted from BEFORE: speedup {speedup}, step {} ms; measured AFTER {} ms; error \
             {}.",
            ms(check.predicted_ns),
            ms(check.measured_ns),
            signed_percent(check.error),
        ),
        "",
    );
    text.push('\n');
    let mut phases = new_table(
        &[
            "phase",
            "host before",
            "predicted",
            "measured",
            "error",
            "device before",
            "predicted",
            "measured",
            "error",
        ],
        1,
    );
    for p in &check.phases {
        if p.host_before_ns == 0
            && p.host_measured_ns == 0
            && p.device_before_ns == 0
            && p.device_measured_ns == 0
        {
            continue;
        }
        phases.add_row(vec![
            p.phase.to_string(),
            ms(p.host_before_ns),
            ms(p.host_predicted_ns),
            ms(p.host_measured_ns),
            signed_percent(p.host_error),
            ms(p.device_before_ns),
            ms(p.device_predicted_ns),
            ms(p.device_measured_ns),
            signed_percent(p.device_error),
        ]);
    }
    text.push_str(&phases.to_string());
    push_section(
        out,
        &format!(
            "Model {} against the measured outcome (ms per steady step; task time by phase)",
            sanitize(&check.model)
        ),
        &text,
    );
}
