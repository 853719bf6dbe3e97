//! `stepcast optimize`: a plan in JSON that is the same whatever the thread count, no slower
//! than the defaults it lists, and that `export --plan` turns into a predicted timeline; bad
//! options and bad plan files are one-line errors.

use std::process::Command;

use super::export::check_chrome_trace;
use super::{NCCL, TempDir, path_str, stepcast};

/// `optimize` with `args`, on `threads` rayon threads; returns stdout.
fn optimize_on(threads: &str, args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_stepcast"))
        .arg("optimize")
        .args(args)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .expect("the stepcast binary runs");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

#[test]
fn optimize_json_is_a_plan_and_the_same_on_any_thread_count() {
    let one = optimize_on("1", &[NCCL, "--json"]);
    let three = optimize_on("3", &[NCCL, "--json"]);
    assert_eq!(one, three, "the JSON depends on the thread count");
    let doc: serde_json::Value = serde_json::from_str(&one).expect("JSON");
    assert_eq!(doc["schema"], "stepcast.optimize/1");
    assert_eq!(doc["search"]["stopped"], "converged");
    let planned = doc["planned_ns"].as_i64().expect("planned_ns");
    let baseline = doc["baseline_ns"].as_i64().expect("baseline_ns");
    assert!(planned < baseline);
    let moves = doc["moves"].as_array().expect("moves");
    assert!(!moves.is_empty());
    for m in moves {
        assert!(!m["pytorch"].as_str().expect("pytorch").is_empty());
        assert!(m["alone_ns"].as_i64().is_some());
        assert!(m["gain_in_plan_ns"].as_i64().expect("gain") >= 0);
        // Each move's trust, as `whatif`'s: a bound within the step, caveats, and the
        // window's decline (none on this trace).
        let trust = &m["trust"];
        let bound = trust["bound_ns"].as_i64().expect("bound_ns");
        assert!((0..=baseline).contains(&bound), "{m}");
        assert!(trust["caveats"].is_array(), "{m}");
        assert!(
            trust["declined"].is_null() && trust.get("anomaly").is_some(),
            "{m}"
        );
    }
    assert!(doc["declined"].is_null(), "{doc}");
    for r in doc["references"].as_array().expect("references") {
        assert!(
            r["plan_gain_ns"].as_i64().expect("plan_gain_ns") >= 0,
            "{r}"
        );
    }
    let text = stepcast(&["optimize", NCCL]);
    text.assert_success();
    assert!(
        text.stdout.contains("Against the defaults"),
        "{}",
        text.stdout
    );
}

/// The predicted timeline of a plan that fuses kernels: a conformant Chrome trace whose
/// replayed process holds fewer kernels than the recording and whose steps end sooner than
/// the replay of the recorded program's.
#[test]
fn export_plan_writes_the_predicted_timeline() {
    let dir = TempDir::new("optimize-export");
    let plan = dir.path().join("plan.json");
    let run = stepcast(&[
        "optimize",
        NCCL,
        "--passes",
        "op_fusion",
        "--json",
        "-o",
        path_str(&plan),
    ]);
    run.assert_success();
    let planned = dir.path().join("planned.json");
    let plain = dir.path().join("plain.json");
    stepcast(&[
        "export",
        NCCL,
        "--plan",
        path_str(&plan),
        "-o",
        path_str(&planned),
    ])
    .assert_success();
    stepcast(&["export", NCCL, "-o", path_str(&plain)]).assert_success();
    let read = |p: &std::path::Path| check_chrome_trace(&std::fs::read_to_string(p).expect("read"));
    let (planned, plain) = (read(&planned), read(&plain));
    let kernels = |s: &super::export::Summary, pid: i64, cat: &str| {
        s.slices
            .iter()
            .filter(|x| x.pid == pid && x.cat == cat)
            .count()
    };
    assert!(
        kernels(&planned, 2, "replay.kernel") < kernels(&plain, 1, "kernel"),
        "the plan fuses kernels"
    );
    // The last step as replayed ends sooner with the plan; as recorded, it is the same.
    let end = |s: &super::export::Summary, pid: i64| {
        s.slices
            .iter()
            .filter(|x| x.pid == pid && x.cat == "stepcast.step")
            .map(|x| x.end_ns)
            .max()
            .expect("step slices")
    };
    assert!(
        end(&planned, 2) < end(&plain, 2),
        "the plan is predicted faster"
    );
    assert_eq!(end(&planned, 1), end(&plain, 1));
}

#[test]
fn bad_options_and_plans_are_one_line_errors() {
    let run = stepcast(&["optimize", NCCL, "--passes", "op_fusion,warp_drive"]);
    assert_eq!(run.code, Some(2));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("unknown pass `warp_drive`"),
        "{}",
        run.stderr
    );
    let run = stepcast(&["optimize", NCCL, "--memory-budget", "-1"]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
    let dir = TempDir::new("optimize-bad-plan");
    let not_a_plan = dir.path().join("not_a_plan.json");
    std::fs::write(&not_a_plan, "{\"schema\": \"stepcast.advise/1\"}").expect("write");
    let out = dir.path().join("out.json");
    let run = stepcast(&[
        "export",
        NCCL,
        "--plan",
        path_str(&not_a_plan),
        "-o",
        path_str(&out),
    ]);
    assert_eq!(run.code, Some(1));
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("not_a_plan.json is not a plan"),
        "{}",
        run.stderr
    );
    assert!(!out.exists(), "nothing written");
    let bad_move = dir.path().join("bad_move.json");
    std::fs::write(
        &bad_move,
        "{\"schema\": \"stepcast.optimize/1\", \"moves\": [{\"move\": {\"kind\": \"teleport\"}}]}",
    )
    .expect("write");
    let run = stepcast(&[
        "export",
        NCCL,
        "--plan",
        path_str(&bad_move),
        "-o",
        path_str(&out),
    ]);
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("move 1 is not a move"),
        "{}",
        run.stderr
    );
    assert!(!out.exists(), "nothing written");
}
