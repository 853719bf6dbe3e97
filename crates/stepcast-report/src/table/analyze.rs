//! `analyze` as text, read top-down: a summary (device, steps, step time, what bounds the
//! analyzed step, how much device time is mapped), then the detail: the steps, the analyzed
//! step's time by phase and layer, its critical path, HTA's temporal breakdown, statistics,
//! memory peaks, and the device time left unmapped. Every breakdown ends with a total row that
//! equals the span it partitions.

use comfy_table::{CellAlignment, Table};

use super::{count, ms, new_table, percent, plural, push_notes, push_section, sanitize, wrap};
use super::{signed_percent, step_list};
use crate::json::{
    AnalyzeJson, BreakdownJson, DurationsJson, LayersJson, NsMap, StepAnalysisJson, TasksNsJson,
};

/// Kernel, op and layer names are cut to this many characters (with an ellipsis).
const NAME_WIDTH: usize = 60;

/// Rows of a ranked table (layers, ops) before the rest is summed in one row.
const TOP_ROWS: usize = 10;

/// The `analyze` document as text for a terminal.
pub fn analyze_text(analyze: &AnalyzeJson) -> String {
    let words = Words::new(analyze);
    let analyzed = analyzed(analyze);
    let mut out = String::new();
    if let Some(answer) = &analyze.answer {
        out.push_str(&wrap(&answer.sentence, ""));
        out.push_str("\n\n");
    }
    out.push_str(&wrap(&overview(analyze, &words), ""));
    out.push('\n');
    if let Some(step) = analyzed {
        out.push('\n');
        out.push_str(&wrap(&bound_sentence(step, &words), ""));
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&wrap(&mapping_sentence(analyze, &words), ""));
    out.push('\n');

    push_section(&mut out, "Steps", &steps_table(analyze, analyzed, &words));
    push_section(
        &mut out,
        &format!(
            "{} idle by cause and communication overlap, per step (ms)",
            words.device_title
        ),
        &idle_table(analyze, analyzed, &words),
    );
    if let Some(step) = analyzed {
        let label = step_label(step);
        push_section(
            &mut out,
            &format!("Time by phase, {label} ({} ms)", ms(step.measured_ns)),
            &phase_table(&step.breakdown, step.measured_ns, &words),
        );
        push_section(
            &mut out,
            &format!("Top layers on the {}, {label}", words.device),
            &layers_table(&step.breakdown.device_top_layers, step.measured_ns),
        );
        push_section(
            &mut out,
            &format!("Top layers on the host, {label}"),
            &layers_table(&step.breakdown.host_top_layers, step.measured_ns),
        );
        critical_path_sections(&mut out, step, &words);
        off_cpu_section(&mut out, step);
    }
    if let Some(typical) = &analyze.typical_step {
        push_section(
            &mut out,
            &format!(
                "Time by phase, typical step ({}, {} ms)",
                typical_label(&typical.steps_used),
                ms(typical.span_ns)
            ),
            &phase_table(&typical.breakdown, typical.span_ns, &words),
        );
    }
    hta_section(&mut out, analyze);
    statistics_sections(&mut out, analyze);
    super::op_model::op_model_section(&mut out, analyze);
    memory_section(&mut out, analyze);
    mapping_section(&mut out, analyze, &words);
    push_notes(&mut out, "Notes", &notes(analyze, analyzed, &words));
    out
}

/// How the device is named in sentences.
struct Words {
    /// `GPU`, or `device` for other accelerators.
    device: &'static str,
    /// The same at the start of a sentence or title.
    device_title: &'static str,
    /// The trace records device work.
    has_device_work: bool,
}

impl Words {
    fn new(analyze: &AnalyzeJson) -> Self {
        let (device, device_title) = match analyze.trace.runtime {
            Some("cuda" | "rocm") => ("GPU", "GPU"),
            _ => ("device", "Device"),
        };
        Words {
            device,
            device_title,
            has_device_work: analyze.mapping.device_tasks > 0,
        }
    }
}

/// The step the detail is about: `analyzed_step`, or the synthetic step of a trace without
/// markers.
fn analyzed(analyze: &AnalyzeJson) -> Option<&StepAnalysisJson> {
    match analyze.analyzed_step {
        Some(number) => analyze.steps.iter().find(|step| step.number == number),
        None => analyze.steps.iter().find(|step| step.synthetic),
    }
}

/// `mean of steps 3, 4 and 6`, or `step 5` when the typical step has one step.
fn typical_label(steps_used: &[u64]) -> String {
    match steps_used {
        [one] => format!("step {one}"),
        steps => format!("mean of steps {}", step_list(steps)),
    }
}

/// `step 5`, or `the whole window` for a synthetic step.
fn step_label(step: &StepAnalysisJson) -> String {
    if step.synthetic {
        "whole window".to_string()
    } else {
        format!("step {}", step.number)
    }
}

/// A step's mapped share, or `-` when it has no device work to map.
fn mapped_percent(step: &StepAnalysisJson) -> String {
    if step.device.tasks == 0 {
        "-".to_string()
    } else {
        precise_percent(step.gpu_time_mapped_fraction)
    }
}

/// The step column's text: the number, `all` for a synthetic step; `*` marks the analyzed step.
fn step_cell(step: &StepAnalysisJson, analyzed: Option<&StepAnalysisJson>) -> String {
    let number = if step.synthetic {
        "all".to_string()
    } else {
        step.number.to_string()
    };
    let mark = if analyzed.is_some_and(|a| a.number == step.number) {
        "*"
    } else {
        ""
    };
    let warm_up = if step.steady { "" } else { " (warm-up)" };
    format!("{number}{mark}{warm_up}")
}

