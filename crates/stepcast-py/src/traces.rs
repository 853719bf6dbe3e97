//! The loaded trace and job folder Python holds, and their questions. Each question releases
//! the GIL while the engine works (and while its answer is serialized).

use std::path::{Path, PathBuf};

use pyo3::conversion::FromPyObjectOwned;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use stepcast::whatif::models::LoaderHost;
use stepcast::whatif::{ModelParams, Peers};
use stepcast_cli::jobs::{self, DdpOptions, Loaded, OptimizeOptions, Progress, Transform};
use stepcast_cli::output::{self, Shape};

use crate::errors::{StepcastError, to_json, to_py};
use crate::progress::Callback;

/// Runs `work` without the GIL, reporting to `progress`, and answers its document as JSON.
fn detached<T: serde::Serialize>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    work: impl FnOnce(&dyn Progress) -> anyhow::Result<T> + Send,
) -> PyResult<String> {
    let callback = Callback::new(progress);
    let answer = py.detach(|| work(&callback).and_then(|document| to_json(&document)));
    callback.finish()?;
    answer.map_err(|error| to_py(&error))
}

/// Writes what `work` renders to `path` by the CLI's rules (`stepcast_cli::output`): `path`
/// is checked against `inputs` before any work, and replaced whole, written into (a device, a
/// pipe) or followed (a symlink), never over an input. Runs without the GIL.
fn write_detached(
    py: Python<'_>,
    path: &Path,
    inputs: &[&Path],
    progress: Option<Py<PyAny>>,
    work: impl FnOnce(&dyn Progress) -> anyhow::Result<Vec<u8>> + Send,
) -> PyResult<()> {
    output::check(path, Shape::File, inputs).map_err(|error| to_py(&error))?;
    let callback = Callback::new(progress);
    let written = py.detach(|| work(&callback).and_then(|bytes| output::write_file(path, &bytes)));
    callback.finish()?;
    written.map_err(|error| to_py(&error))
}

/// `--peers` as the CLI spells it.
fn peers(text: &str) -> PyResult<Peers> {
    match text {
        "skew" => Ok(Peers::Skew),
        "balanced" => Ok(Peers::Balanced),
        _ => Err(StepcastError::new_err(format!(
            "bad peers `{text}`: expected skew or balanced"
        ))),
    }
}

/// The recorded run's host as the CLI's `--cores` and `--threads` give it: each a count of
/// at least 1, or unknown.
fn host(cores: Option<u32>, threads: Option<u32>) -> PyResult<LoaderHost> {
    for (name, value) in [("cores", cores), ("threads", threads)] {
        if value == Some(0) {
            return Err(StepcastError::new_err(format!(
                "bad {name} 0: expected a count of at least 1"
            )));
        }
    }
    Ok(LoaderHost { cores, threads })
}

/// `optimize`'s options as the CLI's: `passes` is `--passes` (names, or one comma-separated
/// string), `memory_budget` `--memory-budget` (GiB), `time_limit` `--time-limit` (seconds).
fn optimize_options(
    memory_budget: Option<f64>,
    passes: Option<Vec<String>>,
    time_limit: f64,
    peers: &str,
) -> PyResult<OptimizeOptions> {
    let passes = passes
        .unwrap_or_default()
        .iter()
        .flat_map(|names| names.split(','))
        .map(str::to_string)
        .collect();
    let options = OptimizeOptions {
        passes,
        memory_budget,
        time_limit,
        peers: self::peers(peers)?,
    };
    // An invalid option fails before any work, with the CLI's message.
    options.check().map_err(|error| to_py(&error))?;
    Ok(options)
}

/// Keyword arguments taken one by name; what is left over was not a parameter.
struct Params<'py> {
    function: &'static str,
    left: Option<Bound<'py, PyDict>>,
}

