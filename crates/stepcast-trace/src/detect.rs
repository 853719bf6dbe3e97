//! What format a trace file is, told by its content, never by its name.
//!
//! [`FORMATS`] is one table: a row per format, in the order they are tried, each with the test
//! that recognizes the start of a file and the reader that reads it (`None`: a format stepcast
//! knows but does not read yet, refused with an error naming it). A new reader is a new module
//! and a new row here. Gzip is not a format but a wrapper: the rows are tried on what it holds.
//! A file is read from disk ([`open`]) or from memory ([`Source::in_memory`]); the same table
//! serves both, and a reader that needs a file (SQLite) says so.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use crate::error::ReadError;
use crate::model::Trace;
use crate::{ReadOptions, ctf, nsys, rocprof, xplane};

/// How many bytes of a file's (decompressed) content the tests look at. Enough for a Kineto
/// header's `deviceProperties` to be passed over before `traceEvents`; no test needs more.
pub const HEAD_BYTES: usize = 4096;

/// A file to read: where it is, and what its start looks like.
pub struct Source<'p> {
    /// The file, or the name that messages give to bytes read from memory.
    pub path: &'p Path,
    /// The first [`HEAD_BYTES`] of the content, decompressed when `gzip`.
    pub head: Vec<u8>,
    /// The file is gzip-compressed.
    pub gzip: bool,
    /// The file's size on disk (or in memory).
    pub len: u64,
    /// The content as given (still compressed when `gzip`) when it is read from memory;
    /// `None` for a file on disk.
    pub bytes: Option<&'p [u8]>,
}

impl<'p> Source<'p> {
    /// Bytes already in memory; `path` names them in messages.
    pub fn in_memory(bytes: &'p [u8], path: &'p Path) -> Self {
        let gzip = bytes.starts_with(&crate::GZIP_MAGIC);
        let mut head = Vec::with_capacity(HEAD_BYTES);
        if gzip {
            let decoder = flate2::read::MultiGzDecoder::new(bytes);
            // As for a file: the reader reports a corrupt stream when it reads it whole.
            let _ = decoder.take(HEAD_BYTES as u64).read_to_end(&mut head);
        } else {
            head.extend_from_slice(&bytes[..bytes.len().min(HEAD_BYTES)]);
        }
        Source {
            path,
            head,
            gzip,
            len: bytes.len() as u64,
            bytes: Some(bytes),
        }
    }

    /// The whole content, decompressed, for the readers that parse a document at once
    /// (rocprofv3 JSON, XPlane).
    pub fn content(&self) -> Result<Cow<'p, [u8]>, ReadError> {
        let read = match self.bytes {
            Some(bytes) => Cow::Borrowed(bytes),
            None => Cow::Owned(std::fs::read(self.path).map_err(|cause| ReadError::Io {
                path: self.path.to_path_buf(),
                cause,
            })?),
        };
        if !self.gzip {
            return Ok(read);
        }
        let mut plain = Vec::new();
        flate2::read::MultiGzDecoder::new(&read[..])
            .read_to_end(&mut plain)
            .map_err(|cause| ReadError::Gzip {
                path: self.path.to_path_buf(),
                cause,
            })?;
        Ok(Cow::Owned(plain))
    }
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

