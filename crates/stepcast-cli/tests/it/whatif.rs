//! `stepcast whatif` and `stepcast advise` on real traces: the JSON contract, the ranking,
//! determinism, and clean errors for a bad model or scenario.

use super::{NCCL, TempDir, path_str, stepcast};

/// A single-GPU ResNet-50 (V100), whose GPU work shows on the critical path.
const RESNET50: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/kineto/kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
);

const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/scenarios");

/// Checks the `whatif` document's contract: schema, keys, `speedup = baseline / predicted`.
fn check_whatif(json: &serde_json::Value) -> f64 {
    assert_eq!(json["schema"], "stepcast.whatif/1");
    let baseline = json["baseline_ns"].as_i64().expect("baseline_ns");
    let predicted = json["predicted_ns"].as_i64().expect("predicted_ns");
    let speedup = json["speedup"].as_f64().expect("speedup");
    assert!(baseline > 0 && predicted > 0);
    assert!((speedup - baseline as f64 / predicted as f64).abs() < 1e-9);
    assert_eq!(json["gain_ns"].as_i64(), Some(baseline - predicted));
    for key in [
        "name",
        "models",
        "steady_steps",
        "tasks",
        "phases",
        "host_saved_ns",
        "device_saved_ns",
        "bottleneck_before",
        "bottleneck_after",
    ] {
        assert!(!json[key].is_null(), "{key}");
    }
    assert_eq!(json["phases"].as_array().map(Vec::len), Some(6));
    let after = &json["bottleneck_after"];
    let parts: i64 = [
        "host_ns",
        "compute_ns",
        "copy_ns",
        "communication_ns",
        "wait_ns",
    ]
    .iter()
    .map(|k| after[k].as_i64().expect("bottleneck part"))
    .sum();
    assert_eq!(after["length_ns"].as_i64(), Some(parts));
    speedup
}

/// (trace, arguments, the `name` reported, lowest speedup, highest speedup).
const WHATIFS: &[(&str, &[&str], &str, f64, f64)] = &[
    // The NCCL watchdog thread's 100 ms polls no longer end a step (1.23× while they did).
    (NCCL, &["cuda_graphs"], "cuda_graphs", 3.5, 4.8),
    (
        NCCL,
        &["fused_optimizer", "--factor", "0.5"],
        "fused_optimizer(factor=0.5)",
        1.01,
        1.2,
    ),
    (NCCL, &["faster_cpu"], "faster_cpu", 1.2, 2.0),
    (
        RESNET50,
        &[
            "faster_hardware",
            "--compute",
            "2",
            "--memory",
            "1.5",
            "--cpu",
            "1.2",
        ],
        "faster_hardware(compute=2,memory=1.5,cpu=1.2,copy=1)",
        1.1,
        1.5,
    ),
    (RESNET50, &["amp"], "amp", 0.98, 1.0),
    (RESNET50, &["kernel_fusion"], "kernel_fusion", 1.005, 1.2),
];

#[test]
fn whatif_json_keeps_its_contract() {
    for &(trace, args, name, low, high) in WHATIFS {
        let mut full = vec!["whatif", trace];
        full.extend_from_slice(args);
        full.push("--json");
        let run = stepcast(&full);
        run.assert_success();
        let json = run.json();
        let speedup = check_whatif(&json);
        assert_eq!(json["name"], name, "{args:?}");
        assert!((low..=high).contains(&speedup), "{args:?}: {speedup}");
        assert_eq!(json["scenario"], serde_json::Value::Null);
        assert_eq!(json["trace"]["file"], trace);
    }
}

#[test]
fn whatif_scenario_names_the_file_and_its_models() {
    let scenario = format!("{SCENARIOS}/fused_optimizer_and_cuda_graphs.toml");
    let run = stepcast(&["whatif", RESNET50, "--scenario", &scenario, "--json"]);
    run.assert_success();
    let json = run.json();
    check_whatif(&json);
    assert_eq!(json["name"], "fused optimizer + CUDA graphs");
    assert_eq!(
        json["models"],
        serde_json::json!(["fused_optimizer", "cuda_graphs"])
    );
    assert_eq!(json["scenario"], scenario.as_str());
    let text = stepcast(&["whatif", RESNET50, "--scenario", &scenario]);
    text.assert_success();
    assert!(
        text.stdout
            .contains("What if scenario fused optimizer + CUDA graphs")
    );
    assert!(text.stdout.contains("Critical path per steady step"));
}

