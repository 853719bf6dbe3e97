//! Unreadable inputs fail with the right `ReadError`, whose message names the file; reading
//! never changes the file.

use std::io::Write;
use std::path::Path;

use stepcast_trace::{EventKind, LaneKind, ReadError, read_trace, read_trace_bytes};

use crate::{TempDir, kineto_file};

const SMALL_GZ: &str =
    "HolisticTraceAnalysis/tests/data/critical_path/end_to_end/simple_add/input/trace.json.gz";
const SMALL_JSON: &str = "HolisticTraceAnalysis/tests/data/call_stack/backward_thread.json";

fn variant(e: &ReadError) -> &'static str {
    match e {
        ReadError::Io { .. } => "Io",
        ReadError::IsDirectory { .. } => "IsDirectory",
        ReadError::Empty { .. } => "Empty",
        ReadError::Gzip { .. } => "Gzip",
        ReadError::NotJson { .. } => "NotJson",
        ReadError::Truncated { .. } => "Truncated",
        ReadError::Json { .. } => "Json",
        ReadError::ExecutionTrace { .. } => "ExecutionTrace",
        ReadError::NotATrace { .. } => "NotATrace",
        ReadError::NotAnExecutionTrace { .. } => "NotAnExecutionTrace",
        ReadError::NoEvents { .. } => "NoEvents",
        ReadError::NothingUnderstood { .. } => "NothingUnderstood",
        ReadError::AbsurdSpan { .. } => "AbsurdSpan",
        ReadError::NotXPlane { .. } => "NotXPlane",
        ReadError::NotRead { .. } => "NotRead",
        ReadError::UnknownFormat { .. } => "UnknownFormat",
        ReadError::Sqlite { .. } => "Sqlite",
        ReadError::NotNsys { .. } => "NotNsys",
        ReadError::NoCudaTrace { .. } => "NoCudaTrace",
        ReadError::Ctf { .. } => "Ctf",
        ReadError::CtfStream { .. } => "CtfStream",
        ReadError::Archive { .. } => "Archive",
        ReadError::NsysTableMissing { .. } => "NsysTableMissing",
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

/// A real gzip-compressed trace cut in the middle of its compressed stream.
fn truncated_gzip() -> Vec<u8> {
    let bytes = std::fs::read(kineto_file(SMALL_GZ)).expect("read");
    bytes[..bytes.len() / 2].to_vec()
}

/// A real JSON trace cut in the middle of its `traceEvents` array.
fn truncated_json() -> Vec<u8> {
    let bytes = std::fs::read(kineto_file(SMALL_JSON)).expect("read");
    let events_at = bytes
        .windows(13)
        .position(|w| w == b"\"traceEvents\"")
        .expect("traceEvents");
    let cut = bytes.len() / 2;
    assert!(cut > events_at + 20, "the cut must fall inside traceEvents");
    bytes[..cut].to_vec()
}

enum Input {
    Bytes(fn() -> Vec<u8>),
    Directory,
}

enum Want {
    /// One of these `ReadError` variants, with a message that contains the path and `also`.
    Error {
        variants: &'static [&'static str],
        also: &'static [&'static str],
    },
    /// Read, with this many kernels.
    Kernels(usize),
    /// Read, with this many kernels and a note that contains this text.
    KernelsNoted(usize, &'static str),
}

struct Case {
    file_name: &'static str,
    input: Input,
    want: Want,
}

const fn error(variants: &'static [&'static str]) -> Want {
    Want::Error {
        variants,
        also: &[],
    }
}

