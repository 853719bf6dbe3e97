//! The cost of one op instance: its family's formula on its recorded shapes (the families are
//! listed in the parent module's documentation).

use stepcast_trace::{Dtype, OpInput};

use super::attention::attention;
use super::multi_tensor::{is_multi_tensor, multi_tensor_recorded};
use super::windows::{conv_flops, convolution, pooling};

/// FLOPs and bytes of one op instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpCost {
    pub flops: f64,
    pub bytes: f64,
    pub category: Category,
    /// The formula used, in words.
    pub formula: &'static str,
    /// The element type of its first tensor input, which picks its peak.
    pub dtype: Option<Dtype>,
}

/// Op families, each with its formula.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Category {
    Gemm,
    Convolution,
    Attention,
    Elementwise,
    Reduction,
    Normalization,
    Softmax,
    Pooling,
    Embedding,
    /// Multi-tensor updates: `_foreach_*` ops and fused optimizers over lists of tensors.
    Optimizer,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Gemm => "gemm",
            Category::Convolution => "convolution",
            Category::Attention => "attention",
            Category::Elementwise => "elementwise",
            Category::Reduction => "reduction",
            Category::Normalization => "normalization",
            Category::Softmax => "softmax",
            Category::Pooling => "pooling",
            Category::Embedding => "embedding",
            Category::Optimizer => "optimizer",
        }
    }

    /// Whether its speed is set by the multiply units (else by memory bandwidth).
    pub fn is_compute(self) -> bool {
        matches!(
            self,
            Category::Gemm | Category::Convolution | Category::Attention
        )
    }
}

/// Why an op with device time has no cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unmodeled {
    /// The profiler recorded no tensor shapes for it (`record_shapes=False`).
    NoShapes,
    /// No formula here for its name (or its inputs are not the shapes the formula takes).
    NoFormula,
}

const ELEMENTWISE: &[&str] = &[
    "add",
    "sub",
    "mul",
    "div",
    "relu",
    "gelu",
    "silu",
    "sigmoid",
    "tanh",
    "neg",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "pow",
    "clamp",
    "clamp_min",
    "clamp_max",
    "where",
    "threshold",
    "threshold_backward",
    "gelu_backward",
    "silu_backward",
    "sigmoid_backward",
    "tanh_backward",
    "native_dropout",
    "native_dropout_backward",
    "masked_fill",
    "addcmul",
    "addcdiv",
    "lerp",
    "maximum",
    "minimum",
    "hardtanh",
    "leaky_relu",
    "elu",
    "abs",
    "cos",
    "sin",
    "erf",
    "reciprocal",
    "square",
    "log1p",
    "expm1",
    "floor",
    "ceil",
    "round",
    "sign",
    "rsub",
    "remainder",
    "hardswish",
    "hardsigmoid",
    "softplus",
    "mse_loss_backward",
    "logical_not",
    "logical_and",
    "logical_or",
    "bitwise_and",
    "bitwise_or",
    "bitwise_not",
];
/// Element-wise ops whose result is a `bool` per element, whatever their inputs' type.
const COMPARISONS: &[&str] = &["eq", "ne", "lt", "gt", "le", "ge", "isnan", "isinf"];
/// Ops that write (and for `copy`, read) bytes and compute nothing counted: a random
/// generator's arithmetic per element is not a multiply-add a peak counts.
const MOVES: &[&str] = &[
    "copy",
    "fill",
    "zero",
    "clone",
    "normal",
    "uniform",
    "bernoulli",
    "random",
];
const REDUCTIONS: &[&str] = &[
    "sum",
    "mean",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "all",
    "any",
    "prod",
    "norm",
    "linalg_vector_norm",
    "cumsum",
];
const LOSSES: &[&str] = &["mse_loss"];
const NORMS_FORWARD: &[&str] = &[
    "native_layer_norm",
    "native_batch_norm",
    "cudnn_batch_norm",
    "miopen_batch_norm",
    "native_group_norm",
    "_fused_rms_norm",
    "rms_norm",
];
const NORMS_BACKWARD: &[&str] = &[
    "native_layer_norm_backward",
    "native_batch_norm_backward",
    "cudnn_batch_norm_backward",
    "miopen_batch_norm_backward",
    "native_group_norm_backward",
    "_fused_rms_norm_backward",
];
const SOFTMAX_FORWARD: &[&str] = &[
    "_softmax",
    "softmax",
    "_log_softmax",
    "log_softmax",
    "_safe_softmax",
];
const SOFTMAX_BACKWARD: &[&str] = &["_softmax_backward_data", "_log_softmax_backward_data"];

