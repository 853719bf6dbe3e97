//! PyTorch Execution Traces (ET, written by `torch.profiler.ExecutionTraceObserver`): every op
//! the program ran, in the order it ran, with its parent, schema, and the tensors it read and
//! wrote. Chakra, PARAM's `et_replay` and HTA join an ET with the Kineto trace of the same
//! run; `stepcast::et` does.
//!
//! Two forms of a node. Schema `1.0.x` (PyTorch 2.0–2.3): `{"id", "rf_id", "parent", "name",
//! "tid", "op_schema", "inputs", "input_shapes", "input_types", "outputs", "output_shapes",
//! "output_types", ...}`. Schema `1.1.x` (Chakra's, PyTorch 2.4 on): `{"id", "name",
//! "ctrl_deps", "inputs": {"values", "shapes", "types", "strides"}, "outputs": {...},
//! "attrs": [{"name": "rf_id", "value"}, {"name": "tid"}, {"name": "op_schema"}, ...]}`, the
//! parent in `ctrl_deps`. A tensor value is
//! `[tensor_id, storage_id, offset, elements, element_bytes, device]` with its type
//! `Tensor(float)`, a list of tensors `GenericList[Tensor(float),...]` a list of such values.
//! A node of another shape is left out and counted ([`ExecutionTrace::nodes_unread`]), never
//! the trace.

use std::path::Path;

use serde_json::Value;

use crate::ReadError;

/// A tensor an op read or wrote, as the ET records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtTensor {
    /// The tensor's id (one id per tensor object while it lives).
    pub id: u64,
    /// Its storage's id: views of one storage share it.
    pub storage_id: u64,
    pub offset: u64,
    pub elements: u64,
    pub element_bytes: u64,
    pub device: String,
    /// `float`, `c10::Half`... (the `Tensor(...)` of its type).
    pub dtype: String,
    pub shape: Vec<i64>,
}

/// One op (or annotation) the program ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtNode {
    pub id: u64,
    /// The record function id: the Kineto op's `Record function id` (or, in traces of
    /// PyTorch before 2.1, an `External id` that may share its numbering).
    pub rf_id: Option<u64>,
    pub parent: Option<u64>,
    pub name: String,
    /// The ET's thread index (not the OS thread id).
    pub tid: u64,
    pub op_schema: String,
    pub inputs: Vec<EtTensor>,
    pub outputs: Vec<EtTensor>,
}

impl EtNode {
    /// Whether the node is the ET's own bookkeeping (its root and per-thread nodes, named
    /// `[pytorch|profiler|execution_trace|...]`, `execution_graph` before PyTorch 2.0), no op.
    pub fn is_bookkeeping(&self) -> bool {
        self.name.starts_with("[pytorch|profiler|execution_trace|")
            || self.name.starts_with("[pytorch|profiler|execution_graph|")
    }
}

/// An Execution Trace as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecutionTrace {
    pub schema: String,
    pub pid: Option<i64>,
    /// In id order (the order the ops began).
    pub nodes: Vec<EtNode>,
    /// Nodes of a shape this reader does not know (no id or name), left out.
    pub nodes_unread: u64,
}

/// Reads the Execution Trace at `path` (`.json` or `.json.gz`).
pub fn read_execution_trace(path: &Path) -> Result<ExecutionTrace, ReadError> {
    let source = crate::detect::open(path)?;
    let content = source.content()?;
    let document: Value = serde_json::from_slice(&content).map_err(|e| ReadError::Json {
        path: path.to_path_buf(),
        line: e.line() as u64,
        column: e.column() as u64,
        context: "the Execution Trace".to_string(),
        message: e.to_string(),
    })?;
    let (Some(schema), Some(nodes)) = (
        document.get("schema").and_then(Value::as_str),
        document.get("nodes").and_then(Value::as_array),
    ) else {
        let detail = if document.get("traceEvents").is_some() {
            "it has `traceEvents`, a Kineto trace's (give it as the TRACE, the ET with --et)"
        } else {
            "it has no `schema` and `nodes` array"
        };
        return Err(ReadError::NotAnExecutionTrace {
            path: path.to_path_buf(),
            detail: detail.to_string(),
        });
    };
    let mut trace = ExecutionTrace {
        schema: schema.to_string(),
        pid: document.get("pid").and_then(Value::as_i64),
        nodes: Vec::with_capacity(nodes.len()),
        nodes_unread: 0,
    };
    for node in nodes {
        match node_of(node) {
            Some(node) => trace.nodes.push(node),
            None => trace.nodes_unread += 1,
        }
    }
    trace.nodes.sort_by_key(|n| n.id);
    Ok(trace)
}

