//! Common Trace Format (CTF 1.8 and CTF 2) traces: LTTng's output, and what barectf-based
//! converters write (the OTF2 → CTF re-encoding of Score-P traces).
//!
//! A CTF trace is a directory: a `metadata` stream (`tsdl.rs`: CTF 1.8 text or packets;
//! `json.rs`: CTF 2's JSON fragments) that describes the binary data stream files beside it
//! (`decode.rs`). An LTTng session directory holds several traces (`ust/uid/.../64-bit/`,
//! `kernel/`): every trace under the directory given is read, and their records merged by
//! time, as `babeltrace2 DIR` does. `semantics.rs` maps the records onto [`Trace`]: host
//! ranges, runtime calls, steps, MPI regions, and the kernel scheduler's switches and wakeups
//! as the off-CPU intervals of the traced threads (`docs/formats.md` has the table).

mod decode;
mod json;
mod metadata;
mod semantics;
mod tsdl;

use std::path::{Path, PathBuf};

use crate::error::ReadError;
use crate::model::Trace;

pub use decode::{Record, Val};

/// How deep an LTTng session directory nests its traces (`ust/uid/1000/64-bit/metadata`).
const MAX_DEPTH: usize = 6;

/// Whether `head`, the start of a metadata file, is CTF metadata of any version.
pub fn looks_like(head: &[u8]) -> bool {
    head.starts_with(b"/* CTF") || tsdl::is_packetized(head) || json::looks_like(head)
}

/// Whether `head` starts a CTF data stream: a packet header's magic number, `0xC1FC1FC1`, in
/// either byte order.
pub fn is_stream(head: &[u8]) -> bool {
    head.starts_with(&[0xC1, 0x1F, 0xFC, 0xC1]) || head.starts_with(&[0xC1, 0xFC, 0x1F, 0xC1])
}

/// The first `max` bytes of the first CTF metadata file under directory `dir`, if it holds
/// one: what format detection looks at for a directory.
pub fn directory_head(dir: &Path, max: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut dirs = Vec::new();
    trace_dirs(dir, 0, &mut dirs).ok()?;
    dirs.sort();
    let file = std::fs::File::open(dirs.first()?.join("metadata")).ok()?;
    let mut head = Vec::with_capacity(max);
    file.take(max as u64).read_to_end(&mut head).ok()?;
    Some(head)
}

/// One CTF trace of a directory, decoded.
pub struct DecodedTrace {
    /// The trace's directory.
    pub dir: PathBuf,
    /// `1.8` or `2`.
    pub version: String,
    /// The metadata's environment (`tracer_name`, `domain`, `hostname`...).
    pub env: std::collections::BTreeMap<String, String>,
    /// Its records, each stream file's in file order, stream files by name.
    pub records: Vec<Record>,
    /// Packets read, over all stream files.
    pub packets: u64,
    /// Records the tracer said it discarded (LTTng's ring buffer was full), summed over streams.
    pub discarded: u64,
    /// Bytes of its metadata and stream files.
    pub bytes: u64,
}

/// Every CTF trace under `path` (a trace directory, a session directory holding several, or a
/// trace's `metadata` file), decoded, sorted by directory.
pub fn decode(path: &Path) -> Result<Vec<DecodedTrace>, ReadError> {
    let root = if path.is_file() {
        path.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else {
        path.to_path_buf()
    };
    let mut dirs = Vec::new();
    trace_dirs(&root, 0, &mut dirs).map_err(|cause| ReadError::Io {
        path: root.clone(),
        cause,
    })?;
    dirs.sort();
    if dirs.is_empty() {
        return Err(ReadError::Ctf {
            path: root,
            detail: "no `metadata` file in it or its subdirectories".to_string(),
        });
    }
    dirs.iter().map(|dir| decode_trace(dir)).collect()
}

/// Reads the CTF trace(s) at `path` into one [`Trace`].
pub fn read(path: &Path) -> Result<Trace, ReadError> {
    let traces = decode(path)?;
    semantics::build(path, &traces)
}

fn trace_dirs(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if dir.join("metadata").is_file() {
        found.push(dir.to_path_buf());
        return Ok(());
    }
    if depth >= MAX_DEPTH {
        return Ok(());
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            trace_dirs(&entry.path(), depth + 1, found)?;
        }
    }
    Ok(())
}

fn decode_trace(dir: &Path) -> Result<DecodedTrace, ReadError> {
    let metadata_path = dir.join("metadata");
    let bytes = std::fs::read(&metadata_path).map_err(|cause| ReadError::Io {
        path: metadata_path.clone(),
        cause,
    })?;
    let refuse = |detail: String| ReadError::Ctf {
        path: metadata_path.clone(),
        detail,
    };
    let class = if json::looks_like(&bytes) {
        json::parse(&bytes).map_err(refuse)?
    } else if tsdl::is_packetized(&bytes) {
        tsdl::parse(&tsdl::unpacketize(&bytes).map_err(refuse)?).map_err(refuse)?
    } else if bytes.starts_with(b"/* CTF 1.8") {
        tsdl::parse(&String::from_utf8_lossy(&bytes)).map_err(refuse)?
    } else {
        return Err(refuse(
            "it is not CTF metadata (neither `/* CTF 1.8` text, metadata packets, nor CTF 2 JSON)"
                .to_string(),
        ));
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|cause| ReadError::Io {
            path: dir.to_path_buf(),
            cause,
        })?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            p.is_file() && name != "metadata" && !name.starts_with('.')
        })
        .collect();
    files.sort();
    let mut decoded = DecodedTrace {
        dir: dir.to_path_buf(),
        version: class.version.clone(),
        env: class.env.clone(),
        records: Vec::new(),
        packets: 0,
        discarded: 0,
        bytes: bytes.len() as u64,
    };
    for file in files {
        let bytes = std::fs::read(&file).map_err(|cause| ReadError::Io {
            path: file.clone(),
            cause,
        })?;
        if bytes.is_empty() {
            continue;
        }
        decoded.bytes += bytes.len() as u64;
        let stats = decode::decode_stream(&class, &bytes, &mut decoded.records)
            .map_err(|detail| ReadError::Ctf { path: file, detail })?;
        decoded.packets += stats.packets;
        decoded.discarded += stats.discarded;
    }
    Ok(decoded)
}
