//! What format a trace file is, told by its content, never by its name.
//!
//! [`FORMATS`] is one table: a row per format, in the order they are tried, each with the test
//! that recognizes the start of a file and the reader that reads it (`None`: a format stepcast
//! knows but does not read yet, refused with an error naming it). A new reader is a new module
//! and a new row here. Gzip is not a format but a wrapper: the rows are tried on what it holds.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use crate::error::ReadError;
use crate::model::Trace;
use crate::{ReadOptions, nsys};

/// How many bytes of a file's (decompressed) content the tests look at. Enough for a Kineto
/// header's `deviceProperties` to be passed over before `traceEvents`; no test needs more.
pub const HEAD_BYTES: usize = 4096;

/// A file to read: where it is, and what its start looks like.
pub struct Source<'p> {
    pub path: &'p Path,
    /// The first [`HEAD_BYTES`] of the content, decompressed when `gzip`.
    pub head: Vec<u8>,
    /// The file is gzip-compressed.
    pub gzip: bool,
    /// The file's size on disk.
    pub len: u64,
}

/// Reads every process (rank) a file holds, in the order its format keeps them.
pub type Reader = fn(&Source<'_>, &ReadOptions) -> Result<Vec<Trace>, ReadError>;

/// One format stepcast recognizes.
pub struct Format {
    /// What a user calls it, as error messages and `info` name it.
    pub name: &'static str,
    /// Whether the start of a (decompressed) file is this format.
    pub matches: fn(&[u8]) -> bool,
    /// Its reader; `None` for a format recognized but not read yet.
    pub read: Option<Reader>,
    /// What to do instead, for a format not read.
    pub hint: &'static str,
}

/// The name of the Kineto row: the JSON fallback.
pub const KINETO: &str = "PyTorch profiler (Kineto) Chrome-trace JSON";

/// Every format, in the order tried: binary signatures first, the JSON fallback last.
pub const FORMATS: &[Format] = &[
    Format {
        name: "Nsight Systems SQLite export",
        matches: is_sqlite,
        read: Some(nsys::read_source),
        hint: "",
    },
    Format {
        name: "zstd-compressed file",
        matches: is_zstd,
        read: None,
        hint: "decompress it first (zstd -d FILE)",
    },
    Format {
        name: "TensorFlow/JAX profiler XPlane protobuf (.xplane.pb)",
        matches: is_xplane,
        read: None,
        hint: "its reader is planned (issue #14)",
    },
    Format {
        name: "rocprofv3 JSON",
        matches: is_rocprofv3_json,
        read: None,
        hint: "its reader is planned (issue #14)",
    },
    Format {
        name: KINETO,
        matches: is_json,
        read: Some(read_kineto),
        hint: "",
    },
];

/// The format of `head`, the start of a (decompressed) file.
pub fn detect(head: &[u8]) -> Option<&'static Format> {
    FORMATS.iter().find(|format| (format.matches)(head))
}

/// Opens `path` and reads its head, decompressing a gzip file's.
pub fn open(path: &Path) -> Result<Source<'_>, ReadError> {
    let io = |cause| ReadError::Io {
        path: path.to_path_buf(),
        cause,
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if metadata.is_dir() {
        return Err(ReadError::IsDirectory {
            path: path.to_path_buf(),
            looks_like: directory_clue(path),
        });
    }
    if metadata.len() == 0 {
        return Err(ReadError::Empty {
            path: path.to_path_buf(),
        });
    }
    let mut file = File::open(path).map_err(io)?;
    let mut raw = Vec::with_capacity(HEAD_BYTES);
    (&mut file)
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut raw)
        .map_err(io)?;
    let gzip = raw.starts_with(&crate::GZIP_MAGIC);
    let head = if gzip {
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        let mut head = Vec::with_capacity(HEAD_BYTES);
        let decoder = flate2::read::MultiGzDecoder::new(BufReader::new(file));
        // A corrupt stream shows its error when the reader reads it whole; the head is what
        // came out before it.
        let _ = decoder.take(HEAD_BYTES as u64).read_to_end(&mut head);
        head
    } else {
        raw
    };
    Ok(Source {
        path,
        head,
        gzip,
        len: metadata.len(),
    })
}

/// Reads the file `source` with the reader of its format, or refuses it naming the format.
pub fn read_source(source: &Source<'_>, options: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    match detect(&source.head) {
        Some(Format {
            read: Some(read), ..
        }) => read(source, options),
        Some(format) => Err(ReadError::NotRead {
            path: source.path.to_path_buf(),
            format: format.name,
            hint: format.hint,
        }),
        None => Err(ReadError::UnknownFormat {
            path: source.path.to_path_buf(),
            found: show_head(&source.head),
            gzip: source.gzip,
        }),
    }
}

