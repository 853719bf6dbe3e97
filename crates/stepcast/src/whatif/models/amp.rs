//! Automatic mixed precision (Daydream A.1, refined): which kernels get faster and by how
//! much, and what the model says about it (its caveats).

use std::collections::BTreeMap;

use super::super::edit::{EditGraph, Select, Selection};
use super::super::{Context, WhatIfError};
use super::AmpDtype;
use super::activations::forward_units;
use super::amp_costs::{AmpCosts, charge};
use super::autocast::{List, StepCasts, list};
use super::gist::elementwise_throughput;
use super::kernels::{Bound, classify_kernel};
use super::peaks::{Datasheet, datasheet, peaks};
use crate::analyze::mapping::Phase;
use crate::analyze::op_model::{KernelCost, kernel_costs};
use crate::graph::{TaskId, TaskKind};
use stepcast_trace::Dtype;

/// The compute capability major of the trace's GPU (the largest, if several).
pub(super) fn compute_major(context: &Context<'_>) -> Option<i64> {
    context
        .trace
        .devices
        .iter()
        .filter_map(|d| d.compute_capability.map(|(major, _)| major))
        .max()
}

/// How much faster each kind of FP32 tensor-core-eligible kernel runs in FP16, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct AmpFactors {
    /// FP32 on CUDA cores (`ffma`, `sgemm`): FP16 tensor peak / FP32 peak.
    pub simt: f64,
    /// Already on TF32 tensor cores: FP16 tensor peak / TF32 tensor peak.
    pub tf32: f64,
    /// FP32 emulated with three TF32 products (CUTLASS's `OpMultiplyAddFastF32`, which the
    /// FP32 kernels of PyTorch's memory-efficient attention, `fmha_cutlass*_f32`, use on
    /// compute capability ≥ 8.0): three times the TF32 ratio; the SIMT ratio without TF32.
    pub fast_f32: f64,
    /// FP32 whose math path the name does not tell (a convolution): the low end, the TF32
    /// ratio, where the GPU has TF32 (cuDNN uses it by default); the SIMT ratio where it has
    /// none.
    pub unknown: f64,
    /// Where the factors come from, for the caveats.
    pub source: String,
}

impl AmpFactors {
    /// From the trace's GPU (the first device with known peaks): datasheet peaks by product
    /// name, else the architecture's per-SM rates by compute capability. No tensor cores
    /// (< 7.0): 1. Neither known: Daydream's 3 (after NVIDIA's AMP guide), 2 for TF32 kernels.
    pub fn of(context: &Context<'_>) -> AmpFactors {
        if compute_major(context).is_some_and(|m| m < 7) {
            return AmpFactors {
                simt: 1.0,
                tf32: 1.0,
                fast_f32: 1.0,
                unknown: 1.0,
                source: "no tensor cores before compute capability 7.0".to_string(),
            };
        }
        match context.trace.devices.iter().find_map(peaks) {
            Some(p) => {
                let simt = p.fp16_tflops / p.fp32_tflops;
                let tf32 = p.tf32_tflops.map_or(simt, |t| p.fp16_tflops / t);
                AmpFactors {
                    simt,
                    tf32,
                    fast_f32: if p.tf32_tflops.is_some() {
                        3.0 * tf32
                    } else {
                        simt
                    },
                    unknown: tf32,
                    source: format!(
                        "{}: FP16 tensor {:.0}, TF32 tensor {}, FP32 {:.1} TFLOP/s (peak ratios)",
                        p.source,
                        p.fp16_tflops,
                        p.tf32_tflops
                            .map_or_else(|| "none".to_string(), |t| format!("{t:.0}")),
                        p.fp32_tflops
                    ),
                }
            }
            None => AmpFactors {
                simt: 3.0,
                tf32: 2.0,
                fast_f32: 3.0,
                unknown: 3.0,
                source: "GPU not identified: Daydream's 3 (2 for TF32 kernels)".to_string(),
            },
        }
    }
}

/// A memory-bound kernel's factor under autocast: half the bytes (× 0.5) where its op runs in
/// half precision, × 1 where it stays FP32 (an op on autocast's FP32 lists, its backward, the
/// gradients' accumulation into FP32 parameters) and for cuDNN's own memory-bound kernels
/// (batch norm, layout transforms), which are not bandwidth-bound at these sizes: on the
/// recorded ResNet-18 pairs cuDNN's batch-norm kernels ran ×1.25 (H100) and ×1.07 (H200)
/// faster in FP16 and its layout transforms ×1.15, not ×2.
const HALF_BYTES: f64 = 0.5;