impl<'py> Params<'py> {
    fn new(function: &'static str, params: Option<&Bound<'py, PyDict>>) -> PyResult<Params<'py>> {
        // A copy: the caller's dict is not ours to empty.
        let left = params.map(|p| p.copy()).transpose()?;
        Ok(Params { function, left })
    }

    fn take<T: FromPyObjectOwned<'py>>(&mut self, name: &str) -> PyResult<Option<T>> {
        let Some(left) = &self.left else {
            return Ok(None);
        };
        let Some(value) = left.get_item(name)? else {
            return Ok(None);
        };
        left.del_item(name)?;
        if value.is_none() {
            return Ok(None);
        }
        let extracted: PyResult<T> = value.extract::<T>().map_err(Into::into);
        extracted.map(Some).map_err(|error| {
            PyTypeError::new_err(format!("{}(): bad `{name}`: {error}", self.function))
        })
    }

    fn flag(&mut self, name: &str) -> PyResult<bool> {
        Ok(self.take::<bool>(name)?.unwrap_or(false))
    }

    fn model_params(&mut self) -> PyResult<ModelParams> {
        Ok(ModelParams {
            factor: self.take("factor")?,
            compute: self.take("compute")?,
            memory: self.take("memory")?,
            cpu: self.take("cpu")?,
            copy: self.take("copy")?,
            fraction: self.take("fraction")?,
            contention: self.take("contention")?,
            to: self
                .take::<String>("to")?
                .map(|name| stepcast::whatif::target_param(&name))
                .transpose()
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
            dtype: self
                .take::<String>("dtype")?
                .map(|text| stepcast::whatif::dtype_param(&text))
                .transpose()
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
            workers: self.take("workers")?,
            cores: self.take("cores")?,
            threads: self.take("threads")?,
        })
    }

    fn ddp_options(&mut self) -> PyResult<DdpOptions> {
        Ok(DdpOptions {
            gpus: self.take("gpus")?,
            gpus_per_node: self.take("gpus_per_node")?,
            net: self.take("net")?,
            latency: self.take("latency")?,
            intra: self.take("intra")?,
            algorithm: self.take("algorithm")?,
            flat: self.flag("flat")?,
            bucket_mb: self.take("bucket_mb")?,
            gradients: self.take("gradients")?,
            reinsert: self.flag("reinsert")?,
            compress: self.take("compress")?,
            p3: self.flag("p3")?,
            fsdp: self.flag("fsdp")?,
            cores: None,
        })
    }

    /// An error, as Python gives for any function, for the first argument not taken.
    fn finish(self) -> PyResult<()> {
        let Some(left) = self.left else {
            return Ok(());
        };
        match left.keys().iter().next() {
            None => Ok(()),
            Some(name) => Err(PyTypeError::new_err(format!(
                "{}() got an unexpected keyword argument {}",
                self.function,
                name.repr()?
            ))),
        }
    }
}

/// One trace, read and its graph built once; every question reuses them.
#[pyclass(frozen, module = "stepcast._native")]
pub struct Trace {
    loaded: Loaded,
}

