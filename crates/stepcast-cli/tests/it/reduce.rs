//! `stepcast reduce`: each rank of a job kept as its graph, and a folder of reduced ranks
//! replayed as the traces themselves are; bad reduced files and unreadable ranks said.

use std::path::Path;

use super::ranks::DLRM;
use super::{TempDir, path_str, stepcast};

/// A real two-process job recorded on this project's CPU (`DistributedDataParallel` over
/// gloo; `testdata/kineto/stepcast/cpu-pairs/README.md`).
const GLOO_JOB: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/kineto/stepcast/cpu-pairs/ddp-gloo2"
);

pub(super) fn reduce_into(traces: &str, name: &str) -> TempDir {
    let dir = TempDir::new(name);
    let out = dir.path().join("reduced");
    let run = stepcast(&["reduce", traces, "-o", path_str(&out)]);
    run.assert_success();
    dir
}

/// The uncompressed size of a trace (`.json.gz` traces are counted as their JSON).
fn uncompressed_bytes(path: &Path) -> u64 {
    let bytes = std::fs::read(path).expect("read trace");
    if path.extension().is_some_and(|e| e == "gz") {
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
            .expect("gunzip trace");
        return text.len() as u64;
    }
    bytes.len() as u64
}

#[test]
fn a_reduced_job_replays_byte_for_byte_as_its_traces() {
    for (job, name) in [(DLRM, "dlrm"), (GLOO_JOB, "gloo")] {
        let dir = reduce_into(job, name);
        let reduced = dir.path().join("reduced");
        // One file per rank, each a fraction of its trace (the bar: a quarter at most).
        let mut traces: Vec<_> = std::fs::read_dir(job)
            .expect("list job")
            .map(|e| e.expect("entry").path())
            .collect();
        traces.sort();
        for trace in &traces {
            let file_name = trace.file_name().expect("name").to_string_lossy();
            let rank = reduced.join(format!("{file_name}.stepcast-rank"));
            let rank_bytes = std::fs::metadata(&rank)
                .expect("a reduced rank per trace")
                .len();
            let trace_bytes = uncompressed_bytes(trace);
            assert!(
                rank_bytes * 4 <= trace_bytes,
                "{}: {rank_bytes} bytes reduced from {trace_bytes}",
                rank.display()
            );
        }
        for args in [
            &["replay", "--json"][..],
            &["replay", "--json", "--ranks", "all"],
            &["replay"],
        ] {
            let from_traces = stepcast(&[args, &[job]].concat());
            let from_reduced = stepcast(&[args, &[path_str(&reduced)]].concat());
            from_traces.assert_success();
            from_reduced.assert_success();
            assert!(
                from_traces.stdout == from_reduced.stdout,
                "{name} {args:?}: the reduced folder's document differs from the traces'"
            );
        }
    }
}

#[test]
fn reduce_writes_all_or_nothing_and_never_into_a_folder_of_the_users() {
    let dir = TempDir::new("reduce-into-users");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    std::fs::write(out.join("notes.txt"), "mine").expect("write");
    let run = stepcast(&["reduce", DLRM, "-o", path_str(&out)]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("notes.txt"), "{}", run.stderr);
    assert_eq!(super::file_names(&out), ["notes.txt"]);

    // An unreadable trace among the ranks: nothing written, the file named.
    let job = dir.path().join("job");
    std::fs::create_dir(&job).expect("mkdir");
    for trace in std::fs::read_dir(DLRM).expect("list") {
        let trace = trace.expect("entry").path();
        std::fs::copy(&trace, job.join(trace.file_name().expect("name"))).expect("copy");
    }
    let broken = job.join("worker3_step_12.1694128201557.pt.trace.json");
    let text = std::fs::read(&broken).expect("read");
    std::fs::write(&broken, &text[..text.len() / 2]).expect("truncate");
    let reduced = dir.path().join("reduced");
    let run = stepcast(&["reduce", path_str(&job), "-o", path_str(&reduced)]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("worker3_step_12"), "{}", run.stderr);
    assert!(
        !reduced.exists(),
        "nothing is written when a rank cannot be read"
    );

    // --skip-unreadable: the others reduced, the one left out said.
    let run = stepcast(&[
        "reduce",
        "--skip-unreadable",
        path_str(&job),
        "-o",
        path_str(&reduced),
    ]);
    run.assert_success();
    assert!(run.stdout.contains("Reduced 7 ranks"), "{}", run.stdout);
    assert!(
        run.stdout.contains("Left out (--skip-unreadable)")
            && run.stdout.contains("worker3_step_12"),
        "{}",
        run.stdout
    );
    // Its replay says the rank is missing from the job the others record.
    let replay = stepcast(&["replay", "--json", path_str(&reduced)]);
    replay.assert_success();
    assert_eq!(replay.json()["missing_ranks"], serde_json::json!([3]));
}

#[test]
fn an_unreadable_rank_refuses_the_job_or_is_left_out_and_listed() {
    let dir = TempDir::new("skip-unreadable");
    for trace in std::fs::read_dir(DLRM).expect("list") {
        let trace = trace.expect("entry").path();
        std::fs::copy(&trace, dir.path().join(trace.file_name().expect("name"))).expect("copy");
    }
    let broken = dir
        .path()
        .join("worker5_step_12.1694128201549.pt.trace.json");
    std::fs::write(&broken, b"{\"traceEvents\": [").expect("write");
    let run = stepcast(&["replay", "--json", path_str(dir.path())]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("worker5_step_12"), "{}", run.stderr);

    let run = stepcast(&[
        "replay",
        "--json",
        "--skip-unreadable",
        path_str(dir.path()),
    ]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["ranks"].as_array().map(Vec::len), Some(7));
    assert_eq!(json["missing_ranks"], serde_json::json!([5]));
    let unreadable = json["unreadable"].as_array().expect("unreadable");
    assert_eq!(unreadable.len(), 1);
    assert_eq!(unreadable[0]["file"], path_str(&broken));
    // The reason is the one line the file would have been refused with.
    let refused = stepcast(&["replay", path_str(&broken)]);
    let reason = refused
        .stderr
        .trim()
        .strip_prefix("stepcast: error: ")
        .expect("one error line");
    assert_eq!(unreadable[0]["reason"], reason);
    let text = stepcast(&["replay", "--skip-unreadable", path_str(dir.path())]);
    text.assert_success();
    assert!(text.stdout.contains("worker5_step_12"), "{}", text.stdout);
}

