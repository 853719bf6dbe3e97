//! `stepcast replay DIR` (and several files): the 8 ranks of one DLRM step as one graph.

use super::stepcast;

/// The 8 rank traces of one DLRM job.
pub(super) const DLRM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/kineto/param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto"
);

#[test]
fn replay_of_a_directory_reports_every_rank() {
    let run = stepcast(&["replay", "--json", DLRM]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["schema"], "stepcast.replay-ranks/1");
    let ranks = json["ranks"].as_array().expect("ranks is an array");
    assert_eq!(ranks.len(), 8);
    for (i, rank) in ranks.iter().enumerate() {
        assert_eq!(rank["rank"], i as i64);
        let steps = rank["steps"].as_array().expect("steps is an array");
        assert_eq!(steps.len(), 1);
        let measured = steps[0]["measured_ns"].as_i64().expect("measured_ns");
        let replayed = steps[0]["replayed_ns"].as_i64().expect("replayed_ns");
        assert!(
            (replayed as f64 / measured as f64 - 1.0).abs() <= 0.02,
            "rank {i}: {replayed} vs {measured}"
        );
    }
    let offsets = json["clock_offsets_ns"]
        .as_array()
        .expect("clock_offsets_ns");
    assert_eq!(offsets.len(), 8);
    assert_eq!(offsets[0], 0);
    // One host, one clock: every offset is within a few µs.
    assert!(
        offsets
            .iter()
            .all(|o| o.as_i64().is_some_and(|o| o.abs() < 10_000))
    );
    assert_eq!(json["clock_alignment"]["status"], "solved");
    assert_eq!(json["collectives"]["matched"], 8);
    assert_eq!(json["stragglers"][0]["last_rank"], 7);
    assert_eq!(json["stragglers"][0]["activity"]["phase"], "forward");

    // Clock alignment: both kinds of dPRO constraints, none violated.
    let alignment = &json["clock_alignment"];
    assert_eq!(alignment["collectives_used"], 3);
    assert_eq!(alignment["send_recv_used"], 5);
    let kinds = alignment["constraint_kinds"]
        .as_array()
        .expect("constraint_kinds");
    for (kind, expected) in kinds.iter().zip(["collective_order", "send_recv"]) {
        assert_eq!(kind["kind"], expected);
        assert_eq!(kind["count"], 56);
    }
    let rows = alignment["ordering_constraints"].as_array().expect("rows");
    assert_eq!(rows.len(), 112);
    assert!(
        rows.iter()
            .all(|c| c["slack_ns"].as_i64().is_some_and(|s| s >= -2_000))
    );

    // Every rank's NCCL time split into waiting and transfer, per collective and in total.
    let per_rank = json["wait_transfer"]["per_rank"]
        .as_array()
        .expect("per_rank");
    assert_eq!(per_rank.len(), 8);
    let collectives = json["wait_transfer"]["collectives"]
        .as_array()
        .expect("collectives");
    assert_eq!(collectives.len(), 8);
    for (r, totals) in per_rank.iter().enumerate() {
        let field = |name: &str| totals[name].as_i64().expect(name);
        assert_eq!(
            field("wait_ns") + field("transfer_ns"),
            field("recorded_ns")
        );
        let waits: i64 = collectives
            .iter()
            .map(|c| c["instances"][r]["wait_ns"].as_i64().expect("wait_ns"))
            .sum();
        assert_eq!(waits, field("wait_ns"));
    }

    // The critical path's time by lane and by rank segment adds up to its length.
    let path = &json["critical_path"];
    let length = path["length_ns"].as_i64().expect("length_ns");
    let sum = |key: &str| -> i64 {
        path[key]
            .as_array()
            .expect(key)
            .iter()
            .map(|x| x["ns"].as_i64().expect("ns"))
            .sum()
    };
    assert_eq!(sum("ns_by_lane"), length);
    assert_eq!(sum("segments"), length);
    assert_eq!(
        path["segments"].as_array().map(Vec::len),
        path["rank_crossings"].as_u64().map(|c| c as usize + 1)
    );
}

#[test]
fn replay_of_several_files_matches_the_directory_and_prints_a_table() {
    let mut files: Vec<String> = std::fs::read_dir(DLRM)
        .expect("the DLRM set is in testdata")
        .map(|e| e.expect("entry").path().display().to_string())
        .collect();
    files.sort();
    files.reverse(); // the order given does not matter: ranks come from the traces
    let mut args = vec!["replay", "--json"];
    args.extend(files.iter().map(String::as_str));
    let by_files = stepcast(&args);
    by_files.assert_success();
    let by_dir = stepcast(&["replay", "--json", DLRM]);
    assert_eq!(
        by_files.json()["ranks"][3]["steps"],
        by_dir.json()["ranks"][3]["steps"]
    );
    assert_eq!(
        by_files.json()["clock_offsets_ns"],
        by_dir.json()["clock_offsets_ns"]
    );

    let text = stepcast(&["replay", DLRM]);
    text.assert_success();
    for needle in [
        "Ranks",
        "Stragglers",
        "Critical path across ranks",
        "Critical path across ranks by lane",
        "clock offset",
        "NCCL wait",
        "send recv",
    ] {
        assert!(
            text.stdout.contains(needle),
            "{needle} missing:\n{}",
            text.stdout
        );
    }
}
