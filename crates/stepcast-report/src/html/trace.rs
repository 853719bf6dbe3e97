//! The report of one trace: the answer first (what bounds the step, the typical step, how
//! well the replay reproduces the recording, the ranked what-ifs with their bounds and
//! caveats), then the timeline, the breakdowns, the top kernels and ops, memory, step-to-step
//! variability and the data-parallel scaling curve.

use std::fmt::Write as _;

use super::chart::{Axis, Marker, Series, grouped_bars, line_chart, nice_ticks, stacked_bar};
use super::page::{
    Cell, Section, Table, bytes, escape, ms, note, paragraph, percent, signed_percent, speedup,
};
use super::{MemoryCurve, TimelineView, TraceReport};
use crate::json::{
    AdviseJson, AnalyzeJson, AnswerChangeJson, BreakdownJson, LayersJson, NameStatsJson, NsMap,
    StepAnalysisJson, WhatIfJson,
};
use crate::table::{record_cell, summary_sentences};

/// Candidates listed in the answer's table (the rest are in `advise`).
const ANSWER_CANDIDATES: usize = 10;

pub(super) fn sections(report: &TraceReport<'_>) -> Vec<Section> {
    let analyze = report.analyze;
    let mut sections = vec![answer(report)];
    if let Some(timeline) = report.timeline {
        sections.push(timeline_section(timeline));
    }
    sections.push(breakdowns(analyze));
    sections.push(top_tables(analyze));
    sections.push(memory(analyze, report.memory));
    sections.push(variability(analyze));
    sections.push(scaling(&report.scaling));
    sections
}

/// The step the detail is about.
fn analyzed(analyze: &AnalyzeJson) -> Option<&StepAnalysisJson> {
    match analyze.analyzed_step {
        Some(number) => analyze
            .steps
            .iter()
            .find(|s| s.number == number && !s.synthetic),
        None => analyze.steps.iter().find(|s| s.synthetic),
    }
}

/// `cpu_only_ns` → `cpu only`.
fn key_label(key: &str) -> String {
    key.trim_end_matches("_ns").replace('_', " ")
}

fn headline(label: &str, value: &str, detail: &str) -> String {
    format!(
        "<div class=\"headline\"><span class=\"label\">{}</span><span class=\"value\">{}</span><span class=\"detail\">{}</span></div>",
        escape(label),
        escape(value),
        escape(detail)
    )
}

fn bound_label(bound: &str) -> &'static str {
    match bound {
        "cpu" => "host (CPU)",
        "gpu_compute" => "device compute",
        "memory_copies" => "memory copies",
        "communication" => "communication",
        "synchronization" => "synchronization",
        _ => "nothing (no tasks)",
    }
}

