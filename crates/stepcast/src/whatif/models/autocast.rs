//! Which tensors `torch.autocast(float16)` casts, read from an FP32 trace's ops: its CUDA op
//! lists (PyTorch's `aten/src/ATen/autocast_mode.cpp`) and the recorded input types.
//!
//! Autocast casts every FP32 floating-point input of an op on its lower-precision list
//! (convolutions, linear layers, matmuls, attention) to FP16 before the op, and the FP16
//! inputs of an op on its FP32 list (losses, layer norm, `exp`...) back to FP32. Each such
//! cast is one more eager op (`aten::to` → `_to_copy` → `copy_`: an allocation and an
//! element-wise kernel), and where the cast tensor requires a gradient, one more backward node
//! (`ToCopyBackward0`) casts its gradient back. Parameters stay FP32 (the optimizer's master
//! weights), so a layer's weight and bias are cast every step, each way.
//!
//! Activations are tracked by the most recent listed op of the step (the dtype its output
//! has): after an FP16-list op they are FP16, after an FP32-list op FP32; ops on neither list
//! run in their input's type. The step's first input (the batch) is FP32 and requires no
//! gradient. Not tracked: an unlisted op mixing FP16 and FP32 inputs (a residual addition of
//! an FP32 stream), whose backward casts the gradient (charged nowhere: an undercount).

use stepcast_trace::{Dtype, OpInput};

/// Where an op stands in autocast's CUDA lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum List {
    /// Runs in FP16: its FP32 inputs are cast.
    Half,
    /// Runs in FP32: its FP16 inputs are cast.
    Float,
    /// Runs in FP32 by passing `dtype=float` to the op (`softmax`, `sum`...): no cast kernel,
    /// but its output is FP32.
    FloatInPlace,
    /// Neither: runs in its input's type.
    Unlisted,
}

/// Autocast's lower-precision (FP16) list, CUDA.
const HALF: &[&str] = &[
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_tbc",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "convolution",
    "_convolution",
    "cudnn_convolution",
    "prelu",
    "addmm",
    "addmv",
    "addr",
    "matmul",
    "einsum",
    "mm",
    "mv",
    "linear",
    "addbmm",
    "baddbmm",
    "bmm",
    "chain_matmul",
    "linalg_multi_dot",
    "_thnn_fused_lstm_cell",
    "_thnn_fused_gru_cell",
    "lstm_cell",
    "gru_cell",
    "rnn_tanh_cell",
    "rnn_relu_cell",
    "scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
];

/// Autocast's FP32 list, CUDA (the ops that cast their inputs).
const FLOAT: &[&str] = &[
    "acos",
    "asin",
    "cosh",
    "erfinv",
    "exp",
    "expm1",
    "log",
    "log10",
    "log2",
    "log1p",
    "reciprocal",
    "rsqrt",
    "sinh",
    "tan",
    "pow",
    "softplus",
    "layer_norm",
    "native_layer_norm",
    "group_norm",
    "frobenius_norm",
    "nuclear_norm",
    "cosine_similarity",
    "poisson_nll_loss",
    "cosine_embedding_loss",
    "nll_loss",
    "nll_loss2d",
    "hinge_embedding_loss",
    "kl_div",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "mse_loss",
    "margin_ranking_loss",
    "multilabel_margin_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "multi_margin_loss",
    "binary_cross_entropy_with_logits",
    "dist",
    "pdist",
    "cdist",
    "renorm",
    "logsumexp",
];

/// Autocast's "FP32 with the op's own dtype argument" list: no cast, an FP32 output.
/// `cross_entropy_loss` is here by what it calls (`log_softmax`).
const FLOAT_IN_PLACE: &[&str] = &[
    "prod",
    "softmax",
    "log_softmax",
    "_log_softmax",
    "cumprod",
    "cumsum",
    "linalg_vector_norm",
    "linalg_matrix_norm",
    "sum",
    "cross_entropy_loss",
];

/// Ops whose inputs after the first are parameters (weight, bias): always FP32 under AMP.
const PARAMETER_OPS: &[&str] = &[
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_tbc",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "convolution",
    "_convolution",
    "cudnn_convolution",
    "prelu",
    "linear",
    "lstm_cell",
    "gru_cell",
    "rnn_tanh_cell",
    "rnn_relu_cell",
];

/// An op's name without its namespace (`aten::conv2d` → `conv2d`).
fn bare(op_name: &str) -> &str {
    op_name.rsplit("::").next().unwrap_or(op_name)
}

/// Where `op_name` stands in autocast's lists.
pub(super) fn list(op_name: &str) -> List {
    let name = bare(op_name);
    if HALF.contains(&name) {
        List::Half
    } else if FLOAT.contains(&name) {
        List::Float
    } else if FLOAT_IN_PLACE.contains(&name) {
        List::FloatInPlace
    } else {
        List::Unlisted
    }
}

/// One cast autocast adds before an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Cast {
    /// Bytes of the tensor in FP32 (`None`: shape not recorded).
    pub fp32_bytes: Option<i64>,
    /// Whether the tensor requires a gradient: the cast gets a `ToCopyBackward0`.
    pub backward: bool,
}

