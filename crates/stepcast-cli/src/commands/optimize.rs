//! `stepcast optimize TRACE | DIR`: search for the best combination of the optimization passes
//! (dPRO's strategy search) and answer with a plan to apply, move by move.

use std::path::Path;

use anyhow::Context as _;
use stepcast_cli::jobs::{self, OptimizeOptions};
use stepcast_report::{json, table};

use crate::args::OptimizeArgs;
use crate::progress::Terminal;

/// The options `args` ask for.
fn options(args: &OptimizeArgs) -> OptimizeOptions {
    OptimizeOptions {
        passes: args.passes.clone(),
        memory_budget: args.memory_budget,
        time_limit: args.time_limit,
        peers: args.peers.peers(),
    }
}

/// Runs `optimize` and returns its output (text, JSON, or its tables as CSV).
pub fn run(args: &OptimizeArgs) -> anyhow::Result<super::Answer> {
    let options = options(args);
    // An invalid option fails before any trace is read.
    options.check()?;
    let progress = Terminal::new();
    let job = match (super::execution_trace(), args.traces.as_slice()) {
        (Some(_), [trace]) if !trace.is_dir() => jobs::JobRanks {
            ranks: vec![super::load(trace, &progress)?],
            earlier_windows: Vec::new(),
        },
        _ => {
            super::refuse_execution_trace(super::ET_OF_A_JOB)?;
            jobs::load_ranks(&args.traces, super::read_options(), &progress)?
        }
    };
    let document = job.optimize(&options, &progress)?;
    drop(progress);
    super::render(&args.output, &document, table::optimize_text, None, None)
}

/// The moves of a plan file written by `optimize --json`, and the peers it was predicted
/// with, or why it is not one.
pub fn read_plan(
    path: &Path,
) -> anyhow::Result<(Vec<stepcast::optimize::Move>, stepcast::whatif::Peers)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the plan {}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    if value.get("schema").and_then(|s| s.as_str()) != Some("stepcast.optimize/1") {
        anyhow::bail!(
            "{} is not a plan: write one with `stepcast optimize TRACE --json -o PLAN.json`",
            path.display()
        );
    }
    let moves = value
        .get("moves")
        .and_then(|m| m.as_array())
        .with_context(|| format!("{} has no `moves` list", path.display()))?;
    let peers = match value.get("peers").and_then(|p| p.as_str()) {
        Some("balanced") => stepcast::whatif::Peers::Balanced,
        _ => stepcast::whatif::Peers::Skew,
    };
    let moves = moves
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let step = m
                .get("move")
                .with_context(|| format!("{}: move {} has no `move`", path.display(), i + 1))?;
            let parsed: json::MoveJson = serde_json::from_value(step.clone())
                .with_context(|| format!("{}: move {} is not a move", path.display(), i + 1))?;
            parsed
                .to_move()
                .map_err(|e| anyhow::anyhow!("{}: move {}: {e}", path.display(), i + 1))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok((moves, peers))
}
