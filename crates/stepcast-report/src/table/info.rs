//! `info` as text: a short summary, then lanes, steps, events and edges by kind, skipped
//! records and notes.

use super::{
    bytes, count, device_id_list, ms, new_table, plural, push_notes, push_section, sanitize,
    step_list, us, wrap,
};
use crate::json::{DeviceJson, InfoJson, TraceJson};

/// The `info` document as text for a terminal.
pub fn info_text(info: &InfoJson) -> String {
    let mut out = summary(info);
    if let Some(et) = &info.execution_trace {
        out.push_str(&super::wrap(
            &format!(
                "Execution Trace {} (schema {}): {} of the {} host ops in the span it covers \
                 joined to its nodes ({}, by {}); {} of its {} op nodes unjoined; {} host ops \
                 outside its span; {} data dependencies across threads ({} within one thread, \
                 {} contradicted by the recorded times).",
                sanitize(et.file.as_deref().unwrap_or("")),
                sanitize(&et.schema),
                count(et.joined),
                count(et.ops_in_span),
                super::percent(et.coverage),
                et.method.replace('_', " "),
                count(et.nodes_unjoined),
                count(et.op_nodes),
                count(et.ops_outside_span),
                count(et.data_links),
                count(et.data_same_thread),
                count(et.data_contradicted),
            ),
            "",
        ));
        out.push('\n');
    }

    let mut lanes = new_table(&["lane", "name", "pid", "tid", "events"], 2);
    for lane in &info.lanes {
        let kind = match lane.kind {
            "cpu_thread" => "CPU thread",
            "device_stream" => "device stream",
            other => other,
        };
        lanes.add_row(vec![
            kind.to_string(),
            lane.name.as_deref().map(sanitize).unwrap_or_default(),
            lane.pid.to_string(),
            lane.tid.to_string(),
            count(lane.events),
        ]);
    }
    push_section(&mut out, "Lanes", &lanes.to_string());

    let mut steps = new_table(&["step", "start ms", "host ms", "tasks"], 1);
    for step in &info.steps {
        let number = if step.synthetic {
            "whole window".to_string()
        } else {
            step.number.to_string()
        };
        steps.add_row(vec![
            number,
            ms(step.start_ns),
            ms(step.duration_ns),
            count(step.tasks),
        ]);
    }
    push_section(&mut out, "Steps", &steps.to_string());

    let mut kinds = new_table(&["kind", "events"], 1);
    for &(kind, n) in &info.events_by_kind.0 {
        kinds.add_row(vec![kind.to_string(), count(n)]);
    }
    push_section(&mut out, "Events by kind", &kinds.to_string());

    let mut edges = new_table(&["kind", "edges"], 1);
    for &(kind, n) in &info.graph.edges_by_kind.0 {
        edges.add_row(vec![kind.to_string(), count(n)]);
    }
    push_section(&mut out, "Graph edges by kind", &edges.to_string());

    if !info.skipped.is_empty() {
        let mut skipped = new_table(&["skipped because", "records"], 1);
        for (reason, &n) in &info.skipped {
            skipped.add_row(vec![sanitize(reason), count(n)]);
        }
        push_section(&mut out, "Skipped records", &skipped.to_string());
    }

    if !info.graph.rejected.is_empty() {
        let mut rejected = new_table(&["not turned into an edge because", "causes"], 1);
        for (reason, &n) in &info.graph.rejected {
            rejected.add_row(vec![sanitize(reason), count(n)]);
        }
        push_section(&mut out, "Rejected causes", &rejected.to_string());
    }

    let notes: Vec<String> = info
        .notes
        .iter()
        .chain(&info.graph.notes)
        .cloned()
        .collect();
    push_notes(&mut out, "Notes", &notes);
    out
}