fn answer(report: &TraceReport<'_>) -> Section {
    let analyze = report.analyze;
    let answer = report.advise.as_ref().ok().map(|a| &a.answer);
    let mut body = String::new();
    // The sentence every output leads with, then the cards that detail it.
    if let Some(answer) = answer {
        let _ = write!(body, "<p class=\"answer\">{}</p>", escape(&answer.sentence));
    }
    body.push_str("<div class=\"headlines\">");
    match answer.and_then(|a| a.bound.zip(a.bound_share)) {
        Some((kind, share)) => body.push_str(&headline(
            "bound by",
            crate::json::kind_words(kind),
            &format!(
                "{} of the critical path of the steady steps",
                percent(share)
            ),
        )),
        None => {
            let step = analyzed(analyze);
            match step.map(|s| &s.critical_path_breakdown) {
                Some(path) => body.push_str(&headline(
                    "bound by",
                    bound_label(path.bound.unwrap_or("none")),
                    &format!(
                        "{} of the critical path ({} long)",
                        path.bound_share.map_or_else(|| "n/a".to_string(), percent),
                        ms(path.length_ns)
                    ),
                )),
                None => body.push_str(&headline("bound by", "n/a", "the trace has no steps")),
            }
        }
    }
    let median_span = analyze.typical.as_ref().map(|t| {
        let replayed = match t.predicted_ns {
            Some(predicted) => format!(
                "replayed typical step {} ({} off)",
                ms(predicted),
                signed_percent(t.error)
            ),
            None => format!(
                "no typical step offered: {}",
                t.reason.as_deref().unwrap_or("no reason given")
            ),
        };
        format!(
            "median steady step span {}; {replayed}",
            ms(t.measured_median_ns)
        )
    });
    match answer {
        Some(answer) => body.push_str(&headline(
            "step",
            &ms(answer.step_ns),
            &format!(
                "the steady-state period, steps {}{}",
                step_numbers(&answer.steady_steps),
                median_span.map_or_else(String::new, |m| format!("; {m}"))
            ),
        )),
        None => match &analyze.typical {
            Some(typical) => body.push_str(&headline(
                "step",
                &ms(typical.measured_median_ns),
                &median_span.unwrap_or_default(),
            )),
            None => body.push_str(&headline("step", "n/a", "no step has tasks")),
        },
    }
    let errors: Vec<f64> = analyze.steps.iter().filter_map(|s| s.error).collect();
    let max_abs = errors
        .iter()
        .map(|e| e.abs())
        .fold(None, |m: Option<f64>, e| Some(m.map_or(e, |m| m.max(e))));
    let mut sorted = errors.clone();
    sorted.sort_by(f64::total_cmp);
    let median = (!sorted.is_empty()).then(|| sorted[sorted.len() / 2]);
    body.push_str(&headline(
        "replay error",
        &signed_percent(median),
        &format!(
            "median over {} step{}; largest {}; replayed / measured − 1 of each step's span",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" },
            max_abs.map_or_else(|| "n/a".to_string(), |e| format!("±{:.2}%", e * 100.0))
        ),
    ));
    match (&report.advise, answer) {
        (Ok(_), Some(answer)) => match &answer.change {
            Some(change) => body.push_str(&headline(
                "try first",
                &format!("{} → {}", change.name, speedup(change.speedup)),
                &change_trust(change),
            )),
            None => body.push_str(&headline(
                "try first",
                "nothing",
                answer.no_change.as_deref().unwrap_or_default(),
            )),
        },
        (Err(reason), _) => body.push_str(&headline("try first", "n/a", reason)),
        (Ok(_), None) => {}
    }
    body.push_str("</div>\n");
    for sentence in summary_sentences(analyze) {
        body.push_str(&paragraph(&sentence));
    }
    match &report.advise {
        Ok(advise) => body.push_str(&candidates(advise)),
        Err(reason) => body.push_str(&note(&format!("No what-ifs: {reason}."))),
    }
    if !analyze.notes.is_empty() {
        body.push_str("<details><summary>How the graph was built</summary><ul>");
        for line in &analyze.notes {
            let _ = write!(body, "<li>{}</li>", escape(line));
        }
        body.push_str("</ul></details>\n");
    }
    Section {
        id: "answer",
        title: "The answer".to_string(),
        body,
    }
}

/// A prediction's caveats, each once, folded under their count.
pub(super) fn caveats_cell(trust: &crate::json::TrustJson) -> Cell {
    let mut items: Vec<String> = Vec::new();
    for caveat in &trust.caveats {
        if !items.contains(caveat) {
            items.push(caveat.clone());
        }
    }
    let summary = match items.len() {
        1 => "1 caveat".to_string(),
        n => format!("{n} caveats"),
    };
    Cell::folded(summary, items)
}

/// `at most 1.234×; 2 caveats`.
fn change_trust(change: &AnswerChangeJson) -> String {
    let bound = change
        .bound_speedup
        .map_or_else(|| "no bound".to_string(), |b| format!("at most {b:.3}×"));
    match change.caveats {
        0 => format!("{bound}; no caveat"),
        1 => format!("{bound}; 1 caveat"),
        n => format!("{bound}; {n} caveats"),
    }
}

