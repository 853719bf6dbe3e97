//! The report of a job folder: the ranks side by side (each rank's steps in the global
//! replay, waiting against transfer per collective, stragglers, the critical path across
//! ranks).

use std::fmt::Write as _;

use super::chart::{Axis, grouped_bars, nice_ticks, stacked_bar};
use super::page::{Cell, Section, Table, ms, note, paragraph, signed_percent};
use crate::json::AdviseJobJson;
use crate::json::ranks::RanksJson;
use crate::table::plural;

/// What the job's page can say of changes: the job's `advise`, or why there is none.
pub enum JobAdvice<'a> {
    /// `advise DIR`'s document.
    Advised(&'a AdviseJobJson),
    /// Why the page has none (reduced ranks, unreadable ranks, the advice failed).
    Unavailable(String),
}

pub(super) fn sections(ranks: &RanksJson, advice: &JobAdvice<'_>) -> Vec<Section> {
    vec![
        answer(ranks),
        what_to_change(advice),
        steps(ranks),
        wait_transfer(ranks),
        stragglers(ranks),
        critical_path(ranks),
    ]
}

/// The job's `advise`: each change applied to every rank and the job replayed as one graph.
fn what_to_change(advice: &JobAdvice<'_>) -> Section {
    let section = |body| Section {
        id: "what-to-change",
        title: "What to change".to_string(),
        body,
    };
    let advice = match advice {
        JobAdvice::Advised(advice) => advice,
        JobAdvice::Unavailable(why) => return section(paragraph(&format!("No advice: {why}."))),
    };
    if let Some(reason) = &advice.declined {
        return section(paragraph(&format!(
            "Declined: {reason}. No change is offered."
        )));
    }
    // The answer's change is the program's: hardware is ranked in the table beside it.
    let best = advice.candidates.iter().find(|c| !c.hardware);
    let mut body = match best {
        Some(best) => paragraph(&format!(
            "Each change applied to every rank and the job replayed as one graph, so a rank \
             made faster waits for its peers. Best change to the program: {}, the job's step \
             {} → {} (×{:.3}), then bound by {}.",
            best.name,
            ms(advice.baseline_ns),
            ms(best.predicted_ns),
            best.speedup.unwrap_or(1.0),
            best.bound_by
                .first()
                .map_or_else(|| "no rank".to_string(), |r| format!("rank {}", r.rank)),
        )),
        None => paragraph("No change to the program is predicted to help."),
    };
    let mut table = Table::new(&[
        "change",
        "step",
        "speedup",
        "bound",
        "alone (per rank)",
        "bound by",
    ]);
    for c in &advice.candidates {
        let alone: Vec<f64> = c.alone_speedups.iter().flatten().copied().collect();
        let range = match (
            alone.iter().copied().reduce(f64::min),
            alone.iter().copied().reduce(f64::max),
        ) {
            (Some(lo), Some(hi)) => format!("×{lo:.2}–×{hi:.2}"),
            _ => "n/a".to_string(),
        };
        table.row(vec![
            Cell::text(&c.name),
            Cell::ms(c.predicted_ns),
            Cell::number(
                c.speedup
                    .map_or_else(|| "n/a".to_string(), |v| format!("×{v:.3}")),
                c.speedup.unwrap_or(0.0),
            ),
            c.trust.bound_ns.map_or_else(|| Cell::text("n/a"), Cell::ms),
            Cell::text(range),
            Cell::text(
                c.bound_by
                    .first()
                    .map_or_else(|| "-".to_string(), |r| format!("rank {}", r.rank)),
            ),
        ]);
    }
    if !table.is_empty() {
        body.push_str(&note(
            "Best first. bound: the most the change can gain the job per step; alone: what \
             each rank's own trace predicts of it, its peers at their recorded lateness.",
        ));
        body.push_str(&table.render());
    }
    if let Some(best) = best
        && !best.trust.caveats.is_empty()
    {
        body.push_str(&note(&format!(
            "Caveats of the best: {}.",
            best.trust.caveat_text()
        )));
    }
    section(body)
}

