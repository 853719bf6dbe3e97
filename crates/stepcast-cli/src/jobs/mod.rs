//! One function per subcommand, each from a loaded trace (or job) to its JSON document.
//!
//! A trace is read and its graph built once ([`Loaded`]); every question asked of it after
//! that reuses them, which is what a notebook does (load once, ask many times). Errors are
//! `anyhow` chains whose one-line [`message`](crate::message) names the file and the problem.

mod advise;
mod analyze;
mod compare;
mod ddp;
mod execution_traces;
mod export;
mod info;
mod job_predictions;
mod optimize;
mod ranks;
mod reduce;
mod replay;
mod report;
mod whatif;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use stepcast::Window;
use stepcast::analyze::mapping::{Mapping, map};
use stepcast::graph::{BuildOptions, build};
use stepcast::whatif::{Context, Peers};
use stepcast_trace::Trace;

pub use advise::advise;
pub use analyze::analyze;
pub use compare::{compare, compare_models, compare_with};
pub use ddp::DdpOptions;
pub use execution_traces::{JobEts, RankEt, execution_trace_process};
pub use export::export;
pub use info::info;
pub use job_predictions::{advise_job, whatif_job};
pub use optimize::{JobRanks, OptimizeOptions, load_ranks, optimize};
pub use ranks::{Input, Job, Skipped, Unreadable, job_inputs, open, rank_files};
pub use reduce::{
    REDUCED_EXTENSION, Reduced, ReducedFile, is_reduced_file, reduce, reduce_file,
    reduce_file_with_ets_of,
};
pub use replay::replay;
pub use report::{Digest, ReportOptions, TracePage, digest, predicted, report, report_page};
pub use stepcast_trace::ReadOptions;
pub use whatif::{Transform, whatif};

/// Where long work reports how far it is: `stage` names what is being done, `done` of `total`
/// units of it are finished. Called from the thread doing the work, possibly several threads.
pub trait Progress: Sync {
    fn update(&self, stage: &str, done: usize, total: usize);
}

/// No progress shown.
pub struct Quiet;

impl Progress for Quiet {
    fn update(&self, _stage: &str, _done: usize, _total: usize) {}
}

/// How traces are read, from the command line's (or Python's) `--step-range`: steps are the
/// ranges whose name the pattern matches. An invalid pattern is a usage error.
pub fn read_options(step_range: Option<&str>) -> anyhow::Result<ReadOptions> {
    let step_range = step_range
        .map(|pattern| {
            regex::Regex::new(pattern).map_err(|e| {
                // A syntax error is several lines (the pattern, a caret, the reason): its
                // reason alone keeps the message on one line.
                let text = e.to_string();
                let reason = text
                    .lines()
                    .rev()
                    .find_map(|line| line.trim().strip_prefix("error: "))
                    .map_or_else(
                        || text.split_whitespace().collect::<Vec<_>>().join(" "),
                        str::to_string,
                    );
                crate::usage(anyhow::anyhow!(
                    "--step-range {pattern:?} is not a valid regular expression: {reason}"
                ))
            })
        })
        .transpose()?;
    Ok(ReadOptions {
        step_range,
        ..ReadOptions::default()
    })
}

/// A trace read, with its window built and, once a question needs it, the mapping of its
/// tasks to ops, layers and phases (what `analyze`, `whatif`, `advise` and `compare` share).
pub struct Loaded {
    /// The path as given: documents and messages name the file as the user did.
    pub path: PathBuf,
    pub trace: Trace,
    pub window: Window,
    /// The Execution Trace joined with it (`--et`): its cross-thread data dependencies are
    /// edges of the window's graph, and all of them the models' [`Context::data`].
    pub execution_trace: Option<JoinedEt>,
    mapping: OnceLock<Mapping>,
}

/// An Execution Trace read and joined with its trace.
pub struct JoinedEt {
    /// The ET file as the user named it.
    pub path: PathBuf,
    pub et: stepcast_trace::ExecutionTrace,
    pub attached: stepcast::et::Attached,
}

impl Loaded {
    /// Reads the trace at `path` and builds its window. The read error already names the file.
    /// A file of several processes (an Nsight Systems export of a multi-GPU job) gives its
    /// first, noted; [`open`] reads them all as ranks.
    pub fn load(
        path: &Path,
        options: &ReadOptions,
        progress: &dyn Progress,
    ) -> anyhow::Result<Loaded> {
        Loaded::load_with_et(path, options, None, progress)
    }