/// Whether forward or backward kernel `t` of `edit` works on half-precision tensors under
/// autocast: its forward op's dtype ([`StepCasts`], by autocast's lists), or for a backward
/// kernel, the dtype of the forward op its backward node is the gradient of
/// ([`forward_op_of_node`]).
struct HalfOps {
    /// Forward kernels (input task ids) whose op runs in half precision.
    forward: BTreeMap<TaskId, bool>,
    /// Whether any forward op of the window is on autocast's FP16 list: an unlisted op's
    /// backward then works on FP16 gradients.
    any_half: bool,
}

impl HalfOps {
    fn of(context: &Context<'_>) -> HalfOps {
        let trace = context.trace;
        let mut forward = BTreeMap::new();
        let mut step = (u32::MAX, StepCasts::default());
        let mut any_half = false;
        for unit in forward_units(context).units {
            if step.0 != unit.step {
                step = (unit.step, StepCasts::default());
            }
            let op_name = trace.name(trace.events[unit.op.index()].name);
            let _ = step.1.casts(op_name, trace.inputs_of(unit.op));
            let half = match list(op_name) {
                List::Half => true,
                List::Float | List::FloatInPlace => false,
                List::Unlisted => step.1.is_half(),
            };
            any_half |= list(op_name) == List::Half;
            for t in unit.tasks {
                forward.insert(t, half);
            }
        }
        HalfOps { forward, any_half }
    }

    fn is_half(&self, context: &Context<'_>, edit: &EditGraph, t: TaskId) -> bool {
        if let Some(&half) = self.forward.get(&t) {
            return half;
        }
        if !edit.is_original(t) || context.mapping.phase[t.index()] != Phase::Backward {
            return false;
        }
        let names = &context.trace.names;
        let node = context.mapping.stack(t).into_iter().find_map(|e| {
            let name = names.get(context.trace.events[e.index()].name);
            forward_op_of_node(name)
        });
        match node {
            Some(Some(op)) => match list(&op) {
                List::Half => true,
                List::Float | List::FloatInPlace => false,
                List::Unlisted => self.any_half,
            },
            // The gradients' accumulation into the FP32 parameters, or no backward node.
            Some(None) | None => false,
        }
    }
}

/// The forward op a backward node is the gradient of, in autocast's spelling
/// (`autograd::engine::evaluate_function: NativeLayerNormBackward0` → `native_layer_norm`);
/// `Some(None)` for the gradients' accumulation (`AccumulateGrad`: FP32 parameters), `None`
/// when `name` is not a backward node.
fn forward_op_of_node(name: &str) -> Option<Option<String>> {
    let node = name.rsplit(": ").next().unwrap_or(name);
    if node.contains("AccumulateGrad") {
        return Some(None);
    }
    let stem = node.trim_end_matches(|c: char| c.is_ascii_digit());
    let stem = stem.strip_suffix("Backward")?;
    let mut snake = String::new();
    for (i, c) in stem.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                snake.push('_');
            }
            snake.push(c.to_ascii_lowercase());
        } else {
            snake.push(c);
        }
    }
    Some(Some(snake))
}

/// **Automatic mixed precision** (Daydream A.1, refined), FP16 with a `GradScaler` or BF16
/// without. Forward and backward kernels only: the optimizer keeps FP32 master weights,
/// collectives reduce FP32 gradients, input copies are unchanged. Per kernel, by name
/// ([`classify_kernel`], memory-bound names first):
/// - already half precision (`f16`, `bf16`, `h884`, `nvjet_sm90_hsh`...): unchanged;
/// - tensor-core eligible (GEMM, convolution): duration / the peak ratio of its math path
///   ([`AmpFactors`]: FP32 on CUDA cores, TF32, 3xTF32, or not told by the name), from the
///   trace's GPU (`deviceProperties`);
/// - memory-bound (element-wise, normalization, reduction): × 0.5 where its op runs in half
///   precision under autocast's lists, else × 1; cuDNN's memory-bound kernels × 1
///   (`HALF_BYTES`);
/// - anything else: unchanged.
///
/// Then what AMP costs is charged (`charge`): the casts, and in FP16 the gradient
/// scaler's kernels, its per-step host synchronization and the host time of dispatching them.
/// On a host-bound step those costs can outweigh the faster kernels: AMP can slow a step
/// down.
pub fn amp(
    context: &Context<'_>,
    edit: &mut EditGraph,
    dtype: AmpDtype,
) -> Result<usize, WhatIfError> {
    amp_with_costs(context, edit, dtype).map(|(changed, _)| changed)
}