/// The opening paragraph: the file, the device, the steps and their time.
fn overview(analyze: &AnalyzeJson, words: &Words) -> String {
    let source = analyze
        .trace
        .file
        .as_deref()
        .map_or_else(|| "the trace".to_string(), sanitize);
    let mut text = format!("Analyzed {source}");
    if let Some(device) = &analyze.device {
        match device.name.as_deref() {
            Some(name) => text.push_str(&format!(
                " on {} ({} {})",
                sanitize(name),
                words.device,
                device.id
            )),
            None => text.push_str(&format!(" on {} {}", words.device, device.id)),
        }
    }
    text.push_str(". ");
    match analyze.steps.as_slice() {
        [] => text.push_str("The trace has no steps and no tasks."),
        [step] if step.synthetic => text.push_str(&format!(
            "The trace has no ProfilerStep markers, so its whole window ({} ms) is analyzed as \
             one step.",
            ms(step.measured_ns)
        )),
        steps => {
            let numbers: Vec<u64> = steps.iter().map(|step| step.number).collect();
            text.push_str(&format!(
                "{} ({}). ",
                plural(steps.len() as u64, "step"),
                step_list(&numbers)
            ));
            match &analyze.typical {
                Some(typical) if typical.predicted_ns.is_none() => text.push_str(&format!(
                    "The median steady step spans {} ms; no typical step is offered: {}.",
                    ms(typical.measured_median_ns),
                    typical.reason.as_deref().unwrap_or("no reason given")
                )),
                Some(typical) => text.push_str(&format!(
                    "The median steady step spans {} ms (of {} {}; the step time every command \
                     names is the steady-state period above); the replayed typical step takes \
                     {} ms ({}).",
                    ms(typical.measured_median_ns),
                    if steady_numbers(analyze).len() == 1 {
                        "step"
                    } else {
                        "steps"
                    },
                    step_list(&steady_numbers(analyze)),
                    ms(typical.predicted_ns.unwrap_or(0)),
                    signed_percent(typical.error),
                )),
                None => text.push_str("No step has tasks."),
            }
        }
    }
    if let Some(step) = analyzed(analyze)
        && !step.synthetic
    {
        text.push_str(&format!(
            " Step {} is analyzed in detail{}: measured {} ms, replayed {} ms ({}).",
            step.number,
            if analyze.selected_step.is_some() {
                ""
            } else {
                " (the steady-state step closest to the median)"
            },
            ms(step.measured_ns),
            ms(step.replayed_ns),
            signed_percent(step.error),
        ));
    }
    text
}

/// The two sentences `analyze` opens with: what was analyzed (steps, the typical step, the
/// step analyzed in detail), then what bounds that step. The HTML and Markdown reports open
/// with the same words.
pub fn summary_sentences(analyze: &AnalyzeJson) -> Vec<String> {
    let words = Words::new(analyze);
    let mut sentences = vec![overview(analyze, &words)];
    if let Some(step) = analyzed(analyze) {
        sentences.push(bound_sentence(step, &words));
    }
    sentences
}

fn steady_numbers(analyze: &AnalyzeJson) -> Vec<u64> {
    analyze
        .steps
        .iter()
        .filter(|step| step.steady)
        .map(|step| step.number)
        .collect()
}

/// What bounds the step, in one sentence.
fn bound_sentence(step: &StepAnalysisJson, words: &Words) -> String {
    let subject = if step.synthetic {
        "The window".to_string()
    } else {
        format!("Step {}", step.number)
    };
    let of_step = if step.synthetic {
        "the window"
    } else {
        "the step"
    };
    let path = &step.critical_path_breakdown;
    let (Some(bound), Some(share)) = (path.bound, path.bound_share) else {
        return format!("{subject} has no critical path: it has no tasks.");
    };
    let device = words.device;
    let (what, work) = match bound {
        "cpu" => ("the CPU".to_string(), "host work".to_string()),
        "gpu_compute" => (format!("{device} compute"), format!("{device} kernels")),
        "memory_copies" => (
            "memory copies".to_string(),
            format!("copies and memsets on the {device}"),
        ),
        "communication" => (
            "communication".to_string(),
            "collectives and waiting for their peers".to_string(),
        ),
        _ => (
            "synchronization".to_string(),
            "waiting (blocking calls, stream waits, launch latency)".to_string(),
        ),
    };
    let mut text = format!(
        "{subject} is bound by {what}: {} of its critical path is {work}",
        whole_percent(share)
    );
    let top_op = path
        .by_op
        .iter()
        .filter(|op| op.op.is_some())
        .find(|op| op.bound == bound)
        .or_else(|| path.by_op.iter().find(|op| op.op.is_some()));
    if let Some(op) = top_op
        && path.length_ns > 0
    {
        let name = op.op.as_deref().unwrap_or_default();
        // By op (the answer above names the calls): the share is of the whole path, so a
        // reader can set it beside the bound's.
        text.push_str(&format!(
            "; the op holding the most of it: `{}` ({} of the path{})",
            ellipsize(&sanitize(name), NAME_WIDTH),
            whole_percent(op.ns as f64 / path.length_ns as f64),
            phase_phrase(op.phase)
        ));
    }
    let host_device = &step.breakdown.host_device;
    let idle_ns = host_device.get("cpu_only_ns") + host_device.get("idle_ns");
    let idle_share = fraction(idle_ns, step.measured_ns);
    if !words.has_device_work {
        text.push_str("; the trace records no device work.");
    } else if idle_share < 0.005 {
        text.push_str(&format!("; the {device} is busy throughout {of_step}."));
    } else {
        let cause = step
            .breakdown
            .device_idle_by_cause
            .0
            .iter()
            .max_by_key(|&&(cause, ns)| (ns, std::cmp::Reverse(cause)))
            .map_or("", |&(cause, _)| cause);
        let why = match cause {
            "host_launch_ns" => "waiting on launches",
            "synchronization_ns" => "waiting on launches while the host synchronizes",
            "communication_ns" => "waiting on collective peers",
            "other_stream_ns" => "waiting on other streams",
            _ => "with nothing recorded to explain it",
        };
        text.push_str(&format!(
            "; the {device} is idle {} of {of_step}, mostly {why}.",
            whole_percent(idle_share)
        ));
    }
    text
}

