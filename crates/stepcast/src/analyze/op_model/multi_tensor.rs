//! Ops over tensor lists (`_foreach_*`, fused optimizers), whose list sizes PyTorch 2 does not
//! record: sized from the step's accumulated gradients where their kernels' blocks agree.

use stepcast_trace::{Dtype, EventId, OpInput, Trace};

use super::cost::{Category, OpCost, Unmodeled, element_bytes, elements};
use crate::analyze::mapping::Mapping;

/// Elements per block of PyTorch's `multi_tensor_apply` kernels (`kChunkSize`): each tensor of
/// a list takes `ceil(elements / 65,536)` blocks.
const MULTI_TENSOR_CHUNK: i64 = 65_536;

/// Whether `stem` is an op over tensor lists, run by `multi_tensor_apply` kernels.
pub(super) fn is_multi_tensor(stem: &str) -> bool {
    stem.starts_with("_foreach_")
        || stem.starts_with("_fused_adam")
        || stem.starts_with("_fused_sgd")
        || stem == "_amp_foreach_non_finite_check_and_unscale"
}

/// FLOPs per element and passes over each element's bytes of a multi-tensor op with `lists`
/// tensor-list inputs.
fn multi_tensor_rate(stem: &str, lists: usize) -> (f64, f64) {
    let op = stem.trim_start_matches("_foreach_");
    if stem.starts_with("_fused_adam") {
        // Read parameter, gradient and both moments; write the parameter and moments.
        (12.0, 7.0)
    } else if stem.starts_with("_fused_sgd") {
        // Read parameter, gradient and momentum; write parameter and momentum.
        (4.0, 5.0)
    } else if stem.starts_with("_amp_") {
        // Each gradient checked and unscaled in place.
        (2.0, 2.0)
    } else if op == "addcmul" {
        // Its two factors are one list in Adam (`addcmul_(v, g, g)`): read once from memory,
        // so counted once (where they differ, the bytes are understated, never a speed above
        // the memory's).
        (2.0, lists as f64)
    } else if ["addcdiv", "lerp", "norm"].contains(&op) {
        (2.0, lists as f64 + 1.0)
    } else if ["zero", "copy"].contains(&op) {
        (0.0, lists as f64 + if op == "zero" { 0.0 } else { 1.0 })
    } else {
        (1.0, lists as f64 + 1.0)
    }
}

/// A multi-tensor op whose first list's sizes were recorded (older PyTorch); `NoShapes` where
/// they were not (PyTorch 2: see [`multi_tensor_cost`]).
pub(super) fn multi_tensor_recorded(stem: &str, inputs: &[OpInput]) -> Result<OpCost, Unmodeled> {
    let lists: Vec<&Vec<Vec<i64>>> = inputs
        .iter()
        .filter_map(|i| match i {
            OpInput::TensorList(shapes) => Some(shapes),
            _ => None,
        })
        .collect();
    let first = lists.first().filter(|l| !l.is_empty());
    let first = first.ok_or(Unmodeled::NoShapes)?;
    let elements = first
        .iter()
        .map(|shape| elements(shape))
        .sum::<Option<f64>>()
        .ok_or(Unmodeled::NoFormula)?;
    let (flops, passes) = multi_tensor_rate(stem, lists.len());
    // Profilers record no element type for a list: 4 bytes (FP32 parameters) assumed.
    Ok(OpCost {
        flops: flops * elements,
        bytes: passes * elements * 4.0,
        category: Category::Optimizer,
        formula: "per element of the lists (FP32 assumed)",
        dtype: None,
    })
}

/// The gradients autograd accumulated, each at its time: the tensor of the `aten::detach` (or
/// any `aten::` op with one tensor input) inside an `AccumulateGrad`.
pub(super) fn accumulated_gradients(
    trace: &Trace,
    mapping: &Mapping,
) -> Vec<(i64, i64, Option<Dtype>)> {
    let mut gradients = Vec::new();
    for (event, inputs) in &trace.op_inputs {
        let Some(Some(parent)) = mapping.parent.get(event.index()) else {
            continue;
        };
        if !trace
            .names
            .get(trace.events[parent.index()].name)
            .contains("AccumulateGrad")
        {
            continue;
        }
        // The `aten::` op only: its untyped inner call (`detach`) records the same tensor.
        let [OpInput::Tensor { shape, dtype }] = inputs.as_slice() else {
            continue;
        };
        if !trace
            .names
            .get(trace.events[event.index()].name)
            .starts_with("aten::")
        {
            continue;
        }
        if let Some(n) = stepcast_trace::shape_elements(shape) {
            gradients.push((trace.events[event.index()].start_ns, n, *dtype));
        }
    }
    gradients.sort_by_key(|g| g.0);
    gradients
}

/// The cost of the multi-tensor op `event` (no sizes recorded for its lists) whose kernels
/// launched `blocks` blocks: its lists are the parameters of its step if their chunks make
/// exactly those blocks.
pub(super) fn multi_tensor_cost(
    trace: &Trace,
    event: EventId,
    stem: &str,
    inputs: &[OpInput],
    blocks: u64,
    gradients: &[(i64, i64, Option<Dtype>)],
) -> Option<OpCost> {
    let at_ns = trace.events[event.index()].start_ns;
    let step = trace
        .steps
        .iter()
        .find(|s| s.start_ns <= at_ns && at_ns < s.start_ns + s.dur_ns)?;
    let from = gradients.partition_point(|g| g.0 < step.start_ns);
    let to = gradients.partition_point(|g| g.0 < at_ns);
    let tensors = gradients.get(from..to).filter(|t| !t.is_empty())?;
    let chunks: i64 = tensors
        .iter()
        .map(|t| (t.1 + MULTI_TENSOR_CHUNK - 1) / MULTI_TENSOR_CHUNK)
        .sum();
    if u64::try_from(chunks).ok()? != blocks {
        return None;
    }
    let elements: f64 = tensors.iter().map(|t| t.1 as f64).sum();
    let dtype = tensors[0].2;
    let size = element_bytes(dtype);
    let lists = inputs
        .iter()
        .filter(|i| matches!(i, OpInput::TensorList(_)))
        .count()
        .max(1);
    let (flops, passes) = multi_tensor_rate(stem, lists);
    Some(OpCost {
        flops: flops * elements,
        bytes: passes * elements * size,
        category: Category::Optimizer,
        formula: "per element of the step's parameters (list sizes inferred from the \
                  gradients, checked against the kernels' blocks)",
        dtype,
    })
}