/// [`amp`], also returning what it charged.
pub fn amp_with_costs(
    context: &Context<'_>,
    edit: &mut EditGraph,
    dtype: AmpDtype,
) -> Result<(usize, AmpCosts), WhatIfError> {
    let factors = AmpFactors::of(context);
    let select = Select {
        kinds: vec![TaskKind::Kernel],
        phases: vec![Phase::Forward, Phase::Backward, Phase::Other],
        ..Select::default()
    };
    let selection = edit.select(&select, context.select_context());
    let names = &context.trace.names;
    let half_ops = HalfOps::of(context);
    let headroom = Headroom::of(context);
    let mut by_factor: BTreeMap<u64, Vec<TaskId>> = BTreeMap::new();
    for &t in selection.tasks() {
        let name = names.get(edit.name(t));
        let class = classify_kernel(name);
        let factor = match class.bound {
            _ if class.half => continue,
            Bound::Compute => headroom.factor(t, edit.dur_ns(t), class, &factors).0,
            Bound::Memory if is_cudnn(name) => continue,
            Bound::Memory if half_ops.is_half(context, edit, t) => HALF_BYTES,
            Bound::Memory | Bound::Other => continue,
        };
        by_factor.entry(f64::to_bits(factor)).or_default().push(t);
    }
    let mut changed = 0;
    for (bits, tasks) in by_factor {
        changed += tasks.len();
        edit.scale(&Selection::new(tasks), f64::from_bits(bits))?;
    }
    let costs = charge(context, edit, dtype)?;
    Ok((changed + costs.casts + costs.scaler_tasks, costs))
}

/// How a tensor-core eligible kernel's gain was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gain {
    /// Its name's math path and the datasheet's peak ratio; no shapes recorded for its op.
    ByName,
    /// The peak ratio, within its op's FP16 roofline (shapes recorded).
    Modeled,
    /// Its op's FP16 roofline: the peak ratio would have made it faster than that.
    Floored,
    /// Its name does not tell its math path, and it ran above the FP32 peak: TF32's ratio.
    OnTf32,
}

/// What the op model says of each kernel's room to get faster: its share of its op's FLOPs
/// and bytes, and the trace's GPU's datasheet.
struct Headroom {
    costs: Vec<Option<KernelCost>>,
    sheet: Option<Datasheet>,
}

impl Headroom {
    fn of(context: &Context<'_>) -> Headroom {
        Headroom {
            costs: kernel_costs(context.trace, context.window, context.mapping),
            sheet: context
                .trace
                .devices
                .iter()
                .find_map(|d| datasheet(&d.name)),
        }
    }

    /// The factor a tensor-core eligible FP32 kernel's duration `dur_ns` is multiplied by in
    /// half precision: the peak ratio of its math path ([`AmpFactors`]), but never below its
    /// op's FP16 roofline (its FLOPs at the FP16 peak, half its bytes at the memory's
    /// bandwidth); a kernel whose name does not tell its path and that ran above the FP32
    /// peak is on TF32 tensor cores.
    fn factor(
        &self,
        t: TaskId,
        dur_ns: i64,
        class: super::kernels::KernelClass,
        factors: &AmpFactors,
    ) -> (f64, Gain) {
        let by_name = if class.tf32 {
            1.0 / factors.tf32
        } else if class.simt {
            1.0 / factors.simt
        } else if class.fast_f32 {
            1.0 / factors.fast_f32
        } else {
            1.0 / factors.unknown
        };
        let (Some(sheet), Some(Some(cost))) = (&self.sheet, self.costs.get(t.index())) else {
            return (by_name, Gain::ByName);
        };
        if dur_ns <= 0 {
            return (by_name, Gain::ByName);
        }
        // Its op's inputs are already half precision (a name that does not say so): autocast
        // leaves it as it is.
        if matches!(cost.dtype, Some(Dtype::Float16 | Dtype::BFloat16)) {
            return (1.0, Gain::Modeled);
        }
        let dur = dur_ns as f64;
        let (mut factor, mut gain) = (by_name, Gain::Modeled);
        let path_untold = !(class.tf32 || class.simt || class.fast_f32);
        if path_untold && cost.flops / dur / 1e3 > sheet.peaks.fp32_tflops {
            (factor, gain) = (1.0 / factors.tf32, Gain::OnTf32);
        }
        let half = KernelCost {
            bytes: cost.bytes / 2.0,
            ..*cost
        };
        let floor_ns = half.roofline_ns(sheet.peaks.fp16_tflops, sheet.memory_tb_s);
        if dur * factor < floor_ns {
            (factor, gain) = ((floor_ns / dur).min(1.0), Gain::Floored);
        }
        (factor, gain)
    }

