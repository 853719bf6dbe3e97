//! `whatif` and `advise` as text: the prediction, what changed, the new bottleneck; the
//! ranked candidates.

use super::{
    bytes, count, ms, new_table, percent, push_notes, push_section, sanitize, step_list, wrap,
};
use crate::json::{AdviseJson, BottleneckJson, CandidateJson, DeviceJson, TraceJson, WhatIfJson};

/// `of FILE on DEVICE`.
fn source(trace: &TraceJson, device: Option<&DeviceJson>) -> String {
    let mut text = trace
        .file
        .as_deref()
        .map_or_else(|| "the trace".to_string(), sanitize);
    if let Some(name) = device.and_then(|d| d.name.as_deref()) {
        text.push_str(&format!(" on {}", sanitize(name)));
    }
    text
}

/// `1.234×`, or `n/a`.
pub(super) fn speedup(value: Option<f64>) -> String {
    value.map_or_else(|| "n/a".to_string(), |s| format!("{s:.3}×"))
}

/// The five resources of a bottleneck as (name, ns).
fn resources(b: &BottleneckJson) -> [(&'static str, i64); 5] {
    [
        ("host (CPU work)", b.host_ns),
        ("compute (kernels)", b.compute_ns),
        ("copy", b.copy_ns),
        ("communication", b.communication_ns),
        ("wait (latency)", b.wait_ns),
    ]
}

fn share(ns: i64, total: i64) -> String {
    if total <= 0 {
        return "n/a".to_string();
    }
    percent(ns as f64 / total as f64)
}

fn bound_sentence(b: &BottleneckJson) -> String {
    let ns = resources(b)
        .iter()
        .zip(["host", "compute", "copy", "communication", "wait"])
        .find(|(_, key)| *key == b.bound)
        .map_or(0, |((_, ns), _)| *ns);
    let words = match b.bound {
        "host" => "host-bound (CPU work)",
        "compute" => "GPU-bound (kernels)",
        "copy" => "copy-bound",
        "communication" => "communication-bound",
        _ => "latency-bound (waiting)",
    };
    format!("{words}, {} of the critical path", share(ns, b.length_ns))
}

/// What the collectives' peers did, when the choice matters.
fn peers_sentence(peers: &crate::json::PeersJson) -> Option<String> {
    let other = peers.other_speedup?;
    let meaning = match peers.used {
        "skew" => "peers keep their recorded lateness relative to this rank",
        _ => "no straggler: every peer is ready when this rank is",
    };
    Some(format!(
        "Peers: {} ({meaning}; {} ms of waiting per step); with --peers {}: speedup {}.",
        peers.used,
        ms(peers.wait_ns),
        peers.other,
        speedup(Some(other)),
    ))
}

/// The `whatif` document as text for a terminal.
pub fn whatif_text(doc: &WhatIfJson) -> String {
    let what = match &doc.scenario {
        Some(file) => format!("scenario {} ({})", sanitize(&doc.name), sanitize(file)),
        None => sanitize(&doc.name),
    };
    let mut out = String::new();
    if let Some(reason) = &doc.declined {
        out.push_str(&wrap(
            &format!("Declined: {reason}. The figures below are the replay's, not a prediction."),
            "",
        ));
        out.push('\n');
    }
    out.push_str(&wrap(
        &format!(
            "What if {what}, on {}: predicted step {} ms vs {} ms now, speedup {} ({} ms per \
             step), over steady steps {}.",
            source(&doc.trace, doc.device.as_ref()),
            ms(doc.predicted_ns),
            ms(doc.baseline_ns),
            speedup(doc.speedup),
            signed_ms(-doc.gain_ns),
            step_list(&doc.steady_steps),
        ),
        "",
    ));
    out.push('\n');
    for (label, note) in [
        ("Anomaly", &doc.trust.anomaly),
        ("One task", &doc.trust.rests_on),
    ] {
        if let Some(note) = note {
            out.push_str(&wrap(&format!("{label}: {note}."), ""));
            out.push('\n');
        }
    }
    if let Some(line) = peers_sentence(&doc.peers) {
        out.push_str(&wrap(&line, ""));
        out.push('\n');
    }
    if let Some(bound) = doc.trust.bound_ns {
        let most = match doc.trust.bound_speedup {
            Some(s) => format!("at most {} ms per step ({})", ms(bound), speedup(Some(s))),
            None => format!("at most {} ms per step (the whole step)", ms(bound)),
        };
        out.push_str(&wrap(
            &format!("Bound: the transform can gain {most}, from what it changes in the trace."),
            "",
        ));
        out.push('\n');
    }
    // How far the models' predictions held on measured pairs of this kind of trace; a
    // scenario or `ddp` names no built-in model's record.
    if !doc.record_words.is_empty() && doc.ddp.is_none() && doc.scenario.is_none() {
        let mut record = format!("Record: {}", doc.record_words.join("; "));
        if doc.held_back.is_some() {
            // The figures are in the words already: say what they mean for this gain.
            record.push_str(
                ": that record cannot tell this gain from the model's error, so `advise` does not \
                 offer it first",
            );
        }
        out.push_str(&wrap(&format!("{record} (docs/accuracy.md)."), ""));
        out.push('\n');
    }
    push_notes(&mut out, "Caveats", &doc.trust.caveats);
    if !doc.trust.caveats.is_empty() {
        out.push('\n');
    }
    if let Some(memory) = &doc.memory {
        out.push_str(&wrap(&format!("Memory: it {}.", memory.summary()), ""));
        out.push('\n');
    }
    out.push_str(&wrap(
        &format!(
            "Tasks: {} before, {} after ({} changed, {} removed, {} added, whole window). \
             Bottleneck now: {}; after: {}.",
            count(doc.tasks.before),
            count(doc.tasks.after),
            count(doc.tasks.changed),
            count(doc.tasks.removed),
            count(doc.tasks.added),
            bound_sentence(&doc.bottleneck_before),
            bound_sentence(&doc.bottleneck_after),
        ),
        "",
    ));
    out.push('\n');

    let mut phases = new_table(
        &[
            "phase",
            "host ms\nbefore",
            "host ms\nafter",
            "host ms\nsaved",
            "device ms\nbefore",
            "device ms\nafter",
            "device ms\nsaved",
        ],
        1,
    );
    for p in &doc.phases {
        if p.host_before_ns == 0
            && p.host_after_ns == 0
            && p.device_before_ns == 0
            && p.device_after_ns == 0
        {
            continue;
        }
        phases.add_row(vec![
            p.phase.to_string(),
            ms(p.host_before_ns),
            ms(p.host_after_ns),
            ms(p.host_before_ns - p.host_after_ns),
            ms(p.device_before_ns),
            ms(p.device_after_ns),
            ms(p.device_before_ns - p.device_after_ns),
        ]);
    }
    push_section(
        &mut out,
        "Time per steady step by phase (host: calls, CPU ops and the host time between them)",
        &phases.to_string(),
    );

    let mut path = new_table(
        &["critical path", "before ms", "share", "after ms", "share"],
        1,
    );
    let before = resources(&doc.bottleneck_before);
    let after = resources(&doc.bottleneck_after);
    for ((name, b), (_, a)) in before.iter().zip(after.iter()) {
        path.add_row(vec![
            name.to_string(),
            ms(*b),
            share(*b, doc.bottleneck_before.length_ns),
            ms(*a),
            share(*a, doc.bottleneck_after.length_ns),
        ]);
    }
    push_section(
        &mut out,
        "Critical path per steady step, by resource",
        &path.to_string(),
    );

    let mut top = new_table(&["on the new critical path", "kind", "resource", "ms"], 3);
    // Device work by its kernel's short name (the full one is in JSON); host calls and ops as
    // named.
    let full: Vec<String> = doc
        .bottleneck_after
        .top
        .iter()
        .map(|item| sanitize(&item.name))
        .collect();
    let short = crate::names::short_names(
        &full.iter().map(String::as_str).collect::<Vec<_>>(),
        KERNEL_NAME_WIDTH,
    );
    for ((item, full), short) in doc.bottleneck_after.top.iter().zip(full).zip(short) {
        let on_host = matches!(item.kind, "api_call" | "cpu_op");
        top.add_row(vec![
            if on_host { full } else { short },
            item.kind.to_string(),
            item.resource.to_string(),
            ms(item.ns),
        ]);
    }
    push_section(
        &mut out,
        "Largest items on the new critical path",
        &top.to_string(),
    );
    if let Some(ddp) = &doc.ddp {
        push_ddp(&mut out, ddp);
    }
    out
}

/// The `ddp` what-if's calibration and scaling table.
fn push_ddp(out: &mut String, ddp: &crate::json::DdpJson) {
    let mut fits = new_table(
        &[
            "collective",
            "ranks",
            "points",
            "instances",
            "α µs",
            "β ns/MB",
            "bus GB/s",
            "r²",
        ],
        1,
    );
    for f in &ddp.calibration.fits {
        fits.add_row(vec![
            f.collective.to_string(),
            f.group_size.to_string(),
            f.points.to_string(),
            f.instances.to_string(),
            format!("{:.1}", f.intercept_ns / 1e3),
            format!("{:.0}", f.slope_ns_per_byte * 1e6),
            f.bus_bandwidth_gb_s
                .map_or_else(|| "n/a".to_string(), |b| format!("{b:.2}")),
            f.r2.map_or_else(|| "n/a".to_string(), |r| format!("{r:.3}")),
        ]);
    }
    let title = format!(
        "Network calibrated from {} recorded collectives ({} with sizes; gradient sizes: {}; \
         recorded world size {})",
        count(ddp.collectives),
        count(ddp.calibration.with_sizes),
        ddp.gradient_sizes,
        ddp.recorded_world_size
    );
    if ddp.calibration.fits.is_empty() {
        out.push_str(&format!("{title}: none fitted (presets used).\n\n"));
    } else {
        push_section(out, &title, &fits.to_string());
    }
    if let Some(i) = &ddp.insertion {
        out.push_str(&format!(
            "Inserted communication: {} parameters, {:.1} MB of gradients per step ({}), ready \
             points: {}; {} recorded collectives stripped; element-wise {:.0} GB/s ({}).\n\n",
            i.parameters,
            i.gradient_bytes_per_step as f64 / 1e6,
            ddp.gradient_sizes,
            i.ready_points,
            i.stripped_collectives,
            i.elementwise_gb_s,
            i.elementwise_source
        ));
    }
    let mut scaling = new_table(
        &[
            "gpus",
            "nodes × gpus",
            "intra GB/s",
            "inter GB/s",
            "comm ms/step",
            "step ms",
            "vs now",
        ],
        0,
    );
    for c in &ddp.configs {
        scaling.add_row(vec![
            c.gpus.to_string(),
            format!("{} × {}", c.nodes, c.gpus_per_node),
            format!("{:.2} ({})", c.intra_bus_gb_s, c.intra_source),
            format!("{:.2}", c.inter_bus_gb_s),
            ms(c.comm_ns),
            ms(c.predicted_ns),
            speedup(c.speedup),
        ]);
    }
    let how = match ddp.configs.last() {
        Some(c) if c.fsdp => {
            "FSDP: per-unit all-gathers and reduce-scatters inserted, optimizer kernels sharded"
        }
        Some(c) if c.p3 => "P3: priority-ordered slices inserted",
        Some(c) if c.compression.is_some() => "DGC: compressed gradients gathered",
        _ if ddp.insertion.is_some() => "DDP buckets inserted from the gradients",
        _ => "recorded buckets re-costed by the collective model",
    };
    push_section(
        out,
        &format!("Scaling (data-parallel, {how})"),
        &scaling.to_string(),
    );
}

fn signed_ms(ns: i64) -> String {
    format!("{:+.3}", ns as f64 / 1e6)
}

/// How a one-model candidate's model did on the recorded pairs of the trace's kind: `±12%
/// (max 30%), 3 pairs` (median and largest |error| out of sample), with `, 2 the other way`
/// where the step moved against the prediction on some (`a ceiling, 67% below (max 94%), 6
/// pairs` for a model every pair holds as a ceiling); `none` without such a pair, `-` for a
/// combination (no pair records one).
pub(crate) fn record_cell(c: &CandidateJson) -> String {
    if c.models.len() != 1 {
        return "-".to_string();
    }
    match c.record.first() {
        Some(r) => match (r.out_of_sample_median_error, r.out_of_sample_max_error) {
            (Some(median), Some(max)) => {
                // A model held as a ceiling on every pair: how far below it outcomes came.
                let only_ceilings = r.only_ceilings();
                format!(
                    "{}{:.0}%{} (max {:.0}%), {} pair{}{}",
                    if only_ceilings { "a ceiling, " } else { "±" },
                    median * 100.0,
                    if only_ceilings { " below" } else { "" },
                    max * 100.0,
                    r.out_of_sample,
                    if r.out_of_sample == 1 { "" } else { "s" },
                    match r.wrong_direction {
                        0 => String::new(),
                        n => format!(", {n} the other way"),
                    }
                )
            }
            _ => format!("in sample only ({} pairs)", r.pairs),
        },
        None => "none".to_string(),
    }
}

/// The `advise` document as text: the answer first, then the program changes ranked, the
/// hardware what-ifs ranked apart, and what is not worth it.
pub fn advise_text(doc: &AdviseJson) -> String {
    let mut out = wrap(&doc.answer.sentence, "");
    out.push('\n');
    out.push_str(&wrap(
        &format!("Advice for {}.", source(&doc.trace, doc.device.as_ref()),),
        "",
    ));
    out.push('\n');
    let mut notes = Vec::new();
    if let Some(reason) = &doc.declined {
        out.push_str(&wrap(
            &format!("Declined: no prediction is offered on this trace: {reason}."),
            "",
        ));
        out.push('\n');
        return out;
    }
    let answer = &doc.answer;
    match &answer.change {
        Some(best) => {
            let mut note = format!(
                "Try first: {} ({}, {} ms less per step{})",
                best.name,
                speedup(best.speedup),
                ms(doc.baseline_ns - best.predicted_ns),
                match best.caveats {
                    0 => String::new(),
                    1 => "; 1 caveat below".to_string(),
                    n => format!("; {n} caveats below"),
                }
            );
            if let Some(together) = &answer.together {
                note.push_str(&format!(
                    "; with more changes: {} ({})",
                    together.name,
                    speedup(together.speedup)
                ));
            }
            note.push('.');
            notes.push(note);
        }
        None => notes.push(format!(
            "{}.",
            capitalized(
                answer
                    .no_change
                    .as_deref()
                    .unwrap_or("no change is offered")
            )
        )),
    }
    // A candidate ranked higher that the answer passes over says why: a prediction that rests
    // on one task or on an anomaly never leads.
    for c in doc
        .candidates
        .iter()
        .filter(|c| !c.hardware && c.useful && !c.can_headline())
    {
        let held_back = c.held_back.as_ref().filter(|_| c.models.len() == 1);
        if let Some(why) = c
            .trust
            .anomaly
            .as_ref()
            .or(c.trust.rests_on.as_ref())
            .or(held_back)
        {
            notes.push(format!(
                "Not offered first: {} ({}): {why}.",
                c.name,
                speedup(c.speedup)
            ));
        }
    }
    // A change declined on this trace that could have paid: what the user gives up, and the
    // reason below says what would let it be predicted.
    for f in &doc.failed {
        if let Some(at_most) = f.at_most.filter(|&x| x >= doc.useful_speedup) {
            notes.push(format!(
                "Not predicted: {} could gain up to {} (what it changes in the trace), but is \
                 declined here; why and what to give, under \"Could not be predicted\" below.",
                f.name,
                speedup(Some(at_most))
            ));
        }
    }
    if let Some(hardware) = &answer.hardware {
        notes.push(format!(
            "A faster machine (not a change to the program): {} would give {}.",
            hardware.name,
            speedup(hardware.speedup)
        ));
    }
    let useless: Vec<&str> = doc
        .candidates
        .iter()
        .filter(|c| !c.useful && !c.hardware)
        .map(|c| c.name.as_str())
        .collect();
    if !useless.is_empty() {
        notes.push(format!(
            "Not worth it here (under {:.1}% faster): {}.",
            (doc.useful_speedup - 1.0) * 100.0,
            useless.join(", ")
        ));
    }
    push_notes(&mut out, "Summary", &notes);

    let mut reasons = Vec::new();
    let mut same = Vec::new();
    for (hardware, title) in [
        (
            false,
            "Changes to the program, best first (-: not worth it; 4=3: the same step as row 3)",
        ),
        (
            true,
            "A faster machine: what it would buy, best first (not a change to the program)",
        ),
    ] {
        let rows: Vec<&CandidateJson> = doc
            .candidates
            .iter()
            .filter(|c| c.hardware == hardware)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let table = candidate_table(
            &rows,
            if hardware { "H" } else { "" },
            &mut reasons,
            &mut same,
        );
        push_section(&mut out, title, &table);
    }
    push_notes(&mut out, "Same predicted step", &same);
    push_notes(&mut out, "Why", &reasons);
    // Caveats: those of the window (every candidate carries them) once, then each useful
    // candidate's own.
    let common: Vec<String> = doc.candidates.first().map_or(Vec::new(), |first| {
        first
            .trust
            .caveats
            .iter()
            .filter(|c| doc.candidates.iter().all(|o| o.trust.caveats.contains(c)))
            .cloned()
            .collect()
    });
    push_notes(&mut out, "Caveats (every candidate)", &common);
    let own: Vec<String> = doc
        .candidates
        .iter()
        .filter(|c| c.useful)
        .flat_map(|c| {
            c.trust
                .caveats
                .iter()
                .filter(|caveat| !common.contains(caveat))
                .map(move |caveat| format!("{}: {caveat}", c.name))
        })
        .collect();
    push_notes(&mut out, "Caveats", &own);
    if !doc.memory_trades.is_empty() {
        let mut trades = new_table(
            &[
                "memory-for-time trade",
                "step ms",
                "speedup",
                "activations saved",
                "step peak falls",
                "peak after",
                "record (pairs)",
            ],
            1,
        );
        let mut notes = Vec::new();
        for c in &doc.memory_trades {
            let memory = c.memory.as_ref();
            trades.add_row(vec![
                c.name.clone(),
                ms(c.predicted_ns),
                speedup(c.speedup),
                memory.map_or("n/a".to_string(), |m| bytes(m.saved_bytes.max(0) as u64)),
                memory.map_or("n/a".to_string(), |m| m.step_peak_cell()),
                memory
                    .and_then(|m| m.peak_after_bytes)
                    .map_or("n/a".to_string(), |p| bytes(p.max(0) as u64)),
                record_cell(c),
            ]);
            if let Some(m) = memory {
                notes.push(format!("{}: {}", c.name, m.summary()));
            }
        }
        push_section(
            &mut out,
            "Memory-for-time trades (not speedups: they buy memory with time)",
            &trades.to_string(),
        );
        push_notes(&mut out, "Memory", &notes);
    }
    let failed: Vec<String> = doc
        .failed
        .iter()
        .map(|f| format!("{}: {}", f.name, f.error))
        .collect();
    push_notes(&mut out, "Could not be predicted on this trace", &failed);
    out
}

/// One ranked table of candidates (rows `P1`, `P2`... numbered with `prefix`), with each
/// row's reason into `reasons` and, where rows predict the very same step, why into `same`.
fn candidate_table(
    rows: &[&CandidateJson],
    prefix: &str,
    reasons: &mut Vec<String>,
    same: &mut Vec<String>,
) -> String {
    let mut table = new_table(
        &[
            "#",
            "candidate",
            "step ms",
            "speedup",
            "saves ms",
            "then bound by",
            "record (pairs)",
        ],
        2,
    );
    let mut rank = 0;
    // The first row of each predicted step: later rows with the same step name it.
    let mut first_of: Vec<(i64, String, String)> = Vec::new();
    for c in rows {
        let label = if c.useful {
            rank += 1;
            format!("{prefix}{rank}")
        } else {
            "-".to_string()
        };
        reasons.push(format!("{label} {}: {}", c.name, c.reason));
        let shown = match first_of.iter().find(|(ns, _, _)| *ns == c.predicted_ns) {
            Some((_, first, first_label)) if c.useful => {
                same.push(format!(
                    "{} predicts the same step as {first} ({} ms): the step is then bound by \
                     {} work that neither changes further",
                    c.name,
                    ms(c.predicted_ns),
                    c.bound_after
                ));
                format!("{label}={first_label}")
            }
            _ => {
                first_of.push((c.predicted_ns, c.name.clone(), label.clone()));
                label
            }
        };
        table.add_row(vec![
            shown,
            c.name.clone(),
            ms(c.predicted_ns),
            speedup(c.speedup),
            ms(c.gain_ns),
            c.bound_after.to_string(),
            record_cell(c),
        ]);
    }
    for i in [5, 6] {
        if let Some(column) = table.column_mut(i) {
            column.set_cell_alignment(comfy_table::CellAlignment::Left);
        }
    }
    table.to_string()
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The widest a kernel's short name is shown.
const KERNEL_NAME_WIDTH: usize = 60;
