//! `stepcast.whatif/1` and `stepcast.advise/1`: what an optimization would do to the step
//! time, and which optimizations are worth trying first.

use serde::Serialize;
use stepcast::Window;
use stepcast::whatif::models::MemoryEffect;
use stepcast::whatif::record::{ModelRecord, TraceKind};
use stepcast::whatif::trust::Verdict;
use stepcast::whatif::{Advice, Bottleneck, Candidate, Model, Outcome, Resource};
use stepcast_trace::{Runtime, Trace};

use super::answer::{AnswerJson, StepTimeJson, answer};
use super::{DeviceJson, TraceJson, devices, finite, main_device};

/// The `whatif` document: one model, combination or scenario applied to the window's graph,
/// replayed and compared with the untransformed replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIfJson {
    /// Always `stepcast.whatif/1`.
    pub schema: &'static str,
    /// What the trace is.
    pub trace: TraceJson,
    /// The device the trace's work ran on (the lowest-numbered device with streams), if any.
    pub device: Option<DeviceJson>,
    /// What was applied: the model's name (with its parameters) or the scenario's name.
    pub name: String,
    /// The built-in models applied, in order (for a scenario, those it names).
    pub models: Vec<String>,
    /// The scenario file as the user named it; `None` (`null`) for a model. Filled in by the
    /// caller.
    pub scenario: Option<String>,
    /// Why this trace's predictions are declined, if they are: the baseline is not the
    /// measured step (off by more than 3 %), or the graph does not replay as the trace's own.
    /// The figures below are then kept for reference, never shown as a prediction. `None`
    /// (`null`) when the prediction stands.
    pub declined: Option<String>,
    /// Steady-state period of the untransformed replay.
    pub baseline_ns: i64,
    /// Steady-state period of the transformed replay.
    pub predicted_ns: i64,
    /// `baseline_ns / predicted_ns`; `None` (`null`) when `predicted_ns` is 0.
    pub speedup: Option<f64>,
    /// `baseline_ns - predicted_ns` (negative: slower).
    pub gain_ns: i64,
    /// Numbers of the steady steps the figures are measured over.
    pub steady_steps: Vec<u64>,
    /// What the collectives' peers did in the prediction, and what the other choice gives.
    pub peers: PeersJson,
    /// Edges of the predicted graph whose lag is a recorded time rather than a cause (edges
    /// inferred from timing, left out of every what-if graph): 0.
    pub pinned_edges: u64,
    /// How far the prediction can be trusted: its bound and caveats.
    pub trust: TrustJson,
    /// Tasks before and after, and what changed.
    pub tasks: TasksJson,
    /// Host time per steady step saved by the transform, all phases (negative: added).
    pub host_saved_ns: i64,
    /// Device time per steady step saved by the transform, all phases (negative: added).
    pub device_saved_ns: i64,
    /// Host and device time per phase and steady step, before and after, every phase in a
    /// fixed order.
    pub phases: Vec<PhaseJson>,
    /// What the critical path was made of before the transform.
    pub bottleneck_before: BottleneckJson,
    /// What the critical path is made of after it: the new bottleneck.
    pub bottleneck_after: BottleneckJson,
    /// Memory-for-time trades only (`recompute`, `offload`, `gist`): the memory saved. Absent
    /// for other models. Filled in by the caller ([`memory_saved_json`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySavedJson>,
    /// `ddp` only: the calibration, the network and every configuration predicted. Absent for
    /// other models. Filled in by the caller ([`ddp_json`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ddp: Option<DdpJson>,
    /// `ddp` only: one row per configuration predicted (a sweep of `--gpus` or `--net`), in
    /// the order given. The main figures above are those of the last row. Absent for other
    /// models.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Vec<SweepRowJson>>,
    /// How each of its models did on the recorded before/after pairs of `docs/accuracy.md`
    /// whose BEFORE is a trace of this one's kind (a model without such a pair is left out).
    pub record: Vec<ModelRecordJson>,
    /// One sentence per model: its record on such traces, or that it has none.
    pub record_words: Vec<String>,
    /// Why the record cannot tell this prediction's gain from the model's error
    /// ([`ModelRecord::cannot_tell`]); `null` where it can, or where there is no record.
    pub held_back: Option<String>,
}

/// How far a prediction can be trusted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrustJson {
    /// The most the transform can gain per steady step, computed from the trace (what it cut
    /// from costs and untraced gaps, the peers' wait it dropped, the blocking waits a model
    /// that removes waits can remove); the gain never exceeds it. `None` (`null`): not
    /// assessed.
    pub bound_ns: Option<i64>,
    /// The speedup the bound allows: `baseline_ns / (baseline_ns - bound_ns)`; `None` (`null`)
    /// when unbounded (the bound is the whole step) or not assessed.
    pub bound_speedup: Option<f64>,
    /// What limits the prediction, one sentence each: the window (not a steady state, a
    /// cold-start outlier, waits only the recorded clock explained), the model's assumptions
    /// (an upper bound, what it charges), a dependence on `--peers`. Empty when nothing does.
    pub caveats: Vec<String>,
    /// Why the prediction responds as no machine would, if it does: a slower step from a
    /// transform that only removes work, or a gain above the bound, with the constraint that
    /// made it so. `None` (`null`) when it responds as expected.
    pub anomaly: Option<String>,
    /// Where more than half of the gain is one task's cut (a cold-start call, one huge
    /// kernel): which, and how much. Such a prediction is never a headline. `None` (`null`)
    /// otherwise.
    pub rests_on: Option<String>,
    /// Why the prediction cannot be trusted at all, if it cannot: the baseline is more than
    /// 3 % off the measured steady period, a step of the window (warm-up too) replays more
    /// than 2 % off its measured time, or an unchanged graph does not replay as the
    /// baseline. The figures are then shown only beside it. `None` (`null`) otherwise.
    pub declined: Option<String>,
    /// The baseline and the prediction less the profiler's own cost on the host, where it
    /// moves the baseline by 1 % or more (a caveat says the same in words). `None` (`null`)
    /// otherwise.
    pub without_profiler: Option<WithoutProfilerJson>,
}

