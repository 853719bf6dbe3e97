//! Runs the `stepcast` binary as a user would, on a small real trace and on broken inputs.

mod analyze;
mod answer;
mod bad_input;
mod byteps;
mod compare;
mod ctf;
mod ddp;
mod export;
mod formats;
mod info;
mod job;
mod mxnet;
mod names;
mod optimize;
mod output_formats;
mod outputs;
mod prose;
mod ranks;
mod reduce;
mod replay;
mod report;
mod whatif;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};

/// A small real Kineto trace: one step (100) with CUDA event syncs, recorded on an A100.
const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/kineto/HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz"
);

/// Three steps of data-parallel training (A100, NCCL on a second stream); host-bound.
const NCCL: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/kineto/HolisticTraceAnalysis/tests/data/nccl_parser_config/nccl_data.json.gz"
);

/// What one run of the binary did.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn assert_success(&self) {
        assert_eq!(
            self.code,
            Some(0),
            "stepcast failed; stderr:\n{}",
            self.stderr
        );
        assert!(self.stderr.is_empty(), "stderr: {}", self.stderr);
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).expect("stdout is JSON")
    }
}

/// Runs `stepcast` with `args`.
fn stepcast(args: &[&str]) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = Command::new(env!("CARGO_BIN_EXE_stepcast"))
        .args(args)
        .output()
        .expect("the stepcast binary runs");
    Run {
        code: status.code(),
        stdout: String::from_utf8(stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(stderr).expect("stderr is UTF-8"),
    }
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "stepcast-it-{}-{unique}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        Self(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// The names of the files in the directory, sorted.
    fn entries(&self) -> Vec<String> {
        file_names(&self.0)
    }
}

/// The names of the entries of `dir`, sorted.
pub(crate) fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|entry| {
            entry
                .expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What HTML escaping makes of `text` (as the report writes it).
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temp paths are UTF-8")
}
