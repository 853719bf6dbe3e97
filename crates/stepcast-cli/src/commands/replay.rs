//! `stepcast replay TRACE`: replay the trace's graph and compare every step with the recording.
//! `stepcast replay DIR` (or several traces): replay every rank's trace as one global graph.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use stepcast::ranks::{RankTrace, recorded_rank, replay_ranks};
use stepcast_report::{json, table};

use crate::args::ReplayArgs;

/// Runs `replay` and returns its output (text, or JSON with `--json`).
pub fn run(args: &ReplayArgs) -> anyhow::Result<String> {
    match args.traces.as_slice() {
        [trace] if !trace.is_dir() => run_one(args, trace),
        paths => run_ranks(args, paths),
    }
}

fn run_one(args: &ReplayArgs, path: &Path) -> anyhow::Result<String> {
    let mut processes = super::load_processes(path)?;
    if processes.len() > 1 {
        // An export of several processes (an nsys capture of a multi-GPU job): its ranks.
        let loaded = processes
            .into_iter()
            .enumerate()
            .map(|(position, (trace, window))| {
                let rank = recorded_rank(&trace).unwrap_or(position as i64);
                (rank, path.to_path_buf(), trace, window)
            })
            .collect();
        return replay_loaded(args, loaded);
    }
    let (trace, window) = processes.swap_remove(0);
    if let Some(number) = args.step {
        super::step_index(path, &window, number)?;
    }
    let replay = stepcast::replay::self_replay(&window)
        .with_context(|| format!("cannot replay {}", path.display()))?;
    let mut document = json::replay_json(&trace, &window, &replay, args.step);
    document.trace.file = Some(path.display().to_string());
    if args.output.json {
        super::to_json(&document)
    } else {
        Ok(table::replay_text(&document))
    }
}

/// The traces named: files as given, directories expanded to their `.json`/`.json.gz` and
/// `.sqlite` files (sorted by name).
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
            p.is_file()
                && (name.ends_with(".json")
                    || name.ends_with(".json.gz")
                    || name.ends_with(".sqlite"))
        });
        found.sort();
        if found.is_empty() {
            bail!(
                "{} is a directory with no trace files (.json, .json.gz or .sqlite) in it; give one \
                 trace per rank, or a directory of them",
                path.display()
            );
        }
        files.extend(found);
    }
    Ok(files)
}

fn run_ranks(args: &ReplayArgs, paths: &[PathBuf]) -> anyhow::Result<String> {
    let files = rank_files(paths)?;
    let mut loaded = Vec::with_capacity(files.len());
    for file in &files {
        // A file may hold several processes (an nsys export): each is a rank.
        for (trace, window) in super::load_processes(file)? {
            let rank = recorded_rank(&trace).unwrap_or(loaded.len() as i64);
            loaded.push((rank, file.clone(), trace, window));
        }
    }
    replay_loaded(args, loaded)
}

/// Replays ranks, each (rank, file, trace, window), together as one graph.
fn replay_loaded(
    args: &ReplayArgs,
    mut loaded: Vec<(i64, PathBuf, stepcast_trace::Trace, stepcast::Window)>,
) -> anyhow::Result<String> {
    loaded.sort_by_key(|(rank, file, ..)| (*rank, file.clone()));
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
    if args.output.json {
        super::to_json(&document)
    } else {
        Ok(table::ranks::ranks_text(&document))
    }
}
