//! `stepcast analyze TRACE`: where the step's time goes.

use anyhow::Context;
use stepcast_report::{json, markdown, table};

use crate::args::AnalyzeArgs;

/// Runs `analyze` and returns its output (text, or JSON with `--json`).
pub fn run(args: &AnalyzeArgs) -> anyhow::Result<super::Answer> {
    let (trace, window) = super::load(&args.trace)?;
    let step_index = match args.step {
        Some(number) => Some(super::step_index(&args.trace, &window, number)?),
        None => None,
    };
    let analysis = stepcast::analyze::analyze(&trace, &window, step_index)
        .with_context(|| format!("cannot analyze {}", args.trace.display()))?;
    let mut document = json::analyze_json(&trace, &window, &analysis, args.step);
    document.trace.file = Some(args.trace.display().to_string());
    super::render(
        &args.output,
        &document,
        table::analyze_text,
        Some(&markdown::analyze_markdown),
        None,
    )
}
