//! The command line, as clap parses it. These types never leave this crate.

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
use clap::{Args as ClapArgs, Parser, Subcommand, ValueEnum};

const AFTER_HELP: &str = "\
EXIT STATUS:
    0  success
    1  error: the trace could not be read or replayed, or the output could not be written
    2  the command line is invalid";

/// Why is a training step slow, and what would a change buy? Answered from profiler traces.
///
/// stepcast rebuilds the dependency graph of each training step a trace records (PyTorch
/// profiler, Nsight Systems, rocprofv3, XPlane, Horovod and MXNet timelines, CTF), checks that
/// replaying it reproduces the measured step, then diagnoses it and predicts what-ifs on it.
#[derive(Debug, Parser)]
#[command(name = "stepcast", version, after_help = AFTER_HELP)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
    /// Steps are the ranges whose name matches REGEX (NVTX ranges of an Nsight Systems export,
    /// ROCTx ranges of rocprofv3, host events of an XPlane, host ops and annotations of a
    /// PyTorch profiler trace; e.g. '^train_step$'), numbered from 0, instead of the format's
    /// own step markers.
    #[arg(long, value_name = "REGEX", global = true)]
    pub step_range: Option<String>,
    /// Join the trace with this Horovod timeline (HOROVOD_TIMELINE, written by rank 0; give
    /// rank 0's trace): per-tensor negotiate, fusion-buffer copy and all-reduce stages become
    /// tasks, linked to the gradients they carry and the ops that read them.
    #[arg(long, value_name = "FILE", global = true)]
    pub comm_timeline: Option<std::path::PathBuf>,
    /// Join the trace with the PyTorch Execution Trace of the same run
    /// (`ExecutionTraceObserver`'s JSON): its ops are paired with the trace's, and the data
    /// dependencies it states between threads (an op reads a tensor another thread's op
    /// produced) become edges of the graph; the models that ask which op feeds which read
    /// them. One trace only.
    #[arg(long, value_name = "FILE", global = true)]
    pub et: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Summarize a trace: devices, lanes, steps, events, skipped records and its graph.
    Info(InfoArgs),
    /// Replay a trace's graph and compare each replayed step with the recording.
    Replay(ReplayArgs),
    /// Where the step's time goes: breakdowns, critical path, statistics and memory.
    Analyze(AnalyzeArgs),
    /// Write the recorded and the replayed window side by side as a Chrome/Perfetto trace.
    Export(ExportArgs),
    /// Predict the step time after an optimization: a built-in model or a scenario file.
    #[command(name = "whatif")]
    WhatIf(Box<WhatIfArgs>),
    /// Rank the built-in optimizations (and useful combinations) by predicted gain.
    Advise(AdviseArgs),
    /// Search for the best combination of op fusion, tensor fusion and partition, program
    /// changes and memory trades (dPRO's strategy search): a plan to apply, move by move.
    Optimize(OptimizeArgs),
    /// Compare two traces of one workload: measured speedup of their steady steps, what changed
    /// by phase, op and kernel, and (--model) a prediction from BEFORE against AFTER.
    Compare(CompareArgs),
    /// One self-contained HTML page (works offline): the answer first, the timeline of the
    /// typical step recorded, replayed and predicted, breakdowns, top kernels and ops, memory,
    /// step variability and the data-parallel scaling curve; for a job folder, the ranks side
    /// by side.
    Report(ReportArgs),
    /// Reduce each rank of a job to its graph, one compact file per rank (.stepcast-rank), so
    /// that `replay` and `report` of the folder read those instead of the traces: the map step
    /// of a job too large for one machine (docs/scaling.md).
    Reduce(ReduceArgs),
}

