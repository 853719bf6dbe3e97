//! Integration tests of `stepcast-trace` against the real profiler traces vendored in
//! `testdata/kineto/` (see `testdata/README.md` for their sources), plus hand-made bad inputs.
//!
//! Every expected value below was read from the files with an independent reader (Python's
//! `json` module), never copied from stepcast's own output.

mod bad_input;
mod byteps;
mod corpus;
mod correlation;
mod ctf;
mod formats;
mod horovod;
mod mxnet;
mod nsys;
mod op_inputs;
mod packaged;
mod pipeline_actions;
mod precision;
mod tf_timeline;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use stepcast_trace::{ReadError, Trace};

/// `testdata/` at the workspace root.
pub fn testdata() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata"))
}

/// `testdata/kineto/`, checked to exist so a missing checkout fails loudly instead of passing.
pub fn kineto_dir() -> PathBuf {
    let dir = testdata().join("kineto");
    assert!(
        dir.is_dir(),
        "test data missing: {} is not a directory (the traces are vendored in the repository)",
        dir.display()
    );
    dir
}

/// A vendored trace by its path below `testdata/kineto/`.
pub fn kineto_file(relative: &str) -> PathBuf {
    let path = kineto_dir().join(relative);
    assert!(
        path.is_file(),
        "test data missing: {} is not a file",
        path.display()
    );
    path
}

/// The file's bytes, gunzipped when it is gzip-compressed.
pub fn decompressed(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .unwrap_or_else(|e| panic!("gunzip {}: {e}", path.display()));
        out
    } else {
        bytes
    }
}

/// How a file under `testdata/kineto/` must be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A Kineto (Chrome-trace) file: must be read.
    Kineto,
    /// A PyTorch Execution Trace: must be rejected with `ReadError::ExecutionTrace`.
    ExecutionTrace,
}

/// Kineto and Execution Trace files are told apart by name, as upstream names them.
pub fn classify(file_name: &str) -> FileKind {
    if file_name.contains("_et.") || file_name.starts_with("dlrm_eg_") {
        FileKind::ExecutionTrace
    } else {
        FileKind::Kineto
    }
}

/// One trace file of the corpus and what reading it gave.
pub struct Loaded {
    /// Path below `testdata/kineto/`, with `/` separators.
    pub relative: String,
    pub path: PathBuf,
    pub kind: FileKind,
    pub result: Result<Trace, ReadError>,
}

/// Every `.json` / `.json.gz` file under `testdata/kineto/`, sorted by relative path, except
/// the step timings recorded beside the traces of `stepcast/h100-pairs/` (`*.timing.json`:
/// measurements, not traces).
pub fn trace_files() -> Vec<(String, PathBuf)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
                .path();
            if path.is_dir() {
                walk(&path, out);
            } else if let Some(name) = path.file_name().and_then(|n| n.to_str())
                && (name.ends_with(".json") || name.ends_with(".json.gz"))
                && !name.ends_with(".timing.json")
            {
                out.push(path);
            }
        }
    }
    let root = kineto_dir();
    let mut paths = Vec::new();
    walk(&root, &mut paths);
    let mut files: Vec<(String, PathBuf)> = paths
        .into_iter()
        .map(|path| {
            let relative = path
                .strip_prefix(&root)
                .expect("walked paths lie under the root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            (relative, path)
        })
        .collect();
    files.sort();
    files
}

/// The whole corpus, read once (in parallel) and shared by the tests of this binary.
pub fn corpus() -> &'static [Loaded] {
    static CORPUS: OnceLock<Vec<Loaded>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let files = trace_files();
        let threads = std::thread::available_parallelism()
            .map_or(4, |n| n.get())
            .min(files.len().max(1));
        // Largest files first, dealt round-robin, so the threads finish together.
        let mut by_size: Vec<(usize, &(String, PathBuf))> = files.iter().enumerate().collect();
        by_size.sort_by_key(|(_, (_, path))| {
            std::cmp::Reverse(std::fs::metadata(path).map_or(0, |m| m.len()))
        });
        let mut results: Vec<Option<Loaded>> = (0..files.len()).map(|_| None).collect();
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let mine: Vec<(usize, &(String, PathBuf))> =
                        by_size.iter().skip(t).step_by(threads).copied().collect();
                    scope.spawn(move || {
                        mine.into_iter()
                            .map(|(i, (relative, path))| {
                                let name = path
                                    .file_name()
                                    .and_then(|n| n.to_str())
                                    .unwrap_or_default();
                                let loaded = Loaded {
                                    relative: relative.clone(),
                                    path: path.clone(),
                                    kind: classify(name),
                                    result: stepcast_trace::read_trace(path),
                                };
                                (i, loaded)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for handle in handles {
                for (i, loaded) in handle.join().expect("reader thread panicked") {
                    results[i] = Some(loaded);
                }
            }
        });
        results
            .into_iter()
            .map(|r| r.expect("every file was read"))
            .collect()
    })
}

/// A trace of the corpus that must have been read successfully.
pub fn loaded_trace(relative: &str) -> &'static Trace {
    let loaded = corpus()
        .iter()
        .find(|l| l.relative == relative)
        .unwrap_or_else(|| panic!("{relative} is not in testdata/kineto"));
    match &loaded.result {
        Ok(trace) => trace,
        Err(e) => panic!("{relative} failed to read: {e}"),
    }
}

/// A fresh directory under the system temp dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "stepcast-trace-it-{}-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed),
            label
        ));
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
