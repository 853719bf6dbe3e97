#![allow(clippy::print_stdout, clippy::print_stderr)]
//! stepcast's benchmark harness (not timed tests).
//!
//! `run` times each phase of the pipeline (ingest, build, one replay, self-replay) on one
//! thread and reports throughput and peak memory; `synthesize` makes a large realistic input by
//! repeating a real trace's profiled steps. See `docs/benchmarks.md`.

mod measure;
mod optimize;
mod synthesize;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "stepcast-bench",
    version,
    about = "Benchmarks stepcast's pipeline"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Time ingest, graph build, replay and self-replay of each trace (one thread).
    Run {
        /// Trace files (`.json` or `.json.gz`).
        #[arg(required = true)]
        traces: Vec<PathBuf>,
        /// Timed iterations per phase, after one untimed warm-up.
        #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
        iterations: u32,
        /// Print the results as JSON instead of tables.
        #[arg(long)]
        json: bool,
    },
    /// Time `stepcast optimize`'s search on one core and count the moves it replays per
    /// second.
    Optimize {
        /// One trace, or the rank traces (or a directory of them) of one job.
        #[arg(required = true)]
        traces: Vec<PathBuf>,
        /// Timed iterations (the median is reported).
        #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
        iterations: u32,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Make a large input by repeating a trace's profiled steps with shifted timestamps.
    Synthesize {
        /// The trace whose steps are repeated.
        trace: PathBuf,
        /// Stop once the uncompressed output holds at least this many bytes (whole copies of
        /// the stepped window are written).
        #[arg(long)]
        target_bytes: u64,
        /// Output file; gzip-compressed if it ends with `.gz`.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run {
            traces,
            iterations,
            json,
        } => measure::run(&traces, iterations, json),
        Command::Optimize {
            traces,
            iterations,
            json,
        } => optimize::run(&traces, iterations, json),
        Command::Synthesize {
            trace,
            target_bytes,
            output,
        } => synthesize::synthesize(&trace, target_bytes, &output),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("stepcast-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}
