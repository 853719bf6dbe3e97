//! `stepcast reduce TRACE... -o DIR`: every rank reduced to its graph, one file per rank,
//! written into DIR whole or not at all; a line per trace left out, and the sizes.

use std::io::Write as _;

use stepcast_cli::jobs::{self, Unreadable};
use stepcast_cli::output;

use crate::args::ReduceArgs;
use crate::progress::Terminal;

pub fn run(args: &ReduceArgs) -> anyhow::Result<()> {
    let unreadable = Unreadable::skipped_if(args.skip_unreadable);
    let progress = Terminal::new();
    super::refuse_execution_trace(super::ET_OF_A_JOB)?;
    let reduced = jobs::reduce(&args.traces, super::read_options(), unreadable, &progress)?;
    drop(progress);
    let bytes: u64 = reduced.files.iter().map(|f| f.bytes.len() as u64).sum();
    let files: Vec<(String, Vec<u8>)> = reduced
        .files
        .into_iter()
        .map(|f| (f.name, f.bytes))
        .collect();
    output::write_dir(&args.output, &files)?;
    let mut text = format!(
        "Reduced {} rank{} into {} ({:.1} MB).\n",
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        args.output.display(),
        bytes as f64 / 1e6
    );
    for skipped in &reduced.skipped {
        text.push_str(&format!(
            "Left out (--skip-unreadable): {}: {}\n",
            skipped.file.display(),
            skipped.reason
        ));
    }
    for et in &reduced.unmatched_ets {
        text.push_str(&format!(
            "Not joined (its process is none of the ranks'): {}\n",
            et.display()
        ));
    }
    // A closed pipe means the reader has what it wanted; the files are written.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(())
}
