//! `stepcast optimize TRACE | DIR`: search for the best combination of the optimization passes
//! (dPRO's strategy search) and answer with a plan to apply, move by move.

use std::io::IsTerminal;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use stepcast::optimize::{Hooks, Options, PassId, optimize};
use stepcast::ranks::recorded_rank;
use stepcast_report::{json, table};

use crate::args::OptimizeArgs;

/// The time limit and, on a terminal, a spinner with the moves replayed so far.
struct CliHooks {
    deadline: Instant,
    bar: Option<ProgressBar>,
}

impl Hooks for CliHooks {
    fn stop(&self) -> bool {
        Instant::now() >= self.deadline
    }

    fn progress(&self, evaluated: usize, best_ns: i64) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!(
                "{evaluated} moves replayed; best step {:.3} ms",
                best_ns as f64 / 1e6
            ));
            bar.tick();
        }
    }
}

/// The options `args` ask for, or why they are not valid (a usage error).
pub fn options(args: &OptimizeArgs) -> anyhow::Result<Options> {
    let passes = if args.passes.is_empty() {
        PassId::ALL.to_vec()
    } else {
        let mut passes = Vec::new();
        for name in &args.passes {
            let pass = PassId::by_name(name.trim()).ok_or_else(|| {
                let names: Vec<&str> = PassId::ALL.iter().map(|p| p.as_str()).collect();
                stepcast_cli::usage(anyhow::anyhow!(
                    "unknown pass `{name}`; the passes are: {}",
                    names.join(", ")
                ))
            })?;
            if !passes.contains(&pass) {
                passes.push(pass);
            }
        }
        passes
    };
    let memory_budget_bytes = match args.memory_budget {
        None => None,
        Some(gib) if gib.is_finite() && gib > 0.0 && gib < 1e9 => {
            Some((gib * (1u64 << 30) as f64).round() as i64)
        }
        Some(gib) => {
            return Err(stepcast_cli::usage(anyhow::anyhow!(
                "invalid --memory-budget {gib}: give the device memory in GiB, above 0"
            )));
        }
    };
    Ok(Options {
        passes,
        memory_budget_bytes,
    })
}

/// Runs `optimize` and returns its output (text, JSON, or its tables as CSV).
pub fn run(args: &OptimizeArgs) -> anyhow::Result<super::Answer> {
    let options = options(args)?;
    if !(args.time_limit.is_finite() && args.time_limit > 0.0) {
        return Err(stepcast_cli::usage(anyhow::anyhow!(
            "invalid --time-limit {}: give seconds, above 0",
            args.time_limit
        )));
    }
    let files = stepcast_cli::jobs::rank_files(&args.traces)?;
    let mut loaded = Vec::with_capacity(files.len());
    for (position, file) in files.iter().enumerate() {
        let mapped = stepcast_cli::jobs::Loaded::load(
            file,
            super::read_options(),
            &stepcast_cli::jobs::Quiet,
        )?;
        let rank = recorded_rank(&mapped.trace).unwrap_or(position as i64);
        loaded.push((rank, file.clone(), mapped));
    }
    loaded.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let peers = args.peers.peers();
    let contexts: Vec<_> = loaded.iter().map(|(_, _, m)| m.context(peers)).collect();
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} optimize: {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar
    });
    let hooks = CliHooks {
        deadline: Instant::now() + Duration::from_secs_f64(args.time_limit.min(1e6)),
        bar,
    };
    let subject = |files: &[std::path::PathBuf]| match files {
        [one] => one.display().to_string(),
        many => format!("{} rank traces", many.len()),
    };
    let optimized = optimize(&contexts, options, &hooks)
        .with_context(|| format!("cannot optimize {}", subject(&files)))?;
    if let Some(bar) = &hooks.bar {
        bar.finish_and_clear();
    }
    let traces: Vec<_> = loaded.iter().map(|(_, _, m)| &m.trace).collect();
    let mut document = json::optimize_json(&traces, peers, &optimized);
    for (trace, (_, file, _)) in document.traces.iter_mut().zip(&loaded) {
        trace.file = Some(file.display().to_string());
    }
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
