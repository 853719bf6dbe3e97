//! The reader's typed op inputs (`Trace::op_inputs`) against an independent reading of the same
//! files: `serde_json` values of each record's `Input Dims` and `Input type`, with the bytes
//! per element of PyTorch's type names taken from `torch.dtype.itemsize`, not from the reader.

use serde_json::Value;
use stepcast_trace::{Dtype, OpInput, read_trace, read_trace_bytes};

use super::{decompressed, kineto_file};

/// Bytes per element of the type names these files write (`torch.<dtype>.itemsize`).
fn itemsize(name: &str) -> Option<i64> {
    Some(match name {
        "float" => 4,
        "double" => 8,
        "c10::Half" | "c10::BFloat16" => 2,
        "long int" | "long" => 8,
        "int" => 4,
        "unsigned char" | "bool" => 1,
        _ => return None,
    })
}

fn sizes(value: &Value) -> Vec<i64> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default()
}

/// Checks every op that records inputs in `relative`; returns (ops, tensors) checked.
fn check(relative: &str) -> (usize, usize) {
    let path = kineto_file(relative);
    let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    let document: Value =
        serde_json::from_slice(&decompressed(&path)).unwrap_or_else(|e| panic!("{relative}: {e}"));
    let records = document["traceEvents"]
        .as_array()
        .unwrap_or_else(|| panic!("{relative}: no traceEvents"));
    // Every CPU op or host annotation record with `Input Dims` is read into typed inputs,
    // none left out (gloo's `gloo:all_reduce` annotation records the tensor it reduces).
    let recorded = records
        .iter()
        .filter(|r| {
            let cat = r["cat"].as_str().unwrap_or("");
            (cat.eq_ignore_ascii_case("cpu_op")
                || cat.eq_ignore_ascii_case("operator")
                || cat.eq_ignore_ascii_case("user_annotation"))
                && r["ph"] == "X"
                && r["args"]["Input Dims"].is_array()
        })
        .count();
    assert_eq!(
        trace.op_inputs.len(),
        recorded,
        "{relative}: ops with inputs"
    );
    assert!(
        trace.diagnostics.args_unread.is_empty(),
        "{relative}: {:?}",
        trace.diagnostics.args_unread
    );
    let mut tensors = 0;
    for (event, inputs) in &trace.op_inputs {
        let event = &trace.events[event.index()];
        let record = &records[event.file_index as usize];
        assert_eq!(
            record["name"].as_str(),
            Some(trace.name(event.name)),
            "{relative}"
        );
        let dims = record["args"]["Input Dims"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let types = record["args"]["Input type"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(inputs.len(), dims.len(), "{relative}: {record}");
        let concrete = record["args"]["Concrete Inputs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (k, input) in inputs.iter().enumerate() {
            let name = types.get(k).and_then(Value::as_str).unwrap_or("");
            let context = || format!("{relative}: input {k} of {record}");
            // The value as written, read here as JSON: `"[2, 2]"` a list, `"1"` a number.
            let value: Option<Value> = concrete
                .get(k)
                .and_then(Value::as_str)
                .and_then(|text| serde_json::from_str(text).ok());
            match name {
                "ScalarList" => {
                    let ints: Option<Vec<i64>> = value
                        .as_ref()
                        .and_then(Value::as_array)
                        .and_then(|list| list.iter().map(Value::as_i64).collect());
                    let expected = ints.map_or(OpInput::Other, OpInput::Ints);
                    assert_eq!(input, &expected, "{}", context())
                }
                "" | "GenericList" => assert_eq!(input, &OpInput::Other, "{}", context()),
                "Scalar" | "Int" | "Bool" => {
                    // Python's `True`/`False` are no JSON: read as written.
                    let text = concrete.get(k).and_then(Value::as_str).unwrap_or("");
                    let expected = match text {
                        "True" => OpInput::Bool(true),
                        "False" => OpInput::Bool(false),
                        _ => value
                            .as_ref()
                            .and_then(Value::as_i64)
                            .map_or(OpInput::Scalar, OpInput::Int),
                    };
                    assert_eq!(input, &expected, "{}", context())
                }
                "Double" => assert_eq!(input, &OpInput::Scalar, "{}", context()),
                "TensorList" => {
                    let shapes: Vec<Vec<i64>> = dims[k]
                        .as_array()
                        .map(|a| a.iter().map(sizes).collect())
                        .unwrap_or_default();
                    assert_eq!(input, &OpInput::TensorList(shapes), "{}", context());
                }
                _ => {
                    let size = itemsize(name).unwrap_or_else(|| panic!("{}: type", context()));
                    let OpInput::Tensor { shape, dtype } = input else {
                        panic!("{}: not a tensor: {input:?}", context());
                    };
                    assert_eq!(shape, &sizes(&dims[k]), "{}", context());
                    assert_eq!(dtype.map(Dtype::bytes), Some(size), "{}", context());
                    let elements: i64 = shape.iter().product();
                    assert_eq!(input.bytes(), Some(elements * size), "{}", context());
                    tensors += 1;
                }
            }
        }
    }
    (trace.op_inputs.len(), tensors)
}

#[test]
fn typed_inputs_match_an_independent_reading() {
    // Float32 training (GPU and CPU-only), BF16 and FP32 transformers, MTIA, DLRM (plain
    // JSON). (The oldest traces, `tb_plugin/samples`, write `Input dims`, which the reader
    // does not read.)
    for (relative, min_tensors) in [
        (
            "HolisticTraceAnalysis/@b8cce2cd/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
            1_000,
        ),
        (
            "HolisticTraceAnalysis/tests/data/distributed_info_unavailable/distributed_info_not_found.json.gz",
            500,
        ),
        (
            "HolisticTraceAnalysis/tests/data/trace_diff/control/control.json.gz",
            10_000,
        ),
        (
            "TraceLens/tests/traces/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz",
            10_000,
        ),
        (
            "TraceLens/tests/traces/h100/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
            1_000,
        ),
        (
            "HolisticTraceAnalysis/tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz",
            1_000,
        ),
        (
            "param/et_replay/tests/inputs/dlrm_kineto__extracted/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json",
            500,
        ),
    ] {
        let (ops, tensors) = check(relative);
        assert!(
            tensors >= min_tensors,
            "{relative}: {ops} ops, {tensors} tensors"
        );
    }
}

/// Hostile `Input Dims` / `Input type` (a million-deep nesting, sizes past `i64`, negative
/// sizes, an unknown type) read without a panic: the op is still an event, the inputs are
/// `Other` or of unknown size, and every one is counted.
#[test]
fn hostile_inputs_are_counted_not_fatal() {
    let deep = format!("[{}{}]", "[".repeat(1_000_000), "]".repeat(1_000_000));
    let json = format!(
        r#"{{"traceEvents": [
{{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {{"Input Dims": {deep}, "Input type": ["float"]}}}},
{{"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 20, "dur": 5, "args": {{"Input Dims": [[9223372036854775807, 9223372036854775807], [-3, 2], [1e400], [2]], "Input type": ["float", "double", "c10::Half", "c10::Float4"]}}}},
{{"ph": "X", "cat": "cpu_op", "name": "c", "pid": 1, "tid": 1, "ts": 30, "dur": 5, "args": {{"Input Dims": 7, "Input type": 8}}}},
{{"ph": "X", "cat": "cpu_op", "name": "d", "pid": 1, "tid": 1, "ts": 40, "dur": 5, "args": {{"Input Dims": [[2]], "Input type": [1]}}}}
]}}"#
    );
    let trace = read_trace_bytes(json.as_bytes(), std::path::Path::new("hostile.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(trace.events.len(), 4, "every op is still an event");
    let unread: u64 = trace.diagnostics.args_unread.values().sum();
    // a: deep entry not a shape; b: `1e400` not a shape, `c10::Float4` unknown; c: not a
    // list; d: types not strings.
    assert_eq!(unread, 5, "{:?}", trace.diagnostics.args_unread);
    let b = trace
        .inputs_of(stepcast_trace::EventId(1))
        .unwrap_or_default();
    assert_eq!(b.len(), 4);
    assert_eq!(b[0].elements(), None, "product past i64");
    assert_eq!(b[1].bytes(), None, "negative size");
    assert_eq!(b[2], OpInput::Other);
    assert_eq!(b[3].bytes(), None, "unknown dtype");
    assert_eq!(
        trace.inputs_of(stepcast_trace::EventId(0)),
        Some(&[OpInput::Other][..])
    );
    assert_eq!(trace.inputs_of(stepcast_trace::EventId(2)), None);
    assert_eq!(
        trace.inputs_of(stepcast_trace::EventId(3)),
        Some(&[OpInput::Other][..])
    );
}