/// ` in the forward pass`, or nothing for `other`.
fn phase_phrase(phase: &str) -> &'static str {
    match phase {
        "forward" => " in the forward pass",
        "backward" => " in the backward pass",
        "optimizer" => " in the optimizer step",
        "communication" => " in communication",
        "data_loading" => " in data loading",
        _ => "",
    }
}

/// How much device time is mapped, and what is not.
fn mapping_sentence(analyze: &AnalyzeJson, words: &Words) -> String {
    let mapping = &analyze.mapping;
    if mapping.device_tasks == 0 {
        return format!(
            "The trace has no {} work to map to ops and phases.",
            words.device
        );
    }
    let mut text = format!(
        "{} of {} time ({} ms in {}) is mapped to an op and a phase",
        precise_percent(mapping.gpu_time_mapped_fraction),
        words.device,
        ms(mapping.device_ns),
        plural(mapping.device_tasks, "task"),
    );
    let elsewhere = &mapping.mapped_by_same_kernel_elsewhere;
    if elsewhere.tasks > 0 {
        text.push_str(&format!(
            " (of which {} ms in {} only by the same kernel elsewhere in the trace, a weaker \
             evidence: their launch is not in the trace)",
            ms(elsewhere.ns),
            plural(elsewhere.tasks, "task"),
        ));
    }
    if mapping.unmapped_device_ns > 0 || mapping.unmapped_tasks() > 0 {
        text.push_str(&format!(
            "; {} ms in {} is not (see \"Unmapped {} time\").",
            ms(mapping.unmapped_device_ns),
            plural(mapping.unmapped_tasks(), "task"),
            words.device,
        ));
    } else {
        text.push('.');
    }
    text
}

fn steps_table(
    analyze: &AnalyzeJson,
    analyzed: Option<&StepAnalysisJson>,
    words: &Words,
) -> String {
    let device = words.device;
    let mut table = new_table(
        &[
            "step",
            "measured\nms",
            "replayed\nms",
            "error",
            &format!("{device} time\nmapped"),
            "CPU only\nms",
            &format!("{device} only\nms"),
            "both\nms",
            "neither\nms",
        ],
        1,
    );
    for step in &analyze.steps {
        let host_device = &step.breakdown.host_device;
        table.add_row(vec![
            step_cell(step, analyzed),
            ms(step.measured_ns),
            ms(step.replayed_ns),
            signed_percent(step.error),
            mapped_percent(step),
            ms(host_device.get("cpu_only_ns")),
            ms(host_device.get("gpu_only_ns")),
            ms(host_device.get("overlap_ns")),
            ms(host_device.get("idle_ns")),
        ]);
    }
    if let Some(typical) = &analyze.typical_step {
        let host_device = &typical.breakdown.host_device;
        table.add_row(vec![
            "typical".to_string(),
            ms(typical.span_ns),
            "-".to_string(),
            "-".to_string(),
            "-".to_string(),
            ms(host_device.get("cpu_only_ns")),
            ms(host_device.get("gpu_only_ns")),
            ms(host_device.get("overlap_ns")),
            ms(host_device.get("idle_ns")),
        ]);
    }
    let mut legend = format!(
        "* the analyzed step. CPU only + {device} only + both + neither = measured: what the \
         host (inside ops and runtime calls) and the {device} were busy with during the \
         recorded step."
    );
    if let Some(typical) = &analyze.typical_step {
        legend.push_str(&match typical.steps_used.as_slice() {
            [one] => format!(" typical: step {one}, the one step the typical step is built from."),
            steps => format!(
                " typical: the mean of steps {} (the steps the typical step is built from), \
                 part by part.",
                step_list(steps)
            ),
        });
    }
    format!("{table}\n{}", wrap(&legend, "  "))
}

fn idle_table(analyze: &AnalyzeJson, analyzed: Option<&StepAnalysisJson>, words: &Words) -> String {
    let device = words.device;
    let mut table = new_table(
        &[
            "step",
            &format!("{device}\nidle"),
            "launch",
            "host\nsync",
            "peers",
            "other\nstream",
            "nothing\nrecorded",
            "comm\noverlapped",
            "comm\nexposed",
            "overlap",
        ],
        1,
    );
    for step in &analyze.steps {
        table.add_row(idle_row(step_cell(step, analyzed), &step.breakdown));
    }
    if let Some(typical) = &analyze.typical_step {
        table.add_row(idle_row("typical".to_string(), &typical.breakdown));
    }
    let legend = format!(
        "{} idle = the sum of its causes: what the task that ended each idle stretch \
         waited for (its launch, a host synchronization, collective peers, another stream, or \
         nothing recorded). Overlap: the share of collective time that overlaps computation \
         kernels.",
        words.device_title,
    );
    format!("{table}\n{}", wrap(&legend, ""))
}

