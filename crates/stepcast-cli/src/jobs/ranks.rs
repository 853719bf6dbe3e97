//! `replay DIR` (or several traces): every rank of one job replayed as one graph.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use stepcast::ranks::{RankTrace, recorded_rank, replay_ranks};
use stepcast_report::json::ranks::{RanksJson, ranks_json};

use super::{Loaded, Progress, Quiet};

/// The traces named: files as given, directories expanded to their `.json`/`.json.gz` files
/// (sorted by name).
pub fn rank_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
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

/// The ranks of one job, each trace read and its window built, in rank order.
pub struct Job {
    ranks: Vec<(i64, Loaded)>,
}

impl Job {
    /// Reads every trace `paths` names (see [`rank_files`]), one per rank.
    pub fn load(paths: &[PathBuf], progress: &dyn Progress) -> anyhow::Result<Job> {
        let files = rank_files(paths)?;
        let mut ranks = Vec::with_capacity(files.len());
        for (position, file) in files.iter().enumerate() {
            progress.update("loading ranks", position, files.len());
            let loaded = Loaded::load(file, &Quiet)?;
            let rank = recorded_rank(&loaded.trace).unwrap_or(position as i64);
            ranks.push((rank, loaded));
        }
        progress.update("loading ranks", files.len(), files.len());
        ranks.sort_by(|(a, x), (b, y)| (a, &x.path).cmp(&(b, &y.path)));
        for pair in ranks.windows(2) {
            if pair[0].0 == pair[1].0 {
                bail!(
                    "{} and {} both record rank {}; give one trace per rank",
                    pair[0].1.path.display(),
                    pair[1].1.path.display(),
                    pair[0].0
                );
            }
        }
        Ok(Job { ranks })
    }

    /// The files read, in rank order.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.ranks.iter().map(|(_, loaded)| loaded.path.as_path())
    }

    /// The ranks replayed together; `step` (a `ProfilerStep` number) keeps only that step.
    pub fn replay(&self, step: Option<u64>, progress: &dyn Progress) -> anyhow::Result<RanksJson> {
        let ranks: Vec<RankTrace<'_>> = self
            .ranks
            .iter()
            .map(|(rank, loaded)| RankTrace {
                rank: *rank,
                trace: &loaded.trace,
                window: &loaded.window,
            })
            .collect();
        progress.update("replaying ranks", 0, 1);
        let report = replay_ranks(&ranks).context("cannot replay the ranks together")?;
        progress.update("replaying ranks", 1, 1);
        let mut document = ranks_json(&report);
        for (rank, (_, loaded)) in document.ranks.iter_mut().zip(&self.ranks) {
            rank.file = loaded.file();
        }
        if let Some(number) = step {
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
        Ok(document)
    }
}