fn answer(ranks: &RanksJson) -> Section {
    let path = &ranks.critical_path;
    // The collective its peers waited longest for: the largest spread in the stragglers
    // table below, so the headline and the table agree.
    let late = ranks
        .stragglers
        .iter()
        .max_by_key(|s| (s.spread_ns, std::cmp::Reverse(s.collective)));
    let mut body = paragraph(&format!(
        "{} replayed as one graph, collectives released when their last peer arrives; \
         every rank's steps within {} of their measured span (largest error). Clock offsets \
         from {} ({}).",
        plural(ranks.ranks.len() as u64, "rank"),
        ranks
            .max_abs_error
            .map_or_else(|| "n/a".to_string(), |e| format!("{:.2}%", e * 100.0)),
        plural(ranks.clock_alignment.collectives_used, "matched collective"),
        ranks.clock_alignment.status
    ));
    if !ranks.missing_ranks.is_empty() {
        body.push_str(&paragraph(&crate::table::ranks::missing_words(ranks)));
    }
    let groups = crate::table::ranks::group_list(ranks);
    if !groups.is_empty() {
        body.push_str(&paragraph(&format!(
            "Collectives matched per group, each waiting for its members only: {}.",
            groups.join("; ")
        )));
    }
    if let Some(words) = crate::table::ranks::host_groups_words(ranks) {
        body.push_str(&paragraph(&words));
    }
    if let Some(words) = crate::table::ranks::unpaired_transfers_words(ranks) {
        body.push_str(&paragraph(&words));
    }
    if let Some(words) = crate::table::ranks::earlier_windows_words(&ranks.earlier_windows) {
        body.push_str(&paragraph(&words));
    }
    if !ranks.unreadable.is_empty() {
        body.push_str(&paragraph(&crate::table::ranks::unreadable_words(ranks)));
    }
    body.push_str(&paragraph(&format!(
        "The critical path across ranks is {} long, {}, {}.",
        ms(path.length_ns),
        plural(path.tasks, "task"),
        match path.rank_crossings {
            0 => "on one rank".to_string(),
            1 => "crossing ranks once".to_string(),
            n => format!("crossing ranks {n} times"),
        }
    )));
    if let Some(straggler) = late {
        body.push_str(&paragraph(&format!(
            "The longest wait for a straggler: rank {} started {} `{}` (collective {}) {} after \
             the first rank, {} after the next-to-last{}.",
            straggler.last_rank,
            straggler.group,
            straggler.op,
            straggler.collective,
            ms(straggler.spread_ns),
            ms(straggler.lead_ns),
            straggler
                .doing
                .as_deref()
                .map_or_else(String::new, |d| format!(", busy in `{d}`"))
        )));
    }
    Section {
        id: "answer",
        title: "The answer".to_string(),
        body,
    }
}

fn steps(ranks: &RanksJson) -> Section {
    let mut numbers: Vec<u64> = ranks
        .ranks
        .iter()
        .flat_map(|r| r.steps.iter().map(|s| s.number))
        .collect();
    numbers.sort_unstable();
    numbers.dedup();
    let labels: Vec<String> = ranks
        .ranks
        .iter()
        .map(|r| format!("rank {}", r.rank))
        .collect();
    let mut series = Vec::new();
    let mut top: f64 = 0.0;
    for &number in &numbers {
        let values: Vec<f64> = ranks
            .ranks
            .iter()
            .map(|r| {
                r.steps
                    .iter()
                    .find(|s| s.number == number)
                    .map_or(f64::NAN, |s| s.measured_ns as f64 / 1e6)
            })
            .collect();
        top = values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .fold(top, f64::max);
        series.push((format!("step {number} measured (ms)"), values));
    }
    let mut body = grouped_bars(
        &labels,
        &series,
        &Axis {
            title: "ms".to_string(),
            ticks: nice_ticks(0.0, top),
        },
        "rank",
    );
    let mut table = Table::new(&["rank", "file", "step", "measured", "replayed", "error"]);
    for rank in &ranks.ranks {
        for step in &rank.steps {
            table.row(vec![
                Cell::number(rank.rank.to_string(), rank.rank as f64),
                Cell::text(
                    rank.file
                        .as_deref()
                        .map_or("", |f| f.rsplit('/').next().unwrap_or(f)),
                ),
                Cell::number(step.number.to_string(), step.number as f64),
                Cell::ms(step.measured_ns),
                Cell::ms(step.replayed_ns),
                Cell::number(signed_percent(step.error), step.error.unwrap_or(0.0)),
            ]);
        }
    }
    body.push_str(&table.render());
    Section {
        id: "ranks",
        title: "Ranks side by side".to_string(),
        body,
    }
}