/// Ops costed per element of their first input: their names, FLOPs per element, passes over
/// its bytes, category and formula.
type PerElement = (&'static [&'static str], f64, f64, Category, &'static str);
const PER_ELEMENT: &[PerElement] = &[
    (
        REDUCTIONS,
        1.0,
        1.0,
        Category::Reduction,
        "1 FLOP per input element; input read",
    ),
    (
        NORMS_FORWARD,
        5.0,
        3.0,
        Category::Normalization,
        "5 FLOPs per element; input read twice, output written",
    ),
    (
        NORMS_BACKWARD,
        5.0,
        5.0,
        Category::Normalization,
        "5 FLOPs per element; input and gradient read twice, gradient written",
    ),
    (
        SOFTMAX_FORWARD,
        5.0,
        2.0,
        Category::Softmax,
        "5 FLOPs per element (max, subtract, exp, sum, divide); input read, output written",
    ),
    (
        SOFTMAX_BACKWARD,
        3.0,
        3.0,
        Category::Softmax,
        "3 FLOPs per element; gradient and output read, gradient written",
    ),
    (
        LOSSES,
        3.0,
        2.0,
        Category::Reduction,
        "3 FLOPs per element (subtract, square, sum); input and target read",
    ),
];

/// The tensors among `inputs`: (sizes, element type).
pub(super) fn tensors(inputs: &[OpInput]) -> Vec<(&[i64], Option<Dtype>)> {
    inputs
        .iter()
        .filter_map(|input| match input {
            OpInput::Tensor { shape, dtype } => Some((shape.as_slice(), *dtype)),
            _ => None,
        })
        .collect()
}

/// Bytes per element of `dtype`; 4 (FP32) where the profiler wrote no type.
pub(crate) fn element_bytes(dtype: Option<Dtype>) -> f64 {
    dtype.map_or(4.0, |d| d.bytes() as f64)
}

pub(super) fn elements(shape: &[i64]) -> Option<f64> {
    stepcast_trace::shape_elements(shape).map(|n| n as f64)
}

