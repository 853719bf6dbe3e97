//! `stepcast replay TRACE`: replay the trace's graph and compare every step with the recording.
//! `stepcast replay DIR` (or several traces): replay every rank's trace as one global graph.

use stepcast_cli::jobs::{self, Job, Loaded, Quiet};
use stepcast_report::table;

use crate::args::ReplayArgs;

/// Runs `replay` and returns its output (text, or JSON with `--json`).
pub fn run(args: &ReplayArgs) -> anyhow::Result<String> {
    match args.traces.as_slice() {
        [trace] if !trace.is_dir() => {
            if args.ranks.is_some() {
                anyhow::bail!(
                    "--ranks chooses the ranks to detail in a job of several traces; {} is one \
                     trace",
                    trace.display()
                );
            }
            let loaded = Loaded::load(trace, &Quiet)?;
            let document = jobs::replay(&loaded, args.step, &Quiet)?;
            if args.output.json {
                super::to_json(&document)
            } else {
                Ok(table::replay_text(&document))
            }
        }
        paths => {
            let document =
                Job::load(paths, &Quiet)?.replay(args.step, args.ranks.as_deref(), &Quiet)?;
            if args.output.json {
                super::to_json(&document)
            } else {
                Ok(table::ranks::ranks_text(&document))
            }
        }
    }
}
