//! The op model's formulas on hand-derived shapes.

use stepcast_trace::{Dtype, OpInput};

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

/// Qwen's causal attention as TraceLens's `h100` trace records it: `is_causal=True` at the
/// flash ops' own positions (4 and 8), which halves the FLOPs as TraceLens's SDPA model does
/// (`2·B·H·Nq·Nkv·(d_qk + d_v)`, halved when causal).
#[test]
fn a_recorded_causal_flag_halves_attention() {
    let bhsd = tensor(&[16, 16, 559, 64], Dtype::BFloat16);
    let bshd = tensor(&[16, 559, 16, 64], Dtype::BFloat16);
    let full = 2.0 * 16.0 * 16.0 * 559.0 * 559.0 * 128.0;
    let scalar = |value: &str| match value {
        "True" => OpInput::Bool(true),
        "False" => OpInput::Bool(false),
        _ => OpInput::Scalar,
    };
    let sdpa_flash = |is_causal: &str| {
        let mut inputs = vec![bhsd.clone(), bhsd.clone(), bhsd.clone(), scalar("0.")];
        inputs.extend([scalar(is_causal), scalar("False"), scalar("0.125")]);
        op_cost("aten::_scaled_dot_product_flash_attention", &inputs).expect("a cost")
    };
    assert_eq!(sdpa_flash("True").flops, full / 2.0);
    assert_eq!(sdpa_flash("False").flops, full);
    let mut inputs = vec![
        bshd.clone(),
        bshd.clone(),
        bshd,
        OpInput::Other,
        OpInput::Other,
    ];
    inputs.extend([OpInput::Int(559), OpInput::Int(559), scalar("0.")]);
    inputs.extend([scalar("True"), scalar("False")]);
    let flash = op_cost("aten::_flash_attention_forward", &inputs).expect("a cost");
    assert_eq!(flash.flops, full / 2.0);
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