/// A prediction as a run without the profiler would see it, first order: the baseline and
/// predicted steps less the profiler's cost per recorded host event times the events, as a
/// share of their host time on the critical path.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WithoutProfilerJson {
    /// The baseline step less the profiler's cost.
    pub baseline_ns: i64,
    /// The predicted step less the profiler's cost.
    pub predicted_ns: i64,
    /// `baseline_ns / predicted_ns`.
    pub speedup: Option<f64>,
    /// `true` where a cost the estimate cannot see remains in both steps (`record_shapes` on
    /// a CPU-only run holds every op's input tensors): each is then an upper side.
    pub upper_side: bool,
}

impl TrustJson {
    /// The caveats, each once (models combined may share one), in order, joined by `; `:
    /// for one table cell.
    pub fn caveat_text(&self) -> String {
        let mut seen: Vec<&str> = Vec::new();
        for caveat in &self.caveats {
            if !seen.contains(&caveat.as_str()) {
                seen.push(caveat);
            }
        }
        seen.join("; ")
    }

    /// The trust of `outcome`.
    pub fn new(outcome: &Outcome) -> Self {
        Self::of(&Verdict::of(outcome))
    }

    /// The trust of a prediction kept as its [`Verdict`] (`optimize`'s moves).
    pub fn of(verdict: &Verdict) -> Self {
        let baseline = verdict.baseline_ns;
        Self {
            bound_ns: verdict.bound_ns,
            bound_speedup: verdict
                .bound_ns
                .filter(|&b| b < baseline)
                .and_then(|b| finite(baseline as f64 / (baseline - b) as f64)),
            caveats: verdict.caveats.clone(),
            anomaly: verdict.anomaly.clone(),
            rests_on: verdict.rests_on.clone(),
            declined: verdict.declined.clone(),
            without_profiler: verdict.without_profiler.map(|w| WithoutProfilerJson {
                baseline_ns: w.baseline_ns,
                predicted_ns: w.predicted_ns,
                speedup: finite(w.speedup),
                upper_side: w.upper_side,
            }),
        }
    }
}

/// The declared input of a one-rank trace's collectives: their peers' recorded lateness
/// relative to this rank (`--peers skew`, the default) or none (`--peers balanced`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeersJson {
    /// `skew` or `balanced`: the choice the figures above are under.
    pub used: &'static str,
    /// Declared wait for peers per steady step in the prediction.
    pub wait_ns: i64,
    /// The other choice: `balanced` or `skew`.
    pub other: &'static str,
    /// The speedup under the other choice; `None` (`null`) when no collective waits for
    /// peers, so the choice changes nothing.
    pub other_speedup: Option<f64>,
}

impl PeersJson {
    /// The peers of `outcome`'s prediction.
    pub fn new(outcome: &Outcome) -> Self {
        Self {
            used: outcome.peers.as_str(),
            wait_ns: outcome.peer_wait_ns,
            other: outcome.peers.other().as_str(),
            other_speedup: outcome.other_peers_speedup.and_then(finite),
        }
    }
}

/// What a memory-for-time trade saves, per steady step (means over the steady steps).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemorySavedJson {
    /// Where the activation bytes come from: `memory_events` (bytes each forward op allocated
    /// and kept), `op_shapes` (each op's first input) or `unknown` (then nothing is saved).
    pub source: &'static str,
    /// Activation bytes the forward pass keeps for the backward pass.
    pub activation_bytes: i64,
    /// Of which the ops the model acts on keep.
    pub chosen_bytes: i64,
    /// Peak activation bytes avoided.
    pub saved_bytes: i64,
    /// Forward ops acted on per steady step.
    pub ops_per_step: u64,
    /// The recorded peak of allocated memory (the device's; the host's on a CPU-only trace),
    /// if the trace has memory events.
    pub peak_before_bytes: Option<i64>,
    /// The peak with the trade, read off the recorded memory timeline (`step_peak_source`
    /// `memory_timeline`); `null` where the memory events record no addresses or there are
    /// none. Never `peak_before_bytes - saved_bytes`: the peak falls by the activations'
    /// saving only where they make it.
    pub peak_after_bytes: Option<i64>,
    /// The gradients a CPU-only step allocates anew (`zero_grad(set_to_none=True)`), FP32, from
    /// its optimizer's recorded shapes; `null` where unknown.
    pub gradient_bytes: Option<i64>,
    /// How far the step's own peak falls (mean over the steady steps; negative: it rises).
    /// `step_peak_source` says how it was found.
    pub step_peak_saved_bytes: Option<i64>,
    /// `memory_timeline`: the recorded memory events with the trade's activations moved
    /// (everything else as recorded); `gradient_floor`: `max(A, G) - max(A - S, G)` with the
    /// activations `A`, the saving `S` and `gradient_bytes` `G` (every gradient is allocated
    /// by the end of the backward pass); `null` where neither is known.
    pub step_peak_source: Option<&'static str>,
    /// With `memory_timeline`: the step's peak above its start, recorded and with the trade
    /// (means over the steady steps).
    pub step_peak_before_bytes: Option<i64>,
    /// See `step_peak_before_bytes`.
    pub step_peak_after_bytes: Option<i64>,
}