/// The casts of one step's forward ops, op by op in recorded order.
#[derive(Debug, Default)]
pub(super) struct StepCasts {
    /// The dtype activations have now: `None` at the step's start (the batch: FP32, no
    /// gradient), else whether the latest listed op left them FP16.
    half: Option<bool>,
}

impl StepCasts {
    /// Whether activations are in half precision now (after the latest listed op).
    pub(super) fn is_half(&self) -> bool {
        self.half == Some(true)
    }

    /// The casts autocast adds before `op_name`, given its recorded inputs (`None`: not
    /// recorded; then a parameter op's weight and an FP32 activation are assumed).
    pub(super) fn casts(&mut self, op_name: &str, inputs: Option<&[OpInput]>) -> Vec<Cast> {
        let before = self.half;
        let activation_fp32 = before != Some(true);
        // The batch needs no gradient; every later activation does.
        let activation_grad = before.is_some();
        let mut out = Vec::new();
        match list(op_name) {
            List::Half => {
                let parameters = PARAMETER_OPS.contains(&bare(op_name));
                match inputs {
                    Some(inputs) => {
                        for (i, input) in inputs.iter().enumerate() {
                            let OpInput::Tensor {
                                dtype: Some(Dtype::Float32),
                                ..
                            } = input
                            else {
                                continue;
                            };
                            let parameter = parameters && i >= 1;
                            if parameter || activation_fp32 {
                                out.push(Cast {
                                    fp32_bytes: input.bytes(),
                                    backward: parameter || activation_grad,
                                });
                            }
                        }
                    }
                    None => {
                        if activation_fp32 {
                            out.push(Cast {
                                fp32_bytes: None,
                                backward: activation_grad,
                            });
                        }
                        if parameters {
                            out.push(Cast {
                                fp32_bytes: None,
                                backward: true,
                            });
                        }
                    }
                }
                self.half = Some(true);
            }
            List::Float => {
                // Its FP16 activation is cast back; its other inputs (a target, a norm's
                // parameters) are FP32 already.
                if before == Some(true) {
                    let first = inputs.and_then(|i| i.first());
                    let is_float = |i: &OpInput| {
                        matches!(
                            i,
                            OpInput::Tensor {
                                dtype: Some(Dtype::Float32),
                                ..
                            }
                        )
                    };
                    if first.is_none_or(is_float) {
                        out.push(Cast {
                            fp32_bytes: first.and_then(OpInput::bytes),
                            backward: true,
                        });
                    }
                }
                self.half = Some(false);
            }
            List::FloatInPlace => self.half = Some(false),
            List::Unlisted => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(shape: &[i64]) -> OpInput {
        OpInput::Tensor {
            shape: shape.to_vec(),
            dtype: Some(Dtype::Float32),
        }
    }

    /// The recorded `mlp` workload (`testdata/kineto/stepcast/h100-pairs`): 16 linear layers
    /// with ReLUs, an MSE loss. Its AMP trace casts 33 tensors forward (16 weights, 16 biases,
    /// the batch) plus the output for the loss, and has 33 `ToCopyBackward0` per step.
    #[test]
    fn mlp_casts_weights_biases_the_batch_and_the_loss_input() {
        let linear = [tensor(&[64, 1024]), tensor(&[1024, 1024]), tensor(&[1024])];
        let mut step = StepCasts::default();
        let mut casts = Vec::new();
        for layer in 0..16 {
            casts.extend(step.casts("aten::linear", Some(&linear)));
            if layer < 15 {
                assert!(step.casts("aten::relu", Some(&linear[..1])).is_empty());
            }
        }
        let loss = [tensor(&[64, 1024]), tensor(&[64, 1024])];
        casts.extend(step.casts("aten::mse_loss", Some(&loss)));
        assert_eq!(casts.len(), 16 * 2 + 1 + 1);
        assert_eq!(casts.iter().filter(|c| c.backward).count(), 33);
        assert_eq!(casts[1].fp32_bytes, Some(4 << 20));
    }

    /// A post-norm transformer layer: the FP32 layer norm's output is cast again before the
    /// next linear layer; an attention op's inputs come from a linear layer in FP16.
    #[test]
    fn layer_norm_output_is_cast_again() {
        let mut step = StepCasts::default();
        let linear = [tensor(&[8, 16]), tensor(&[16, 16]), tensor(&[16])];
        assert_eq!(step.casts("aten::linear", Some(&linear)).len(), 3);
        let qkv = [tensor(&[8, 16]), tensor(&[8, 16]), tensor(&[8, 16])];
        assert!(
            step.casts("aten::scaled_dot_product_attention", Some(&qkv))
                .is_empty()
        );
        assert!(step.casts("aten::layer_norm", Some(&linear)).len() == 1);
        let casts = step.casts("aten::linear", Some(&linear));
        assert_eq!(casts.len(), 3);
        assert!(casts.iter().all(|c| c.backward));
        // A loss after an FP32 norm casts nothing (the recorded transformer's final norm).
        assert_eq!(step.casts("aten::layer_norm", Some(&linear)).len(), 1);
        assert!(step.casts("aten::mse_loss", Some(&qkv[..2])).is_empty());
        // Without recorded inputs: a convolution's weight, and its FP32 input.
        let mut step = StepCasts::default();
        assert_eq!(step.casts("aten::conv2d", None).len(), 2);
        assert_eq!(step.casts("aten::conv2d", None).len(), 1);
    }
}
