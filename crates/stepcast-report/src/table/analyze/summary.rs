//! The summary the text opens with: what the trace is, its step time, what bounds the analyzed
//! step, and how much of its device time is mapped to ops.

use super::*;

/// The opening paragraph: the file, the device, the steps and their time.
pub(super) fn overview(analyze: &AnalyzeJson, words: &Words) -> String {
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
            if analyze
                .notes
                .iter()
                .any(|note| note.starts_with(stepcast::INFERRED_STEPS_NOTE))
            {
                text.push_str(
                    "The trace has no ProfilerStep markers: the steps are the loop's \
                     iterations, inferred from its own ranges (see the notes). ",
                );
            }
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

pub(super) fn steady_numbers(analyze: &AnalyzeJson) -> Vec<u64> {
    analyze
        .steps
        .iter()
        .filter(|step| step.steady)
        .map(|step| step.number)
        .collect()
}

/// What bounds the step, in one sentence.
pub(super) fn bound_sentence(step: &StepAnalysisJson, words: &Words) -> String {
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
pub(super) fn phase_phrase(phase: &str) -> &'static str {
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
pub(super) fn mapping_sentence(analyze: &AnalyzeJson, words: &Words) -> String {
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