impl MemorySavedJson {
    /// How far the step's own peak falls, for a table cell: `2.0 MiB`, `rises 1.6 MiB`,
    /// `none`, or `n/a` where neither the recorded timeline nor the gradients tell.
    pub fn step_peak_cell(&self) -> String {
        let mib = |b: i64| format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64);
        match self.step_peak_saved_bytes {
            None => "n/a".to_string(),
            Some(0) => "none".to_string(),
            Some(b) if b < 0 => format!("rises {}", mib(-b)),
            Some(b) => mib(b),
        }
    }

    /// `saves 1.2 GiB of peak activation memory (2.4 GiB of the 4.8 GiB of activations kept
    /// per step, by 80 forward ops; bytes from memory events); recorded peak 9.1 GiB → 7.9 GiB`.
    pub fn summary(&self) -> String {
        let kept = format!(
            "{} of the {} of activations kept per step, by {} forward ops; bytes from {}",
            mib(self.chosen_bytes),
            mib(self.activation_bytes),
            self.ops_per_step,
            self.source.replace('_', " "),
        );
        let activations = format!(
            "saves {} of peak activation memory ({kept})",
            mib(self.saved_bytes)
        );
        let mut text;
        if let (Some(before), Some(after)) =
            (self.step_peak_before_bytes, self.step_peak_after_bytes)
        {
            // Read off the recorded timeline (what the gradients, the optimizer and the order
            // of frees leave): the figure a budget is about, so it leads.
            let fall = before - after;
            let peak = "the step's own peak (above its start, read off the recorded memory \
                        events)";
            text = match fall.signum() {
                1 => format!(
                    "brings {peak} from {} to {}: it falls by {}",
                    mib(before),
                    mib(after),
                    mib(fall)
                ),
                -1 => format!(
                    "raises {peak} from {} to {}: it rises by {}",
                    mib(before),
                    mib(after),
                    mib(-fall)
                ),
                _ => format!(
                    "leaves {peak} at {}: what sets it is not an activation the trade moves",
                    mib(before)
                ),
            };
            if let (Some(peak), Some(peak_after)) = (self.peak_before_bytes, self.peak_after_bytes)
            {
                text.push_str(&format!(
                    "; recorded peak {} → {}",
                    mib(peak),
                    mib(peak_after)
                ));
            }
            text.push_str(&format!(
                "; the activations' own peak falls by {} ({kept})",
                mib(self.saved_bytes)
            ));
        } else {
            text = activations;
            if let Some(before) = self.peak_before_bytes {
                text.push_str(&format!(
                    "; recorded peak {}, how far it falls unknown (the memory events record no \
                     addresses)",
                    mib(before)
                ));
            }
        }
        if let (Some(gradients), Some(step), Some("gradient_floor")) = (
            self.gradient_bytes,
            self.step_peak_saved_bytes,
            self.step_peak_source,
        ) {
            // Every gradient is allocated by the end of the backward pass: a floor.
            let gradients = mib(gradients);
            text.push_str(&if step <= 0 {
                format!(
                    "; the step's own peak does not fall: its gradients ({gradients}), all \
                     allocated by the end of the backward pass, outweigh the activations"
                )
            } else if step < self.saved_bytes {
                format!(
                    "; the step's own peak falls by about {}: its gradients ({gradients}), all \
                     allocated by the end of the backward pass, are a floor",
                    mib(step)
                )
            } else {
                format!(
                    "; the step's own peak falls by as much: its gradients ({gradients}) stay \
                     below what the activations leave"
                )
            });
        }
        text
    }
}

impl WhatIfJson {
    /// Fills in `memory` for a memory-for-time trade.
    pub fn set_memory(&mut self, effect: &MemoryEffect) {
        self.memory = Some(memory_saved_json(effect));
    }
}

/// The `memory` section of a memory-for-time trade.
pub fn memory_saved_json(effect: &MemoryEffect) -> MemorySavedJson {
    MemorySavedJson {
        source: effect.source.as_str(),
        activation_bytes: effect.activation_bytes,
        chosen_bytes: effect.chosen_bytes,
        saved_bytes: effect.saved_bytes,
        ops_per_step: effect.units as u64,
        peak_before_bytes: effect.peak_bytes,
        peak_after_bytes: effect.predicted_peak_bytes(),
        gradient_bytes: effect.gradient_bytes,
        step_peak_saved_bytes: effect.step_peak_saved_bytes,
        step_peak_source: effect.step_peak_source(),
        step_peak_before_bytes: effect.step_peak.map(|p| p.recorded_above_start_bytes),
        step_peak_after_bytes: effect.step_peak.map(|p| p.predicted_above_start_bytes),
    }
}

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