/// The cost of the op `name` (an `aten::` name; other namespaces have no formula) on `inputs`.
pub fn op_cost(name: &str, inputs: &[OpInput]) -> Result<OpCost, Unmodeled> {
    let base = name.strip_prefix("aten::").ok_or(Unmodeled::NoFormula)?;
    if is_multi_tensor(base.trim_end_matches('_')) {
        return multi_tensor_recorded(base.trim_end_matches('_'), inputs);
    }
    let tensors = tensors(inputs);
    if tensors.is_empty() {
        return Err(Unmodeled::NoShapes);
    }
    let dtype = tensors.iter().find_map(|t| t.1);
    let size = element_bytes;
    let cost = |flops: f64, bytes: f64, category, formula| OpCost {
        flops,
        bytes,
        category,
        formula,
        dtype,
    };
    let in_place = base.ends_with('_');
    let stem = base.trim_end_matches('_');
    let bytes_of = |shape: &[i64], dtype: Option<Dtype>| elements(shape).map(|n| n * size(dtype));
    match stem {
        "mm" | "addmm" | "bmm" | "baddbmm" => {
            // The two matrix operands are the last two tensors (`addmm`'s bias comes first).
            let [.., (a, a_type), (b, b_type)] = tensors.as_slice() else {
                return Err(Unmodeled::NoFormula);
            };
            let (batch, m, k, n) = match (*a, *b) {
                ([m, k], [k2, n]) if k == k2 => (1, *m, *k, *n),
                ([batch, m, k], [b2, k2, n]) if k == k2 && batch == b2 => (*batch, *m, *k, *n),
                _ => return Err(Unmodeled::NoFormula),
            };
            let (batch, m, k, n) = (batch as f64, m as f64, k as f64, n as f64);
            let bytes =
                batch * (m * k * size(*a_type) + k * n * size(*b_type) + m * n * size(*a_type));
            Ok(cost(
                2.0 * batch * m * k * n,
                bytes,
                Category::Gemm,
                "2·M·K·N",
            ))
        }
        "linear" => {
            let [(x, x_type), (w, w_type), ..] = tensors.as_slice() else {
                return Err(Unmodeled::NoFormula);
            };
            let (&[.., k], &[n, k2]) = (*x, *w) else {
                return Err(Unmodeled::NoFormula);
            };
            if k != k2 || k == 0 {
                return Err(Unmodeled::NoFormula);
            }
            let rows = elements(x).ok_or(Unmodeled::NoFormula)? / k as f64;
            let (k, n) = (k as f64, n as f64);
            let bytes = rows * k * size(*x_type) + k * n * size(*w_type) + rows * n * size(*x_type);
            Ok(cost(2.0 * rows * k * n, bytes, Category::Gemm, "2·M·K·N"))
        }
        "convolution" | "_convolution" | "cudnn_convolution" | "miopen_convolution"
        | "mkldnn_convolution" => convolution(stem, inputs, &tensors).map(|(flops, bytes)| {
            cost(
                flops,
                bytes,
                Category::Convolution,
                "2·N·O·out·(C/g)·kernel",
            )
        }),
        "convolution_backward" => {
            let [(grad_out, g_type), (input, i_type), (weight, w_type), ..] = tensors.as_slice()
            else {
                return Err(Unmodeled::NoFormula);
            };
            let forward = conv_flops(input, weight, grad_out.get(2..).unwrap_or_default())
                .ok_or(Unmodeled::NoFormula)?;
            let bytes = 2.0 * bytes_of(grad_out, *g_type).ok_or(Unmodeled::NoFormula)?
                + 2.0 * bytes_of(input, *i_type).ok_or(Unmodeled::NoFormula)?
                + 2.0 * bytes_of(weight, *w_type).ok_or(Unmodeled::NoFormula)?;
            Ok(cost(
                2.0 * forward,
                bytes,
                Category::Convolution,
                "2 × forward (input and weight gradients)",
            ))
        }
        _ if stem.contains("attention") => {
            attention(stem, inputs, &tensors).map(|(flops, bytes)| {
                cost(
                    flops,
                    bytes,
                    Category::Attention,
                    "2·B·H·Sq·Sk·(D+Dv), ×2.5 backward",
                )
            })
        }
        _ if stem.contains("pool") => pooling(stem, inputs, &tensors).map(|(flops, bytes)| {
            cost(
                flops,
                bytes,
                Category::Pooling,
                "a comparison or addition per window position; input read, output written",
            )
        }),
        "embedding" | "index_select" | "embedding_dense_backward" => {
            embedding(stem, inputs, &tensors).map(|(flops, bytes)| {
                cost(
                    flops,
                    bytes,
                    Category::Embedding,
                    "rows read and written, indices read",
                )
            })
        }
        _ if MOVES.contains(&stem) => {
            let first = bytes_of(tensors[0].0, tensors[0].1).ok_or(Unmodeled::NoFormula)?;
            let bytes = if stem == "copy" {
                tensors
                    .iter()
                    .take(2)
                    .map(|t| bytes_of(t.0, t.1))
                    .sum::<Option<f64>>()
                    .ok_or(Unmodeled::NoFormula)?
            } else {
                first
            };
            Ok(cost(
                0.0,
                bytes,
                Category::Elementwise,
                "bytes read and written, no FLOPs",
            ))
        }
        _ if ELEMENTWISE.contains(&stem) || COMPARISONS.contains(&stem) => {
            let largest = tensors
                .iter()
                .filter_map(|t| elements(t.0))
                .fold(0.0, f64::max);
            let read: f64 = tensors
                .iter()
                .map(|t| bytes_of(t.0, t.1))
                .sum::<Option<f64>>()
                .ok_or(Unmodeled::NoFormula)?;
            let (written, formula) = if COMPARISONS.contains(&stem) {
                (
                    largest,
                    "1 FLOP per element; inputs read, a bool per element written",
                )
            } else if in_place {
                (
                    bytes_of(tensors[0].0, tensors[0].1).ok_or(Unmodeled::NoFormula)?,
                    "1 FLOP per element; inputs read, output written",
                )
            } else {
                (
                    largest * size(dtype),
                    "1 FLOP per element; inputs read, output written",
                )
            };
            Ok(cost(
                largest,
                read + written,
                Category::Elementwise,
                formula,
            ))
        }
        _ => {
            let (_, flops, passes, category, formula) = PER_ELEMENT
                .iter()
                .find(|(names, ..)| names.contains(&stem))
                .ok_or(Unmodeled::NoFormula)?;
            let (shape, dtype) = tensors[0];
            let n = elements(shape).ok_or(Unmodeled::NoFormula)?;
            Ok(cost(
                flops * n,
                passes * n * size(dtype),
                *category,
                formula,
            ))
        }
    }
}