fn candidates(advise: &AdviseJson) -> String {
    let mut out = format!(
        "<h3>What to try first</h3>\n<p>Baseline: {} per steady step (steps {}); the critical \
         path is mostly {}. Ranked by predicted speedup; each with the most it can gain (its \
         bound, from the trace) and what limits the prediction.</p>\n",
        ms(advise.baseline_ns),
        escape(&step_numbers(&advise.steady_steps)),
        escape(advise.bottleneck.bound)
    );
    let program: Vec<_> = advise.candidates.iter().filter(|c| !c.hardware).collect();
    let hardware: Vec<_> = advise
        .candidates
        .iter()
        .filter(|c| c.hardware && c.useful)
        .collect();
    let mut table = Table::new(&[
        "#",
        "what-if",
        "predicted step",
        "speedup",
        "bound",
        "useful",
        "record (pairs)",
        "caveats",
    ]);
    for (rank, candidate) in program.iter().take(ANSWER_CANDIDATES).enumerate() {
        table.row(vec![
            Cell::number((rank + 1).to_string(), (rank + 1) as f64),
            Cell::text(&candidate.name),
            Cell::ms(candidate.predicted_ns),
            Cell::number(speedup(candidate.speedup), candidate.speedup.unwrap_or(0.0)),
            Cell::number(
                speedup(candidate.trust.bound_speedup),
                candidate.trust.bound_speedup.unwrap_or(0.0),
            ),
            Cell::text(if candidate.useful { "yes" } else { "no" }),
            Cell::text(record_cell(candidate)),
            caveats_cell(&candidate.trust),
        ]);
    }
    out.push_str(&table.render());
    if program.len() > ANSWER_CANDIDATES {
        out.push_str(&note(&format!(
            "{} more candidates in `stepcast advise`.",
            program.len() - ANSWER_CANDIDATES
        )));
    }
    // Declined changes that could gain: left out of the ranking, named with what they could
    // gain and why, so a lever the trace cannot size is not a lever the page hides.
    let declined: Vec<_> = advise
        .failed
        .iter()
        .filter(|f| f.at_most.is_some_and(|x| x >= advise.useful_speedup))
        .collect();
    if !declined.is_empty() {
        out.push_str(
            "<h3>Declined here</h3>\n<p>Changes the trace could gain from but that are not \
             predicted on it: each with the most it could gain (its bound, from the trace) and \
             why it is declined.</p>\n",
        );
        let mut table = Table::new(&["what-if", "at most", "why"]);
        for f in declined {
            table.row(vec![
                Cell::text(&f.name),
                Cell::number(speedup(f.at_most), f.at_most.unwrap_or(0.0)),
                Cell::text(f.error.strip_prefix("declined: ").unwrap_or(&f.error)),
            ]);
        }
        out.push_str(&table.render());
    }
    if !hardware.is_empty() {
        out.push_str(
            "<h3>A faster machine</h3>\n<p>What faster hardware would buy, alone or with the \
             changes above: not a change to the program.</p>\n",
        );
        let mut machines = Table::new(&[
            "what-if",
            "predicted step",
            "speedup",
            "bound",
            "record (pairs)",
        ]);
        for candidate in hardware.iter().take(ANSWER_CANDIDATES / 2) {
            machines.row(vec![
                Cell::text(&candidate.name),
                Cell::ms(candidate.predicted_ns),
                Cell::number(speedup(candidate.speedup), candidate.speedup.unwrap_or(0.0)),
                Cell::number(
                    speedup(candidate.trust.bound_speedup),
                    candidate.trust.bound_speedup.unwrap_or(0.0),
                ),
                Cell::text(record_cell(candidate)),
            ]);
        }
        out.push_str(&machines.render());
    }
    if !advise.memory_trades.is_empty() {
        out.push_str("<h3>Memory-for-time trades</h3>\n");
        let mut trades = Table::new(&[
            "trade",
            "predicted step",
            "speedup",
            "activations saved",
            "step peak falls",
            "record (pairs)",
            "caveats",
        ]);
        for trade in &advise.memory_trades {
            trades.row(vec![
                Cell::text(&trade.name),
                Cell::ms(trade.predicted_ns),
                Cell::number(speedup(trade.speedup), trade.speedup.unwrap_or(0.0)),
                trade.memory.as_ref().map_or_else(
                    || Cell::text("n/a"),
                    |m| Cell::number(bytes(m.saved_bytes), m.saved_bytes as f64),
                ),
                trade.memory.as_ref().map_or_else(
                    || Cell::text("n/a"),
                    |m| {
                        Cell::number(
                            m.step_peak_cell(),
                            m.step_peak_saved_bytes.unwrap_or(0) as f64,
                        )
                    },
                ),
                Cell::text(record_cell(trade)),
                caveats_cell(&trade.trust),
            ]);
        }
        out.push_str(&trades.render());
    }
    out
}

fn step_numbers(numbers: &[u64]) -> String {
    crate::table::step_list(numbers)
}

fn timeline_section(timeline: &TimelineView) -> Section {
    let mut body = paragraph(&format!(
        "{}, per lane: the recording, its replay and {}, each from its own step start. The \
         replayed critical path is drawn in red (on the recording, the same tasks). Scroll to \
         zoom, drag to pan, double-click to reset; hover a slice for its name and times.",
        timeline.title,
        if timeline.rows.len() > 2 {
            "the predicted replay of the what-if"
        } else {
            "no prediction"
        }
    ));
    let spans: Vec<String> = timeline
        .rows
        .iter()
        .map(|row| format!("{} {}", row.label, ms(row.span_ns)))
        .collect();
    body.push_str(&note(&format!("Step spans: {}.", spans.join("; "))));
    body.push_str(
        "<div class=\"tl-bar\"><button type=\"button\" id=\"tl-reset\">Reset zoom</button>\
         <span id=\"tl-info\" class=\"note\"></span></div>\n\
         <div class=\"tl-wrap\"><canvas id=\"tl-canvas\" height=\"200\"></canvas></div>\n",
    );
    body.push_str(&timeline_legend(timeline));
    // A `<` in a name (`</script>`, `<!--`) could end or confuse the script element: JSON
    // strings may write it as `\u003c`, and `<` appears nowhere else in JSON.
    let json = serde_json::to_string(timeline)
        .unwrap_or_else(|_| "null".to_string())
        .replace('<', "\\u003c");
    let _ = writeln!(
        body,
        "<script type=\"application/json\" id=\"tl-data\">{json}</script>"
    );
    Section {
        id: "timeline",
        title: "Timeline of the typical step".to_string(),
        body,
    }
}

