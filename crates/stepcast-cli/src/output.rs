//! Writing an answer to the path the user gave, without ever destroying what was there: the
//! binary's `-o` and the Python package's writers (`Trace.export`, `Trace.report`) both come
//! here, so both keep the same rules.
//!
//! - A regular file (or a new path) is replaced whole or not at all: the bytes go into a new
//!   file beside it, renamed over it once complete. A file replaced keeps its mode (and, where
//!   the user may give it, its owner).
//! - A symlink is followed: its target is replaced that way and the link stays a link.
//! - Anything else that exists (a device such as `/dev/null`, a named pipe, `/dev/stdout`) is
//!   written to directly, streaming: renaming over it would replace the device itself.
//!   `-` is the standard output.
//! - A directory (`--format csv`) is written only if it is new, empty, or holds only files
//!   stepcast wrote there before (listed in its [`MANIFEST`]); a directory holding anything
//!   else is an error that names what it holds, and is left untouched.
//! - A path that is one of the command's inputs is an error, found by [`check`] before any
//!   input is read.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow, bail};

/// The file that lists, in a directory written by `--format csv`, the files stepcast wrote
/// there: they, and only they, may be replaced by the next write into that directory.
pub const MANIFEST: &str = ".stepcast-manifest";

/// The first line of a [`MANIFEST`], for a person who finds one.
const MANIFEST_HEADER: &str = "# Written by stepcast (--format csv, reduce): the files below are its own, replaced the next time it \
     writes here. Anything else in this directory stops it.";

/// What an output path is to receive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// One file (text, JSON, HTML, a Chrome trace).
    File,
    /// A directory of files (`--format csv`).
    Dir,
}

/// Checks, before any input is read, that `path` may receive an output of `shape`: it is not
/// one of `inputs` (nor a file in an input folder), and it is not the wrong kind of thing (a
/// directory for a file; a file, or a directory holding files stepcast did not write, for a
/// directory). The writers check the kind again; this check makes a mistyped `-o` fail fast.
pub fn check(path: &Path, shape: Shape, inputs: &[&Path]) -> anyhow::Result<()> {
    not_an_input(path, shape, inputs)?;
    match shape {
        Shape::File => {
            if is_stdout(path) {
                return Ok(());
            }
            if let Ok(metadata) = fs::metadata(path)
                && metadata.is_dir()
            {
                bail!(
                    "{} is a directory; give a file to write (like {})",
                    path.display(),
                    path.join("out.json").display()
                );
            }
            Ok(())
        }
        Shape::Dir => dir_target(path).map(|_| ()),
    }
}

/// Whether `path` means the standard output (`-`).
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Writes `bytes` to `path` by the rules of this module (a file replaced whole, a device or
/// pipe written to, `-` the standard output). A reader closing a pipe early is not an error:
/// it has what it wanted.
pub fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let cannot = || format!("cannot write {}", path.display());
    if is_stdout(path) {
        // Asked for by name: the answer itself, not a message, goes to the standard output.
        let mut stdout = io::stdout().lock();
        return quiet_broken_pipe(stdout.write_all(bytes).and_then(|()| stdout.flush()))
            .with_context(cannot);
    }
    if is_descriptor(path) {
        // `/dev/stdout`, `/dev/fd/3`: what the caller's descriptor already is (a terminal, a
        // pipe, or a file opened by the shell, perhaps for appending). Resolving the name to
        // that file and replacing it would undo `>>`; appending to the descriptor's file is
        // what the shell asked for.
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(cannot)?;
        return stream(file, bytes).with_context(cannot);
    }
    match fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => Err(anyhow!(
            "{} is a directory; give a file to write (like {})",
            path.display(),
            path.join("out.json").display()
        )),
        Ok(metadata) if !metadata.is_file() => {
            // A device, a named pipe or a socket: write into it; never create or truncate.
            let file = OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(cannot)?;
            stream(file, bytes).with_context(cannot)
        }
        Ok(metadata) => replace(&resolve(path).with_context(cannot)?, bytes, Some(&metadata)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            // A new file, or a dangling symlink whose target is to be created.
            replace(&resolve(path).with_context(cannot)?, bytes, None)
        }
        Err(error) => Err(error).with_context(cannot),
    }
}

