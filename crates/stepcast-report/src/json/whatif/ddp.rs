//! `whatif ddp`: the data-parallel sweep, its configuration, the collectives it inserted
//! and the calibration of their cost.

use serde::Serialize;

use crate::json::finite;

/// A row of a `ddp` sweep: exactly these keys (the contract of issue 5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SweepRowJson {
    /// World size.
    pub gpus: u32,
    /// Predicted steady-state period.
    pub predicted_ns: i64,
}

/// The `ddp` what-if: where its numbers came from and each configuration in detail.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DdpJson {
    /// Where the gradient (message) sizes came from: `recorded_collectives` (NCCL args of the
    /// kernels or their `record_param_comms` ops), `inferred_from_transfer_time`, or
    /// `recorded_and_inferred`.
    pub gradient_sizes: &'static str,
    /// Group size of the recorded collectives.
    pub recorded_world_size: u32,
    /// Recorded collectives (kernels) in the window.
    pub collectives: u64,
    /// The network fitted to the recorded collectives.
    pub calibration: CalibrationJson,
    /// One entry per configuration, in the order given.
    pub configs: Vec<DdpConfigJson>,
    /// The insertion model's inputs (a trace without collectives, or `--reinsert`,
    /// `--compress`, `--p3`, `--fsdp`); absent when only recorded collectives were re-costed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insertion: Option<InsertionJson>,
}

/// What the insertion model read from the trace (see docs/whatif.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InsertionJson {
    /// Parameters (gradients) per step.
    pub parameters: u64,
    /// Gradient bytes per step.
    pub gradient_bytes_per_step: i64,
    /// `autograd` (one ready point per `AccumulateGrad` op) or `end_of_backward`.
    pub ready_points: &'static str,
    /// Recorded collectives of the steady steps removed before inserting.
    pub stripped_collectives: u64,
    /// Element-wise throughput for DGC's kernels, gradient GB per second, and where it came
    /// from: `optimizer_kernels` (measured) or `assumed`.
    pub elementwise_gb_s: f64,
    pub elementwise_source: &'static str,
}

/// The lower-envelope fit of the recorded NCCL kernels (see docs/whatif.md).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CalibrationJson {
    /// Recorded collectives with a known message size.
    pub with_sizes: u64,
    /// The fastest recorded collective (the fixed cost), if any.
    pub floor_ns: Option<i64>,
    /// One fit per collective and group size with known message sizes.
    pub fits: Vec<FitJson>,
}

/// One fit: `t = intercept_ns + slope_ns_per_byte × bytes`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FitJson {
    /// `all_reduce`, `reduce_scatter`, `all_gather`, `broadcast`, `reduce`, `all_to_all`,
    /// `send_recv`.
    pub collective: &'static str,
    /// Ranks in the process group of the fitted collectives.
    pub group_size: u32,
    /// Distinct message sizes (the fastest instance of each).
    pub points: u64,
    /// Recorded instances the points were chosen from.
    pub instances: u64,
    /// α: fixed cost per collective.
    pub intercept_ns: f64,
    /// β: ns per byte.
    pub slope_ns_per_byte: f64,
    /// The bus bandwidth the slope stands for (NCCL's convention), GB/s; `None` (`null`) when
    /// the slope is 0.
    pub bus_bandwidth_gb_s: Option<f64>,
    /// Of the line against the points; `None` (`null`) when undefined.
    pub r2: Option<f64>,
}

/// One configuration of the `ddp` what-if.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DdpConfigJson {
    /// World size.
    pub gpus: u32,
    /// GPUs per node (at most `gpus`).
    pub gpus_per_node: u32,
    /// Nodes (the last one may be partial).
    pub nodes: u32,
    /// `ring`, `tree` or `auto`.
    pub algorithm: &'static str,
    /// BlueConnect's decomposition across nodes (else one flat ring).
    pub hierarchical: bool,
    /// `--bucket-mb` in bytes (MiB × 2²⁰); `None` (`null`): the recorded buckets kept.
    pub bucket_bytes: Option<i64>,
    /// All-reduces per step as planned, after re-bucketing (mean over the window's steps;
    /// the warm-up step itself is replayed as recorded).
    pub all_reduces_per_step: f64,
    /// Intra-node link: `calibrated`, `given` or `preset`.
    pub intra_source: &'static str,
    /// Intra-node bus bandwidth, GB/s.
    pub intra_bus_gb_s: f64,
    /// Intra-node latency per algorithm step.
    pub intra_alpha_ns: f64,
    /// Inter-node bus bandwidth per GPU, GB/s.
    pub inter_bus_gb_s: f64,
    /// Inter-node latency per algorithm step.
    pub inter_alpha_ns: f64,
    /// Fixed cost per collective.
    pub base_ns: f64,
    /// Modeled communication per steady step (not all of it on the critical path).
    pub comm_ns: i64,
    /// Predicted steady-state period.
    pub predicted_ns: i64,
    /// Baseline over predicted; `None` (`null`) when the prediction is 0.
    pub speedup: Option<f64>,
    /// `dgc:RATIO` with gradient compression, else `None` (`null`).
    pub compression: Option<String>,
    /// P3: per-parameter slices in priority order.
    pub p3: bool,
    /// FSDP / ZeRO-3 instead of DDP.
    pub fsdp: bool,
    /// Insertion model: exchanges per steady step (DDP buckets, P3 slices, FSDP gathers and
    /// reduce-scatters).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exchanges_per_step: Option<f64>,
    /// Insertion model: bytes the exchanges move per steady step (NCCL's buffer sizes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire_bytes_per_step: Option<f64>,
    /// Insertion model: DGC's compression and decompression kernels per steady step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compression_kernels_ns: Option<i64>,
}

