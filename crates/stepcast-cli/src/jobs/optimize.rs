//! `optimize`: dPRO's strategy search over the optimization passes, on one trace or every rank
//! of a job, answered with a plan to apply, move by move.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use stepcast::optimize::{Hooks, Options, PassId};
use stepcast::ranks::recorded_rank;
use stepcast::whatif::Peers;
use stepcast_report::json::{OptimizeJson, optimize_json};

use stepcast_trace::ReadOptions;

use super::{Loaded, Progress, Quiet};

/// What the search may do and for how long, as the CLI's options give it.
#[derive(Clone, Debug)]
pub struct OptimizeOptions {
    /// The passes the plan may use, by name (`--passes`); empty: all.
    pub passes: Vec<String>,
    /// Device memory the plan must fit in, GiB (`--memory-budget`); `None`: the device's.
    pub memory_budget: Option<f64>,
    /// Seconds after which the search answers with its best plan so far (`--time-limit`).
    pub time_limit: f64,
    pub peers: Peers,
}

impl Default for OptimizeOptions {
    fn default() -> OptimizeOptions {
        OptimizeOptions {
            passes: Vec::new(),
            memory_budget: None,
            time_limit: 60.0,
            peers: Peers::Skew,
        }
    }
}

impl OptimizeOptions {
    /// The engine's options and the time limit, or why they are not valid (a usage error,
    /// found before any trace is read).
    pub fn check(&self) -> anyhow::Result<(Options, Duration)> {
        let passes = if self.passes.is_empty() {
            PassId::ALL.to_vec()
        } else {
            let mut passes = Vec::new();
            for name in &self.passes {
                let pass = PassId::by_name(name.trim()).ok_or_else(|| {
                    let names: Vec<&str> = PassId::ALL.iter().map(|p| p.as_str()).collect();
                    crate::usage(anyhow::anyhow!(
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
        let memory_budget_bytes = match self.memory_budget {
            None => None,
            Some(gib) if gib.is_finite() && gib > 0.0 && gib < 1e9 => {
                Some((gib * (1u64 << 30) as f64).round() as i64)
            }
            Some(gib) => {
                return Err(crate::usage(anyhow::anyhow!(
                    "invalid --memory-budget {gib}: give the device memory in GiB, above 0"
                )));
            }
        };
        if !(self.time_limit.is_finite() && self.time_limit > 0.0) {
            return Err(crate::usage(anyhow::anyhow!(
                "invalid --time-limit {}: give seconds, above 0",
                self.time_limit
            )));
        }
        let options = Options {
            passes,
            memory_budget_bytes,
        };
        Ok((options, Duration::from_secs_f64(self.time_limit.min(1e6))))
    }
}

/// Reads every trace `paths` names (see `rank_files`), one per rank, in rank order (the
/// recorded rank, else the file's position; then the file name): what a multi-rank plan
/// is searched on.
pub fn load_ranks(
    paths: &[PathBuf],
    read: &ReadOptions,
    progress: &dyn Progress,
) -> anyhow::Result<JobRanks> {
    let (files, et_files) = super::job_inputs(paths)?;
    let ets = super::JobEts::read(&et_files)?;
    if let Some(reduced) = files.iter().find(|f| super::is_reduced_file(f)) {
        anyhow::bail!(
            "{} is a reduced rank: optimize searches on each rank's trace (its passes edit ops \
             a reduced rank does not keep); give the traces",
            reduced.display()
        );
    }
    let mut loaded = Vec::with_capacity(files.len());
    for (position, file) in files.iter().enumerate() {
        progress.update("loading ranks", position, files.len());
        let mapped = Loaded::load_with_job_ets(file, read, &ets, &Quiet)?;
        let rank = recorded_rank(&mapped.trace).unwrap_or(position as i64);
        loaded.push((rank, mapped));
    }
    progress.update("loading ranks", files.len(), files.len());
    // Each process's last profiling window, as `replay DIR` takes them.
    let windows: Vec<super::ranks::Window<'_>> = loaded
        .iter()
        .map(|(_, l)| {
            let distributed = l.trace.distributed.as_ref();
            let process = (
                recorded_rank(&l.trace),
                distributed.and_then(|d| d.host_name.as_deref()),
                super::ranks::process_id(&l.trace),
            );
            super::ranks::Window::new(process, &l.window, l.trace.origin_ns, &l.path)
        })
        .collect();
    let keep = super::ranks::latest_windows(&windows);
    drop(windows);
    let mut earlier_windows: Vec<PathBuf> = loaded
        .iter()
        .zip(&keep)
        .filter(|(_, kept)| !**kept)
        .map(|((_, l), _)| l.path.clone())
        .collect();
    earlier_windows.sort();
    let mut keep = keep.into_iter();
    loaded.retain(|_| keep.next().unwrap_or(true));
    // One job, as `replay DIR` checks it: traces of two recorded world sizes are refused.
    let worlds: Vec<(&std::path::Path, Option<i64>)> = loaded
        .iter()
        .map(|(_, l)| {
            let world = l.trace.distributed.as_ref().and_then(|d| d.world_size);
            (l.path.as_path(), world)
        })
        .collect();
    super::ranks::one_world(&worlds)?;
    let groupings: Vec<super::ranks::FileGroups<'_>> = loaded
        .iter()
        .map(|(_, l)| {
            let groups = l.trace.distributed.iter().flat_map(|d| &d.process_groups);
            (
                l.path.as_path(),
                groups
                    .map(|g| (g.name.as_str(), g.ranks.as_slice()))
                    .collect(),
            )
        })
        .collect();
    super::ranks::one_grouping(&groupings)?;
    let spans: Vec<super::ranks::FileSpan<'_>> = loaded
        .iter()
        .map(|(_, l)| {
            let host = l
                .trace
                .distributed
                .as_ref()
                .and_then(|d| d.host_name.as_deref());
            let span = super::ranks::recorded_span(l.trace.origin_ns, &l.window.graph);
            (l.path.as_path(), host, span)
        })
        .collect();
    super::ranks::one_run(&spans)?;
    // And tied by the collectives they run, as `replay DIR` checks it.
    let counts: Vec<(&std::path::Path, usize)> = loaded
        .iter()
        .map(|(_, l)| (l.path.as_path(), l.window.report.collectives as usize))
        .collect();
    super::ranks::tied_by_collectives(&counts)?;
    loaded.sort_by(|a, b| (a.0, &a.1.path).cmp(&(b.0, &b.1.path)));
    Ok(JobRanks {
        ranks: loaded.into_iter().map(|(_, mapped)| mapped).collect(),
        earlier_windows,
    })
}

/// The ranks of one job ([`load_ranks`]), and the traces of earlier profiling windows of their
/// processes, left out (as `replay DIR` leaves them out: each rank's last window stands).
pub struct JobRanks {
    /// One per rank, in rank order.
    pub ranks: Vec<Loaded>,
    /// In name order.
    pub earlier_windows: Vec<PathBuf>,
}

impl JobRanks {
    /// The left-out windows' files, as the user named them.
    pub fn earlier_windows(&self) -> Vec<String> {
        self.earlier_windows
            .iter()
            .map(|p| p.display().to_string())
            .collect()
    }

    /// [`optimize`] on these ranks, the plan's document listing the windows left out.
    pub fn optimize(
        &self,
        options: &OptimizeOptions,
        progress: &dyn Progress,
    ) -> anyhow::Result<OptimizeJson> {
        let ranks: Vec<&Loaded> = self.ranks.iter().collect();
        let mut document = optimize(&ranks, options, progress)?;
        document.earlier_windows = self.earlier_windows();
        Ok(document)
    }
}

/// The time limit, and the search's progress as a stage naming the moves replayed and the
/// best step so far (`total` 0: the number of moves is not known in advance).
struct Search<'a> {
    deadline: Instant,
    progress: &'a dyn Progress,
}

impl Hooks for Search<'_> {
    fn stop(&self) -> bool {
        Instant::now() >= self.deadline
    }

    fn progress(&self, evaluated: usize, best_ns: i64) {
        let stage = format!(
            "optimize: {evaluated} moves replayed; best step {:.3} ms",
            best_ns as f64 / 1e6
        );
        self.progress.update(&stage, evaluated, 0);
    }
}

/// The best plan for `ranks` (one trace, or every rank of a job in rank order): one plan,
/// checked on every rank, as the `stepcast.optimize/1` document.
pub fn optimize(
    ranks: &[&Loaded],
    options: &OptimizeOptions,
    progress: &dyn Progress,
) -> anyhow::Result<OptimizeJson> {
    let (engine_options, time_limit) = options.check()?;
    let peers = options.peers;
    let contexts: Vec<_> = ranks.iter().map(|loaded| loaded.context(peers)).collect();
    let hooks = Search {
        deadline: Instant::now() + time_limit,
        progress,
    };
    let subject = match ranks {
        [one] => one.path.display().to_string(),
        many => format!("{} rank traces", many.len()),
    };
    let optimized = stepcast::optimize::optimize(&contexts, engine_options, &hooks)
        .with_context(|| format!("cannot optimize {subject}"))?;
    let traces: Vec<_> = ranks.iter().map(|loaded| &loaded.trace).collect();
    let mut document = optimize_json(&traces, peers, &optimized);
    for (trace, loaded) in document.traces.iter_mut().zip(ranks) {
        trace.file = loaded.file();
    }
    Ok(document)
}
