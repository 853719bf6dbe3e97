//! `whatif DIR MODEL`, `advise DIR` and `optimize DIR` (issue #27, item 3): one change on
//! every rank of the DLRM job, predicted on its global graph.

use super::ranks::DLRM;
use super::stepcast;

fn ms(value: &serde_json::Value) -> i64 {
    value.as_i64().expect("an integer of nanoseconds")
}

#[test]
fn whatif_of_a_job_predicts_its_step_on_the_global_graph_with_each_rank_beside() {
    let run = stepcast(&["whatif", DLRM, "cuda_graphs", "--json"]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["schema"], "stepcast.whatif-job/1");
    assert_eq!(json["ranks_given"], 8);
    assert_eq!(json["world_size"], 8);
    assert_eq!(json["missing_ranks"], serde_json::json!([]));
    assert!(json["declined"].is_null(), "{}", json["declined"]);
    let (measured, baseline, predicted) = (
        ms(&json["measured_ns"]),
        ms(&json["baseline_ns"]),
        ms(&json["predicted_ns"]),
    );
    // The baseline is the measured job step (DLRM: 20.822 ms from rank 1's start to rank 4's
    // end on the aligned clocks).
    assert!((baseline as f64 / measured as f64 - 1.0).abs() <= 0.02);
    let gain = baseline - predicted;
    assert!(gain > 0 && gain <= ms(&json["trust"]["bound_ns"]) + baseline / 200);
    // One job: every rank's own step in the prediction is at most the job's, and each rank
    // ends its step with its peers (within a tenth of the job's step of the last).
    let ranks = json["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 8);
    for (i, rank) in ranks.iter().enumerate() {
        assert_eq!(rank["rank"], i as i64);
        assert!(rank["file"].as_str().is_some_and(|f| f.contains("worker")));
        assert!(ms(&rank["predicted_ns"]) <= predicted);
        assert!(ms(&rank["ends_before_job_ns"]) <= predicted / 10);
        assert!(rank["alone"]["speedup"].as_f64().is_some_and(|s| s > 1.0));
    }
    let bound_by = json["bound_by"].as_array().expect("bound_by");
    assert!(!bound_by.is_empty());
    // The rank that started the step last (rank 7, 7.5 ms after rank 1) holds the most of
    // the job's critical path, and a caveat says its start is kept as recorded.
    assert_eq!(bound_by[0]["rank"], 7);
    let caveats = json["trust"]["caveats"].to_string();
    assert!(
        caveats.contains("begins at its recorded start"),
        "{caveats}"
    );
    let text = stepcast(&["whatif", DLRM, "cuda_graphs"]);
    text.assert_success();
    assert!(
        text.stdout
            .starts_with("What if cuda_graphs on every rank of the job (8 ranks"),
        "{}",
        text.stdout
    );
    // `ddp` predicts data-parallel training from one rank: a usage error on a job.
    let ddp = stepcast(&["whatif", DLRM, "ddp", "--gpus", "16"]);
    assert_eq!(ddp.code, Some(2), "{}", ddp.stderr);
}

#[test]
fn advise_of_a_job_ranks_changes_by_the_jobs_gain() {
    let run = stepcast(&["advise", DLRM, "--json"]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["schema"], "stepcast.advise-job/1");
    assert_eq!(json["files"].as_array().map(Vec::len), Some(8));
    let baseline = ms(&json["baseline_ns"]);
    let candidates = json["candidates"].as_array().expect("candidates");
    assert!(!candidates.is_empty());
    let mut previous = f64::INFINITY;
    for c in candidates {
        let speedup = c["speedup"].as_f64().expect("speedup");
        assert!(speedup <= previous, "best first");
        previous = speedup;
        let gain = ms(&c["gain_ns"]);
        assert!(gain <= ms(&c["trust"]["bound_ns"]) + baseline / 200, "{c}");
        assert_eq!(c["alone_speedups"].as_array().map(Vec::len), Some(8));
    }
    // `whatif DIR` of the best candidate's model gives the same job step.
    let best = &candidates[0];
    if best["models"].as_array().map(Vec::len) == Some(1) {
        let model = best["models"][0].as_str().expect("a model");
        let whatif = stepcast(&["whatif", DLRM, model, "--json"]).json();
        assert_eq!(whatif["predicted_ns"], best["predicted_ns"]);
    }
}

#[test]
fn optimize_of_a_job_plans_on_its_global_replay() {
    let run = stepcast(&["optimize", DLRM, "--json"]);
    run.assert_success();
    let json = run.json();
    assert_eq!(json["global_replay"], true);
    let planned = ms(&json["planned_ns"]);
    assert!(planned < ms(&json["baseline_ns"]));
    assert!(!json["bound_by"].as_array().expect("bound_by").is_empty());
    for rank in json["ranks"].as_array().expect("ranks") {
        // No rank finishes a step its peers have not: none is predicted longer than the job,
        // and every rank is replayed as itself.
        assert!(ms(&rank["planned_ns"]) <= planned);
    }
    // Both start from one baseline: `whatif DIR` of a change of nothing gives `optimize`'s
    // step now, and predicts it unchanged.
    let none = stepcast(&["whatif", DLRM, "faster_hardware", "--cpu", "1", "--json"]).json();
    assert_eq!(none["baseline_ns"], json["baseline_ns"]);
    assert_eq!(none["predicted_ns"], json["baseline_ns"]);
}

/// A job folder's report answers what to change as `advise DIR` does (its best change and
/// step), and a folder of reduced ranks says why it has no advice.
#[test]
fn a_jobs_report_says_what_to_change_as_advise_does() {
    let dir = super::TempDir::new("job-report");
    let page = dir.path().join("job.html");
    stepcast(&["report", DLRM, "-o", super::path_str(&page)]).assert_success();
    let html = std::fs::read_to_string(&page).expect("the report");
    let advice = stepcast(&["advise", DLRM, "--json"]).json();
    let best = advice["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .find(|c| c["hardware"] == false)
        .expect("a change to the program");
    assert!(html.contains("What to change"), "the section");
    let name = best["name"].as_str().expect("a name");
    let predicted = format!("{:.3} ms", ms(&best["predicted_ns"]) as f64 / 1e6);
    assert!(
        html.contains(&format!("Best change to the program: {name}")) && html.contains(&predicted),
        "the best change {name} at {predicted}"
    );
    let reduced = super::reduce::reduce_into(DLRM, "job-report-reduced");
    let page = reduced.path().join("reduced.html");
    let folder = reduced.path().join("reduced");
    stepcast(&[
        "report",
        super::path_str(&folder),
        "-o",
        super::path_str(&page),
    ])
    .assert_success();
    let html = std::fs::read_to_string(&page).expect("the report");
    assert!(
        html.contains("No advice: the ranks are reduced"),
        "the reason"
    );
}
