//! `stepcast.analyze/1`: where the step's time goes. Per step, the breakdowns of the recorded
//! span (host and device, device idle by cause, communication overlap, time by phase and by
//! layer) and of its replayed critical path; for the whole trace, HTA's temporal breakdown,
//! the critical path of the analyzed step as the file's own events, the op/phase mapping and
//! its unmapped remainder, statistics and memory peaks.
//!
//! Every list is in a fixed order and every map keyed by a kind lists every kind, so the same
//! analysis always serializes to the same bytes.

mod mapping;
mod off_cpu;
mod statistics;

pub use mapping::*;
pub use off_cpu::*;
pub use statistics::*;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::value::RawValue;
use stepcast::Window;
use stepcast::analyze::Analysis;
use stepcast::analyze::breakdown::{Breakdown, ByLayer, ByPhase};
use stepcast::analyze::critical::{Bound, CriticalPathBreakdown};
use stepcast::analyze::hta::TemporalBreakdown;
use stepcast::analyze::mapping::{
    Evidence, MappedTime, Mapping, Phase, TasksNs, UnmappedCause, summarize,
};
use stepcast::analyze::memory::DeviceMemory;
use stepcast::analyze::stats::{DurationStats, NameStats, Statistics};
use stepcast_trace::{EventId, LaneKind, NameId, Runtime, Trace};

use super::replay::TypicalJson;
use super::{Counts, DeviceJson, TraceJson, devices, finite, main_device};

/// Layers listed in `device_top_layers` and `host_top_layers` (the rest are summed).
pub const TOP_LAYERS: usize = 20;

/// What HTA's temporal breakdown is, for readers of the document.
const HTA_DEFINITION: &str = "HolisticTraceAnalysis 0.5.0 get_temporal_breakdown, one rank, \
    whole trace (its last ProfilerStep left out when the trace names two or more): over the \
    span from the first kernel's start to the last kernel's end, idle = no kernel runs, \
    compute = a computation kernel runs, non_compute = only communication, memory or other \
    kernels run; percentages of that span";

/// The `analyze` document.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AnalyzeJson {
    /// Always `stepcast.analyze/1`.
    pub schema: &'static str,
    /// What the trace is.
    pub trace: TraceJson,
    /// The device the trace's work ran on (the lowest-numbered device with streams), if any.
    pub device: Option<DeviceJson>,
    /// `N` of `--step N`, or `None` (`null`) when the most typical step was picked.
    pub selected_step: Option<u64>,
    /// `N` of the step the detailed figures (`critical_path`) are about; `None` (`null`) for a
    /// trace without step markers, whose whole window is analyzed as one synthetic step.
    pub analyzed_step: Option<u64>,
    /// Every step of the window, by start (the synthetic step of a trace without markers).
    pub steps: Vec<StepAnalysisJson>,
    /// The typical step of the replay, over the steady-state steps; `None` (`null`) when no
    /// step has tasks.
    pub typical: Option<TypicalJson>,
    /// The breakdowns of the typical step; `None` (`null`) without a typical step.
    pub typical_step: Option<TypicalStepJson>,
    /// The breakdowns of the whole window, from its first task's start to its last task's end.
    pub window: WindowJson,
    /// HTA's temporal breakdown of the whole trace; `None` (`null`) without device kernels.
    pub hta_temporal_breakdown: Option<HtaTemporalJson>,
    /// The recorded events on the critical path of the analyzed step, in time order, in the
    /// input file's own ids and units.
    pub critical_path: Vec<FileEventJson>,
    /// How device work maps to ops, layers and phases over the whole window.
    pub mapping: MappingJson,
    /// Statistics of the recorded window.
    pub statistics: StatisticsJson,
    /// Memory peaks, per device with memory events (host, `-1`, first).
    pub memory: Vec<MemoryJson>,
    /// Facts about how the graph was built, one sentence each.
    pub notes: Vec<String>,
    /// How close each op runs to the hardware: FLOPs and bytes from recorded shapes, achieved
    /// throughput and efficiency, per step MFU (`json::op_model`).
    pub op_model: super::op_model::OpModelJson,
    /// The answer a person reads first, as `advise` gives it (`json::answer`); `None`
    /// (`null`) where the caller did not ask `advise` or it could not run.
    pub answer: Option<super::AnswerJson>,
}

/// Nanoseconds by a fixed set of keys, serialized as a JSON object in the order given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NsMap(pub Vec<(&'static str, i64)>);

