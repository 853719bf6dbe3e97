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
//!   FlashAttention counts them), halved where the op records a causal mask by value
//!   (`is_causal=True`, or the memory-efficient kernels' mask type). Bytes: the inputs read and the
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
//! - **Collectives** (`collectives.rs`): per type and group size, message bytes over recorded
//!   time (NCCL's algorithm bandwidth) and NCCL's bus bandwidth; the recorded time includes
//!   the wait for the slowest peer, so these are lower bounds on the links.
//!
//! An op whose kernels ran but which records no shapes, or whose name has no formula here, is
//! counted with its device time (`Coverage`), never guessed (a transposed convolution, a
//! convolution whose strides were not recorded by value).

use std::collections::BTreeMap;

use stepcast_trace::{Dtype, EventId, NameId, Trace};

use super::mapping::{Mapping, Op, Phase};
use crate::graph::NO_STEP;
use crate::whatif::models::peaks::{Datasheet, datasheet};
use crate::window::Window;

mod attention;
mod collectives;
mod cost;
mod multi_tensor;
#[cfg(test)]
mod tests;
mod windows;

pub use collectives::{CollectiveThroughput, collective_throughput};
pub(crate) use cost::element_bytes;
pub use cost::{Category, OpCost, Unmodeled, op_cost};
use multi_tensor::{accumulated_gradients, is_multi_tensor, multi_tensor_cost};

/// The compute peak ops of `category` on `dtype` run at on `sheet`, TFLOP/s, as PyTorch's
/// defaults run `float`: matrix products on CUDA cores (`allow_tf32=False`), convolutions in
/// TF32 where the device has it (`cudnn.allow_tf32=True`), attention in 3xTF32.
pub fn peak_for(dtype: Option<Dtype>, category: Category, sheet: &Datasheet) -> f64 {
    match (dtype, category) {
        (Some(Dtype::Float16 | Dtype::BFloat16), _) => sheet.peaks.fp16_tflops,
        (_, Category::Convolution) => sheet.peaks.tf32_tflops.unwrap_or(sheet.peaks.fp32_tflops),
        // PyTorch's FP32 memory-efficient attention (CUTLASS's `OpMultiplyAddFastF32`):
        // three TF32 products per product.
        (_, Category::Attention) => sheet
            .peaks
            .tf32_tflops
            .map_or(sheet.peaks.fp32_tflops, |tf32| tf32 / 3.0),
        _ => sheet.peaks.fp32_tflops,
    }
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
        peak_for(self.dtype, self.category, sheet)
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
    /// Per layer (module) of the modeled ops' kernels, split the same way, most device time
    /// first; kernels without a layer are in none.
    pub layers: Vec<(NameId, OpTotal)>,
    /// The collectives by type and group size: message bytes over recorded time.
    pub collectives: Vec<CollectiveThroughput>,
    pub coverage: Coverage,
    /// Per step of the window: FLOPs of its modeled ops (where their kernels ran in it).
    pub step_flops: Vec<f64>,
    /// The trace's device's datasheet, if it has one.
    pub sheet: Option<Datasheet>,
}

/// The kernels and memsets of one op event over the window.
#[derive(Default)]
struct OpKernels {
    /// Their recorded time.
    ns: i64,
    /// (step, time) of those in a step.
    steps: Vec<(usize, i64)>,
    /// (phase, time) of each.
    phases: Vec<(Phase, i64)>,
    /// (layer, time) of each with a layer.
    layers: Vec<(NameId, i64)>,
    /// Blocks they launched (`None` where one is unrecorded).
    blocks: Option<u64>,
    /// The tasks.
    tasks: Vec<usize>,
}

/// Device time of every kernel and memset of the window, grouped by the op event it maps to;
/// the device time of those mapped to no op is added to `coverage` and `unmodeled`.
fn kernels_by_op(
    trace: &Trace,
    window: &Window,
    mapping: &Mapping,
    coverage: &mut Coverage,
    unmodeled: &mut BTreeMap<NameId, i64>,
) -> BTreeMap<EventId, OpKernels> {
    use crate::graph::TaskKind;
    let g = &window.graph;
    let blocks_of = |task: usize| {
        let event = g.event[task];
        trace
            .kernel_fill
            .binary_search_by_key(&event, |(e, _)| *e)
            .ok()
            .and_then(|i| trace.kernel_fill[i].1.blocks)
    };
    let mut by_op: BTreeMap<EventId, OpKernels> = BTreeMap::new();
    for t in 0..g.task_count() {
        if !matches!(g.kind[t], TaskKind::Kernel | TaskKind::Memset) {
            continue;
        }
        let ns = g.rec_end_ns[t] - g.rec_start_ns[t];
        coverage.device_ns += ns;
        match mapping.op[t] {
            Some(Op::Event(event)) => {
                let entry = by_op.entry(event).or_insert_with(|| OpKernels {
                    blocks: Some(0),
                    ..OpKernels::default()
                });
                entry.ns += ns;
                entry.phases.push((mapping.phase[t], ns));
                if let Some(layer) = mapping.layer[t] {
                    entry.layers.push((layer, ns));
                }
                entry.blocks = entry.blocks.zip(blocks_of(t)).map(|(a, b)| a + b);
                entry.tasks.push(t);
                if g.step[t] != NO_STEP {
                    entry.steps.push((g.step[t] as usize, ns));
                }
            }
            _ => {
                coverage.no_formula_ns += ns;
                *unmodeled.entry(g.name[t]).or_default() += ns;
            }
        }
    }
    by_op
}

