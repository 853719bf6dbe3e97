//! `replay DIR` (or several traces): every rank of one job replayed as one graph.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context as _, bail};
use rayon::prelude::*;
use stepcast::graph::{BuildOptions, build};
use stepcast::ranks::{RankGraph, ReducedRank, is_generic_host, recorded_rank, replay_rank_graphs};

use super::execution_traces::{JobEts, RankEt, split_inputs};
use stepcast_report::json::ranks::{RankDetail, RankEtJson, RanksJson, UnreadableJson, ranks_json};
use stepcast_trace::{ReadOptions, Trace};

use super::reduce::{REDUCED_EXTENSION, is_reduced_file, read_reduced};
use super::{Loaded, Progress};

/// What a job does with a rank file it cannot read (`--skip-unreadable`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Unreadable {
    /// The job is refused, naming the first such file (in name order) and why.
    #[default]
    Refuse,
    /// The job goes on without it; every output lists it with its reason.
    Skip,
}

impl Unreadable {
    /// `--skip-unreadable` (or Python's `skip_unreadable`) as given.
    pub fn skipped_if(skip: bool) -> Unreadable {
        if skip {
            Unreadable::Skip
        } else {
            Unreadable::Refuse
        }
    }
}

/// A rank file left out under [`Unreadable::Skip`], and why.
#[derive(Clone, Debug)]
pub struct Skipped {
    pub file: PathBuf,
    /// The one-line message the file would have been refused with.
    pub reason: String,
}

/// What `replay` was given: one trace, or the ranks of a job.
pub enum Input {
    Trace(Box<Loaded>),
    Job(Job),
}

/// Reads what `paths` name: one trace file of one process is a [`Loaded`] trace; a directory,
/// several files, or one file of several processes (an Nsight Systems export of a multi-GPU
/// job) are the ranks of a [`Job`].
pub fn open(
    paths: &[PathBuf],
    options: &ReadOptions,
    unreadable: Unreadable,
    progress: &dyn Progress,
) -> anyhow::Result<Input> {
    let [path] = paths else {
        return Job::load(paths, options, unreadable, progress).map(Input::Job);
    };
    if (path.is_dir() && !stepcast_trace::is_trace_dir(path)) || is_reduced_file(path) {
        return Job::load(paths, options, unreadable, progress).map(Input::Job);
    }
    let stage = format!("loading {}", path.display());
    progress.update(&stage, 0, 2);
    let mut traces = stepcast_trace::read_processes(path, options)?;
    progress.update(&stage, 1, 2);
    if traces.len() == 1 {
        let trace = traces.swap_remove(0);
        return Ok(Input::Trace(Box::new(Loaded::built(path, trace, progress))));
    }
    let graphs = rank_graphs(path, traces, &JobEts::default());
    progress.update(&stage, 2, 2);
    Job::numbered(vec![graphs], Vec::new()).map(Input::Job)
}

/// The traces named: files as given, directories expanded to their `.json`/`.json.gz` and
/// `.sqlite` files, or to their reduced ranks (`.stepcast-rank`, written by `reduce`), sorted
/// by name. A directory holding both is refused: they would be the same ranks twice.
pub fn rank_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    Ok(job_inputs(paths)?.0)
}

/// The traces named (as [`rank_files`]) and, apart, the Execution Traces among them (files
/// given, or found in a folder beside the traces or in one of their own: told by content).
pub fn job_inputs(paths: &[PathBuf]) -> anyhow::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut files = Vec::new();
    for path in paths {
        if !path.is_dir() || stepcast_trace::is_trace_dir(path) {
            files.push(path.clone());
            continue;
        }
        let cannot_list = || format!("cannot list {}", path.display());
        let traces = stepcast_trace::trace_files_in(path).with_context(cannot_list)?;
        let reduced = reduced_files_in(path).with_context(cannot_list)?;
        match (traces.is_empty(), reduced.is_empty()) {
            (true, true) => bail!(
                "{} is a directory with no trace files (.json, .json.gz or .sqlite) and no \
                 reduced ranks (.{REDUCED_EXTENSION}) in it; give one trace per rank, or a \
                 directory of them",
                path.display()
            ),
            (false, false) => bail!(
                "{} holds both trace files ({}, ...) and reduced ranks ({}, ...); give a \
                 directory of one or the other",
                path.display(),
                traces[0].display(),
                reduced[0].display()
            ),
            (false, true) => files.extend(traces),
            (true, false) => files.extend(reduced),
        }
    }
    let (traces, ets) = split_inputs(files);
    if traces.is_empty()
        && let Some(first) = ets.first()
    {
        bail!(
            "{} holds Execution Traces only ({}, ...): give the Kineto traces of the same run \
             beside them",
            paths
                .first()
                .map_or(first.as_path(), PathBuf::as_path)
                .display(),
            first.display()
        );
    }
    Ok((traces, ets))
}

