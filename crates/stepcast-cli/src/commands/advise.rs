//! `stepcast advise TRACE`: every built-in optimization and useful combinations, ranked by
//! predicted gain; `stepcast advise DIR`: the same on every rank of a job, on its global graph.

use stepcast_cli::jobs;
use stepcast_report::{markdown, table};

use crate::args::AdviseArgs;
use crate::progress::Terminal;

/// Runs `advise` and returns its output (text, JSON, CSV tables or a Markdown digest).
pub fn run(args: &AdviseArgs) -> anyhow::Result<super::Answer> {
    let progress = Terminal::new();
    if args.trace.is_dir() {
        // A job's folder: every change on every rank, ranked by the job's gain.
        super::refuse_execution_trace(super::ET_OF_A_JOB)?;
        let job = jobs::load_ranks(
            std::slice::from_ref(&args.trace),
            super::read_options(),
            &progress,
        )?;
        let document = jobs::advise_job(&job, args.peers.peers(), args.host.host(), &progress)?;
        drop(progress);
        return super::render(&args.output, &document, table::advise_job_text, None, None);
    }
    let loaded = super::load(&args.trace, &progress)?;
    let document = jobs::advise(&loaded, args.peers.peers(), args.host.host(), &progress)?;
    drop(progress);
    super::render(
        &args.output,
        &document,
        table::advise_text,
        Some(&markdown::advise_markdown),
        None,
    )
}
