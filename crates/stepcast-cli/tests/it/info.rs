//! `stepcast info` on a real trace.

use super::{TRACE, stepcast};

#[test]
fn info_text_names_the_device_and_lanes() {
    let run = stepcast(&["info", TRACE]);
    run.assert_success();
    assert!(run.stdout.starts_with(TRACE));
    assert!(run.stdout.contains("NVIDIA A100-PG509-200"));
    assert!(run.stdout.contains("\nLanes\n"));
    assert!(run.stdout.contains("\nEvents by kind\n"));
    assert!(run.stdout.contains("\nSkipped records\n"));
}

#[test]
fn info_json_describes_the_trace() {
    let run = stepcast(&["info", TRACE, "--json"]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["schema"], "stepcast.info/1");
    assert_eq!(json["trace"]["runtime"], "cuda");
    assert_eq!(json["device"]["id"], 0);
    assert_eq!(json["device"]["compute_capability"], "8.0");
    let lanes = json["lanes"].as_array().expect("lanes");
    assert!(lanes.iter().any(|lane| lane["kind"] == "cpu_thread"));
    assert!(lanes.iter().any(|lane| lane["kind"] == "device_stream"));
    let events: u64 = lanes
        .iter()
        .filter_map(|lane| lane["events"].as_u64())
        .sum();
    assert_eq!(json["trace"]["events"].as_u64(), Some(events));
    assert_eq!(json["steps"][0]["number"], 100);
    assert!(
        json["events_by_kind"]["kernel"]
            .as_u64()
            .is_some_and(|n| n > 0)
    );
    assert!(json["graph"]["tasks"].as_u64().is_some_and(|n| n > 0));
    assert!(json["skipped"].is_object());
}

/// The host ops of a Kineto trace's JSON (`cpu_op` and `user_annotation` ranges, step markers
/// left out): what an Execution Trace joins, read apart from stepcast.
fn host_ops(kineto: &serde_json::Value) -> Vec<&serde_json::Value> {
    kineto["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "X" && (e["cat"] == "cpu_op" || e["cat"] == "user_annotation"))
        .filter(|e| {
            !e["name"]
                .as_str()
                .unwrap_or("")
                .starts_with("ProfilerStep#")
        })
        .collect()
}

/// `info --et FILE`: the Execution Trace of the same run joined with the trace. On HTA's pair
/// the Kineto ops carry the ET's record-function ids: the join is held to the ops whose
/// `External id` names an ET node of their own name, counted in the two files' JSON apart from
/// stepcast. A Kineto trace given as the ET is named as such.
#[test]
fn info_joins_an_execution_trace_and_reports_its_coverage() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/HolisticTraceAnalysis/tests/data/execution_trace"
    );
    let kineto = format!("{dir}/benchmark_simple_add_trace.json.gz");
    let et = format!("{dir}/benchmark_simple_add_et.json.gz");
    let run = stepcast(&["info", &kineto, "--et", &et, "--json"]);
    run.assert_success();
    let section = &run.json()["execution_trace"];
    // The reference: ops (cpu_op, user_annotation; no step marker) whose External id is the
    // rf_id of an ET node of the same name.
    let et_json = super::ranks::gzipped_json(&et);
    let nodes: std::collections::HashMap<i64, &str> = et_json["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| Some((n["rf_id"].as_i64()?, n["name"].as_str()?)))
        .collect();
    let kineto_json = super::ranks::gzipped_json(&kineto);
    let ops = host_ops(&kineto_json);
    let by_id = ops
        .iter()
        .filter(|e| {
            let id = e["args"]["External id"].as_i64().unwrap_or(-1);
            nodes.get(&id) == Some(&e["name"].as_str().unwrap_or(""))
        })
        .count();
    assert!(by_id > 0);
    assert_eq!(section["method"], "record_function_id");
    assert_eq!(section["joined"], by_id as u64);
    assert_eq!(section["ops_in_span"], ops.len() as u64);
    assert_eq!(section["schema"], "1.0.1");
    let text = stepcast(&["info", &kineto, "--et", &et]);
    text.assert_success();
    assert!(text.stdout.contains("Execution Trace"), "{}", text.stdout);
    let swapped = stepcast(&["info", &kineto, "--et", &kineto]);
    assert_eq!(swapped.code, Some(1));
    assert!(
        swapped.stderr.contains("is not a PyTorch Execution Trace")
            && swapped.stderr.contains("Kineto trace"),
        "{}",
        swapped.stderr
    );
}