fn wait_transfer(ranks: &RanksJson) -> Section {
    let mut body = paragraph(
        "Each rank's collectives (NCCL's kernels, gloo's worker-thread ranges) split into \
         waiting for its peers and the transfer itself (aligned clocks).",
    );
    for rank in &ranks.wait_transfer.per_rank {
        let _ = write!(
            body,
            "<h3>rank {} ({} collectives, {})</h3>\n{}",
            rank.rank,
            rank.kernels,
            ms(rank.recorded_ns),
            stacked_bar(
                &[
                    ("waiting for peers".to_string(), rank.wait_ns),
                    ("transfer".to_string(), rank.transfer_ns),
                    ("not split".to_string(), rank.unsplit_ns),
                ],
                rank.recorded_ns
            )
        );
    }
    let mut table = Table::new(&[
        "collective",
        "group",
        "seq",
        "op",
        "last rank",
        "rank",
        "recorded",
        "wait",
        "transfer",
    ]);
    for collective in &ranks.wait_transfer.collectives {
        for instance in &collective.instances {
            table.row(vec![
                Cell::number(
                    collective.collective.to_string(),
                    f64::from(collective.collective),
                ),
                Cell::text(&collective.group),
                Cell::number(collective.seq.to_string(), f64::from(collective.seq)),
                Cell::text(&collective.op),
                Cell::number(
                    collective.last_rank.to_string(),
                    collective.last_rank as f64,
                ),
                Cell::number(instance.rank.to_string(), instance.rank as f64),
                Cell::ms(instance.recorded_ns),
                Cell::ms(instance.wait_ns),
                Cell::ms(instance.transfer_ns),
            ]);
        }
    }
    body.push_str("<h3>Per collective</h3>\n");
    body.push_str(&table.render());
    Section {
        id: "collectives",
        title: "Waiting against transfer".to_string(),
        body,
    }
}

fn stragglers(ranks: &RanksJson) -> Section {
    let mut table = Table::new(&[
        "collective",
        "group",
        "op",
        "last rank",
        "lead",
        "spread",
        "cause",
        "doing",
    ]);
    for s in &ranks.stragglers {
        table.row(vec![
            Cell::number(s.collective.to_string(), f64::from(s.collective)),
            Cell::text(&s.group),
            Cell::text(&s.op),
            Cell::number(s.last_rank.to_string(), s.last_rank as f64),
            Cell::ms(s.lead_ns),
            Cell::ms(s.spread_ns),
            Cell::text(s.cause),
            Cell::text(match (s.cause, &s.doing, s.doing_ns) {
                ("worker", _, Some(ns)) => format!("taken {} ms after its post", ms(ns)),
                (_, doing, _) => doing.clone().unwrap_or_default(),
            }),
        ]);
    }
    let body = if table.is_empty() {
        paragraph("No matched collective.")
    } else {
        let mut body = note(
            "Per matched collective, on aligned clocks: the last rank started it last; \
             spread is how long after the first rank it started (the others' wait), \
             lead how long after the next-to-last; cause says whether its launch \
             came late (host), its stream was busy (stream) or, posted in time, its worker \
             thread took it late (worker), doing what it ran meanwhile.",
        );
        body.push_str(&table.render());
        body
    };
    Section {
        id: "stragglers",
        title: "Stragglers".to_string(),
        body,
    }
}

fn critical_path(ranks: &RanksJson) -> Section {
    let path = &ranks.critical_path;
    let parts: Vec<(String, i64)> = path
        .ns_by_rank
        .iter()
        .map(|r| (format!("rank {}", r.rank), r.ns))
        .collect();
    let mut body = format!("<h3>By rank</h3>\n{}", stacked_bar(&parts, path.length_ns));
    let mut segments = Table::new(&["segment", "rank", "tasks", "time", "entered at"]);
    for (index, segment) in path.segments.iter().enumerate() {
        segments.row(vec![
            Cell::number((index + 1).to_string(), (index + 1) as f64),
            Cell::number(segment.rank.to_string(), segment.rank as f64),
            Cell::number(segment.tasks.to_string(), f64::from(segment.tasks)),
            Cell::ms(segment.ns),
            Cell::text(segment.entered_at.clone().unwrap_or_default()),
        ]);
    }
    body.push_str("<h3>Segments, in path order</h3>\n");
    body.push_str(&segments.render());
    let mut top = Table::new(&["rank", "task", "kind", "time on the path"]);
    for task in &path.top_tasks {
        top.row(vec![
            Cell::number(task.rank.to_string(), task.rank as f64),
            Cell::text(&task.name),
            Cell::text(task.kind),
            Cell::ms(task.share_ns),
        ]);
    }
    let _ = write!(body, "<h3>Longest tasks on the path</h3>\n{}", top.render());
    Section {
        id: "critical-path",
        title: "Critical path across ranks".to_string(),
        body,
    }
}