/// The timeline's colours: each task kind as the charts colour its category, and the
/// critical path.
fn timeline_legend(timeline: &TimelineView) -> String {
    let words = |kind: &'static str| match kind {
        "api_call" => "runtime call",
        "cpu_op" => "op (host)",
        "kernel" => "kernel",
        "memcpy" => "copy",
        "memset" => "memset",
        "collective" => "collective",
        other => other,
    };
    let mut out = String::from("<ul class=\"legend\">");
    for (kind, color) in timeline.kinds.iter().zip(&timeline.kind_colors) {
        let _ = write!(
            out,
            "<li><i style=\"background:{color}\"></i>{}</li>",
            escape(words(kind))
        );
    }
    out.push_str(
        "<li><i style=\"background:var(--critical)\"></i>on the replayed critical path</li></ul>\n",
    );
    out
}

fn map_parts(map: &NsMap) -> Vec<(String, i64)> {
    map.0.iter().map(|&(k, ns)| (key_label(k), ns)).collect()
}

fn layer_parts(layers: &LayersJson) -> Vec<(String, i64)> {
    let mut parts: Vec<(String, i64)> = layers
        .layers
        .iter()
        .take(8)
        .map(|l| {
            (
                l.layer.clone().unwrap_or_else(|| "(no layer)".to_string()),
                l.ns,
            )
        })
        .collect();
    let rest: i64 =
        layers.layers.iter().skip(8).map(|l| l.ns).sum::<i64>() + layers.other_layers_ns;
    parts.push(("other layers".to_string(), rest));
    parts.push(("idle".to_string(), layers.idle_ns));
    parts
}

/// Charts that partition device time, or the device's idle time: a trace without device work
/// shows none of them (they would read 100 % idle, charged to "launch").
const DEVICE_CHARTS: [&str; 4] = [
    "Device idle by cause",
    "Communication against computation",
    "Device time by phase",
    "Device time by layer",
];

fn breakdown_charts(
    out: &mut String,
    breakdown: &BreakdownJson,
    span_ns: i64,
    has_device_work: bool,
) {
    let charts: [(&str, Vec<(String, i64)>); 6] = [
        ("Host and device", map_parts(&breakdown.host_device)),
        (
            "Device idle by cause",
            map_parts(&breakdown.device_idle_by_cause),
        ),
        (
            "Communication against computation",
            vec![
                (
                    "compute only".to_string(),
                    breakdown.communication_overlap.compute_only_ns,
                ),
                (
                    "overlapped".to_string(),
                    breakdown.communication_overlap.overlapped_ns,
                ),
                (
                    "exposed".to_string(),
                    breakdown.communication_overlap.exposed_ns,
                ),
                (
                    "neither".to_string(),
                    breakdown.communication_overlap.neither_ns,
                ),
            ],
        ),
        (
            "Device time by phase",
            map_parts(&breakdown.device_time_by_phase),
        ),
        (
            "Host time by phase",
            map_parts(&breakdown.host_time_by_phase),
        ),
        (
            "Device time by layer",
            layer_parts(&breakdown.device_top_layers),
        ),
    ];
    for (title, parts) in charts {
        if !has_device_work && DEVICE_CHARTS.contains(&title) {
            continue;
        }
        let total = if title == "Device idle by cause" {
            parts.iter().map(|p| p.1).sum()
        } else {
            span_ns
        };
        let _ = write!(
            out,
            "<h3>{}</h3>\n{}",
            escape(title),
            stacked_bar(&parts, total)
        );
    }
}

