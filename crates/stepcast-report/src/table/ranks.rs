//! A multi-rank `replay` as text: a summary, the per-rank table, clock offsets, stragglers and
//! the critical path across ranks.

use super::{
    ms, new_table, push_notes, push_section, sanitize, signed_percent, us, with_prose_last, wrap,
};

/// Nanoseconds as microseconds with one decimal, no unit (the column header has it).
fn micros(ns: i64) -> String {
    format!("{:.1}", ns as f64 / 1e3)
}
use crate::json::ranks::RanksJson;

/// Stragglers whose lead is shorter than this are not listed in the text (they are in JSON).
const STRAGGLER_TEXT_MIN_LEAD_NS: i64 = 5_000;

/// Jobs of up to this many ranks list every rank in the text; larger ones the ranks asked for
/// (`--ranks`), else this many holding the most critical-path time.
const TEXT_RANKS: usize = 16;

/// Positions (in `doc.ranks`) of the ranks the text lists, in rank order.
fn shown_ranks(doc: &RanksJson) -> Vec<usize> {
    let all: Vec<usize> = (0..doc.ranks.len()).collect();
    if doc.ranks.len() <= TEXT_RANKS {
        return all;
    }
    if !doc.detail_ranks.is_empty() {
        return all
            .into_iter()
            .filter(|&i| doc.detail_ranks.contains(&doc.ranks[i].rank))
            .collect();
    }
    let on_path = |i: usize| doc.critical_path.ns_by_rank.get(i).map_or(0, |r| r.ns);
    let mut worst = all;
    worst.sort_by_key(|&i| (std::cmp::Reverse(on_path(i)), i));
    worst.truncate(TEXT_RANKS);
    worst.sort_unstable();
    worst
}

/// The ranks of the job's world no trace was given for, and what that leaves out.
pub(crate) fn missing_words(doc: &RanksJson) -> String {
    let list: Vec<String> = doc.missing_ranks.iter().map(i64::to_string).collect();
    let shown = if list.len() > 16 {
        format!("{}, ...", list[..16].join(", "))
    } else {
        list.join(", ")
    };
    format!(
        "Missing: {} of the job's {} ranks (rank {shown}) were not given; the stragglers, the \
         critical path across ranks and the wait/transfer split are of the {} ranks given only.",
        doc.missing_ranks.len(),
        doc.world_size.unwrap_or_default(),
        doc.ranks.len()
    )
}

/// The ranks joined with their Execution Traces, and the ETs of no rank.
fn execution_trace_words(doc: &RanksJson) -> Option<String> {
    if doc.execution_traces.is_empty() && doc.execution_traces_unmatched.is_empty() {
        return None;
    }
    let links: u64 = doc.execution_traces.iter().map(|e| e.data_links).sum();
    let mut words = format!(
        "Execution Traces joined: {} rank{} (their graphs hold the {} data dependencies the ETs \
         state between threads).",
        doc.execution_traces.len(),
        if doc.execution_traces.len() == 1 {
            ""
        } else {
            "s"
        },
        links
    );
    if !doc.execution_traces_unmatched.is_empty() {
        words.push_str(&format!(
            " Of no rank's process, left out: {}.",
            doc.execution_traces_unmatched.join(", ")
        ));
    }
    Some(words)
}

/// The rank files left out as unreadable (`--skip-unreadable`), each with why, and what that
/// leaves out.
pub(crate) fn unreadable_words(doc: &RanksJson) -> String {
    let shown: Vec<String> = doc
        .unreadable
        .iter()
        .take(8)
        // The reason is the file's one-line error, which names the file.
        .map(|u| {
            if u.reason.contains(&u.file) {
                sanitize(&u.reason)
            } else {
                format!("{}: {}", sanitize(&u.file), sanitize(&u.reason))
            }
        })
        .collect();
    let more = doc.unreadable.len().saturating_sub(shown.len());
    format!(
        "Left out as unreadable (--skip-unreadable): {} rank file{}: {}{}; every figure across \
         ranks is of the {} ranks read only.",
        doc.unreadable.len(),
        if doc.unreadable.len() == 1 { "" } else { "s" },
        shown.join("; "),
        if more > 0 {
            format!("; and {more} more")
        } else {
            String::new()
        },
        doc.ranks.len()
    )
}

/// Each process group (or what stands for one) with its members where a trace names them and
/// how its collectives were matched: `1 [ranks 0, 1] group inferred`.
pub(crate) fn group_list(doc: &RanksJson) -> Vec<String> {
    doc.collectives
        .groups
        .iter()
        // Transfers without a recorded peer stand for no group ([`unpaired_transfers_words`]).
        .filter(|g| g.group != stepcast::ranks::UNPAIRED_TRANSFERS)
        .map(|g| {
            // A group's members where a trace names them: what its collectives wait for.
            let members = g.ranks.as_ref().map_or_else(String::new, |ranks| {
                let ranks: Vec<String> = ranks.iter().map(i64::to_string).collect();
                format!(" [ranks {}]", ranks.join(", "))
            });
            let how = match g.source {
                "inferred" => "group inferred".to_string(),
                "peer_by_time" => "paired by time".to_string(),
                source => format!("by {}", source.replace('_', " ")),
            };
            format!("{}{members} {how}", sanitize(&g.group))
        })
        .collect()
}

