//! `analyze` as text, read top-down: a summary (device, steps, step time, what bounds the
//! analyzed step, how much device time is mapped), then the detail: the steps, the analyzed
//! step's time by phase and layer, its critical path, HTA's temporal breakdown, statistics,
//! memory peaks, and the device time left unmapped. Every breakdown ends with a total row that
//! equals the span it partitions.

mod breakdowns;
mod critical_path;
mod details;
mod summary;

use breakdowns::*;
use critical_path::*;
use details::*;
pub use summary::summary_sentences;
use summary::*;

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
    // Without device work there is no device idle to attribute, nor kernels for collectives to
    // overlap: the table would charge every step to "launch".
    if words.has_device_work {
        push_section(
            &mut out,
            &format!(
                "{} idle by cause and communication overlap, per step (ms)",
                words.device_title
            ),
            &idle_table(analyze, analyzed, &words),
        );
    }
    if let Some(step) = analyzed {
        let label = step_label(step);
        push_section(
            &mut out,
            &format!("Time by phase, {label} ({} ms)", ms(step.measured_ns)),
            &phase_table(&step.breakdown, step.measured_ns, &words),
        );
        if words.has_device_work {
            push_section(
                &mut out,
                &format!("Top layers on the {}, {label}", words.device),
                &layers_table(&step.breakdown.device_top_layers, step.measured_ns),
            );
        }
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
