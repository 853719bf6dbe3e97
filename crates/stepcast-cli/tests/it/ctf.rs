//! CTF traces through the binary: `info`, `analyze` and `replay` run on each (a directory is
//! the trace), the scheduler-explained host gaps are in `analyze`'s text and JSON, and a CTF
//! trace with nothing stepcast reads is one error line naming it, never an empty report.

use super::stepcast;

fn ctf(relative: &str) -> String {
    format!(
        "{}/../../testdata/ctf/{relative}",
        env!("CARGO_MANIFEST_DIR")
    )
}

#[test]
fn info_analyze_and_replay_run_on_the_ctf_traces() {
    for trace in [
        "tracecompass-test-traces/mpi_allreduce",
        "tracecompass-test-traces/context-switches/context-switches-ust",
        "recorded/train-session",
    ] {
        let path = ctf(trace);
        for command in ["info", "analyze", "replay"] {
            let run = stepcast(&[command, "--json", &path]);
            run.assert_success();
            let json = run.json();
            assert!(json.is_object(), "{trace} {command}");
        }
        // Host-only: the info document says there is no device work.
        let info = stepcast(&["info", &path]);
        info.assert_success();
        assert!(info.stdout.contains("no device activity"), "{trace}");
    }
}

#[test]
fn analyze_explains_the_recorded_host_gaps_with_the_scheduler() {
    let path = ctf("recorded/train-session");
    let run = stepcast(&["analyze", "--json", &path]);
    run.assert_success();
    let json = run.json();
    let steps = json["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 12);
    for step in steps {
        let off = &step["off_cpu"];
        let gap = off["gap_ns"].as_i64().expect("gap_ns");
        let waiting = off["gap_off_cpu_ns"]["waiting"].as_i64().expect("waiting");
        assert!(waiting > 0 && waiting <= gap, "{off}");
        assert!(
            off["intervals"]
                .as_array()
                .expect("intervals")
                .iter()
                .any(|i| i["reason"] == "blocked" && i["woken_by"]["tid"].is_i64())
        );
    }
    let text = stepcast(&["analyze", &path]);
    text.assert_success();
    assert!(
        text.stdout.contains("Host thread off its CPU"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("blocked waiting"), "{}", text.stdout);
    // A Kineto trace has no scheduler events: `off_cpu` is null, not zeros.
    let kineto = stepcast(&["analyze", "--json", super::TRACE]);
    kineto.assert_success();
    assert!(kineto.json()["steps"][0]["off_cpu"].is_null());
}

#[test]
fn a_ctf_trace_with_nothing_stepcast_reads_is_one_error_line() {
    let path = ctf("tracecompass-test-traces/CTF2-7.0-trace-with-index");
    for command in ["info", "analyze", "replay"] {
        let run = stepcast(&[command, &path]);
        assert_eq!(run.code, Some(1), "{command}");
        assert!(run.stdout.is_empty(), "{command}: {}", run.stdout);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(
            run.stderr.contains("CTF2-7.0-trace-with-index"),
            "{}",
            run.stderr
        );
        assert!(!run.stderr.contains("panick"), "{}", run.stderr);
    }
}
