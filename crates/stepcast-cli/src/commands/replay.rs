//! `stepcast replay TRACE`: replay the trace's graph and compare every step with the recording.
//! `stepcast replay DIR` (or several traces, or an export of several processes): replay every
//! rank as one global graph.

use stepcast_cli::jobs::{self, Input, Quiet};
use stepcast_report::table;

use crate::args::ReplayArgs;

/// Runs `replay` and returns its output (text, or JSON with `--json`).
pub fn run(args: &ReplayArgs) -> anyhow::Result<String> {
    match jobs::open(&args.traces, super::read_options(), &Quiet)? {
        Input::Trace(loaded) => {
            if args.ranks.is_some() {
                anyhow::bail!(
                    "--ranks chooses the ranks to detail in a job of several traces; {} is one \
                     trace",
                    loaded.path.display()
                );
            }
            let document = jobs::replay(&loaded, args.step, &Quiet)?;
            if args.output.json {
                super::to_json(&document)
            } else {
                Ok(table::replay_text(&document))
            }
        }
        Input::Job(job) => {
            let document = job.replay(args.step, args.ranks.as_deref(), &Quiet)?;
            if args.output.json {
                super::to_json(&document)
            } else {
                Ok(table::ranks::ranks_text(&document))
            }
        }
    }
}
