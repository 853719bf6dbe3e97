//! Inputs that are not traces: every command fails with one clear message, exit status 1, an
//! empty stdout and no output file.

use std::path::{Path, PathBuf};

use super::{TRACE, TempDir, path_str, stepcast};

/// Writes each bad input into `dir` and returns its path and what the message must say.
fn bad_inputs(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let gzip = std::fs::read(TRACE).expect("read the test trace");
    let files: [(&str, &[u8], &str); 9] = [
        ("empty.json", b"", "is empty"),
        ("truncated.json.gz", &gzip[..gzip.len() / 2], "gzip"),
        (
            "truncated.json",
            br#"{"schemaVersion": 1, "traceEvents": [{"ph": "X", "name": "aten::mm", "ts": 1"#,
            "truncated",
        ),
        (
            "not-a-trace.json",
            br#"{"hello": "world"}"#,
            "not a profiler trace",
        ),
        // The Chrome trace format allows a bare array of events.
        ("array.json", b"[1, 2, 3]", "event #0"),
        (
            "binary.bin",
            b"\x7fELF\x02\x01\x01\x00\x00\x00\xff\xfe",
            "not JSON",
        ),
        ("no-events.json", br#"{"traceEvents": []}"#, "no events"),
        ("garbage.json", b"{\"traceEvents\": [}", "invalid JSON"),
        ("whitespace.json", b"  \n\t ", ""),
    ];
    let mut inputs: Vec<(PathBuf, &'static str)> = files
        .into_iter()
        .map(|(name, contents, message)| {
            let path = dir.join(name);
            std::fs::write(&path, contents).expect("write bad input");
            (path, message)
        })
        .collect();
    let directory = dir.join("a-directory");
    std::fs::create_dir(&directory).expect("create dir");
    inputs.push((directory, "is a directory"));
    inputs.push((dir.join("missing.json"), "cannot read"));
    inputs
}

/// Runs every command on `input` and checks it fails cleanly.
fn check(input: &Path, message: &str, out_dir: &TempDir) {
    let input = path_str(input);
    let out = out_dir.path().join("out.json");
    let out = path_str(&out);
    let commands: [&[&str]; 6] = [
        &["info", input],
        &["info", input, "--json", "-o", out],
        &["replay", input],
        &["replay", input, "--json"],
        &["replay", input, "--step", "1", "-o", out],
        &["replay", input, "--json", "-o", out],
    ];
    for args in commands {
        let run = stepcast(args);
        let context = format!("stepcast {args:?}\nstderr: {}", run.stderr);
        assert_eq!(run.code, Some(1), "{context}");
        assert!(run.stdout.is_empty(), "{context}\nstdout: {}", run.stdout);
        assert!(!run.stderr.contains("panicked"), "{context}");
        assert!(run.stderr.starts_with("stepcast: error: "), "{context}");
        assert!(
            run.stderr.contains(input),
            "the message names the file: {context}"
        );
        assert!(
            run.stderr.contains(message),
            "expected {message:?}: {context}"
        );
        assert_eq!(run.stderr.lines().count(), 1, "{context}");
        assert!(out_dir.entries().is_empty(), "no output file: {context}");
    }
}

#[test]
fn bad_inputs_fail_cleanly() {
    let inputs = TempDir::new("bad-inputs");
    let outputs = TempDir::new("bad-outputs");
    for (input, message) in bad_inputs(inputs.path()) {
        check(&input, message, &outputs);
    }
}
