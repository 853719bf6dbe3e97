//! `stepcast replay TRACE`: replay the trace's graph and compare every step with the recording.
//! `stepcast replay DIR` (or several traces, or an export of several processes): replay every
//! rank as one global graph.

use stepcast_cli::jobs::{self, Input, Unreadable};
use stepcast_report::table;

use crate::args::ReplayArgs;
use crate::progress::Terminal;

/// Runs `replay` and returns its output (text, JSON, or its tables as CSV).
pub fn run(args: &ReplayArgs) -> anyhow::Result<super::Answer> {
    let progress = Terminal::new();
    let unreadable = Unreadable::skipped_if(args.skip_unreadable);
    let input = match (super::execution_trace(), args.traces.as_slice()) {
        (Some(_), [trace]) if !trace.is_dir() => {
            Input::Trace(Box::new(super::load(trace, &progress)?))
        }
        _ => {
            super::refuse_execution_trace(super::ET_OF_A_JOB)?;
            jobs::open(&args.traces, super::read_options(), unreadable, &progress)?
        }
    };
    match input {
        Input::Trace(loaded) => {
            if args.ranks.is_some() {
                anyhow::bail!(
                    "--ranks chooses the ranks to detail in a job of several traces; {} is one \
                     trace",
                    loaded.path.display()
                );
            }
            let document = jobs::replay(&loaded, args.step, &progress)?;
            drop(progress);
            super::render(&args.output, &document, table::replay_text, None, None)
        }
        Input::Job(job) => {
            let document = job.replay(args.step, args.ranks.as_deref(), &progress)?;
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