#[derive(Debug, ClapArgs)]
#[command(mut_arg("format", |arg| arg.value_parser(formats(&[Format::Text, Format::Json, Format::Csv]))))]
pub struct InfoArgs {
    /// A trace: PyTorch profiler .json or .json.gz, rocprofv3 JSON, XPlane .xplane.pb, or an
    /// Nsight Systems .sqlite export.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, ClapArgs)]
#[command(mut_arg("format", |arg| arg.value_parser(formats(&[Format::Text, Format::Json, Format::Csv]))))]
pub struct ReplayArgs {
    /// A trace (PyTorch profiler .json or .json.gz, rocprofv3 JSON, XPlane .xplane.pb, Nsight
    /// Systems .sqlite export). Several traces, or a directory of them, one per rank of the
    /// same job, or an export of several processes: the ranks are replayed together as one
    /// graph.
    #[arg(value_name = "TRACE", required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    /// Report only step N (the N of ProfilerStep#N).
    #[arg(long, value_name = "N")]
    pub step: Option<u64>,
    /// Several ranks: whose detail to list (pairwise clock constraints, every collective
    /// instance): `all`, rank numbers `N,M`, or `worst:K` (the K ranks holding the most
    /// critical-path time). By default the per-rank tables and distributions only.
    #[arg(long, value_name = "all|N,M|worst:K")]
    pub ranks: Option<String>,
    /// Several ranks: replay the job without the rank files that cannot be read (each listed
    /// with why) instead of refusing it.
    #[arg(long)]
    pub skip_unreadable: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, ClapArgs)]
