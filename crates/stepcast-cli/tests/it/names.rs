//! Kernel names people read (issue 28): tables show a short form of at most 80 characters,
//! two different kernels never read alike, and JSON keeps the full name beside the short one.

use std::collections::BTreeMap;

use super::{NCCL, TempDir, escaped, path_str, stepcast};

const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/kineto");

/// Traces whose kernels have long names: NCCL's, ROCm's, Triton's and mangled CUTLASS ones.
fn traces() -> Vec<String> {
    let mut traces = vec![NCCL.to_string()];
    for relative in [
        "TraceLens/tests/traces/torch_compile_triton/trace.json.gz",
        "TraceLens/tests/traces/perf_model/normalization/normalization_layer_test.json.gz",
        "stepcast/h100-pairs/resnet-fp32.json.gz",
    ] {
        traces.push(format!("{TESTDATA}/{relative}"));
    }
    traces
}

#[test]
fn kernel_names_in_tables_are_short_distinct_and_full_in_json() {
    let dir = TempDir::new("names");
    let mut long_names_seen = 0;
    for trace in traces() {
        let json = stepcast(&["analyze", &trace, "--json"]);
        json.assert_success();
        let document = json.json();
        let text = stepcast(&["analyze", &trace]);
        text.assert_success();
        let text = text.stdout;
        let page = dir.path().join("report.html");
        stepcast(&["report", &trace, "-o", path_str(&page)]).assert_success();
        let html = std::fs::read_to_string(&page).expect("the report");
        for table in ["top_kernels", "top_ops", "queue_latency"] {
            let rows = document["statistics"][table].as_array().expect(table);
            let mut full_by_short: BTreeMap<&str, &str> = BTreeMap::new();
            for row in rows {
                let full = row["name"].as_str().expect("name");
                let short = row["short_name"].as_str().expect("short_name");
                assert!(
                    short.chars().count() <= 80,
                    "{trace}: {table}: {short:?} is longer than 80 characters"
                );
                let before = full_by_short.insert(short, full);
                assert!(
                    before.is_none_or(|other| other == full),
                    "{trace}: {table}: {:?} and {full:?} both read {short:?}",
                    before.unwrap_or_default()
                );
                if table == "top_kernels" && full.chars().count() > 80 {
                    long_names_seen += 1;
                    // Neither the terminal nor the page shows it whole as a cell's text;
                    // the page keeps it on hover.
                    assert!(!text.contains(full), "{trace}: the text shows {full:?}");
                    let cell = format!(">{}<", escaped(full));
                    assert!(!html.contains(&cell), "{trace}: the page shows {full:?}");
                    assert!(
                        html.contains(&format!("title=\"{}\"", escaped(full))),
                        "{trace}: the page has no full name on hover for {full:?}"
                    );
                }
            }
        }
    }
    assert!(
        long_names_seen >= 5,
        "only {long_names_seen} long kernel names checked"
    );
}
