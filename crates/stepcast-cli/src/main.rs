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
mod progress;

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::Parser;

use stepcast_cli::output::{self, Shape};
use stepcast_cli::{is_usage, message};

use crate::args::{Args, Command, Format};
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
    // Before anything is read: a mistyped -o (an input, a folder of the user's) fails at once,
    // not after minutes of work, and never after an input was overwritten.
    if let Some((path, shape, mut inputs)) = destination(&args.command) {
        inputs.extend(args.comm_timeline.as_deref());
        output::check(path, shape, &inputs)?;
    }
    commands::set_read_options(
        args.step_range.as_deref(),
        args.comm_timeline.as_deref(),
        args.et.as_deref(),
    )?;
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
        Command::Reduce(reduce) => return commands::reduce::run(reduce),
    };
    write(output.file.as_deref(), &answer)
}

/// Where `command` writes (when it writes to a path rather than stdout), whether that is a
/// file or a directory, and every file it reads (`--comm-timeline` aside, which is global).
fn destination(command: &Command) -> Option<(&Path, Shape, Vec<&Path>)> {
    let shape = |format: Format| match format {
        Format::Csv => Shape::Dir,
        _ => Shape::File,
    };
    let (output, inputs) = match command {
        Command::Info(info) => (&info.output, vec![info.trace.as_path()]),
        Command::Replay(replay) => (&replay.output, paths(&replay.traces)),
        Command::Analyze(analyze) => (&analyze.output, vec![analyze.trace.as_path()]),
        Command::Export(export) => {
            let mut inputs = vec![export.trace.as_path()];
            inputs.extend(export.plan.as_deref());
            return Some((&export.output, Shape::File, inputs));
        }
        Command::WhatIf(whatif) => {
            let mut inputs = vec![whatif.trace.as_path()];
            inputs.extend(whatif.scenario.as_deref());
            inputs.extend(whatif.gradients.as_deref());
            (&whatif.output, inputs)
        }
        Command::Advise(advise) => (&advise.output, vec![advise.trace.as_path()]),
        Command::Optimize(optimize) => (&optimize.output, paths(&optimize.traces)),
        Command::Compare(compare) => (
            &compare.output,
            vec![compare.before.as_path(), compare.after.as_path()],
        ),
        Command::Report(report) => {
            let path = report.output.as_deref()?;
            return Some((path, shape(report.format), paths(&report.traces)));
        }
        Command::Reduce(reduce) => {
            return Some((&reduce.output, Shape::Dir, paths(&reduce.traces)));
        }
    };
    let path = output.file.as_deref()?;
    Some((path, shape(output.format()), inputs))
}

fn paths(paths: &[std::path::PathBuf]) -> Vec<&Path> {
    paths.iter().map(std::path::PathBuf::as_path).collect()
}

fn write(file: Option<&Path>, answer: &Answer) -> anyhow::Result<()> {
    match (file, answer) {
        (Some(path), Answer::Text(text)) => output::write_file(path, text.as_bytes()),
        (Some(path), Answer::Files(files)) => output::write_dir(path, files),
        (None, Answer::Files(_)) => Err(stepcast_cli::usage(anyhow::anyhow!(
            "--format csv writes one file per table: give a directory with -o DIR"
        ))),
        // `-` and no -o alike; a closed pipe (`stepcast info t.json | head`) means the reader
        // has what it wanted, so it exits quietly and successfully, like ripgrep.
        (None, Answer::Text(text)) => output::write_file(Path::new("-"), text.as_bytes()),
    }
}