impl NsMap {
    /// The sum of the values.
    pub fn total(&self) -> i64 {
        self.0.iter().map(|&(_, ns)| ns).sum()
    }

    /// The value of `key`, 0 if absent.
    pub fn get(&self, key: &str) -> i64 {
        self.0
            .iter()
            .find(|&&(k, _)| k == key)
            .map_or(0, |&(_, ns)| ns)
    }
}

impl Serialize for NsMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, ns) in &self.0 {
            map.serialize_entry(key, ns)?;
        }
        map.end()
    }
}

/// A time in the input file's microseconds, held as nanoseconds and written exactly, with
/// three decimals (`1707417525509335.123`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMicros(pub i64);

impl FileMicros {
    /// `ns` as microseconds with exactly three decimals.
    pub fn text(self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        format!("{sign}{}.{:03}", abs / 1000, abs % 1000)
    }
}

impl Serialize for FileMicros {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        RawValue::from_string(self.text())
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

/// One step: its replay, and where its recorded time went.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepAnalysisJson {
    /// `N` of `ProfilerStep#N`; 0 for a synthetic step.
    pub number: u64,
    /// The trace has no step markers and this step is the whole window.
    pub synthetic: bool,
    /// Whether the step counts as steady state.
    pub steady: bool,
    /// Where the step's host work begins, from the trace origin.
    pub start_ns: i64,
    /// Recorded span: from the step's host start to the end of the last task launched in it.
    /// Every partition below sums to it.
    pub measured_ns: i64,
    /// The same span in the replay.
    pub replayed_ns: i64,
    /// `replayed_ns / measured_ns - 1`; `None` (`null`) if `measured_ns` is 0.
    pub error: Option<f64>,
    /// Share of the step's device time, in `[0, 1]`, whose task maps to an op and a phase.
    pub gpu_time_mapped_fraction: f64,
    /// The step's device work that fraction is of.
    pub device: TasksNsJson,
    /// The part of the mapped device time mapped by the weaker evidence of the same kernel
    /// elsewhere in the trace (work with no launching call in the trace).
    pub mapped_by_same_kernel_elsewhere: TasksNsJson,
    /// The step's device work not mapped, by cause.
    pub unmapped: UnmappedJson,
    /// The breakdowns of the step's span.
    #[serde(flatten)]
    pub breakdown: BreakdownJson,
    /// What lies on the step's replayed critical path.
    pub critical_path_breakdown: CriticalPathBreakdownJson,
    /// Where the step's host thread was off its CPU and why, from the kernel scheduler's
    /// events (a CTF trace with `sched_switch`); `None` (`null`) when the trace has none.
    pub off_cpu: Option<OffCpuJson>,
}

/// The whole window's breakdowns.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowJson {
    /// First task's start, from the trace origin.
    pub start_ns: i64,
    /// `end - start` of the window; every partition below sums to it.
    pub span_ns: i64,
    /// The breakdowns of the window's span.
    #[serde(flatten)]
    pub breakdown: BreakdownJson,
}

/// What `typical_step` is, for readers of the document.
const TYPICAL_STEP_CONSTRUCTION: &str = "the recorded breakdowns of the steps in steps_used \
    (the steady-state steps the typical step is built from), averaged part by part; span_ns is \
    their mean measured span rounded half up, and each part its mean rounded down or up by \
    largest remainder so that every partition sums to span_ns";

/// The breakdowns of the typical step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TypicalStepJson {
    /// How the breakdowns are built, in a sentence.
    pub construction: &'static str,
    /// `N` of each step averaged: the typical step's `steps_used`.
    pub steps_used: Vec<u64>,
    /// The mean measured span of those steps; every partition below sums to it.
    pub span_ns: i64,
    /// The averaged breakdowns.
    #[serde(flatten)]
    pub breakdown: BreakdownJson,
}

