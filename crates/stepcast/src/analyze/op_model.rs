//! How close each op runs to the hardware: its FLOPs and bytes from the shapes and types the
//! profiler recorded (`Trace::op_inputs`, `record_shapes=True`), its device time from the
//! mapping (the kernels its calls launched), its achieved throughput against the datasheet
//! peaks of the trace's device, and the step's model FLOPs utilization (MFU).
//!
//! The formulas, per op family (`OpCost::formula` names the one used):
//! - **GEMM** (`mm`, `addmm`, `bmm`, `baddbmm`, `linear`): `2·M·K·N` FLOPs (a multiply and an add
//!   per product term; `addmm`'s bias addition, `M·N`, is left out, as FLOP counters do), bytes
//!   the operands read and the result written once each.
//! - **Element-wise** (`add`, `mul`, `relu`, `threshold_backward`...): one FLOP per element of
//!   the largest input; bytes every tensor input read and the result written (in place, `_`:
//!   into its first input). `copy_`, `fill_` and `zero_` move bytes and compute nothing.
//! - **Reductions** (`sum`, `mean`): one FLOP per input element, the input read.
//! - **Normalization** (`native_layer_norm`, `native_batch_norm`, `cudnn_batch_norm` and their
//!   backward ops): 5 FLOPs per element (mean, variance, normalize, scale, shift; the backward
//!   about as many), the input read twice and the output written once forward; the input and
//!   the incoming gradient read twice and the gradient written once backward.
//!
//! - **Convolution** (`convolution`, `_convolution`, `cudnn_convolution`, `miopen_convolution`,
//!   `mkldnn_convolution`; any number of spatial dimensions, groups by the weight's channels):
//!   `2·N·O·(output positions)·(C/groups)·(kernel positions)` FLOPs, the output positions from
//!   the input's, the strides, padding and dilation recorded by value (`Concrete Inputs`,
//!   PyTorch 2); `convolution_backward` twice that (the input's and the weight's gradients,
//!   its `grad_output` giving the output positions). Bytes: input, weight and output once
//!   each forward; backward the output gradient twice, input and weight read and their
//!   gradients written.
//! - **Attention** (`scaled_dot_product_attention` and its efficient, flash and cuDNN ops,
//!   `_cudnn_attention_*`, `[batch, heads, sequence, head dim]`; `_efficient_attention_*` and `_flash_attention_*`,
//!   `[batch, sequence, heads, head dim]`): `2·B·H·Sq·Sk·(D + Dv)` FLOPs forward (`Q·Kᵀ` and
//!   the product with `V`), 2.5 times that backward (five products of that size, as
//!   FlashAttention counts them); no causal mask assumed (one does about half the work) but
//!   where `_efficient_attention_forward` records its mask type. Bytes: the inputs read and the
//!   output written forward; backward the inputs read and the gradients of Q, K, V written.
//!
//! - **Softmax** (`_softmax`, `_log_softmax`): 5 FLOPs per element (max, subtract, exp, sum,
//!   divide), the input read and the output written; backward 3 FLOPs, the gradient and output
//!   read and the gradient written.
//! - **Pooling** (`max_pool2d_with_indices`, `avg_pool2d`, any dimensions, and their backward
//!   ops; adaptive pooling): a comparison or addition per window position of each output, the
//!   window's kernel, stride, padding and dilation recorded by value; a max pool's `int64`
//!   indices written forward and read backward.
//! - **Embedding** (`embedding`, `index_select`, `embedding_dense_backward`): the rows
//!   gathered read and written and the indices read; no FLOPs.
//! - Comparisons (`eq`, `lt`...) are element-wise with a `bool` written per element;
//!   `normal_`, `uniform_`, `bernoulli_` and `clone` move bytes like `fill_` and `copy_`;
//!   `mse_loss` is a reduction of 3 FLOPs per element over its two inputs.
//!
//! - **Multi-tensor updates** (`_foreach_*`, `_fused_adam_`, `_fused_adamw_`,
//!   `_amp_foreach_non_finite_check_and_unscale_`): per element of the tensors in the list,
//!   the list inputs read and one written (in place, or the result), Adam's fused update 7
//!   passes and about 12 FLOPs. PyTorch 2 records no sizes for a tensor list, so the list is
//!   taken to be the parameters whose gradients autograd accumulated in the op's step (the
//!   `detach` under each `AccumulateGrad`), and only where the op's kernels launched exactly the
//!   blocks those tensors make in `multi_tensor_apply`'s chunks of 65,536 elements: a list
//!   that is a subset (parameter groups, dtypes split apart) or gradients accumulated twice
//!   fail the check, and the op counts as having no shapes.
//!
//! An op whose kernels ran but which records no shapes, or whose name has no formula here, is
//! counted with its device time (`Coverage`), never guessed (a transposed convolution, a
//! convolution whose strides were not recorded by value).

use std::collections::BTreeMap;

use stepcast_trace::{Dtype, EventId, NameId, OpInput, Trace};

