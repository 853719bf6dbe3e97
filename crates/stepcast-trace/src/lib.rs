//! Profiler trace files → [`Trace`], stepcast's normalized event model.
//!
//! One module per input format (`kineto/`, `nsys/`, `rocprof/`, `xplane/`), each a row of the
//! detection table ([`detect::FORMATS`]); each turns its file into the same [`Trace`]. This crate knows nothing of graphs or replay. A readable file with odd
//! records yields a trace plus counted [`Diagnostics`]; only an unreadable file is an error
//! ([`ReadError`]).

mod archive;
mod assemble;
pub mod byteps;
mod chrome;
pub mod ctf;
pub mod detect;
mod error;
pub mod execution_trace;
pub mod horovod;
pub mod kineto;
mod model;
pub mod mxnet;
pub mod nsys;
mod rocprof;
pub mod tf_timeline;
mod xplane;

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

pub use assemble::STEP_RANGE_MATCHED_NONE;
pub use error::ReadError;
pub use execution_trace::{
    EtNode, EtTensor, ExecutionTrace, is_execution_trace, read_execution_trace,
};
pub use model::*;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// What a reader is told beyond the file. `Default` reads every format as it is.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Steps are the ranges whose name this matches, numbered from 0 in start order, instead of
    /// the format's own step markers: NVTX ranges (Nsight Systems), ROCTx ranges (rocprofv3),
    /// host events (XPlane). A Kineto trace has its `ProfilerStep#N`.
    pub step_range: Option<regex::Regex>,
    /// A communication library's timeline of the same process (Horovod's `HOROVOD_TIMELINE`,
    /// written by rank 0; BytePS's `comm.json`) to join with the trace: its per-tensor stages
    /// become tasks, linked to the gradients they carry and the ops that read them
    /// (`horovod::join`, `byteps::join`).
    pub comm_timeline: Option<std::path::PathBuf>,
}

/// Reads a trace file, of any format stepcast reads, told by content (never by name: see
/// [`detect`]). A file holding several processes (an Nsight Systems capture of a multi-GPU
/// job) gives its first process with device work; [`read_processes`] gives them all.
pub fn read_trace(path: &Path) -> Result<Trace, ReadError> {
    read_trace_with(path, &ReadOptions::default())
}

/// [`read_trace`] with options.
pub fn read_trace_with(path: &Path, options: &ReadOptions) -> Result<Trace, ReadError> {
    let mut traces = read_processes(path, options)?;
    let others = traces.len().saturating_sub(1);
    let mut first = traces.swap_remove(0);
    if others > 0 {
        first.diagnostics.note(format!(
            "the file holds {} processes with device work; this is the first (pid {}); the \
             others are read as ranks by `replay` given the file",
            others + 1,
            first.process_id.unwrap_or(-1)
        ));
    }
    Ok(first)
}

/// Every process (rank) of a trace file, in order; never empty.
pub fn read_processes(path: &Path, options: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    let source = detect::open(path)?;
    let mut traces = detect::read_source(&source, options)?;
    if let (Some(timeline), false) = (&options.comm_timeline, traces.is_empty()) {
        let framework = traces.remove(0);
        traces.insert(0, join_comm_timeline(framework, timeline)?);
    }
    if traces.is_empty() {
        // A reader's contract is to refuse a file without events; this keeps `read_trace`
        // from presenting nothing as a trace if one does not.
        return Err(ReadError::NoEvents {
            path: path.to_path_buf(),
        });
    }
    Ok(traces)
}

/// `framework` joined with the communication timeline at `timeline`: a Horovod timeline
/// (`horovod::join`) or a BytePS `comm.json` (`byteps::join`).
fn join_comm_timeline(framework: Trace, timeline: &Path) -> Result<Trace, ReadError> {
    let source = detect::open(timeline)?;
    let horovod = horovod::looks_like(&source.head);
    if !horovod && !byteps::looks_like(&source.head) {
        return Err(ReadError::NotATrace {
            path: timeline.to_path_buf(),
            detail: "it is neither a Horovod timeline nor a BytePS communication trace \
                     (`comm.json`), the communication timelines stepcast joins"
                .to_string(),
        });
    }
    let comm = if horovod {
        horovod::read(&source.content()?, timeline)?
    } else {
        byteps::read(&source.content()?, timeline)?
    };
    // One clock: the timeline's window must meet the trace's, or it is another run's (or a
    // Horovod < 0.21 timeline, whose times are not on the epoch).
    let span = |t: &Trace| {
        let end = t.events.iter().map(|e| e.end_ns()).max().unwrap_or(0);
        (t.origin_ns, t.origin_ns.saturating_add(end))
    };
    let ((a0, a1), (b0, b1)) = (span(&framework), span(&comm));
    if a0 > b1 || b0 > a1 {
        return Err(ReadError::NotATrace {
            path: timeline.to_path_buf(),
            detail: if horovod {
                "its times do not overlap the trace's: not the same run, or a timeline \
                 without `start_time_since_epoch_in_micros` (Horovod < 0.21)"
            } else {
                "its times do not overlap the trace's: not the same run"
            }
            .to_string(),
        });
    }
    Ok(if horovod {
        horovod::join::join(framework, comm).0
    } else {
        byteps::join::join(framework, comm).0
    })
}