/// One row of the idle table: device idle time by cause and communication overlap.
fn idle_row(label: String, breakdown: &BreakdownJson) -> Vec<String> {
    let idle = &breakdown.device_idle_by_cause;
    let communication = &breakdown.communication_overlap;
    let has_communication = communication.overlapped_ns + communication.exposed_ns > 0;
    vec![
        label,
        ms(idle.total()),
        ms(idle.get("host_launch_ns")),
        ms(idle.get("synchronization_ns")),
        ms(idle.get("communication_ns")),
        ms(idle.get("other_stream_ns")),
        ms(idle.get("unexplained_ns")),
        ms(communication.overlapped_ns),
        ms(communication.exposed_ns),
        if has_communication {
            percent(communication.overlap_fraction)
        } else {
            "-".to_string()
        },
    ]
}

fn phase_table(breakdown: &BreakdownJson, span: i64, words: &Words) -> String {
    let device_phases = &breakdown.device_time_by_phase;
    let host_phases = &breakdown.host_time_by_phase;
    let mut table = new_table(
        &[
            "phase",
            &format!("{}\nms", words.device),
            &format!("{}\n%", words.device),
            "host\nms",
            "host\n%",
        ],
        1,
    );
    for &(phase, device_ns) in &device_phases.0 {
        let host_ns = host_phases.get(phase);
        let label = if phase == "idle" {
            "idle (nothing runs)".to_string()
        } else {
            phase.replace('_', " ")
        };
        table.add_row(vec![
            label,
            ms(device_ns),
            share(device_ns, span),
            ms(host_ns),
            share(host_ns, span),
        ]);
    }
    table.add_row(vec![
        "total".to_string(),
        ms(device_phases.total()),
        share(device_phases.total(), span),
        ms(host_phases.total()),
        share(host_phases.total(), span),
    ]);
    table.to_string()
}

fn layers_table(layers: &LayersJson, span: i64) -> String {
    let mut table = new_table(&["layer", "ms", "%"], 1);
    let shown = layers.layers.len().min(TOP_ROWS);
    for layer in &layers.layers[..shown] {
        table.add_row(vec![
            layer_name(layer.layer.as_deref()),
            ms(layer.ns),
            share(layer.ns, span),
        ]);
    }
    let rest = &layers.layers[shown..];
    let other = layers.other_layers + rest.len() as u64;
    let other_ns = layers.other_layers_ns + rest.iter().map(|layer| layer.ns).sum::<i64>();
    if other > 0 {
        table.add_row(vec![
            format!("({})", plural(other, "other layer")),
            ms(other_ns),
            share(other_ns, span),
        ]);
    }
    table.add_row(vec![
        "idle (nothing runs)".to_string(),
        ms(layers.idle_ns),
        share(layers.idle_ns, span),
    ]);
    let total = layers.layers.iter().map(|layer| layer.ns).sum::<i64>()
        + layers.other_layers_ns
        + layers.idle_ns;
    table.add_row(vec!["total".to_string(), ms(total), share(total, span)]);
    table.to_string()
}

fn layer_name(layer: Option<&str>) -> String {
    layer.map_or_else(
        || "(no layer known)".to_string(),
        |name| ellipsize(&sanitize(name), NAME_WIDTH),
    )
}

