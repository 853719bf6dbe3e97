//! Profiler trace files → [`Trace`], stepcast's normalized event model.
//!
//! One module per input format (`kineto/`, `rocprof/`, `xplane/`); each turns its file into the
//! same [`Trace`]. This crate knows nothing of graphs or replay. A readable file with odd
//! records yields a trace plus counted [`Diagnostics`]; only an unreadable file is an error
//! ([`ReadError`]).

mod assemble;
mod error;
mod json_stream;
pub mod kineto;
mod model;
mod other_format;
mod rocprof;
mod xplane;

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

pub use error::ReadError;
pub use model::*;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Reads a trace file, its format told by content, not name: Kineto JSON (plain or gzip),
/// rocprofv3 JSON (plain or gzip), an XPlane protobuf.
pub fn read_trace(path: &Path) -> Result<Trace, ReadError> {
    let io = |cause| ReadError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if metadata.is_dir() {
        return Err(ReadError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    if metadata.len() == 0 {
        return Err(ReadError::Empty {
            path: path.to_path_buf(),
        });
    }
    if let Some(trace) = other_format::read_file(path)? {
        return Ok(trace);
    }
    let mut file = File::open(path).map_err(io)?;
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(io)?;
    if n == 2 && magic == GZIP_MAGIC {
        // Only a hint: a file that cannot seek (or a short read) just goes without it.
        let expected = gzip_isize(&mut file, metadata.len()).ok().flatten();
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let decoder = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, file));
        kineto::read_sized(decoder, path, true, expected)
    } else {
        let head = std::io::Cursor::new(magic[..n].to_vec()).chain(file);
        kineto::read_sized(head, path, false, Some(metadata.len()))
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

/// Reads a trace from bytes already in memory (any format [`read_trace`] reads).
/// `path` names the source in messages.
pub fn read_trace_bytes(bytes: &[u8], path: &Path) -> Result<Trace, ReadError> {
    if bytes.is_empty() {
        return Err(ReadError::Empty {
            path: path.to_path_buf(),
        });
    }
    if let Some(trace) = other_format::read_bytes(bytes, path)? {
        return Ok(trace);
    }
    if bytes.starts_with(&GZIP_MAGIC) {
        let expected = bytes
            .len()
            .checked_sub(4)
            .filter(|_| bytes.len() >= 18)
            .and_then(|at| bytes.get(at..))
            .and_then(|trailer| <[u8; 4]>::try_from(trailer).ok())
            .and_then(|trailer| isize_hint(trailer, bytes.len() as u64));
        kineto::read_sized(
            flate2::read::MultiGzDecoder::new(bytes),
            path,
            true,
            expected,
        )
    } else {
        kineto::read_sized(bytes, path, false, Some(bytes.len() as u64))
    }
}

/// The trace files of directory `dir`: its `.json` and `.json.gz` files, sorted by name (one
/// trace per rank of a job).
pub fn trace_files_in(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut found: Vec<std::path::PathBuf> = std::fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    found.retain(|p| {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        p.is_file() && (name.ends_with(".json") || name.ends_with(".json.gz"))
    });
    found.sort();
    Ok(found)
}