/// Where gloo's collectives were left unmatched for want of a group
/// (`collectives.host_groups`): why, and how many.
pub(crate) fn host_groups_words(doc: &RanksJson) -> Option<String> {
    let why = host_groups_reason(doc.collectives.host_groups)?;
    let left = doc
        .collectives
        .unmatched
        .iter()
        .filter(|u| u.reason == "its group is neither recorded nor inferred")
        .count();
    Some(format!(
        "gloo records no process group on its collectives and the ranks declare several: \
         {why}; their {left} instances are left unmatched (each keeps its own recorded wait) \
         rather than paired across every rank."
    ))
}

/// The traces of earlier profiling windows left out: how many, which (the first few), and what
/// was replayed instead.
pub(crate) fn earlier_windows_words(files: &[String]) -> Option<String> {
    if files.is_empty() {
        return None;
    }
    let shown: Vec<String> = files.iter().take(4).map(|f| sanitize(f)).collect();
    let more = files.len() - shown.len();
    Some(format!(
        "The profiler traced these processes in several windows (a repeating schedule, one \
         file per window, as tensorboard_trace_handler writes them): each rank's last window \
         is replayed, and the {} file{} of earlier windows left out ({}{}); give a window's \
         files alone to replay it.",
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ))
}

/// Where gloo's point-to-point transfers record no peer (traced without `record_shapes`):
/// how many the ranks' times paired, and how many are left unmatched.
pub(crate) fn unpaired_transfers_words(doc: &RanksJson) -> Option<String> {
    let reason = stepcast::ranks::UnmatchedReason::PeerNotRecorded.as_str();
    let left = doc
        .collectives
        .unmatched
        .iter()
        .filter(|u| u.reason == reason)
        .count();
    let paired: u64 = doc
        .collectives
        .groups
        .iter()
        .filter(|g| g.source == stepcast::ranks::GroupSource::PeerByTime.as_str())
        .map(|g| u64::from(g.matched))
        .sum();
    if left == 0 && paired == 0 {
        return None;
    }
    let mut words = format!(
        "{} of gloo's point-to-point sends and receives record no peer: their posting ops keep \
         it among their concrete inputs, which the profiler records only with \
         record_shapes=True.",
        2 * paired + left as u64
    );
    if paired > 0 {
        words.push_str(&format!(
            " {} of them are paired by their times into {paired} transfers (inferred): gloo \
             sends only once the receiver has posted, so a transfer's two sides overlap, and \
             each pair is one that every pairing consistent with the ranks' times holds.",
            2 * paired
        ));
        if doc.clock_alignment.clocks > 1 {
            words.push_str(
                " Across hosts, each host's clock was first placed against the others' by the \
                 transfers: at the one interval of offsets where the most of them fit at once.",
            );
        }
    }
    if left > 0 {
        let why = if doc.clock_alignment.clocks > 1 {
            "their ranks ran on several hosts, and their transfers placed no host's clock \
             against the others' (they fit at several offsets, or with another host's as well), \
             or their times fit more than one other side"
        } else {
            "their times fit more than one other side"
        };
        words.push_str(&format!(
            " The other {left} are left unmatched (each keeps its own recorded wait): {why}, \
             and the pipeline's waits between ranks are the recorded ones there; trace with \
             record_shapes=True to pair them."
        ));
    }
    Some(words)
}

/// Why the groups of gloo's collectives were not inferred, where they were not.
fn host_groups_reason(outcome: &str) -> Option<&'static str> {
    match outcome {
        "inconsistent" => Some(
            "no assignment of each rank's gloo threads to its groups gives every group's \
             members the same collectives",
        ),
        "ambiguous" => Some(
            "several assignments of the ranks' gloo threads to their groups agree and the \
             clocks do not tell them apart",
        ),
        "too_many_choices" => Some("too many assignments of gloo threads to groups to try"),
        _ => None,
    }
}

