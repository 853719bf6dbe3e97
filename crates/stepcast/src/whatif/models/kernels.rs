//! What bounds a kernel, by its name: the one classifier `amp` and `faster_hardware` share.

use std::sync::LazyLock;

use regex::Regex;

/// What a kernel's time is bound by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Memory bandwidth: element-wise, normalization, reduction, pooling, layout kernels.
    Memory,
    /// Arithmetic on tensor cores (or what would run there): GEMMs and convolutions.
    Compute,
    /// Neither reads clearly from the name.
    Other,
}

/// A kernel as the models see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelClass {
    pub bound: Bound,
    /// Already half precision (`f16`, `bf16`, `h884`...).
    pub half: bool,
    /// Already on TF32 tensor cores.
    pub tf32: bool,
    /// FP32 arithmetic on CUDA cores by name (`ffma`, `sgemm`, `simt`, cuDNN's `scudnn`): no
    /// tensor cores, so FP16 tensor cores gain the whole FP16-tensor / FP32 peak ratio.
    pub simt: bool,
    /// FP32 emulated with three TF32 products: the FP32 kernels of PyTorch's memory-efficient
    /// attention (`fmha_cutlassF_f32_aligned_64x64_rf_sm80`), built on CUTLASS's
    /// `OpMultiplyAddFastF32` for compute capability ≥ 8.0.
    pub fast_f32: bool,
}

static HALF_PRECISION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(fp16|bf16|f16|half|h884|h1688|h16816|hgemm|bfloat|nvjet_sm\d+[a-z]?_[hb]|^cijk_a[a-z]{3}_b[a-z]{3}_(hh|bb))",
    )
        .expect("valid regex")
});
static SIMT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(ffma|sgemm|simt|scudnn)").expect("valid regex"));
static FAST_F32: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)fmha_cutlass[a-z]*_f32").expect("valid regex"));
/// GEMMs and convolutions whatever else their names say: cuDNN's `indexed` implicit GEMMs
/// (`sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32...`) would otherwise read as
/// memory-bound by `index`.
/// Also Tensile's GEMMs (hipBLASLt and rocBLAS on ROCm: `Cijk_Alik_Bljk_BBS_BH_...`) and
/// Inductor's templates (`triton_tem_fused_mm_0`: matrix products Triton generated).
static GEMM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(implicit_gemm|xmma_gemm|_sgemm|sgemm_|hgemm|s\d+gemm|^cijk_|triton_tem_)")
        .expect("valid regex")
});
static TF32: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)(tf32|nvjet_sm\d+[a-z]?_t)").expect("valid regex"));
/// Names that are memory-bound whatever library they come from: tested first, because cuDNN's
/// batch-norm kernels (`cudnn::bn_fw_tr_1C11_kernel_NCHW`, `cudnn::bn_bw_1C11_kernel_new`) and
/// its layout and offset helpers carry `cudnn` in their names and would otherwise read as
/// convolutions.
/// Inductor's pointwise and reduction kernels (`triton_poi_fused_convolution_relu_0`,
/// `triton_red_*`, `triton_per_*`) are memory-bound whatever ops their names fused.
static MEMORY_BOUND: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(triton_poi_|triton_red_|triton_per_|elementwise|vectorized|unrolled|pointwise|reduce_kernel|bn_fw|bn_bw|batch_?norm|layer_?norm|group_?norm|instance_?norm|softmax|dropout|pool|embedding|index|cat_|fill|scalepackedtensor|nchwtonhwc|nhwctonchw|offsetskernel|im2col)",
    )
    .expect("valid regex")
});
static TENSOR_CORE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(gemm|conv|cutlass|cudnn|cublas|xmma|wgrad|dgrad|fprop|matmul|volta_|turing_|ampere_|hopper_|sm\d\d_|fmha|flash_fwd|flash_bwd|flash_attn|attn_fwd|attn_bwd|miopen)")
        .expect("valid regex")
});
/// Weaker memory-bound words, tested after the tensor-core ones: a cuDNN convolution with a
/// fused activation (`volta_scudnn_128x64_relu_interior_nn_v1`) is still a convolution.
static MEMORY_WORDS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(norm|reduce|copy|relu|gelu|silu|activation|add|mul|where)")
        .expect("valid regex")
});

