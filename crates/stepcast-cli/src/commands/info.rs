//! `stepcast info TRACE`: what a trace holds and how its graph was built.

use stepcast_cli::jobs::{self, Loaded, Quiet};
use stepcast_report::table;

use crate::args::InfoArgs;

/// Runs `info` and returns its output (text, or JSON with `--json`).
pub fn run(args: &InfoArgs) -> anyhow::Result<String> {
    let info = jobs::info(&Loaded::load(&args.trace, super::read_options(), &Quiet)?);
    if args.output.json {
        super::to_json(&info)
    } else {
        Ok(table::info_text(&info))
    }
}
