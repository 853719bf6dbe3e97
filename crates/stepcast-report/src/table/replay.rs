//! `replay` as text: a summary paragraph, the per-step table, edges by kind, then notes.

use super::{
    count, ms, new_table, percent, plural, push_notes, push_section, sanitize, signed_percent,
    step_list, us, wrap,
};
use crate::json::ReplayJson;

/// The `replay` document as text for a terminal.
pub fn replay_text(replay: &ReplayJson) -> String {
    let mut out = wrap(&summary(replay), "");
    out.push('\n');

    let mut steps = new_table(
        &[
            "step",
            "measured\nms",
            "replayed\nms",
            "error",
            "w/o\ninferred",
            "added-dev\nfidelity",
            "absolute\nfidelity",
            "tasks",
            "critical\npath ms",
            "host\nms",
            "device\nms",
            "wait\nms",
        ],
        1,
    );
    for step in &replay.steps {
        let path = &step.critical_path;
        steps.add_row(vec![
            step.number.to_string(),
            ms(step.measured_ns),
            ms(step.replayed_ns),
            signed_percent(step.error),
            signed_percent(step.error_without_inferred),
            percent(step.added_deviation_fidelity),
            percent(step.absolute_fidelity),
            count(step.tasks),
            ms(path.length_ns),
            ms(path.host_ns),
            ms(path.device_ns),
            ms(path.wait_ns),
        ]);
    }
    push_section(&mut out, "Steps", &steps.to_string());

    let mut edges = new_table(&["kind", "source", "edges"], 2);
    for &(kind, n) in &replay.edges_by_kind.0 {
        let source = if kind.starts_with("inferred_") {
            "inferred from timing"
        } else if kind == "lane_order" {
            "recorded order"
        } else if kind == "peer_arrival" {
            "collective model"
        } else if kind == "stream_wait_call" {
            "recorded call, source by rule"
        } else if kind == "thread_handoff" {
            "autograd engine thread"
        } else if kind == "collective_wait" || kind == "collective_post" {
            "gloo worker thread, by timing"
        } else if kind == "launch_queue" {
            "recorded calls, capacity calibrated"
        } else {
            "recorded"
        };
        edges.add_row(vec![kind.to_string(), source.to_string(), count(n)]);
    }
    push_section(
        &mut out,
        &format!(
            "Edges by kind (whole window, {})",
            plural(replay.tasks, "task")
        ),
        &edges.to_string(),
    );

    push_notes(&mut out, "Notes", &notes(replay));
    out
}

/// The opening paragraph: what was replayed, how far off it is, and the typical step.
fn summary(replay: &ReplayJson) -> String {
    let source = replay
        .trace
        .file
        .as_deref()
        .map_or_else(|| "the trace".to_string(), sanitize);
    let steps = match replay.selected_step {
        Some(number) => format!("step {number}"),
        None => plural(replay.summary.steps, "step"),
    };
    let tasks: u64 = replay.steps.iter().map(|step| step.tasks).sum();
    let mut text = format!("Replayed {steps} ({}) of {source}", plural(tasks, "task"));
    if let Some(name) = replay
        .device
        .as_ref()
        .and_then(|device| device.name.as_deref())
    {
        text.push_str(&format!(" on {}", sanitize(name)));
    }
    text.push_str(". ");
    let summary = &replay.summary;
    match replay.steps.as_slice() {
        [step] => text.push_str(&format!(
            "Step time error {} ({} without inferred edges); {} of tasks add at most 5 µs to \
             their stream predecessor's deviation, {} start within 5 µs of their recorded start",
            signed_percent(step.error),
            signed_percent(step.error_without_inferred),
            percent(step.added_deviation_fidelity),
            percent(step.absolute_fidelity),
        )),
        _ => text.push_str(&format!(
            "Step time error: median {}, largest {} (without inferred edges: median {}, \
             largest {}); in the median step {} of tasks add at most 5 µs to their stream \
             predecessor's deviation, {} start within 5 µs of their recorded start",
            signed_percent(summary.error_median),
            unsigned_percent(summary.error_max_abs),
            unsigned_percent(summary.error_without_inferred_median_abs),
            unsigned_percent(summary.error_without_inferred_max_abs),
            summary
                .added_deviation_fidelity_median
                .map_or_else(|| "n/a".to_string(), percent),
            summary
                .absolute_fidelity_median
                .map_or_else(|| "n/a".to_string(), percent),
        )),
    }
    text.push_str(". ");
    match &replay.typical {
        Some(typical) if typical.predicted_ns.is_none() => text.push_str(&format!(
            "Typical step declined: {}.",
            typical.reason.as_deref().unwrap_or("no reason given")
        )),
        Some(typical) => text.push_str(&format!(
            "Typical step ({} {}): predicted {} ms vs measured median {} ms ({}).",
            if typical.steps_used.len() == 1 {
                "from step"
            } else {
                "from steps"
            },
            step_list(&typical.steps_used),
            ms(typical.predicted_ns.unwrap_or(0)),
            ms(typical.measured_median_ns),
            signed_percent(typical.error),
        )),
        None => text.push_str("No typical step: no step has tasks."),
    }
    text
}

/// The magnitude of a relative error as a percentage; `n/a` where undefined.
fn unsigned_percent(error: Option<f64>) -> String {
    error.map_or_else(|| "n/a".to_string(), |e| format!("{:.2}%", e.abs() * 100.0))
}

/// Notes on how far the replay can be trusted: calibration, inferred edges, warm-up steps,
/// then the graph builder's own notes.
fn notes(replay: &ReplayJson) -> Vec<String> {
    let mut notes = Vec::new();
    if replay.launch_latency_samples > 0 {
        notes.push(format!(
            "launch latency calibrated from {}: {}",
            plural(replay.launch_latency_samples, "launch"),
            us(replay.launch_latency_ns)
        ));
    } else {
        notes.push(
            "launch latency not calibrated (too few single launches onto an idle stream): work \
             is ready when its launch call returns"
                .to_string(),
        );
    }
    notes.push(format!(
        "device dispatch gap calibrated: {} between consecutive tasks of a backlogged stream",
        us(replay.dispatch_gap_ns)
    ));
    let inferred: Vec<String> = replay
        .edges_by_kind
        .0
        .iter()
        .filter(|&&(kind, n)| kind.starts_with("inferred_") && n > 0)
        .map(|&(kind, n)| format!("{kind}: {}", count(n)))
        .collect();
    if replay.inferred_edges == 0 {
        notes.push("no edges inferred from timing: every dependency replayed is recorded".into());
    } else {
        notes.push(format!(
            "{} inferred from timing ({}); the `w/o inferred` column replays without them",
            plural(replay.inferred_edges, "edge"),
            inferred.join(", ")
        ));
    }
    let warm_up: Vec<u64> = replay
        .steps
        .iter()
        .filter(|step| !step.steady)
        .map(|step| step.number)
        .collect();
    if !warm_up.is_empty() && replay.steps.iter().any(|step| step.steady) {
        notes.push(format!(
            "warm-up (not steady state, left out of the typical step): {} {}",
            if warm_up.len() == 1 { "step" } else { "steps" },
            step_list(&warm_up)
        ));
    }
    notes.extend(replay.notes.iter().cloned());
    notes
}