fn breakdowns(analyze: &AnalyzeJson) -> Section {
    let mut body = String::new();
    let has_device_work = analyze.mapping.device_tasks > 0;
    match (&analyze.typical_step, analyzed(analyze)) {
        (Some(typical), _) => {
            body.push_str(&paragraph(&format!(
                "The typical step: {} averaged part by part ({} per step). {}",
                match typical.steps_used.as_slice() {
                    [one] => format!("step {one}"),
                    many => format!("steps {}", step_numbers(many)),
                },
                ms(typical.span_ns),
                if has_device_work {
                    "Every chart partitions the step's span, except idle by cause, which \
                     partitions the device's idle time."
                } else {
                    "Every chart partitions the step's span; the trace records no device work."
                }
            )));
            breakdown_charts(
                &mut body,
                &typical.breakdown,
                typical.span_ns,
                has_device_work,
            );
        }
        (None, Some(step)) => {
            body.push_str(&paragraph(&format!(
                "No typical step: the breakdowns of {} ({}).",
                if step.synthetic {
                    "the window".to_string()
                } else {
                    format!("step {}", step.number)
                },
                ms(step.measured_ns)
            )));
            breakdown_charts(
                &mut body,
                &step.breakdown,
                step.measured_ns,
                has_device_work,
            );
        }
        (None, None) => body.push_str(&paragraph("The trace has no steps.")),
    }
    if let Some(step) = analyzed(analyze) {
        let path = &step.critical_path_breakdown;
        let _ = write!(
            body,
            "<h3>Critical path of {} by category (replayed, {})</h3>\n{}",
            if step.synthetic {
                "the window".to_string()
            } else {
                format!("step {}", step.number)
            },
            ms(path.length_ns),
            stacked_bar(&map_parts(&path.by_bound), path.length_ns)
        );
        let _ = write!(
            body,
            "<h3>Critical path by phase</h3>\n{}",
            stacked_bar(&map_parts(&path.by_phase), path.length_ns)
        );
    }
    Section {
        id: "breakdowns",
        title: "Where the time goes".to_string(),
        body,
    }
}

/// The widest a kernel's short name is shown (its full name on hover).
const KERNEL_NAME_WIDTH: usize = 72;

/// A table of names and their durations; `kernels`: the names are kernels', shown short
/// (`crate::names`) with the full name on hover.
fn name_stats_table(rows: &[NameStatsJson], kernels: bool) -> String {
    let mut table = Table::new(&[
        "name",
        "count",
        "total",
        "mean",
        "std",
        "min",
        "max",
        "per step (mean)",
    ]);
    let full: Vec<&str> = rows.iter().map(|row| row.name.as_str()).collect();
    let shown: Vec<String> = if kernels {
        crate::names::short_names(&full, KERNEL_NAME_WIDTH)
    } else {
        full.iter().map(|name| name.to_string()).collect()
    };
    for (row, shown) in rows.iter().zip(shown) {
        let d = &row.instances;
        table.row(vec![
            Cell::named(shown, &row.name),
            Cell::number(d.count.to_string(), d.count as f64),
            Cell::ms(d.total_ns),
            Cell::ms(d.mean_ns.round() as i64),
            Cell::ms(d.std_ns.round() as i64),
            Cell::ms(d.min_ns),
            Cell::ms(d.max_ns),
            Cell::ms(row.per_step.mean_ns.round() as i64),
        ]);
    }
    table.render()
}

fn top_tables(analyze: &AnalyzeJson) -> Section {
    let stats = &analyze.statistics;
    let mut body = String::from("<p>Click a column header to sort.</p>\n<h3>Top kernels</h3>\n");
    if stats.top_kernels.is_empty() {
        body.push_str(&note("No kernels recorded."));
    } else {
        body.push_str(&name_stats_table(&stats.top_kernels, true));
    }
    body.push_str("<h3>Top ops (inclusive time)</h3>\n");
    if stats.top_ops.is_empty() {
        body.push_str(&note("No cpu_op events recorded."));
    } else {
        body.push_str(&name_stats_table(&stats.top_ops, false));
    }
    if !stats.kernels_per_launch_api.is_empty() {
        body.push_str("<h3>Device work by launch API</h3>\n");
        let mut table = Table::new(&[
            "api",
            "calls",
            "device tasks",
            "tasks per call",
            "device time",
        ]);
        for api in &stats.kernels_per_launch_api {
            table.row(vec![
                Cell::text(
                    api.api
                        .clone()
                        .unwrap_or_else(|| "(launch not recorded)".to_string()),
                ),
                Cell::number(api.calls.to_string(), api.calls as f64),
                Cell::number(api.device_tasks.to_string(), api.device_tasks as f64),
                Cell::number(format!("{:.2}", api.tasks_per_call), api.tasks_per_call),
                Cell::ms(api.device_ns),
            ]);
        }
        body.push_str(&table.render());
    }
    body.push_str(&op_model_tables(analyze));
    Section {
        id: "tables",
        title: "Top kernels and ops".to_string(),
        body,
    }
}