fn critical_path_sections(out: &mut String, step: &StepAnalysisJson, words: &Words) {
    let path = &step.critical_path_breakdown;
    let label = step_label(step);
    let length = path.length_ns;
    if length == 0 {
        push_section(
            out,
            &format!("Critical path, {label}"),
            "empty: the step has no tasks",
        );
        return;
    }

    let mut by_bound = new_table(&["category", "ms", "%"], 1);
    for &(bound, ns) in &path.by_bound.0 {
        by_bound.add_row(vec![bound_name(bound, words), ms(ns), share(ns, length)]);
    }
    add_total(&mut by_bound, &path.by_bound, length);
    push_section(
        out,
        &format!(
            "Critical path, {label}: {} ms (replayed), by category",
            ms(length)
        ),
        &by_bound.to_string(),
    );

    let mut by_phase = new_table(&["phase", "ms", "%"], 1);
    for &(phase, ns) in &path.by_phase.0 {
        by_phase.add_row(vec![phase.replace('_', " "), ms(ns), share(ns, length)]);
    }
    add_total(&mut by_phase, &path.by_phase, length);
    push_section(
        out,
        &format!("Critical path, {label}, by phase"),
        &by_phase.to_string(),
    );

    let mut ops = new_table(&["op", "phase", "category", "ms", "%"], 3);
    let shown = path.by_op.len().min(TOP_ROWS);
    for op in &path.by_op[..shown] {
        ops.add_row(vec![
            op.op.as_deref().map_or_else(
                || "(no op around the task)".to_string(),
                |name| ellipsize(&sanitize(name), NAME_WIDTH),
            ),
            op.phase.replace('_', " "),
            bound_name(op.bound, words),
            ms(op.ns),
            share(op.ns, length),
        ]);
    }
    let rest = &path.by_op[shown..];
    if !rest.is_empty() {
        let ns: i64 = rest.iter().map(|op| op.ns).sum();
        ops.add_row(vec![
            format!("({})", plural(rest.len() as u64, "other op")),
            String::new(),
            String::new(),
            ms(ns),
            share(ns, length),
        ]);
    }
    let total: i64 = path.by_op.iter().map(|op| op.ns).sum();
    ops.add_row(vec![
        "total".to_string(),
        String::new(),
        String::new(),
        ms(total),
        share(total, length),
    ]);
    push_section(
        out,
        &format!(
            "Critical path, {label}, top ops (phase and category: where most of the op's time is)"
        ),
        &ops.to_string(),
    );

    let mut layers = new_table(&["layer", "ms", "%"], 1);
    let shown = path.by_layer.len().min(TOP_ROWS);
    for layer in &path.by_layer[..shown] {
        layers.add_row(vec![
            layer_name(layer.layer.as_deref()),
            ms(layer.ns),
            share(layer.ns, length),
        ]);
    }
    let rest = &path.by_layer[shown..];
    if !rest.is_empty() {
        let ns: i64 = rest.iter().map(|layer| layer.ns).sum();
        layers.add_row(vec![
            format!("({})", plural(rest.len() as u64, "other layer")),
            ms(ns),
            share(ns, length),
        ]);
    }
    let total: i64 = path.by_layer.iter().map(|layer| layer.ns).sum();
    layers.add_row(vec!["total".to_string(), ms(total), share(total, length)]);
    push_section(
        out,
        &format!("Critical path, {label}, top layers"),
        &layers.to_string(),
    );

    let mut longest = new_table(&["task", "lane", "category", "ms", "%"], 3);
    for stretch in &path.longest {
        longest.add_row(vec![
            ellipsize(&sanitize(&stretch.name), NAME_WIDTH),
            stretch.lane.clone(),
            bound_name(stretch.bound, words),
            ms(stretch.ns),
            share(stretch.ns, length),
        ]);
    }
    push_section(
        out,
        &format!("Critical path, {label}, longest stretches (one task's consecutive time)"),
        &longest.to_string(),
    );
}

fn bound_name(bound: &str, words: &Words) -> String {
    match bound {
        "cpu" => "CPU".to_string(),
        "gpu_compute" => format!("{} compute", words.device),
        "memory_copies" => "memory copies".to_string(),
        other => other.to_string(),
    }
}

fn add_total(table: &mut Table, map: &NsMap, span: i64) {
    table.add_row(vec![
        "total".to_string(),
        ms(map.total()),
        share(map.total(), span),
    ]);
}

fn hta_section(out: &mut String, analyze: &AnalyzeJson) {
    let title = "HTA temporal breakdown, whole trace";
    let Some(hta) = &analyze.hta_temporal_breakdown else {
        push_section(out, title, "not defined: the trace has no device kernels");
        return;
    };
    let mut table = new_table(&["", "ms", "%"], 1);
    for (label, ns, pct) in [
        ("idle", hta.idle_ns, hta.idle_pct),
        ("compute", hta.compute_ns, hta.compute_pct),
        ("non-compute", hta.non_compute_ns, hta.non_compute_pct),
    ] {
        table.add_row(vec![label.to_string(), ms(ns), format!("{pct:.2}%")]);
    }
    table.add_row(vec![
        "total".to_string(),
        ms(hta.kernel_time_ns),
        format!(
            "{:.2}%",
            hta.idle_pct + hta.compute_pct + hta.non_compute_pct
        ),
    ]);
    let mut notes = format!(
        "As HTA's get_temporal_breakdown: the span from the first kernel's start to the last \
         kernel's end ({}); idle = no kernel runs, compute = a computation kernel runs, \
         non-compute = only communication, memory or other kernels run.",
        plural(hta.kernels, "kernel"),
    );
    if hta.last_step_excluded {
        notes.push_str(" The last ProfilerStep is left out, as HTA does.");
    }
    if hta.microsecond_rounding {
        notes.push_str(" Times are rounded to whole microseconds, as HTA does.");
    }
    push_section(out, title, &format!("{table}\n{}", wrap(&notes, "")));
}