fn node_of(node: &Value) -> Option<EtNode> {
    // A field of the node, or (schema 1.1) of its `attrs`.
    let field = |key: &str| {
        node.get(key).or_else(|| {
            node.get("attrs")?
                .as_array()?
                .iter()
                .find(|a| a.get("name").and_then(Value::as_str) == Some(key))?
                .get("value")
        })
    };
    let u64_of = |key: &str| field(key).and_then(Value::as_u64);
    let (inputs, outputs) = if node.get("inputs").is_some_and(Value::is_object) {
        (tensors_of(node, "inputs"), tensors_of(node, "outputs"))
    } else {
        (
            tensors(node, "inputs", "input_shapes", "input_types"),
            tensors(node, "outputs", "output_shapes", "output_types"),
        )
    };
    Some(EtNode {
        id: u64_of("id")?,
        rf_id: u64_of("rf_id"),
        parent: u64_of("parent").or_else(|| u64_of("ctrl_deps")),
        name: node.get("name")?.as_str()?.to_string(),
        tid: u64_of("tid").unwrap_or(0),
        op_schema: field("op_schema")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        inputs,
        outputs,
    })
}

/// The tensors of a schema 1.1 `{"values", "shapes", "types"}` object.
fn tensors_of(node: &Value, key: &str) -> Vec<EtTensor> {
    match node.get(key) {
        Some(object) => tensors(object, "values", "shapes", "types"),
        None => Vec::new(),
    }
}

/// The tensors among a node's `values` (with their shapes and types), lists of tensors
/// flattened in order.
fn tensors(node: &Value, values: &str, shapes: &str, types: &str) -> Vec<EtTensor> {
    let empty = Vec::new();
    let get = |key: &str| node.get(key).and_then(Value::as_array).unwrap_or(&empty);
    let (values, shapes, types) = (get(values), get(shapes), get(types));
    let mut out = Vec::new();
    for (i, value) in values.iter().enumerate() {
        let kind = types.get(i).and_then(Value::as_str).unwrap_or_default();
        let shape = shapes.get(i);
        if let Some(dtype) = tensor_dtype(kind) {
            out.extend(tensor(value, dtype, shape));
        } else if let Some(inner) = kind.strip_prefix("GenericList[")
            && inner.starts_with("Tensor(")
        {
            // A list of tensors: each value, shape and type in turn.
            let kinds: Vec<&str> = inner.trim_end_matches(']').split(',').collect();
            let list = value.as_array().map_or(&[][..], Vec::as_slice);
            let list_shapes = shape.and_then(Value::as_array);
            for (j, item) in list.iter().enumerate() {
                let dtype = kinds.get(j).and_then(|k| tensor_dtype(k)).unwrap_or("");
                out.extend(tensor(item, dtype, list_shapes.and_then(|s| s.get(j))));
            }
        }
    }
    out
}

/// `float` of `Tensor(float)`; `None` for another type.
fn tensor_dtype(kind: &str) -> Option<&str> {
    kind.strip_prefix("Tensor(")?.strip_suffix(')')
}

/// `[tensor_id, storage_id, offset, elements, element_bytes, device]` as a tensor.
fn tensor(value: &Value, dtype: &str, shape: Option<&Value>) -> Option<EtTensor> {
    let parts = value.as_array()?;
    let number = |i: usize| parts.get(i).and_then(Value::as_u64);
    Some(EtTensor {
        id: number(0)?,
        storage_id: number(1)?,
        offset: number(2)?,
        elements: number(3)?,
        element_bytes: number(4)?,
        device: parts
            .get(5)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        dtype: dtype.to_string(),
        shape: shape
            .and_then(Value::as_array)
            .map(|dims| dims.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default(),
    })
}

/// Whether `head` (the start of a decompressed file) is an Execution Trace's: a JSON object
/// whose first key is `schema` (a Kineto trace's may be `schemaVersion`) with `nodes` after it.
pub fn looks_like(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let Some(rest) = text.trim_start().strip_prefix('{') else {
        return false;
    };
    rest.trim_start().starts_with("\"schema\"") && rest.contains("\"nodes\"")
}

/// Whether the file at `path` is an Execution Trace, told from its head (a gzip file's
/// decompressed), not read whole; `false` where it cannot be opened.
pub fn is_execution_trace(path: &Path) -> bool {
    crate::detect::open(path).is_ok_and(|source| looks_like(&source.head))
}
