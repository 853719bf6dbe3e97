//! `stepcast analyze TRACE`: where the step's time goes.

use stepcast_cli::jobs;
use stepcast_report::{markdown, table};

use crate::args::AnalyzeArgs;
use crate::progress::Terminal;

/// Runs `analyze` and returns its output (text, JSON, CSV tables or a Markdown digest).
pub fn run(args: &AnalyzeArgs) -> anyhow::Result<super::Answer> {
    let progress = Terminal::new();
    let loaded = super::load(&args.trace, &progress)?;
    let document = jobs::analyze(&loaded, args.step, args.top.0, args.host.host(), &progress)?;
    drop(progress);
    super::render(
        &args.output,
        &document,
        table::analyze_text,
        Some(&markdown::analyze_markdown),
        None,
    )
}
