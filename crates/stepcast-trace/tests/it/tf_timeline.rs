//! The TensorFlow 1 `Timeline` reader on the CPU steps recorded here
//! (`testdata/tf_timeline/mlp_cpu/`, `record.py`), against the files read by `serde_json`.

use std::io::Read;

use stepcast_trace::{EventKind, LinkKind, read_trace};

#[test]
fn ops_and_dataflow_of_each_recorded_step() {
    let dir = super::testdata().join("tf_timeline/mlp_cpu");
    for step in 0..3 {
        let path = dir.join(format!("step{step}.timeline.json.gz"));
        let mut text = String::new();
        flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("sample"))
            .read_to_string(&mut text)
            .expect("gzip");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("json");
        let records = doc["traceEvents"].as_array().expect("traceEvents");
        let ops: Vec<&serde_json::Value> = records
            .iter()
            .filter(|r| r["ph"] == "X" && r["cat"] == "Op")
            .collect();
        let flow_ids: std::collections::BTreeSet<i64> = records
            .iter()
            .filter(|r| r["ph"] == "t")
            .filter_map(|r| r["id"].as_i64())
            .collect();
        let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(trace.events.len(), ops.len(), "{}", path.display());
        assert!(trace.events.iter().all(|e| e.kind == EventKind::CpuOp));
        // Every op keeps its node name.
        for op in &ops {
            let node = op["args"]["name"].as_str().expect("node name");
            assert!(trace.names.lookup(node).is_some(), "{node}");
        }
        let dataflow = trace
            .links
            .iter()
            .filter(|l| l.kind == LinkKind::DataFlow)
            .count();
        assert!(
            dataflow > 0 && dataflow <= flow_ids.len(),
            "{dataflow} of {}",
            flow_ids.len()
        );
        for link in &trace.links {
            let (from, to) = (
                &trace.events[link.from.index()],
                &trace.events[link.to.index()],
            );
            assert!(from.start_ns <= to.start_ns, "a flow goes forward in time");
        }
    }
}