/// Partitions of a span (each sums to it), plus the launch-bound kernels.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BreakdownJson {
    /// `cpu_only_ns`, `gpu_only_ns`, `overlap_ns` (both busy), `idle_ns` (neither).
    pub host_device: NsMap,
    /// The device's idle time (`cpu_only_ns + idle_ns`) by what ended each idle stretch:
    /// `host_launch_ns`, `synchronization_ns`, `communication_ns`, `other_stream_ns`,
    /// `unexplained_ns`.
    pub device_idle_by_cause: NsMap,
    /// Collectives against computation kernels.
    pub communication_overlap: CommunicationJson,
    /// Device-busy time by phase (every phase), then `idle`.
    pub device_time_by_phase: NsMap,
    /// Host-busy time by phase (every phase), then `idle`.
    pub host_time_by_phase: NsMap,
    /// Device-busy time by layer.
    pub device_top_layers: LayersJson,
    /// Host-busy time by layer.
    pub host_top_layers: LayersJson,
    /// Kernels shorter than the call that launched them.
    pub launch_bound_kernels: LaunchBoundJson,
}

/// Communication against computation during a span.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CommunicationJson {
    /// Computation runs, no collective.
    pub compute_only_ns: i64,
    /// A collective runs alongside computation.
    pub overlapped_ns: i64,
    /// A collective runs alone: exposed communication.
    pub exposed_ns: i64,
    /// Neither runs.
    pub neither_ns: i64,
    /// `overlapped / (overlapped + exposed)`, in `[0, 1]`; 0 without collectives.
    pub overlap_fraction: f64,
}

/// Busy time by layer, largest first: the first [`TOP_LAYERS`] layers, the rest summed, and
/// the idle time; they sum to the span.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LayersJson {
    /// The largest layers; `layer` is `None` (`null`) for time with no layer known.
    pub layers: Vec<LayerNsJson>,
    /// Layers (including "no layer") not listed.
    pub other_layers: u64,
    /// Their time.
    pub other_layers_ns: i64,
    /// Time nothing ran.
    pub idle_ns: i64,
}

/// Time of one layer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LayerNsJson {
    /// The layer (module or annotation) name; `None` (`null`): no layer known.
    pub layer: Option<String>,
    /// Time, ns.
    pub ns: i64,
}

/// Kernels shorter than their launch call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LaunchBoundJson {
    /// Kernels (computation and collectives) launched in the span's step(s) by a recorded call.
    pub kernels: u64,
    /// Of those, the ones shorter than their launch call.
    pub launch_bound: u64,
    /// Device time of the launch-bound kernels.
    pub kernel_ns: i64,
    /// Host time of their launch calls.
    pub launch_call_ns: i64,
}

/// What lies on a step's critical path.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CriticalPathBreakdownJson {
    /// Length of the path (replayed time).
    pub length_ns: i64,
    /// The category holding most of the path; `None` (`null`) for an empty path.
    pub bound: Option<&'static str>,
    /// Its share of the path, in `[0, 1]`; `None` (`null`) for an empty path.
    pub bound_share: Option<f64>,
    /// Every category: `cpu`, `gpu_compute`, `memory_copies`, `communication`,
    /// `synchronization`; sums to `length_ns`.
    pub by_bound: NsMap,
    /// Every phase; sums to `length_ns`.
    pub by_phase: NsMap,
    /// Every layer on the path, largest first; sums to `length_ns`.
    pub by_layer: Vec<LayerNsJson>,
    /// Every op on the path, largest first; sums to `length_ns`.
    pub by_op: Vec<OpNsJson>,
    /// The longest stretches (consecutive time of one task in one category), longest first.
    pub longest: Vec<StretchJson>,
}

/// Time of one op on a critical path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OpNsJson {
    /// The op's name; `None` (`null`): no op around the task.
    pub op: Option<String>,
    /// Time, ns.
    pub ns: i64,
    /// The phase holding most of this op's time on the path.
    pub phase: &'static str,
    /// The category holding most of this op's time on the path.
    pub bound: &'static str,
}

/// A named stretch of a critical path.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StretchJson {
    /// The task's name (kernel, runtime call or op).
    pub name: String,
    /// The task's lane, for people: `thread TID` or `GPU PID stream TID`.
    pub lane: String,
    /// The lane's pid as in the file (device index for a stream).
    pub pid: i64,
    /// The lane's tid as in the file (stream id for a stream).
    pub tid: i64,
    /// The category.
    pub bound: &'static str,
    /// The task's recorded start, from the trace origin.
    pub start_ns: i64,
    /// Time, ns (replayed).
    pub ns: i64,
}