/// Task counts of a what-if (whole window).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TasksJson {
    /// Tasks of the window's graph.
    pub before: u64,
    /// Tasks of the transformed graph.
    pub after: u64,
    /// Input tasks whose cost or untraced host gap changed.
    pub changed: u64,
    /// Input tasks removed (fused-away tasks and their launch calls included).
    pub removed: u64,
    /// Tasks inserted.
    pub added: u64,
}

/// Host and device time of one phase, per steady step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PhaseJson {
    /// `forward`, `backward`, `optimizer`, `communication`, `data_loading` or `other`.
    pub phase: &'static str,
    /// Host tasks' cost plus the untraced host time after them, before.
    pub host_before_ns: i64,
    /// The same, after.
    pub host_after_ns: i64,
    /// Device tasks' cost, before.
    pub device_before_ns: i64,
    /// The same, after.
    pub device_after_ns: i64,
}

/// The critical path of the steady span, per steady step, by resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BottleneckJson {
    /// The resource with the most path time: `host`, `compute`, `copy`, `communication` or
    /// `wait`.
    pub bound: &'static str,
    /// Path time per steady step (the sum of the five below).
    pub length_ns: i64,
    /// Host work on the path: calls, CPU ops, untraced host time.
    pub host_ns: i64,
    /// Kernels and memsets on the path.
    pub compute_ns: i64,
    /// Copies on the path.
    pub copy_ns: i64,
    /// Collectives on the path.
    pub communication_ns: i64,
    /// Waiting on the path: launch latency, cross-stream waits, collective peers.
    pub wait_ns: i64,
    /// The names with the most path time, most first (at most 5).
    pub top: Vec<PathItemJson>,
}

/// A name that takes critical-path time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PathItemJson {
    /// The task's name (kernel or call).
    pub name: String,
    /// Task kind: `api_call`, `cpu_op`, `kernel`, `memcpy`, `memset`, `collective`.
    pub kind: &'static str,
    /// The resource of this time, as in `bound`.
    pub resource: &'static str,
    /// Path time per steady step.
    pub ns: i64,
}

/// The `advise` document: every model and useful combination, best first.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AdviseJson {
    /// Always `stepcast.advise/1`.
    pub schema: &'static str,
    /// What the trace is.
    pub trace: TraceJson,
    /// The device the trace's work ran on, if any.
    pub device: Option<DeviceJson>,
    /// Why no candidate is offered on this trace, if none is: the baseline is not the
    /// measured step (off by more than 3 %), or the graph does not replay as the trace's own.
    /// `candidates` and `memory_trades` are then empty. `None` (`null`) otherwise.
    pub declined: Option<String>,
    /// Steady-state period of the untransformed replay.
    pub baseline_ns: i64,
    /// Numbers of the steady steps the figures are measured over.
    pub steady_steps: Vec<u64>,
    /// The trace has no step markers: its whole window stands as one step.
    pub no_step_markers: bool,
    /// What `--step-range` makes steps of in the trace's format (`NVTX ranges`); `None`
    /// (`null`) where steps are the format's own markers only.
    pub step_range_events: Option<&'static str>,
    /// What the critical path of the untransformed replay is made of.
    pub bottleneck: BottleneckJson,
    /// The speedup from which a candidate counts as useful.
    pub useful_speedup: f64,
    /// Where the `DataLoader` workers pace the step, the sentence that says so: no change
    /// that leaves the loader goes below their pace. `None` (`null`) otherwise.
    pub paced_by: Option<String>,
    /// Every candidate, best first: by speedup, then by name.
    pub candidates: Vec<CandidateJson>,
    /// Memory-for-time trades (usually slower), each with the memory it saves; not ranked.
    pub memory_trades: Vec<CandidateJson>,
    /// Candidates that could not be predicted on this trace, with why.
    pub failed: Vec<FailedCandidateJson>,
    /// What kind of time bounds the steady step: CPU work, blocking waits, data loading...
    pub step_time: StepTimeJson,
    /// The answer a person reads first, the same in every output (`json::answer`).
    pub answer: AnswerJson,
}

impl AdviseJson {
    /// Sets the input file as the user named it, and the answer's next command with it.
    pub fn set_file(&mut self, file: Option<String>) {
        self.trace.file = file;
        self.answer = answer(self);
    }
}

/// A candidate `advise` tried and could not predict, or declined.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailedCandidateJson {
    pub name: String,
    pub error: String,
    /// Of a declined candidate, the speedup its bound allows (what it changes in the trace):
    /// what is left unpredicted; `None` (`null`) where it failed or its bound is no gain.
    pub at_most: Option<f64>,
}