/// How close the ops run to the hardware (`json::op_model`): what is modeled, the ops'
/// achieved throughput and efficiency, the steps' MFU.
fn op_model_tables(analyze: &AnalyzeJson) -> String {
    let model = &analyze.op_model;
    let coverage = &model.coverage;
    let mut body = String::from("<h3>How close the ops run to the hardware</h3>\n");
    if coverage.modeled_ns == 0 {
        body.push_str(&note(if coverage.no_shapes_ns > 0 {
            "Not modeled: the trace records no op shapes (profile with record_shapes=True)."
        } else {
            "Not modeled: no op with device time has a formula (matrix products, convolutions, \
             attention, element-wise ops, reductions, normalization, softmax, pooling, \
             embeddings, multi-tensor updates)."
        }));
        body.push_str(&collectives_table(model));
        return body;
    }
    body.push_str(&paragraph(&format!(
        "FLOPs and bytes from each op's recorded shapes, by a named formula; {} of the device's \
         kernel time is modeled ({} of {}; the most of the rest: {}). {}",
        percent(coverage.modeled_fraction),
        ms(coverage.modeled_ns),
        ms(coverage.device_ns),
        coverage.top_unmodeled.first().map_or_else(
            || "none".to_string(),
            |top| format!("{}, {}", top.name, ms(top.ns))
        ),
        match &model.peaks {
            Some(peaks) => format!(
                "Efficiency is achieved over the roofline of the {} ({} TFLOP/s FP32, {} \
                 FP16/BF16, {} TB/s).",
                peaks.source, peaks.fp32_tflops, peaks.fp16_tflops, peaks.memory_tb_s
            ),
            None => "No datasheet for this device: throughputs without efficiency.".to_string(),
        }
    )));
    let mut table = Table::new(&[
        "op",
        "kind",
        "dtype",
        "count",
        "device time",
        "TFLOP/s",
        "TB/s",
        "FLOP/B",
        "efficiency",
    ]);
    for op in &model.ops {
        table.row(vec![
            Cell::text(&op.name),
            Cell::text(op.category),
            Cell::text(op.dtype.unwrap_or("?")),
            Cell::number(op.instances.to_string(), op.instances as f64),
            Cell::ms(op.device_ns),
            Cell::number(format!("{:.2}", op.tflops), op.tflops),
            Cell::number(format!("{:.3}", op.tb_s), op.tb_s),
            Cell::number(format!("{:.1}", op.intensity), op.intensity),
            match op.efficiency {
                Some(e) => Cell::number(percent(e), e),
                None => Cell::text("n/a"),
            },
        ]);
    }
    body.push_str(&table.render());
    if let Some(chart) = super::roofline::roofline(model) {
        body.push_str(&paragraph(
            "The roofline: each op name at its FLOPs per byte and achieved TFLOP/s, under the \
             memory bandwidth's diagonal and each compute peak (hover a point for its figures; \
             ops that compute nothing, copies and lookups, are in the table only).",
        ));
        body.push_str(&chart);
    }
    if !model.categories.is_empty() {
        let mut totals = Table::new(&[
            "by",
            "name",
            "share of modeled time",
            "device time",
            "TFLOP/s",
            "TB/s",
        ]);
        for (by, rows) in [
            ("kind", &model.categories),
            ("phase", &model.phases),
            ("layer", &model.layers),
        ] {
            for total in rows {
                totals.row(vec![
                    Cell::text(by),
                    Cell::text(&total.name),
                    Cell::number(percent(total.share), total.share),
                    Cell::ms(total.device_ns),
                    Cell::number(format!("{:.2}", total.tflops), total.tflops),
                    Cell::number(format!("{:.3}", total.tb_s), total.tb_s),
                ]);
            }
        }
        body.push_str(&totals.render());
    }
    let mfu: Vec<String> = model
        .steps
        .iter()
        .filter_map(|step| {
            step.mfu
                .map(|m| format!("step {} {}", step.number, percent(m)))
        })
        .collect();
    if !mfu.is_empty() {
        body.push_str(&note(&format!(
            "Model FLOPs utilization (the modeled ops' FLOPs over the step, against the peak of \
             its matrix products' type): {}.",
            mfu.join(", ")
        )));
    }
    body.push_str(&collectives_table(model));
    body
}

/// The collectives' bandwidth (`json::op_model`'s `collectives`), empty without any.
fn collectives_table(model: &crate::json::OpModelJson) -> String {
    if model.collectives.is_empty() {
        return String::new();
    }
    let mut table = Table::new(&[
        "collective",
        "group size",
        "count",
        "time",
        "algorithm GB/s",
        "bus GB/s",
    ]);
    for c in &model.collectives {
        table.row(vec![
            Cell::text(c.collective),
            Cell::number(c.group_size.to_string(), f64::from(c.group_size)),
            Cell::number(c.instances.to_string(), c.instances as f64),
            Cell::ms(c.device_ns),
            Cell::number(format!("{:.1}", c.algbw_gb_s), c.algbw_gb_s),
            Cell::number(format!("{:.1}", c.busbw_gb_s), c.busbw_gb_s),
        ]);
    }
    let mut out = paragraph(
        "Collectives: message bytes over recorded time (NCCL's algorithm and bus bandwidth), \
         their wait for the slowest peer included: lower bounds on what the links did.",
    );
    out.push_str(&table.render());
    out
}