/// The reduced ranks of directory `dir` (its `.stepcast-rank` files), sorted by name.
fn reduced_files_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == REDUCED_EXTENSION) {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// The ranks of one job, each reduced to what the multi-rank replay needs (its `RankGraph`,
/// not its trace), in rank order.
pub struct Job {
    /// Per rank, the trace it was read (or reduced) from, as the user named it.
    paths: Vec<PathBuf>,
    graphs: Vec<RankGraph>,
    /// The world size the traces record (all the same), if any records one.
    world_size: Option<i64>,
    /// Ranks of that world no trace was given for.
    missing: Vec<i64>,
    /// Files left out as unreadable ([`Unreadable::Skip`]), in name order.
    skipped: Vec<Skipped>,
    /// Traces of earlier profiling windows of a rank's process, left out ([`last_windows`]),
    /// in name order.
    earlier_windows: Vec<PathBuf>,
    /// Per rank joined with its Execution Trace: the rank and what the join gave.
    execution_traces: Vec<(i64, RankEt)>,
    /// Execution Traces given of no rank's process.
    ets_unmatched: Vec<PathBuf>,
}

impl Job {
    /// Reads every trace `paths` names (see [`rank_files`]), one rank per process (a file
    /// holds one, but an Nsight Systems export may hold several), on every core: each trace
    /// is dropped as soon as its rank's graph is built, so memory holds the ranks being read
    /// plus the graphs. A reduced rank (`reduce`) is read as the rank it was reduced from.
    pub fn load(
        paths: &[PathBuf],
        options: &ReadOptions,
        unreadable: Unreadable,
        progress: &dyn Progress,
    ) -> anyhow::Result<Job> {
        let (files, et_files) = job_inputs(paths)?;
        let ets = JobEts::read(&et_files)?;
        let (ranks, skipped) = read_each(&files, "loading ranks", unreadable, progress, |file| {
            read_ranks(file, options, &ets)
        })?;
        let pids: Vec<i64> = ranks
            .iter()
            .flatten()
            .filter_map(|r| r.et.as_ref().map(|et| et.pid))
            .collect();
        let mut job = Job::numbered(ranks, skipped)?;
        job.ets_unmatched = ets.unmatched(&pids);
        Ok(job)
    }

    /// The ranks of each file, in file order (reduced ranks in the order of the traces they
    /// were reduced from), numbered: the rank a trace records, else its position among them
    /// all.
    fn numbered(files: Vec<Vec<Rank>>, skipped: Vec<Skipped>) -> anyhow::Result<Job> {
        let (mut ranks, earlier_windows) = last_windows(files.into_iter().flatten().collect());
        if ranks.iter().any(|r| r.reduced) {
            // `reduce` names its files after the traces, but a suffix can reorder names
            // (`a.json.gz.stepcast-rank` sorts before `a.json.stepcast-rank`): position
            // numbers follow the traces' order, as a folder of the traces themselves gives.
            ranks.sort_by(|a, b| (&a.file, a.process).cmp(&(&b.file, b.process)));
        }
        let worlds: Vec<(&Path, Option<i64>)> = ranks
            .iter()
            .map(|r| (r.file.as_path(), r.world_size))
            .collect();
        let world_size = one_world(&worlds)?;
        let groupings: Vec<FileGroups<'_>> = ranks
            .iter()
            .map(|r| {
                let groups = r.graph.group_members().iter();
                (
                    r.file.as_path(),
                    groups.map(|(g, m)| (g.as_str(), m.as_slice())).collect(),
                )
            })
            .collect();
        one_grouping(&groupings)?;
        let spans: Vec<FileSpan<'_>> = ranks
            .iter()
            .map(|r| {
                let span = recorded_span(r.graph.origin_ns, &r.graph.window.graph);
                (r.file.as_path(), r.graph.host_name.as_deref(), span)
            })
            .collect();
        one_run(&spans)?;
        let mut execution_traces: Vec<(i64, RankEt)> = Vec::new();
        let mut ranks: Vec<(PathBuf, bool, RankGraph)> = ranks
            .into_iter()
            .enumerate()
            .map(|(position, rank)| {
                let mut graph = rank.graph;
                graph.rank = rank.recorded.unwrap_or(position as i64);
                if let Some(et) = rank.et {
                    execution_traces.push((graph.rank, et));
                }
                (rank.file, rank.recorded.is_some(), graph)
            })
            .collect();
        execution_traces.sort_by_key(|(rank, _)| *rank);
        ranks.sort_by(|a, b| (a.2.rank, &a.0).cmp(&(b.2.rank, &b.0)));
        for pair in ranks.windows(2) {
            if pair[0].2.rank == pair[1].2.rank {
                let how = |recorded: bool| {
                    if recorded {
                        "records"
                    } else {
                        "records no rank and is numbered by its position as"
                    }
                };
                bail!(
                    "{} {} rank {} and {} {} rank {}; give one trace per rank",
                    pair[0].0.display(),
                    how(pair[0].1),
                    pair[0].2.rank,
                    pair[1].0.display(),
                    how(pair[1].1),
                    pair[1].2.rank
                );
            }
        }
        let missing = match world_size {
            Some(world) => {
                if let Some((file, _, graph)) = ranks.iter().find(|r| r.1 && r.2.rank >= world) {
                    bail!(
                        "{} records rank {} of a world of {world} ranks: not a rank of this job",
                        file.display(),
                        graph.rank
                    );
                }
                (0..world)
                    .filter(|r| !ranks.iter().any(|given| given.2.rank == *r))
                    .collect()
            }
            None => Vec::new(),
        };
        let (paths, graphs) = ranks
            .into_iter()
            .map(|(file, _, graph)| (file, graph))
            .unzip();
        Ok(Job {
            paths,
            graphs,
            world_size,
            missing,
            skipped,
            earlier_windows,
            execution_traces,
            ets_unmatched: Vec::new(),
        })
    }

    /// The job with `skipped` listed among its unreadable files, before those it met itself:
    /// files left out by a reduction that ran elsewhere (`stepcast.distributed`), so the
    /// document lists them as `--skip-unreadable` does.
    pub fn with_unreadable(mut self, mut skipped: Vec<Skipped>) -> Job {
        skipped.append(&mut self.skipped);
        self.skipped = skipped;
        self
    }

    /// The job with `ets`, Execution Traces given with it that no rank's process matched
    /// (where its ranks were reduced elsewhere: `stepcast.distributed`), listed in its
    /// documents as those it finds unmatched itself.
    pub fn with_unmatched_ets(mut self, mut ets: Vec<PathBuf>) -> Job {
        ets.append(&mut self.ets_unmatched);
        ets.sort();
        ets.dedup();
        self.ets_unmatched = ets;
        self
    }

    /// The files read, in rank order.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.paths.iter().map(PathBuf::as_path)
    }

    /// The ranks replayed together; `step` (a `ProfilerStep` number) keeps only that step;
    /// `ranks` (`all`, `N,M` or `worst:K`) chooses the ranks whose detail (pairwise clock
    /// constraints, every collective instance) the document lists.
    pub fn replay(
        &self,
        step: Option<u64>,
        ranks: Option<&str>,
        progress: &dyn Progress,
    ) -> anyhow::Result<RanksJson> {
        let detail = rank_detail(ranks, &self.graphs)?;
        let counts: Vec<(&Path, usize)> = self
            .paths
            .iter()
            .zip(&self.graphs)
            .map(|(path, graph)| (path.as_path(), graph.window.report.collectives as usize))
            .collect();
        tied_by_collectives(&counts)?;
        progress.update("replaying ranks", 0, 1);
        let report =
            replay_rank_graphs(&self.graphs).context("cannot replay the ranks together")?;
        progress.update("replaying ranks", 1, 1);
        let mut files: Vec<&Path> = self.paths.iter().map(PathBuf::as_path).collect();
        files.sort();
        files.dedup();
        if files.len() > 1 && report.matching.matched.is_empty() {
            use stepcast::ranks::HostGroups;
            // gloo's collectives matched by inferred groups only: where that failed, say so
            // rather than blame the files.
            if matches!(
                report.matching.host_groups,
                HostGroups::Inconsistent | HostGroups::Ambiguous | HostGroups::TooManyChoices
            ) {
                let missing = if self.missing.is_empty() {
                    String::new()
                } else {
                    let ranks: Vec<String> = self.missing.iter().map(i64::to_string).collect();
                    format!(
                        " (rank{} {} missing)",
                        plural(ranks.len()),
                        ranks.join(", ")
                    )
                };
                bail!(
                    "cannot match the collectives of {}: gloo records no process group on them, \
                     and the groups the ranks declare could not be told apart from what they ran \
                     ({}){missing}; give every rank of the job",
                    file_list(&files),
                    report.matching.host_groups.as_str().replace('_', " ")
                );
            }
            bail!(
                "these traces are not one job: {} record collectives but share none; give the \
                 ranks of one job",
                file_list(&files)
            );
        }
        // Files none of whose ranks a matched collective ties (directly or through other
        // ranks) to the first rank's clock: their offsets would be guesses.
        let aligned: std::collections::BTreeSet<&Path> = (0..self.graphs.len())
            .filter(|r| {
                report
                    .alignment
                    .unaligned
                    .binary_search(&stepcast::ranks::RankId(*r as u32))
                    .is_err()
            })
            .map(|r| self.paths[r].as_path())
            .collect();
        let mut apart: Vec<&Path> = report
            .alignment
            .unaligned
            .iter()
            .map(|r| self.paths[r.index()].as_path())
            .filter(|file| !aligned.contains(file))
            .collect();
        apart.dedup();
        if !apart.is_empty() {
            bail!(
                "these traces are not one job: {} share{} no matched collective with {} \
                 (directly or through other ranks), so nothing aligns their clocks; give the \
                 ranks of one job",
                file_list(&apart),
                if apart.len() == 1 { "s" } else { "" },
                self.paths[0].display()
            );
        }
        let mut document = ranks_json(&report, &detail);
        for (rank, path) in document.ranks.iter_mut().zip(&self.paths) {
            rank.file = Some(path.display().to_string());
        }
        document.world_size = self.world_size;
        document.missing_ranks = self.missing.clone();
        document.earlier_windows = self
            .earlier_windows
            .iter()
            .map(|file| file.display().to_string())
            .collect();
        document.unreadable = self
            .skipped
            .iter()
            .map(|s| UnreadableJson {
                file: s.file.display().to_string(),
                reason: s.reason.clone(),
            })
            .collect();
        document.execution_traces = self
            .execution_traces
            .iter()
            .map(|(rank, et)| RankEtJson {
                rank: *rank,
                file: et.file.clone(),
                method: et.method.as_str(),
                ops_in_span: et.ops_in_span,
                joined: et.joined,
                data_links: et.data_links,
            })
            .collect();
        document.execution_traces_unmatched = self
            .ets_unmatched
            .iter()
            .map(|f| f.display().to_string())
            .collect();
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

/// `read` of every file, on every core, reporting under `stage`, in file order. A file that
/// cannot be read refuses the whole (the first in name order, whichever thread met it first)
/// or, under [`Unreadable::Skip`], is left out and listed; none read at all is an error.
pub(super) fn read_each<T: Send>(
    files: &[PathBuf],
    stage: &str,
    unreadable: Unreadable,
    progress: &dyn Progress,
    read: impl Fn(&Path) -> anyhow::Result<T> + Sync,
) -> anyhow::Result<(Vec<T>, Vec<Skipped>)> {
    let done = AtomicUsize::new(0);
    progress.update(stage, 0, files.len());
    let results: Vec<anyhow::Result<T>> = files
        .par_iter()
        .map(|file| {
            let result = read(file);
            let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
            progress.update(stage, finished, files.len());
            result
        })
        .collect();
    let mut read_ok = Vec::with_capacity(results.len());
    let mut skipped = Vec::new();
    for (file, result) in files.iter().zip(results) {
        match (result, unreadable) {
            (Ok(value), _) => read_ok.push(value),
            (Err(error), Unreadable::Refuse) => return Err(error),
            (Err(error), Unreadable::Skip) => skipped.push(Skipped {
                file: file.clone(),
                reason: crate::message(&error),
            }),
        }
    }
    if let (true, Some(first)) = (read_ok.is_empty(), skipped.first()) {
        bail!(
            "none of the {} files given could be read (the first, {}: {})",
            skipped.len(),
            first.file.display(),
            first.reason
        );
    }
    Ok((read_ok, skipped))
}

/// A rank read from `file` (for a reduced rank, the trace it was reduced from), before it
/// is numbered.
pub(super) struct Rank {
    pub(super) file: PathBuf,
    /// Which process of the file it is (an Nsight Systems export may hold several).
    pub(super) process: u32,
    pub(super) recorded: Option<i64>,
    pub(super) world_size: Option<i64>,
    /// The process id its host threads share, where they share one (not kept by a reduced
    /// rank): with its host and rank, what tells the windows of one process apart from
    /// another run's ([`last_windows`]).
    pid: Option<i64>,
    pub(super) graph: RankGraph,
    /// Read from a reduced rank rather than its trace.
    reduced: bool,
    /// Its Execution Trace, where one was given and joined.
    et: Option<RankEt>,
}

impl Rank {
    /// The rank as `reduce` writes it.
    pub(super) fn into_reduced(self) -> ReducedRank {
        ReducedRank {
            source: self.file.display().to_string(),
            process: self.process,
            recorded_rank: self.recorded,
            world_size: self.world_size,
            execution_trace: self.et,
            graph: self.graph,
        }
    }

    fn from_reduced(reduced: ReducedRank) -> Rank {
        Rank {
            file: PathBuf::from(reduced.source),
            process: reduced.process,
            recorded: reduced.recorded_rank,
            world_size: reduced.world_size,
            pid: None,
            graph: reduced.graph,
            reduced: true,
            et: reduced.execution_trace,
        }
    }
}

/// Each process's last profiling window, and the files of its earlier ones (in name order). A
/// profiler whose schedule repeats writes a trace per window (`tensorboard_trace_handler`:
/// `<host>_<pid>.<ns>.pt.trace.json`, all in one folder), every one of the same rank, host and
/// process id, each with steps of its own: windows of one run, which would otherwise read as
/// one rank given twice, or as runs whose spans do not overlap. The job is the ranks' last
/// windows (the steadiest, and one window the ranks recorded together; [`one_run`] still
/// checks they overlap); see [`latest_windows`] for what is not taken as windows.
fn last_windows(ranks: Vec<Rank>) -> (Vec<Rank>, Vec<PathBuf>) {
    let windows: Vec<Window<'_>> = ranks
        .iter()
        .map(|rank| {
            let host = rank.graph.host_name.as_deref();
            let process = (rank.recorded, host, rank.pid);
            Window::new(
                process,
                &rank.graph.window,
                rank.graph.origin_ns,
                &rank.file,
            )
        })
        .collect();
    let keep = latest_windows(&windows);
    let mut kept = Vec::with_capacity(ranks.len());
    let mut earlier = Vec::new();
    for (rank, keep) in ranks.into_iter().zip(keep) {
        if keep {
            kept.push(rank);
        } else {
            earlier.push(rank.file);
        }
    }
    earlier.sort();
    (kept, earlier)
}

/// The process id a trace's host threads share, where they share one.
pub(crate) fn process_id(trace: &Trace) -> Option<i64> {
    let mut pids = trace
        .lanes
        .iter()
        .filter(|lane| lane.kind == stepcast_trace::LaneKind::CpuThread)
        .map(|lane| lane.pid);
    let first = pids.next()?;
    pids.all(|pid| pid == first).then_some(first)
}

/// A trace as one profiling window of a process: its (rank, host, process id) where all are
/// known, the steps it holds (first and last `ProfilerStep` number), when it starts, and its
/// file.
pub(crate) struct Window<'a> {
    pub(crate) process: Option<(i64, &'a str, i64)>,
    pub(crate) steps: Option<(u64, u64)>,
    pub(crate) start_ns: Option<i64>,
    pub(crate) file: &'a Path,
}

impl<'a> Window<'a> {
    /// The window of a trace's `window` (its times from `origin_ns`) in `file`, of the process
    /// (recorded rank, host, process id) where all three are known.
    pub(crate) fn new(
        (rank, host, pid): (Option<i64>, Option<&'a str>, Option<i64>),
        window: &stepcast::Window,
        origin_ns: i64,
        file: &'a Path,
    ) -> Window<'a> {
        let mut numbers = window
            .steps
            .iter()
            .filter(|s| !s.synthetic)
            .map(|s| s.number);
        let steps = numbers
            .next()
            .map(|first| numbers.fold((first, first), |(lo, hi), n| (lo.min(n), hi.max(n))));
        Window {
            process: rank.zip(host).zip(pid).map(|((r, h), p)| (r, h, p)),
            steps,
            start_ns: recorded_span(origin_ns, &window.graph).map(|(start, _)| start),
            file,
        }
    }
}

/// Per window, whether it is its process's last (the latest start, then the last file name).
/// Traces of one (rank, host, process id) are windows of one process only where their steps
/// are known and none shares a step number with another (one process numbers its steps on;
/// a rerun of the program, whose processes a container may give the same ids, numbers them
/// from 0 again): otherwise each is kept, as is a window of no known process, and the job
/// checks refuse them as they would any two runs.
pub(crate) fn latest_windows(windows: &[Window<'_>]) -> Vec<bool> {
    let mut by_process: std::collections::BTreeMap<(i64, &str, i64), Vec<usize>> =
        Default::default();
    for (i, window) in windows.iter().enumerate() {
        if let Some(process) = window.process {
            by_process.entry(process).or_default().push(i);
        }
    }
    let mut keep = vec![true; windows.len()];
    for members in by_process.values().filter(|m| m.len() > 1) {
        let mut spans: Vec<(u64, u64)> = Vec::with_capacity(members.len());
        for &i in members {
            match windows[i].steps {
                Some(span) => spans.push(span),
                None => break,
            }
        }
        spans.sort_unstable();
        let apart = spans.len() == members.len() && spans.windows(2).all(|w| w[0].1 < w[1].0);
        if !apart {
            continue;
        }
        let order = |&i: &usize| (windows[i].start_ns, windows[i].file);
        let last = members.iter().copied().max_by_key(order);
        for &i in members {
            keep[i] = Some(i) == last;
        }
    }
    keep
}

/// The ranks of one file: a trace's processes, or the one rank a reduced rank holds.
/// `ets`: the job's Execution Traces, each joined with the trace of its process.
pub(super) fn read_ranks(
    file: &Path,
    options: &ReadOptions,
    ets: &JobEts,
) -> anyhow::Result<Vec<Rank>> {
    if is_reduced_file(file) {
        return Ok(vec![Rank::from_reduced(read_reduced(file)?)]);
    }
    let traces = stepcast_trace::read_processes(file, options)?;
    Ok(rank_graphs(file, traces, ets))
}

/// What ties the files of a job together: the collectives their ranks run together (the
/// processes of one file, an Nsight Systems export of several, were recorded together, on
/// one clock). Files of which none records a collective, or some record none while the others
/// do, are not one job (two single-process traces replayed "together" had no step, clock or
/// wait in common): an error naming the files. `ranks`: each rank's file and how many
/// collectives it records.
pub(crate) fn tied_by_collectives(ranks: &[(&Path, usize)]) -> anyhow::Result<()> {
    let mut totals: std::collections::BTreeMap<&Path, usize> = Default::default();
    for &(file, count) in ranks {
        *totals.entry(file).or_default() += count;
    }
    if totals.len() < 2 {
        return Ok(());
    }
    // In the order given (rank order), each file once.
    let mut named = std::collections::BTreeSet::new();
    let without: Vec<&Path> = ranks
        .iter()
        .map(|&(file, _)| file)
        .filter(|file| totals[file] == 0 && named.insert(*file))
        .collect();
    if without.is_empty() {
        return Ok(());
    }
    if without.len() == totals.len() {
        bail!(
            "these traces are not one job: none of {} records a collective, so nothing ties \
             their steps or clocks together; give the ranks of one job, or each trace alone",
            file_list(&without)
        );
    }
    bail!(
        "these traces are not one job: {} record{} no collective where {}; give the ranks of \
         one job",
        file_list(&without),
        if without.len() == 1 { "s" } else { "" },
        match totals.len() - without.len() {
            1 => "the other file does".to_string(),
            others => format!("the other {others} files do"),
        },
    )
}

/// `s` for a count other than one.
fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// Up to three of `files` (distinct) by name, then how many more.
fn file_list(files: &[&Path]) -> String {
    let mut names: Vec<String> = files
        .iter()
        .take(3)
        .map(|f| f.display().to_string())
        .collect();
    if files.len() > 3 {
        names.push(format!("{} more", files.len() - 3));
    }
    match names.len() {
        0 | 1 => names.concat(),
        n => format!("{} and {}", names[..n - 1].join(", "), names[n - 1]),
    }
}

/// The world size the ranks record, checked to be one job's: traces that record different
/// world sizes are two jobs, an error naming the files of each (fewest first, the likely
/// strays). `None` where no trace records one.
pub(crate) fn one_world(ranks: &[(&Path, Option<i64>)]) -> anyhow::Result<Option<i64>> {
    let mut worlds: std::collections::BTreeMap<i64, Vec<&Path>> = Default::default();
    for &(file, world_size) in ranks {
        if let Some(world) = world_size {
            worlds.entry(world).or_default().push(file);
        }
    }
    if worlds.len() <= 1 {
        return Ok(worlds.keys().next().copied());
    }
    let mut groups: Vec<(i64, Vec<&Path>)> = worlds
        .into_iter()
        .map(|(world, files)| (world, each_once(files)))
        .collect();
    groups.sort_by_key(|(world, files)| (files.len(), *world));
    let words: Vec<String> = groups
        .iter()
        .map(|(world, files)| {
            format!(
                "{} record{} a world of {world} ranks",
                file_list(files),
                if files.len() == 1 { "s" } else { "" }
            )
        })
        .collect();
    bail!(
        "these traces are not one job: {}; give the ranks of one job",
        words.join("; ")
    )
}

/// `files` without repeats, each where it first appears (a file of several processes is
/// each one's file; a search of the list per rank grew as the square of a job's ranks).
fn each_once(files: Vec<&Path>) -> Vec<&Path> {
    let mut seen = std::collections::BTreeSet::new();
    files
        .into_iter()
        .filter(|file| seen.insert(*file))
        .collect()
}

/// A rank's file and the process groups it declares: (name, members).
pub(crate) type FileGroups<'a> = (&'a Path, Vec<(&'a str, &'a [i64])>);

/// The process groups the ranks declare, checked to be one job's: two traces that give one
/// group name different members are two jobs (or two runs that created their groups in
/// another order), an error naming the files of each (fewest first). `ranks`: each rank's
/// file and its (group name, members).
pub(crate) fn one_grouping(ranks: &[FileGroups<'_>]) -> anyhow::Result<()> {
    type Members<'a> = std::collections::BTreeMap<&'a [i64], Vec<&'a Path>>;
    let mut groups: std::collections::BTreeMap<&str, Members<'_>> = Default::default();
    for (file, declared) in ranks {
        for &(group, members) in declared {
            groups
                .entry(group)
                .or_default()
                .entry(members)
                .or_default()
                .push(file);
        }
    }
    let Some((group, ways)) = groups.into_iter().find(|(_, ways)| ways.len() > 1) else {
        return Ok(());
    };
    let mut ways: Vec<(&[i64], Vec<&Path>)> = ways
        .into_iter()
        .map(|(members, files)| (members, each_once(files)))
        .collect();
    ways.sort_by_key(|(members, files)| (files.len(), *members));
    let words: Vec<String> = ways
        .iter()
        .map(|(members, files)| {
            let members: Vec<String> = members.iter().map(i64::to_string).collect();
            format!(
                "{} declare{} it as ranks {}",
                file_list(files),
                if files.len() == 1 { "s" } else { "" },
                members.join(", ")
            )
        })
        .collect();
    bail!(
        "these traces are not one job: process group {group} has different members: {}; give \
         the ranks of one job",
        words.join("; ")
    )
}

/// A rank's file, the host its trace records, and its recorded span (first start to last end,
/// nanoseconds on that host's clock; `None` for a rank without tasks).
pub(crate) type FileSpan<'a> = (&'a Path, Option<&'a str>, Option<(i64, i64)>);

/// The recorded span of a rank's graph on its host's clock: `origin_ns` plus its tasks' first
/// recorded start and last recorded end.
pub(crate) fn recorded_span(origin_ns: i64, graph: &stepcast::graph::Graph) -> Option<(i64, i64)> {
    let start = graph.rec_start_ns.iter().min()?;
    let end = graph.rec_end_ns.iter().max()?;
    Some((
        origin_ns.saturating_add(*start),
        origin_ns.saturating_add(*end),
    ))
}

/// The ranks checked to be one run where they share a host: the ranks of a job run together,
/// so on one host's clock their recorded spans overlap (directly or through one another), and
/// ranks recorded there at other times are another run of the program (the same world, groups
/// and host: nothing else tells them apart), an error naming the files of each run, fewest
/// first. Ranks that record no host, or a name many machines share (`localhost`), are not
/// checked: as the clock alignment reads them, they share no clock.
pub(crate) fn one_run(ranks: &[FileSpan<'_>]) -> anyhow::Result<()> {
    let mut by_host: std::collections::BTreeMap<&str, Vec<(i64, i64, &Path)>> = Default::default();
    for &(file, host, span) in ranks {
        let host = host.map(str::trim).filter(|h| !is_generic_host(h));
        if let (Some(host), Some((start, end))) = (host, span) {
            by_host.entry(host).or_default().push((start, end, file));
        }
    }
    for (host, mut spans) in by_host {
        spans.sort();
        // Runs: spans that overlap, through one another; a new run where a span begins after
        // every earlier one ended.
        let mut runs: Vec<(i64, Vec<&Path>)> = Vec::new();
        for (start, end, file) in spans {
            match runs.last_mut() {
                Some((run_end, files)) if start <= *run_end => {
                    *run_end = (*run_end).max(end);
                    files.push(file);
                }
                _ => runs.push((end, vec![file])),
            }
        }
        if runs.len() <= 1 {
            continue;
        }
        let mut runs: Vec<Vec<&Path>> = runs
            .into_iter()
            .map(|(_, mut files)| {
                files.sort();
                each_once(files)
            })
            .collect();
        runs.sort_by_key(Vec::len);
        let words: Vec<String> = runs.iter().map(|files| file_list(files)).collect();
        bail!(
            "these traces are not one job: on host {host} they were recorded in {} runs whose \
             profiled spans do not overlap ({}); give the ranks of one run",
            runs.len(),
            words.join("; ")
        );
    }
    Ok(())
}

/// The processes of one file as ranks, each graph built (on every core) and its trace dropped.
pub(super) fn rank_graphs(file: &Path, traces: Vec<Trace>, ets: &JobEts) -> Vec<Rank> {
    traces
        .into_par_iter()
        .enumerate()
        .map(|(process, mut trace)| {
            let et = ets.attach(&mut trace).map(|(rank_et, _)| rank_et);
            let window = build(&trace, &BuildOptions::default());
            let recorded = recorded_rank(&trace);
            let pid = process_id(&trace);
            Rank {
                file: file.to_path_buf(),
                process: process as u32,
                recorded,
                world_size: trace.distributed.as_ref().and_then(|d| d.world_size),
                pid,
                graph: RankGraph::new(recorded.unwrap_or(0), &trace, window),
                reduced: false,
                et,
            }
        })
        .collect()
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