/// An embedding lookup or a gather of rows: the rows read and written, the indices read; no
/// FLOPs. `embedding(weight, indices)`, `index_select(self, dim, index)`,
/// `embedding_dense_backward(grad_output, indices, num_weights, ...)` (the rows' gradients
/// read and the weight's gradient written).
fn embedding(
    stem: &str,
    inputs: &[OpInput],
    tensors: &[(&[i64], Option<Dtype>)],
) -> Result<(f64, f64), Unmodeled> {
    let size = |dtype: &Option<Dtype>| element_bytes(*dtype);
    let count = |shape: &[i64]| elements(shape).ok_or(Unmodeled::NoFormula);
    match (stem, tensors) {
        ("embedding", [(weight, w_type), (indices, x_type), ..]) => {
            let width = *weight.last().ok_or(Unmodeled::NoFormula)? as f64;
            let rows = count(indices)?;
            Ok((0.0, 2.0 * rows * width * size(w_type) + rows * size(x_type)))
        }
        ("index_select", [(table, t_type), (index, x_type), ..]) => {
            let dim = inputs.iter().find_map(|i| match i {
                OpInput::Int(dim) => Some(*dim),
                _ => None,
            });
            let dim = dim.ok_or(Unmodeled::NoFormula)?;
            let rank = table.len() as i64;
            let dim = if dim < 0 { dim + rank } else { dim };
            let along = usize::try_from(dim)
                .ok()
                .and_then(|d| table.get(d))
                .filter(|&&n| n > 0)
                .ok_or(Unmodeled::NoFormula)?;
            let out = count(table)? / *along as f64 * count(index)?;
            Ok((0.0, 2.0 * out * size(t_type) + count(index)? * size(x_type)))
        }
        ("embedding_dense_backward", [(grad, g_type), (indices, x_type), ..]) => {
            let rows = inputs.iter().find_map(|i| match i {
                OpInput::Int(n) => Some(*n as f64),
                _ => None,
            });
            let width = *grad.last().ok_or(Unmodeled::NoFormula)? as f64;
            let written = rows.ok_or(Unmodeled::NoFormula)? * width * size(g_type);
            Ok((
                count(grad)?,
                count(grad)? * size(g_type) + count(indices)? * size(x_type) + written,
            ))
        }
        _ => Err(Unmodeled::NoFormula),
    }
}