/// Writes `files` (name, contents) into the directory `path`, whole or not at all where the
/// directory is new. Into an existing directory (empty, or holding only what stepcast wrote
/// there before) the files are written beside each other first, in a hidden folder inside it,
/// and moved in only once all are complete: a failure while writing leaves the directory as it
/// was. The [`MANIFEST`] is kept listing every file of ours at each moment, so an interrupted
/// write leaves nothing the next one would take for the user's.
pub fn write_dir<B: AsRef<[u8]>>(path: &Path, files: &[(String, B)]) -> anyhow::Result<()> {
    let cannot = || format!("cannot write {}", path.display());
    for (name, _) in files {
        if !is_plain_name(name) {
            bail!(
                "cannot write {}: {name:?} is not a file name",
                path.display()
            );
        }
    }
    match dir_target(path)? {
        DirTarget::New(path) => write_new_dir(&path, files).with_context(cannot),
        DirTarget::Existing { path, ours } => {
            write_existing_dir(&path, files, &ours).with_context(cannot)
        }
    }
}

/// Where a directory output goes.
enum DirTarget {
    /// Nothing there yet (a dangling symlink's target included).
    New(PathBuf),
    /// A directory there, empty or holding only `ours` (the names in its manifest).
    Existing { path: PathBuf, ours: Vec<String> },
}

fn dir_target(path: &Path) -> anyhow::Result<DirTarget> {
    let cannot = || format!("cannot write {}", path.display());
    let csv_needs_dir = || {
        anyhow!(
            "{} is not a directory; --format csv writes one file per table into a directory \
             (give -o DIR)",
            path.display()
        )
    };
    if is_stdout(path) {
        return Err(csv_needs_dir());
    }
    let metadata = match fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Ok(DirTarget::New(resolve(path).with_context(cannot)?));
        }
        Err(error) => return Err(error).with_context(cannot),
    };
    if !metadata.is_dir() {
        return Err(csv_needs_dir());
    }
    let ours = manifest_names(path);
    let mut foreign = Vec::new();
    for entry in fs::read_dir(path).with_context(cannot)? {
        let entry = entry.with_context(cannot)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == MANIFEST {
            continue;
        }
        // Only a regular file listed in the manifest is ours: a listed name that is now a
        // directory or a link was put there by someone else.
        let is_file = entry.file_type().is_ok_and(|kind| kind.is_file());
        if is_file && ours.contains(&name) {
            continue;
        }
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        foreign.push(if is_dir { format!("{name}/") } else { name });
    }
    if !foreign.is_empty() {
        foreign.sort();
        let count = foreign.len();
        let shown = if count > 5 {
            format!("{}, ...", foreign[..5].join(", "))
        } else {
            foreign.join(", ")
        };
        bail!(
            "{} holds {count} {} stepcast did not write ({shown}); give a new or empty directory",
            path.display(),
            if count == 1 { "file" } else { "files" },
        );
    }
    Ok(DirTarget::Existing {
        path: resolve(path).with_context(cannot)?,
        ours,
    })
}

/// The plain file names listed in `dir`'s manifest (none if it has none). A name with a path
/// separator, `.` or `..` is ignored: a manifest never lets a write reach outside `dir`.
fn manifest_names(dir: &Path) -> Vec<String> {
    let Ok(text) = fs::read_to_string(dir.join(MANIFEST)) else {
        return Vec::new();
    };
    text.lines()
        .filter(|line| !line.starts_with('#') && is_plain_name(line) && *line != MANIFEST)
        .map(str::to_string)
        .collect()
}

fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains('/')
        && !name.contains('\\')
        && !name.contains('\0')
}

fn manifest_text<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_unstable();
    names.dedup();
    let mut text = format!("{MANIFEST_HEADER}\n");
    for name in names {
        text.push_str(name);
        text.push('\n');
    }
    text
}

/// A new directory: built whole beside `path`, then renamed into place.
fn write_new_dir<B: AsRef<[u8]>>(path: &Path, files: &[(String, B)]) -> io::Result<()> {
    let (parent, name) = parent_and_name(path)?;
    let temp_dir = create_hidden(&parent, &name, |candidate| fs::create_dir(candidate))?;
    let manifest = manifest_text(files.iter().map(|(name, _)| name.as_str()));
    let written = files
        .iter()
        .map(|(name, contents)| (name.as_str(), contents.as_ref()))
        .chain([(MANIFEST, manifest.as_bytes())])
        .try_for_each(|(name, contents)| write_new(&temp_dir.join(name), contents, None))
        // rename() puts a directory in place only where nothing, or an empty directory, is:
        // one made meanwhile with files in it makes this fail, not vanish.
        .and_then(|()| fs::rename(&temp_dir, path));
    if written.is_err() {
        let _ = fs::remove_dir_all(&temp_dir);
    }
    written
}

