//! Ops that slide a window over spatial positions: convolutions and pooling, their output
//! positions from the strides, padding and dilation recorded by value.

use stepcast_trace::{Dtype, OpInput};

use super::cost::{Unmodeled, element_bytes, elements};

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
pub(super) fn pooling(
    stem: &str,
    inputs: &[OpInput],
    tensors: &[(&[i64], Option<Dtype>)],
) -> Result<(f64, f64), Unmodeled> {
    let size = |dtype: &Option<Dtype>| element_bytes(*dtype);
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

/// A convolution's FLOPs with `output` positions per spatial dimension: input
/// `[N, C, s...]`, weight `[O, C/groups, k...]`.
pub(super) fn conv_flops(input: &[i64], weight: &[i64], output: &[i64]) -> Option<f64> {
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
pub(super) fn convolution(
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
    let size = |dtype: &Option<Dtype>| element_bytes(*dtype);
    let out_elements =
        input[0] as f64 * weight[0] as f64 * elements(&output).ok_or(Unmodeled::NoFormula)?;
    let bytes = elements(input).ok_or(Unmodeled::NoFormula)? * size(i_type)
        + elements(weight).ok_or(Unmodeled::NoFormula)? * size(w_type)
        + out_elements * size(i_type);
    Ok((flops, bytes))
}