#[command(mut_arg("format", |arg| arg.value_parser(formats(&[Format::Text, Format::Json, Format::Csv, Format::Md]))))]
pub struct AnalyzeArgs {
    /// A trace: PyTorch profiler .json or .json.gz, rocprofv3 JSON, XPlane .xplane.pb, or an
    /// Nsight Systems .sqlite export.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Analyze step N (the N of ProfilerStep#N) in detail; by default, the steady-state step
    /// whose measured time is closest to the median.
    #[arg(long, value_name = "N")]
    pub step: Option<u64>,
    /// Keep the N kernels, ops and queue latencies that take the most time (`all`: every one)
    #[arg(long, value_name = "N|all", default_value = "20", value_parser = parse_top)]
    pub top: TopRows,
    /// The answer it leads with is `advise`'s, on this host.
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// How many rows the statistics keep: `None` for every one.
#[derive(Clone, Copy, Debug)]
pub struct TopRows(pub Option<usize>);

fn parse_top(text: &str) -> Result<TopRows, String> {
    if text == "all" {
        return Ok(TopRows(None));
    }
    match text.parse::<usize>() {
        Ok(n) if n > 0 => Ok(TopRows(Some(n))),
        _ => Err(format!(
            "{text:?} is not a positive number of rows or `all`"
        )),
    }
}

#[derive(Debug, ClapArgs)]
pub struct ExportArgs {
    /// A trace: PyTorch profiler .json or .json.gz, rocprofv3 JSON, XPlane .xplane.pb, or an
    /// Nsight Systems .sqlite export.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// Export only step N (the N of ProfilerStep#N) and the tasks on its critical path.
    #[arg(long, value_name = "N")]
    pub step: Option<u64>,
    /// The Chrome trace (JSON) to write, for ui.perfetto.dev or chrome://tracing. A file is
    /// replaced whole or not at all (a symlink's target; a device or pipe is written into;
    /// `-` is stdout); an input is never overwritten.
    #[arg(short = 'o', long = "output", value_name = "FILE.json")]
    pub output: PathBuf,
    /// A plan written by `stepcast optimize --json`: export the predicted timeline of the
    /// optimized window beside the recorded one instead of the replay.
    #[arg(long, value_name = "PLAN.json", conflicts_with = "step")]
    pub plan: Option<PathBuf>,
    /// Add a third process, the window as a built-in model (as `whatif` takes it, with its
    /// default parameters) predicts it, with its own critical path track.
    #[arg(long, value_name = "MODEL", conflicts_with = "plan")]
    pub model: Option<String>,
}

#[derive(Debug, ClapArgs)]
#[command(mut_arg("format", |arg| arg.value_parser(formats(&[Format::Text, Format::Json, Format::Csv]))))]
pub struct WhatIfArgs {
    /// A trace: PyTorch profiler .json or .json.gz, rocprofv3 JSON, XPlane .xplane.pb, or an
    /// Nsight Systems .sqlite export.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    /// A built-in model: fused_optimizer, cuda_graphs, amp, faster_gpu, faster_cpu,
    /// faster_hardware, faster_copies, remove_syncs, kernel_fusion, reconstruct_batchnorm,
    /// prefetch_inputs; memory-for-time trades: recompute, offload, gist (see docs/whatif.md).
    #[arg(value_name = "MODEL", required_unless_present = "scenario")]
    pub model: Option<String>,
    /// A scenario file (TOML) describing the what-if instead of MODEL.
    #[arg(long, value_name = "FILE.toml", conflicts_with = "model")]
    pub scenario: Option<PathBuf>,
    /// fused_optimizer: the fused kernel's cost as a share of the kernels it replaces.
    #[arg(long, value_name = "F", conflicts_with = "scenario")]
    pub factor: Option<f64>,
    /// faster_hardware: speed-up of tensor-core (compute-bound) kernels.
    #[arg(long, value_name = "X", conflicts_with = "scenario")]
    pub compute: Option<f64>,
    /// faster_hardware: speed-up of the other (memory-bound) kernels and memsets.
    #[arg(long, value_name = "X", conflicts_with = "scenario")]
    pub memory: Option<f64>,
    /// faster_hardware: speed-up of host work.
    #[arg(long, value_name = "X", conflicts_with = "scenario")]
    pub cpu: Option<f64>,
    /// faster_hardware: speed-up of copies.
    #[arg(long, value_name = "X", conflicts_with = "scenario")]
    pub copy: Option<f64>,
    /// recompute, offload, gist: the share of each step's activation bytes acted on, from the
    /// front of the forward pass (0 < F <= 1; default 0.5; recompute without it checkpoints
    /// the forward pass's repeated blocks one by one).
    #[arg(long, value_name = "F", conflicts_with = "scenario")]
    pub fraction: Option<f64>,
    /// prefetch_inputs: how much slower the training process's host work runs beside the
    /// loader's worker processes (0.1 = 10 %, the default; 0 for a host with cores to spare).
    #[arg(long, value_name = "C", conflicts_with = "scenario")]
    pub contention: Option<f64>,
    /// faster_hardware: the GPU to predict for (h100, h100-pcie, h200, a100, v100, l40s, l4,
    /// a10, t4): kernel and copy factors from its datasheet against the trace's GPU; the host
    /// stays as recorded unless --cpu is given.
    #[arg(long, value_name = "GPU", conflicts_with = "scenario")]
    pub to: Option<String>,
    /// amp: fp16 (with a GradScaler, the default) or bf16 (no GradScaler).
    #[arg(long, value_name = "fp16|bf16", conflicts_with = "scenario")]
    pub dtype: Option<String>,
    /// prefetch_inputs: the DataLoader's worker processes (default 4).
    #[arg(long, value_name = "N", conflicts_with = "scenario")]
    pub workers: Option<f64>,
    /// prefetch_inputs: the host's CPU cores (unknown by default: traces do not record them);
    /// ddp on a CPU-only trace: a node's cores, which its processes share (with more
    /// processes than cores, each one's host work runs that many times slower).
    #[arg(long, value_name = "N", conflicts_with = "scenario")]
    pub cores: Option<f64>,
    /// prefetch_inputs: the training process's intra-op threads, torch.get_num_threads()
    /// (unknown by default: one per core where --cores is given).
    #[arg(long, value_name = "N", conflicts_with = "scenario")]
    pub threads: Option<f64>,
    /// ddp: world size, or a comma-separated list for a scaling sweep (8,16,32,64).
    #[arg(long, value_name = "N[,N...]", conflicts_with = "scenario")]
    pub gpus: Option<String>,
    /// ddp: GPUs per node (default 8).
    #[arg(long, value_name = "N", conflicts_with = "scenario")]
    pub gpus_per_node: Option<u32>,
    /// ddp: inter-node bandwidth per GPU (100Gbps, 25GB/s, infiniband, roce, ethernet), or a
    /// comma-separated list for a sweep (10,25,100,400Gbps). Default: InfiniBand 200 Gb/s.
    #[arg(long, value_name = "BW[,BW...]", conflicts_with = "scenario")]
    pub net: Option<String>,
    /// ddp: inter-node latency per hop (5us, 2000ns). Default: the preset's.
    #[arg(long, value_name = "T", conflicts_with = "scenario")]
    pub latency: Option<String>,
    /// ddp: intra-node link (nvlink2/3/4, pcie3/4/5, or a bandwidth such as 200GB/s).
    /// Default: calibrated from the trace's collectives.
    #[arg(long, value_name = "LINK", conflicts_with = "scenario")]
    pub intra: Option<String>,
    /// ddp: collective algorithm: ring (default), tree or auto.
    #[arg(long, value_name = "ALGO", conflicts_with = "scenario")]
    pub algorithm: Option<String>,
    /// ddp: one flat ring across nodes instead of BlueConnect's hierarchical decomposition.
    #[arg(long, conflicts_with = "scenario")]
    pub flat: bool,
    /// ddp: merge consecutive recorded all-reduces into buckets of at most MB megabytes (DDP's
    /// bucket_cap_mb; 25 by default in PyTorch). Default: keep the recorded buckets.
    #[arg(long, value_name = "MB", conflicts_with = "scenario")]
    pub bucket_mb: Option<f64>,
    /// ddp: gradient bytes per parameter, one `NAME BYTES` (or `BYTES`) line per parameter in
    /// parameter order; default: the trace's recorded shapes (see docs/whatif.md).
    #[arg(long, value_name = "FILE", conflicts_with = "scenario")]
    pub gradients: Option<PathBuf>,
    /// ddp: strip the recorded collectives and insert DDP's all-reduces from the gradients.
    #[arg(long, conflicts_with = "scenario")]
    pub reinsert: bool,
    /// ddp: gradient compression: dgc or dgc:RATIO (share of elements sent; default 0.001).
    #[arg(long, value_name = "dgc[:RATIO]", conflicts_with = "scenario")]
    pub compress: Option<String>,
    /// ddp: P3, per-parameter slices sent in priority order (the first layer's first).
    #[arg(long, conflicts_with = "scenario")]
    pub p3: bool,
    /// ddp: FSDP / ZeRO-3 instead of DDP: per-unit all-gathers and reduce-scatters.
    #[arg(long, conflicts_with = "scenario")]
    pub fsdp: bool,
    #[command(flatten)]
    pub peers: PeersArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// What a collective's peers (not in the trace) do in a prediction.
#[derive(Debug, ClapArgs)]
pub struct PeersArgs {
    /// skew (default): peers keep their recorded lateness relative to this rank and otherwise
    /// run the same transformed program; balanced: no straggler. The figures say which was
    /// used and what the other gives.
    #[arg(long, value_name = "skew|balanced", default_value = "skew", value_parser = ["skew", "balanced"])]
    pub peers: String,
}

impl PeersArgs {
    pub fn peers(&self) -> stepcast::whatif::Peers {
        match self.peers.as_str() {
            "balanced" => stepcast::whatif::Peers::Balanced,
            _ => stepcast::whatif::Peers::Skew,
        }
    }
}

/// What the user says of the host the trace was recorded on: no trace format records it.
#[derive(Debug, ClapArgs)]
pub struct HostArgs {
    /// The recorded host's CPU cores, which the training process shares with its DataLoader
    /// workers (of a job: those each rank's process may use). prefetch_inputs prices the
    /// workers on them, as `whatif --cores` does; unknown by default: on a CPU-only trace
    /// prefetch_inputs then declines.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub cores: Option<u32>,
    /// The training process's intra-op threads (`torch.get_num_threads()`; unknown by
    /// default), as `whatif --threads`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub threads: Option<u32>,
}

impl HostArgs {
    pub fn host(&self) -> stepcast::whatif::models::LoaderHost {
        stepcast::whatif::models::LoaderHost {
            cores: self.cores,
            threads: self.threads,
        }
    }
}

#[derive(Debug, ClapArgs)]
#[command(mut_arg("format", |arg| arg.value_parser(formats(&[Format::Text, Format::Json, Format::Csv, Format::Md]))))]
pub struct AdviseArgs {
    /// A trace: PyTorch profiler .json or .json.gz, rocprofv3 JSON, XPlane .xplane.pb, or an
    /// Nsight Systems .sqlite export.
    #[arg(value_name = "TRACE")]
    pub trace: PathBuf,
    #[command(flatten)]
    pub peers: PeersArgs,
    #[command(flatten)]
    pub host: HostArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, ClapArgs)]
#[command(mut_arg("format", |arg| arg.value_parser(formats(&[Format::Text, Format::Json, Format::Csv]))))]
pub struct OptimizeArgs {
    /// A trace (PyTorch profiler .json or .json.gz, rocprofv3 JSON, XPlane .xplane.pb, Nsight
    /// Systems .sqlite export). Several traces, or a directory of them, one per rank of the
    /// same job: one plan, checked on every rank.
    #[arg(value_name = "TRACE", required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    /// Device memory the plan must fit in, GiB (default: the device's memory, from the trace).
    #[arg(long, value_name = "GIB")]
    pub memory_budget: Option<f64>,
    /// The passes the plan may use, comma-separated (default: all): op_fusion, tensor_fusion,
    /// tensor_partition, program, memory.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub passes: Vec<String>,
    /// Stop the search after this many seconds and answer with the best plan so far (marked
    /// so: such a plan may differ from run to run).
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    pub time_limit: f64,
    #[command(flatten)]
    pub peers: PeersArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, ClapArgs)]
