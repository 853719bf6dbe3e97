//! `stepcast analyze TRACE`: where the step's time goes.

use stepcast_cli::jobs::{self, Loaded, Quiet};
use stepcast_report::table;

use crate::args::AnalyzeArgs;

/// Runs `analyze` and returns its output (text, or JSON with `--json`).
pub fn run(args: &AnalyzeArgs) -> anyhow::Result<String> {
    let loaded = Loaded::load(&args.trace, super::read_options(), &Quiet)?;
    let document = jobs::analyze(&loaded, args.step, &Quiet)?;
    if args.output.json {
        super::to_json(&document)
    } else {
        Ok(table::analyze_text(&document))
    }
}