    /// The window's tensor-core eligible kernels not named half precision, by how their gain
    /// was decided, with their recorded time: (by name, modeled, floored, on TF32), ns.
    fn summary(&self, context: &Context<'_>, factors: &AmpFactors) -> [i64; 4] {
        let g = &context.window.graph;
        let names = &context.trace.names;
        let mut out = [0i64; 4];
        for t in 0..g.task_count() {
            if g.kind[t] != TaskKind::Kernel {
                continue;
            }
            let class = classify_kernel(names.get(g.name[t]));
            if class.bound != Bound::Compute || class.half {
                continue;
            }
            let ns = g.rec_end_ns[t] - g.rec_start_ns[t];
            let (_, gain) = self.factor(TaskId(t as u32), ns, class, factors);
            out[gain as usize] += ns;
        }
        out
    }
}

/// cuDNN's own kernels (`cudnn::bn_fw_tr_1C11_kernel_NCHW`,
/// `cudnn::engines_precompiled::nchwToNhwcKernel`).
fn is_cudnn(name: &str) -> bool {
    name.contains("cudnn")
}

/// What `amp` assumes and leaves out on this trace, with the numbers.
pub fn caveats(context: &Context<'_>, dtype: AmpDtype) -> Vec<String> {
    let units = forward_units(context).units;
    let factors = AmpFactors::of(context);
    let mut out = vec![
        format!(
            "FP32 GEMMs/convolutions on CUDA cores (ffma, sgemm) ÷ {:.1}, on TF32 ÷ {:.1}, \
             3xTF32 attention (fmha_cutlass f32) ÷ {:.1}, FP32 kernels whose math path the name \
             does not tell ÷ {:.1} (the low end); {}: datasheet peak ratios, not a bound either \
             way: on the recorded pairs the achieved ratios were ×20 for large SIMT GEMMs \
             (transformer, H100: above the peak ratio), ×3.4 for small ones (1024×1024 at \
             batch 64: latency-bound, far below it) and ×2.7 for TF32 convolutions (ResNet-18)",
            factors.simt, factors.tf32, factors.fast_f32, factors.unknown, factors.source
        ),
        format!(
            "charges the casts autocast's op lists make (every FP32 input of an FP16-list op: \
             weights, biases, FP32 activations; a loss's half-precision input), a \
             ToCopyBackward0 for each that needs a gradient{}, each at this trace's own per-op \
             host cost; not charged: autocast's dispatch on the ops it does not cast (+0-9 % \
             per op on the recorded H200 pairs, e.g. batch_norm 84.6 → 92.5 µs, add_ 18.5 → \
             19.1 µs), the gradient casts of an unlisted op mixing half and FP32 inputs (a \
             residual addition), fewer launches of cuBLAS's half-precision kernels",
            match dtype {
                AmpDtype::Fp16 => ", GradScaler's eight ops and its found_inf synchronization",
                AmpDtype::Bf16 => " (BF16: no GradScaler)",
            }
        ),
        "memory-bound kernels take half their time (half the bytes) only where their op runs in \
         half precision under autocast's lists; cuDNN's batch norm and layout kernels keep \
         theirs (measured ×1.07-1.25 and ×1.15 faster in FP16 on the recorded ResNet-18 pairs)"
            .to_string(),
    ];
    if dtype == AmpDtype::Bf16 {
        out.push(
            "BF16 batch norm: cuDNN's batch-norm kernels take no BF16 on the recorded PyTorch \
             (2.11); PyTorch's own kernels ran instead, ×0.73 (slower) than cuDNN's FP32 ones \
             on the recorded H200 ResNet-18 pair: not charged"
                .to_string(),
        );
    }
    let mut edit = context.edit();
    if let Ok((_, costs)) = amp_with_costs(context, &mut edit, dtype)
        && costs.scaler_skipped > 0
    {
        out.push(format!(
            "GradScaler's ops and synchronization are left out of {} steady steps (its blocking \
             read back would close a cycle in this trace's graph): optimistic there",
            costs.scaler_skipped
        ));
    }
    let [by_name, modeled, floored, on_tf32] = Headroom::of(context).summary(context, &factors);
    let all = by_name + modeled + floored + on_tf32;
    if all > 0 {
        let share = |ns: i64| ns as f64 / all as f64 * 100.0;
        out.push(format!(
            "of the FP32 tensor-core eligible kernel time, {:.0} % is of ops with recorded \
             shapes, never made faster than their op's FP16 roofline on this GPU's datasheet \
             (its FLOPs at the FP16 peak, half its bytes at the memory's bandwidth; {:.0} % \
             held there) and taken to run on TF32 where the name does not say and the kernel \
             ran above the FP32 peak ({:.0} %); {:.0} % by name only (no shapes recorded)",
            share(modeled + floored + on_tf32),
            share(floored),
            share(on_tf32),
            share(by_name)
        ));
    }
    if elementwise_throughput(context, &units).is_none() {
        out.push(
            "no element-wise throughput in this trace: each cast costs a median element-wise \
             kernel"
                .to_string(),
        );
    }
    out
}