#[command(mut_arg("format", |arg| arg.value_parser(formats(&[Format::Text, Format::Json, Format::Csv, Format::Html]))))]
pub struct CompareArgs {
    /// The trace before the change (any format `info` reads).
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,
    /// The trace after the change, of the same workload.
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,
    /// A built-in model standing for the change (as `whatif` takes it), predicted from BEFORE
    /// and checked against AFTER. Repeat for several; each is checked on its own.
    #[arg(long = "model", value_name = "MODEL")]
    pub models: Vec<String>,
    /// Compare two traces that are not one workload (training against inference, ops and
    /// kernels that share almost nothing) instead of refusing; the refusal is kept as a warning.
    #[arg(long)]
    pub force: bool,
    /// fused_optimizer: the fused kernel's cost as a share of the kernels it replaces.
    #[arg(long, value_name = "F")]
    pub factor: Option<f64>,
    /// faster_hardware: speed-up of tensor-core (compute-bound) kernels.
    #[arg(long, value_name = "X")]
    pub compute: Option<f64>,
    /// faster_hardware: speed-up of the other (memory-bound) kernels and memsets.
    #[arg(long, value_name = "X")]
    pub memory: Option<f64>,
    /// faster_hardware: speed-up of host work.
    #[arg(long, value_name = "X")]
    pub cpu: Option<f64>,
    /// faster_hardware: speed-up of copies.
    #[arg(long, value_name = "X")]
    pub copy: Option<f64>,
    /// recompute, offload, gist: the share of each step's activation bytes acted on.
    #[arg(long, value_name = "F")]
    pub fraction: Option<f64>,
    /// prefetch_inputs: how much slower the training process's host work runs beside the
    /// loader's worker processes (0.1 = 10 %, the default).
    #[arg(long, value_name = "C")]
    pub contention: Option<f64>,
    /// faster_hardware: the GPU to predict for (h100, h200, a100...; see `whatif --help`).
    #[arg(long, value_name = "GPU")]
    pub to: Option<String>,
    /// amp: fp16 (with a GradScaler, the default) or bf16 (no GradScaler).
    #[arg(long, value_name = "fp16|bf16")]
    pub dtype: Option<String>,
    /// prefetch_inputs: the DataLoader's worker processes (default 4).
    #[arg(long, value_name = "N")]
    pub workers: Option<f64>,
    /// prefetch_inputs: the host's CPU cores (unknown by default).
    #[arg(long, value_name = "N")]
    pub cores: Option<f64>,
    /// prefetch_inputs: the training process's intra-op threads (unknown by default).
    #[arg(long, value_name = "N")]
    pub threads: Option<f64>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Where the answer goes and in which format.
#[derive(Debug, ClapArgs)]
pub struct OutputArgs {
    /// Write JSON (a stable schema: see docs/json-schema.md) instead of text: `--format json`.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// The output's format (text by default; json as --json; csv: every table of the JSON
    /// document as a CSV file, into the directory -o DIR).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Write to FILE instead of stdout: replaced whole or not at all (a symlink's target; a
    /// device or pipe is written into; `-` is stdout); an input is never overwritten. For csv
    /// a directory: new, empty, or one stepcast wrote before.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub file: Option<PathBuf>,
}

impl OutputArgs {
    /// The format asked for: `--format`, else `--json`, else text.
    pub fn format(&self) -> Format {
        match (self.format, self.json) {
            (Some(format), _) => format,
            (None, true) => Format::Json,
            (None, false) => Format::Text,
        }
    }
}

/// The value parser of `--format` for a command that writes `accepted`: its help lists
/// those formats only, and any other is refused by name.
fn formats(accepted: &[Format]) -> impl clap::builder::TypedValueParser<Value = Format> {
    let values: Vec<PossibleValue> = accepted
        .iter()
        .filter_map(|format| format.to_possible_value())
        .collect();
    let accepted = accepted.to_vec();
    PossibleValuesParser::new(values).map(move |name| {
        accepted
            .iter()
            .copied()
            .find(|format| {
                format
                    .to_possible_value()
                    .is_some_and(|value| value.matches(&name, false))
            })
            .unwrap_or(Format::Text)
    })
}

/// An output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Tables and sentences for a terminal.
    Text,
    /// The command's JSON document.
    Json,
    /// One CSV file per table of the JSON document, into a directory.
    Csv,
    /// A compact Markdown digest.
    Md,
    /// A self-contained HTML page.
    Html,
}