#[test]
fn advise_ranks_candidates_best_first() {
    let run = stepcast(&["advise", NCCL, "--json"]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["schema"], "stepcast.advise/1");
    let baseline = json["baseline_ns"].as_i64().expect("baseline_ns");
    let candidates = json["candidates"].as_array().expect("candidates");
    assert!(candidates.len() >= 8);
    let mut previous: Option<(f64, String)> = None;
    for c in candidates {
        let name = c["name"].as_str().expect("name").to_string();
        let models = c["models"].as_array().expect("models");
        assert_eq!(
            name,
            models
                .iter()
                .map(|m| m.as_str().expect("model name"))
                .collect::<Vec<_>>()
                .join(" + ")
        );
        let predicted = c["predicted_ns"].as_i64().expect("predicted_ns");
        let speedup = c["speedup"].as_f64().expect("speedup");
        assert!((speedup - baseline as f64 / predicted as f64).abs() < 1e-9);
        assert!(!c["reason"].as_str().expect("reason").is_empty());
        if let Some((s, n)) = &previous {
            assert!(
                *s > speedup || (*s == speedup && *n < name),
                "{n} ({s}) before {name} ({speedup})"
            );
        }
        previous = Some((speedup, name));
    }
    // The step is host-bound: CUDA graphs help, the GPU-side models do not.
    let find = |name: &str| {
        candidates
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    assert_eq!(json["bottleneck"]["bound"], "host");
    assert_eq!(find("cuda_graphs")["useful"], true);
    assert_eq!(find("amp")["useful"], false);
    assert!(
        find("amp")["reason"]
            .as_str()
            .is_some_and(|r| r.contains("host-bound"))
    );
    let text = stepcast(&["advise", NCCL]);
    text.assert_success();
    assert!(text.stdout.contains("Try first: cuda_graphs"));
    assert!(text.stdout.contains("Not worth it here"));
}

#[test]
fn output_is_byte_identical_across_runs() {
    let commands: [&[&str]; 4] = [
        &["advise", NCCL, "--json"],
        &["advise", NCCL],
        &["whatif", RESNET50, "cuda_graphs", "--json"],
        &["whatif", RESNET50, "amp"],
    ];
    for args in commands {
        let first = stepcast(args);
        first.assert_success();
        let second = stepcast(args);
        assert_eq!(first.stdout, second.stdout, "{args:?}");
    }
}

#[test]
fn whatif_writes_the_file_whole() {
    let dir = TempDir::new("whatif-out");
    let out = dir.path().join("whatif.json");
    let run = stepcast(&[
        "whatif",
        NCCL,
        "cuda_graphs",
        "--json",
        "-o",
        path_str(&out),
    ]);
    run.assert_success();
    assert!(run.stdout.is_empty());
    let text = std::fs::read_to_string(&out).expect("the output file");
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    check_whatif(&json);
    assert_eq!(dir.entries(), ["whatif.json"]);
}

/// Bad models and scenarios: (arguments after the trace, what the one message says). A bad
/// model or parameter is an invalid command line (exit 2); a bad scenario file, exit 1.
const ERRORS: &[(&[&str], &str)] = &[
    (
        &["fused_adamw"],
        "unknown model `fused_adamw`; the models are: fused_optimizer, cuda_graphs, amp",
    ),
    (
        &["cuda_graphs", "--factor", "0.5"],
        "cuda_graphs takes no --factor",
    ),
    (&["faster_hardware", "--cpu", "0"], "invalid --cpu 0"),
    (
        &["--scenario", "SCENARIO"],
        "bad scenario SCENARIO: line 2, column 20: unknown phase `backwards`",
    ),
    (&["--scenario", "MISSING"], "cannot read scenario MISSING"),
    (
        &["recompute", "--fraction", "1.5"],
        "invalid --fraction 1.5",
    ),
    (&["amp", "--fraction", "0.5"], "amp takes no --fraction"),
];

#[test]
fn bad_model_or_scenario_is_one_message_and_nothing_written() {
    let dir = TempDir::new("whatif-errors");
    let scenario = dir.path().join("bad.toml");
    std::fs::write(
        &scenario,
        "[[transform]]\nselect = { phase = \"backwards\" }\nscale = 0.5\n",
    )
    .expect("write scenario");
    let missing = dir.path().join("missing.toml");
    let out = dir.path().join("out.json");
    for &(args, message) in ERRORS {
        let args: Vec<&str> = args
            .iter()
            .map(|&a| match a {
                "SCENARIO" => path_str(&scenario),
                "MISSING" => path_str(&missing),
                other => other,
            })
            .collect();
        let message = message
            .replace("SCENARIO", path_str(&scenario))
            .replace("MISSING", path_str(&missing));
        let mut full = vec!["whatif", NCCL];
        full.extend_from_slice(&args);
        full.extend_from_slice(&["--json", "-o", path_str(&out)]);
        let run = stepcast(&full);
        let code = if args.contains(&"--scenario") { 1 } else { 2 };
        assert_eq!(run.code, Some(code), "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.starts_with("stepcast: error: ") && run.stderr.contains(&message),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(dir.entries(), ["bad.toml"], "{args:?}");
    }
    // Neither a model nor a scenario, or both: a usage error.
    assert_eq!(stepcast(&["whatif", NCCL]).code, Some(2));
    let both = stepcast(&["whatif", NCCL, "amp", "--scenario", path_str(&scenario)]);
    assert_eq!(both.code, Some(2));
}

/// Memory-for-time trades report the memory they save next to the (usually longer) step;
/// other models have no `memory` key.
#[test]
fn memory_trades_report_the_memory_they_save() {
    let mut saved = Vec::new();
    for (args, name) in [
        (
            &["recompute", "--fraction", "0.5"][..],
            "recompute(fraction=0.5)",
        ),
        (
            &["recompute", "--fraction", "0.25"][..],
            "recompute(fraction=0.25)",
        ),
        (&["recompute"][..], "recompute"),
        (&["offload"][..], "offload"),
        (&["gist"][..], "gist"),
    ] {
        let mut full = vec!["whatif", RESNET50];
        full.extend_from_slice(args);
        full.push("--json");
        let run = stepcast(&full);
        run.assert_success();
        let json = run.json();
        let speedup = check_whatif(&json);
        assert_eq!(json["name"], name);
        assert!(speedup <= 1.0, "{name}: {speedup}");
        let memory = &json["memory"];
        let bytes = |key: &str| {
            memory[key]
                .as_i64()
                .unwrap_or_else(|| panic!("{name} {key}"))
        };
        assert_eq!(memory["source"], "memory_events", "{name}");
        assert!(bytes("saved_bytes") > 0, "{name}");
        assert!(bytes("saved_bytes") <= bytes("chosen_bytes"), "{name}");
        assert!(bytes("chosen_bytes") <= bytes("activation_bytes"), "{name}");
        // This 2021 trace's memory events record no addresses: the peak with the trade is not
        // claimed (never the recorded peak less the activations' saving).
        assert!(bytes("peak_before_bytes") > 0, "{name}");
        assert!(memory["peak_after_bytes"].is_null(), "{name}");
        assert!(memory["step_peak_source"].is_null(), "{name}");
        saved.push(bytes("saved_bytes"));
    }
    // Recomputing a quarter of the activations saves less than recomputing half.
    assert!(saved[1] < saved[0]);
    let run = stepcast(&["whatif", RESNET50, "reconstruct_batchnorm", "--json"]);
    run.assert_success();
    let json = run.json();
    assert!(check_whatif(&json) >= 1.0);
    assert!(json.get("memory").is_none());
    let text = stepcast(&["whatif", RESNET50, "recompute"]);
    text.assert_success();
    assert!(text.stdout.contains("Memory: it saves"));
    // advise lists the trades apart, with their memory, never among the candidates.
    let run = stepcast(&["advise", RESNET50, "--json"]);
    run.assert_success();
    let json = run.json();
    let trades = json["memory_trades"].as_array().expect("memory_trades");
    let names: Vec<&str> = trades.iter().filter_map(|c| c["name"].as_str()).collect();
    assert_eq!(names, ["recompute", "offload", "gist"]);
    assert!(
        trades
            .iter()
            .all(|c| c["memory"]["saved_bytes"].as_i64() > Some(0))
    );
    let candidates = json["candidates"].as_array().expect("candidates");
    assert!(candidates.iter().all(|c| c.get("memory").is_none()));
    let text = stepcast(&["advise", RESNET50]);
    text.assert_success();
    assert!(text.stdout.contains("Memory-for-time trades"));
}

/// On ROCm, CUDA graphs are HIP graphs: `advise` names the model `hip_graphs`, `whatif` takes
/// either name for the same prediction, and a CUDA trace keeps `cuda_graphs`.
#[test]
fn hip_traces_name_hip_graphs() {
    let amd = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/HolisticTraceAnalysis/tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
    );
    let names = |trace: &str| {
        let run = stepcast(&["advise", trace, "--json"]);
        run.assert_success();
        let json = run.json();
        let names: Vec<String> = json["candidates"]
            .as_array()
            .expect("candidates")
            .iter()
            .filter_map(|c| c["name"].as_str().map(str::to_string))
            .collect();
        names
    };
    let on_amd = names(amd);
    assert!(on_amd.iter().any(|n| n == "hip_graphs"), "{on_amd:?}");
    assert!(
        !on_amd.iter().any(|n| n.contains("cuda_graphs")),
        "{on_amd:?}"
    );
    let on_nvidia = names(NCCL);
    assert!(
        on_nvidia.iter().any(|n| n == "cuda_graphs"),
        "{on_nvidia:?}"
    );
    assert!(
        !on_nvidia.iter().any(|n| n.contains("hip_graphs")),
        "{on_nvidia:?}"
    );
    let predicted = |model: &str| {
        let run = stepcast(&["whatif", amd, model, "--json"]);
        run.assert_success();
        let json = run.json();
        (json["predicted_ns"].clone(), json["name"].clone())
    };
    let (hip, hip_name) = predicted("hip_graphs");
    let (cuda, cuda_name) = predicted("cuda_graphs");
    assert_eq!(hip, cuda);
    assert_eq!(hip_name, "hip_graphs");
    assert_eq!(cuda_name, "hip_graphs");
}

/// A model that removes waits (syncs, loading) is bounded by the waits it could remove, not by
/// a collective's wait for its peers: on a rank of a CPU job over gloo (no device, no sync, no
/// loader), whose worker threads wait 210 ms a step for the other ranks, `remove_syncs` and
/// `prefetch_inputs` predict ×1 and say they can gain nothing (their bound counted those
/// waits: 320 ms, ×2.17, a bound no change to this rank could reach).
#[test]
fn waits_for_peers_are_no_bound_of_a_model_that_removes_waits() {
    let rank = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/stepcast/cpu-jobs/tp2pp2dp2/rank4.json.gz"
    );
    for model in ["remove_syncs", "prefetch_inputs"] {
        let run = stepcast(&["whatif", rank, model, "--json"]);
        run.assert_success();
        let json = run.json();
        assert!(
            json["peers"]["wait_ns"].as_i64().is_some_and(|w| w > 0),
            "{model}: the rank waits for its peers"
        );
        assert_eq!(json["gain_ns"], 0, "{model}");
        assert_eq!(json["trust"]["bound_ns"], 0, "{model}");
    }
}

