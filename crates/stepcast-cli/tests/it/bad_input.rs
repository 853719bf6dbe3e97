//! Inputs that are not traces: every command fails with one clear message, exit status 1, an
//! empty stdout and no output file.

use std::path::{Path, PathBuf};

use super::{TRACE, TempDir, path_str, stepcast};

/// Writes each bad input into `dir` and returns its path and what the message must say.
fn bad_inputs(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let gzip = std::fs::read(TRACE).expect("read the test trace");
    let files: [(&str, &[u8], &str); 11] = [
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
            "not a trace format stepcast knows: it starts with bytes 7f 45 4c 46",
        ),
        ("no-events.json", br#"{"traceEvents": []}"#, "no events"),
        ("garbage.json", b"{\"traceEvents\": [}", "invalid JSON"),
        ("whitespace.json", b"  \n\t ", ""),
        // A Horovod timeline cut inside an event (one left without its `]` reads).
        (
            "horovod.json",
            b"[\n{\"name\": \"NEGOTIATE_ALLREDUCE\", \"ph\": \"B\", \"ts\": 10, \"pid\": 0},\n{\"ph\": \"E\", \"ts",
            "truncated",
        ),
        // A timestamp of 9.2e18 ns: skipped as absurd, which leaves nothing.
        (
            "huge-ts.json",
            br#"[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":9223372036854775.0,"dur":2}]"#,
            "absurd `ts`",
        ),
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
    let commands: [&[&str]; 14] = [
        &["info", input],
        &["info", input, "--json", "-o", out],
        &["replay", input],
        &["replay", input, "--json"],
        &["replay", input, "--step", "1", "-o", out],
        &["replay", input, "--json", "-o", out],
        &["replay", input, TRACE],
        &["analyze", input],
        &["export", input, "-o", out],
        &["whatif", input, "amp"],
        &["whatif", input, "amp", "-o", out],
        &["whatif", input, "ddp", "--gpus", "2"],
        &["advise", input],
        &["advise", input, "--json", "-o", out],
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
        check_written_over(&input);
    }
}

/// The output side: `input` given as its own `-o` is refused before it is read (the message
/// is the output's, whatever the input holds) and left byte for byte as it was.
fn check_written_over(input: &Path) {
    let Ok(before) = std::fs::read(input) else {
        return; // the missing file and the directory: nothing to overwrite
    };
    let path = path_str(input);
    for args in [
        &["export", path, "-o", path][..],
        &["info", path, "--json", "-o", path],
    ] {
        let run = stepcast(args);
        let context = format!("stepcast {args:?}\nstderr: {}", run.stderr);
        assert_eq!(run.code, Some(1), "{context}");
        assert!(
            run.stderr.contains("is an input of this command"),
            "{context}"
        );
        assert_eq!(run.stderr.lines().count(), 1, "{context}");
        assert_eq!(std::fs::read(input).expect("read"), before, "{context}");
    }
}

// See: issue #11, item 5. `--help` says an invalid command line exits 2.
#[test]
fn an_unknown_model_or_option_value_is_a_usage_error() {
    let cases: [(&[&str], &str); 3] = [
        (
            &["whatif", TRACE, "nonsense_model"],
            "the models are: fused_optimizer",
        ),
        (&["whatif", TRACE, "amp", "--factor", "2"], "--factor"),
        (&["whatif", TRACE, "ddp", "--gpus", "zero"], "bad --gpus"),
    ];
    for (args, message) in cases {
        let run = stepcast(args);
        let context = format!("stepcast {args:?}\nstderr: {}", run.stderr);
        assert_eq!(run.code, Some(2), "{context}");
        assert!(run.stdout.is_empty(), "{context}");
        assert!(run.stderr.starts_with("stepcast: error: "), "{context}");
        assert!(run.stderr.contains(message), "{context}");
        assert_eq!(run.stderr.lines().count(), 1, "{context}");
    }
}

// See: issue #11, item 5. A nested `Input Dims` overflowed the stack of the recursive parser
// (SIGABRT). Synthetic trace: one `AccumulateGrad` op whose `Input Dims` nests 100,000 deep,
// and one kernel it launches.
#[test]
fn deeply_nested_input_dims_do_not_abort_whatif_ddp() {
    let dir = TempDir::new("nested-dims");
    let depth = 100_000;
    let dims = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let trace = format!(
        r#"{{"traceEvents": [
{{"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 100}},
{{"ph": "X", "cat": "cpu_op", "name": "torch::autograd::AccumulateGrad", "pid": 1, "tid": 1, "ts": 10, "dur": 20, "args": {{"Input Dims": {dims}, "Input type": ["float"]}}}},
{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 5, "args": {{"correlation": 7}}}},
{{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 30, "args": {{"correlation": 7, "device": 0, "stream": 7}}}}
]}}"#
    );
    let path = dir.path().join("nested.json");
    std::fs::write(&path, trace).expect("write");
    let input = path_str(&path);
    for args in [
        &["whatif", input, "ddp", "--gpus", "2"][..],
        &["whatif", input, "ddp", "--gpus", "2", "--reinsert"],
        &["advise", input],
    ] {
        let run = stepcast(args);
        let context = format!("stepcast {args:?}\nstderr: {}", run.stderr);
        assert!(matches!(run.code, Some(0 | 1)), "{context}");
        assert!(!run.stderr.contains("panicked"), "{context}");
        assert!(!run.stderr.contains("overflow"), "{context}");
        if run.code == Some(1) {
            assert_eq!(run.stderr.lines().count(), 1, "{context}");
        }
    }
}
