//! The command line, as clap parses it. These types never leave this crate.

use std::path::PathBuf;

use clap::{Args as ClapArgs, Parser, Subcommand};

const AFTER_HELP: &str = "\
EXIT STATUS:
    0  success
    1  error: the trace could not be read or replayed, or the output could not be written
    2  the command line is invalid";

/// Replays PyTorch profiler traces, step by step.
///
/// stepcast rebuilds the dependency graph of each training step recorded in a Kineto trace and
/// checks that replaying the graph reproduces the recorded step.
#[derive(Debug, Parser)]
#[command(name = "stepcast", version, after_help = AFTER_HELP)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Summarize a trace: devices, lanes, steps, events, skipped records and its graph.
    Info(InfoArgs),
    /// Replay a trace's graph and compare each replayed step with the recording.
    Replay(ReplayArgs),
    /// Write the recorded and the replayed window side by side as a Chrome/Perfetto trace.
    Export(ExportArgs),
}

#[derive(Debug, ClapArgs)]
pub struct InfoArgs {
    /// A PyTorch profiler (Kineto) trace: .json or .json.gz.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, ClapArgs)]
pub struct ReplayArgs {
    /// A PyTorch profiler (Kineto) trace: .json or .json.gz.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Report only step N (the N of ProfilerStep#N).
    #[arg(long, value_name = "N")]
    pub step: Option<u64>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, ClapArgs)]
pub struct ExportArgs {
    /// A PyTorch profiler (Kineto) trace: .json or .json.gz.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Export only step N (the N of ProfilerStep#N) and the tasks on its critical path.
    #[arg(long, value_name = "N")]
    pub step: Option<u64>,
    /// The Chrome trace (JSON) to write, for ui.perfetto.dev or chrome://tracing. The file is
    /// replaced whole or not at all.
    #[arg(short = 'o', long = "output", value_name = "FILE.json")]
    pub output: PathBuf,
}

/// Where the answer goes and in which format.
#[derive(Debug, ClapArgs)]
pub struct OutputArgs {
    /// Write JSON (a stable schema: see docs/json-schema.md) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write to FILE instead of stdout. The file is replaced whole or not at all.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub file: Option<PathBuf>,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Args;

    #[test]
    fn verify_app() {
        Args::command().debug_assert();
    }
}