/// One model or combination that `advise` tried.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CandidateJson {
    /// The models' names joined by ` + `.
    pub name: String,
    /// The models applied, in order.
    pub models: Vec<String>,
    /// Predicted steady-state period.
    pub predicted_ns: i64,
    /// `baseline_ns / predicted_ns`; `None` (`null`) when `predicted_ns` is 0.
    pub speedup: Option<f64>,
    /// `baseline_ns - predicted_ns`.
    pub gain_ns: i64,
    /// Whether `speedup` reaches `useful_speedup`.
    pub useful: bool,
    /// What the collectives' peers did in the prediction, and what the other choice gives.
    pub peers: PeersJson,
    /// Edges of the predicted graph whose lag is a recorded time: 0.
    pub pinned_edges: u64,
    /// How far the prediction can be trusted: its bound and caveats.
    pub trust: TrustJson,
    /// Whether it changes hardware rather than the program.
    pub hardware: bool,
    /// One sentence: what bounds the step and what the models change.
    pub reason: String,
    /// Host time saved per steady step.
    pub host_saved_ns: i64,
    /// Device time saved per steady step.
    pub device_saved_ns: i64,
    /// Tasks before and after, and what changed.
    pub tasks: TasksJson,
    /// The bottleneck after the change, as in `bottleneck.bound`.
    pub bound_after: &'static str,
    /// Memory-for-time trades only: the memory saved. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemorySavedJson>,
    /// How each of its models did on the recorded before/after pairs of `docs/accuracy.md`
    /// whose BEFORE is a trace of this one's kind (a model without such a pair is left out,
    /// so `[]`: no record).
    pub record: Vec<ModelRecordJson>,
    /// Why it is not offered as what to try first although it helps: its model's record
    /// cannot tell its gain from the model's error ([`ModelRecord::cannot_tell`]), or, for a
    /// combination, one of its models' cannot. `null` otherwise.
    pub held_back: Option<String>,
}

/// A model's record on the recorded before/after pairs (`stepcast::whatif::record`) whose
/// BEFORE is a trace of the predicted trace's kind: its error on the pairs none of its
/// constants were fitted on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelRecordJson {
    /// The model's name.
    pub model: String,
    /// The kind of BEFORE trace of these pairs (this trace's): `device` or `cpu_only`.
    pub traces: &'static str,
    /// Recorded pairs it was checked on.
    pub pairs: u32,
    /// Of them, pairs none of its constants were fitted on.
    pub out_of_sample: u32,
    /// Median |predicted / measured speedup − 1| on those, as traced (`null`: no
    /// out-of-sample pair, so unknown).
    pub out_of_sample_median_error: Option<f64>,
    /// Largest |predicted / measured speedup − 1| on those, as traced.
    pub out_of_sample_max_error: Option<f64>,
    /// Of those, pairs where the prediction and the outcome moved the step in opposite
    /// directions.
    pub wrong_direction: u32,
}

impl ModelRecordJson {
    fn of(models: &[Model], kind: TraceKind) -> Vec<Self> {
        models
            .iter()
            .filter_map(|m| {
                let r = stepcast::whatif::record::model_record(&m.name(), kind)?;
                Some(Self {
                    model: m.name(),
                    traces: r.kind.as_str(),
                    pairs: r.pairs,
                    out_of_sample: r.out_of_sample(),
                    out_of_sample_median_error: r.out_of_sample_median_error,
                    out_of_sample_max_error: r.out_of_sample_max_error,
                    wrong_direction: r.wrong_direction,
                })
            })
            .collect()
    }
}

/// `model`'s record on traces of `kind`, in a sentence: the error out of sample and how often
/// the step moved the other way, or that no such pair holds it (and what other kind does).
pub fn record_words(model: &Model, kind: TraceKind) -> String {
    let name = model.name();
    match stepcast::whatif::record::model_record(&name, kind) {
        Some(r) => match (r.out_of_sample_median_error, r.out_of_sample_max_error) {
            (Some(median), Some(max)) => format!(
                "{name} erred by a median {:.0}% (max {:.0}%) on {} recorded {} it was not \
                 fitted on{}",
                median * 100.0,
                max * 100.0,
                r.out_of_sample(),
                pairs(r.out_of_sample(), kind),
                match r.wrong_direction {
                    0 => String::new(),
                    n => format!(", the step moving the other way on {n}"),
                }
            ),
            _ => format!(
                "{name} has {} recorded {}, all in sample (a constant fitted on each): its \
                 error out of sample is unknown",
                r.pairs,
                pairs(r.pairs, kind)
            ),
        },
        None => {
            let other: Vec<String> = stepcast::whatif::record::model_records(&name)
                .map(|r| format!("{} {}", r.pairs, pairs(r.pairs, r.kind)))
                .collect();
            match other.as_slice() {
                [] => format!("{name} has no recorded pair: its error is unknown"),
                _ => format!(
                    "{name} has no recorded pair on a trace {} (only {}): its error on such a \
                     trace is unknown",
                    match kind {
                        TraceKind::Device => "with device work",
                        TraceKind::CpuOnly => "without device work",
                    },
                    other.join(", ")
                ),
            }
        }
    }
}

/// `n` pairs of `kind`, the noun agreeing: `1 CPU-only pair`, `3 pairs with device work`.
fn pairs(n: u32, kind: TraceKind) -> String {
    let words = kind.pairs_words();
    if n == 1 {
        words.replacen("pairs", "pair", 1)
    } else {
        words.to_string()
    }
}