fn statistics_sections(out: &mut String, analyze: &AnalyzeJson) {
    let statistics = &analyze.statistics;
    let duration_header = [
        "count",
        "total\nms",
        "mean\nµs",
        "std\nµs",
        "min\nµs",
        "max\nµs",
    ];
    let named_rows = |first: &str, rows: Vec<(&str, &DurationsJson)>| {
        let mut header = vec![first];
        header.extend(duration_header);
        let mut table = new_table(&header, 1);
        // Kernels by their short names (the full ones are in JSON and CSV); ops as named.
        let names: Vec<String> = if first == "kernel" {
            let full: Vec<String> = rows.iter().map(|(name, _)| sanitize(name)).collect();
            let full: Vec<&str> = full.iter().map(String::as_str).collect();
            crate::names::short_names(&full, NAME_WIDTH)
        } else {
            rows.iter()
                .map(|(name, _)| ellipsize(&sanitize(name), NAME_WIDTH))
                .collect()
        };
        for (name, (_, durations)) in names.into_iter().zip(rows) {
            let mut row = vec![name];
            row.extend(duration_cells(durations));
            table.add_row(row);
        }
        table.to_string()
    };
    if !statistics.top_kernels.is_empty() {
        push_section(
            out,
            "Top kernels, whole window (per instance)",
            &named_rows(
                "kernel",
                statistics
                    .top_kernels
                    .iter()
                    .map(|k| (k.name.as_str(), &k.instances))
                    .collect(),
            ),
        );
    }
    if !statistics.top_ops.is_empty() {
        push_section(
            out,
            "Top ops, whole window (per instance, inclusive of the ops they call)",
            &named_rows(
                "op",
                statistics
                    .top_ops
                    .iter()
                    .map(|op| (op.name.as_str(), &op.instances))
                    .collect(),
            ),
        );
    }
    if !statistics.queue_latency.is_empty() {
        push_section(
            out,
            "Queueing latency: launch call's start to the work's start on the device",
            &named_rows(
                "device work",
                statistics
                    .queue_latency
                    .iter()
                    .map(|q| (q.name.as_str(), &q.durations))
                    .collect(),
            ),
        );
    }
    if !statistics.kernels_per_launch_api.is_empty() {
        let mut table = new_table(
            &[
                "launch API",
                "calls",
                "device\ntasks",
                "per call",
                "device\nms",
            ],
            1,
        );
        for api in &statistics.kernels_per_launch_api {
            table.add_row(vec![
                api.api.as_deref().map_or_else(
                    || "(launched before the window)".to_string(),
                    |name| ellipsize(&sanitize(name), NAME_WIDTH),
                ),
                count(api.calls),
                count(api.device_tasks),
                format!("{:.2}", api.tasks_per_call),
                ms(api.device_ns),
            ]);
        }
        push_section(out, "Device work per launch API", &table.to_string());
    }
    let variability = &statistics.step_variability;
    if !variability.steps.is_empty() {
        let mut table = new_table(
            &[
                "steps", "count", "mean\nms", "std\nms", "cv", "min\nms", "max\nms",
            ],
            1,
        );
        for (label, stats) in [("all", &variability.all), ("steady", &variability.steady)] {
            let d = &stats.durations;
            table.add_row(vec![
                label.to_string(),
                count(d.count),
                ms(d.mean_ns.round() as i64),
                ms(d.std_ns.round() as i64),
                percent(stats.cv),
                ms(d.min_ns),
                ms(d.max_ns),
            ]);
        }
        push_section(
            out,
            "Step variability (measured step time)",
            &table.to_string(),
        );
    }
}

fn duration_cells(durations: &DurationsJson) -> Vec<String> {
    let us = |ns: f64| format!("{:.1}", ns / 1e3);
    vec![
        count(durations.count),
        ms(durations.total_ns),
        us(durations.mean_ns),
        us(durations.std_ns),
        us(durations.min_ns as f64),
        us(durations.max_ns as f64),
    ]
}

fn memory_section(out: &mut String, analyze: &AnalyzeJson) {
    let title = "Memory peaks (allocated), with what was live at the peak";
    if analyze.memory.is_empty() {
        push_section(
            out,
            title,
            "no memory events (record with profile_memory=True)",
        );
        return;
    }
    let mut table = new_table(
        &[
            "device",
            "peak",
            "at ms",
            "reserved",
            "op (outermost > innermost)",
            "layer",
            "phase",
        ],
        1,
    );
    for column in 4..7 {
        if let Some(column) = table.column_mut(column) {
            column.set_cell_alignment(CellAlignment::Left);
        }
    }
    for memory in &analyze.memory {
        let device = if memory.device < 0 {
            "host".to_string()
        } else {
            memory.device.to_string()
        };
        let stack: Vec<String> = memory
            .op_stack
            .iter()
            .map(|op| ellipsize(&sanitize(op), 40))
            .collect();
        table.add_row(vec![
            device,
            super::bytes(memory.peak_bytes.max(0) as u64),
            ms(memory.peak_at_ns),
            memory
                .reserved_bytes_at_peak
                .map_or_else(|| "-".to_string(), |b| super::bytes(b.max(0) as u64)),
            if stack.is_empty() {
                "(no op)".to_string()
            } else {
                stack.join(" > ")
            },
            memory
                .layer
                .as_deref()
                .map_or_else(|| "-".to_string(), |l| ellipsize(&sanitize(l), 40)),
            memory.phase.unwrap_or("-").replace('_', " "),
        ]);
    }
    push_section(out, title, &table.to_string());
}