/// The ops whose inputs' type says the precision the matrix products ran in.
const MATRIX_OPS: &[&str] = &[
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::matmul",
    "aten::linear",
    "aten::convolution",
    "aten::_convolution",
    "aten::cudnn_convolution",
    "aten::miopen_convolution",
    "aten::scaled_dot_product_attention",
];

/// Why `amp` does not apply to the recorded program, if it does not: the model is training's
/// autocast with a `GradScaler`, so a trace without a backward pass (inference) is outside it,
/// and a program whose matrix products already take 16- or 8-bit inputs has nothing for
/// autocast to cast (more than half of those whose inputs were recorded with their types).
pub(super) fn not_applicable(context: &Context<'_>) -> Option<String> {
    let trace = context.trace;
    let phases = &context.mapping.phase;
    let has_device = context.window.graph.has_device_tasks();
    if has_device && !phases.contains(&Phase::Backward) {
        return Some(
            "the trace has no backward pass (inference, or a window without one): amp models \
             training's autocast with a GradScaler; reduced precision for inference is not \
             modelled"
                .to_string(),
        );
    }
    let (mut reduced, mut typed) = (0usize, 0usize);
    for (event, inputs) in &trace.op_inputs {
        let Some(e) = trace.events.get(event.index()) else {
            continue;
        };
        if !MATRIX_OPS.contains(&trace.name(e.name)) {
            continue;
        }
        if let Some(stepcast_trace::OpInput::Tensor {
            dtype: Some(dtype), ..
        }) = inputs.first()
        {
            typed += 1;
            if matches!(
                dtype,
                stepcast_trace::Dtype::Float16
                    | stepcast_trace::Dtype::BFloat16
                    | stepcast_trace::Dtype::Float8
            ) {
                reduced += 1;
            }
        }
    }
    (typed > 0 && reduced * 2 > typed).then(|| {
        format!(
            "the matrix products already run in reduced precision: {reduced} of the {typed} \
             recorded with their types take 16- or 8-bit inputs, so autocast has nothing to cast"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::forward_op_of_node;

    #[test]
    fn backward_nodes_name_their_forward_op() {
        let op = |n: &str| forward_op_of_node(n).flatten();
        assert_eq!(
            op("autograd::engine::evaluate_function: NativeLayerNormBackward0").as_deref(),
            Some("native_layer_norm")
        );
        assert_eq!(op("MseLossBackward0").as_deref(), Some("mse_loss"));
        assert_eq!(op("LogSoftmaxBackward0").as_deref(), Some("log_softmax"));
        assert_eq!(
            forward_op_of_node("torch::autograd::AccumulateGrad"),
            Some(None)
        );
        assert_eq!(forward_op_of_node("aten::mm"), None);
    }
}