fn memory(analyze: &AnalyzeJson, curves: &[MemoryCurve]) -> Section {
    let mut body = String::new();
    if analyze.memory.is_empty() {
        body.push_str(&paragraph(
            "The trace has no memory events (record with profile_memory=True).",
        ));
    }
    for peak in &analyze.memory {
        let device = if peak.device < 0 {
            "host".to_string()
        } else {
            format!("device {}", peak.device)
        };
        let live = if peak.op_stack.is_empty() {
            "no op".to_string()
        } else {
            peak.op_stack.join(" > ")
        };
        let _ = write!(
            body,
            "<h3>{} memory allocated</h3>\n<p>Peak {} at {} from the trace origin, in {}{}{}. \
             {} allocations, {} frees{}.</p>\n",
            escape(&device),
            bytes(peak.peak_bytes),
            ms(peak.peak_at_ns),
            escape(&live),
            peak.layer
                .as_deref()
                .map_or_else(String::new, |l| format!(", layer {}", escape(l))),
            peak.phase
                .map_or_else(String::new, |p| format!(", {} phase", escape(p))),
            peak.allocations,
            peak.frees,
            peak.reserved_bytes_at_peak
                .map_or_else(String::new, |r| format!(
                    "; {} reserved at the peak",
                    bytes(r)
                ))
        );
        if let Some(curve) = curves.iter().find(|c| c.device == peak.device)
            && !curve.points.is_empty()
        {
            // The unit that suits the peak (host memory may peak at a few bytes).
            let (unit, divisor) = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
                .into_iter()
                .find(|&(_, d)| peak.peak_bytes >= d as i64)
                .unwrap_or(("B", 1));
            let mib = |b: f64| b / divisor as f64;
            let x_ms = |ns: i64| ns as f64 / 1e6;
            let (low, high) = curve.points.iter().fold((f64::MAX, f64::MIN), |(l, h), p| {
                (l.min(x_ms(p.0)), h.max(x_ms(p.0)))
            });
            let top = curve
                .points
                .iter()
                .map(|p| mib(p.1 as f64))
                .fold(0.0, f64::max);
            let series = Series {
                name: format!("{device} allocated ({unit})"),
                points: curve
                    .points
                    .iter()
                    .map(|&(t, b)| (x_ms(t), mib(b as f64)))
                    .collect(),
                reference: false,
            };
            let marker = Marker {
                x: x_ms(peak.peak_at_ns).clamp(low, high),
                y: mib(peak.peak_bytes as f64),
                label: format!("peak {}", bytes(peak.peak_bytes)),
            };
            body.push_str(&line_chart(
                &[series],
                &Axis {
                    title: "time from the trace origin (ms)".to_string(),
                    ticks: nice_ticks(low, high),
                },
                &Axis {
                    title: unit.to_string(),
                    ticks: nice_ticks(0.0, top.max(mib(peak.peak_bytes as f64))),
                },
                Some(&marker),
            ));
            if curve.points.len() < curve.recorded_points {
                body.push_str(&note(&format!(
                    "{} of {} recorded points drawn: the lowest and highest of each time slice.",
                    curve.points.len(),
                    curve.recorded_points
                )));
            }
        }
    }
    Section {
        id: "memory",
        title: "Memory".to_string(),
        body,
    }
}

