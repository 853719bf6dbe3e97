//! The self-contained HTML report (`stepcast report`): one file, with its styles, script and
//! data inlined, that opens offline. Charts are SVG drawn here; the timeline is drawn by the
//! inlined script on a canvas from JSON data; tables sort on a click of a header.
//!
//! Three reports: one trace ([`trace_report`]), a job folder of ranks ([`ranks_report`]), and
//! two runs compared ([`compare_report`]). Each is rendered from the same documents the
//! `--json` output writes (plus the timeline and memory curves, which no JSON document
//! holds), so the page shows the CLI's numbers. The same inputs give the same bytes.
//!
//! The script records on the root element whether it ran (`data-report-ready`), how long the
//! page took to load (`data-load-ms`) and where each section lies (`data-layout`), so that a
//! browser test can check the page as a person sees it.

mod chart;
mod compare;
mod memory;
mod page;
mod ranks;
mod roofline;
mod timeline;
mod trace;

pub use memory::MemoryCurve;
pub use ranks::JobAdvice;
pub use timeline::{KINDS, RowView, TimelineView};

use crate::json::ranks::RanksJson;
use crate::json::{AdviseJson, AnalyzeJson, CompareJson, WhatIfJson};

/// What the report of one trace shows.
#[derive(Clone, Copy, Debug)]
pub struct TraceReport<'a> {
    /// The `analyze` document.
    pub analyze: &'a AnalyzeJson,
    /// The `advise` document, or why there is none.
    pub advise: Result<&'a AdviseJson, &'a str>,
    /// A `whatif ddp` sweep over GPU counts, or why there is none.
    pub scaling: Result<&'a WhatIfJson, &'a str>,
    /// The analyzed step's timeline, if it has tasks.
    pub timeline: Option<&'a TimelineView>,
    /// Memory over the window, per device with memory events.
    pub memory: &'a [MemoryCurve],
}

/// The report of one trace.
pub fn trace_report(report: &TraceReport<'_>) -> String {
    let file = report.analyze.trace.file.as_deref().unwrap_or("a trace");
    let device = report
        .analyze
        .device
        .as_ref()
        .and_then(|d| d.name.clone())
        .map_or_else(String::new, |name| format!(" on {name}"));
    page::Page {
        title: format!("stepcast report: {file}"),
        subtitle: format!(
            "{} steps{device}; {} events read",
            report.analyze.steps.len(),
            report.analyze.trace.events
        ),
        sections: trace::sections(report),
    }
    .render()
}

/// The report of several ranks of one job replayed together.
pub fn ranks_report(ranks: &RanksJson, advice: &JobAdvice<'_>, title: &str) -> String {
    page::Page {
        title: format!("stepcast report: {title}"),
        subtitle: format!("{} ranks replayed as one graph", ranks.ranks.len()),
        sections: ranks::sections(ranks, advice),
    }
    .render()
}

/// The report of two runs of one workload.
pub fn compare_report(compare: &CompareJson) -> String {
    let name = |side: &crate::json::SideJson, fallback: &str| {
        side.trace
            .file
            .clone()
            .unwrap_or_else(|| fallback.to_string())
    };
    page::Page {
        title: format!(
            "stepcast compare: {} → {}",
            name(&compare.before, "before"),
            name(&compare.after, "after")
        ),
        subtitle: "two runs of one workload, side by side".to_string(),
        sections: compare::sections(compare),
    }
    .render()
}
