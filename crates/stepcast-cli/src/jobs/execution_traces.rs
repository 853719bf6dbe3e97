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
#[derive(Clone, Debug, PartialEq)]
pub struct RankEt {
    /// The process both observed.
    pub pid: i64,
    pub file: PathBuf,
    pub method: &'static str,
    pub ops_in_span: u64,
    pub joined: u64,
    pub data_links: u64,
}

impl RankEt {
    fn new(pid: i64, file: &Path, attached: &stepcast::et::Attached) -> RankEt {
        RankEt {
            pid,
            file: file.to_path_buf(),
            method: attached.join.method.as_str(),
            ops_in_span: attached.join.ops_in_span,
            joined: attached.join.joined,
            data_links: attached.data.links.len() as u64,
        }
    }
}

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

impl JobEts {
    /// Reads every ET of `files`; one without a process id, or two of one process, is an
    /// error naming the files (a rank could not be told its ET).
    pub fn read(files: &[PathBuf]) -> anyhow::Result<JobEts> {
        let mut ets = Vec::with_capacity(files.len());
        for file in files {
            let et = stepcast_trace::read_execution_trace(file)?;
            let Some(pid) = et.pid else {
                bail!(
                    "{} is an Execution Trace that records no `pid`: a job's ranks are told \
                     their ET by process id",
                    file.display()
                );
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

    /// The index of the ET of `trace`'s process: the process the trace records, else that of
    /// one of its host threads (a Kineto trace records its process as its threads' `pid`).
    fn index_of(&self, trace: &Trace) -> Option<usize> {
        let find = |pid: i64| self.ets.binary_search_by_key(&pid, |e| e.0).ok();
        match trace.process_id {
            Some(pid) => find(pid),
            None => trace
                .lanes
                .iter()
                .filter(|l| l.kind == stepcast_trace::LaneKind::CpuThread)
                .find_map(|l| find(l.pid)),
        }
    }

    /// Joins the ET of `trace`'s process with it, if one was given: its data dependencies
    /// join the trace's links.
    pub fn attach(&self, trace: &mut Trace) -> Option<(RankEt, stepcast::et::Attached)> {
        let (pid, file, et) = &self.ets[self.index_of(trace)?];
        let attached = stepcast::et::attach(trace, et);
        Some((RankEt::new(*pid, file, &attached), attached))
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