fn variability(analyze: &AnalyzeJson) -> Section {
    let mut body = String::new();
    let steps = &analyze.steps;
    let labels: Vec<String> = steps
        .iter()
        .map(|s| {
            if s.synthetic {
                "window".to_string()
            } else {
                s.number.to_string()
            }
        })
        .collect();
    let to_ms = |ns: i64| ns as f64 / 1e6;
    let measured: Vec<f64> = steps.iter().map(|s| to_ms(s.measured_ns)).collect();
    let replayed: Vec<f64> = steps.iter().map(|s| to_ms(s.replayed_ns)).collect();
    let top = measured
        .iter()
        .chain(&replayed)
        .copied()
        .fold(0.0, f64::max);
    body.push_str(&grouped_bars(
        &labels,
        &[
            ("measured (ms)".to_string(), measured),
            ("replayed (ms)".to_string(), replayed),
        ],
        &Axis {
            title: "ms".to_string(),
            ticks: nice_ticks(0.0, top),
        },
        "step",
    ));
    let v = &analyze.statistics.step_variability;
    body.push_str(&paragraph(&format!(
        "Over every step: mean {}, std {} (coefficient of variation {:.3}); over the steady \
         steps: mean {}, std {} (cv {:.3}).",
        ms(v.all.durations.mean_ns.round() as i64),
        ms(v.all.durations.std_ns.round() as i64),
        v.all.cv,
        ms(v.steady.durations.mean_ns.round() as i64),
        ms(v.steady.durations.std_ns.round() as i64),
        v.steady.cv
    )));
    let mut table = Table::new(&[
        "step",
        "steady",
        "measured",
        "replayed",
        "error",
        "device time mapped",
    ]);
    for step in steps {
        table.row(vec![
            Cell::number(
                if step.synthetic {
                    "window".to_string()
                } else {
                    step.number.to_string()
                },
                step.number as f64,
            ),
            Cell::text(if step.steady { "yes" } else { "no" }),
            Cell::ms(step.measured_ns),
            Cell::ms(step.replayed_ns),
            Cell::number(signed_percent(step.error), step.error.unwrap_or(0.0)),
            Cell::number(
                percent(step.gpu_time_mapped_fraction),
                step.gpu_time_mapped_fraction,
            ),
        ]);
    }
    body.push_str(&table.render());
    Section {
        id: "variability",
        title: "Step to step".to_string(),
        body,
    }
}

fn scaling(scaling: &Result<&WhatIfJson, &str>) -> Section {
    let mut body = String::new();
    match scaling {
        Err(reason) => body.push_str(&paragraph(&format!("No scaling curve: {reason}."))),
        Ok(document) => match &document.ddp {
            None => body.push_str(&paragraph(
                "No scaling curve: the prediction has no DDP figures.",
            )),
            Some(ddp) => {
                let base = document.baseline_ns;
                let points: Vec<(f64, f64)> = ddp
                    .configs
                    .iter()
                    .map(|c| (f64::from(c.gpus).log2(), c.predicted_ns as f64 / 1e6))
                    .collect();
                let ideal: Vec<(f64, f64)> = points
                    .iter()
                    .map(|&(x, _)| (x, base as f64 / 1e6))
                    .collect();
                let top = points.iter().chain(&ideal).map(|p| p.1).fold(0.0, f64::max);
                body.push_str(&paragraph(&format!(
                    "Predicted step time of data-parallel training on N GPUs ({} per node), \
                     weak scaling (the same batch per GPU), against this trace's own step ({} \
                     replayed): a flat line is perfect scaling. Collectives are costed from {}.",
                    ddp.configs.last().map_or(8, |c| c.gpus_per_node),
                    ms(base),
                    escape(ddp.gradient_sizes)
                )));
                body.push_str(&line_chart(
                    &[
                        Series {
                            name: "predicted step (ms)".to_string(),
                            points,
                            reference: false,
                        },
                        Series {
                            name: "this trace's step (ms): perfect scaling".to_string(),
                            points: ideal,
                            reference: true,
                        },
                    ],
                    &Axis {
                        title: "GPUs".to_string(),
                        ticks: ddp
                            .configs
                            .iter()
                            .map(|c| (f64::from(c.gpus).log2(), c.gpus.to_string()))
                            .collect(),
                    },
                    &Axis {
                        title: "ms".to_string(),
                        ticks: nice_ticks(0.0, top),
                    },
                    None,
                ));
                let mut table = Table::new(&[
                    "GPUs",
                    "nodes",
                    "algorithm",
                    "communication",
                    "predicted step",
                    "efficiency",
                ]);
                for config in &ddp.configs {
                    let efficiency = if config.predicted_ns > 0 {
                        base as f64 / config.predicted_ns as f64
                    } else {
                        0.0
                    };
                    table.row(vec![
                        Cell::number(config.gpus.to_string(), f64::from(config.gpus)),
                        Cell::number(config.nodes.to_string(), f64::from(config.nodes)),
                        Cell::text(config.algorithm),
                        Cell::ms(config.comm_ns),
                        Cell::ms(config.predicted_ns),
                        Cell::number(percent(efficiency), efficiency),
                    ]);
                }
                body.push_str(&table.render());
                if !document.trust.caveats.is_empty() {
                    body.push_str("<ul class=\"caveats\">");
                    for caveat in &document.trust.caveats {
                        let _ = write!(body, "<li>{}</li>", escape(caveat));
                    }
                    body.push_str("</ul>\n");
                }
            }
        },
    }
    Section {
        id: "scaling",
        title: "Data-parallel scaling".to_string(),
        body,
    }
}