/// An existing directory holding nothing but `ours`: the new files are staged in a hidden
/// folder inside it (same file system, so each moves in by a rename), then moved in, then the
/// old files of ours that the new answer lacks are removed.
fn write_existing_dir<B: AsRef<[u8]>>(
    dir: &Path,
    files: &[(String, B)],
    ours: &[String],
) -> io::Result<()> {
    let staging = create_hidden(dir, "stepcast-staging", |candidate| {
        fs::create_dir(candidate)
    })?;
    let staged = files.iter().try_for_each(|(name, contents)| {
        // A file of ours replaced keeps the mode the user gave it.
        let previous = fs::symlink_metadata(dir.join(name))
            .ok()
            .filter(Metadata::is_file);
        write_new(&staging.join(name), contents.as_ref(), previous.as_ref())
    });
    if let Err(error) = staged {
        let _ = fs::remove_dir_all(&staging);
        return Err(error);
    }
    let new_names: Vec<&str> = files.iter().map(|(name, _)| name.as_str()).collect();
    let moved = (|| {
        // First the manifest lists old and new files alike, so a stop half-way leaves every
        // file here listed as ours.
        let both = ours
            .iter()
            .map(String::as_str)
            .chain(new_names.iter().copied());
        put_manifest(dir, &staging, &manifest_text(both))?;
        for name in &new_names {
            fs::rename(staging.join(name), dir.join(name))?;
        }
        for old in ours {
            if !new_names.contains(&old.as_str()) {
                // Only a regular file listed as ours is removed (checked again: the directory
                // may have changed since it was checked).
                let path = dir.join(old);
                if fs::symlink_metadata(&path).is_ok_and(|m| m.is_file()) {
                    fs::remove_file(path)?;
                }
            }
        }
        put_manifest(dir, &staging, &manifest_text(new_names.iter().copied()))
    })();
    let _ = fs::remove_dir_all(&staging);
    moved
}

/// Replaces `dir`'s manifest by `text`, written into `staging` first.
fn put_manifest(dir: &Path, staging: &Path, text: &str) -> io::Result<()> {
    let staged = staging.join(MANIFEST);
    write_new(&staged, text.as_bytes(), None)?;
    fs::rename(staged, dir.join(MANIFEST))
}

/// A regular file (or a new one) at `path`, replaced whole: `bytes` go into a new hidden file
/// beside it, which is renamed over it. `previous` is the file replaced, whose mode (and owner,
/// where permitted) the new one takes.
fn replace(path: &Path, bytes: &[u8], previous: Option<&Metadata>) -> anyhow::Result<()> {
    let cannot = || format!("cannot write {}", path.display());
    let (dir, name) = parent_and_name(path).with_context(cannot)?;
    let temp_path = create_hidden(&dir, &name, |candidate| {
        // create_new: the temporary name never overwrites, nor writes through, anything.
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(candidate)
            .map(drop)
    })
    .with_context(cannot)?;
    let written =
        write_new(&temp_path, bytes, previous).and_then(|()| fs::rename(&temp_path, path));
    if let Err(error) = written {
        // The rename did not happen: the temporary file is ours and must not stay behind.
        let _ = fs::remove_file(&temp_path);
        return Err(error).with_context(cannot);
    }
    Ok(())
}

/// Writes `bytes` into the file at `path` (created, or made empty, by us) and syncs it; gives
/// it `previous`'s mode and owner.
fn write_new(path: &Path, bytes: &[u8], previous: Option<&Metadata>) -> io::Result<()> {
    let mut file = File::create(path)?;
    file.write_all(bytes)?;
    if let Some(previous) = previous {
        file.set_permissions(previous.permissions())?;
        keep_owner(&file, previous);
    }
    file.sync_all()
}

/// Gives `file` the owner and group of `previous`. Only root may give a file to another user,
/// and a user only to their own groups: where that is refused, the new file stays the writer's,
/// as any file they write is, so the refusal is not an error.
#[cfg(unix)]
fn keep_owner(file: &File, previous: &Metadata) {
    use std::os::unix::fs::MetadataExt;
    let _ = std::os::unix::fs::fchown(file, Some(previous.uid()), Some(previous.gid()));
}

#[cfg(not(unix))]
fn keep_owner(_file: &File, _previous: &Metadata) {}

/// Writes `bytes` into an open device, pipe or descriptor. No sync: a pipe cannot be synced.
fn stream(mut file: File, bytes: &[u8]) -> io::Result<()> {
    quiet_broken_pipe(file.write_all(bytes).and_then(|()| file.flush()))
}

/// A reader that closed its end (`| head`) has what it wanted: like ripgrep, not an error.
fn quiet_broken_pipe(result: io::Result<()>) -> io::Result<()> {
    match result {
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        result => result,
    }
}

/// Whether `path` names one of the process's descriptors rather than a file of its own.
fn is_descriptor(path: &Path) -> bool {
    let Some(text) = path.to_str() else {
        return false;
    };
    matches!(text, "/dev/stdout" | "/dev/stderr")
        || text.starts_with("/dev/fd/")
        || text.starts_with("/proc/self/fd/")
        || text.starts_with("/proc/thread-self/fd/")
}

