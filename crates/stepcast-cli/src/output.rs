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
