//! Why a trace could not be read. Every message names the file and what is wrong with it.

use std::path::PathBuf;

/// A fatal problem with an input file. Recoverable oddities inside a readable trace are not
/// errors: they are counted in [`crate::Diagnostics`].
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },

    #[error("{path} is a directory, not a trace file: {looks_like}")]
    IsDirectory { path: PathBuf, looks_like: String },

    #[error("{path} is a {format}, which stepcast does not read: {hint}")]
    NotRead {
        path: PathBuf,
        format: &'static str,
        hint: &'static str,
    },

    #[error(
        "{path} is not a trace format stepcast knows: it starts with {found}{}; stepcast reads \
         PyTorch profiler (Kineto) JSON (.json, .json.gz), rocprofv3 JSON, TensorFlow/JAX \
         XPlane protobufs (.xplane.pb), Nsight Systems SQLite exports (nsys export --type \
         sqlite) and CTF (LTTng) trace directories",
        if *gzip { " once decompressed" } else { "" }
    )]
    UnknownFormat {
        path: PathBuf,
        found: String,
        gzip: bool,
    },

    #[error("{path}: cannot read it as SQLite: {cause} (is it truncated or corrupt?)")]
    Sqlite { path: PathBuf, cause: String },

    #[error("{path} is a SQLite database but not an Nsight Systems export: {detail}")]
    NotNsys { path: PathBuf, detail: String },

    #[error(
        "{path} is an Nsight Systems export without CUDA trace: {detail}; profile with \
         `nsys profile --trace=cuda,nvtx` to record kernels and the calls that launch them"
    )]
    NoCudaTrace { path: PathBuf, detail: String },

    #[error("{path} is empty")]
    Empty { path: PathBuf },

    #[error("{path}: the gzip stream is corrupt or truncated ({cause})")]
    Gzip {
        path: PathBuf,
        cause: std::io::Error,
    },

    #[error("{path} is not JSON: it starts with {found} (is it a binary or {format} file?)")]
    NotJson {
        path: PathBuf,
        found: String,
        format: &'static str,
    },

    #[error("{path} is truncated: the file ends inside {context} (byte {offset})")]
    Truncated {
        path: PathBuf,
        context: String,
        offset: u64,
    },

    #[error("{path}:{line}:{column}: invalid JSON in {context}: {message}")]
    Json {
        path: PathBuf,
        line: u64,
        column: u64,
        context: String,
        message: String,
    },

    #[error(
        "{path} is a PyTorch Execution Trace (schema {schema}), not a Kineto trace; \
         stepcast reads the Chrome-trace JSON written by torch.profiler (export_chrome_trace \
         or tensorboard_trace_handler), and an Execution Trace beside the Kineto trace of the \
         same run (--et FILE)"
    )]
    ExecutionTrace { path: PathBuf, schema: String },

    #[error("{path} is not a PyTorch Execution Trace: {detail}")]
    NotAnExecutionTrace { path: PathBuf, detail: String },

    #[error("{path} is valid JSON but not a profiler trace: {detail}")]
    NotATrace { path: PathBuf, detail: String },

    #[error("{path} holds no events: its `traceEvents` array is empty")]
    NoEvents { path: PathBuf },

    #[error(
        "{path}: none of its {records} records is an event stepcast understands ({skipped}); {looks_like}"
    )]
    NothingUnderstood {
        path: PathBuf,
        records: u64,
        /// The most common reasons its records were skipped, with their counts.
        skipped: String,
        /// What the file seems to be instead.
        looks_like: String,
    },

    #[error(
        "{path}: its events span {days} days, longer than any profiled window: a timestamp is absurd"
    )]
    AbsurdSpan { path: PathBuf, days: i64 },

    #[error("{path}: cannot read it as a CTF trace: {detail}")]
    Ctf { path: PathBuf, detail: String },

    #[error(
        "{path} is one stream file of a CTF (LTTng) trace: give the trace's directory{directory}"
    )]
    CtfStream { path: PathBuf, directory: String },

    #[error(
        "{path} is a {kind} holding {holds}: stepcast reads traces, not archives; extract it \
         ({extract}) and give {give}"
    )]
    Archive {
        path: PathBuf,
        kind: &'static str,
        holds: String,
        extract: &'static str,
        give: &'static str,
    },

    #[error(
        "{path} is an Nsight Systems export without its {table} table, while \
         CUPTI_ACTIVITY_KIND_RUNTIME records {calls} {what}: export the report again with \
         every table (nsys export --type sqlite)"
    )]
    NsysTableMissing {
        path: PathBuf,
        table: &'static str,
        calls: u64,
        what: &'static str,
    },

    #[error("{path} is not an XPlane (TensorFlow/JAX profiler protobuf): {detail}")]
    NotXPlane { path: PathBuf, detail: String },
}
