//! `stepcast info TRACE [--et FILE]`: what a trace holds and how its graph was built, and how
//! the Execution Trace of the same run joins it.

use stepcast_cli::jobs;
use stepcast_report::table;

use crate::args::InfoArgs;
use crate::progress::Terminal;

/// Runs `info` and returns its output (text, or JSON with `--json`, or its tables as CSV).
pub fn run(args: &InfoArgs) -> anyhow::Result<super::Answer> {
    let loaded = super::load(&args.trace, &Terminal::new())?;
    let info = jobs::info(&loaded);
    super::render(&args.output, &info, table::info_text, None, None)
}
