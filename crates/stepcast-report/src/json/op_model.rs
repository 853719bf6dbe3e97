//! `analyze`'s `op_model`: how close each op runs to the hardware (`stepcast::analyze::op_model`).

use serde::Serialize;
use stepcast::Window;
use stepcast::analyze::Analysis;
use stepcast::analyze::op_model::{OpModel, OpThroughput, OpTotal};
use stepcast_trace::{Dtype, Trace};

/// Op names listed, most device time first.
pub const TOP_OPS: usize = 20;

/// The op model of the window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpModelJson {
    /// The datasheet peaks efficiencies are against; `None` (`null`) for a device without one
    /// (throughputs are still given).
    pub peaks: Option<PeaksJson>,
    /// How much of the device's time the model covers, and what it leaves out.
    pub coverage: CoverageJson,
    /// Per op name with a formula, most device time first; at most [`TOP_OPS`].
    pub ops: Vec<OpThroughputJson>,
    /// The modeled ops by category (`gemm`, `attention`...), most device time first.
    pub categories: Vec<OpTotalJson>,
    /// The modeled ops by phase of their kernels (`forward`, `backward`, `optimizer`...).
    pub phases: Vec<OpTotalJson>,
    /// The modeled ops by layer (module) of their kernels, most device time first; at most
    /// [`TOP_OPS`].
    pub layers: Vec<OpTotalJson>,
    /// The collectives by type and group size, most time first.
    pub collectives: Vec<CollectiveJson>,
    /// Per step: FLOPs of its modeled ops and the model FLOPs utilization.
    pub steps: Vec<StepFlopsJson>,
}

/// A device's datasheet peaks.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeaksJson {
    /// Where they come from (`H100 SXM datasheet`).
    pub source: String,
    /// FP32 on CUDA cores, TFLOP/s.
    pub fp32_tflops: f64,
    /// TF32 on tensor cores, dense, TFLOP/s (`null` for a device without TF32).
    pub tf32_tflops: Option<f64>,
    /// FP16 and BF16 on tensor cores, dense, TFLOP/s.
    pub fp16_tflops: f64,
    /// Memory bandwidth, TB/s.
    pub memory_tb_s: f64,
}

/// What the model covers of the device's time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoverageJson {
    /// Kernel and memset time of the window.
    pub device_ns: i64,
    /// Of it, the time of ops with a formula and recorded shapes.
    pub modeled_ns: i64,
    /// `modeled_ns / device_ns` (0 without device time).
    pub modeled_fraction: f64,
    /// Time of ops that recorded no shapes (`record_shapes=False`).
    pub no_shapes_ns: i64,
    /// Time of ops without a formula, and of kernels mapped to no op.
    pub no_formula_ns: i64,
    /// The op (or kernel) names of the unmodeled time, most first, at most 10.
    pub top_unmodeled: Vec<NamedNsJson>,
}

/// A name and its device time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NamedNsJson {
    /// The op's (or, mapped to no op, the kernel's) name.
    pub name: String,
    /// Its device time over the window.
    pub ns: i64,
}

/// One op name's instances of one element type, summed over the window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpThroughputJson {
    /// The op's name.
    pub name: String,
    /// `gemm`, `convolution`, `attention`, `elementwise`, `reduction`, `normalization`,
    /// `softmax`, `pooling`, `embedding` or `optimizer`.
    pub category: &'static str,
    /// The formula its FLOPs and bytes come from.
    pub formula: &'static str,
    /// Element type of its first tensor input (`float32`, `float16`...), which picks its peak.
    pub dtype: Option<&'static str>,
    /// Instances with device time.
    pub instances: u64,
    /// Their FLOPs.
    pub flops: f64,
    /// Their bytes read and written.
    pub bytes: f64,
    /// Time of the kernels its instances launched.
    pub device_ns: i64,
    /// Achieved: `flops` over `device_ns`, TFLOP/s.
    pub tflops: f64,
    /// Achieved: `bytes` over `device_ns`, TB/s.
    pub tb_s: f64,
    /// FLOPs per byte.
    pub intensity: f64,
    /// The compute peak of its element type on the device (`null` without a datasheet).
    pub peak_tflops: Option<f64>,
    /// Achieved over its roofline: `min(peak, intensity × memory bandwidth)` for a matrix
    /// product, the memory bandwidth for the others (`null` without a datasheet).
    pub efficiency: Option<f64>,
}