/// HTA's temporal breakdown of the whole trace.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HtaTemporalJson {
    /// The definition reproduced.
    pub definition: &'static str,
    /// From the first kernel's start to the last kernel's end.
    pub kernel_time_ns: i64,
    /// No kernel runs.
    pub idle_ns: i64,
    /// A computation kernel runs.
    pub compute_ns: i64,
    /// Only communication, memory or other kernels run.
    pub non_compute_ns: i64,
    /// `idle_ns` in percent of `kernel_time_ns`.
    pub idle_pct: f64,
    /// `compute_ns` in percent of `kernel_time_ns`.
    pub compute_pct: f64,
    /// `non_compute_ns` in percent of `kernel_time_ns`.
    pub non_compute_pct: f64,
    /// Kernel intervals counted.
    pub kernels: u64,
    /// HTA's last-step filter applied.
    pub last_step_excluded: bool,
    /// Times were rounded to whole microseconds, as HTA does for fractional timestamps.
    pub microsecond_rounding: bool,
}

/// The most characters a `short_name` has.
pub const SHORT_NAME_WIDTH: usize = 80;

/// A count of tasks and their time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TasksNsJson {
    /// Tasks.
    pub tasks: u64,
    /// Their recorded time, ns.
    pub ns: i64,
}

impl TasksNsJson {
    fn new(TasksNs { tasks, ns }: TasksNs) -> Self {
        TasksNsJson { tasks, ns }
    }
}

/// A host thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThreadJson {
    /// Process id.
    pub pid: i64,
    /// Thread id.
    pub tid: i64,
}

/// The `analyze` document of `analysis`, the analysis of `window` (built from `trace`).
/// `selected_step` is the `N` the user asked for, if any (the analysis already holds it).
pub fn analyze_json(
    trace: &Trace,
    window: &Window,
    analysis: &Analysis,
    selected_step: Option<u64>,
) -> AnalyzeJson {
    let names = Names { trace, window };
    let steps: Vec<StepAnalysisJson> = window
        .steps
        .iter()
        .enumerate()
        .map(|(index, step)| {
            let replay = &analysis.replay.steps[index];
            let (_, breakdown) = &analysis.critical[index];
            StepAnalysisJson {
                number: step.number,
                synthetic: step.synthetic,
                steady: replay.steady,
                start_ns: step.start_ns,
                measured_ns: replay.measured_ns,
                replayed_ns: replay.replayed_ns,
                error: finite(replay.error()),
                gpu_time_mapped_fraction: analysis.mapped[index].fraction(),
                device: TasksNsJson::new(analysis.mapped[index].device),
                mapped_by_same_kernel_elsewhere: TasksNsJson::new(
                    analysis.mapped[index].same_kernel_elsewhere,
                ),
                unmapped: UnmappedJson::new(&analysis.mapped[index]),
                breakdown: BreakdownJson::new(&names, &analysis.breakdowns.steps[index]),
                critical_path_breakdown: names.critical_path_breakdown(breakdown),
                off_cpu: analysis
                    .off_cpu
                    .as_ref()
                    .and_then(|steps| steps.get(index))
                    .map(|step| OffCpuJson::new(trace, step)),
            }
        })
        .collect();
    let analyzed = analysis.analyzed_step;
    let critical_path = analyzed
        .map(|index| names.file_events(&analysis.critical[index].0.events))
        .unwrap_or_default();
    let window_breakdown = &analysis.breakdowns.window;
    AnalyzeJson {
        schema: "stepcast.analyze/1",
        trace: TraceJson::new(trace),
        device: main_device(&devices(trace)),
        selected_step,
        analyzed_step: analyzed
            .map(|index| &window.steps[index])
            .filter(|step| !step.synthetic)
            .map(|step| step.number),
        steps,
        typical: analysis.replay.typical.as_ref().map(TypicalJson::new),
        typical_step: analysis
            .typical_breakdown
            .as_ref()
            .map(|typical| TypicalStepJson {
                construction: TYPICAL_STEP_CONSTRUCTION,
                steps_used: typical.steps_used.clone(),
                span_ns: typical.breakdown.span_ns(),
                breakdown: BreakdownJson::new(&names, &typical.breakdown),
            }),
        window: WindowJson {
            start_ns: window_breakdown.start_ns,
            span_ns: window_breakdown.span_ns(),
            breakdown: BreakdownJson::new(&names, window_breakdown),
        },
        hta_temporal_breakdown: analysis.hta.as_ref().map(HtaTemporalJson::new),
        critical_path,
        mapping: names.mapping(&analysis.mapping),
        statistics: names.statistics(&analysis.statistics),
        memory: analysis
            .memory
            .iter()
            .map(|memory| names.memory(memory))
            .collect(),
        notes: window.report.notes.clone(),
        op_model: super::op_model::OpModelJson::new(trace, window, analysis),
        answer: None,
    }
}