use super::mapping::{Mapping, Op, Phase};
use crate::graph::NO_STEP;
use crate::whatif::models::peaks::{Datasheet, datasheet};
use crate::window::Window;

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
fn tensors(inputs: &[OpInput]) -> Vec<(&[i64], Option<Dtype>)> {
    inputs
        .iter()
        .filter_map(|input| match input {
            OpInput::Tensor { shape, dtype } => Some((shape.as_slice(), *dtype)),
            _ => None,
        })
        .collect()
}

fn elements(shape: &[i64]) -> Option<f64> {
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
    let size = |dtype: Option<Dtype>| dtype.map_or(4.0, |d| d.bytes() as f64);
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
        _ if COMPARISONS.contains(&stem) => {
            let largest = tensors
                .iter()
                .filter_map(|t| elements(t.0))
                .fold(0.0, f64::max);
            let read: f64 = tensors
                .iter()
                .map(|t| bytes_of(t.0, t.1))
                .sum::<Option<f64>>()
                .ok_or(Unmodeled::NoFormula)?;
            Ok(cost(
                largest,
                read + largest,
                Category::Elementwise,
                "1 FLOP per element; inputs read, a bool per element written",
            ))
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
        _ if ELEMENTWISE.contains(&stem) => {
            let largest = tensors
                .iter()
                .filter_map(|t| elements(t.0))
                .fold(0.0, f64::max);
            let read: f64 = tensors
                .iter()
                .map(|t| bytes_of(t.0, t.1))
                .sum::<Option<f64>>()
                .ok_or(Unmodeled::NoFormula)?;
            let written = if in_place {
                bytes_of(tensors[0].0, tensors[0].1).ok_or(Unmodeled::NoFormula)?
            } else {
                largest * size(dtype)
            };
            Ok(cost(
                largest,
                read + written,
                Category::Elementwise,
                "1 FLOP per element; inputs read, output written",
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

/// Attention's FLOPs and bytes (see the module documentation for the layouts).
fn attention(
    stem: &str,
    inputs: &[OpInput],
    tensors: &[(&[i64], Option<Dtype>)],
) -> Result<(f64, f64), Unmodeled> {
    const HEADS_SECOND: &[&str] = &[
        "scaled_dot_product_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_cudnn_attention",
        "_cudnn_attention",
    ];
    const SEQUENCE_SECOND: &[&str] = &["_efficient_attention", "_flash_attention"];
    let (forward_name, backward) = match stem.strip_suffix("_backward") {
        Some(name) => (name, true),
        None => (stem.strip_suffix("_forward").unwrap_or(stem), false),
    };
    let heads_second = if HEADS_SECOND.contains(&forward_name) {
        true
    } else if SEQUENCE_SECOND.contains(&forward_name) {
        false
    } else {
        return Err(Unmodeled::NoFormula);
    };
    // Backward ops take the output's gradient first, then Q, K, V.
    let first = usize::from(backward);
    let (Some((q, q_type)), Some((k, _)), Some((v, _))) = (
        tensors.get(first),
        tensors.get(first + 1),
        tensors.get(first + 2),
    ) else {
        return Err(Unmodeled::NoFormula);
    };
    let dims = |shape: &[i64]| -> Option<(f64, f64, f64, f64)> {
        let &[b, x, y, d] = shape else { return None };
        let (h, s) = if heads_second { (x, y) } else { (y, x) };
        Some((b as f64, h as f64, s as f64, d as f64))
    };
    let ((b, h, sq, d), (_, _, sk, _), (_, _, _, dv)) = (
        dims(q).ok_or(Unmodeled::NoFormula)?,
        dims(k).ok_or(Unmodeled::NoFormula)?,
        dims(v).ok_or(Unmodeled::NoFormula)?,
    );
    let mut forward = 2.0 * b * h * sq * sk * (d + dv);
    // `_efficient_attention_forward(query, key, value, bias, cu_seqlens_q, cu_seqlens_k,
    // max_seqlen_q, max_seqlen_k, dropout_p, custom_mask_type, ...)`: 1 and 2 are causal.
    if stem == "_efficient_attention_forward" && matches!(inputs.get(9), Some(OpInput::Int(1 | 2)))
    {
        forward /= 2.0;
    }
    let size = q_type.map_or(4.0, |t| t.bytes() as f64);
    let qkv = [q, k, v]
        .iter()
        .map(|shape| elements(shape))
        .sum::<Option<f64>>()
        .ok_or(Unmodeled::NoFormula)?
        * size;
    let out = b * h * sq * dv * size;
    Ok(if backward {
        (2.5 * forward, 2.0 * qkv + 2.0 * out)
    } else {
        (forward, qkv + out)
    })
}

/// The output positions of a window (a convolution's kernel, a pooling window) sliding over
/// `spatial` positions: per dimension `(size + 2·padding − dilation·(kernel − 1) − 1) /
/// stride + 1`, rounded down as `ceil_mode=False` does. A list of one value stands for every
/// dimension, and an empty stride is the kernel (pooling's default).
fn window_positions(
    spatial: &[i64],
    kernel: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
) -> Option<Vec<i64>> {
    let at = |list: &[i64], i: usize| match list {
        [one] => Some(*one),
        all => all.get(i).copied(),
    };
    if spatial.is_empty() {
        return None;
    }
    let mut output = Vec::with_capacity(spatial.len());
    for (i, &size) in spatial.iter().enumerate() {
        let k = at(kernel, i)?;
        let s = if stride.is_empty() { k } else { at(stride, i)? };
        let p = if padding.is_empty() {
            0
        } else {
            at(padding, i)?
        };
        let d = if dilation.is_empty() {
            1
        } else {
            at(dilation, i)?
        };
        if s <= 0 || k <= 0 {
            return None;
        }
        let span = size
            .checked_add(p.checked_mul(2)?)?
            .checked_sub(d.checked_mul(k - 1)?)?
            .checked_sub(1)?;
        if span < 0 {
            return None;
        }
        output.push(span / s + 1);
    }
    Some(output)
}

/// The integer lists among `inputs` (`Concrete Inputs`), in order.
fn int_lists(inputs: &[OpInput]) -> Vec<&[i64]> {
    inputs
        .iter()
        .filter_map(|i| match i {
            OpInput::Ints(values) => Some(values.as_slice()),
            _ => None,
        })
        .collect()
}

/// A pooling op's FLOPs and bytes. Forward (`max_pool2d_with_indices(self, kernel_size,
/// stride, padding, dilation, ceil_mode)`, `avg_pool2d(self, kernel_size, stride, padding,
/// ...)`): a comparison or an addition per window position of each output, the input read and
/// the output (and a max pool's `int64` indices) written. Backward (`grad_output, self,
/// kernel_size, ...`): the output gradient (and indices) read and the input's gradient
/// written; a max pool routes each gradient once, an average spreads it over its window.
/// Adaptive pooling (`_adaptive_avg_pool2d(self, output_size)`): each input element added
/// once.
fn pooling(
    stem: &str,
    inputs: &[OpInput],
    tensors: &[(&[i64], Option<Dtype>)],
) -> Result<(f64, f64), Unmodeled> {
    let size = |dtype: &Option<Dtype>| dtype.map_or(4.0, |d| d.bytes() as f64);
    let count = |shape: &[i64]| elements(shape).ok_or(Unmodeled::NoFormula);
    let backward = stem.ends_with("_backward");
    if stem.contains("adaptive") {
        return if backward {
            let [(grad_out, g_type), (input, i_type), ..] = tensors else {
                return Err(Unmodeled::NoFormula);
            };
            let n = count(input)?;
            Ok((n, count(grad_out)? * size(g_type) + n * size(i_type)))
        } else {
            let [(input, i_type), ..] = tensors else {
                return Err(Unmodeled::NoFormula);
            };
            let [output_size, ..] = int_lists(inputs)[..] else {
                return Err(Unmodeled::NoFormula);
            };
            let dims = spatial_dims(stem).unwrap_or(output_size.len());
            let leading = input.len().checked_sub(dims).filter(|&l| l > 0);
            let leading = leading.ok_or(Unmodeled::NoFormula)?;
            let out = match output_size {
                [one] => one.checked_pow(dims as u32).map(|n| n as f64),
                all => elements(all),
            };
            let out = count(&input[..leading])? * out.ok_or(Unmodeled::NoFormula)?;
            let n = count(input)?;
            Ok((n, (n + out) * size(i_type)))
        };
    }
    let max = stem.starts_with("max_pool");
    let (input, i_type) = *tensors
        .get(usize::from(backward))
        .ok_or(Unmodeled::NoFormula)?;
    let lists = int_lists(inputs);
    let (kernel, stride, padding, dilation): (&[i64], &[i64], &[i64], &[i64]) =
        match (max, lists.as_slice()) {
            (true, [k, s, p, d, ..]) => (k, s, p, d),
            (false, [k, s, p, ..]) => (k, s, p, &[]),
            _ => return Err(Unmodeled::NoFormula),
        };
    let dims = spatial_dims(stem).unwrap_or(kernel.len());
    let leading = input.len().checked_sub(dims).ok_or(Unmodeled::NoFormula)?;
    let output = window_positions(&input[leading..], kernel, stride, padding, dilation)
        .ok_or(Unmodeled::NoFormula)?;
    let window = count(kernel)?.max(1.0);
    let out = count(&input[..leading])? * count(&output)?;
    let n = count(input)?;
    let indices = if max { out * 8.0 } else { 0.0 };
    let element = size(&i_type);
    Ok(if backward {
        let flops = if max { out } else { out * window };
        (flops, out * element + indices + n * element)
    } else {
        (out * window, n * element + out * element + indices)
    })
}

/// The spatial dimensions an op's name says (`max_pool2d`: 2).
fn spatial_dims(stem: &str) -> Option<usize> {
    [("1d", 1), ("2d", 2), ("3d", 3)]
        .iter()
        .find(|(tag, _)| stem.contains(tag))
        .map(|&(_, dims)| dims)
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
    let size = |dtype: &Option<Dtype>| dtype.map_or(4.0, |d| d.bytes() as f64);
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

/// A convolution's FLOPs with `output` positions per spatial dimension: input
/// `[N, C, s...]`, weight `[O, C/groups, k...]`.
fn conv_flops(input: &[i64], weight: &[i64], output: &[i64]) -> Option<f64> {
    let (&[n, _, ref spatial @ ..], &[o, c_per_group, ref kernel @ ..]) = (input, weight) else {
        return None;
    };
    if spatial.is_empty() || spatial.len() != kernel.len() || output.len() != kernel.len() {
        return None;
    }
    let out = elements(output)?;
    let window = elements(kernel)?;
    Some(2.0 * n as f64 * o as f64 * out * c_per_group as f64 * window)
}

/// A forward convolution's FLOPs and bytes: its output positions from the input's and the
/// strides, padding and dilation (in the op's own argument order).
fn convolution(
    stem: &str,
    inputs: &[OpInput],
    tensors: &[(&[i64], Option<Dtype>)],
) -> Result<(f64, f64), Unmodeled> {
    let [(input, i_type), (weight, w_type), ..] = tensors else {
        return Err(Unmodeled::NoFormula);
    };
    let lists = int_lists(inputs);
    // `convolution(input, weight, bias, stride, padding, dilation, ...)`; the backends'
    // `cudnn_convolution(input, weight, padding, stride, dilation, ...)`.
    let (stride, padding, dilation) = match (stem, lists.as_slice()) {
        ("convolution" | "_convolution", [stride, padding, dilation, ..]) => {
            (stride, padding, dilation)
        }
        (
            "cudnn_convolution" | "miopen_convolution" | "mkldnn_convolution",
            [padding, stride, dilation, ..],
        ) => (stride, padding, dilation),
        _ => return Err(Unmodeled::NoFormula),
    };
    // A convolution's stride is always recorded (pooling's empty one means the kernel).
    if stride.is_empty() {
        return Err(Unmodeled::NoFormula);
    }
    let output = window_positions(
        input.get(2..).unwrap_or_default(),
        weight.get(2..).unwrap_or_default(),
        stride,
        padding,
        dilation,
    )
    .ok_or(Unmodeled::NoFormula)?;
    let flops = conv_flops(input, weight, &output).ok_or(Unmodeled::NoFormula)?;
    let size = |dtype: &Option<Dtype>| dtype.map_or(4.0, |d| d.bytes() as f64);
    let out_elements =
        input[0] as f64 * weight[0] as f64 * elements(&output).ok_or(Unmodeled::NoFormula)?;
    let bytes = elements(input).ok_or(Unmodeled::NoFormula)? * size(i_type)
        + elements(weight).ok_or(Unmodeled::NoFormula)? * size(w_type)
        + out_elements * size(i_type);
    Ok((flops, bytes))
}

/// Elements per block of PyTorch's `multi_tensor_apply` kernels (`kChunkSize`): each tensor of
/// a list takes `ceil(elements / 65,536)` blocks.
const MULTI_TENSOR_CHUNK: i64 = 65_536;

/// Whether `stem` is an op over tensor lists, run by `multi_tensor_apply` kernels.
fn is_multi_tensor(stem: &str) -> bool {
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
fn multi_tensor_recorded(stem: &str, inputs: &[OpInput]) -> Result<OpCost, Unmodeled> {
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
fn accumulated_gradients(trace: &Trace, mapping: &Mapping) -> Vec<(i64, i64, Option<Dtype>)> {
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
fn multi_tensor_cost(
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
    let size = dtype.map_or(4.0, |d| d.bytes() as f64);
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

/// One op name's instances of one element type over the window, summed.
#[derive(Clone, Debug, PartialEq)]
pub struct OpThroughput {
    pub name: NameId,
    pub category: Category,
    pub formula: &'static str,
    pub dtype: Option<Dtype>,
    pub instances: u64,
    pub flops: f64,
    pub bytes: f64,
    /// Time of the kernels its instances launched.
    pub device_ns: i64,
}

impl OpThroughput {
    /// Achieved TFLOP/s (FLOPs per ns are GFLOP/s).
    pub fn tflops(&self) -> f64 {
        if self.device_ns > 0 {
            self.flops / self.device_ns as f64 / 1e3
        } else {
            0.0
        }
    }

    /// Achieved TB/s.
    pub fn tb_s(&self) -> f64 {
        if self.device_ns > 0 {
            self.bytes / self.device_ns as f64 / 1e3
        } else {
            0.0
        }
    }

    /// FLOPs per byte moved.
    pub fn intensity(&self) -> f64 {
        if self.bytes > 0.0 {
            self.flops / self.bytes
        } else {
            0.0
        }
    }

    /// The compute peak its element type runs at on `sheet`, TFLOP/s, as PyTorch's defaults
    /// run `float`: matrix products on CUDA cores (`allow_tf32=False`), convolutions in TF32
    /// where the device has it (`cudnn.allow_tf32=True`), attention in 3xTF32.
    pub fn peak_tflops(&self, sheet: &Datasheet) -> f64 {
        match (self.dtype, self.category) {
            (Some(Dtype::Float16 | Dtype::BFloat16), _) => sheet.peaks.fp16_tflops,
            (_, Category::Convolution) => {
                sheet.peaks.tf32_tflops.unwrap_or(sheet.peaks.fp32_tflops)
            }
            // PyTorch's FP32 memory-efficient attention (CUTLASS's `OpMultiplyAddFastF32`):
            // three TF32 products per product.
            (_, Category::Attention) => sheet
                .peaks
                .tf32_tflops
                .map_or(sheet.peaks.fp32_tflops, |tf32| tf32 / 3.0),
            _ => sheet.peaks.fp32_tflops,
        }
    }

    /// Its roofline: the most it could achieve at its intensity, TFLOP/s, or TB/s for an op
    /// that computes nothing.
    pub fn efficiency(&self, sheet: &Datasheet) -> f64 {
        if self.flops <= 0.0 || !self.category.is_compute() {
            return self.tb_s() / sheet.memory_tb_s;
        }
        let roof = self
            .peak_tflops(sheet)
            .min(self.intensity() * sheet.memory_tb_s);
        if roof > 0.0 {
            self.tflops() / roof
        } else {
            0.0
        }
    }
}

/// How much device time the model covers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Coverage {
    /// Kernel and memset time over the window (copies and collectives are no op's math).
    pub device_ns: i64,
    pub modeled_ns: i64,
    /// Device time of ops that recorded no shapes.
    pub no_shapes_ns: i64,
    /// Device time of ops without a formula, and of kernels mapped to no op; the largest
    /// names.
    pub no_formula_ns: i64,
    pub top_unmodeled: Vec<(NameId, i64)>,
}

/// Modeled ops' device time, FLOPs and bytes summed over a group (a category, a phase).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OpTotal {
    pub device_ns: i64,
    pub flops: f64,
    pub bytes: f64,
}

impl OpTotal {
    fn add(&mut self, device_ns: i64, flops: f64, bytes: f64) {
        self.device_ns += device_ns;
        self.flops += flops;
        self.bytes += bytes;
    }
}

/// The model over a window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpModel {
    /// Per op name, most device time first.
    pub ops: Vec<OpThroughput>,
    /// Per category of the modeled ops, most device time first.
    pub categories: Vec<(Category, OpTotal)>,
    /// Per phase of the modeled ops' kernels (an op's FLOPs and bytes split by its kernels'
    /// time in each), in [`Phase::ALL`] order, phases without modeled time left out.
    pub phases: Vec<(Phase, OpTotal)>,
    pub coverage: Coverage,
    /// Per step of the window: FLOPs of its modeled ops (where their kernels ran in it).
    pub step_flops: Vec<f64>,
    /// The trace's device's datasheet, if it has one.
    pub sheet: Option<Datasheet>,
}

/// The op model of `window`.
pub fn op_model(trace: &Trace, window: &Window, mapping: &Mapping) -> OpModel {
    let g = &window.graph;
    // Device time per op event, and per (op event, step).
    // Per op event: device time, (step, time) and (phase, time) of its kernels, and the
    // blocks they launched (`None` where one is unrecorded).
    type OpKernels = (i64, Vec<(usize, i64)>, Vec<(Phase, i64)>, Option<u64>);
    let mut by_op: BTreeMap<EventId, OpKernels> = BTreeMap::new();
    let blocks_of = |task: usize| {
        let event = g.event[task];
        trace
            .kernel_fill
            .binary_search_by_key(&event, |(e, _)| *e)
            .ok()
            .and_then(|i| trace.kernel_fill[i].1.blocks)
    };
    let mut coverage = Coverage::default();
    let mut unmodeled: BTreeMap<NameId, i64> = BTreeMap::new();
    for t in 0..g.task_count() {
        use crate::graph::TaskKind;
        if !matches!(g.kind[t], TaskKind::Kernel | TaskKind::Memset) {
            continue;
        }
        let ns = g.rec_end_ns[t] - g.rec_start_ns[t];
        coverage.device_ns += ns;
        match mapping.op[t] {
            Some(Op::Event(event)) => {
                let entry = by_op
                    .entry(event)
                    .or_insert((0, Vec::new(), Vec::new(), Some(0)));
                entry.0 += ns;
                entry.2.push((mapping.phase[t], ns));
                entry.3 = entry.3.zip(blocks_of(t)).map(|(a, b)| a + b);
                if g.step[t] != NO_STEP {
                    entry.1.push((g.step[t] as usize, ns));
                }
            }
            _ => {
                coverage.no_formula_ns += ns;
                *unmodeled.entry(g.name[t]).or_default() += ns;
            }
        }
    }
    // Per name and element type: an `add_` of a float activation and of an integer counter
    // run at different peaks.
    let mut by_name: BTreeMap<(NameId, Category, Option<Dtype>), OpThroughput> = BTreeMap::new();
    let mut step_flops = vec![0.0; window.steps.len()];
    let mut gradients = None;
    let mut categories: BTreeMap<Category, OpTotal> = BTreeMap::new();
    let mut phases: BTreeMap<Phase, OpTotal> = BTreeMap::new();
    for (event, (ns, steps, op_phases, blocks)) in by_op {
        let name = trace.events[event.index()].name;
        let inputs = trace.inputs_of(event).unwrap_or(&[]);
        let text = trace.names.get(name);
        let cost = match op_cost(text, inputs) {
            Err(Unmodeled::NoShapes) => {
                let stem = text.strip_prefix("aten::").unwrap_or_default();
                let stem = stem.trim_end_matches('_');
                blocks
                    .filter(|_| is_multi_tensor(stem))
                    .and_then(|blocks| {
                        let gradients =
                            gradients.get_or_insert_with(|| accumulated_gradients(trace, mapping));
                        multi_tensor_cost(trace, event, stem, inputs, blocks, gradients)
                    })
                    .ok_or(Unmodeled::NoShapes)
            }
            other => other,
        };
        match cost {
            Ok(cost) => {
                coverage.modeled_ns += ns;
                let entry = by_name
                    .entry((name, cost.category, cost.dtype))
                    .or_insert_with(|| OpThroughput {
                        name,
                        category: cost.category,
                        formula: cost.formula,
                        dtype: cost.dtype,
                        instances: 0,
                        flops: 0.0,
                        bytes: 0.0,
                        device_ns: 0,
                    });
                entry.instances += 1;
                entry.flops += cost.flops;
                entry.bytes += cost.bytes;
                entry.device_ns += ns;
                categories
                    .entry(cost.category)
                    .or_default()
                    .add(ns, cost.flops, cost.bytes);
                for (phase, phase_ns) in op_phases {
                    let share = phase_ns as f64 / ns.max(1) as f64;
                    phases.entry(phase).or_default().add(
                        phase_ns,
                        cost.flops * share,
                        cost.bytes * share,
                    );
                }
                // An instance's FLOPs go to the steps its kernels ran in, by their time.
                for (step, step_ns) in steps {
                    if let Some(flops) = step_flops.get_mut(step) {
                        *flops += cost.flops * step_ns as f64 / ns.max(1) as f64;
                    }
                }
            }
            Err(why) => {
                match why {
                    Unmodeled::NoShapes => coverage.no_shapes_ns += ns,
                    Unmodeled::NoFormula => coverage.no_formula_ns += ns,
                }
                *unmodeled.entry(name).or_default() += ns;
            }
        }
    }
    let mut ops: Vec<OpThroughput> = by_name.into_values().collect();
    ops.sort_by(|a, b| b.device_ns.cmp(&a.device_ns).then(a.name.cmp(&b.name)));
    let mut top: Vec<(NameId, i64)> = unmodeled.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    top.truncate(10);
    coverage.top_unmodeled = top;
    let sheet = trace
        .devices
        .iter()
        .find_map(|device| datasheet(&device.name));
    let mut categories: Vec<(Category, OpTotal)> = categories.into_iter().collect();
    categories.sort_by(|a, b| b.1.device_ns.cmp(&a.1.device_ns).then(a.0.cmp(&b.0)));
    let phases = Phase::ALL
        .iter()
        .filter_map(|phase| phases.get(phase).map(|total| (*phase, *total)))
        .collect();
    OpModel {
        ops,
        categories,
        phases,
        coverage,
        step_flops,
        sheet,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(shape: &[i64], dtype: Dtype) -> OpInput {
        OpInput::Tensor {
            shape: shape.to_vec(),
            dtype: Some(dtype),
        }
    }

    #[test]
    fn a_matrix_product_is_two_flops_per_term() {
        let cost = op_cost(
            "aten::mm",
            &[
                tensor(&[8192, 1024], Dtype::Float32),
                tensor(&[1024, 4096], Dtype::Float32),
            ],
        )
        .expect("a cost");
        assert_eq!(cost.flops, 2.0 * 8192.0 * 1024.0 * 4096.0);
        assert_eq!(
            cost.bytes,
            4.0 * (8192.0 * 1024.0 + 1024.0 * 4096.0 + 8192.0 * 4096.0)
        );
        // `addmm`: the bias first, then the same product.
        let addmm = op_cost(
            "aten::addmm",
            &[
                tensor(&[4096], Dtype::Float16),
                tensor(&[8192, 1024], Dtype::Float16),
                tensor(&[1024, 4096], Dtype::Float16),
                OpInput::Scalar,
            ],
        )
        .expect("a cost");
        assert_eq!(addmm.flops, cost.flops);
        assert_eq!(addmm.dtype, Some(Dtype::Float16));
        // `linear` over a batch of rows: input [B, S, K], weight [N, K].
        let linear = op_cost(
            "aten::linear",
            &[
                tensor(&[16, 512, 1024], Dtype::Float32),
                tensor(&[3072, 1024], Dtype::Float32),
            ],
        )
        .expect("a cost");
        assert_eq!(linear.flops, 2.0 * 16.0 * 512.0 * 1024.0 * 3072.0);
        let bmm = op_cost(
            "aten::bmm",
            &[
                tensor(&[8, 64, 32], Dtype::BFloat16),
                tensor(&[8, 32, 16], Dtype::BFloat16),
            ],
        )
        .expect("a cost");
        assert_eq!(bmm.flops, 2.0 * 8.0 * 64.0 * 32.0 * 16.0);
    }

    #[test]
    fn mismatched_or_missing_shapes_are_said_not_guessed() {
        let mismatched = op_cost(
            "aten::mm",
            &[
                tensor(&[8, 3], Dtype::Float32),
                tensor(&[4, 5], Dtype::Float32),
            ],
        );
        assert_eq!(mismatched, Err(Unmodeled::NoFormula));
        assert_eq!(op_cost("aten::mm", &[]), Err(Unmodeled::NoShapes));
        assert_eq!(
            op_cost(
                "aten::convolution",
                &[tensor(&[1, 3, 8, 8], Dtype::Float32)]
            ),
            Err(Unmodeled::NoFormula)
        );
        assert_eq!(
            op_cost("MyOp", &[tensor(&[4], Dtype::Float32)]),
            Err(Unmodeled::NoFormula)
        );
    }

    #[test]
    fn a_convolution_counts_its_output_positions() {
        // ResNet's first layer: 7×7, stride 2, padding 3 on 224×224 gives 112×112.
        let image = tensor(&[64, 3, 224, 224], Dtype::Float32);
        let weight = tensor(&[64, 3, 7, 7], Dtype::Float32);
        let flops = 2.0 * 64.0 * 64.0 * 112.0 * 112.0 * 3.0 * 49.0;
        let aten = op_cost(
            "aten::convolution",
            &[
                image.clone(),
                weight.clone(),
                OpInput::Other,
                OpInput::Ints(vec![2, 2]),
                OpInput::Ints(vec![3, 3]),
                OpInput::Ints(vec![1, 1]),
                OpInput::Scalar,
                OpInput::Ints(vec![0, 0]),
                OpInput::Int(1),
            ],
        )
        .expect("a cost");
        assert_eq!(aten.flops, flops);
        // cuDNN's own op takes padding first.
        let cudnn = op_cost(
            "aten::cudnn_convolution",
            &[
                image,
                weight,
                OpInput::Ints(vec![3, 3]),
                OpInput::Ints(vec![2, 2]),
                OpInput::Ints(vec![1, 1]),
                OpInput::Int(1),
            ],
        )
        .expect("a cost");
        assert_eq!(cudnn.flops, flops);
        // The backward pass: both gradients, the output positions from `grad_output`.
        let backward = op_cost(
            "aten::convolution_backward",
            &[
                tensor(&[64, 512, 7, 7], Dtype::Float32),
                tensor(&[64, 512, 7, 7], Dtype::Float32),
                tensor(&[512, 512, 3, 3], Dtype::Float32),
                OpInput::Ints(vec![0]),
            ],
        )
        .expect("a cost");
        assert_eq!(
            backward.flops,
            2.0 * 2.0 * 64.0 * 512.0 * 49.0 * 512.0 * 9.0
        );
        // Without its strides recorded by value: said, not guessed.
        assert_eq!(
            op_cost(
                "aten::cudnn_convolution",
                &[
                    tensor(&[64, 3, 224, 224], Dtype::Float32),
                    tensor(&[64, 3, 7, 7], Dtype::Float32),
                    OpInput::Other,
                ],
            ),
            Err(Unmodeled::NoFormula)
        );
    }

    #[test]
    fn attention_counts_its_two_products_in_either_layout() {
        let bhsd = tensor(&[16, 16, 512, 64], Dtype::Float32);
        let bshd = tensor(&[16, 512, 16, 64], Dtype::Float32);
        let forward = 2.0 * 16.0 * 16.0 * 512.0 * 512.0 * (64.0 + 64.0);
        let sdpa = op_cost(
            "aten::_scaled_dot_product_efficient_attention",
            &[bhsd.clone(), bhsd.clone(), bhsd.clone()],
        )
        .expect("a cost");
        assert_eq!(sdpa.flops, forward);
        let kernel = op_cost(
            "aten::_efficient_attention_forward",
            &[bshd.clone(), bshd.clone(), bshd.clone()],
        )
        .expect("a cost");
        assert_eq!(kernel.flops, forward);
        let backward = op_cost(
            "aten::_efficient_attention_backward",
            &[bshd.clone(), bshd.clone(), bshd.clone(), bshd.clone()],
        )
        .expect("a cost");
        assert_eq!(backward.flops, 2.5 * forward);
        // A causal mask recorded by value halves it.
        let mut causal = vec![bshd.clone(), bshd.clone(), bshd];
        causal.extend(std::iter::repeat_n(OpInput::Other, 6));
        causal.push(OpInput::Int(1));
        let causal = op_cost("aten::_efficient_attention_forward", &causal).expect("a cost");
        assert_eq!(causal.flops, forward / 2.0);
    }

    #[test]
    fn element_wise_ops_move_their_bytes() {
        let shape = [16, 512, 1024];
        let n = 16.0 * 512.0 * 1024.0;
        let add_ = op_cost(
            "aten::add_",
            &[
                tensor(&shape, Dtype::Float32),
                tensor(&shape, Dtype::Float32),
                OpInput::Scalar,
            ],
        )
        .expect("a cost");
        assert_eq!(add_.flops, n);
        assert_eq!(add_.bytes, 3.0 * 4.0 * n, "two read, one written in place");
        let copy = op_cost(
            "aten::copy_",
            &[
                tensor(&shape, Dtype::Float16),
                tensor(&shape, Dtype::Float32),
            ],
        )
        .expect("a cost");
        assert_eq!(copy.flops, 0.0);
        assert_eq!(copy.bytes, 2.0 * n + 4.0 * n);
    }

    #[test]
    fn pooling_counts_its_windows_from_the_recorded_sizes() {
        // ResNet's stem: a 3 × 3 max pool, stride 2, padding 1 over 112 × 112 gives 56 × 56.
        let ints = |v: &[i64]| OpInput::Ints(v.to_vec());
        let forward = op_cost(
            "aten::max_pool2d_with_indices",
            &[
                tensor(&[64, 64, 112, 112], Dtype::Float16),
                ints(&[3, 3]),
                ints(&[2, 2]),
                ints(&[1, 1]),
                ints(&[1, 1]),
                OpInput::Scalar,
            ],
        )
        .expect("a cost");
        let out = 64.0 * 64.0 * 56.0 * 56.0;
        let input = 64.0 * 64.0 * 112.0 * 112.0;
        assert_eq!(forward.category, Category::Pooling);
        assert_eq!(forward.flops, out * 9.0);
        assert_eq!(forward.bytes, 2.0 * input + 2.0 * out + 8.0 * out);
        let backward = op_cost(
            "aten::max_pool2d_with_indices_backward",
            &[
                tensor(&[64, 64, 56, 56], Dtype::Float16),
                tensor(&[64, 64, 112, 112], Dtype::Float16),
                ints(&[3, 3]),
                ints(&[2, 2]),
                ints(&[1, 1]),
                ints(&[1, 1]),
                OpInput::Scalar,
                tensor(&[64, 64, 56, 56], Dtype::Int64),
            ],
        )
        .expect("a cost");
        assert_eq!(backward.flops, out, "each gradient routed once");
        assert_eq!(backward.bytes, 2.0 * out + 8.0 * out + 2.0 * input);
        // An empty stride is the kernel; an adaptive pool adds each input once.
        let avg = op_cost(
            "aten::avg_pool2d",
            &[
                tensor(&[1, 8, 8, 8], Dtype::Float32),
                ints(&[2, 2]),
                ints(&[]),
                ints(&[0]),
            ],
        )
        .expect("a cost");
        assert_eq!(avg.flops, 8.0 * 4.0 * 4.0 * 4.0);
        let adaptive = op_cost(
            "aten::_adaptive_avg_pool2d",
            &[tensor(&[2, 512, 7, 7], Dtype::Float32), ints(&[1, 1])],
        )
        .expect("a cost");
        assert_eq!(adaptive.flops, 2.0 * 512.0 * 49.0);
        assert_eq!(adaptive.bytes, 4.0 * (2.0 * 512.0 * 49.0 + 2.0 * 512.0));
        // Without its window recorded by value, a pool is not guessed.
        assert_eq!(
            op_cost(
                "aten::max_pool2d_with_indices",
                &[tensor(&[64, 64, 112, 112], Dtype::Float16)]
            ),
            Err(Unmodeled::NoFormula)
        );
    }

    #[test]
    fn lookups_move_the_rows_they_gather() {
        // BERT's word embedding: 141 tokens of a 30,522 × 512 table.
        let embedding = op_cost(
            "aten::embedding",
            &[
                tensor(&[30522, 512], Dtype::BFloat16),
                tensor(&[1, 141], Dtype::Int64),
            ],
        )
        .expect("a cost");
        assert_eq!(embedding.category, Category::Embedding);
        assert_eq!(embedding.flops, 0.0);
        assert_eq!(embedding.bytes, 2.0 * 141.0 * 512.0 * 2.0 + 141.0 * 8.0);
        let select = op_cost(
            "aten::index_select",
            &[
                tensor(&[30522, 512], Dtype::BFloat16),
                OpInput::Int(0),
                tensor(&[141], Dtype::Int64),
            ],
        )
        .expect("a cost");
        assert_eq!(
            select.bytes, embedding.bytes,
            "the same rows, by dimension 0"
        );
        let along_last = op_cost(
            "aten::index_select",
            &[
                tensor(&[4, 10], Dtype::Float32),
                OpInput::Int(-1),
                tensor(&[3], Dtype::Int64),
            ],
        )
        .expect("a cost");
        assert_eq!(along_last.bytes, 2.0 * 12.0 * 4.0 + 3.0 * 8.0);
    }

    #[test]
    fn softmax_and_comparisons_have_their_own_traffic() {
        let scores = [8, 12, 512, 512];
        let n = 8.0 * 12.0 * 512.0 * 512.0;
        let softmax = op_cost(
            "aten::_softmax",
            &[
                tensor(&scores, Dtype::Float32),
                OpInput::Int(-1),
                OpInput::Scalar,
            ],
        )
        .expect("a cost");
        assert_eq!(softmax.category, Category::Softmax);
        assert_eq!((softmax.flops, softmax.bytes), (5.0 * n, 2.0 * 4.0 * n));
        let eq = op_cost(
            "aten::eq",
            &[tensor(&[1, 141], Dtype::Int64), OpInput::Scalar],
        )
        .expect("a cost");
        assert_eq!(eq.bytes, 141.0 * 8.0 + 141.0, "a bool written per element");
        let group_norm = op_cost(
            "aten::native_group_norm",
            &[tensor(&[8, 16, 32, 32], Dtype::Float32)],
        )
        .expect("a cost");
        assert_eq!(group_norm.category, Category::Normalization);
    }
}