fn mapping_section(out: &mut String, analyze: &AnalyzeJson, words: &Words) {
    let mapping = &analyze.mapping;
    let device = words.device;
    let title = format!("Unmapped {device} time, whole window");
    if mapping.device_tasks == 0 {
        push_section(out, &title, &format!("no {device} work in the trace"));
        return;
    }
    let total = mapping.device_ns;
    let mut table = new_table(&["", "tasks", "ms", "%"], 1);
    let unmapped = &mapping.unmapped;
    let row = |table: &mut Table, label: &str, part: &TasksNsJson| {
        table.add_row(vec![
            label.to_string(),
            count(part.tasks),
            ms(part.ns),
            share(part.ns, total),
        ]);
    };
    let mapped = TasksNsJson {
        tasks: mapping.device_tasks - mapping.unmapped_tasks(),
        ns: mapping.mapped_device_ns,
    };
    let elsewhere = &mapping.mapped_by_same_kernel_elsewhere;
    if elsewhere.tasks == 0 {
        row(&mut table, "mapped to an op and a phase", &mapped);
    } else {
        let from_launch = TasksNsJson {
            tasks: mapped.tasks - elsewhere.tasks,
            ns: mapped.ns - elsewhere.ns,
        };
        row(&mut table, "mapped from its launch", &from_launch);
        row(
            &mut table,
            "mapped by the same kernel elsewhere (weaker)",
            elsewhere,
        );
    }
    for (cause, part) in unmapped.causes() {
        row(
            &mut table,
            &format!("unmapped: {}", cause_label(cause)),
            part,
        );
    }
    row(
        &mut table,
        "total",
        &TasksNsJson {
            tasks: mapping.device_tasks,
            ns: total,
        },
    );
    let mut evidence = new_table(&["phase decided by", "ms", "%"], 1);
    for &(kind, ns) in &mapping.device_ns_by_evidence.0 {
        evidence.add_row(vec![kind.replace('_', " "), ms(ns), share(ns, total)]);
    }
    add_total(&mut evidence, &mapping.device_ns_by_evidence, total);
    let by_step = unmapped_by_step(analyze, device);
    push_section(
        out,
        &title,
        &format!(
            "{table}\n{}\n\n{evidence}{by_step}",
            wrap(
                &format!(
                    "{} time with a layer: {} ms ({}).",
                    words.device_title,
                    ms(mapping.layered_device_ns),
                    share(mapping.layered_device_ns, total)
                ),
                ""
            )
        ),
    );
}

/// What each unmapped cause means, for people.
fn cause_label(cause: &str) -> &'static str {
    match cause {
        "launched_before_window" => "launched before the window",
        "no_launch_recorded" => "no launching call recorded",
        "no_op_around_launch" => "no op around the launch",
        _ => "no evidence of the phase",
    }
}

/// Short column headers of the causes.
fn cause_column(cause: &str) -> &'static str {
    match cause {
        "launched_before_window" => "launched before\nwindow",
        "no_launch_recorded" => "no launch\nrecorded",
        "no_op_around_launch" => "no op around\nlaunch",
        _ => "no phase\nevidence",
    }
}

/// The steps with unmapped device time, by cause (empty when every step is fully mapped).
fn unmapped_by_step(analyze: &AnalyzeJson, device: &str) -> String {
    let elsewhere = |step: &StepAnalysisJson| step.mapped_by_same_kernel_elsewhere.ns;
    let steps: Vec<&StepAnalysisJson> = analyze
        .steps
        .iter()
        .filter(|step| step.unmapped.ns() > 0 || elsewhere(step) > 0)
        .collect();
    let Some(first) = steps.first() else {
        return String::new();
    };
    // The column of the weaker evidence, only where it mapped something.
    let any_elsewhere = steps.iter().any(|step| elsewhere(step) > 0);
    let mut headers = vec!["step".to_string(), format!("{device} time\nmapped")];
    if any_elsewhere {
        headers.push("by same kernel\nelsewhere ms".to_string());
    }
    headers.extend(
        first
            .unmapped
            .causes()
            .iter()
            .map(|(cause, _)| format!("{} ms", cause_column(cause))),
    );
    let headers: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut table = new_table(&headers, 1);
    for step in steps {
        let mut row = vec![step_label(step), mapped_percent(step)];
        if any_elsewhere {
            row.push(ms(elsewhere(step)));
        }
        row.extend(step.unmapped.causes().iter().map(|(_, part)| ms(part.ns)));
        table.add_row(row);
    }
    let title = if any_elsewhere {
        format!("Steps with unmapped {device} time or mapped by the same kernel elsewhere:")
    } else {
        format!("Steps with unmapped {device} time:")
    };
    format!("\n\n{title}\n{table}")
}

/// Notes: what the figures are, then the graph builder's notes.
fn notes(analyze: &AnalyzeJson, analyzed: Option<&StepAnalysisJson>, words: &Words) -> Vec<String> {
    let mut notes = vec![
        "breakdowns are of the recorded step: from its ProfilerStep start to the end of the \
         last task it launched; when the device runs behind the host, consecutive steps \
         overlap and that time counts in both"
            .to_string(),
        format!(
            "the critical path is walked on the replay; `--json` lists its recorded events in \
             the file's own pid, tid, ts and dur ({} for {})",
            plural(analyze.critical_path.len() as u64, "event"),
            analyzed.map_or_else(|| "no step".to_string(), step_label),
        ),
        format!(
            "{} time by phase and by layer gives each moment to one running task: a \
             computation kernel before a collective before a copy or memset",
            words.device
        ),
    ];
    notes.extend(analyze.notes.iter().cloned());
    notes
}

/// `ns` as a share of `total`, one decimal; `-` when `total` is 0.
fn share(ns: i64, total: i64) -> String {
    if total == 0 {
        "-".to_string()
    } else {
        percent(ns as f64 / total as f64)
    }
}

fn fraction(ns: i64, total: i64) -> f64 {
    if total == 0 {
        0.0
    } else {
        ns as f64 / total as f64
    }
}

/// A share as a whole percentage (`81%`), `<1%` for a small nonzero share.
fn whole_percent(share: f64) -> String {
    if share > 0.0 && share < 0.005 {
        "<1%".to_string()
    } else if (0.995..1.0).contains(&share) {
        ">99%".to_string()
    } else {
        format!("{:.0}%", share * 100.0)
    }
}

