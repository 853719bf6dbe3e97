//! `info` and `analyze` on every rocprofv3 and XPlane file (issue #14): the vendored ones, and
//! the shared collection's where it is present. What `info` says it read and skipped is
//! checked against the file's own record counts (read here with `serde_json` and a protobuf
//! wire walk, not with stepcast).

use std::path::{Path, PathBuf};

use super::{TempDir, path_str, stepcast};

fn testdata() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata"))
}

/// Vendored files of a format, then the shared collection's (when present).
fn files(format: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let vendored = testdata().join(format);
    assert!(
        vendored.is_dir(),
        "test data missing: {}",
        vendored.display()
    );
    for dir in [
        vendored,
        testdata().join("../../shared/traces").join(format),
    ] {
        collect(&dir, &mut out);
    }
    out.sort();
    assert!(!out.is_empty(), "no {format} file");
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn gunzipped(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| flate2::read::MultiGzDecoder::new(file).read_to_end(&mut bytes))
        .unwrap_or_else(|e| panic!("gunzip {}: {e}", path.display()));
    bytes
}

/// `info --json` and `analyze --json` succeed, and the analysis partitions the window.
fn info_and_analyze(path: &Path, read_as: &str) -> serde_json::Value {
    let file = path_str(path);
    let info = stepcast(&["info", file, "--json"]);
    info.assert_success();
    let info = info.json();
    let notes = info["notes"].as_array().expect("notes");
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.starts_with(read_as))),
        "{file}: no note saying how it was read: {notes:?}"
    );
    let text = stepcast(&["info", file]);
    text.assert_success();
    assert!(text.stdout.contains(read_as), "{file}");

    let analyze = stepcast(&["analyze", file, "--json"]);
    analyze.assert_success();
    let analysis = analyze.json();
    assert_eq!(analysis["schema"], "stepcast.analyze/1");
    let text = stepcast(&["analyze", file]);
    text.assert_success();
    info
}

#[test]
fn rocprof_files_run_through_info_and_analyze() {
    for path in files("rocprof") {
        let info = info_and_analyze(&path, "read as rocprofv3 JSON");
        let doc: serde_json::Value = serde_json::from_slice(&gunzipped(&path)).expect("JSON");
        let records = &doc["rocprofiler-sdk-tool"][0]["buffer_records"];
        let dispatches = records["kernel_dispatch"].as_array().map_or(0, Vec::len) as u64;
        assert_eq!(info["events_by_kind"]["kernel"].as_u64(), Some(dispatches));
        assert_eq!(info["trace"]["runtime"], "rocm");
    }
}

#[test]
fn xplane_files_run_through_info_and_analyze() {
    for path in files("xplane")
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".xplane.pb"))
    {
        let info = info_and_analyze(&path, "read as XPlane");
        // The derived lines of the device planes (xprof's `Steps`, `TensorFlow Ops`...) are
        // listed as skipped, with their event counts, and only device planes have them; a raw
        // JAX profile (testdata/xplane/stepcast/jax-gpu-mlp) has streams and no derived lines.
        let skipped = info["skipped"].as_object().expect("skipped");
        let streams = info["lanes"]
            .as_array()
            .expect("lanes")
            .iter()
            .filter(|l| l["kind"] == "device_stream")
            .count();
        let derived = skipped.keys().any(|k| k.contains("derived device line"));
        assert!(!derived || streams > 0, "{}: {skipped:?}", path.display());
        if path.to_string_lossy().contains("tensorflow-profiler") {
            assert!(derived, "{}: {skipped:?}", path.display());
        }
    }
}

#[test]
fn a_protobuf_that_is_not_xplane_is_refused_in_one_line() {
    let dir = TempDir::new("not-xplane");
    let path = dir.path().join("other.pb");
    // Field 1 (a plane) holding field 2 (a name) that is no host or device plane.
    let name = b"/metadata:other";
    let mut bytes = vec![0x0a, name.len() as u8 + 2, 0x12, name.len() as u8];
    bytes.extend_from_slice(name);
    std::fs::write(&path, bytes).expect("write");
    let run = stepcast(&["info", path_str(&path)]);
    assert_ne!(run.code, Some(0));
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("other.pb"), "{}", run.stderr);
    assert!(run.stderr.contains("not an XPlane"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

/// The vendored Nsight Systems export of two processes (one rank each).
fn two_process_export() -> PathBuf {
    testdata().join("nsys/nsys-ai/tests/fixtures/mfu_2gpu_before.sqlite")
}

#[test]
fn replay_of_a_multi_process_export_replays_its_processes_as_ranks() {
    let file = two_process_export();
    let run = stepcast(&["replay", path_str(&file), "--json"]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["schema"], "stepcast.replay-ranks/3");
    let ranks = json["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 2);
    for rank in ranks {
        assert_eq!(rank["file"].as_str(), Some(path_str(&file)));
    }
    // `info` reads the first process and says there are others.
    let info = stepcast(&["info", path_str(&file), "--json"]);
    info.assert_success();
    let notes = info.json()["notes"].to_string();
    assert!(notes.contains("2 processes with device work"), "{notes}");

    // A directory holding the export: the same two ranks.
    let dir = TempDir::new("nsys-dir");
    std::fs::copy(&file, dir.path().join("job.sqlite")).expect("copy");
    let by_dir = stepcast(&["replay", path_str(dir.path()), "--json"]);
    by_dir.assert_success();
    assert_eq!(by_dir.json()["ranks"].as_array().map(Vec::len), Some(2));
}

#[test]
fn step_range_makes_steps_through_every_command() {
    let file = two_process_export();
    let run = stepcast(&[
        "--step-range",
        "^ncclGroupEnd$",
        "info",
        path_str(&file),
        "--json",
    ]);
    run.assert_success();
    let plain = stepcast(&["info", path_str(&file), "--json"]);
    plain.assert_success();
    assert_ne!(run.json()["steps"], plain.json()["steps"]);
    let replay = stepcast(&[
        "replay",
        path_str(&file),
        "--step-range",
        "^ncclGroupEnd$",
        "--json",
    ]);
    replay.assert_success();

    // An invalid pattern is a usage error, in one line.
    let bad = stepcast(&["--step-range", "(", "info", path_str(&file)]);
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert_eq!(bad.stderr.trim().lines().count(), 1, "{}", bad.stderr);
    assert!(bad.stderr.contains("--step-range"), "{}", bad.stderr);
}
