//! `stepcast info TRACE`: what a trace holds and how its graph was built.

use stepcast_report::{json, table};

use crate::args::InfoArgs;

/// Runs `info` and returns its output (text, or JSON with `--json`).
pub fn run(args: &InfoArgs) -> anyhow::Result<super::Answer> {
    let (trace, window) = super::load(&args.trace)?;
    let mut info = json::info_json(&trace, &window);
    info.trace.file = Some(args.trace.display().to_string());
    super::render(&args.output, &info, table::info_text, None, None)
}