/// The multi-rank `replay` document as text for a terminal.
pub fn ranks_text(doc: &RanksJson) -> String {
    let steps: usize = doc.ranks.iter().map(|r| r.steps.len()).sum();
    let groups = group_list(doc);
    let groups = if groups.is_empty() {
        String::new()
    } else {
        format!(" ({})", groups.join(", "))
    };
    let mut out = wrap(
        &format!(
            "Replayed {} rank{} ({steps} rank-steps) as one graph: {} collectives matched across \
             ranks{groups}, {} unmatched; clocks aligned ({}, largest spread of a collective's aligned \
             ends {}). Largest step error {}.",
            doc.ranks.len(),
            if doc.ranks.len() == 1 { "" } else { "s" },
            doc.collectives.matched,
            doc.collectives.unmatched.len(),
            doc.clock_alignment.status.replace('_', " "),
            us(doc.clock_alignment.max_end_spread_ns),
            doc.max_abs_error
                .map_or_else(|| "n/a".to_string(), |e| format!("{:.2}%", 100.0 * e)),
        ),
        "",
    );
    if (doc.clock_alignment.clocks as usize) < doc.ranks.len() {
        out.push('\n');
        out.push_str(&wrap(
            &format!(
                "Clocks: the {} ranks ran on {} clock{} (ranks recording the same host share \
                 its clock and one offset).",
                doc.ranks.len(),
                doc.clock_alignment.clocks,
                if doc.clock_alignment.clocks == 1 {
                    ""
                } else {
                    "s"
                }
            ),
            "",
        ));
    }
    if !doc.missing_ranks.is_empty() {
        out.push('\n');
        out.push_str(&wrap(&missing_words(doc), ""));
    }
    if !doc.unreadable.is_empty() {
        out.push('\n');
        out.push_str(&wrap(&unreadable_words(doc), ""));
    }
    if let Some(words) = execution_trace_words(doc) {
        out.push('\n');
        out.push_str(&wrap(&words, ""));
    }
    if let Some(words) = host_groups_words(doc) {
        out.push('\n');
        out.push_str(&wrap(&words, ""));
    }
    if let Some(words) = unpaired_transfers_words(doc) {
        out.push('\n');
        out.push_str(&wrap(&words, ""));
    }
    if let Some(words) = earlier_windows_words(&doc.earlier_windows) {
        out.push('\n');
        out.push_str(&wrap(&words, ""));
    }
    let kinds: Vec<String> = doc
        .clock_alignment
        .constraint_kinds
        .iter()
        .filter(|k| k.count > 0)
        .map(|k| {
            format!(
                "{} {} (smallest slack {})",
                k.count,
                k.kind.replace('_', " "),
                k.min_slack_ns.map_or_else(|| "n/a".to_string(), us)
            )
        })
        .collect();
    if !kinds.is_empty() {
        out.push('\n');
        out.push_str(&wrap(
            &format!(
                "Clock alignment constraints: {}; {} violated.",
                kinds.join(", "),
                doc.clock_alignment.violated_constraints
            ),
            "",
        ));
    }
    out.push('\n');

    let mut table = new_table(
        &[
            "rank",
            "step",
            "measured\nms",
            "replayed\nms",
            "error",
            "clock offset\nµs",
            "residual\nmax µs",
            "collective\nwait ms",
            "collective\ntransfer ms",
            "critical\npath ms",
        ],
        1,
    );
    let shown = shown_ranks(doc);
    for &i in &shown {
        let rank = &doc.ranks[i];
        let offset = doc.clock_offsets_ns.get(i).copied().unwrap_or(0);
        let residual = doc
            .clock_alignment
            .residuals
            .get(i)
            .map_or(0, |r| r.max_abs_ns);
        let on_path = doc.critical_path.ns_by_rank.get(i).map_or(0, |r| r.ns);
        let comm = doc.wait_transfer.per_rank.get(i);
        // The clock, the waits and the path are the rank's over every replayed step: said on
        // its first step's row only (repeated on each, they read as per-step figures).
        for (k, step) in rank.steps.iter().enumerate() {
            let per_rank = |text: String| if k == 0 { text } else { String::new() };
            table.add_row(vec![
                rank.rank.to_string(),
                step.number.to_string(),
                ms(step.measured_ns),
                ms(step.replayed_ns),
                signed_percent(step.error),
                per_rank(micros(offset)),
                per_rank(micros(residual)),
                per_rank(comm.map_or_else(String::new, |c| ms(c.wait_ns))),
                per_rank(comm.map_or_else(String::new, |c| ms(c.transfer_ns))),
                per_rank(ms(on_path)),
            ]);
        }
    }
    let mut ranks_section = table.to_string();
    if shown.len() < doc.ranks.len() {
        ranks_section.push_str(&format!(
            "\n{} of {} ranks shown (the most critical-path time; `--ranks all` lists every \
             rank). Over the ranks: step error median {}, max {} (rank {}); collective wait median \
             {} ms, max {} ms (rank {}).\n",
            shown.len(),
            doc.ranks.len(),
            signed_percent(doc.over_ranks.step_error.median),
            signed_percent(doc.over_ranks.step_error.max),
            doc.over_ranks
                .step_error
                .max_rank
                .map_or_else(|| "n/a".to_string(), |r| r.to_string()),
            ms(doc.over_ranks.wait_ns.median),
            ms(doc.over_ranks.wait_ns.max),
            doc.over_ranks.wait_ns.max_rank,
        ));
    }
    push_section(&mut out, "Ranks", &ranks_section);

    let mut stragglers = with_prose_last(new_table(
        &[
            "#",
            "collective",
            "last\nrank",
            "lead\nµs",
            "spread\nµs",
            "what it was doing",
        ],
        2,
    ));
    for s in doc
        .stragglers
        .iter()
        .filter(|s| s.lead_ns >= STRAGGLER_TEXT_MIN_LEAD_NS)
    {
        let activity = s.activity.as_ref().map(|a| {
            let mut context: Vec<String> = Vec::new();
            if let Some(phase) = a.phase {
                context.push(phase.replace('_', " "));
            }
            if let Some(layer) = &a.layer {
                context.push(format!("layer {}", sanitize(layer)));
            }
            let context = if context.is_empty() {
                String::new()
            } else {
                format!(" [{}]", context.join(", "))
            };
            format!(
                "{}{context} on {}, {} of the wait",
                sanitize(&a.name),
                a.lane,
                us(a.overlap_ns)
            )
        });
        let doing = match (s.cause, &s.doing, s.doing_ns) {
            // gloo's worker thread queues collectives as a stream does.
            ("stream", Some(task), _)
                if s.activity
                    .as_ref()
                    .is_some_and(|a| a.lane.starts_with("thread ")) =>
            {
                format!("worker busy: {}", sanitize(task))
            }
            ("stream", Some(task), _) => format!("stream busy: {}", sanitize(task)),
            ("host", Some(op), Some(ns)) => format!("host: {} ({})", sanitize(op), us(ns)),
            ("host", _, _) => "host: launched late".to_string(),
            ("worker", _, Some(ns)) => format!(
                "worker: posted before the others arrived, its thread took it {} after",
                us(ns)
            ),
            _ => "unknown".to_string(),
        };
        let doing = match activity {
            Some(activity) => format!("{doing}; meanwhile {activity}"),
            None => doing,
        };
        stragglers.add_row(vec![
            s.collective.to_string(),
            format!("{} {}#{}", sanitize(&s.op), sanitize(&s.group), s.seq),
            s.last_rank.to_string(),
            micros(s.lead_ns),
            micros(s.spread_ns),
            doing,
        ]);
    }
    push_section(
        &mut out,
        "Stragglers (rank that started each collective last, aligned clocks)",
        &stragglers.to_string(),
    );
    out.push_str(
        "spread: how long after the first rank the last one started (the others' wait); lead: \
         how long after the next-to-last.\n",
    );

    let path = &doc.critical_path;
    let mut top = new_table(&["rank", "kind", "task", "ms"], 3);
    for task in &path.top_tasks {
        top.add_row(vec![
            task.rank.to_string(),
            task.kind.to_string(),
            sanitize(&task.name),
            ms(task.share_ns),
        ]);
    }
    let late = path.late_start.as_ref().map_or_else(String::new, |l| {
        format!(
            "; it begins on rank {}, whose first task began {} ms after the earliest step start",
            l.rank,
            ms(l.ns)
        )
    });
    push_section(
        &mut out,
        &format!(
            "Critical path across ranks ({} ms, {} tasks, {} rank crossings{late}): longest tasks",
            ms(path.length_ns),
            path.tasks,
            path.rank_crossings
        ),
        &top.to_string(),
    );
    let mut lanes = new_table(&["rank", "lane", "ms"], 2);
    for lane in &path.ns_by_lane {
        lanes.add_row(vec![lane.rank.to_string(), lane.lane.clone(), ms(lane.ns)]);
    }
    let segments: Vec<String> = path
        .segments
        .iter()
        .map(|s| match &s.entered_at {
            None => format!("rank {} ({} ms, {} tasks)", s.rank, ms(s.ns), s.tasks),
            Some(at) => format!(
                "rank {} via {} ({} ms, {} tasks)",
                s.rank,
                sanitize(at.split('(').next().unwrap_or(at)),
                ms(s.ns),
                s.tasks
            ),
        })
        .collect();
    push_section(
        &mut out,
        &format!(
            "Critical path across ranks by lane (visits {})",
            segments.join(" → ")
        ),
        &lanes.to_string(),
    );
    let unmatched: Vec<String> = doc
        .collectives
        .unmatched
        .iter()
        .map(|u| {
            format!(
                "rank {}: {} {}#{}{} {}",
                u.rank,
                u.op,
                sanitize(&u.group),
                u.seq,
                u.step.map_or_else(String::new, |s| format!(" (step {s})")),
                u.reason
            )
        })
        .collect();
    push_notes(&mut out, "Unmatched collectives", &unmatched);
    out
}