/// The name of the XPlane row.
pub const XPLANE: &str = "TensorFlow/JAX profiler XPlane protobuf (.xplane.pb)";

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
        name: "tar archive",
        matches: crate::archive::is_tar,
        read: Some(crate::archive::refuse),
        hint: "",
    },
    Format {
        name: "zip archive",
        matches: crate::archive::is_zip,
        read: Some(crate::archive::refuse),
        hint: "",
    },
    Format {
        name: XPLANE,
        matches: xplane::looks_like,
        read: Some(read_xplane),
        hint: "",
    },
    Format {
        // Protobuf wire format of another schema (a Chakra execution trace, a delimited
        // stream): refused as not an XPlane, the only protobuf stepcast reads.
        name: "protobuf file",
        matches: xplane::looks_like_protobuf,
        read: Some(refuse_protobuf),
        hint: "",
    },
    Format {
        // A data stream of a CTF trace, given instead of its directory.
        name: "CTF stream file",
        matches: ctf::is_stream,
        read: Some(refuse_ctf_stream),
        hint: "",
    },
    Format {
        // A directory holding a `metadata` file (its head is the metadata's), or the file.
        name: "Common Trace Format (CTF/LTTng) trace",
        matches: ctf::looks_like,
        read: Some(read_ctf),
        hint: "",
    },
    Format {
        name: "rocprofv3 JSON",
        matches: rocprof::looks_like,
        read: Some(read_rocprof),
        hint: "",
    },
    Format {
        name: "Horovod timeline",
        matches: crate::horovod::looks_like,
        read: Some(crate::horovod::read_source),
        hint: "",
    },
    Format {
        name: "BytePS communication trace",
        matches: crate::byteps::looks_like,
        read: Some(crate::byteps::read_source),
        hint: "",
    },
    Format {
        name: "MXNet profiler JSON",
        matches: crate::mxnet::looks_like,
        read: Some(crate::mxnet::read_source),
        hint: "",
    },
    Format {
        name: "TensorFlow 1 Timeline",
        matches: crate::tf_timeline::looks_like,
        read: Some(crate::tf_timeline::read_source),
        hint: "",
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
        // A CTF trace is a directory: it is told by its metadata file's head.
        if let Some(head) =
            ctf::directory_head(path, HEAD_BYTES).filter(|head| ctf::looks_like(head))
        {
            return Ok(Source {
                path,
                head,
                gzip: false,
                len: 0,
                bytes: None,
            });
        }
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
        bytes: None,
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
        "its `metadata` file is not CTF metadata".to_string()
    } else {
        "give a trace file: a PyTorch profiler .json or .json.gz, a rocprofv3 .json, an XPlane \
         .xplane.pb, an Nsight Systems .sqlite export, or a CTF (LTTng) trace directory"
            .to_string()
    }
}

fn read_kineto(source: &Source<'_>, options: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    Ok(vec![crate::read_kineto(
        source,
        options.step_range.as_ref(),
    )?])
}

fn read_rocprof(source: &Source<'_>, options: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    Ok(vec![rocprof::read(
        &source.content()?,
        source.path,
        options,
    )?])
}

fn read_xplane(source: &Source<'_>, options: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    Ok(vec![xplane::read(
        &source.content()?,
        source.path,
        options,
    )?])
}

fn read_ctf(source: &Source<'_>, options: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    if source.bytes.is_some() {
        return Err(ReadError::Ctf {
            path: source.path.to_path_buf(),
            detail: "a CTF trace is a directory of files; give its path, not its metadata's bytes"
                .to_string(),
        });
    }
    let mut trace = ctf::read(source.path)?;
    note_step_range_unused(
        &mut trace,
        options,
        "a CTF trace: its steps are its `session` ranges",
    );
    Ok(vec![trace])
}

/// A CTF data stream given alone: names the directory to give, the nearest folder above it
/// holding the trace's `metadata`.
fn refuse_ctf_stream(source: &Source<'_>, _: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    let directory = source
        .path
        .ancestors()
        .skip(1)
        .take(4)
        .find(|dir| dir.join("metadata").is_file())
        .map_or_else(
            || " (the folder holding its `metadata` file)".to_string(),
            |dir| format!(", {}", dir.display()),
        );
    Err(ReadError::CtfStream {
        path: source.path.to_path_buf(),
        directory,
    })
}

fn refuse_protobuf(source: &Source<'_>, _: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    Err(ReadError::NotXPlane {
        path: source.path.to_path_buf(),
        detail: "it is protobuf wire format, but not an XSpace (its first field is not a plane); \
                 stepcast reads the `*.xplane.pb` files the TensorFlow and JAX profilers write"
            .to_string(),
    })
}

