//! `stepcast info TRACE`: what a trace holds and how its graph was built.

use stepcast_cli::jobs::{self, Loaded};
use stepcast_report::table;

use crate::args::InfoArgs;
use crate::progress::Terminal;

/// Runs `info` and returns its output (text, or JSON with `--json`, or its tables as CSV).
pub fn run(args: &InfoArgs) -> anyhow::Result<super::Answer> {
    let info = jobs::info(&Loaded::load(
        &args.trace,
        super::read_options(),
        &Terminal::new(),
    )?);
    super::render(&args.output, &info, table::info_text, None, None)
}