/// Reads a Kineto (Chrome-trace JSON) file or bytes in memory, plain or gzip-compressed;
/// `step_range` replaces its `ProfilerStep#N` markers ([`ReadOptions::step_range`]).
fn read_kineto(
    source: &detect::Source<'_>,
    step_range: Option<&regex::Regex>,
) -> Result<Trace, ReadError> {
    let path = source.path;
    if let Some(bytes) = source.bytes {
        return read_kineto_bytes(bytes, path, step_range);
    }
    let io = |cause| ReadError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let mut file = File::open(path).map_err(io)?;
    let gzip = source.gzip;
    // The file again from its start, for the line of an error.
    let reread: kineto::Reread<'_> = Box::new(move || {
        let file = File::open(path)?;
        Ok(if gzip {
            Box::new(flate2::read::MultiGzDecoder::new(BufReader::new(file)))
        } else {
            Box::new(BufReader::new(file))
        })
    });
    if gzip {
        // Only a hint: a file that cannot seek (or a short read) just goes without it.
        let expected = gzip_isize(&mut file, source.len).ok().flatten();
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let decoder = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, file));
        kineto::read_rereadable(decoder, path, true, expected, reread, step_range)
    } else {
        kineto::read_rereadable(file, path, false, Some(source.len), reread, step_range)
    }
}

/// The uncompressed size a gzip file declares in its trailer (the file is left anywhere).
fn gzip_isize(file: &mut File, len: u64) -> std::io::Result<Option<u64>> {
    // A header (10 bytes) and a trailer (8 bytes) at least.
    if len < 18 {
        return Ok(None);
    }
    file.seek(SeekFrom::End(-4))?;
    let mut trailer = [0u8; 4];
    file.read_exact(&mut trailer)?;
    Ok(isize_hint(trailer, len))
}

/// A gzip trailer's size field as a hint: it is the last member's size modulo 4 GiB, and
/// garbage in a truncated file, so it is capped at a compression ratio JSON traces do not
/// exceed (they compress 10 to 20 times).
fn isize_hint(trailer: [u8; 4], compressed_len: u64) -> Option<u64> {
    const MAX_RATIO: u64 = 64;
    Some((u32::from_le_bytes(trailer) as u64).min(compressed_len.saturating_mul(MAX_RATIO)))
}

/// Reads a trace from bytes already in memory (any format [`read_trace`] reads, but an
/// Nsight Systems export, which is read from a file). `path` names the source in messages.
/// Bytes of no known format go to the Kineto reader, which says what they start with.
pub fn read_trace_bytes(bytes: &[u8], path: &Path) -> Result<Trace, ReadError> {
    if bytes.is_empty() {
        return Err(ReadError::Empty {
            path: path.to_path_buf(),
        });
    }
    let source = detect::Source::in_memory(bytes, path);
    if detect::detect(&source.head).is_none() {
        return read_kineto_bytes(bytes, path, None);
    }
    // A memory source holds one process: rocprofv3 and XPlane readers give one trace.
    let mut traces = detect::read_source(&source, &ReadOptions::default())?;
    if traces.is_empty() {
        return Err(ReadError::NoEvents {
            path: path.to_path_buf(),
        });
    }
    Ok(traces.swap_remove(0))
}

/// The Kineto reader over bytes in memory, plain or gzip-compressed.
fn read_kineto_bytes(
    bytes: &[u8],
    path: &Path,
    step_range: Option<&regex::Regex>,
) -> Result<Trace, ReadError> {
    if bytes.starts_with(&GZIP_MAGIC) {
        let expected = bytes
            .len()
            .checked_sub(4)
            .filter(|_| bytes.len() >= 18)
            .and_then(|at| bytes.get(at..))
            .and_then(|trailer| <[u8; 4]>::try_from(trailer).ok())
            .and_then(|trailer| isize_hint(trailer, bytes.len() as u64));
        let reread: kineto::Reread<'_> =
            Box::new(move || Ok(Box::new(flate2::read::MultiGzDecoder::new(bytes))));
        kineto::read_rereadable(
            flate2::read::MultiGzDecoder::new(bytes),
            path,
            true,
            expected,
            reread,
            step_range,
        )
    } else {
        let reread: kineto::Reread<'_> = Box::new(move || Ok(Box::new(bytes)));
        kineto::read_rereadable(
            bytes,
            path,
            false,
            Some(bytes.len() as u64),
            reread,
            step_range,
        )
    }
}

/// Whether directory `path` is itself one trace (a CTF trace, or an LTTng session directory of
/// them) rather than a directory of trace files, one per rank.
pub fn is_trace_dir(path: &Path) -> bool {
    path.is_dir()
        && ctf::directory_head(path, detect::HEAD_BYTES).is_some_and(|head| ctf::looks_like(&head))
}

/// The trace files of directory `dir`: its `.json`, `.json.gz` and `.sqlite` files, sorted by
/// name (one trace per rank of a job; an Nsight Systems export may hold several).
pub fn trace_files_in(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    found.retain(|p| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        p.is_file()
            && (name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".sqlite"))
    });
    found.sort();
    Ok(found)
}
