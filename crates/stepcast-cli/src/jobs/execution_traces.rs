//! The Execution Traces of a job: found among its inputs (a file whose head is an ET's, in a
//! folder of rank traces or one of its own), read, and each paired with the rank whose
//! process it observed (an ET records the `pid` of its process, as the rank's Kineto trace
//! does), so every rank's graph gains the data dependencies its program states.

use std::path::{Path, PathBuf};

use anyhow::bail;
use stepcast_trace::{ExecutionTrace, Trace};

/// The ETs given with a job, by process id.
#[derive(Default)]
pub struct JobEts {
    /// Sorted by process id.
    ets: Vec<(i64, PathBuf, ExecutionTrace)>,
}

/// What one rank's ET joined: what a job's document lists per rank.
pub use stepcast::et::JoinSummary as RankEt;

/// `files` split into the traces and the Execution Traces among them (told by content; only
/// a JSON file can be one, so an export or a reduced rank is not opened for it).
pub fn split_inputs(files: Vec<PathBuf>) -> (Vec<PathBuf>, Vec<PathBuf>) {
    files.into_iter().partition(|f| {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        let json = name.ends_with(".json") || name.ends_with(".json.gz");
        !(json && stepcast_trace::is_execution_trace(f))
    })
}

/// The processes an ET of `trace` may have observed, in the order they are looked for: the
/// process the trace records, else those of its host threads (a Kineto trace records its
/// process as its threads' `pid`).
pub fn processes_of(trace: &Trace) -> Vec<i64> {
    match trace.process_id {
        Some(pid) => vec![pid],
        None => trace
            .lanes
            .iter()
            .filter(|l| l.kind == stepcast_trace::LaneKind::CpuThread)
            .map(|l| l.pid)
            .collect(),
    }
}

/// The process an Execution Trace observed (its `pid`): what pairs it with its rank. Reads it
/// whole; one that records none is an error naming it.
pub fn execution_trace_process(file: &Path) -> anyhow::Result<i64> {
    let et = stepcast_trace::read_execution_trace(file)?;
    et.pid.ok_or_else(|| no_pid(file))
}

fn no_pid(file: &Path) -> anyhow::Error {
    anyhow::anyhow!(
        "{} is an Execution Trace that records no `pid`: a job's ranks are told their ET by \
         process id",
        file.display()
    )
}

impl JobEts {
    /// Reads every ET of `files`; one without a process id, or two of one process, is an
    /// error naming the files (a rank could not be told its ET).
    pub fn read(files: &[PathBuf]) -> anyhow::Result<JobEts> {
        let mut ets = Vec::with_capacity(files.len());
        for file in files {
            let et = stepcast_trace::read_execution_trace(file)?;
            let Some(pid) = et.pid else {
                return Err(no_pid(file));
            };
            ets.push((pid, file.clone(), et));
        }
        ets.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        if let Some(pair) = ets.windows(2).find(|w| w[0].0 == w[1].0) {
            bail!(
                "{} and {} are Execution Traces of one process ({}); give one per rank",
                pair[0].1.display(),
                pair[1].1.display(),
                pair[0].0
            );
        }
        Ok(JobEts { ets })
    }

    pub fn is_empty(&self) -> bool {
        self.ets.is_empty()
    }

    /// The index of the ET of `trace`'s process (see [`processes_of`]).
    fn index_of(&self, trace: &Trace) -> Option<usize> {
        processes_of(trace)
            .into_iter()
            .find_map(|pid| self.ets.binary_search_by_key(&pid, |e| e.0).ok())
    }

    /// Joins the ET of `trace`'s process with it, if one was given: its data dependencies
    /// join the trace's links.
    pub fn attach(&self, trace: &mut Trace) -> Option<(RankEt, stepcast::et::Attached)> {
        let (pid, file, et) = &self.ets[self.index_of(trace)?];
        let attached = stepcast::et::attach(trace, et);
        let summary = RankEt::new(*pid, file.display().to_string(), &attached);
        Some((summary, attached))
    }

    /// The ET of `trace`'s process, cloned with its file (what a `Loaded` keeps).
    pub fn of(&self, trace: &Trace) -> Option<(PathBuf, ExecutionTrace)> {
        let (_, file, et) = &self.ets[self.index_of(trace)?];
        Some((file.clone(), et.clone()))
    }

    /// The ETs of no process among `joined` (the processes a rank's ET was joined with), by
    /// file name.
    pub fn unmatched(&self, joined: &[i64]) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = self
            .ets
            .iter()
            .filter(|(pid, _, _)| !joined.contains(pid))
            .map(|(_, file, _)| file.clone())
            .collect();
        out.sort();
        out
    }
}