/// The first bytes of an unknown file, as a message shows them.
fn show_head(head: &[u8]) -> String {
    let start = &head[..head.len().min(8)];
    if start.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        format!("\"{}\"", String::from_utf8_lossy(start))
    } else {
        let hex: Vec<String> = start.iter().map(|b| format!("{b:02x}")).collect();
        format!("bytes {}", hex.join(" "))
    }
}

/// What a directory given as a trace seems to hold, for its error.
fn directory_clue(path: &Path) -> String {
    if path.join("metadata").is_file() {
        "it looks like a Common Trace Format (CTF/LTTng) trace, which stepcast does not read"
            .to_string()
    } else {
        "give a trace file: a PyTorch profiler .json or .json.gz, or an Nsight Systems .sqlite \
         export"
            .to_string()
    }
}

fn read_kineto(source: &Source<'_>, options: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    let mut trace = crate::read_kineto_file(source)?;
    if let Some(pattern) = &options.step_range {
        // Said, not ignored silently: a Kineto trace's steps are its ProfilerStep#N markers.
        trace.diagnostics.note(format!(
            "the step-range pattern `{}` is not applied to a Kineto trace: its steps are its \
             ProfilerStep#N markers",
            pattern.as_str()
        ));
    }
    Ok(vec![trace])
}

/// SQLite's 16-byte file header.
fn is_sqlite(head: &[u8]) -> bool {
    head.starts_with(b"SQLite format 3\0")
}

fn is_zstd(head: &[u8]) -> bool {
    head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
}

/// An `XSpace` message: its first field is a plane (field 1, length-delimited), whose name
/// (field 2, after an optional id, field 1) starts with `/` (`/host:CPU`, `/device:GPU:0`).
fn is_xplane(head: &[u8]) -> bool {
    let Some(rest) = head.strip_prefix(&[0x0a]) else {
        return false;
    };
    let Some((_, mut rest)) = varint(rest) else {
        return false;
    };
    if let Some(after_tag) = rest.strip_prefix(&[0x08]) {
        match varint(after_tag) {
            Some((_, after_id)) => rest = after_id,
            None => return false,
        }
    }
    let Some(rest) = rest.strip_prefix(&[0x12]) else {
        return false;
    };
    matches!(varint(rest), Some((len, name)) if len > 0 && name.first() == Some(&b'/'))
}

/// A protobuf varint at the start of `bytes`, and what follows it.
fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

/// The JSON rocprofv3 writes (`--output-format json`): one top-level member,
/// `rocprofiler-sdk-tool`.
fn is_rocprofv3_json(head: &[u8]) -> bool {
    let text = trim_start(head);
    text.starts_with(b"{") && trim_start(&text[1..]).starts_with(b"\"rocprofiler-sdk-tool\"")
}

/// JSON (an object or an array, after an optional UTF-8 byte-order mark): the Kineto reader
/// tells a Chrome trace from other JSON and names what it finds instead.
fn is_json(head: &[u8]) -> bool {
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    matches!(trim_start(text).first(), Some(b'{' | b'['))
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
    &bytes[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(head: &[u8]) -> Option<&'static str> {
        detect(head).map(|format| format.name)
    }

    #[test]
    fn each_signature_picks_its_format() {
        assert_eq!(
            name(b"SQLite format 3\0rest"),
            Some("Nsight Systems SQLite export")
        );
        assert_eq!(
            name(b"  {\"rocprofiler-sdk-tool\":[{}]}"),
            Some("rocprofv3 JSON")
        );
        assert_eq!(name(b"{\"traceEvents\":[]}"), Some(KINETO));
        assert_eq!(
            name(b"\n\x20\x12\x09/host:CPU"),
            Some("TensorFlow/JAX profiler XPlane protobuf (.xplane.pb)")
        );
        assert_eq!(
            name(b"\n\x20\x08\x01\x12\x0d/device:GPU:0"),
            Some("TensorFlow/JAX profiler XPlane protobuf (.xplane.pb)")
        );
        assert_eq!(
            name(&[0x28, 0xb5, 0x2f, 0xfd, 0]),
            Some("zstd-compressed file")
        );
        assert_eq!(name(b"\n\x20\x12\x09host:CPU"), None);
        assert_eq!(name(b"PK\x03\x04"), None);
        assert_eq!(name(b""), None);
    }
}
