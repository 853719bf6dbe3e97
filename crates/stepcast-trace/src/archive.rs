//! Archives of traces (`.tar`, `.tar.gz`, `.zip`: how profiles are shared): listed, never
//! extracted, so the refusal says what the archive holds and what to give instead.

use std::io::{BufReader, Cursor, Read, Seek};
use std::path::Path;

use crate::detect::Source;
use crate::{ReadError, ReadOptions, Trace};

/// Members listed at most: enough to say what an archive holds without reading a huge one
/// whole.
const MAX_LISTED: usize = 100_000;

/// Whether `head` (decompressed) starts a tar archive: a POSIX header's `ustar` magic.
pub fn is_tar(head: &[u8]) -> bool {
    head.get(257..262) == Some(b"ustar")
}

/// Whether `head` starts a zip archive: a local file header, or the end record of an empty one.
pub fn is_zip(head: &[u8]) -> bool {
    head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06")
}

/// The names of an archive's files, and whether the listing stopped at [`MAX_LISTED`].
type Listing = (Vec<String>, bool);

fn tar_names(reader: impl Read) -> Result<Listing, String> {
    let mut archive = tar::Archive::new(reader);
    let mut names = Vec::new();
    for entry in archive.entries().map_err(|e| e.to_string())? {
        let entry = entry.map_err(|e| e.to_string())?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        if names.len() == MAX_LISTED {
            return Ok((names, true));
        }
        let name = entry.path().map_err(|e| e.to_string())?;
        names.push(name.display().to_string());
    }
    Ok((names, false))
}

fn zip_names(reader: impl Read + Seek) -> Result<Listing, String> {
    let archive = zip::ZipArchive::new(reader).map_err(|e| e.to_string())?;
    let mut names: Vec<String> = archive
        .file_names()
        .filter(|name| !name.ends_with('/'))
        .map(str::to_string)
        .collect();
    names.sort();
    let truncated = names.len() > MAX_LISTED;
    names.truncate(MAX_LISTED);
    Ok((names, truncated))
}

/// Whether a member's name is one of the trace files stepcast reads (or a CTF trace's
/// `metadata`).
fn is_trace_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".json", ".json.gz", ".sqlite", ".xplane.pb", "/metadata"]
        .iter()
        .any(|end| lower.ends_with(end))
        || lower == "metadata"
}

/// Refuses an archive, saying what it holds: how many files, which of them are traces, and
/// whether extracted it is a trace or a job folder.
pub fn refuse(source: &Source<'_>, _: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    let zip = is_zip(&source.head);
    let listing = list(source, zip);
    let (kind, extract) = match (zip, source.gzip) {
        (true, _) => ("zip archive", "unzip FILE"),
        (false, true) => ("gzip-compressed tar archive", "tar -xzf FILE"),
        (false, false) => ("tar archive", "tar -xf FILE"),
    };
    let (holds, give) = match listing {
        Err(cause) => (
            format!("members that cannot be listed ({cause})"),
            "the trace files it holds",
        ),
        Ok((names, truncated)) => describe(&names, truncated),
    };
    Err(ReadError::Archive {
        path: source.path.to_path_buf(),
        kind,
        holds,
        extract,
        give,
    })
}

fn list(source: &Source<'_>, zip: bool) -> Result<Listing, String> {
    let open = |path: &Path| std::fs::File::open(path).map_err(|e| e.to_string());
    match (source.bytes, zip) {
        (Some(bytes), true) => zip_names(Cursor::new(bytes)),
        (None, true) => zip_names(BufReader::new(open(source.path)?)),
        (Some(bytes), false) if source.gzip => tar_names(flate2::read::MultiGzDecoder::new(bytes)),
        (Some(bytes), false) => tar_names(bytes),
        (None, false) if source.gzip => tar_names(flate2::read::MultiGzDecoder::new(
            BufReader::new(open(source.path)?),
        )),
        (None, false) => tar_names(BufReader::new(open(source.path)?)),
    }
}

/// What an archive holds, in words, and what to give once it is extracted.
fn describe(names: &[String], truncated: bool) -> (String, &'static str) {
    let traces: Vec<&String> = names.iter().filter(|n| is_trace_name(n)).collect();
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("1 {one}")
        } else {
            format!("{n} {many}")
        }
    };
    let files = format!(
        "{}{}",
        if truncated { "at least " } else { "" },
        plural(names.len(), "file", "files")
    );
    let examples = |list: &[&String]| {
        let shown: Vec<&str> = list.iter().take(3).map(|s| s.as_str()).collect();
        format!(
            "{}{}",
            shown.join(", "),
            if list.len() > 3 { ", ..." } else { "" }
        )
    };
    match traces.len() {
        0 => (
            format!(
                "{files} ({}), none of them a trace stepcast reads",
                examples(&names.iter().collect::<Vec<_>>())
            ),
            "a trace file: a PyTorch profiler .json or .json.gz, an Nsight Systems .sqlite \
             export, an .xplane.pb or a CTF trace directory",
        ),
        1 => (
            format!("{files}, one a trace ({})", traces[0]),
            "that trace",
        ),
        n => (
            format!("{files}, {n} of them traces ({})", examples(&traces)),
            "the folder it makes: a folder of rank traces is read as one job",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_counts_the_traces() {
        let names: Vec<String> = ["run/rank0.json.gz", "run/rank1.json.gz", "run/README.md"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (holds, give) = describe(&names, false);
        assert_eq!(
            holds,
            "3 files, 2 of them traces (run/rank0.json.gz, run/rank1.json.gz)"
        );
        assert!(give.contains("one job"));
        let (holds, _) = describe(&names[2..], true);
        assert_eq!(
            holds,
            "at least 1 file (run/README.md), none of them a trace stepcast reads"
        );
        assert!(is_trace_name("ctf/kernel/metadata"));
    }
}