#[test]
fn a_damaged_reduced_rank_is_one_clear_error() {
    let dir = reduce_into(DLRM, "damaged");
    let reduced = dir.path().join("reduced");
    let rank = reduced.join("worker0_step_12.1694128201545.pt.trace.json.stepcast-rank");
    let bytes = std::fs::read(&rank).expect("read");
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "truncated",
            bytes[..bytes.len() - 100].to_vec(),
            "truncated",
        ),
        (
            "version",
            [&bytes[..8], &99u32.to_le_bytes(), &bytes[12..]].concat(),
            "schema version 99",
        ),
        ("trailing", [&bytes[..], b"extra"].concat(), "corrupt"),
        (
            "scrambled",
            [&bytes[..20], &vec![0xff; 64][..], &bytes[84..]].concat(),
            "corrupt",
        ),
    ];
    for (name, damaged, expected) in cases {
        std::fs::write(&rank, &damaged).expect("write");
        let run = stepcast(&["replay", "--json", path_str(&reduced)]);
        assert_eq!(run.code, Some(1), "{name}: {}", run.stdout);
        assert_eq!(run.stderr.lines().count(), 1, "{name}: {}", run.stderr);
        assert!(
            run.stderr.contains("worker0_step_12") && run.stderr.contains(expected),
            "{name}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_folder_of_traces_and_reduced_ranks_is_refused() {
    let dir = reduce_into(DLRM, "mixed");
    let reduced = dir.path().join("reduced");
    for trace in std::fs::read_dir(DLRM).expect("list") {
        let trace = trace.expect("entry").path();
        std::fs::copy(&trace, reduced.join(trace.file_name().expect("name"))).expect("copy");
    }
    let run = stepcast(&["replay", path_str(&reduced)]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("both trace files") && run.stderr.contains("reduced ranks"),
        "{}",
        run.stderr
    );
    // Reducing a reduced rank is a mistake said as such.
    let run = stepcast(&[
        "reduce",
        path_str(&reduced.join("worker0_step_12.1694128201545.pt.trace.json.stepcast-rank")),
        "-o",
        path_str(&dir.path().join("again")),
    ]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("already a reduced rank"),
        "{}",
        run.stderr
    );
}

#[test]
fn optimize_asks_for_the_traces_of_a_reduced_job() {
    let dir = reduce_into(DLRM, "optimize");
    let run = stepcast(&["optimize", path_str(&dir.path().join("reduced"))]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("is a reduced rank") && run.stderr.contains("give the traces"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_export_of_two_processes_reduces_to_two_ranks_that_replay_as_it_does() {
    // A real Nsight Systems export of a two-GPU job: one file, a rank per process.
    let export = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/nsys/nsys-ai/tests/fixtures/h100_2gpu_1s.sqlite"
    );
    let dir = reduce_into(export, "nsys");
    let reduced = dir.path().join("reduced");
    assert_eq!(
        super::file_names(&reduced)
            .into_iter()
            .filter(|n| n.ends_with(".stepcast-rank"))
            .collect::<Vec<_>>(),
        [
            "h100_2gpu_1s.sqlite.0.stepcast-rank",
            "h100_2gpu_1s.sqlite.1.stepcast-rank"
        ]
    );
    let from_export = stepcast(&["replay", "--json", export]);
    let from_reduced = stepcast(&["replay", "--json", path_str(&reduced)]);
    from_export.assert_success();
    from_reduced.assert_success();
    assert!(from_export.stdout == from_reduced.stdout);
}

/// A job reduced with its Execution Traces keeps each rank's join (its data edges are in the
/// graph, its summary in the reduced rank): the reduced folder replays to the document of the
/// traces and ETs, byte for byte. An ET of no rank's process is said in `reduce`'s output (the
/// reduced folder cannot list it, as the traces' document does).
#[test]
fn a_job_reduced_with_its_execution_traces_replays_as_its_traces_and_ets() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/param/et_replay/tests/inputs"
    );
    let ets = format!("{dir}/dlrm_pytorch_et__extracted/dlrm_pytorch_et");
    let stray = format!("{dir}/linear_et.json.gz");
    let tmp = TempDir::new("reduce-ets");
    let out = tmp.path().join("reduced");
    let run = stepcast(&["reduce", DLRM, &ets, &stray, "-o", path_str(&out)]);
    run.assert_success();
    assert!(
        run.stdout.contains(&format!(
            "Not joined (its process is none of the ranks'): {stray}"
        )),
        "{}",
        run.stdout
    );
    let from_traces = stepcast(&["replay", "--json", DLRM, &ets]);
    let from_reduced = stepcast(&["replay", "--json", path_str(&out)]);
    from_traces.assert_success();
    from_reduced.assert_success();
    assert!(from_traces.stdout.contains("\"execution_traces\""));
    assert!(
        from_traces.stdout == from_reduced.stdout,
        "the reduced folder's document differs from the traces and ETs'"
    );
}