/// On a trace whose memory events record addresses (a CPU transformer, `cpu-memory-probe`),
/// a memory trade's line gives the step's own peak read off the recorded memory, and says it
/// does not move where the probe measured it did not (its checkpointed step peaked at the
/// same bytes): the activations' saving alone is never offered as the peak's fall.
#[test]
fn memory_trade_gives_the_step_peak_read_off_the_recorded_memory() {
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/stepcast/cpu-memory-probe/traces/transformer-base.json.gz"
    );
    let run = stepcast(&["whatif", trace, "recompute", "--json"]);
    run.assert_success();
    let json = run.json();
    let memory = &json["memory"];
    assert_eq!(memory["step_peak_source"], "memory_timeline");
    assert_eq!(memory["step_peak_saved_bytes"], 0);
    assert!(memory["saved_bytes"].as_i64() > Some(0));
    assert_eq!(memory["peak_after_bytes"], memory["peak_before_bytes"]);
    assert_eq!(
        memory["step_peak_before_bytes"],
        memory["step_peak_after_bytes"]
    );
    let text = stepcast(&["whatif", trace, "recompute"]);
    text.assert_success();
    let flat = text.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Memory: it leaves the step's own peak (above its start, read off the recorded memory events) at 3 MiB"),
        "{flat}"
    );
}
