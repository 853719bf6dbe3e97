//! The report of `stepcast compare`: the two runs side by side (their steady steps), what
//! changed by phase, op and kernel, and each model's prediction against the measured change.

use std::fmt::Write as _;

use super::chart::{Axis, grouped_bars, nice_ticks};
use super::page::{Cell, Section, Table, ms, note, paragraph, signed_percent, speedup};
use crate::json::{CompareJson, DiffTableJson};

pub(super) fn sections(compare: &CompareJson) -> Vec<Section> {
    let mut sections = vec![answer(compare)];
    let tables: [(&'static str, &str, &DiffTableJson); 5] = [
        (
            "phases-device",
            "Device time by phase",
            &compare.phases_device,
        ),
        ("phases-host", "Host time by phase", &compare.phases_host),
        ("ops-device", "Device time by op", &compare.ops_device),
        ("ops-host", "Host time by op", &compare.ops_host),
        ("kernels", "Kernels", &compare.kernels),
    ];
    for (id, title, table) in tables {
        sections.push(diff(id, title, table));
    }
    if !compare.models.is_empty() {
        sections.push(models(compare));
    }
    sections
}

fn file(side: &crate::json::SideJson, fallback: &str) -> String {
    side.trace
        .file
        .clone()
        .unwrap_or_else(|| fallback.to_string())
}

fn answer(compare: &CompareJson) -> Section {
    let (before, after) = (&compare.before.steps, &compare.after.steps);
    let spread = |periods: &[i64]| {
        (
            ms(periods.iter().copied().min().unwrap_or(0)),
            ms(periods.iter().copied().max().unwrap_or(0)),
        )
    };
    let ((before_min, before_max), (after_min, after_max)) =
        (spread(&before.periods_ns), spread(&after.periods_ns));
    // Warnings first: a reader who reads only the top of the page must see them.
    let mut body = String::new();
    for warning in &compare.warnings {
        body.push_str(&paragraph(&format!(
            "{}: {}.",
            if warning.refused {
                "Warning (refused, compared because forced)"
            } else {
                "Warning"
            },
            warning.message
        )));
    }
    let m = &compare.measured;
    let end = |v: Option<f64>| v.map_or_else(|| "∞".to_string(), |v| format!("{v:.3}×"));
    let range = format!("{} to {}", end(m.low), end(m.high));
    body.push_str(&paragraph(&match m.verdict {
        "no_measurable_change" => format!(
            "No measurable change: the steady steps of the two runs overlap (per-step speedup \
             {range}); the mean ratio {} is within the steps' own spread.",
            speedup(compare.speedup)
        ),
        "spread_unknown" => format!(
            "Speedup {} with unknown spread: a run has one steady step, so no change can be \
             told from noise.",
            speedup(compare.speedup)
        ),
        _ => format!(
            "Measured speedup {} (median {}; every pair of steady steps between {range}).",
            speedup(compare.speedup),
            speedup(m.median_speedup)
        ),
    }));
    body.push_str(&paragraph(&format!(
        "BEFORE ({}): steady-state step {} over {} steps (time between consecutive step ends, \
         {} to {}). AFTER ({}): {} over {} steps ({} to {}). Mean ratio {} ({} per step); \
         changes within {:.1}% or {} per step count as noise.",
        file(&compare.before, "before"),
        ms(before.period_ns),
        before.steady_steps.len(),
        before_min,
        before_max,
        file(&compare.after, "after"),
        ms(after.period_ns),
        after.steady_steps.len(),
        after_min,
        after_max,
        speedup(compare.speedup),
        ms(compare.delta_ns),
        compare.noise.fraction * 100.0,
        ms(compare.noise.floor_ns)
    )));
    let labels = vec!["before".to_string(), "after".to_string()];
    let longest = before.measured_ns.len().max(after.measured_ns.len());
    let series: Vec<(String, Vec<f64>)> = (0..longest)
        .map(|i| {
            let value = |v: &Vec<i64>| v.get(i).map_or(f64::NAN, |&ns| ns as f64 / 1e6);
            (
                format!("steady step {} (ms)", i + 1),
                vec![value(&before.measured_ns), value(&after.measured_ns)],
            )
        })
        .collect();
    let top = before.max_ns.max(after.max_ns) as f64 / 1e6;
    body.push_str(&grouped_bars(
        &labels,
        &series,
        &Axis {
            title: "ms".to_string(),
            ticks: nice_ticks(0.0, top),
        },
        "run",
    ));
    Section {
        id: "answer",
        title: "The two runs".to_string(),
        body,
    }
}

fn diff(id: &'static str, title: &str, table: &DiffTableJson) -> Section {
    let mut body = String::new();
    let rows: Vec<_> = table.rows.iter().chain(&table.others).collect();
    let labels: Vec<String> = rows
        .iter()
        .map(|r| r.name.chars().take(24).collect())
        .collect();
    let before: Vec<f64> = rows.iter().map(|r| r.before_ns as f64 / 1e6).collect();
    let after: Vec<f64> = rows.iter().map(|r| r.after_ns as f64 / 1e6).collect();
    let top = before.iter().chain(&after).copied().fold(0.0, f64::max);
    if !rows.is_empty() {
        body.push_str(&grouped_bars(
            &labels,
            &[
                ("before (ms)".to_string(), before),
                ("after (ms)".to_string(), after),
            ],
            &Axis {
                title: "ms per steady step".to_string(),
                ticks: nice_ticks(0.0, top),
            },
            "",
        ));
    }
    let mut out = Table::new(&["name", "before", "after", "change", "status"]);
    for row in rows.iter().copied().chain([&table.remainder, &table.total]) {
        out.row(vec![
            Cell::text(&row.name),
            Cell::ms(row.before_ns),
            Cell::ms(row.after_ns),
            Cell::ms(row.delta_ns),
            Cell::text(row.status),
        ]);
    }
    body.push_str(&out.render());
    body.push_str(&note(
        "Per steady step; each table sums to the mean step (its total row).",
    ));
    Section {
        id,
        title: title.to_string(),
        body,
    }
}

fn models(compare: &CompareJson) -> Section {
    let mut table = Table::new(&[
        "model",
        "predicted speedup",
        "predicted",
        "measured",
        "error",
        "against the interval",
        "bound",
        "caveats",
    ]);
    for check in &compare.models {
        table.row(vec![
            Cell::text(&check.model),
            Cell::number(
                speedup(check.predicted_speedup),
                check.predicted_speedup.unwrap_or(0.0),
            ),
            Cell::ms(check.predicted_ns),
            Cell::ms(check.measured_ns),
            Cell::number(signed_percent(check.error), check.error.unwrap_or(0.0)),
            Cell::text(check.placement),
            match check.trust.bound_ns {
                Some(bound) => Cell::ms(bound),
                None => Cell::text("–"),
            },
            super::trace::caveats_cell(&check.trust),
        ]);
    }
    let mut body = String::new();
    let _ = write!(
        body,
        "{}{}",
        paragraph(
            "Each model predicted from BEFORE, against the measured AFTER: inside the interval \
             of the steady steps' speedups, the error is within their own spread."
        ),
        table.render()
    );
    Section {
        id: "models",
        title: "Predictions against the measured change".to_string(),
        body,
    }
}