/// All-reduces per steady step of `plan` after its merges.
fn all_reduces_per_step(plan: &stepcast::whatif::ddp::DdpPlan) -> f64 {
    use stepcast::comm::Collective;
    if let Some(inserted) = &plan.inserted {
        let n = inserted.steady_steps.max(1) as f64;
        let all_reduces = inserted
            .exchanges
            .iter()
            .filter(|x| x.collective == Collective::AllReduce)
            .count();
        return all_reduces as f64 / n;
    }
    let mut steps: Vec<u32> = Vec::new();
    let mut count = 0usize;
    for b in &plan.buckets {
        let r = &b.recorded;
        if r.collective == Collective::AllReduce && r.step != u32::MAX {
            count += 1;
            if !steps.contains(&r.step) {
                steps.push(r.step);
            }
        }
    }
    let merged_away: usize = plan.merged.iter().map(|(g, _)| g.len() - 1).sum();
    (count - merged_away) as f64 / steps.len().max(1) as f64
}

/// The `ddp` section and the sweep rows of `plans` and `points` (in the same order).
pub fn ddp_json(
    calibration: &stepcast::comm::Calibration,
    plans: &[stepcast::whatif::ddp::DdpPlan],
    points: &[stepcast::whatif::ddp::SweepPoint],
) -> (DdpJson, Vec<SweepRowJson>) {
    let first = plans.first();
    let ddp = DdpJson {
        gradient_sizes: first.map_or("none", |p| p.source.as_str()),
        recorded_world_size: first.map_or(0, |p| p.recorded_world_size),
        collectives: calibration.collectives as u64,
        calibration: CalibrationJson {
            with_sizes: calibration.with_sizes as u64,
            floor_ns: calibration.floor_ns,
            fits: calibration
                .fits
                .iter()
                .map(|f| FitJson {
                    collective: f.collective.as_str(),
                    group_size: f.group_size,
                    points: f.points as u64,
                    instances: f.instances as u64,
                    intercept_ns: f.intercept_ns,
                    slope_ns_per_byte: f.slope_ns_per_byte,
                    bus_bandwidth_gb_s: finite(f.bus_bandwidth_bps / 1e9),
                    r2: finite(f.r2),
                })
                .collect(),
        },
        configs: plans
            .iter()
            .zip(points)
            .map(|(plan, point)| {
                let t = &plan.topology;
                DdpConfigJson {
                    gpus: plan.config.gpus,
                    gpus_per_node: t.gpus_per_node,
                    nodes: t.nodes,
                    algorithm: t.algorithm.as_str(),
                    hierarchical: t.hierarchical,
                    bucket_bytes: plan.config.bucket_bytes,
                    all_reduces_per_step: all_reduces_per_step(plan),
                    intra_source: plan.intra_source.as_str(),
                    intra_bus_gb_s: t.intra.bandwidth_bps / 1e9,
                    intra_alpha_ns: t.intra.alpha_ns,
                    inter_bus_gb_s: t.inter.bandwidth_bps / 1e9,
                    inter_alpha_ns: t.inter.alpha_ns,
                    base_ns: t.base_ns,
                    comm_ns: point.comm_ns,
                    predicted_ns: point.predicted_ns,
                    speedup: finite(point.speedup),
                    compression: plan
                        .config
                        .compression
                        .map(|dgc| format!("dgc:{}", dgc.ratio)),
                    p3: plan.config.p3,
                    fsdp: plan.config.fsdp,
                    exchanges_per_step: plan.inserted.as_ref().map(|i| i.per_step().0),
                    wire_bytes_per_step: plan.inserted.as_ref().map(|i| i.per_step().1),
                    compression_kernels_ns: plan.inserted.as_ref().map(|i| i.per_step().3),
                }
            })
            .collect(),
        insertion: plans
            .iter()
            .find_map(|p| p.inserted.as_ref())
            .map(|i| InsertionJson {
                parameters: i.gradients.parameters as u64,
                gradient_bytes_per_step: i.gradients.bytes_per_step,
                ready_points: if i.gradients.ready_from_autograd {
                    "autograd"
                } else {
                    "end_of_backward"
                },
                stripped_collectives: i.stripped as u64,
                elementwise_gb_s: i.elementwise_bytes_per_ns,
                elementwise_source: if i.elementwise_measured {
                    "optimizer_kernels"
                } else {
                    "assumed"
                },
            }),
    };
    let rows = points
        .iter()
        .map(|p| SweepRowJson {
            gpus: p.config.gpus,
            predicted_ns: p.predicted_ns,
        })
        .collect();
    (ddp, rows)
}