const CASES: &[Case] = &[
    Case {
        file_name: "empty.json",
        input: Input::Bytes(Vec::new),
        want: error(&["Empty"]),
    },
    Case {
        file_name: "truncated.json.gz",
        input: Input::Bytes(truncated_gzip),
        want: error(&["Gzip", "Truncated"]),
    },
    Case {
        file_name: "truncated.json",
        input: Input::Bytes(truncated_json),
        want: error(&["Truncated"]),
    },
    Case {
        file_name: "foo.json",
        input: Input::Bytes(|| br#"{"foo": 1}"#.to_vec()),
        want: error(&["NotATrace"]),
    },
    Case {
        file_name: "binary.json",
        input: Input::Bytes(|| (0..=255u8).collect()),
        // From a file, detection finds no format; from memory, the JSON reader says it is not JSON.
        want: error(&["NotJson", "UnknownFormat"]),
    },
    Case {
        file_name: "binary.json.gz",
        input: Input::Bytes(|| gzip(&(0..=255u8).collect::<Vec<u8>>())),
        want: error(&["NotJson", "UnknownFormat"]),
    },
    Case {
        file_name: "a-directory.json",
        input: Input::Directory,
        want: error(&["IsDirectory"]),
    },
    Case {
        file_name: "no-events.json",
        input: Input::Bytes(|| br#"{"traceEvents": []}"#.to_vec()),
        want: error(&["NoEvents"]),
    },
    Case {
        file_name: "bad-event.json",
        input: Input::Bytes(|| br#"{"traceEvents":[{"ph":"X",,}]}"#.to_vec()),
        want: Want::Error {
            variants: &["Json"],
            also: &["bad-event.json", "event #0"],
        },
    },
    Case {
        file_name: "top-level-array.json",
        input: Input::Bytes(|| {
            br#"[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"stream":7,"device":0,"correlation":5}}]"#
                .to_vec()
        }),
        want: Want::Kernels(1),
    },
    // Synthetic records in the shape each tool documents (not recordings): files in the Chrome
    // trace format whose records are none of Kineto's are refused, naming the tool.
    // Horovod's timeline (read by its own reader: `tests/it/horovod.rs`) cut inside an event:
    // an error, where a timeline left without its `]` reads.
    Case {
        file_name: "horovod-cut.json",
        input: Input::Bytes(|| {
            b"[\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"args\": {\"name\": \"allreduce.grad_0\"}},\n\
              {\"name\": \"NEGOTIATE_ALLREDUCE\", \"ph\": \"B\", \"ts\": 10, \"pid\": 1},\n\
              {\"ph\": \"E\", \"ts\": 2"
                .to_vec()
        }),
        want: Want::Error {
            variants: &["Truncated"],
            also: &[],
        },
    },
    Case {
        file_name: "byteps.json",
        input: Input::Bytes(|| {
            // Server-side request records (dPRO's `PUSH_REQ`), not BytePS's `comm.json`, which its
            // own reader reads (`tests/it/byteps.rs`).
            br#"{"traceEvents": [{"ph": "X", "name": "Comm.gradient_3.PUSH_REQ", "pid": "server_0", "tid": "0", "ts": 100, "dur": 40}], "displayTimeUnit": "ms"}"#
                .to_vec()
        }),
        want: Want::Error {
            variants: &["NothingUnderstood"],
            also: &["BytePS/byteprofile trace"],
        },
    },
    Case {
        file_name: "tensorflow.json",
        input: Input::Bytes(|| {
            br#"{"traceEvents": [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "/job:localhost/replica:0/task:0/device:GPU:0 Compute"}}, {"ph": "X", "cat": "Op", "name": "MatMul", "pid": 1, "tid": 0, "ts": 5, "dur": 3, "args": {"name": "dense/MatMul", "op": "MatMul"}}]}"#
                .to_vec()
        }),
        // Read by the TensorFlow 1 Timeline reader (`tests/it/tf_timeline.rs`): the GPU
        // device's op-level stats are host ops, no kernel.
        want: Want::Kernels(0),
    },
    Case {
        file_name: "mindspore.json",
        input: Input::Bytes(|| {
            br#"[{"name": "process_name", "ph": "M", "pid": 2, "args": {"name": "Ascend Op"}}, {"name": "Default/network-WithLossCell/_backbone-LeNet5/conv1-Conv2d/Conv2D-op5", "ph": "X", "pid": 2, "tid": 0, "ts": 1000.5, "dur": 12.25}]"#
                .to_vec()
        }),
        want: Want::Error {
            variants: &["NothingUnderstood"],
            also: &["MindSpore", "duration events without a category"],
        },
    },
    Case {
        file_name: "unknown-tool.json",
        input: Input::Bytes(|| {
            br#"[{"ph": "X", "name": "work", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]"#.to_vec()
        }),
        want: Want::Error {
            variants: &["NothingUnderstood"],
            also: &["not a PyTorch profiler (Kineto) trace"],
        },
    },
    // The Chrome trace format lets the closing `]` (and the `}` after it) be missing.
    Case {
        file_name: "unclosed-array.json",
        input: Input::Bytes(|| {
            b"[{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":2},\n".to_vec()
        }),
        want: Want::KernelsNoted(1, "not closed"),
    },
    Case {
        file_name: "unclosed-object.json",
        input: Input::Bytes(|| {
            br#"{"traceEvents": [{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2}"#.to_vec()
        }),
        want: Want::KernelsNoted(1, "not closed"),
    },
    // Still an error: the file ends inside an event.
    Case {
        file_name: "cut-event.json",
        input: Input::Bytes(|| {
            br#"[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2}, {"ph":"X","cat":"ker"#.to_vec()
        }),
        want: error(&["Truncated"]),
    },
    // A CUPTI range-profiler record, as Kineto's `CuptiRangeProfiler` writes it (category
    // `cuda_profiler_range`, the device as pid, metrics in args): device work.
    Case {
        file_name: "range-profiler.json",
        input: Input::Bytes(|| {
            br#"{"traceEvents": [{"ph": "X", "cat": "cuda_profiler_range", "name": "void fft2d_r2c_32x32<float>(float2*)", "pid": 0, "tid": 0, "ts": 100, "dur": 50, "args": {"External id": 0, "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 86114304}}, {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 9, "tid": 9, "ts": 90, "dur": 5, "args": {"correlation": 3}}]}"#
                .to_vec()
        }),
        want: Want::KernelsNoted(1, "CUPTI range-profiler"),
    },
    // Timestamps near `i64::MAX` ns are skipped, never wrapped; alone, nothing is left.
    Case {
        file_name: "huge-ts.json",
        input: Input::Bytes(|| {
            br#"[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":9223372036854775.0,"dur":2}]"#.to_vec()
        }),
        want: Want::Error {
            variants: &["NothingUnderstood"],
            also: &["absurd `ts`"],
        },
    },
    Case {
        file_name: "huge-dur.json",
        input: Input::Bytes(|| {
            br#"[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":9000000000000000}]"#.to_vec()
        }),
        want: Want::Error {
            variants: &["NothingUnderstood"],
            also: &["absurd `dur`"],
        },
    },
    // Two plausible timestamps 63 years apart: the window would span the gap.
    Case {
        file_name: "far-apart.json",
        input: Input::Bytes(|| {
            br#"[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2}, {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":2000000000000000,"dur":2}]"#.to_vec()
        }),
        want: Want::Error {
            variants: &["AbsurdSpan"],
            also: &["days"],
        },
    },
];

/// Checks one outcome against the case; `shown` is the path the message must name.
fn check(
    case: &Case,
    how: &str,
    result: Result<stepcast_trace::Trace, ReadError>,
    shown: &str,
) -> Option<String> {
    let name = case.file_name;
    match (&case.want, result) {
        (Want::Error { variants, also }, Err(e)) => {
            let message = e.to_string();
            if !variants.contains(&variant(&e)) {
                Some(format!(
                    "{name} ({how}): got {e:?}, want one of {variants:?}"
                ))
            } else if !message.contains(shown) {
                Some(format!(
                    "{name} ({how}): message lacks the path {shown}: {message}"
                ))
            } else {
                also.iter()
                    .find(|s| !message.contains(*s))
                    .map(|missing| format!("{name} ({how}): message lacks {missing:?}: {message}"))
            }
        }
        (Want::Error { variants, .. }, Ok(_)) => {
            Some(format!("{name} ({how}): read, want one of {variants:?}"))
        }
        (Want::Kernels(n), Ok(trace)) => {
            let kernels = trace
                .events
                .iter()
                .filter(|e| e.kind == EventKind::Kernel)
                .count();
            (kernels != *n).then(|| format!("{name} ({how}): {kernels} kernels, want {n}"))
        }
        (Want::KernelsNoted(n, note), Ok(trace)) => {
            let kernels = trace
                .events
                .iter()
                .filter(|e| e.kind == EventKind::Kernel)
                .count();
            if kernels != *n {
                Some(format!("{name} ({how}): {kernels} kernels, want {n}"))
            } else if !trace.diagnostics.notes.iter().any(|n| n.contains(note)) {
                Some(format!(
                    "{name} ({how}): no note says {note:?}: {:?}",
                    trace.diagnostics.notes
                ))
            } else {
                None
            }
        }
        (Want::Kernels(_) | Want::KernelsNoted(..), Err(e)) => Some(format!("{name} ({how}): {e}")),
    }
}

#[test]
fn bad_inputs_fail_with_the_right_error_naming_the_file() {
    let dir = TempDir::new("bad-input");
    let mut failures = Vec::new();
    for case in CASES {
        let path = dir.path().join(case.file_name);
        let shown = path.display().to_string();
        match case.input {
            Input::Directory => {
                std::fs::create_dir(&path).expect("create dir");
                if let Some(f) = check(case, "read_trace", read_trace(&path), &shown) {
                    failures.push(f);
                }
            }
            Input::Bytes(make) => {
                let bytes = make();
                std::fs::write(&path, &bytes).expect("write case file");
                if let Some(f) = check(case, "read_trace", read_trace(&path), &shown) {
                    failures.push(f);
                }
                let in_memory = read_trace_bytes(&bytes, &path);
                if let Some(f) = check(case, "read_trace_bytes", in_memory, &shown) {
                    failures.push(f);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let dir = TempDir::new("missing");
    let path = dir.path().join("does-not-exist.json");
    let e = read_trace(&path).expect_err("missing file");
    assert_eq!(variant(&e), "Io");
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
}

#[test]
fn top_level_array_event_is_normalized() {
    let bytes = br#"[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"stream":7,"device":0,"correlation":5}}]"#;
    let trace = read_trace_bytes(bytes, Path::new("array.json")).expect("a bare array is a trace");
    assert_eq!(trace.records, 1);
    assert_eq!(trace.origin_ns, 1_000);
    let [event] = trace.events.as_slice() else {
        panic!("want one event, got {:?}", trace.events)
    };
    assert_eq!(
        (
            event.kind,
            trace.name(event.name),
            event.start_ns,
            event.dur_ns,
            event.correlation.map(u64::from)
        ),
        (EventKind::Kernel, "k", 0, 2_000, Some(5))
    );
    let lane = trace.lane(event.lane);
    assert_eq!(
        (lane.kind, lane.pid, lane.tid),
        (LaneKind::DeviceStream, 0, 7)
    );
}

#[test]
fn reading_never_modifies_the_input() {
    for relative in [SMALL_GZ, SMALL_JSON] {
        let path = kineto_file(relative);
        let before = std::fs::read(&path).expect("read");
        let meta = std::fs::metadata(&path).expect("metadata");
        let trace = read_trace(&path).expect("the file reads");
        assert!(!trace.events.is_empty());
        let after = std::fs::read(&path).expect("read");
        let meta_after = std::fs::metadata(&path).expect("metadata");
        assert!(before == after, "{relative}: bytes changed by reading");
        assert_eq!(
            meta.modified().expect("mtime"),
            meta_after.modified().expect("mtime"),
            "{relative}: mtime changed by reading"
        );
        assert_eq!(
            meta.permissions(),
            meta_after.permissions(),
            "{relative}: permissions changed by reading"
        );
    }
}

#[test]
fn file_and_in_memory_reads_agree() {
    for relative in [SMALL_GZ, SMALL_JSON] {
        let path = kineto_file(relative);
        let from_file = read_trace(&path).expect("file");
        let bytes = std::fs::read(&path).expect("read");
        let from_bytes = read_trace_bytes(&bytes, &path).expect("bytes");
        assert_eq!(from_file.origin_ns, from_bytes.origin_ns, "{relative}");
        assert_eq!(from_file.records, from_bytes.records, "{relative}");
        assert_eq!(from_file.input_bytes, from_bytes.input_bytes, "{relative}");
        assert_eq!(from_file.lanes, from_bytes.lanes, "{relative}");
        assert_eq!(from_file.events, from_bytes.events, "{relative}");
        assert_eq!(from_file.syncs, from_bytes.syncs, "{relative}");
        assert_eq!(from_file.steps, from_bytes.steps, "{relative}");
        assert_eq!(from_file.diagnostics, from_bytes.diagnostics, "{relative}");
    }
}

/// A name that is not UTF-8 fails the read wherever the record goes (kept, a step marker,
/// skipped, an instant, a flow), and so does one after a valid record of the same name; a
/// non-ASCII name that is UTF-8 is kept as written.
#[test]
fn names_that_are_not_utf8_fail_the_read() {
    let record = |name: &[u8], ph: &str, cat: &str| {
        let mut r = format!(r#"{{"ph": "{ph}", "cat": "{cat}", "pid": 1, "tid": 2, "ts": 10, "dur": 5, "id": 3, "name": ""#)
            .into_bytes();
        r.extend_from_slice(name);
        r.extend_from_slice(b"\"}");
        r
    };
    let trace = |records: &[Vec<u8>]| {
        let mut doc = b"{\"traceEvents\": [".to_vec();
        doc.extend_from_slice(&records.join(&b", "[..]));
        doc.extend_from_slice(b"]}");
        doc
    };
    let good = record("aten::mm é".as_bytes(), "X", "cpu_op");
    let read = read_trace_bytes(&trace(std::slice::from_ref(&good)), Path::new("good.json"))
        .expect("UTF-8");
    assert_eq!(read.events.len(), 1);
    assert_eq!(read.name(read.events[0].name), "aten::mm é");

    let bad = b"aten::mm \xff";
    for records in [
        vec![record(bad, "X", "cpu_op")],
        vec![good.clone(), record(b"aten::mm \xc3", "X", "cpu_op")],
        vec![record(b"ProfilerStep#\xff", "X", "cpu_op")],
        vec![record(bad, "X", "no_such_category")],
        vec![good.clone(), record(bad, "X", "cuda_sync")],
        vec![good.clone(), record(bad, "i", "cpu_instant_event")],
        vec![good, record(bad, "f", "ac2g")],
    ] {
        let doc = trace(&records);
        let error = read_trace_bytes(&doc, Path::new("bad.json")).expect_err("not UTF-8");
        assert_eq!(variant(&error), "Json", "{error}");
        assert!(error.to_string().contains("UTF-8"), "{error}");
    }
}

/// An invalid byte deep in a real trace (past the reader's first windows, whose newlines it no
/// longer keeps) is reported at its line and column, counted here independently, whether the
/// file is plain or gzip-compressed, on disk or in memory.
#[test]
fn an_error_deep_in_the_file_names_its_line_and_column() {
    let path = kineto_file(
        "kineto/tb_plugin/samples/resnet50_profiler_api_num_workers_0/worker0.pt.trace.json.gz",
    );
    let mut plain = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("open")),
        &mut plain,
    )
    .expect("gunzip");
    // The colon after the first `"dur"` member name past 20 MB becomes a semicolon.
    let key = b"\"dur\":";
    let at = 20_000_000
        + plain[20_000_000..]
            .windows(key.len())
            .position(|w| w == key)
            .expect("a dur member past 20 MB")
        + key.len()
        - 1;
    plain[at] = b';';
    let line = plain[..at].iter().filter(|&&b| b == b'\n').count() as u64 + 1;
    let line_start = plain[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |nl| nl + 1);
    let column = (at - line_start) as u64 + 1;
    assert!(
        line > 100_000,
        "line {line}: the error must be deep in the file"
    );

    let dir = TempDir::new("deep-error");
    let compressed = gzip(&plain);
    for (name, bytes) in [("deep.json", &plain), ("deep.json.gz", &compressed)] {
        let file = dir.path().join(name);
        std::fs::write(&file, bytes).expect("write");
        for error in [
            read_trace(&file).expect_err("invalid JSON"),
            read_trace_bytes(bytes, &file).expect_err("invalid JSON"),
        ] {
            match &error {
                ReadError::Json {
                    line: l, column: c, ..
                } => assert_eq!((*l, *c), (line, column), "{error}"),
                other => panic!("{name}: expected a JSON error, got {other}"),
            }
            assert!(error.to_string().contains(&format!(":{line}:{column}:")));
        }
    }
}

/// An Execution Trace that is not one, or is cut short, or has a node of another shape: one
/// error naming the file, or the node counted as unread, never a partial trace as whole.
#[test]
fn a_bad_execution_trace_is_named_and_an_odd_node_counted() {
    let dir = TempDir::new("bad-et");
    let et = std::fs::read(kineto_file(
        "HolisticTraceAnalysis/tests/data/execution_trace/benchmark_simple_add_et.json.gz",
    ))
    .expect("the ET");
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&et[..]), &mut plain)
        .expect("gunzip");
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("cut.json", plain[..plain.len() / 2].to_vec(), "Json"),
        (
            "kineto.json.gz",
            std::fs::read(kineto_file(SMALL_GZ)).expect("a Kineto trace"),
            "NotAnExecutionTrace",
        ),
        ("empty.json", b"{}".to_vec(), "NotAnExecutionTrace"),
    ];
    for (name, bytes, expected) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        let error = stepcast_trace::read_execution_trace(&path).expect_err(name);
        assert_eq!(variant(&error), expected, "{name}: {error}");
        assert!(error.to_string().contains(name), "{error}");
    }
    // A node without an id is left out and counted; the others are read.
    let mut json: serde_json::Value = serde_json::from_slice(&plain).expect("JSON");
    let nodes = json["nodes"].as_array_mut().expect("nodes");
    let total = nodes.len();
    nodes[1].as_object_mut().expect("a node").remove("id");
    let path = dir.path().join("odd.json");
    std::fs::write(&path, serde_json::to_vec(&json).expect("JSON")).expect("write");
    let read = stepcast_trace::read_execution_trace(&path).expect("read");
    assert_eq!(read.nodes_unread, 1);
    assert_eq!(read.nodes.len(), total - 1);
}
