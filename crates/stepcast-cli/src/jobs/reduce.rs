//! `reduce`: every rank of a job reduced to its `RankGraph` and kept as one file, so that the
//! job's replay reads the compact graphs rather than the traces (docs/scaling.md). The map
//! step of a job too large for one machine: each rank is reduced where its trace is (a Dask
//! worker, `stepcast.distributed`), and the reduce step reads only these files.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use stepcast::ranks::{MAGIC, ReducedRank};
use stepcast_trace::ReadOptions;

use super::Progress;
use super::execution_traces::{JobEts, processes_of};
use super::ranks::{Rank, Skipped, Unreadable, job_inputs, rank_graphs, read_each, read_ranks};

/// The extension of a reduced rank's file.
pub const REDUCED_EXTENSION: &str = "stepcast-rank";

/// One rank's file as `reduce` writes it.
#[derive(Clone, Debug)]
pub struct ReducedFile {
    /// `<trace file name>.stepcast-rank`, or `<trace file name>.<process>.stepcast-rank` for
    /// a file of several processes.
    pub name: String,
    pub bytes: Vec<u8>,
    /// The process of the Execution Trace joined with the rank, if one was.
    pub et_pid: Option<i64>,
}

/// The ranks of one trace file, each reduced to its file (one per process the file holds).
pub fn reduce_file(path: &Path, options: &ReadOptions) -> anyhow::Result<Vec<ReducedFile>> {
    reduce_file_joining(path, options, &JobEts::default())
}

/// [`reduce_file`], each rank joined with its Execution Trace among `ets`.
pub fn reduce_file_joining(
    path: &Path,
    options: &ReadOptions,
    ets: &JobEts,
) -> anyhow::Result<Vec<ReducedFile>> {
    if is_reduced_file(path) {
        bail!("{} is already a reduced rank", path.display());
    }
    encode(path, read_ranks(path, options, ets)?)
}

/// [`reduce_file`] where the job's Execution Traces are known by process (`ets_by_process`,
/// from [`super::execution_traces::execution_trace_process`]): only the ET of the trace's own
/// process is read (a worker of `stepcast.distributed` reduces one trace of many).
pub fn reduce_file_with_ets_of(
    path: &Path,
    options: &ReadOptions,
    ets_by_process: &BTreeMap<i64, PathBuf>,
) -> anyhow::Result<Vec<ReducedFile>> {
    if is_reduced_file(path) {
        bail!("{} is already a reduced rank", path.display());
    }
    let traces = stepcast_trace::read_processes(path, options)?;
    let mut wanted: Vec<PathBuf> = traces
        .iter()
        .filter_map(|trace| {
            processes_of(trace)
                .into_iter()
                .find_map(|pid| ets_by_process.get(&pid).cloned())
        })
        .collect();
    wanted.sort();
    wanted.dedup();
    let ets = JobEts::read(&wanted)?;
    encode(path, rank_graphs(path, traces, &ets))
}

/// The ranks of the trace `path` as the files `reduce` writes.
fn encode(path: &Path, ranks: Vec<Rank>) -> anyhow::Result<Vec<ReducedFile>> {
    let file_name = path
        .file_name()
        .map_or_else(|| "trace".into(), |n| n.to_string_lossy());
    let several = ranks.len() > 1;
    ranks
        .into_iter()
        .map(|rank| {
            let name = if several {
                format!("{file_name}.{}.{REDUCED_EXTENSION}", rank.process)
            } else {
                format!("{file_name}.{REDUCED_EXTENSION}")
            };
            let reduced = rank.into_reduced();
            let et_pid = reduced.execution_trace.as_ref().map(|et| et.pid);
            let bytes = reduced
                .to_bytes()
                .with_context(|| format!("cannot reduce {}", path.display()))?;
            Ok(ReducedFile {
                name,
                bytes,
                et_pid,
            })
        })
        .collect()
}

/// Every rank of the traces `paths` names (see `rank_files`), reduced on every core.
pub struct Reduced {
    /// In the traces' order; names checked to be distinct.
    pub files: Vec<ReducedFile>,
    /// Traces left out as unreadable ([`Unreadable::Skip`]).
    pub skipped: Vec<Skipped>,
    /// Execution Traces given whose process is no rank's: joined with nothing, and kept in no
    /// reduced rank (a document of the traces lists them; one of the reduced ranks cannot).
    pub unmatched_ets: Vec<PathBuf>,
}

/// Reduces every trace `paths` names. An unreadable trace refuses the whole (naming the first
/// in name order) or, under [`Unreadable::Skip`], is listed in [`Reduced::skipped`].
pub fn reduce(
    paths: &[PathBuf],
    options: &ReadOptions,
    unreadable: Unreadable,
    progress: &dyn Progress,
) -> anyhow::Result<Reduced> {
    let (traces, et_files) = job_inputs(paths)?;
    let ets = JobEts::read(&et_files)?;
    if let Some(reduced) = traces.iter().find(|t| is_reduced_file(t)) {
        bail!(
            "{} is already a reduced rank; give the traces to reduce",
            reduced.display()
        );
    }
    let (reduced, skipped) = read_each(&traces, "reducing ranks", unreadable, progress, |trace| {
        reduce_file_joining(trace, options, &ets).map(|files| (trace.to_path_buf(), files))
    })?;
    let mut files: Vec<ReducedFile> = Vec::new();
    // Each name's trace, to name a clash.
    let mut sources: std::collections::BTreeMap<String, PathBuf> = Default::default();
    for (trace, ranks) in reduced {
        for file in ranks {
            if let Some(other) = sources.insert(file.name.clone(), trace.clone()) {
                bail!(
                    "{} and {} would both be reduced to {}; reduce traces of the same file \
                     name into different folders",
                    other.display(),
                    trace.display(),
                    file.name
                );
            }
            files.push(file);
        }
    }
    let joined: Vec<i64> = files.iter().filter_map(|f| f.et_pid).collect();
    Ok(Reduced {
        files,
        skipped,
        unmatched_ets: ets.unmatched(&joined),
    })
}

/// Whether `path` is a file that begins as a reduced rank does (whatever its name).
pub fn is_reduced_file(path: &Path) -> bool {
    let mut head = [0u8; MAGIC.len()];
    File::open(path)
        .and_then(|mut file| file.read_exact(&mut head))
        .is_ok_and(|()| stepcast::ranks::is_reduced(&head))
}

/// The reduced rank at `path`, checked whole; any failure names the file.
pub fn read_reduced(path: &Path) -> anyhow::Result<ReducedRank> {
    thread_local! {
        // One buffer per reading thread, reused from file to file: a fresh one per file was
        // freed after decoding, handed back to the system by the allocator and faulted in
        // (zeroed) again by the next allocation. It keeps the largest file read by its thread
        // (a fraction of one rank's trace) until the thread ends.
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUFFER.with_borrow_mut(|bytes| {
        bytes.clear();
        std::fs::File::open(path)
            .and_then(|mut file| std::io::Read::read_to_end(&mut file, bytes))
            .with_context(|| format!("cannot read {}", path.display()))?;
        ReducedRank::from_bytes(bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    })
}
