//! The `stepcast` binary: parses the command line, runs one subcommand, and writes its answer
//! to stdout or a file. Errors go to stderr as `stepcast: error: ...` and exit with status 1,
//! or 2 when the command line itself is invalid ([`Usage`]).

mod args;
mod commands;
mod output;

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::args::{Args, Command, OutputArgs};

fn main() -> ExitCode {
    // Usage errors, --help and --version are answered by clap (exit 2, 0 and 0).
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let _ = writeln!(io::stderr().lock(), "stepcast: error: {}", message(&error));
            if error.chain().any(|cause| cause.is::<Usage>()) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// An invalid command line found after clap's own checks (an unknown model, a bad parameter
/// value): exit status 2, as `--help` documents, like clap's usage errors.
#[derive(Debug)]
pub struct Usage(pub anyhow::Error);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", message(&self.0))
    }
}

impl std::error::Error for Usage {}

/// Marks an error as an invalid command line (exit status 2).
pub fn usage(error: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(Usage(error.into()))
}

fn run(args: &Args) -> anyhow::Result<()> {
    commands::set_read_options(args.step_range.as_deref())?;
    let (answer, output) = match &args.command {
        Command::Info(info) => (commands::info::run(info)?, &info.output),
        Command::Replay(replay) => (commands::replay::run(replay)?, &replay.output),
        Command::Analyze(analyze) => (commands::analyze::run(analyze)?, &analyze.output),
        Command::Export(export) => return commands::export::run(export),
        Command::WhatIf(whatif) => (commands::whatif::run(whatif)?, &whatif.output),
        Command::Advise(advise) => (commands::advise::run(advise)?, &advise.output),
        Command::Compare(compare) => (commands::compare::run(compare)?, &compare.output),
    };
    write(output, &answer)
}

fn write(output: &OutputArgs, answer: &str) -> anyhow::Result<()> {
    match &output.file {
        Some(path) => output::to_file(path, answer),
        None => match output::to_stdout(answer) {
            // A closed pipe (`stepcast info t.json | head`) means the reader has what it
            // wanted; like ripgrep, exit quietly and successfully.
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
            result => Ok(result?),
        },
    }
}

/// The error and its causes on one line, like anyhow's `{:#}`, but leaving out a cause whose
/// text the message already holds (some errors quote their source in their own message).
fn message(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let cause = cause.to_string();
        if text.contains(&cause) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::message;

    #[test]
    fn message_leaves_out_causes_already_quoted() {
        let source = std::io::Error::other("disk on fire");
        let error = anyhow::Error::new(source).context("cannot read t.json: disk on fire");
        assert_eq!(message(&error), "cannot read t.json: disk on fire");
        let error = anyhow::anyhow!("inner").context("outer");
        assert_eq!(message(&error), "outer: inner");
    }
}
