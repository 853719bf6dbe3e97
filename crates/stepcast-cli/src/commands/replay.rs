//! `stepcast replay TRACE`: replay the trace's graph and compare every step with the recording.
//! `stepcast replay DIR` (or several traces): replay every rank's trace as one global graph.

use stepcast_cli::jobs::{self, Job, Loaded};
use stepcast_report::table;

use crate::args::ReplayArgs;
use crate::progress::Terminal;

/// Runs `replay` and returns its output (text, JSON, or its tables as CSV).
pub fn run(args: &ReplayArgs) -> anyhow::Result<super::Answer> {
    let progress = Terminal::new();
    match args.traces.as_slice() {
        [trace] if !trace.is_dir() => {
            if args.ranks.is_some() {
                anyhow::bail!(
                    "--ranks chooses the ranks to detail in a job of several traces; {} is one \
                     trace",
                    trace.display()
                );
            }
            let loaded = Loaded::load(trace, &progress)?;
            let document = jobs::replay(&loaded, args.step, &progress)?;
            drop(progress);
            super::render(&args.output, &document, table::replay_text, None, None)
        }
        paths => {
            let document =
                Job::load(paths, &progress)?.replay(args.step, args.ranks.as_deref(), &progress)?;
            drop(progress);
            super::render(
                &args.output,
                &document,
                table::ranks::ranks_text,
                None,
                None,
            )
        }
    }
}
