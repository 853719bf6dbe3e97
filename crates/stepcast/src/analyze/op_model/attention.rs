//! Attention's FLOPs and bytes (`scaled_dot_product_attention` and its backends' ops).

use stepcast_trace::{Dtype, OpInput};

use super::cost::{Unmodeled, element_bytes, elements};

/// Attention's FLOPs and bytes (see the module documentation for the layouts).
pub(super) fn attention(
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
    // A causal mask skips the upper triangle of each query-key square: half the products.
    if is_causal(stem, inputs) && sq == sk {
        forward /= 2.0;
    }
    let size = element_bytes(*q_type);
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

/// Where each attention op records its mask (PyTorch's `native_functions.yaml` signatures,
/// checked on the recorded traces): the position of its `is_causal` flag, or of the
/// memory-efficient kernels' `custom_mask_type` (1 and 2 are causal).
const CAUSAL_FLAG: &[(&str, usize)] = &[
    ("scaled_dot_product_attention", 5),
    ("_scaled_dot_product_flash_attention", 4),
    ("_scaled_dot_product_efficient_attention", 6),
    ("_scaled_dot_product_cudnn_attention", 6),
    ("_flash_attention_forward", 8),
    ("_cudnn_attention_forward", 10),
    ("_scaled_dot_product_flash_attention_backward", 11),
    ("_flash_attention_backward", 11),
    ("_scaled_dot_product_efficient_attention_backward", 11),
    ("_scaled_dot_product_cudnn_attention_backward", 14),
    ("_cudnn_attention_backward", 14),
];
const MASK_TYPE: &[(&str, usize)] = &[
    ("_efficient_attention_forward", 9),
    ("_efficient_attention_backward", 14),
];

/// Whether the op `stem` recorded a causal mask by value (`Concrete Inputs`); `false` where it
/// recorded none.
fn is_causal(stem: &str, inputs: &[OpInput]) -> bool {
    let at = |table: &[(&str, usize)]| {
        table
            .iter()
            .find(|(name, _)| *name == stem)
            .and_then(|&(_, i)| inputs.get(i))
    };
    matches!(at(CAUSAL_FLAG), Some(OpInput::Bool(true)))
        || matches!(at(MASK_TYPE), Some(OpInput::Int(1 | 2)))
}
