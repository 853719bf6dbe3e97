//! The analyzed step's time partitioned: the steps, idle time, phases and layers, each table
//! ending with a total row equal to the span it partitions.

use super::*;

pub(super) fn steps_table(
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

pub(super) fn idle_table(
    analyze: &AnalyzeJson,
    analyzed: Option<&StepAnalysisJson>,
    words: &Words,
) -> String {
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
pub(super) fn idle_row(label: String, breakdown: &BreakdownJson) -> Vec<String> {
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

pub(super) fn phase_table(breakdown: &BreakdownJson, span: i64, words: &Words) -> String {
    let device_phases = &breakdown.device_time_by_phase;
    let host_phases = &breakdown.host_time_by_phase;
    // A trace without device work has no device column to show: it would read 100 % idle.
    let device = words.has_device_work;
    let mut header = vec!["phase".to_string()];
    if device {
        header.push(format!("{}\nms", words.device));
        header.push(format!("{}\n%", words.device));
    }
    header.extend(["host\nms".to_string(), "host\n%".to_string()]);
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = new_table(&header, 1);
    let row = |label: String, device_ns: i64, host_ns: i64| {
        let mut row = vec![label];
        if device {
            row.extend([ms(device_ns), share(device_ns, span)]);
        }
        row.extend([ms(host_ns), share(host_ns, span)]);
        row
    };
    for &(phase, device_ns) in &device_phases.0 {
        let host_ns = host_phases.get(phase);
        let label = if phase == "idle" {
            "idle (nothing runs)".to_string()
        } else {
            phase.replace('_', " ")
        };
        table.add_row(row(label, device_ns, host_ns));
    }
    table.add_row(row(
        "total".to_string(),
        device_phases.total(),
        host_phases.total(),
    ));
    table.to_string()
}

pub(super) fn layers_table(layers: &LayersJson, span: i64) -> String {
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

pub(super) fn layer_name(layer: Option<&str>) -> String {
    layer.map_or_else(
        || "(no layer known)".to_string(),
        |name| ellipsize(&sanitize(name), NAME_WIDTH),
    )
}

pub(super) fn add_total(table: &mut Table, map: &NsMap, span: i64) {
    table.add_row(vec![
        "total".to_string(),
        ms(map.total()),
        share(map.total(), span),
    ]);
}