#[pymethods]
impl Trace {
    #[staticmethod]
    #[pyo3(signature = (path, step_range=None, et=None, progress=None))]
    fn load(
        py: Python<'_>,
        path: PathBuf,
        step_range: Option<String>,
        et: Option<PathBuf>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Trace> {
        let options = jobs::read_options(step_range.as_deref()).map_err(|error| to_py(&error))?;
        let callback = Callback::new(progress);
        let loaded = py.detach(|| Loaded::load_with_et(&path, &options, et.as_deref(), &callback));
        callback.finish()?;
        Ok(Trace {
            loaded: loaded.map_err(|error| to_py(&error))?,
        })
    }

    /// The path as given to `load`.
    #[getter]
    fn path(&self) -> String {
        self.loaded.path.display().to_string()
    }

    fn info(&self, py: Python<'_>) -> PyResult<String> {
        detached(py, None, |_| Ok(jobs::info(&self.loaded)))
    }

    #[pyo3(signature = (step=None, progress=None))]
    fn replay(
        &self,
        py: Python<'_>,
        step: Option<u64>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        detached(py, progress, |p| jobs::replay(&self.loaded, step, p))
    }

    /// `top`: the rows the statistics keep (`None`: every one); `cores` and `threads`: the
    /// recorded host, as `advise` takes them.
    #[pyo3(signature = (step=None, top=None, cores=None, threads=None, progress=None))]
    fn analyze(
        &self,
        py: Python<'_>,
        step: Option<u64>,
        top: Option<usize>,
        cores: Option<u32>,
        threads: Option<u32>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let host = host(cores, threads)?;
        detached(py, progress, |p| {
            jobs::analyze(&self.loaded, step, top, host, p)
        })
    }

    /// `whatif MODEL` (`ddp` included) or `whatif --scenario FILE`, with the CLI's options
    /// as keyword arguments (`--gpus-per-node` is `gpus_per_node`).
    #[pyo3(signature = (model=None, scenario=None, peers="skew", progress=None, **params))]
    fn whatif(
        &self,
        py: Python<'_>,
        model: Option<String>,
        scenario: Option<PathBuf>,
        peers: &str,
        progress: Option<Py<PyAny>>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<String> {
        let peers = self::peers(peers)?;
        let transform = transform(model, scenario, params)?;
        detached(py, progress, |p| {
            jobs::whatif(&self.loaded, &transform, peers, p)
        })
    }

    /// `advise TRACE [--cores N] [--threads N]`.
    #[pyo3(signature = (peers="skew", cores=None, threads=None, progress=None))]
    fn advise(
        &self,
        py: Python<'_>,
        peers: &str,
        cores: Option<u32>,
        threads: Option<u32>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let peers = self::peers(peers)?;
        let host = host(cores, threads)?;
        detached(py, progress, |p| jobs::advise(&self.loaded, peers, host, p))
    }

    /// `export TRACE -o PATH [--step N] [--model MODEL]`: the Chrome trace, written to `path`.
    #[pyo3(signature = (path, step=None, model=None, progress=None))]
    fn export(
        &self,
        py: Python<'_>,
        path: PathBuf,
        step: Option<u64>,
        model: Option<String>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let model = model
            .map(|name| stepcast::whatif::Model::with_params(&name, &ModelParams::default()))
            .transpose()
            .map_err(|error| to_py(&anyhow::Error::from(error)))?;
        let inputs = [self.loaded.path.as_path()];
        write_detached(py, &path, &inputs, progress, |p| {
            jobs::export(&self.loaded, step, model.as_ref(), p)
        })
    }

    /// `report TRACE -o PATH [--model MODEL] [--gpus N,N] [--peers P]`: the HTML page, written
    /// to `path`.
    #[pyo3(signature = (path, model=None, gpus="1,2,4,8,16,32,64", peers="skew", cores=None, threads=None, progress=None))]
    #[allow(clippy::too_many_arguments)]
    fn report(
        &self,
        py: Python<'_>,
        path: PathBuf,
        model: Option<String>,
        gpus: &str,
        peers: &str,
        cores: Option<u32>,
        threads: Option<u32>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        let peers = self::peers(peers)?;
        let host = host(cores, threads)?;
        let options = jobs::ReportOptions::new(model.as_deref(), gpus, peers, host)
            .map_err(|error| to_py(&error))?;
        let inputs = [self.loaded.path.as_path()];
        write_detached(py, &path, &inputs, progress, |p| {
            jobs::report_page(&self.loaded, &options, p).map(String::into_bytes)
        })
    }

    /// `optimize`: the best plan of the optimization passes, with the CLI's options.
    #[pyo3(signature = (memory_budget=None, passes=None, time_limit=60.0, peers="skew", progress=None))]
    fn optimize(
        &self,
        py: Python<'_>,
        memory_budget: Option<f64>,
        passes: Option<Vec<String>>,
        time_limit: f64,
        peers: &str,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let options = optimize_options(memory_budget, passes, time_limit, peers)?;
        detached(py, progress, |p| {
            jobs::optimize(&[&self.loaded], &options, p)
        })
    }
}

/// `compare BEFORE AFTER`, each model of `models` predicted from BEFORE and checked against
/// AFTER.
#[pyfunction]
#[pyo3(signature = (before, after, models=Vec::new(), progress=None, **params))]
pub fn compare(
    py: Python<'_>,
    before: &Bound<'_, Trace>,
    after: &Bound<'_, Trace>,
    models: Vec<String>,
    progress: Option<Py<PyAny>>,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let mut params = Params::new("compare", params)?;
    let model_params = params.model_params()?;
    params.finish()?;
    let models = jobs::compare_models(&models, &model_params).map_err(|error| to_py(&error))?;
    let (before, after) = (&before.get().loaded, &after.get().loaded);
    detached(py, progress, |p| jobs::compare(before, after, &models, p))
}

/// A reduced rank as Python gets it: its file name, its bytes, and the process of the ET
/// joined with it.
type ReducedFileOut = (String, Py<pyo3::types::PyBytes>, Option<i64>);

/// `reduce` of one trace file: each of its ranks (one per process it holds) as the file name
/// `stepcast reduce` gives it and its bytes, for a Dask worker to hand back or write
/// (`stepcast.distributed`). The trace is read and dropped here; only the bytes leave.
/// `ets`: the job's Execution Traces by the process each observed
/// ([`execution_trace_process`]); the one of the trace's process is joined with it. Each file
/// comes with the process of the ET joined with it, if one was.
#[pyfunction]
#[pyo3(signature = (path, step_range=None, ets=None))]
pub fn reduce_trace(
    py: Python<'_>,
    path: PathBuf,
    step_range: Option<String>,
    ets: Option<std::collections::BTreeMap<i64, PathBuf>>,
) -> PyResult<Vec<ReducedFileOut>> {
    let options = jobs::read_options(step_range.as_deref()).map_err(|error| to_py(&error))?;
    let ets = ets.unwrap_or_default();
    let files = py
        .detach(|| jobs::reduce_file_with_ets_of(&path, &options, &ets))
        .map_err(|error| to_py(&error))?;
    Ok(files
        .into_iter()
        .map(|file| {
            (
                file.name,
                pyo3::types::PyBytes::new(py, &file.bytes).unbind(),
                file.et_pid,
            )
        })
        .collect())
}

/// The process an Execution Trace observed (its `pid`), read on a worker of
/// `stepcast.distributed`: what pairs it with its rank.
#[pyfunction]
pub fn execution_trace_process(py: Python<'_>, path: PathBuf) -> PyResult<i64> {
    py.detach(|| jobs::execution_trace_process(&path))
        .map_err(|error| to_py(&error))
}

/// The traces `paths` name (as [`rank_files`]) and, apart, the Execution Traces among them.
#[pyfunction]
pub fn job_inputs(paths: Vec<PathBuf>) -> PyResult<(Vec<String>, Vec<String>)> {
    let (traces, ets) = jobs::job_inputs(&paths).map_err(|error| to_py(&error))?;
    let strings = |files: Vec<PathBuf>| files.iter().map(|f| f.display().to_string()).collect();
    Ok((strings(traces), strings(ets)))
}

/// The rank files `paths` name, in the order `replay DIR` reads them (directories expanded to
/// their traces, or to their reduced ranks, sorted by name).
#[pyfunction]
pub fn rank_files(paths: Vec<PathBuf>) -> PyResult<Vec<String>> {
    let files = jobs::rank_files(&paths).map_err(|error| to_py(&error))?;
    Ok(files.iter().map(|f| f.display().to_string()).collect())
}

/// The transform `whatif` names: a model with the CLI's options as keyword arguments, or a
/// scenario file (never both).
fn transform(
    model: Option<String>,
    scenario: Option<PathBuf>,
    params: Option<&Bound<'_, PyDict>>,
) -> PyResult<Transform> {
    let mut params = Params::new("whatif", params)?;
    let model_params = params.model_params()?;
    let mut ddp = params.ddp_options()?;
    // `cores` is one argument: the loader's host and a CPU-only job's node alike.
    ddp.cores = model_params.cores;
    params.finish()?;
    let any_param = [
        model_params.factor,
        model_params.compute,
        model_params.memory,
        model_params.cpu,
        model_params.copy,
        model_params.fraction,
        model_params.contention,
        model_params.workers,
        model_params.cores,
        model_params.threads,
    ]
    .iter()
    .any(Option::is_some);
    if scenario.is_some() && (model.is_some() || any_param) {
        return Err(StepcastError::new_err(
            "a scenario file replaces the model and its parameters: give one or the other",
        ));
    }
    Transform::new(model.as_deref(), scenario.as_deref(), &model_params, &ddp)
        .map_err(|error| to_py(&error))
}

/// The ranks of one job (a folder of traces, or several traces), replayed as one graph.
#[pyclass(frozen, module = "stepcast._native")]
pub struct Job {
    job: jobs::Job,
    /// The paths as given to `load`: `optimize` reads the traces again from them (the job
    /// keeps each rank's graph, not its trace).
    paths: Vec<PathBuf>,
    /// The read options given to `load`, for reading the traces again.
    read: jobs::ReadOptions,
}

#[pymethods]
impl Job {
    #[staticmethod]
    /// `unreadable`: files left out before (by `stepcast.distributed`'s reduction), listed in
    /// the job's documents as the ones it leaves out itself; `ets_unmatched`: Execution
    /// Traces given with the job that no rank's process matched, listed likewise.
    #[pyo3(signature = (paths, step_range=None, skip_unreadable=false, progress=None, unreadable=Vec::new(), ets_unmatched=Vec::new()))]
    fn load(
        py: Python<'_>,
        paths: Vec<PathBuf>,
        step_range: Option<String>,
        skip_unreadable: bool,
        progress: Option<Py<PyAny>>,
        unreadable: Vec<(PathBuf, String)>,
        ets_unmatched: Vec<PathBuf>,
    ) -> PyResult<Job> {
        let options = jobs::read_options(step_range.as_deref()).map_err(|error| to_py(&error))?;
        let callback = Callback::new(progress);
        let on_unreadable = jobs::Unreadable::skipped_if(skip_unreadable);
        let job = py.detach(|| jobs::Job::load(&paths, &options, on_unreadable, &callback));
        callback.finish()?;
        let unreadable = unreadable
            .into_iter()
            .map(|(file, reason)| jobs::Skipped { file, reason })
            .collect();
        Ok(Job {
            job: job
                .map_err(|error| to_py(&error))?
                .with_unreadable(unreadable)
                .with_unmatched_ets(ets_unmatched),
            paths,
            read: options,
        })
    }

    /// The trace files, in rank order.
    #[getter]
    fn files(&self) -> Vec<String> {
        self.job.files().map(|p| p.display().to_string()).collect()
    }

    #[pyo3(signature = (step=None, progress=None))]
    fn replay(
        &self,
        py: Python<'_>,
        step: Option<u64>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        detached(py, progress, |p| self.job.replay(step, None, p))
    }

    /// `whatif DIR MODEL`: the change on every rank, predicted on the job's global graph.
    /// Reads the traces again.
    #[pyo3(signature = (model=None, scenario=None, peers="skew", progress=None, **params))]
    fn whatif(
        &self,
        py: Python<'_>,
        model: Option<String>,
        scenario: Option<PathBuf>,
        peers: &str,
        progress: Option<Py<PyAny>>,
        params: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<String> {
        let peers = self::peers(peers)?;
        let transform = transform(model, scenario, params)?;
        detached(py, progress, |p| {
            let job = jobs::load_ranks(&self.paths, &self.read, p)?;
            jobs::whatif_job(&job, &transform, peers, p)
        })
    }

    /// `advise DIR`: every change on every rank, ranked by the job's gain. Reads the traces
    /// again.
    #[pyo3(signature = (peers="skew", cores=None, threads=None, progress=None))]
    fn advise(
        &self,
        py: Python<'_>,
        peers: &str,
        cores: Option<u32>,
        threads: Option<u32>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let peers = self::peers(peers)?;
        let host = host(cores, threads)?;
        detached(py, progress, |p| {
            let job = jobs::load_ranks(&self.paths, &self.read, p)?;
            jobs::advise_job(&job, peers, host, p)
        })
    }

    /// `optimize DIR`: one plan for every rank, checked on each. Reads the traces again.
    #[pyo3(signature = (memory_budget=None, passes=None, time_limit=60.0, peers="skew", progress=None))]
    fn optimize(
        &self,
        py: Python<'_>,
        memory_budget: Option<f64>,
        passes: Option<Vec<String>>,
        time_limit: f64,
        peers: &str,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let options = optimize_options(memory_budget, passes, time_limit, peers)?;
        detached(py, progress, |p| {
            jobs::load_ranks(&self.paths, &self.read, p)?.optimize(&options, p)
        })
    }
}