/// Why `model`'s record on traces of `kind` cannot tell a predicted `speedup` from its error
/// ([`ModelRecord::cannot_tell`]), in words; `None` where it can or there is no record. Not
/// asked of a hardware model: its speed-up is the user's premise (a CPU k× faster), not a
/// change to try, and its pairs hold only how near a real change came to that premise.
pub fn held_back(model: &Model, kind: TraceKind, speedup: Option<f64>) -> Option<String> {
    if model.is_hardware() {
        return None;
    }
    let name = model.name();
    let r: &ModelRecord = stepcast::whatif::record::model_record(&name, kind)?;
    let speedup = speedup?;
    let why = r.cannot_tell(speedup)?;
    let mut reasons = Vec::new();
    if why.within_error {
        reasons.push(format!(
            "at its median error on the recorded {} ({:.0}%) the gain could be none",
            kind.pairs_words(),
            r.out_of_sample_median_error.unwrap_or(0.0) * 100.0
        ));
    }
    if why.wrong_way {
        reasons.push(match why.within_error {
            true => format!(
                "on {} of those {} pairs the step moved the other way",
                r.wrong_direction,
                r.out_of_sample()
            ),
            false => format!(
                "on {} of its {} recorded {} the step moved the other way",
                r.wrong_direction,
                r.out_of_sample(),
                kind.pairs_words()
            ),
        });
    }
    Some(format!(
        "its model's record cannot tell this gain from its error: {}",
        reasons.join(", and ")
    ))
}

impl CandidateJson {
    /// Whether it may be a headline (what to try first): it helps, it responds as a machine
    /// would (no anomaly), its gain does not rest on one task, and its models' records can
    /// tell that gain from their error (`held_back`).
    pub fn can_headline(&self) -> bool {
        self.useful
            && self.trust.anomaly.is_none()
            && self.trust.rests_on.is_none()
            && self.held_back.is_none()
    }
}

impl TasksJson {
    fn new(outcome: &Outcome) -> Self {
        Self {
            before: outcome.tasks_before as u64,
            after: outcome.tasks_after as u64,
            changed: outcome.changes.changed as u64,
            removed: outcome.changes.removed as u64,
            added: outcome.changes.added as u64,
        }
    }
}

impl BottleneckJson {
    fn new(trace: &Trace, bottleneck: &Bottleneck) -> Self {
        Self {
            bound: bottleneck.bound().as_str(),
            length_ns: bottleneck.length_ns(),
            host_ns: bottleneck.ns(Resource::Host),
            compute_ns: bottleneck.ns(Resource::Compute),
            copy_ns: bottleneck.ns(Resource::Copy),
            communication_ns: bottleneck.ns(Resource::Communication),
            wait_ns: bottleneck.ns(Resource::Wait),
            top: bottleneck
                .top
                .iter()
                .map(|item| PathItemJson {
                    name: trace.names.get(item.name).to_string(),
                    kind: item.kind.as_str(),
                    resource: item.resource.as_str(),
                    ns: item.ns,
                })
                .collect(),
        }
    }
}

fn steady_steps(window: &Window) -> Vec<u64> {
    let first = if window.steps.len() >= 3 { 1 } else { 0 };
    window.steps.iter().skip(first).map(|s| s.number).collect()
}

/// The `whatif` document of `outcome`, the prediction of `models` (or of a scenario named
/// `name` that names `models`) on `window` (built from `trace`).
pub fn whatif_json(
    trace: &Trace,
    window: &Window,
    name: &str,
    models: &[Model],
    outcome: &Outcome,
) -> WhatIfJson {
    let kind = TraceKind::of(&window.graph);
    WhatIfJson {
        schema: "stepcast.whatif/1",
        trace: TraceJson::new(trace),
        device: main_device(&devices(trace)),
        name: runtime_name(trace, name.to_string()),
        models: models
            .iter()
            .map(|m| runtime_name(trace, m.name()))
            .collect(),
        scenario: None,
        declined: outcome.declined.clone(),
        baseline_ns: outcome.baseline.step_ns,
        predicted_ns: outcome.predicted.step_ns,
        speedup: finite(outcome.speedup),
        gain_ns: outcome.baseline.step_ns - outcome.predicted.step_ns,
        steady_steps: steady_steps(window),
        peers: PeersJson::new(outcome),
        pinned_edges: outcome.pinned_edges,
        trust: TrustJson::new(outcome),
        tasks: TasksJson::new(outcome),
        host_saved_ns: outcome.host_saved_ns(),
        device_saved_ns: outcome.device_saved_ns(),
        phases: outcome
            .phases
            .iter()
            .map(|p| PhaseJson {
                phase: p.phase.as_str(),
                host_before_ns: p.host_before_ns,
                host_after_ns: p.host_after_ns,
                device_before_ns: p.device_before_ns,
                device_after_ns: p.device_after_ns,
            })
            .collect(),
        bottleneck_before: BottleneckJson::new(trace, &outcome.baseline.bottleneck),
        bottleneck_after: BottleneckJson::new(trace, &outcome.predicted.bottleneck),
        memory: None,
        ddp: None,
        sweep: None,
        record: ModelRecordJson::of(models, kind),
        record_words: models.iter().map(|m| record_words(m, kind)).collect(),
        held_back: match models {
            [model] => held_back(model, kind, finite(outcome.speedup)),
            _ => None,
        },
    }
}