/// Classifies a kernel by its name: memory-bound patterns first, then tensor-core eligible
/// (GEMMs and convolutions of cuBLAS, cuDNN, CUTLASS), then weaker memory-bound words.
pub fn classify_kernel(name: &str) -> KernelClass {
    let bound = if GEMM.is_match(name) {
        Bound::Compute
    } else if MEMORY_BOUND.is_match(name) {
        Bound::Memory
    } else if TENSOR_CORE.is_match(name) {
        Bound::Compute
    } else if MEMORY_WORDS.is_match(name) {
        Bound::Memory
    } else {
        Bound::Other
    };
    KernelClass {
        bound,
        half: HALF_PRECISION.is_match(name),
        tf32: TF32.is_match(name),
        simt: SIMT.is_match(name),
        fast_f32: FAST_F32.is_match(name),
    }
}

/// Whether a kernel name reads as tensor-core eligible (compute-bound): [`classify_kernel`]'s
/// [`Bound::Compute`].
pub fn is_tensor_core_eligible(name: &str) -> bool {
    classify_kernel(name).bound == Bound::Compute
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kernel names recorded in `testdata` (the ResNet-50 sample on a V100).
    #[test]
    fn cudnn_batch_norm_is_memory_bound_and_convolutions_are_not() {
        for name in [
            "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, 512, true, 1>(cudnnTensorStruct)",
            "void cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>(float)",
            "void cudnn::ops::scalePackedTensor_kernel<float, float>(cudnnTensor4dStruct)",
            "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
        ] {
            assert_eq!(classify_kernel(name).bound, Bound::Memory, "{name}");
        }
        for name in [
            "volta_scudnn_128x64_relu_interior_nn_v1",
            "void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int)",
            "void implicit_convolve_sgemm<float, float, 1024, 6, 7, 3, 3, 5, 1, false>(int)",
            "volta_sgemm_64x64_nt",
        ] {
            assert_eq!(classify_kernel(name).bound, Bound::Compute, "{name}");
        }
        assert!(classify_kernel("volta_h884gemm_64x64_ldg8_nn").half);
        // Recorded on an MI300X with `torch.compile` (TraceLens's `torch_compile_triton`):
        // hipBLASLt's BF16 GEMM, Triton's attention, Inductor's pointwise and reductions (one
        // named after a convolution it fused an epilogue of).
        let tensile = classify_kernel(
            "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_LDSB1_AFC1",
        );
        assert!(tensile.bound == Bound::Compute && tensile.half && !tensile.simt);
        assert_eq!(
            classify_kernel("Cijk_Ailk_Bljk_SB_MT64x64x8").bound,
            Bound::Compute
        );
        assert!(!classify_kernel("Cijk_Ailk_Bljk_SB_MT64x64x8").half);
        assert_eq!(classify_kernel("attn_fwd").bound, Bound::Compute);
        assert_eq!(
            classify_kernel("triton_tem_fused_addmm_0").bound,
            Bound::Compute
        );
        for name in [
            "triton_poi_fused__unsafe_view_mul_silu_2",
            "triton_red_fused__unsafe_view_add_mean_mul_pow_rsqrt_1",
            "triton_per_fused_native_layer_norm_3",
            "triton_poi_fused_convolution_relu_0",
        ] {
            assert_eq!(classify_kernel(name).bound, Bound::Memory, "{name}");
        }
        // Recorded on an H100 (`testdata/kineto/stepcast/h100-pairs`): FP32 GEMMs on CUDA
        // cores, a TF32 convolution, an FP16 GEMM.
        for name in [
            "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel__51a2_cublas",
            "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(cutlass_80_simt_sgemm_128x256_8x4_nt_align1::Params)",
            "volta_sgemm_64x64_nt",
        ] {
            let class = classify_kernel(name);
            assert!(class.simt && !class.tf32 && !class.half, "{name}");
        }
        let tf32 = classify_kernel(
            "sm90_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize256x64x32_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
        );
        assert!(tf32.tf32 && !tf32.simt && tf32.bound == Bound::Compute);
        // cuDNN's indexed implicit GEMMs are convolutions; PyTorch's FP32 attention is 3xTF32.
        let wgrad = classify_kernel(
            "sm90_xmma_wgrad_indexed_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x32_warpgroupsize1x1x1_g1_execute_segment_k_off_kernel__5x_cudnn",
        );
        assert!(wgrad.bound == Bound::Compute && wgrad.tf32);
        let fmha = classify_kernel(
            "fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80, float, true, false, false, 64, 64, 64, false>::Params)",
        );
        assert!(fmha.bound == Bound::Compute && fmha.fast_f32 && !fmha.tf32 && !fmha.simt);
        // cuBLAS's nvjet kernels name their types after the architecture: `hsh` = FP16.
        assert!(classify_kernel("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT").half);
    }
}