/// Turns ids into the names and lanes of the trace.
struct Names<'a> {
    trace: &'a Trace,
    window: &'a Window,
}

impl Names<'_> {
    fn name(&self, id: NameId) -> String {
        self.trace.name(id).to_string()
    }

    fn event_name(&self, event: EventId) -> String {
        self.name(self.trace.events[event.index()].name)
    }

    fn layers(&self, layers: &ByLayer) -> LayersJson {
        let listed = layers.busy.len().min(TOP_LAYERS);
        let rest = &layers.busy[listed..];
        LayersJson {
            layers: layers.busy[..listed]
                .iter()
                .map(|&(layer, ns)| LayerNsJson {
                    layer: layer.map(|l| self.name(l)),
                    ns,
                })
                .collect(),
            other_layers: rest.len() as u64,
            other_layers_ns: rest.iter().map(|&(_, ns)| ns).sum(),
            idle_ns: layers.idle_ns,
        }
    }

    /// Graph lane `lane` for people, and its pid and tid.
    fn lane(&self, lane: u32) -> (String, i64, i64) {
        let graph_lane = &self.window.graph.lanes[lane as usize];
        let lane = self.trace.lane(graph_lane.trace_lane);
        let text = match lane.kind {
            LaneKind::CpuThread => format!("thread {}", lane.tid),
            LaneKind::DeviceStream => {
                let device = match self.trace.runtime {
                    Some(Runtime::Cuda | Runtime::Rocm) => "GPU",
                    _ => "device",
                };
                format!("{device} {} stream {}", lane.pid, lane.tid)
            }
        };
        (text, lane.pid, lane.tid)
    }

    fn critical_path_breakdown(
        &self,
        breakdown: &CriticalPathBreakdown,
    ) -> CriticalPathBreakdownJson {
        let graph = &self.window.graph;
        let bound = breakdown.bound();
        CriticalPathBreakdownJson {
            length_ns: breakdown.length_ns,
            bound: bound.map(|(b, _)| b.as_str()),
            bound_share: bound.map(|(_, share)| share),
            by_bound: NsMap(
                breakdown
                    .by_bound
                    .iter()
                    .map(|&(b, ns)| (b.as_str(), ns))
                    .collect(),
            ),
            by_phase: NsMap(
                breakdown
                    .by_phase
                    .iter()
                    .map(|&(p, ns)| (p.as_str(), ns))
                    .collect(),
            ),
            by_layer: breakdown
                .by_layer
                .iter()
                .map(|&(layer, ns)| LayerNsJson {
                    layer: layer.map(|l| self.name(l)),
                    ns,
                })
                .collect(),
            by_op: breakdown
                .by_op
                .iter()
                .enumerate()
                .map(|(i, &(op, ns))| {
                    // Each op's dominant phase and category.
                    let shares = breakdown.op_shares.get(i).copied().unwrap_or_default();
                    OpNsJson {
                        op: op.map(|o| self.name(o)),
                        ns,
                        phase: Phase::ALL[largest(&shares.by_phase)].as_str(),
                        bound: Bound::ALL[largest(&shares.by_bound)].as_str(),
                    }
                })
                .collect(),
            longest: breakdown
                .longest
                .iter()
                .map(|stretch| {
                    let t = stretch.task.index();
                    let (lane, pid, tid) = self.lane(graph.lane[t]);
                    StretchJson {
                        name: self.name(graph.name[t]),
                        lane,
                        pid,
                        tid,
                        bound: stretch.bound.as_str(),
                        start_ns: graph.rec_start_ns[t],
                        ns: stretch.ns,
                    }
                })
                .collect(),
        }
    }

    /// Events as the file holds them.
    fn file_events(&self, events: &[EventId]) -> Vec<FileEventJson> {
        let trace = self.trace;
        events
            .iter()
            .map(|&id| {
                let event = &trace.events[id.index()];
                let lane = trace.lane(event.lane);
                FileEventJson {
                    pid: FileId::new(lane.pid, &lane.file_pid),
                    tid: FileId::new(lane.tid, &lane.file_tid),
                    ts: FileMicros(trace.origin_ns + event.start_ns - trace.file_time_base_ns),
                    dur: FileMicros(event.dur_ns),
                    name: self.name(event.name),
                    start_ns: event.start_ns,
                    dur_ns: event.dur_ns,
                }
            })
            .collect()
    }

    fn mapping(&self, mapping: &Mapping) -> MappingJson {
        let summary = summarize(self.window, mapping);
        let device = &summary.device;
        MappingJson {
            gpu_time_mapped_fraction: summary.mapped_fraction(),
            device_tasks: device.device.tasks,
            device_ns: device.device.ns,
            mapped_device_ns: device.mapped.ns,
            unmapped_device_ns: device.device.ns - device.mapped.ns,
            mapped_by_same_kernel_elsewhere: TasksNsJson::new(device.same_kernel_elsewhere),
            unmapped: UnmappedJson::new(device),
            layered_device_ns: summary.layered_device_ns,
            device_ns_by_phase: NsMap(
                summary
                    .device_ns_by_phase
                    .iter()
                    .map(|&(p, ns)| (p.as_str(), ns))
                    .collect(),
            ),
            device_ns_by_evidence: NsMap(
                summary
                    .device_ns_by_evidence
                    .iter()
                    .map(|&(e, ns): &(Evidence, i64)| (e.as_str(), ns))
                    .collect(),
            ),
            tasks_by_phase: Counts(
                summary
                    .tasks_by_phase
                    .iter()
                    .map(|&(p, n)| (p.as_str(), n))
                    .collect(),
            ),
            backward_threads: mapping
                .backward_lanes
                .iter()
                .map(|&lane| {
                    let lane = self.trace.lane(lane);
                    ThreadJson {
                        pid: lane.pid,
                        tid: lane.tid,
                    }
                })
                .collect(),
        }
    }

    fn statistics(&self, statistics: &Statistics) -> StatisticsJson {
        let name_stats = |rows: &[NameStats], shorten: ShortColumn| {
            let full: Vec<String> = rows.iter().map(|stats| self.name(stats.name)).collect();
            let short = short_column(&full, shorten);
            rows.iter()
                .zip(full.into_iter().zip(short))
                .map(|(stats, (name, short_name))| NameStatsJson {
                    name,
                    short_name,
                    instances: DurationsJson::new(&stats.instances),
                    per_step: DurationsJson::new(&stats.per_step),
                })
                .collect()
        };
        let steps = &statistics.steps;
        let queue_names: Vec<String> = statistics
            .queue_latency
            .iter()
            .map(|queue| self.name(queue.name))
            .collect();
        let queue_short = short_column(&queue_names, crate::names::short_names);
        StatisticsJson {
            top_kernels: name_stats(&statistics.top_kernels, crate::names::short_names),
            top_ops: name_stats(&statistics.top_ops, crate::names::short_labels),
            queue_latency: statistics
                .queue_latency
                .iter()
                .zip(queue_names.into_iter().zip(queue_short))
                .map(|(queue, (name, short_name))| NamedDurationsJson {
                    name,
                    short_name,
                    durations: DurationsJson::new(&queue.latency),
                })
                .collect(),
            kernels_per_launch_api: statistics
                .launch_apis
                .iter()
                .map(|api| LaunchApiJson {
                    api: api.api.map(|name| self.name(name)),
                    calls: api.calls,
                    device_tasks: api.device_tasks,
                    tasks_per_call: api.tasks_per_call(),
                    device_ns: api.device_ns,
                })
                .collect(),
            step_variability: StepVariabilityJson {
                steps: steps
                    .spans_ns
                    .iter()
                    .map(|&(number, measured_ns)| StepSpanJson {
                        number,
                        measured_ns,
                    })
                    .collect(),
                all: VariabilityJson::new(&steps.all),
                steady: VariabilityJson::new(&steps.steady),
            },
        }
    }

    fn memory(&self, memory: &DeviceMemory) -> MemoryJson {
        let peak = &memory.peak;
        MemoryJson {
            device: memory.device,
            peak_bytes: peak.allocated_bytes,
            peak_at_ns: peak.time_ns,
            reserved_bytes_at_peak: peak.reserved_bytes,
            max_reserved_bytes: memory.max_reserved_bytes,
            allocations: memory.allocations,
            frees: memory.frees,
            memory_events: memory.timeline.len() as u64,
            thread: peak.lane.map(|lane| {
                let lane = self.trace.lane(lane);
                ThreadJson {
                    pid: lane.pid,
                    tid: lane.tid,
                }
            }),
            op: peak.op.map(|op| self.event_name(op)),
            op_stack: peak
                .op_stack
                .iter()
                .map(|&op| self.event_name(op))
                .collect(),
            layer: peak.layer.map(|layer| self.name(layer)),
            phase: peak.phase.map(Phase::as_str),
        }
    }
}