/// The `advise` document of `advice`, on `window` (built from `trace`).
pub fn advise_json(trace: &Trace, window: &Window, advice: &Advice) -> AdviseJson {
    let kind = TraceKind::of(&window.graph);
    let mut document = AdviseJson {
        schema: "stepcast.advise/1",
        trace: TraceJson::new(trace),
        device: main_device(&devices(trace)),
        declined: advice.declined.clone(),
        baseline_ns: advice.baseline.step_ns,
        steady_steps: steady_steps(window),
        no_step_markers: matches!(window.steps.as_slice(), [step] if step.synthetic),
        step_range_events: trace.step_range_events,
        bottleneck: BottleneckJson::new(trace, &advice.baseline.bottleneck),
        useful_speedup: stepcast::whatif::advise::USEFUL_SPEEDUP,
        paced_by: advice.paced_by.clone(),
        candidates: advice
            .candidates
            .iter()
            .map(|c| candidate_json(trace, kind, advice, c))
            .collect(),
        memory_trades: advice
            .memory_trades
            .iter()
            .map(|c| candidate_json(trace, kind, advice, c))
            .collect(),
        failed: advice
            .failed
            .iter()
            .map(|f| FailedCandidateJson {
                name: f.name.clone(),
                error: f.error.clone(),
                at_most: f.at_most.and_then(finite),
            })
            .collect(),
        step_time: StepTimeJson::new(trace, &advice.step_time),
        answer: AnswerJson::default(),
    };
    // A combination's gain rests on each of its models: one whose own gain here its record
    // cannot tell from its error holds the combination back too.
    let held: Vec<(String, String)> = document
        .candidates
        .iter()
        .filter(|c| c.models.len() == 1)
        .filter_map(|c| Some((c.models[0].clone(), c.held_back.clone()?)))
        .collect();
    for c in document
        .candidates
        .iter_mut()
        .filter(|c| c.models.len() > 1)
    {
        if let Some((model, _)) = held.iter().find(|(m, _)| c.models.contains(m)) {
            c.held_back = Some(format!(
                "it includes {model}, whose gain on its own here its record cannot tell from \
                 its error"
            ));
        }
    }
    document.answer = answer(&document);
    document
}

/// A model's name as the trace's runtime calls the thing: on ROCm, CUDA graphs are HIP
/// graphs (`hip_graphs`, which `whatif` takes too).
fn runtime_name(trace: &Trace, name: String) -> String {
    if trace.runtime == Some(Runtime::Rocm) {
        name.replace("cuda_graphs", "hip_graphs")
    } else {
        name
    }
}

fn candidate_json(trace: &Trace, kind: TraceKind, advice: &Advice, c: &Candidate) -> CandidateJson {
    CandidateJson {
        name: runtime_name(trace, c.name()),
        models: c
            .models
            .iter()
            .map(|m| runtime_name(trace, m.name()))
            .collect(),
        predicted_ns: c.outcome.predicted.step_ns,
        speedup: finite(c.outcome.speedup),
        gain_ns: c.outcome.baseline.step_ns - c.outcome.predicted.step_ns,
        useful: c.is_useful(),
        peers: PeersJson::new(&c.outcome),
        pinned_edges: c.outcome.pinned_edges,
        trust: TrustJson::new(&c.outcome),
        hardware: c.models.iter().any(Model::is_hardware),
        reason: reason(&advice.baseline.bottleneck, c),
        host_saved_ns: c.outcome.host_saved_ns(),
        device_saved_ns: c.outcome.device_saved_ns(),
        tasks: TasksJson::new(&c.outcome),
        bound_after: c.outcome.predicted.bottleneck.bound().as_str(),
        memory: c.memory.as_ref().map(memory_saved_json),
        record: ModelRecordJson::of(&c.models, kind),
        held_back: match c.models.as_slice() {
            [model] => held_back(model, kind, finite(c.outcome.speedup)),
            _ => None,
        },
    }
}

/// What a bound is called in a sentence: `host-bound`...
fn bound_words(resource: Resource) -> &'static str {
    match resource {
        Resource::Host => "host-bound",
        Resource::Compute => "GPU-bound",
        Resource::Copy => "copy-bound",
        Resource::Communication => "communication-bound",
        Resource::Wait => "latency-bound",
    }
}

/// What a resource's time is, in a sentence.
fn resource_words(resource: Resource) -> &'static str {
    match resource {
        Resource::Host => "CPU work",
        Resource::Compute => "GPU kernels",
        Resource::Copy => "copies",
        Resource::Communication => "communication",
        Resource::Wait => "waiting (launch latency, other streams)",
    }
}

/// `the step is host-bound: 72% of the critical path is CPU work`.
fn bound_sentence(bottleneck: &Bottleneck) -> String {
    let bound = bottleneck.bound();
    format!(
        "the step is {}: {:.0}% of the critical path is {}",
        bound_words(bound),
        bottleneck.share(bound) * 100.0,
        resource_words(bound)
    )
}