/// Modeled ops summed over a category, a phase or a layer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OpTotalJson {
    /// The category, phase or layer.
    pub name: String,
    /// Their kernels' time.
    pub device_ns: i64,
    /// `device_ns` over the modeled time of the window.
    pub share: f64,
    /// Their FLOPs.
    pub flops: f64,
    /// Their bytes read and written.
    pub bytes: f64,
    /// Achieved: `flops` over `device_ns`, TFLOP/s.
    pub tflops: f64,
    /// Achieved: `bytes` over `device_ns`, TB/s.
    pub tb_s: f64,
}

/// One collective type over one group size, as NCCL's tests report bandwidth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CollectiveJson {
    /// `all_reduce`, `all_gather`, `reduce_scatter`, `broadcast`, `reduce`, `all_to_all` or
    /// `send_recv`.
    pub collective: &'static str,
    /// Ranks in its process group.
    pub group_size: u32,
    pub instances: u64,
    /// Of them, instances whose message size was recorded.
    pub sized_instances: u64,
    /// Message bytes of the sized instances (the larger of the input and the output).
    pub bytes: f64,
    /// Recorded time of all the instances, waiting for peers included.
    pub device_ns: i64,
    /// Algorithm bandwidth of the sized instances: bytes over their recorded time, GB/s.
    pub algbw_gb_s: f64,
    /// Bus bandwidth: `algbw_gb_s` × NCCL's factor for the collective and group size.
    pub busbw_gb_s: f64,
}

/// A step's FLOPs and MFU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepFlopsJson {
    /// `N` of `ProfilerStep#N` (0 for a synthetic step).
    pub number: u64,
    /// FLOPs of the modeled ops whose kernels ran in it.
    pub flops: f64,
    /// The step's measured time.
    pub measured_ns: i64,
    /// `flops` over the step, TFLOP/s.
    pub tflops: f64,
    /// Model FLOPs utilization: `tflops` over the peak of the step's matrix products' element
    /// type (`null` without a datasheet).
    pub mfu: Option<f64>,
}

/// `value`, or 0 where a division left it undefined (it never is: every divisor is checked).
fn number(value: f64) -> f64 {
    if value.is_finite() { value } else { 0.0 }
}

fn dtype_name(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::Bool => "bool",
        Dtype::UInt8 => "uint8",
        Dtype::Int8 => "int8",
        Dtype::UInt16 => "uint16",
        Dtype::Int16 => "int16",
        Dtype::UInt32 => "uint32",
        Dtype::Int32 => "int32",
        Dtype::UInt64 => "uint64",
        Dtype::Int64 => "int64",
        Dtype::Float8 => "float8",
        Dtype::Float16 => "float16",
        Dtype::BFloat16 => "bfloat16",
        Dtype::Float32 => "float32",
        Dtype::Float64 => "float64",
        Dtype::Complex32 => "complex32",
        Dtype::Complex64 => "complex64",
        Dtype::Complex128 => "complex128",
    }
}

fn op_total(name: &str, total: &OpTotal, modeled_ns: i64) -> OpTotalJson {
    let per_ns = |value: f64| {
        if total.device_ns > 0 {
            value / total.device_ns as f64 / 1e3
        } else {
            0.0
        }
    };
    OpTotalJson {
        name: name.to_string(),
        device_ns: total.device_ns,
        share: if modeled_ns > 0 {
            total.device_ns as f64 / modeled_ns as f64
        } else {
            0.0
        },
        flops: total.flops,
        bytes: total.bytes,
        tflops: number(per_ns(total.flops)),
        tb_s: number(per_ns(total.bytes)),
    }
}

