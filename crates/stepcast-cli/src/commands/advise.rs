//! `stepcast advise TRACE`: every built-in optimization and useful combinations, ranked by
//! predicted gain.

use anyhow::Context as _;
use stepcast::whatif::advise;
use stepcast_report::{json, markdown, table};

use crate::args::AdviseArgs;

/// Runs `advise` and returns its output (text, or JSON with `--json`).
pub fn run(args: &AdviseArgs) -> anyhow::Result<super::Answer> {
    let progress = crate::progress::Progress::spinner(format!("reading {}", args.trace.display()));
    let mapped = super::Mapped::load(&args.trace)?;
    progress.message("predicting every model and combination");
    let (trace, window, context) = (
        &mapped.trace,
        &mapped.window,
        mapped.context(args.peers.peers()),
    );
    let advice =
        advise(&context).with_context(|| format!("cannot advise on {}", args.trace.display()))?;
    drop(progress);
    let mut document = json::advise_json(trace, window, &advice);
    document.trace.file = Some(args.trace.display().to_string());
    super::render(
        &args.output,
        &document,
        table::advise_text,
        Some(&markdown::advise_markdown),
        None,
    )
}