fn ms(ns: i64) -> String {
    let ms = ns as f64 / 1e6;
    if ms.abs() >= 10.0 {
        format!("{ms:.0} ms")
    } else if ms.abs() >= 1.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

/// `1.5 GiB`, `320 MiB`.
fn mib(bytes: i64) -> String {
    let mib = bytes as f64 / (1u64 << 20) as f64;
    if mib.abs() >= 1024.0 {
        format!("{:.1} GiB", mib / 1024.0)
    } else {
        format!("{mib:.0} MiB")
    }
}

fn count(n: f64) -> String {
    let n = n.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `602 ms of CPU time (all threads) and 12 ms of GPU time`, leaving out what is zero.
fn saved(host_ns: i64, device_ns: i64) -> String {
    let host = (host_ns != 0).then(|| format!("{} of CPU time (all threads)", ms(host_ns)));
    let device = (device_ns != 0).then(|| format!("{} of GPU time", ms(device_ns)));
    match (host, device) {
        (Some(h), Some(d)) => format!("{h} and {d}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => "no time".to_string(),
    }
}

/// What the models change, per steady step, in words.
fn effect(candidate: &Candidate) -> String {
    let outcome = &candidate.outcome;
    let steps = outcome.steady_steps.max(1) as f64;
    let changed = count(outcome.changes.changed as f64 / steps);
    let removed = count(outcome.changes.removed as f64 / steps);
    let saved = saved(outcome.host_saved_ns(), outcome.device_saved_ns());
    let [model] = candidate.models.as_slice() else {
        return format!("together they save {saved} per step");
    };
    let nothing = outcome.changes == Default::default();
    match model {
        Model::FusedOptimizer { .. } if nothing => {
            "no optimizer step of several kernels to fuse".to_string()
        }
        // On a CPU-only trace the update's ops are fused on the host: tasks shortened, none
        // removed.
        Model::FusedOptimizer { .. } if outcome.changes.removed == 0 => format!(
            "fusing the optimizer's update into one op per step shortens {changed} host \
             task(s) per step: {saved}"
        ),
        Model::FusedOptimizer { .. } => format!(
            "fusing the optimizer removes {removed} kernels and launch calls per step: {saved}"
        ),
        Model::CudaGraphs if nothing => "no launch calls to capture".to_string(),
        Model::CudaGraphs => {
            format!("CUDA graphs take away the CPU cost of {changed} host tasks per step: {saved}")
        }
        Model::Amp | Model::AmpBf16 if nothing => {
            "no FP32 kernel that mixed precision would speed up".to_string()
        }
        Model::Amp | Model::AmpBf16 => {
            format!("mixed precision shortens {changed} kernels per step: {saved}")
        }
        Model::RemoveSyncs if nothing => "no explicit synchronization to remove".to_string(),
        Model::RemoveSyncs => format!("removes {removed} synchronizing calls per step"),
        Model::KernelFusion { .. } if nothing => {
            "no chain of element-wise kernels to fuse".to_string()
        }
        Model::KernelFusion { .. } => format!(
            "fusing element-wise chains removes {removed} kernels and launch calls per step: \
             {saved}"
        ),
        Model::ReconstructBatchnorm if nothing => "no batch-norm kernel to restructure".to_string(),
        // On a CPU-only trace the batch norms and their activations are host ops.
        Model::ReconstructBatchnorm if !outcome.graph.has_device_tasks() => format!(
            "restructuring batch norm removes {removed} element-wise ops and halves {changed} \
             batch-norm ops per step: {saved}"
        ),
        Model::ReconstructBatchnorm => format!(
            "restructuring batch norm removes {removed} element-wise kernels and launch calls \
             and halves {changed} batch-norm kernels per step: {saved}"
        ),
        Model::PrefetchInputs { .. } if nothing => {
            "no data loading or input copy to overlap".to_string()
        }
        Model::PrefetchInputs { .. } => format!(
            "prefetching the next batch takes {changed} data-loading tasks and waits off the \
             step: {saved}"
        ),
        Model::Recompute { .. } | Model::Offload { .. } | Model::Gist { .. } => {
            let added = count(outcome.changes.added as f64 / steps);
            let memory = candidate.memory.as_ref().map_or(String::new(), |m| {
                match (m.step_peak_source(), m.step_peak_saved_bytes) {
                    (Some("memory_timeline"), Some(fall)) => format!(
                        "; the step's peak, read off the recorded memory, falls by {} (the \
                         activations' own by {})",
                        mib(fall),
                        mib(m.saved_bytes)
                    ),
                    _ => format!(
                        "; it saves {} of peak activation memory",
                        mib(m.saved_bytes)
                    ),
                }
            });
            if nothing {
                "no activation it can act on (needs memory events or shapes and linked \
                 backward ops)"
                    .to_string()
            } else {
                format!("adds {added} tasks per step{memory}")
            }
        }
        Model::FasterHardware(_) => format!(
            "{} saves {saved} per step",
            match model.name().as_str() {
                "faster_gpu" => "a GPU twice as fast",
                "faster_cpu" => "a CPU twice as fast",
                "faster_copies" => "copies twice as fast",
                _ => "the faster hardware",
            }
        ),
    }
}

/// One sentence on why `candidate` helps or not, given the baseline's bottleneck.
pub fn reason(baseline: &Bottleneck, candidate: &Candidate) -> String {
    let after = &candidate.outcome.predicted.bottleneck;
    let effect = effect(candidate);
    if candidate.is_useful() {
        let mut text = format!("{}; {effect}", bound_sentence(baseline));
        if after.bound() != baseline.bound() {
            text.push_str(&format!("; then {}", bound_sentence(after)));
        }
        text
    } else if candidate.outcome.changes == Default::default() {
        effect
    } else {
        format!(
            "{effect}, but {}: that time is off the critical path",
            bound_sentence(baseline)
        )
    }
}
