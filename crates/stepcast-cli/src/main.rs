//! The `stepcast` binary: parses the command line, runs one subcommand, and writes its answer
//! to stdout or a file. Errors go to stderr as `stepcast: error: ...` and exit with status 1,
//! or 2 when the command line itself is invalid ([`stepcast_cli::Usage`]). The work itself
//! is done by the library (`stepcast_cli::jobs`), which the Python package calls too.

// What-ifs copy, edit and replay whole windows, one candidate after another on every core:
// mimalloc keeps the freed pages for the next candidate where the system allocator hands
// them back and faults them in again (on a 1 GB trace `advise` spent a quarter of its time
// in page faults).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod args;
mod commands;
mod output;
mod progress;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use stepcast_cli::{is_usage, message};

use crate::args::{Args, Command};
use crate::commands::Answer;

fn main() -> ExitCode {
    // Usage errors, --help and --version are answered by clap (exit 2, 0 and 0).
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(io::stderr().lock(), "stepcast: error: {}", message(&error));
            if is_usage(&error) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run(args: &Args) -> anyhow::Result<()> {
    commands::set_read_options(args.step_range.as_deref(), args.comm_timeline.as_deref())?;
    let (answer, output) = match &args.command {
        Command::Info(info) => (commands::info::run(info)?, &info.output),
        Command::Replay(replay) => (commands::replay::run(replay)?, &replay.output),
        Command::Analyze(analyze) => (commands::analyze::run(analyze)?, &analyze.output),
        Command::Export(export) => return commands::export::run(export),
        Command::WhatIf(whatif) => (commands::whatif::run(whatif)?, &whatif.output),
        Command::Advise(advise) => (commands::advise::run(advise)?, &advise.output),
        Command::Optimize(optimize) => (commands::optimize::run(optimize)?, &optimize.output),
        Command::Compare(compare) => (commands::compare::run(compare)?, &compare.output),
        Command::Report(report) => {
            return write(report.output.as_deref(), &commands::report::run(report)?);
        }
    };
    write(output.file.as_deref(), &answer)
}

fn write(file: Option<&std::path::Path>, answer: &Answer) -> anyhow::Result<()> {
    match (file, answer) {
        (Some(path), Answer::Text(text)) => output::to_file(path, text),
        (Some(path), Answer::Files(files)) => output::to_dir(path, files),
        (None, Answer::Files(_)) => Err(stepcast_cli::usage(anyhow::anyhow!(
            "--format csv writes one file per table: give a directory with -o DIR"
        ))),
        (None, Answer::Text(text)) => match output::to_stdout(text) {
            // A closed pipe (`stepcast info t.json | head`) means the reader has what it
            // wanted; like ripgrep, exit quietly and successfully.
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            result => Ok(result?),
        },
    }
}