/// `path` with its symlinks followed, even to a target that does not exist yet (a dangling
/// link's target is where the new file goes). The directories on the way stay as named: the
/// rename happens in the same directory either way.
fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    // As the kernel does (ELOOP), give up on a chain of links too long to be anything but a loop.
    for _ in 0..40 {
        match fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                let target = fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) => parent.join(target),
                    None => target,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// `path`'s directory (`.` for a bare name) and its file name.
fn parent_and_name(path: &Path) -> io::Result<(PathBuf, String)> {
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path does not end in a name (give a path like out.json or tables/)",
        )
    })?;
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name.to_string_lossy().into_owned()))
}

/// Makes a hidden entry in `dir` with `make` under a name no other entry has (`make` must fail
/// with `AlreadyExists` where one does), and returns its path.
fn create_hidden(
    dir: &Path,
    name: &str,
    make: impl Fn(&Path) -> io::Result<()>,
) -> io::Result<PathBuf> {
    let pid = std::process::id();
    let mut attempt = 0u32;
    loop {
        let candidate = dir.join(format!(".{name}.{pid}.{attempt}.tmp"));
        match make(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Fails if `path` is (or resolves to) one of `inputs`, a file of an input folder (the rank
/// traces of a job folder, anything in a trace that is a directory), or, for a directory
/// output, a directory holding an input.
fn not_an_input(path: &Path, shape: Shape, inputs: &[&Path]) -> anyhow::Result<()> {
    if is_stdout(path) {
        return Ok(());
    }
    let output = fs::metadata(path).ok();
    let output_canonical = fs::canonicalize(path).ok();
    // "out.json is an input of this command (the trace t.json)": the input named as the
    // user gave it, when that differs from the output's spelling.
    let refuse = |what: Option<String>| {
        let what = what.map(|what| format!(" ({what})")).unwrap_or_default();
        anyhow!(
            "{} is an input of this command{what}; stepcast never writes over its inputs: give \
             another output path",
            path.display()
        )
    };
    let spelled = |input: &Path| (input != path).then(|| input.display().to_string());
    for input in inputs {
        let Ok(input_metadata) = fs::metadata(input) else {
            // An input that does not exist cannot be written over; reading it fails later
            // with its own message.
            continue;
        };
        if let Some(output) = &output
            && same_file(output, &input_metadata, path, input)
        {
            return Err(refuse(spelled(input)));
        }
        let (Some(output_canonical), Ok(input_canonical)) =
            (&output_canonical, fs::canonicalize(input))
        else {
            continue;
        };
        if shape == Shape::Dir && input_canonical.starts_with(output_canonical) {
            return Err(anyhow!(
                "{} holds the input {}; stepcast never writes over its inputs: give another \
                 output directory",
                path.display(),
                input.display()
            ));
        }
        if !input_metadata.is_dir() || !output_canonical.starts_with(&input_canonical) {
            continue;
        }
        if stepcast_trace::is_trace_dir(input) {
            return Err(refuse(Some(format!(
                "inside the trace {}",
                input.display()
            ))));
        }
        // A job folder: its rank traces are the inputs.
        let ranks = stepcast_trace::trace_files_in(input).unwrap_or_default();
        for rank in ranks {
            if let (Some(output), Ok(rank_metadata)) = (&output, fs::metadata(&rank))
                && same_file(output, &rank_metadata, path, &rank)
            {
                return Err(refuse(Some(format!(
                    "a rank trace of the job folder {}",
                    input.display()
                ))));
            }
        }
    }
    Ok(())
}

/// Whether two existing paths are one file: the same device and inode (a hard link, or a path
/// spelled another way, included).
#[cfg(unix)]
fn same_file(a: &Metadata, b: &Metadata, _a_path: &Path, _b_path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_a: &Metadata, _b: &Metadata, a_path: &Path, b_path: &Path) -> bool {
    matches!(
        (fs::canonicalize(a_path), fs::canonicalize(b_path)),
        (Ok(a), Ok(b)) if a == b
    )
}

#[cfg(test)]
mod tests {
    use super::{is_plain_name, manifest_text};

    #[test]
    fn manifest_names_are_plain() {
        assert!(is_plain_name("analyze.steps.csv"));
        for name in ["", ".", "..", "../x", "a/b", "a\\b"] {
            assert!(!is_plain_name(name), "{name:?}");
        }
        let text = manifest_text(["b.csv", "a.csv", "b.csv"]);
        assert!(text.ends_with("a.csv\nb.csv\n"), "{text}");
    }
}