impl BreakdownJson {
    fn new(names: &Names, breakdown: &Breakdown) -> Self {
        let host_device = &breakdown.host_device;
        let idle = &breakdown.device_idle;
        let communication = &breakdown.communication;
        BreakdownJson {
            host_device: NsMap(vec![
                ("cpu_only_ns", host_device.cpu_only_ns),
                ("gpu_only_ns", host_device.gpu_only_ns),
                ("overlap_ns", host_device.overlap_ns),
                ("idle_ns", host_device.idle_ns),
            ]),
            device_idle_by_cause: NsMap(vec![
                ("host_launch_ns", idle.host_launch_ns),
                ("synchronization_ns", idle.synchronization_ns),
                ("communication_ns", idle.communication_ns),
                ("other_stream_ns", idle.other_stream_ns),
                ("unexplained_ns", idle.unexplained_ns),
            ]),
            communication_overlap: CommunicationJson {
                compute_only_ns: communication.compute_only_ns,
                overlapped_ns: communication.overlapped_ns,
                exposed_ns: communication.exposed_ns,
                neither_ns: communication.neither_ns,
                overlap_fraction: communication.overlap_fraction(),
            },
            device_time_by_phase: phase_map(&breakdown.device_by_phase),
            host_time_by_phase: phase_map(&breakdown.host_by_phase),
            device_top_layers: names.layers(&breakdown.device_by_layer),
            host_top_layers: names.layers(&breakdown.host_by_layer),
            launch_bound_kernels: LaunchBoundJson {
                kernels: breakdown.launch_bound.kernels,
                launch_bound: breakdown.launch_bound.launch_bound,
                kernel_ns: breakdown.launch_bound.kernel_ns,
                launch_call_ns: breakdown.launch_bound.launch_call_ns,
            },
        }
    }
}

