//! Profiler trace files → [`Trace`], stepcast's normalized event model.
//!
//! One module per input format; each turns its file into the same [`Trace`]. This crate knows
//! nothing of graphs or replay. A readable file with odd records yields a trace plus counted
//! [`Diagnostics`]; only an unreadable file is an error ([`ReadError`]).

mod error;
mod json_stream;
pub mod kineto;
mod model;

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

pub use error::ReadError;
pub use model::*;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Reads a trace file (`.json` or gzip-compressed JSON, detected by content, not name).
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
    let mut file = File::open(path).map_err(io)?;
    let mut magic = [0u8; 2];
    let n = file.read(&mut magic).map_err(io)?;
    let head = std::io::Cursor::new(magic[..n].to_vec()).chain(file);
    if n == 2 && magic == GZIP_MAGIC {
        let decoder = flate2::read::MultiGzDecoder::new(BufReader::with_capacity(1 << 16, head));
        kineto::read(decoder, path, true)
    } else {
        kineto::read(head, path, false)
    }
}

/// Reads a trace from bytes already in memory (JSON or gzip-compressed JSON).
/// `path` names the source in messages.
pub fn read_trace_bytes(bytes: &[u8], path: &Path) -> Result<Trace, ReadError> {
    if bytes.is_empty() {
        return Err(ReadError::Empty {
            path: path.to_path_buf(),
        });
    }
    if bytes.starts_with(&GZIP_MAGIC) {
        kineto::read(flate2::read::MultiGzDecoder::new(bytes), path, true)
    } else {
        kineto::read(bytes, path, false)
    }
}
