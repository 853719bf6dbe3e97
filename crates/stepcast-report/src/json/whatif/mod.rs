//! `stepcast.whatif/1` and `stepcast.advise/1`: what an optimization would do to the step
//! time, and which optimizations are worth trying first.
//!
//! The document of one prediction is here; its parts each have a room: `trust` (how far it
//! can be trusted), `memory` (what a memory trade saves), `record` (the model's record on
//! measured pairs), `reason` (the one-line why), `ddp` (the data-parallel sweep) and `advise`
//! (the ranking).

mod advise;
mod ddp;
mod memory;
mod reason;
mod record;
mod trust;

use serde::Serialize;
use stepcast::Window;
use stepcast::whatif::models::MemoryEffect;
use stepcast::whatif::record::TraceKind;
use stepcast::whatif::{Bottleneck, Model, Outcome, Resource};
use stepcast_trace::{Runtime, Trace};

use super::{DeviceJson, TraceJson, devices, finite, main_device};

pub use advise::{AdviseJson, CandidateJson, advise_json};
pub use ddp::{CalibrationJson, DdpConfigJson, DdpJson, FitJson, SweepRowJson, ddp_json};
pub use memory::{MemorySavedJson, memory_saved_json};
pub use reason::reason;
pub use record::{ModelRecordJson, held_back, record_words};
pub use trust::{PeersJson, TrustJson, WithoutProfilerJson};

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
    /// ([`stepcast::whatif::record::ModelRecord::cannot_tell`]); `null` where it can, or where there is no record.
    pub held_back: Option<String>,
}

impl WhatIfJson {
    /// Fills in `memory` for a memory-for-time trade.
    pub fn set_memory(&mut self, effect: &MemoryEffect) {
        self.memory = Some(memory_saved_json(effect));
    }
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

/// A model's name as the trace's runtime calls the thing: on ROCm, CUDA graphs are HIP
/// graphs (`hip_graphs`, which `whatif` takes too).
fn runtime_name(trace: &Trace, name: String) -> String {
    if trace.runtime == Some(Runtime::Rocm) {
        name.replace("cuda_graphs", "hip_graphs")
    } else {
        name
    }
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
