//! The analyzed step's critical path and the host threads' time off the CPU along it.

use super::*;

pub(super) fn critical_path_sections(out: &mut String, step: &StepAnalysisJson, words: &Words) {
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

pub(super) fn bound_name(bound: &str, words: &Words) -> String {
    match bound {
        "cpu" => "CPU".to_string(),
        "gpu_compute" => format!("{} compute", words.device),
        "memory_copies" => "memory copies".to_string(),
        other => other.to_string(),
    }
}

/// Where the analyzed step's host thread was off its CPU, and why (kernel scheduler events).
pub(super) fn off_cpu_section(out: &mut String, step: &StepAnalysisJson) {
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
pub(super) fn off_cpu_sentence(off: &crate::json::OffCpuJson) -> String {
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
pub(super) const OFF_CPU_LISTED: usize = 8;
