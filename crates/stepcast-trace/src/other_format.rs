//! Issue #14's formats told by content before the Kineto path: rocprofv3 JSON (plain or gzip)
//! and XPlane protobufs, and a protobuf that is not XPlane (refused by name). Kept apart from
//! `read_trace` so that it folds into a table of formats: each arm is a sniff of the file's
//! first bytes and a reader.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::error::ReadError;
use crate::model::Trace;
use crate::{GZIP_MAGIC, rocprof, xplane};

/// How many (uncompressed) bytes the sniffs look at.
const HEAD_BYTES: usize = 4096;

/// The format of a file's first bytes, if it is one of these.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Rocprof,
    XPlane,
    /// Protobuf wire format (or a stream of length-prefixed messages) that is not an XSpace.
    OtherProtobuf,
}

fn sniff(head: &[u8]) -> Option<Format> {
    if rocprof::looks_like(head) {
        Some(Format::Rocprof)
    } else if xplane::looks_like(head) {
        Some(Format::XPlane)
    } else if xplane::looks_like_protobuf(head) {
        Some(Format::OtherProtobuf)
    } else {
        None
    }
}

/// Reads `path` if it is one of these formats; `None` leaves it to the Kineto reader.
pub fn read_file(path: &Path) -> Result<Option<Trace>, ReadError> {
    let io = |cause| ReadError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut head = Vec::with_capacity(HEAD_BYTES);
    (&mut file)
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(io)?;
    let gzip = head.starts_with(&GZIP_MAGIC);
    let head = if gzip { gunzip_head(&head) } else { head };
    match sniff(&head) {
        None => Ok(None),
        Some(_) => {
            let bytes = std::fs::read(path).map_err(io)?;
            read_bytes(&bytes, path)
        }
    }
}

/// [`read_file`] for bytes already in memory.
pub fn read_bytes(bytes: &[u8], path: &Path) -> Result<Option<Trace>, ReadError> {
    let gzip = bytes.starts_with(&GZIP_MAGIC);
    let head = if gzip {
        gunzip_head(bytes)
    } else {
        bytes[..bytes.len().min(HEAD_BYTES)].to_vec()
    };
    let Some(format) = sniff(&head) else {
        return Ok(None);
    };
    let plain;
    let bytes = if gzip {
        plain = gunzip(bytes, path)?;
        &plain[..]
    } else {
        bytes
    };
    match format {
        Format::Rocprof => rocprof::read(bytes, path).map(Some),
        Format::XPlane => xplane::read(bytes, path).map(Some),
        Format::OtherProtobuf => Err(ReadError::NotXPlane {
            path: path.to_path_buf(),
            detail:
                "it is protobuf wire format, but not an XSpace (its first field is not a plane); \
                     stepcast reads the `*.xplane.pb` files the TensorFlow and JAX profilers write"
                    .to_string(),
        }),
    }
}

/// Up to [`HEAD_BYTES`] of the decompressed start of a gzip file (fewer if it is cut short).
fn gunzip_head(compressed: &[u8]) -> Vec<u8> {
    let mut head = Vec::with_capacity(HEAD_BYTES);
    let decoder = flate2::read::MultiGzDecoder::new(compressed);
    // A corrupt stream yields what came before the damage; the full read reports it.
    let _ = decoder.take(HEAD_BYTES as u64).read_to_end(&mut head);
    head
}

fn gunzip(compressed: &[u8], path: &Path) -> Result<Vec<u8>, ReadError> {
    let mut plain = Vec::new();
    flate2::read::MultiGzDecoder::new(compressed)
        .read_to_end(&mut plain)
        .map_err(|cause| ReadError::Gzip {
            path: path.to_path_buf(),
            cause,
        })?;
    Ok(plain)
}