/// A share with two decimals, never rounded up to 100% (`99.99%`).
fn precise_percent(share: f64) -> String {
    let hundredths = (share * 10_000.0).floor() / 100.0;
    format!("{hundredths:.2}%")
}

/// `text` cut to `max` characters, the last one an ellipsis when cut.
fn ellipsize(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Where the analyzed step's host thread was off its CPU, and why (kernel scheduler events).
fn off_cpu_section(out: &mut String, step: &StepAnalysisJson) {
    let Some(off) = &step.off_cpu else { return };
    let label = step_label(step);
    let mut table = new_table(
        &[
            "where",
            "preempted ms",
            "waiting ms",
            "runnable after wakeup ms",
            "total ms",
        ],
        1,
    );
    for (what, map) in [
        (
            format!("untraced gaps ({} ms)", ms(off.gap_ns)),
            &off.gap_off_cpu_ns,
        ),
        ("inside recorded events".to_string(), &off.in_events_ns),
        ("on the critical path".to_string(), &off.critical_path_ns),
    ] {
        table.add_row(vec![
            what,
            ms(map.get("preempted")),
            ms(map.get("waiting")),
            ms(map.get("runnable_after_wakeup")),
            ms(map.total()),
        ]);
    }
    push_section(
        out,
        &format!(
            "Host thread off its CPU, {label}: {} (tid {}), from the kernel scheduler",
            off.thread.name, off.thread.tid
        ),
        &format!("{}\n{table}", wrap(&off_cpu_sentence(off), "")),
    );
    let mut longest: Vec<&crate::json::OffCpuIntervalJson> = off.intervals.iter().collect();
    longest.sort_by_key(|i| (std::cmp::Reverse(i.end_ns - i.start_ns), i.start_ns));
    let mut lines = Vec::new();
    for interval in longest.iter().take(OFF_CPU_LISTED) {
        let who = |t: &Option<crate::json::SchedThreadJson>| {
            t.as_ref().map_or("an unrecorded thread".to_string(), |t| {
                format!("{} (tid {})", t.name, t.tid)
            })
        };
        let why = if interval.reason == "preempted" {
            format!("preempted by {} (runnable)", who(&interval.switched_to))
        } else {
            match interval.wakeup_ns {
                Some(wake) => format!(
                    "blocked, waiting {} ms until woken by {}, then runnable {} ms",
                    ms(wake - interval.start_ns),
                    who(&interval.woken_by),
                    ms(interval.end_ns - wake)
                ),
                None => "blocked (no wakeup recorded)".to_string(),
            }
        };
        lines.push(format!(
            "{} ms at {} ms: {why}; {} ms of it in an untraced gap, {} ms on the critical path",
            ms(interval.end_ns - interval.start_ns),
            ms(interval.start_ns - step.start_ns),
            ms(interval.in_gap_ns),
            ms(interval.critical_path_ns)
        ));
    }
    if off.intervals.len() > OFF_CPU_LISTED {
        lines.push(format!(
            "{} shorter intervals not listed (all are in --json)",
            off.intervals.len() - OFF_CPU_LISTED
        ));
    }
    push_notes(out, &format!("Longest off-CPU intervals, {label}"), &lines);
}

/// What the thread's untraced gaps were, in one sentence: off its CPU, and why.
fn off_cpu_sentence(off: &crate::json::OffCpuJson) -> String {
    let gaps = &off.gap_off_cpu_ns;
    if off.gap_ns == 0 {
        return "The thread has no untraced gap in this step.".to_string();
    }
    let mut wakers: Vec<String> = off
        .intervals
        .iter()
        .filter(|i| i.in_gap_ns > 0)
        .filter_map(|i| i.woken_by.as_ref())
        .map(|t| format!("{} (tid {})", t.name, t.tid))
        .collect();
    wakers.sort();
    wakers.dedup();
    format!(
        "Of its {} ms of untraced gaps, the thread was off its CPU {} ms: {} ms blocked waiting{}, \
         {} ms runnable after its wakeup, {} ms preempted; the rest it was on its CPU, running code \
         no tracepoint marks.",
        ms(off.gap_ns),
        ms(gaps.total()),
        ms(gaps.get("waiting")),
        if wakers.is_empty() {
            String::new()
        } else {
            format!(" (woken by {})", wakers.join(", "))
        },
        ms(gaps.get("runnable_after_wakeup")),
        ms(gaps.get("preempted")),
    )
}

/// Off-CPU intervals listed in the text report (the JSON has all).
const OFF_CPU_LISTED: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_with_an_ellipsis() {
        assert_eq!(ellipsize("short", 10), "short");
        assert_eq!(ellipsize("abcdefghijkl", 5), "abcd…");
        assert_eq!(ellipsize("abcdefghijkl", 5).chars().count(), 5);
    }

    #[test]
    fn percentages_read_well() {
        assert_eq!(whole_percent(0.812), "81%");
        assert_eq!(whole_percent(0.001), "<1%");
        assert_eq!(whole_percent(0.0), "0%");
        assert_eq!(whole_percent(0.9988), ">99%");
        assert_eq!(whole_percent(1.0), "100%");
        assert_eq!(precise_percent(0.99999), "99.99%");
        assert_eq!(precise_percent(1.0), "100.00%");
        assert_eq!(share(5, 0), "-");
        assert_eq!(share(1, 4), "25.0%");
    }
}