/// Said, not ignored silently: a Kineto trace's steps are its markers, never a pattern's.
fn note_step_range_unused(trace: &mut Trace, options: &ReadOptions, what: &str) {
    if let Some(pattern) = &options.step_range {
        trace.diagnostics.note(format!(
            "the step-range pattern `{}` is not applied to {what}",
            pattern.as_str()
        ));
    }
}

/// SQLite's 16-byte file header.
fn is_sqlite(head: &[u8]) -> bool {
    head.starts_with(b"SQLite format 3\0")
}

fn is_zstd(head: &[u8]) -> bool {
    head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
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
        // MXNet's `Profiler::EmitPid`: the device slots' process names, `cpu/0` first.
        assert_eq!(
            name(b"{\n    \"traceEvents\": [\n        {\n            \"ph\": \"M\",\n            \"args\": {\n                \"name\": \"cpu/0\"\n            },\n            \"pid\": 0,\n            \"name\": \"process_name\"\n        }"),
            Some("MXNet profiler JSON")
        );
        assert_eq!(name(b"\n\x20\x12\x09/host:CPU"), Some(XPLANE));
        assert_eq!(name(b"\n\x20\x08\x01\x12\x0d/device:GPU:0"), Some(XPLANE));
        assert_eq!(
            name(&[0x28, 0xb5, 0x2f, 0xfd, 0]),
            Some("zstd-compressed file")
        );
        for ctf in [
            &b"/* CTF 1.8 */\ntrace {"[..],
            &[0x57, 0x1d, 0xd1, 0x75, 0x81, 0x60][..],
            &b"\x1e{\n  \"type\": \"preamble\", \"version\": 2}"[..],
        ] {
            assert_eq!(name(ctf), Some("Common Trace Format (CTF/LTTng) trace"));
        }
        assert_eq!(name(b"PK\x03\x04"), Some("zip archive"));
        let mut tar = vec![0u8; 512];
        tar[..8].copy_from_slice(b"job/r0.j");
        tar[257..263].copy_from_slice(b"ustar\0");
        assert_eq!(name(&tar), Some("tar archive"));
        assert_eq!(
            name(&[0xc1, 0x1f, 0xfc, 0xc1, 0, 0]),
            Some("CTF stream file")
        );
        assert_eq!(name(b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe"), None);
        assert_eq!(name(b""), None);
    }

    #[test]
    fn an_xspace_whose_planes_are_not_host_or_device_is_left_to_the_xplane_reader() {
        // The XPlane reader names what planes it found instead.
        assert_eq!(name(b"\n\x11\x12\x0f/metadata:other"), Some(XPLANE));
        assert_eq!(name(b"\n\x20\x12\x09host:CPU"), Some(XPLANE));
    }

    #[test]
    fn other_protobufs_are_told_from_xplane() {
        // A length-prefixed message (how Chakra execution traces are written): a length, then
        // whole fields.
        let mut delimited = vec![12u8];
        delimited.extend_from_slice(&[0x08, 0x01, 0x12, 0x04, b'n', b'o', b'd', b'e', 0x18, 0x02]);
        delimited.extend_from_slice(&[0x20, 0x03]);
        assert_eq!(name(&delimited), Some("protobuf file"));
        // Raw fields of another schema: three or more, one length-delimited.
        let raw = [0x10, 0x05, 0x1a, 0x02, b'a', b'b', 0x20, 0x07, 0x28, 0x01];
        assert_eq!(name(&raw), Some("protobuf file"));
    }

    #[test]
    fn json_that_opens_like_a_protobuf_is_json() {
        // A newline is XSpace's first tag byte (0x0a), `{` a length, `"` an XPlane tag (0x22).
        for opening in [
            "\n{\"traceEvents\"",
            "\n\n{\"traceEvents\"",
            "\u{feff}{\"x\": 1}",
        ] {
            assert_eq!(name(opening.as_bytes()), Some(KINETO), "{opening:?}");
        }
        assert_eq!(
            name(b"\n\n{\"rocprofiler-sdk-tool\": []}"),
            Some("rocprofv3 JSON")
        );
    }
}
