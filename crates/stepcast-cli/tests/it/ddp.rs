//! `stepcast whatif TRACE ddp`: the sweep contract of issue 5 and the scaling table.

use super::{NCCL, stepcast};

#[test]
fn ddp_sweep_json_lists_gpus_and_predicted_ns() {
    let run = stepcast(&[
        "whatif",
        "--json",
        NCCL,
        "ddp",
        "--gpus",
        "8,16,32,64",
        "--net",
        "10Gbps",
    ]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["schema"], "stepcast.whatif/1");
    let sweep = json["sweep"].as_array().expect("sweep is a list");
    assert_eq!(sweep.len(), 4);
    for (row, gpus) in sweep.iter().zip([8, 16, 32, 64]) {
        let keys: Vec<&String> = row.as_object().expect("an object").keys().collect();
        assert_eq!(keys, ["gpus", "predicted_ns"]);
        assert_eq!(row["gpus"], gpus);
        assert!(row["predicted_ns"].as_i64().is_some_and(|ns| ns > 0));
    }
    assert_eq!(json["predicted_ns"], sweep[3]["predicted_ns"]);
    let ddp = &json["ddp"];
    assert_eq!(ddp["gradient_sizes"], "recorded_collectives");
    assert_eq!(ddp["recorded_world_size"], 2);
    assert_eq!(ddp["calibration"]["fits"][0]["collective"], "all_reduce");
    assert_eq!(ddp["configs"][3]["nodes"], 8);
    assert_eq!(ddp["configs"][3]["intra_source"], "calibrated");
    assert_eq!(ddp["configs"][0]["inter_bus_gb_s"], 1.25);
}

#[test]
fn ddp_net_sweep_prints_a_scaling_table() {
    let run = stepcast(&[
        "whatif",
        NCCL,
        "ddp",
        "--gpus",
        "64",
        "--net",
        "10,25,100,400Gbps",
        "--bucket-mb",
        "100",
    ]);
    run.assert_success();
    assert!(run.stdout.contains("Scaling"), "{}", run.stdout);
    assert!(run.stdout.contains("all_reduce"), "{}", run.stdout);
    for gb_s in ["1.25", "3.12", "12.50", "50.00"] {
        assert!(run.stdout.contains(gb_s), "{gb_s}: {}", run.stdout);
    }
}

#[test]
fn ddp_rejects_bad_knobs() {
    for args in [
        ["--gpus", "0"],
        ["--net", "fast"],
        ["--algorithm", "star"],
        ["--bucket-mb", "-1"],
    ] {
        let mut full = vec!["whatif", NCCL, "ddp"];
        full.extend(args);
        let run = stepcast(&full);
        assert!(run.code.is_some_and(|c| c != 0), "{args:?}");
        assert!(run.stdout.is_empty(), "{args:?}");
        assert!(run.stderr.contains(args[1]), "{args:?}: {}", run.stderr);
    }
}
