//! The detail sections after the breakdowns: HTA's temporal breakdown, statistics of kernels
//! and ops, memory peaks, and the device time left unmapped.

use super::*;

pub(super) fn hta_section(out: &mut String, analyze: &AnalyzeJson) {
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

pub(super) fn statistics_sections(out: &mut String, analyze: &AnalyzeJson) {
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

pub(super) fn duration_cells(durations: &DurationsJson) -> Vec<String> {
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

pub(super) fn memory_section(out: &mut String, analyze: &AnalyzeJson) {
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
            crate::table::bytes(memory.peak_bytes.max(0) as u64),
            ms(memory.peak_at_ns),
            memory
                .reserved_bytes_at_peak
                .map_or_else(|| "-".to_string(), |b| crate::table::bytes(b.max(0) as u64)),
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

pub(super) fn mapping_section(out: &mut String, analyze: &AnalyzeJson, words: &Words) {
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
pub(super) fn cause_label(cause: &str) -> &'static str {
    match cause {
        "launched_before_window" => "launched before the window",
        "no_launch_recorded" => "no launching call recorded",
        "no_op_around_launch" => "no op around the launch",
        _ => "no evidence of the phase",
    }
}

/// Short column headers of the causes.
pub(super) fn cause_column(cause: &str) -> &'static str {
    match cause {
        "launched_before_window" => "launched before\nwindow",
        "no_launch_recorded" => "no launch\nrecorded",
        "no_op_around_launch" => "no op around\nlaunch",
        _ => "no phase\nevidence",
    }
}

/// The steps with unmapped device time, by cause (empty when every step is fully mapped).
pub(super) fn unmapped_by_step(analyze: &AnalyzeJson, device: &str) -> String {
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
