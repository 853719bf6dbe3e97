//! The JSON documents stepcast writes, as serde types.
//!
//! # Wire format
//!
//! Each command writes one JSON object whose `schema` field names the document and its version:
//! `stepcast.info/1` ([`InfoJson`]), `stepcast.replay/1` ([`ReplayJson`]),
//! `stepcast.replay-ranks/3`, `stepcast.analyze/1` ([`AnalyzeJson`]), `stepcast.whatif/1`,
//! `stepcast.advise/1`, `stepcast.whatif-job/1` and `stepcast.advise-job/1` ([`WhatIfJobJson`],
//! [`AdviseJobJson`]), `stepcast.optimize/1` ([`OptimizeJson`]) and `stepcast.compare/2` ([`CompareJson`]). Within a version,
//! change is additive only: fields may be added, none is removed, renamed or retyped. The full
//! field list, with units, is in `docs/json-schema.md`.
//!
//! Conventions:
//! - times and durations are integer nanoseconds, in fields ending in `_ns`; instants are
//!   relative to the trace's origin (its earliest timestamp);
//! - errors are relative (`predicted / measured - 1`: `-0.003` is 0.3% short) and are `null`
//!   where undefined (a zero measured span);
//! - shares (`added_deviation_fidelity`) lie in `[0, 1]`;
//! - count maps keyed by kind (`events_by_kind`, `edges_by_kind`) list every kind, zeros
//!   included, in a fixed order; maps keyed by free text (`skipped`, `rejected`) are sorted.
//!
//! The same inputs always give byte-identical output: there are no hash maps, clocks or paths
//! here. The one path, [`TraceJson::file`], is filled in by the caller.

mod analyze;
mod answer;
mod compare;
mod info;
mod job;
mod op_model;
mod optimize;
pub mod ranks;
mod replay;
mod whatif;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use stepcast_trace::{LaneKind, Trace};

pub use analyze::{
    AnalyzeJson, BreakdownJson, CommunicationJson, CriticalPathBreakdownJson, DurationsJson,
    FileEventJson, FileId, FileMicros, HtaTemporalJson, LaunchApiJson, LaunchBoundJson,
    LayerNsJson, LayersJson, MappingJson, MemoryJson, NameStatsJson, NamedDurationsJson, NsMap,
    OffCpuIntervalJson, OffCpuJson, OpNsJson, SchedThreadJson, StatisticsJson, StepAnalysisJson,
    StepSpanJson, StepVariabilityJson, StretchJson, TOP_LAYERS, TasksNsJson, ThreadJson,
    TypicalStepJson, UnmappedJson, VariabilityJson, WindowJson, analyze_json,
};
pub use answer::{AnswerChangeJson, AnswerJson, KindItemJson, StepTimeJson, answer, kind_words};
pub use compare::{
    CompareJson, DiffRowJson, DiffTableJson, MeasuredJson, ModelCheckJson, NoiseJson,
    PhaseCheckJson, SideJson, StepTimesJson, WarningJson, WorkloadJson, compare_json,
};
pub use info::{ExecutionTraceJson, GraphJson, InfoJson, LaneJson, StepInfoJson, info_json};
pub use job::{
    AdviseJobJson, AloneJson, JobCandidateJson, JobCollectivesJson, JobRankJson, RankShareJson,
    WhatIfJobJson, advise_job_json, whatif_job_json,
};
pub use op_model::{
    CoverageJson, NamedNsJson, OpModelJson, OpThroughputJson, OpTotalJson, PeaksJson,
    StepFlopsJson, TOP_OPS,
};
pub use optimize::{
    MemoryOptionJson, MemoryPlanJson, MoveJson, OptimizeJson, PassJson, PlannedMoveJson,
    RankStepJson, ReferenceJson, SearchJson, optimize_json,
};
pub use replay::{
    CriticalPathJson, ReplayJson, StepReplayJson, SummaryJson, TypicalJson, replay_json,
};
pub use whatif::{
    AdviseJson, BottleneckJson, CandidateJson, MemorySavedJson, ModelRecordJson, PathItemJson,
    PeersJson, PhaseJson, TasksJson, TrustJson, WhatIfJson, WithoutProfilerJson, advise_json,
    memory_saved_json, whatif_json,
};
pub use whatif::{CalibrationJson, DdpConfigJson, DdpJson, FitJson, SweepRowJson, ddp_json};

/// Counts by kind, serialized as a JSON object whose keys keep the order given (the kind's
/// declaration order), zero counts included.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts(pub Vec<(&'static str, u64)>);

impl Counts {
    /// The sum of all counts.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|&(_, n)| n).sum()
    }

    /// The count of `kind`, 0 if absent.
    pub fn get(&self, kind: &str) -> u64 {
        self.0
            .iter()
            .find(|&&(k, _)| k == kind)
            .map_or(0, |&(_, n)| n)
    }
}

impl Serialize for Counts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (kind, count) in &self.0 {
            map.serialize_entry(kind, count)?;
        }
        map.end()
    }
}

