//! `stepcast advise TRACE`: every built-in optimization and useful combinations, ranked by
//! predicted gain.

use stepcast_cli::jobs::{self, Loaded, Quiet};
use stepcast_report::table;

use crate::args::AdviseArgs;

/// Runs `advise` and returns its output (text, or JSON with `--json`).
pub fn run(args: &AdviseArgs) -> anyhow::Result<String> {
    let loaded = Loaded::load(&args.trace, super::read_options(), &Quiet)?;
    let document = jobs::advise(&loaded, args.peers.peers(), &Quiet)?;
    if args.output.json {
        super::to_json(&document)
    } else {
        Ok(table::advise_text(&document))
    }
}