impl OpModelJson {
    /// The op model of `analysis` (of `window`, built from `trace`).
    pub fn new(trace: &Trace, window: &Window, analysis: &Analysis) -> OpModelJson {
        let model: &OpModel = &analysis.op_model;
        let sheet = model.sheet.as_ref();
        let op = |op: &OpThroughput| OpThroughputJson {
            name: trace.names.get(op.name).to_string(),
            category: op.category.as_str(),
            formula: op.formula,
            dtype: op.dtype.map(dtype_name),
            instances: op.instances,
            flops: op.flops,
            bytes: op.bytes,
            device_ns: op.device_ns,
            tflops: number(op.tflops()),
            tb_s: number(op.tb_s()),
            intensity: number(op.intensity()),
            peak_tflops: sheet.map(|s| op.peak_tflops(s)),
            efficiency: sheet.map(|s| number(op.efficiency(s))),
        };
        // The steps' peak: that of the element type doing the most matrix-product FLOPs.
        let step_peak = sheet.map(|s| {
            model
                .ops
                .iter()
                .filter(|o| o.category.is_compute())
                .max_by(|a, b| a.flops.total_cmp(&b.flops))
                .map_or(s.peaks.fp32_tflops, |o| o.peak_tflops(s))
        });
        let coverage = &model.coverage;
        OpModelJson {
            peaks: sheet.map(|s| PeaksJson {
                source: s.peaks.source.clone(),
                fp32_tflops: s.peaks.fp32_tflops,
                tf32_tflops: s.peaks.tf32_tflops,
                fp16_tflops: s.peaks.fp16_tflops,
                memory_tb_s: s.memory_tb_s,
            }),
            coverage: CoverageJson {
                device_ns: coverage.device_ns,
                modeled_ns: coverage.modeled_ns,
                modeled_fraction: if coverage.device_ns > 0 {
                    coverage.modeled_ns as f64 / coverage.device_ns as f64
                } else {
                    0.0
                },
                no_shapes_ns: coverage.no_shapes_ns,
                no_formula_ns: coverage.no_formula_ns,
                top_unmodeled: coverage
                    .top_unmodeled
                    .iter()
                    .map(|&(name, ns)| NamedNsJson {
                        name: trace.names.get(name).to_string(),
                        ns,
                    })
                    .collect(),
            },
            ops: model.ops.iter().take(TOP_OPS).map(op).collect(),
            categories: model
                .categories
                .iter()
                .map(|(category, total)| op_total(category.as_str(), total, coverage.modeled_ns))
                .collect(),
            phases: model
                .phases
                .iter()
                .map(|(phase, total)| op_total(phase.as_str(), total, coverage.modeled_ns))
                .collect(),
            collectives: model
                .collectives
                .iter()
                .map(|c| CollectiveJson {
                    collective: c.collective.as_str(),
                    group_size: c.group_size,
                    instances: c.instances,
                    sized_instances: c.sized,
                    bytes: c.bytes,
                    device_ns: c.device_ns,
                    algbw_gb_s: number(c.algbw_gb_s()),
                    busbw_gb_s: number(c.busbw_gb_s()),
                })
                .collect(),
            layers: model
                .layers
                .iter()
                .take(TOP_OPS)
                .map(|(layer, total)| op_total(trace.names.get(*layer), total, coverage.modeled_ns))
                .collect(),
            steps: window
                .steps
                .iter()
                .zip(&analysis.replay.steps)
                .zip(&model.step_flops)
                .map(|((step, replay), &flops)| {
                    let tflops = if replay.measured_ns > 0 {
                        flops / replay.measured_ns as f64 / 1e3
                    } else {
                        0.0
                    };
                    StepFlopsJson {
                        number: step.number,
                        flops,
                        measured_ns: replay.measured_ns,
                        tflops: number(tflops),
                        mfu: step_peak.map(|peak| number(tflops / peak)),
                    }
                })
                .collect(),
        }
    }
}