/// A current PyTorch's ET (schema 1.1: `rf_id` among a node's `attrs`, tensors under
/// `inputs.values`), recorded here: joined by record-function id, held to the ops whose
/// `Record function id` names an ET node of their own name, counted in the two files apart
/// from stepcast; the data dependencies it states are read (within the one training thread).
#[test]
fn info_joins_a_schema_1_1_execution_trace_by_record_function_id() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/stepcast/cpu-et"
    );
    let (kineto, et) = (
        format!("{dir}/cnn_kineto.json.gz"),
        format!("{dir}/cnn_et.json.gz"),
    );
    let run = stepcast(&["info", &kineto, "--et", &et, "--json"]);
    run.assert_success();
    let section = &run.json()["execution_trace"];
    let et_json = super::ranks::gzipped_json(&et);
    let attr = |node: &serde_json::Value, name: &str| -> Option<i64> {
        node["attrs"]
            .as_array()?
            .iter()
            .find(|a| a["name"] == name)?["value"]
            .as_i64()
    };
    let nodes: std::collections::HashMap<i64, &str> = et_json["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| Some((attr(n, "rf_id")?, n["name"].as_str()?)))
        .collect();
    let kineto_json = super::ranks::gzipped_json(&kineto);
    let by_id = host_ops(&kineto_json)
        .into_iter()
        .filter(|e| {
            let id = e["args"]["Record function id"].as_i64().unwrap_or(-1);
            nodes.get(&id) == Some(&e["name"].as_str().unwrap_or(""))
        })
        .count();
    assert!(by_id > 1000, "{by_id}");
    assert_eq!(section["method"], "record_function_id");
    assert_eq!(section["joined"], by_id as u64);
    assert_eq!(section["schema"], "1.1.1-chakra.0.0.4");
    assert!(
        section["data_same_thread"].as_u64() > Some(500),
        "{section}"
    );
}

/// `--et` on any command that reads one trace: the graph gains the ET's cross-thread data
/// dependencies as `data` edges (at most one per dependency `info` counts), and a what-if runs
/// on it. A folder of ranks with `--et` is a usage error, in one line.
#[test]
fn replay_with_an_execution_trace_counts_its_data_edges_and_a_job_refuses_it() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/param/et_replay/tests/inputs"
    );
    let (kineto, et) = (
        format!("{dir}/linear_kineto.json.gz"),
        format!("{dir}/linear_et.json.gz"),
    );
    let info = stepcast(&["info", &kineto, "--et", &et, "--json"]);
    info.assert_success();
    let links = info.json()["execution_trace"]["data_links"]
        .as_u64()
        .expect("data_links");
    let replay = stepcast(&["replay", &kineto, "--et", &et, "--json"]);
    replay.assert_success();
    let data: u64 = replay.json()["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["edges_by_kind"]["data"].as_u64().expect("data edges"))
        .sum();
    assert!(
        data > 0 && data <= links,
        "{data} data edges, {links} dependencies"
    );
    let alone = stepcast(&["replay", &kineto, "--json"]);
    alone.assert_success();
    assert_eq!(alone.json()["steps"][0]["edges_by_kind"]["data"], 0);
    let whatif = stepcast(&["whatif", &kineto, "kernel_fusion", "--et", &et, "--json"]);
    whatif.assert_success();
    let job = stepcast(&["replay", dir, "--et", &et]);
    assert_eq!(job.code, Some(2), "{}", job.stderr);
    assert!(
        job.stderr.contains("--et") && job.stderr.trim().lines().count() == 1,
        "{}",
        job.stderr
    );
}

/// A job's Execution Traces among its inputs (PARAM's DLRM: the ranks' traces in one folder,
/// rank 0's ET in another), told by content and paired with the rank of their process: the
/// document lists the join, the job replays as without it (the data edges are the program's,
/// the recording honours them), and a folder of ETs alone is refused in one line.
#[test]
fn a_jobs_execution_traces_are_paired_with_their_ranks_by_process() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/kineto/param/et_replay/tests/inputs"
    );
    let (traces, ets) = (
        format!("{dir}/dlrm_kineto__extracted/dlrm_kineto"),
        format!("{dir}/dlrm_pytorch_et__extracted/dlrm_pytorch_et"),
    );
    let with = stepcast(&["replay", &traces, &ets, "--json"]);
    with.assert_success();
    let alone = stepcast(&["replay", &traces, "--json"]);
    alone.assert_success();
    let (with, alone) = (with.json(), alone.json());
    assert!(alone.get("execution_traces").is_none());
    let joined = with["execution_traces"]
        .as_array()
        .expect("execution_traces");
    assert_eq!(joined.len(), 1, "{joined:?}");
    assert_eq!(joined[0]["rank"], 0);
    let (ops, got) = (
        joined[0]["ops_in_span"].as_u64().expect("ops"),
        joined[0]["joined"].as_u64().expect("joined"),
    );
    assert!(got * 100 >= ops * 95, "{got} of {ops}");
    assert!(joined[0]["data_links"].as_u64() > Some(0));
    assert_eq!(with["max_abs_error"], alone["max_abs_error"]);
    let text = stepcast(&["replay", &traces, &ets]);
    assert!(
        text.stdout.contains("Execution Traces joined: 1 rank"),
        "{}",
        text.stdout
    );
    let only = stepcast(&["replay", &ets]);
    assert_eq!(only.code, Some(1), "{}", only.stderr);
    assert!(
        only.stderr.contains("Execution Traces only") && only.stderr.trim().lines().count() == 1,
        "{}",
        only.stderr
    );
}
