//! Statistics of the trace's kernels, ops, launches and steps, and its memory peaks.

use super::*;

/// Statistics of the recorded window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StatisticsJson {
    /// Kernels (computation and collectives) by total time, at most 20.
    pub top_kernels: Vec<NameStatsJson>,
    /// `cpu_op` events (inclusive time) by total time, at most 20.
    pub top_ops: Vec<NameStatsJson>,
    /// Launch → start latency of device work, by name, largest total first, at most 20.
    pub queue_latency: Vec<NamedDurationsJson>,
    /// Device work by the API that launched it.
    pub kernels_per_launch_api: Vec<LaunchApiJson>,
    /// How much the steps' measured spans vary.
    pub step_variability: StepVariabilityJson,
}

/// Count, total, mean, standard deviation, minimum and maximum of durations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DurationsJson {
    /// Values.
    pub count: u64,
    /// Their sum, ns.
    pub total_ns: i64,
    /// Mean, ns.
    pub mean_ns: f64,
    /// Sample standard deviation (`n - 1`), ns; 0 for fewer than two values.
    pub std_ns: f64,
    /// Smallest, ns.
    pub min_ns: i64,
    /// Largest, ns.
    pub max_ns: i64,
}

/// A kernel or op name and its durations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NameStatsJson {
    /// The name, in full.
    pub name: String,
    /// The name as tables show it: demangled and shortened, at most
    /// `SHORT_NAME_WIDTH` characters, distinct from every other row's (`crate::names`).
    pub short_name: String,
    /// Over every instance.
    #[serde(flatten)]
    pub instances: DurationsJson,
    /// Over the steps: the name's total time in each step (0 where it did not run).
    pub per_step: DurationsJson,
}

/// A name and a set of durations.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NamedDurationsJson {
    /// The name, in full.
    pub name: String,
    /// The name as tables show it (as [`NameStatsJson::short_name`]).
    pub short_name: String,
    /// The durations.
    #[serde(flatten)]
    pub durations: DurationsJson,
}

/// Device work launched through one API.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LaunchApiJson {
    /// The launching call's name; `None` (`null`) for work whose launch is not in the trace.
    pub api: Option<String>,
    /// Distinct launching calls.
    pub calls: u64,
    /// Device tasks they launched.
    pub device_tasks: u64,
    /// `device_tasks / calls` (0 without calls).
    pub tasks_per_call: f64,
    /// Recorded time of those tasks.
    pub device_ns: i64,
}

/// The steps' measured spans.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepVariabilityJson {
    /// One per step, in step order.
    pub steps: Vec<StepSpanJson>,
    /// Over every step.
    pub all: VariabilityJson,
    /// Over the steady-state steps.
    pub steady: VariabilityJson,
}

/// A step's measured span.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StepSpanJson {
    /// `N` of `ProfilerStep#N`.
    pub number: u64,
    /// The step's `measured_ns`.
    pub measured_ns: i64,
}

/// Durations and their coefficient of variation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VariabilityJson {
    /// The durations.
    #[serde(flatten)]
    pub durations: DurationsJson,
    /// `std_ns / mean_ns` (0 when the mean is 0).
    pub cv: f64,
}

/// One device's memory peak.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryJson {
    /// Device index; `-1` for host memory.
    pub device: i64,
    /// The most bytes allocated at once.
    pub peak_bytes: i64,
    /// When first reached, from the trace origin (may precede it).
    pub peak_at_ns: i64,
    /// Reserved (cached) bytes at the peak, if recorded.
    pub reserved_bytes_at_peak: Option<i64>,
    /// The most reserved bytes recorded, if any.
    pub max_reserved_bytes: Option<i64>,
    /// Allocation events (positive bytes).
    pub allocations: u64,
    /// Free events (negative bytes).
    pub frees: u64,
    /// Memory events on the device.
    pub memory_events: u64,
    /// The allocating thread, if known.
    pub thread: Option<ThreadJson>,
    /// The innermost `cpu_op` live at the peak on that thread.
    pub op: Option<String>,
    /// The ops live at the peak, outermost first.
    pub op_stack: Vec<String>,
    /// The layer of the host task the peak is attributed to.
    pub layer: Option<String>,
    /// The phase of that task.
    pub phase: Option<&'static str>,
}

impl DurationsJson {
    pub(super) fn new(stats: &DurationStats) -> Self {
        DurationsJson {
            count: stats.count,
            total_ns: stats.total_ns,
            mean_ns: stats.mean_ns,
            std_ns: stats.std_ns,
            min_ns: stats.min_ns,
            max_ns: stats.max_ns,
        }
    }
}

impl VariabilityJson {
    pub(super) fn new(stats: &DurationStats) -> Self {
        VariabilityJson {
            durations: DurationsJson::new(stats),
            cv: stats.cv(),
        }
    }
}
