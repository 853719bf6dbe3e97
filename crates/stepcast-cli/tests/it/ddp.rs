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

/// One GPU, ResNet-50, SGD, recorded shapes: no collectives.
const RESNET50: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/kineto/kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
);

#[test]
fn ddp_inserts_all_reduces_into_a_one_gpu_trace() {
    let run = stepcast(&[
        "whatif", "--json", RESNET50, "ddp", "--gpus", "8,64", "--net", "1Gbps",
    ]);
    run.assert_success();
    let json = run.json();
    let ddp = &json["ddp"];
    assert_eq!(ddp["gradient_sizes"], "recorded_shapes");
    assert_eq!(ddp["insertion"]["parameters"], 161);
    assert_eq!(ddp["insertion"]["ready_points"], "autograd");
    // DDP's buckets of ResNet-50 (1 MiB first, then 25 MiB): five per step.
    assert_eq!(ddp["configs"][0]["all_reduces_per_step"], 5.0);
    let sweep = json["sweep"].as_array().expect("sweep");
    let ns: Vec<i64> = sweep
        .iter()
        .filter_map(|r| r["predicted_ns"].as_i64())
        .collect();
    // More ranks on the same slow network: never faster.
    assert!(ns.len() == 2 && ns[1] >= ns[0], "{ns:?}");
    assert!(ns[0] >= json["baseline_ns"].as_i64().expect("baseline"));
}

#[test]
fn ddp_compression_p3_and_fsdp_flags() {
    for (flag, key, value) in [
        (&["--compress", "dgc:0.01"][..], "compression", "dgc:0.01"),
        (&["--p3"][..], "p3", "true"),
        (&["--fsdp"][..], "fsdp", "true"),
    ] {
        let mut args = vec!["whatif", "--json", RESNET50, "ddp", "--gpus", "16"];
        args.extend(flag);
        let run = stepcast(&args);
        run.assert_success();
        let json = run.json();
        let config = &json["ddp"]["configs"][0];
        assert_eq!(config[key].to_string().trim_matches('"'), value, "{flag:?}");
        assert!(
            config["exchanges_per_step"]
                .as_f64()
                .is_some_and(|n| n > 0.0)
        );
    }
    for args in [["--compress", "zip"], ["--compress", "dgc:2"]] {
        let mut full = vec!["whatif", RESNET50, "ddp"];
        full.extend(args);
        let run = stepcast(&full);
        assert!(run.code.is_some_and(|c| c != 0), "{args:?}");
        assert!(run.stderr.contains(args[1]), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn ddp_reinsert_reads_a_gradient_file() {
    let dir = std::env::temp_dir().join(format!("stepcast-ddp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("gradients.txt");
    // ResNet-50's fc layer and one more parameter, as `NAME BYTES` lines.
    std::fs::write(
        &file,
        "# name bytes\nconv1.weight 37632\nfc.weight 8192000\nfc.bias 4000\n",
    )
    .expect("write");
    let path = file.display().to_string();
    let run = stepcast(&[
        "whatif",
        "--json",
        NCCL,
        "ddp",
        "--gpus",
        "2",
        "--reinsert",
        "--gradients",
        &path,
    ]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["ddp"]["gradient_sizes"], "file");
    assert_eq!(
        json["ddp"]["insertion"]["gradient_bytes_per_step"],
        8_233_632
    );
    assert!(
        json["ddp"]["insertion"]["stripped_collectives"]
            .as_i64()
            .is_some_and(|n| n > 0)
    );
    std::fs::write(&file, "conv1.weight lots\n").expect("write");
    let run = stepcast(&["whatif", NCCL, "ddp", "--reinsert", "--gradients", &path]);
    assert!(run.code.is_some_and(|c| c != 0));
    assert!(run.stderr.contains("line 1"), "{}", run.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// DDP over gloo from a one-process CPU trace (`cpu-pairs/ddp-single`: the gradients' ready
/// points are the host tasks holding their `AccumulateGrad` ops): the gradient bytes inserted
/// are those ops' recorded input shapes in one step, counted here in the JSON apart from
/// stepcast; exchanges only add work, so the step is never shorter, and a slower link never
/// makes it shorter; what has no CPU counterpart (P3) is refused in one line.
#[test]
fn ddp_on_a_cpu_trace_exchanges_the_recorded_gradients_on_a_worker_thread() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/stepcast/cpu-pairs/ddp-single.json.gz"
    );
    let predict = |link: &str| {
        let run = stepcast(&[
            "whatif",
            trace,
            "ddp",
            "--gpus",
            "2",
            "--gpus-per-node",
            "2",
            "--intra",
            link,
            "--json",
        ]);
        run.assert_success();
        run.json()
    };
    let (fast, slow) = (predict("1.1GB/s"), predict("0.1GB/s"));
    // The reference: the AccumulateGrad ops of one profiler step, elements × 4 bytes (float).
    let raw = super::ranks::gzipped_json(trace);
    let events = raw["traceEvents"].as_array().expect("events");
    let step = events
        .iter()
        .find(|e| {
            e["ph"] == "X"
                && e["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("ProfilerStep#"))
        })
        .expect("a step");
    let (from, to) = (
        step["ts"].as_f64().expect("ts"),
        step["ts"].as_f64().expect("ts") + step["dur"].as_f64().expect("dur"),
    );
    let bytes: i64 = events
        .iter()
        .filter(|e| e["name"] == "torch::autograd::AccumulateGrad")
        .filter(|e| e["ts"].as_f64().is_some_and(|t| from <= t && t <= to))
        .map(|e| {
            let dims = &e["args"]["Input Dims"][0];
            4 * dims
                .as_array()
                .expect("dims")
                .iter()
                .map(|d| d.as_i64().expect("a dim"))
                .product::<i64>()
        })
        .sum();
    assert!(bytes > 1_000_000, "{bytes}");
    assert_eq!(fast["ddp"]["insertion"]["gradient_bytes_per_step"], bytes);
    assert_eq!(fast["ddp"]["insertion"]["ready_points"], "autograd");
    let ns = |doc: &serde_json::Value, key: &str| doc[key].as_i64().expect(key);
    assert!(ns(&fast, "predicted_ns") >= ns(&fast, "baseline_ns"));
    assert!(ns(&slow, "predicted_ns") > ns(&fast, "predicted_ns"));
    assert!(
        fast["trust"]["caveats"]
            .as_array()
            .expect("caveats")
            .iter()
            .any(|c| c.as_str().is_some_and(|c| c.contains("CPU-only"))),
        "{}",
        fast["trust"]
    );
    let p3 = stepcast(&["whatif", trace, "ddp", "--gpus", "2", "--p3"]);
    assert_eq!(p3.code, Some(1));
    assert!(
        p3.stderr.contains("CPU-only") && p3.stderr.trim().lines().count() == 1,
        "{}",
        p3.stderr
    );
}