/// What the trace is, independent of any analysis. Shared by both documents.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceJson {
    /// The input file as the user named it. The library knows no paths: this is `None` (`null`)
    /// unless the caller sets it.
    pub file: Option<String>,
    /// Accelerator runtime (`cuda`, `rocm`, `mtia`, `cpu-only`), if known.
    pub runtime: Option<&'static str>,
    /// Rank of this process in a distributed job.
    pub rank: Option<i64>,
    /// Number of ranks of the distributed job.
    pub world_size: Option<i64>,
    /// Communication backend (e.g. `nccl`).
    pub backend: Option<String>,
    /// Uncompressed size of the input in bytes.
    pub input_bytes: u64,
    /// Records in the input's event array.
    pub records: u64,
    /// Duration events read from those records.
    pub events: u64,
    /// Absolute time of the trace's zero, in the profiler clock's nanoseconds.
    pub origin_ns: i64,
}

impl TraceJson {
    fn new(trace: &Trace) -> Self {
        let distributed = trace.distributed.as_ref();
        Self {
            file: None,
            runtime: trace.runtime.map(|runtime| runtime.as_str()),
            rank: distributed.and_then(|d| d.rank),
            world_size: distributed.and_then(|d| d.world_size),
            backend: distributed.and_then(|d| d.backend.clone()),
            input_bytes: trace.input_bytes,
            records: trace.records,
            events: trace.events.len() as u64,
            origin_ns: trace.origin_ns,
        }
    }
}

/// An accelerator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceJson {
    /// Device index, as in the trace header and the device lanes' `pid`.
    pub id: i64,
    /// Product name, if the trace header gives one; for a device the header does not list,
    /// the one product it lists, if it lists one, marked `(as the trace's header names its
    /// other devices)`.
    pub name: Option<String>,
    /// NVIDIA compute capability as `major.minor` (e.g. `9.0`), if known.
    pub compute_capability: Option<String>,
    /// Device streams of this device with events in the trace.
    pub streams: u64,
}

/// Every device the trace mentions (its header, then any device lane not in the header), by
/// index.
fn devices(trace: &Trace) -> Vec<DeviceJson> {
    let mut devices: Vec<DeviceJson> = trace
        .devices
        .iter()
        .map(|device| DeviceJson {
            id: device.id,
            name: Some(device.name.clone()).filter(|name| !name.is_empty()),
            compute_capability: device
                .compute_capability
                .map(|(major, minor)| format!("{major}.{minor}")),
            streams: 0,
        })
        .collect();
    for lane in &trace.lanes {
        if lane.kind != LaneKind::DeviceStream {
            continue;
        }
        match devices.iter_mut().find(|device| device.id == lane.pid) {
            Some(device) => device.streams += 1,
            None => devices.push(DeviceJson {
                id: lane.pid,
                name: None,
                compute_capability: None,
                streams: 1,
            }),
        }
    }
    devices.sort_by_key(|device| device.id);
    devices.dedup_by_key(|device| device.id);
    // A header that lists only some of the machine's devices (Kineto on ROCm lists device 0
    // while the work ran on device 2) names the others by the one product it lists, said
    // so: the devices of one machine are alike.
    let mut named: Vec<&str> = devices.iter().filter_map(|d| d.name.as_deref()).collect();
    named.sort_unstable();
    named.dedup();
    if let [product] = named.as_slice() {
        let product = format!("{product} (as the trace's header names its other devices)");
        for device in devices.iter_mut().filter(|d| d.name.is_none()) {
            device.name = Some(product.clone());
        }
    }
    devices
}

/// The device the trace's work ran on: the lowest-numbered device with streams. Kineto lists
/// every visible device in its header, while one rank uses one.
fn main_device(devices: &[DeviceJson]) -> Option<DeviceJson> {
    devices.iter().find(|device| device.streams > 0).cloned()
}

fn lane_kind(kind: LaneKind) -> &'static str {
    match kind {
        LaneKind::CpuThread => "cpu_thread",
        LaneKind::DeviceStream => "device_stream",
    }
}

/// `value`, or `None` if it is infinite or NaN (JSON has no such numbers).
fn finite(value: f64) -> Option<f64> {
    value.is_finite().then_some(value)
}

/// The median of `values` (the mean of the two middle values for an even count), ignoring
/// undefined ones; `None` if none is defined.
fn median(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    let mut values: Vec<f64> = values.into_iter().flatten().collect();
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// The largest absolute value of `values`, ignoring undefined ones.
fn max_abs(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    values
        .into_iter()
        .flatten()
        .map(f64::abs)
        .max_by(f64::total_cmp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_ignores_undefined_values() {
        assert_eq!(median([None, Some(3.0), Some(1.0)]), Some(2.0));
        assert_eq!(median([Some(3.0), Some(1.0), Some(2.0)]), Some(2.0));
        assert_eq!(median([None]), None);
    }

    #[test]
    fn max_abs_takes_the_largest_magnitude() {
        assert_eq!(max_abs([Some(0.1), Some(-0.5), None]), Some(0.5));
        assert_eq!(max_abs([]), None);
    }

    #[test]
    fn counts_serialize_as_an_ordered_object() {
        let counts = Counts(vec![("b", 2), ("a", 0)]);
        let text = serde_json::to_string(&counts).expect("counts serialize");
        assert_eq!(text, r#"{"b":2,"a":0}"#);
        assert_eq!(counts.total(), 2);
    }
}
