//! Writing the answer: to stdout, or whole to a file.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow};

/// Writes `contents` to stdout.
pub fn to_stdout(contents: &str) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(contents.as_bytes())?;
    stdout.flush()
}

/// Writes `contents` to `path` atomically: into a new file beside it, which is then renamed
/// over `path`. A reader sees the old file or the whole new one; a failure leaves no file.
pub fn to_file(path: &Path, contents: &str) -> anyhow::Result<()> {
    let name = path.file_name().ok_or_else(|| {
        anyhow!(
            "{} does not name a file (give a path like out.json)",
            path.display()
        )
    })?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let (temp_path, mut temp_file) = create_temp(dir, &name.to_string_lossy())
        .with_context(|| format!("cannot write {}", path.display()))?;
    let written = temp_file
        .write_all(contents.as_bytes())
        .and_then(|()| temp_file.sync_all())
        .and_then(|()| {
            drop(temp_file);
            fs::rename(&temp_path, path)
        });
    if let Err(error) = written {
        // The rename did not happen: the temporary file is ours and must not stay behind.
        let _ = fs::remove_file(&temp_path);
        return Err(error).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

/// Writes `files` (name, contents) into the directory `path`, whole or not at all: into a new
/// directory beside it, which then takes the place of `path` (a directory there before is
/// replaced; a file there is an error).
pub fn to_dir(path: &Path, files: &[(String, String)]) -> anyhow::Result<()> {
    let cannot = || format!("cannot write {}", path.display());
    if path.is_file() {
        return Err(anyhow!(
            "{} is a file; --format csv writes a directory (give -o DIR)",
            path.display()
        ));
    }
    let name = path.file_name().ok_or_else(|| {
        anyhow!(
            "{} does not name a directory (give a path like tables/)",
            path.display()
        )
    })?;
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = name.to_string_lossy();
    let temp_dir = create_temp_dir(parent, &name).with_context(cannot)?;
    let written = files.iter().try_for_each(|(file, contents)| {
        let mut out = File::create(temp_dir.join(file))?;
        out.write_all(contents.as_bytes())?;
        out.sync_all()
    });
    if let Err(error) = written {
        let _ = fs::remove_dir_all(&temp_dir);
        return Err(error).with_context(cannot);
    }
    // A directory already there is moved aside first (rename cannot replace a non-empty
    // directory), then removed once the new one is in place.
    let old = parent.join(format!(".{name}.{}.old", std::process::id()));
    let had_old = path.is_dir();
    if had_old && let Err(error) = fs::rename(path, &old) {
        let _ = fs::remove_dir_all(&temp_dir);
        return Err(error).with_context(cannot);
    }
    if let Err(error) = fs::rename(&temp_dir, path) {
        if had_old {
            let _ = fs::rename(&old, path);
        }
        let _ = fs::remove_dir_all(&temp_dir);
        return Err(error).with_context(cannot);
    }
    if had_old {
        let _ = fs::remove_dir_all(&old);
    }
    Ok(())
}

/// Creates a hidden directory in `dir` that did not exist before.
fn create_temp_dir(dir: &Path, name: &str) -> io::Result<PathBuf> {
    let pid = std::process::id();
    let mut attempt = 0u32;
    loop {
        let temp_path = dir.join(format!(".{name}.{pid}.{attempt}.tmp"));
        match fs::create_dir(&temp_path) {
            Ok(()) => return Ok(temp_path),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Creates a hidden file in `dir` that did not exist before (so no other file or link is ever
/// overwritten through it).
fn create_temp(dir: &Path, name: &str) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    let mut attempt = 0u32;
    loop {
        let temp_path = dir.join(format!(".{name}.{pid}.{attempt}.tmp"));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp_path)
        {
            Ok(file) => return Ok((temp_path, file)),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}