/// The header: what the trace is, where it ran, and how big it and its graph are.
fn summary(info: &InfoJson) -> String {
    let trace = &info.trace;
    let mut lines = vec![
        trace
            .file
            .as_deref()
            .map_or_else(|| "trace".to_string(), sanitize),
    ];
    lines.push(format!("  {}", origin(trace, info.device.as_ref())));
    if info.devices.len() > 1 {
        lines.push(wrap(&format!("  {}", device_list(&info.devices)), "    "));
    }
    let threads = info.lanes.iter().filter(|l| l.kind == "cpu_thread").count() as u64;
    let streams = info.lanes.len() as u64 - threads;
    lines.push(format!(
        "  {} from {} ({}) on {} and {}",
        plural(trace.events, "event"),
        plural(trace.records, "record"),
        bytes(trace.input_bytes),
        plural(threads, "CPU thread"),
        plural(streams, "device stream"),
    ));
    let numbers: Vec<u64> = info.steps.iter().map(|step| step.number).collect();
    let steps = match info.steps.as_slice() {
        [step] if step.synthetic => "no step markers (the window is one step)".to_string(),
        _ => format!(
            "{} ({})",
            plural(info.steps.len() as u64, "step"),
            step_list(&numbers)
        ),
    };
    let skipped: u64 = info.skipped.values().sum();
    lines.push(format!(
        "  {steps}; {}; {} skipped",
        plural(info.syncs, "recorded sync"),
        plural(skipped, "record"),
    ));
    let graph = &info.graph;
    let latency = if graph.launch_latency_samples > 0 {
        format!(
            "launch latency {} (from {})",
            us(graph.launch_latency_ns),
            plural(graph.launch_latency_samples, "launch")
        )
    } else {
        "launch latency not calibrated (work is ready when its launch call returns)".to_string()
    };
    lines.push(format!(
        "  graph: {}, {} ({} inferred from timing); {latency}",
        plural(graph.tasks, "task"),
        plural(graph.edges_by_kind.total(), "edge"),
        count(graph.inferred_edges),
    ));
    let queue = &graph.launch_queue;
    if queue.capacity > 0 {
        lines.push(format!(
            "  launch queue: full at {} launches per device; {} waited {} ms for a slot ({} of \
             it for launches from before the window)",
            count(queue.capacity),
            plural(queue.held_calls, "launch call"),
            ms(queue.held_ns),
            ms(queue.before_window_ns),
        ));
    } else {
        lines.push("  launch queue: never full (no launch-queue edges)".to_string());
    }
    let lines: Vec<String> = lines.iter().map(|line| wrap(line, "    ")).collect();
    lines.join("\n") + "\n"
}

/// Runtime, rank and device, e.g. `cuda trace, rank 0 of 8 (nccl), on device 0: NVIDIA H100`.
fn origin(trace: &TraceJson, main_device: Option<&DeviceJson>) -> String {
    let mut text = format!("{} trace", trace.runtime.unwrap_or("unknown-runtime"));
    match (trace.rank, trace.world_size) {
        (Some(rank), Some(world_size)) => text.push_str(&format!(", rank {rank} of {world_size}")),
        (Some(rank), None) => text.push_str(&format!(", rank {rank}")),
        _ => {}
    }
    if let Some(backend) = &trace.backend {
        text.push_str(&format!(" ({})", sanitize(backend)));
    }
    match main_device {
        Some(main_device) => text.push_str(&format!(", on {}", device(main_device))),
        None => text.push_str(", no device activity"),
    }
    text
}

/// All devices, those of the same model together:
/// `8 devices: 0-7 NVIDIA A100 (compute capability 8.0)`.
fn device_list(devices: &[DeviceJson]) -> String {
    let mut models: Vec<(Option<&str>, Option<&str>, Vec<i64>)> = Vec::new();
    for device in devices {
        let name = device.name.as_deref();
        let capability = device.compute_capability.as_deref();
        let id = device.id;
        match models
            .iter_mut()
            .find(|(n, c, _)| *n == name && *c == capability)
        {
            Some((_, _, ids)) => ids.push(id),
            None => models.push((name, capability, vec![id])),
        }
    }
    let models: Vec<String> = models
        .into_iter()
        .map(|(name, capability, ids)| {
            let mut text = format!(
                "{} {}",
                device_id_list(&ids),
                sanitize(name.unwrap_or("unnamed"))
            );
            if let Some(capability) = capability {
                text.push_str(&format!(" (compute capability {capability})"));
            }
            text
        })
        .collect();
    format!(
        "{}: {}",
        plural(devices.len() as u64, "device"),
        models.join("; ")
    )
}

/// `device 0: NVIDIA H100 80GB HBM3 (compute capability 9.0)`.
fn device(device: &DeviceJson) -> String {
    let mut text = format!("device {}", device.id);
    if let Some(name) = &device.name {
        text.push_str(&format!(": {}", sanitize(name)));
    }
    if let Some(capability) = &device.compute_capability {
        text.push_str(&format!(" (compute capability {capability})"));
    }
    text
}