impl HtaTemporalJson {
    fn new(hta: &TemporalBreakdown) -> Self {
        HtaTemporalJson {
            definition: HTA_DEFINITION,
            kernel_time_ns: hta.kernel_time_ns,
            idle_ns: hta.idle_ns,
            compute_ns: hta.compute_ns,
            non_compute_ns: hta.non_compute_ns,
            idle_pct: hta.idle_pct,
            compute_pct: hta.compute_pct,
            non_compute_pct: hta.non_compute_pct,
            kernels: hta.kernels,
            last_step_excluded: hta.last_step_excluded,
            microsecond_rounding: hta.microsecond_rounding,
        }
    }
}

/// Every phase, then `idle`.
fn phase_map(by_phase: &ByPhase) -> NsMap {
    let mut map: Vec<(&'static str, i64)> = Phase::ALL
        .iter()
        .map(|&phase| (phase.as_str(), by_phase.get(phase)))
        .collect();
    map.push(("idle", by_phase.idle_ns));
    NsMap(map)
}

/// The index of the largest value (the first of equals).
fn largest(values: &[i64]) -> usize {
    let mut best = 0;
    for (i, &value) in values.iter().enumerate() {
        if value > values[best] {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_micros_are_exact() {
        assert_eq!(
            FileMicros(1_707_417_525_509_335_123).text(),
            "1707417525509335.123"
        );
        assert_eq!(FileMicros(5).text(), "0.005");
        assert_eq!(FileMicros(-1_500).text(), "-1.500");
        assert_eq!(FileMicros(0).text(), "0.000");
        let text = serde_json::to_string(&FileMicros(12_000)).expect("serializable");
        assert_eq!(text, "12.000");
    }

    #[test]
    fn ns_maps_keep_their_order() {
        let map = NsMap(vec![("b", 2), ("a", 1)]);
        assert_eq!(
            serde_json::to_string(&map).expect("serializable"),
            r#"{"b":2,"a":1}"#
        );
        assert_eq!(map.total(), 3);
        assert_eq!(map.get("a"), 1);
    }

    #[test]
    fn largest_takes_the_first_of_equals() {
        assert_eq!(largest(&[1, 3, 3, 0]), 1);
        assert_eq!(largest(&[0, 0]), 0);
    }
}