#[derive(Debug, ClapArgs)]
pub struct ReportArgs {
    /// A trace (PyTorch profiler .json or .json.gz, rocprofv3 JSON, XPlane .xplane.pb, an
    /// Nsight Systems .sqlite export, a CTF directory); or a directory of one job's rank
    /// traces, or several trace files, for the ranks side by side.
    #[arg(value_name = "TRACE | DIR", required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    /// The what-if whose predicted timeline is drawn under the replay: a built-in model (as
    /// `whatif` takes it). Default: the change the answer names (`advise`'s best single change to
    /// the program).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// GPU counts of the data-parallel scaling curve (`whatif TRACE ddp --gpus`).
    #[arg(long, value_name = "N,N...", default_value = "1,2,4,8,16,32,64")]
    pub gpus: String,
    #[command(flatten)]
    pub peers: PeersArgs,
    #[command(flatten)]
    pub host: HostArgs,
    /// html (default): one self-contained page; md: a Markdown digest of analyze and advise;
    /// csv: every table of analyze and advise as a CSV file, into the directory -o DIR.
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "html")]
    pub format: Format,
    /// The file to write (a directory for csv: new, empty, or one stepcast wrote before),
    /// replaced whole or not at all, never an input; stdout if absent (html and md).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// A job: leave out the rank files that cannot be read (each listed with why) instead of
    /// refusing the job.
    #[arg(long)]
    pub skip_unreadable: bool,
}

#[derive(Debug, ClapArgs)]
pub struct ReduceArgs {
    /// The ranks' traces: trace files, or a directory of one job's rank traces.
    #[arg(value_name = "TRACE | DIR", required = true, num_args = 1..)]
    pub traces: Vec<PathBuf>,
    /// The directory to write the reduced ranks into (new, empty, or one `reduce` wrote
    /// before): `<trace file name>.stepcast-rank` per rank, all or none.
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    /// Reduce the traces that can be read and list the others with why, instead of writing
    /// nothing.
    #[arg(long)]
    pub skip_unreadable: bool,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Args;

    #[test]
    fn verify_app() {
        Args::command().debug_assert();
    }
}
