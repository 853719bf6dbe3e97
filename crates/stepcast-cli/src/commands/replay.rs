//! `stepcast replay TRACE`: replay the trace's graph and compare every step with the recording.
//! `stepcast replay DIR` (or several traces): replay every rank's trace as one global graph.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use stepcast::ranks::{RankTrace, recorded_rank, replay_ranks};
use stepcast_report::{json, table};

use crate::args::ReplayArgs;

/// Runs `replay` and returns its output (text, or JSON with `--json`).
pub fn run(args: &ReplayArgs) -> anyhow::Result<super::Answer> {
    match args.traces.as_slice() {
        [trace] if !trace.is_dir() => run_one(args, trace),
        paths => run_ranks(args, paths),
    }
}

fn run_one(args: &ReplayArgs, path: &Path) -> anyhow::Result<super::Answer> {
    let (trace, window) = super::load(path)?;
    if let Some(number) = args.step {
        super::step_index(path, &window, number)?;
    }
    let replay = stepcast::replay::self_replay(&window)
        .with_context(|| format!("cannot replay {}", path.display()))?;
    let mut document = json::replay_json(&trace, &window, &replay, args.step);
    document.trace.file = Some(path.display().to_string());
    super::render(&args.output, &document, table::replay_text, None, None)
}

/// The traces named: files as given, directories expanded to their `.json`/`.json.gz` files
/// (sorted by name).
fn rank_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("cannot list {}", path.display()))?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .with_context(|| format!("cannot list {}", path.display()))?;
        found.retain(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            p.is_file() && (name.ends_with(".json") || name.ends_with(".json.gz"))
        });
        found.sort();
        if found.is_empty() {
            bail!(
                "{} is a directory with no trace files (.json or .json.gz) in it; give one \
                 trace per rank, or a directory of them",
                path.display()
            );
        }
        files.extend(found);
    }
    Ok(files)
}

fn run_ranks(args: &ReplayArgs, paths: &[PathBuf]) -> anyhow::Result<super::Answer> {
    let mut document = ranks_document(paths)?;
    if let Some(number) = args.step {
        if !document
            .ranks
            .iter()
            .any(|r| r.steps.iter().any(|s| s.number == number))
        {
            bail!("no rank has step {number} (leave out --step to see every step)");
        }
        for rank in &mut document.ranks {
            rank.steps.retain(|s| s.number == number);
        }
    }
    super::render(
        &args.output,
        &document,
        table::ranks::ranks_text,
        None,
        None,
    )
}

/// The traces named (files, or directories of them), read and replayed together as one job's
/// ranks, with each rank's file named.
pub fn ranks_document(paths: &[PathBuf]) -> anyhow::Result<json::ranks::RanksJson> {
    let files = rank_files(paths)?;
    let progress = crate::progress::Progress::bar(files.len() as u64, "reading rank traces");
    let mut loaded = Vec::with_capacity(files.len());
    for (position, file) in files.iter().enumerate() {
        let (trace, window) = super::load(file)?;
        let rank = recorded_rank(&trace).unwrap_or(position as i64);
        loaded.push((rank, file, trace, window));
        progress.advance();
    }
    progress.message("replaying the ranks together");
    loaded.sort_by_key(|(rank, file, ..)| (*rank, (*file).clone()));
    for pair in loaded.windows(2) {
        if pair[0].0 == pair[1].0 {
            bail!(
                "{} and {} both record rank {}; give one trace per rank",
                pair[0].1.display(),
                pair[1].1.display(),
                pair[0].0
            );
        }
    }
    let ranks: Vec<RankTrace<'_>> = loaded
        .iter()
        .map(|(rank, _, trace, window)| RankTrace {
            rank: *rank,
            trace,
            window,
        })
        .collect();
    let report = replay_ranks(&ranks).context("cannot replay the ranks together")?;
    let mut document = json::ranks::ranks_json(&report);
    for (rank, (_, file, ..)) in document.ranks.iter_mut().zip(&loaded) {
        rank.file = Some(file.display().to_string());
    }
    Ok(document)
}
