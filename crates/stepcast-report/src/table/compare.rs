//! `compare` as text: the warnings first (not one workload, different devices, one steady
//! step), then the measured speedup with its spread (or "no measurable change" when the steps
//! overlap), what changed by phase, op and kernel, and each model's prediction against the
//! measured interval with its bound and caveats.

use super::{ms, new_table, push_section, sanitize, signed_percent, step_list, wrap};
use crate::json::{
    CompareJson, DiffRowJson, DiffTableJson, MeasuredJson, ModelCheckJson, SideJson,
};

/// The `compare` document as text for a terminal.
pub fn compare_text(doc: &CompareJson) -> String {
    let mut out = String::new();
    let file = |side: &SideJson| {
        side.trace
            .file
            .as_deref()
            .map_or_else(|| "the trace".to_string(), sanitize)
    };
    // Warnings come before the answer: a reader who stops at the first line must see them.
    for warning in &doc.warnings {
        let label = if warning.refused {
            "WARNING (refused, compared because forced)"
        } else {
            "WARNING"
        };
        out.push_str(&wrap(
            &format!("{label}: {}.", sanitize(&warning.message)),
            "",
        ));
        out.push('\n');
    }
    if !doc.warnings.is_empty() {
        out.push('\n');
    }
    out.push_str(&wrap(
        &format!(
            "Compared {} (BEFORE) with {} (AFTER). {}",
            file(&doc.before),
            file(&doc.after),
            headline(doc),
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
        let kernels = std::ptr::eq(table, &doc.kernels);
        push_section(&mut out, title, &diff_table(table, kernels));
    }
    for check in &doc.models {
        model_section(&mut out, check, &doc.measured);
    }
    out
}

fn interval(measured: &MeasuredJson) -> String {
    let end = |v: Option<f64>| v.map_or_else(|| "∞".to_string(), |v| format!("{v:.3}×"));
    format!("{} to {}", end(measured.low), end(measured.high))
}

/// The answer: a speedup with its spread, or no measurable change, never a bare ratio.
fn headline(doc: &CompareJson) -> String {
    let m = &doc.measured;
    let ratio = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |s| format!("{s:.3}×"));
    let steps = format!(
        "steady-state step (mean time between consecutive step ends) {} ms → {} ms ({} ms)",
        ms(doc.before.steps.period_ns),
        ms(doc.after.steps.period_ns),
        signed_ms(doc.delta_ns),
    );
    match m.verdict {
        "no_measurable_change" => format!(
            "No measurable change: the steady steps of the two traces overlap (per-step \
             speedup {}), so the difference in the mean ({}; {steps}) is within the steps' own \
             spread.",
            interval(m),
            ratio(doc.speedup),
        ),
        "spread_unknown" => format!(
            "Speedup {} with unknown spread (one steady step on a side: no change can be told \
             from noise); {steps}.",
            ratio(doc.speedup),
        ),
        _ => format!(
            "Measured speedup {} (median {}; every pair of steady steps between {}): {steps}.",
            ratio(doc.speedup),
            ratio(m.median_speedup),
            interval(m),
        ),
    }
}

fn signed_ms(ns: i64) -> String {
    if ns > 0 {
        format!("+{}", ms(ns))
    } else {
        ms(ns)
    }
}

/// A diff table; `kernels`: its names are kernels', shown short (`crate::names`; the full
/// names are in JSON and CSV).
fn diff_table(table: &DiffTableJson, kernels: bool) -> String {
    let mut out = new_table(&["name", "before", "after", "delta", "status"], 1);
    let rows: Vec<&DiffRowJson> = table
        .rows
        .iter()
        .chain(table.others.iter())
        .chain([&table.remainder, &table.total])
        .collect();
    let names: Vec<String> = rows.iter().map(|row| sanitize(&row.name)).collect();
    let names = if kernels {
        let full: Vec<&str> = names.iter().map(String::as_str).collect();
        crate::names::short_names(&full, KERNEL_NAME_WIDTH)
    } else {
        names
    };
    for (row, name) in rows.into_iter().zip(names) {
        out.add_row(diff_row(row, name));
    }
    out.to_string()
}

/// The widest a kernel's short name is shown.
const KERNEL_NAME_WIDTH: usize = 60;

fn diff_row(row: &DiffRowJson, name: String) -> Vec<String> {
    vec![
        name,
        ms(row.before_ns),
        ms(row.after_ns),
        signed_ms(row.delta_ns),
        row.status.to_string(),
    ]
}

fn model_section(out: &mut String, check: &ModelCheckJson, measured: &MeasuredJson) {
    let speedup = check
        .predicted_speedup
        .map_or_else(|| "n/a".to_string(), |s| format!("{s:.3}×"));
    let mut text = String::new();
    if let Some(reason) = &check.trust.declined {
        text.push_str(&wrap(
            &format!(
                "Declined: {}. The figures below are the replay's, not a prediction.",
                sanitize(reason)
            ),
            "",
        ));
        text.push('\n');
    }
    text.push_str(&wrap(
        &format!(
            "Predicted from BEFORE: speedup {speedup}, step {} ms; measured AFTER {} ms; error \
             {}. Against the measured interval ({}): {}.{}",
            ms(check.predicted_ns),
            ms(check.measured_ns),
            signed_percent(check.error),
            interval(measured),
            match check.placement {
                "inside" => "inside, within the steps' own spread",
                "above" => "above it, more gain than any pair of steps shows",
                _ => "below it, less gain than any pair of steps shows",
            },
            match check.trust.bound_ns {
                Some(bound) => format!(" Can gain at most {} ms per step.", ms(bound)),
                None => String::new(),
            },
        ),
        "",
    ));
    text.push('\n');
    let caveats = check.trust.caveat_text();
    if !caveats.is_empty() {
        text.push_str(&wrap(&format!("Caveats: {}.", sanitize(&caveats)), ""));
        text.push('\n');
    }
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
