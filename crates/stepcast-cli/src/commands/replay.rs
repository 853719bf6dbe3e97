//! `stepcast replay TRACE`: replay the trace's graph and compare every step with the recording.
//! `stepcast replay DIR` (or several traces): replay every rank's trace as one global graph.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use rayon::prelude::*;
use stepcast::ranks::{RankGraph, recorded_rank, replay_rank_graphs};
use stepcast_report::json::ranks::RankDetail;
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
    if args.ranks.is_some() {
        bail!(
            "--ranks chooses the ranks to detail in a job of several traces; {} is one trace",
            path.display()
        );
    }
    let (trace, window) = super::load(path)?;
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

/// The traces named: files as given, directories expanded to their `.json`/`.json.gz` files
/// (sorted by name).
fn rank_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() {
            files.push(path.clone());
            continue;
        }
        let found = stepcast_trace::trace_files_in(path)
            .with_context(|| format!("cannot list {}", path.display()))?;
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

fn run_ranks(args: &ReplayArgs, paths: &[PathBuf]) -> anyhow::Result<String> {
    let files = rank_files(paths)?;
    // Every rank read and reduced to its graph in parallel; each trace is dropped as soon as
    // its rank's graph is built, so memory holds the ranks being read plus the graphs.
    let progress = super::progress::bar(files.len() as u64, "reading ranks");
    let read: Vec<anyhow::Result<(&PathBuf, RankGraph)>> = files
        .par_iter()
        .enumerate()
        .map(|(position, file)| {
            let (trace, window) = super::load(file)?;
            let rank = recorded_rank(&trace).unwrap_or(position as i64);
            let graph = RankGraph::new(rank, &trace, window);
            progress.inc(1);
            Ok((file, graph))
        })
        .collect();
    progress.finish_and_clear();
    // The first unreadable file in name order, whichever thread met it first.
    let mut loaded = read.into_iter().collect::<anyhow::Result<Vec<_>>>()?;
    loaded.sort_by(|a, b| (a.1.rank, a.0).cmp(&(b.1.rank, b.0)));
    for pair in loaded.windows(2) {
        if pair[0].1.rank == pair[1].1.rank {
            bail!(
                "{} and {} both record rank {}; give one trace per rank",
                pair[0].0.display(),
                pair[1].0.display(),
                pair[0].1.rank
            );
        }
    }
    let (files, ranks): (Vec<&PathBuf>, Vec<RankGraph>) = loaded.into_iter().unzip();
    let progress = super::progress::spinner("replaying the ranks as one graph");
    let report = replay_rank_graphs(&ranks).context("cannot replay the ranks together");
    progress.finish_and_clear();
    let report = report?;
    let detail = rank_detail(args.ranks.as_deref(), &ranks)?;
    let mut document = json::ranks::ranks_json(&report, &detail);
    for (rank, file) in document.ranks.iter_mut().zip(&files) {
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

/// `--ranks all|N,M|worst:K`, checked against the job's rank numbers.
fn rank_detail(value: Option<&str>, ranks: &[RankGraph]) -> anyhow::Result<RankDetail> {
    let Some(value) = value.map(str::trim) else {
        return Ok(RankDetail::None);
    };
    if value == "all" {
        return Ok(RankDetail::All);
    }
    if let Some(k) = value.strip_prefix("worst:") {
        let k: usize = k.trim().parse().ok().filter(|&k| k > 0).with_context(|| {
            format!("--ranks {value}: worst:K needs a whole number of ranks K ≥ 1")
        })?;
        return Ok(RankDetail::Worst(k));
    }
    let mut numbers = Vec::new();
    for part in value.split(',') {
        let number: i64 = part.trim().parse().with_context(|| {
            format!("--ranks {value}: `{part}` is not a rank number (give all, N,M or worst:K)")
        })?;
        if !ranks.iter().any(|r| r.rank == number) {
            bail!("--ranks {value}: no trace records rank {number}");
        }
        numbers.push(number);
    }
    Ok(RankDetail::Ranks(numbers))
}