    /// [`Loaded::load`], joined with the Execution Trace at `et` when given: the graph gains
    /// the data dependencies it states between threads ([`stepcast::et::attach`]).
    pub fn load_with_et(
        path: &Path,
        options: &ReadOptions,
        et: Option<&Path>,
        progress: &dyn Progress,
    ) -> anyhow::Result<Loaded> {
        let et = match et {
            Some(et_path) => Some((
                et_path.to_path_buf(),
                stepcast_trace::read_execution_trace(et_path)?,
            )),
            None => None,
        };
        Loaded::load_joining(path, options, |_| et, progress)
    }

    /// [`Loaded::load`], joined with the Execution Trace of the trace's process among a job's
    /// (`ets`), if there is one.
    pub fn load_with_job_ets(
        path: &Path,
        options: &ReadOptions,
        ets: &JobEts,
        progress: &dyn Progress,
    ) -> anyhow::Result<Loaded> {
        Loaded::load_joining(path, options, |trace| ets.of(trace), progress)
    }

    /// Reads the trace, joins it with the Execution Trace `et_of` gives for it, and builds.
    fn load_joining(
        path: &Path,
        options: &ReadOptions,
        et_of: impl FnOnce(&Trace) -> Option<(PathBuf, stepcast_trace::ExecutionTrace)>,
        progress: &dyn Progress,
    ) -> anyhow::Result<Loaded> {
        let stage = format!("loading {}", path.display());
        progress.update(&stage, 0, 2);
        let mut trace = stepcast_trace::read_trace_with(path, options)?;
        let execution_trace = et_of(&trace).map(|(et_path, et)| {
            let attached = stepcast::et::attach(&mut trace, &et);
            JoinedEt {
                path: et_path,
                et,
                attached,
            }
        });
        progress.update(&stage, 1, 2);
        let mut loaded = Loaded::built(path, trace, progress);
        loaded.execution_trace = execution_trace;
        Ok(loaded)
    }

    /// A trace already read, with its window built.
    fn built(path: &Path, trace: Trace, progress: &dyn Progress) -> Loaded {
        let window = build(&trace, &BuildOptions::default());
        progress.update(&format!("loading {}", path.display()), 2, 2);
        Loaded {
            path: path.to_path_buf(),
            trace,
            window,
            execution_trace: None,
            mapping: OnceLock::new(),
        }
    }

    /// The mapping of every task, computed on first use.
    pub fn mapping(&self) -> &Mapping {
        self.mapping.get_or_init(|| map(&self.trace, &self.window))
    }

    /// What every what-if starts from.
    pub fn context(&self, peers: Peers) -> Context<'_> {
        let mut context = Context::new(&self.trace, &self.window, self.mapping());
        context.peers = peers;
        context.data = self
            .execution_trace
            .as_ref()
            .map(|joined| &joined.attached.dependencies);
        context
    }

    /// The file as documents name it.
    fn file(&self) -> Option<String> {
        Some(self.path.display().to_string())
    }

    /// The index in `window.steps` of `ProfilerStep#number`, or an error naming the steps
    /// there are. A trace without step markers has one synthetic step, which `step` cannot
    /// name.
    pub fn step_index(&self, number: u64) -> anyhow::Result<usize> {
        let (path, window) = (self.path.display(), &self.window);
        let found = window
            .steps
            .iter()
            .position(|step| step.number == number && !step.synthetic);
        if let Some(index) = found {
            return Ok(index);
        }
        let numbers: Vec<u64> = window.steps.iter().map(|step| step.number).collect();
        match window.steps.as_slice() {
            [] => anyhow::bail!("{path} has no step {number}: it has no steps (leave out --step)"),
            [step] if step.synthetic => anyhow::bail!(
                "{path} has no step {number}: it has no ProfilerStep markers, so the whole window \
                 is one step (leave out --step)"
            ),
            _ => anyhow::bail!(
                "{path} has no step {number}; its steps are {} (pass one of these to --step)",
                stepcast_report::table::step_list(&numbers)
            ),
        }
    }
}
