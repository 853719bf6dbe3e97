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