/// The cost of the op `event` whose kernels launched `blocks`: its formula on its recorded
/// shapes, or, for a multi-tensor op without them, its lists sized from the step's gradients
/// (computed once, into `gradients`).
fn event_cost(
    trace: &Trace,
    mapping: &Mapping,
    event: EventId,
    blocks: Option<u64>,
    gradients: &mut Option<Vec<(i64, i64, Option<Dtype>)>>,
) -> Result<OpCost, Unmodeled> {
    let name = trace.names.get(trace.events[event.index()].name);
    let inputs = trace.inputs_of(event).unwrap_or(&[]);
    match op_cost(name, inputs) {
        Err(Unmodeled::NoShapes) => {
            let stem = name.strip_prefix("aten::").unwrap_or_default();
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
    }
}

/// One kernel's share of its op's cost (the op's FLOPs and bytes split over its kernels by
/// their recorded time): what the what-ifs that change kernel speed bound a kernel by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelCost {
    pub flops: f64,
    pub bytes: f64,
    pub category: Category,
    pub dtype: Option<Dtype>,
}

impl KernelCost {
    /// The least time it can take on a device with these peaks: its FLOPs at `peak_tflops`
    /// or its bytes at `memory_tb_s`, whichever is longer (its roofline), ns.
    pub fn roofline_ns(&self, peak_tflops: f64, memory_tb_s: f64) -> f64 {
        let compute = if peak_tflops > 0.0 {
            self.flops / (peak_tflops * 1e3)
        } else {
            0.0
        };
        let memory = if memory_tb_s > 0.0 {
            self.bytes / (memory_tb_s * 1e3)
        } else {
            0.0
        };
        compute.max(memory)
    }
}

/// Per task of the window's graph: its share of its op's cost where the op is modeled.
pub fn kernel_costs(trace: &Trace, window: &Window, mapping: &Mapping) -> Vec<Option<KernelCost>> {
    let mut out = vec![None; window.graph.task_count()];
    let (mut coverage, mut unmodeled) = (Coverage::default(), BTreeMap::new());
    let mut gradients = None;
    let g = &window.graph;
    for (event, kernels) in kernels_by_op(trace, window, mapping, &mut coverage, &mut unmodeled) {
        let Ok(cost) = event_cost(trace, mapping, event, kernels.blocks, &mut gradients) else {
            continue;
        };
        for t in kernels.tasks {
            let share = (g.rec_end_ns[t] - g.rec_start_ns[t]) as f64 / kernels.ns.max(1) as f64;
            out[t] = Some(KernelCost {
                flops: cost.flops * share,
                bytes: cost.bytes * share,
                category: cost.category,
                dtype: cost.dtype,
            });
        }
    }
    out
}

/// Adds an op's cost to the groups its kernels ran in (`parts`: group, kernel time), split by
/// their share of its `ns`.
fn add_split<K: Ord>(
    totals: &mut BTreeMap<K, OpTotal>,
    parts: Vec<(K, i64)>,
    ns: i64,
    cost: &OpCost,
) {
    for (key, part_ns) in parts {
        let share = part_ns as f64 / ns.max(1) as f64;
        totals
            .entry(key)
            .or_default()
            .add(part_ns, cost.flops * share, cost.bytes * share);
    }
}

/// The op model of `window`.
pub fn op_model(trace: &Trace, window: &Window, mapping: &Mapping) -> OpModel {
    let mut coverage = Coverage::default();
    let mut unmodeled: BTreeMap<NameId, i64> = BTreeMap::new();
    let by_op = kernels_by_op(trace, window, mapping, &mut coverage, &mut unmodeled);
    // Per name and element type: an `add_` of a float activation and of an integer counter
    // run at different peaks.
    let mut by_name: BTreeMap<(NameId, Category, Option<Dtype>), OpThroughput> = BTreeMap::new();
    let mut step_flops = vec![0.0; window.steps.len()];
    let mut gradients = None;
    let mut categories: BTreeMap<Category, OpTotal> = BTreeMap::new();
    let mut phases: BTreeMap<Phase, OpTotal> = BTreeMap::new();
    let mut layers: BTreeMap<NameId, OpTotal> = BTreeMap::new();
    for (event, kernels) in by_op {
        let name = trace.events[event.index()].name;
        let ns = kernels.ns;
        match event_cost(trace, mapping, event, kernels.blocks, &mut gradients) {
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
                add_split(&mut layers, kernels.layers, ns, &cost);
                add_split(&mut phases, kernels.phases, ns, &cost);
                // An instance's FLOPs go to the steps its kernels ran in, by their time.
                for (step, step_ns) in kernels.steps {
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
    let mut layers: Vec<(NameId, OpTotal)> = layers.into_iter().collect();
    layers.sort_by(|a, b| b.1.device_ns.cmp(&a.1.device_ns).then(a.0.cmp(&b.0)));
    OpModel {
        ops,
        categories,
        phases,
        layers,
        collectives: collective_throughput(trace, window, mapping),
        coverage,
        step_flops,
        sheet,
    }
}
