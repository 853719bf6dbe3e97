#![allow(clippy::print_stdout, clippy::print_stderr)]
//! stepcast's benchmark harness (not timed tests).
//!
//! `run` times each phase of the pipeline (ingest, build, one replay, self-replay) on one
//! thread and reports throughput and peak memory; `synthesize` makes a large realistic input by
//! repeating a real trace's profiled steps; `job` writes a folder of N ranks made from real rank
//! traces, and `ranks` times each stage of the multi-rank replay on one. See
//! `docs/benchmarks.md`.

mod job;
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
    /// Write a job folder of N ranks made from real rank traces (steps repeated, clocks
    /// shifted, `distributedInfo` rewritten).
    Job {
        /// Rank traces (files or directories of them): rank k is made from source k mod S.
        #[arg(required = true)]
        sources: Vec<PathBuf>,
        /// Ranks to write.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        ranks: u64,
        /// Repeat each rank's steps until it holds this many bytes (0: one copy).
        #[arg(long, default_value_t = 0)]
        target_bytes: u64,
        /// Move each rank's clock by up to this many microseconds (rank 0 keeps its own).
        #[arg(long, default_value_t = 5_000)]
        max_clock_offset_us: u64,
        /// Output directory.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Time each stage of the multi-rank replay (`stepcast replay DIR`) of a job folder.
    Ranks {
        /// Rank traces (files or directories of them).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print the results as JSON.
        #[arg(long)]
        json: bool,
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
        Command::Job {
            sources,
            ranks,
            target_bytes,
            max_clock_offset_us,
            output,
        } => job::job(&sources, ranks, target_bytes, max_clock_offset_us, &output),
        Command::Ranks { paths, json } => job::ranks(&paths, json),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("stepcast-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}
