//! The op/phase mapping of the device time and its unmapped remainder, with the file's own
//! events named by their place in the file.

use super::*;

/// A `pid` or `tid` as the file wrote it: a number, or a string (2021 traces write
/// `"tid": "stream 7"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum FileId {
    /// Written as a number.
    Number(i64),
    /// Written as a string.
    Text(String),
}

impl FileId {
    pub(super) fn new(number: i64, text: &Option<String>) -> FileId {
        match text {
            Some(text) => FileId::Text(text.clone()),
            None => FileId::Number(number),
        }
    }
}

/// How a column's names are shortened: `names::short_names` (kernels) or `short_labels` (ops).
pub(super) type ShortColumn = fn(&[&str], usize) -> Vec<String>;

/// The short names of one table's column (no two different names alike).
pub(super) fn short_column(names: &[String], shorten: ShortColumn) -> Vec<String> {
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    shorten(&names, SHORT_NAME_WIDTH)
}

/// A recorded event, in the input file's ids and units.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileEventJson {
    /// `pid` as in the file (device index for device work).
    pub pid: FileId,
    /// `tid` as in the file (stream id for device work).
    pub tid: FileId,
    /// `ts` as in the file, µs.
    pub ts: FileMicros,
    /// `dur` as in the file, µs.
    pub dur: FileMicros,
    /// `name` as in the file.
    pub name: String,
    /// Its start in the document's own unit and origin (ns since the trace's origin, as every
    /// other `start_ns`): `ts` and `dur` find the event in the file, these compare it.
    pub start_ns: i64,
    /// Its duration, ns.
    pub dur_ns: i64,
}

/// Device work by mapping over the whole window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MappingJson {
    /// `mapped_device_ns / device_ns`, in `[0, 1]` (1 without device time).
    pub gpu_time_mapped_fraction: f64,
    /// Device tasks (kernels, copies, memsets, collectives).
    pub device_tasks: u64,
    /// Their recorded time.
    pub device_ns: i64,
    /// Device time whose task maps to an op and a phase.
    pub mapped_device_ns: i64,
    /// `device_ns - mapped_device_ns`, explained in `unmapped`.
    pub unmapped_device_ns: i64,
    /// The part of the mapped work mapped by the weaker evidence of the same kernel elsewhere
    /// in the trace (work with no launching call in the trace).
    pub mapped_by_same_kernel_elsewhere: TasksNsJson,
    /// The unmapped device work, by reason; tasks and time sum to the unmapped totals.
    pub unmapped: UnmappedJson,
    /// Device time with a layer.
    pub layered_device_ns: i64,
    /// Device time by phase, every phase.
    pub device_ns_by_phase: NsMap,
    /// Device time by the evidence that decided its phase, every kind.
    pub device_ns_by_evidence: NsMap,
    /// Tasks (host and device) by phase, every phase.
    pub tasks_by_phase: Counts,
    /// Host threads found to run the autograd backward pass.
    pub backward_threads: Vec<ThreadJson>,
}

impl MappingJson {
    /// Device tasks not mapped to an op and a phase.
    pub fn unmapped_tasks(&self) -> u64 {
        self.unmapped.tasks()
    }
}

/// Unmapped device work, by cause (see [`UnmappedCause`]); each `{tasks, ns}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct UnmappedJson {
    /// No launching call in the trace, launched before the host recording began.
    pub launched_before_window: TasksNsJson,
    /// No launching call in the trace, and no sign it was launched before the window.
    pub no_launch_recorded: TasksNsJson,
    /// The launching call has no op, annotation or Python frame around it.
    pub no_op_around_launch: TasksNsJson,
    /// An op was found but nothing names the phase (outside every step).
    pub no_phase_evidence: TasksNsJson,
}

impl UnmappedJson {
    pub(super) fn new(time: &MappedTime) -> Self {
        let cause = |cause: UnmappedCause| {
            let TasksNs { tasks, ns } = time.unmapped(cause);
            TasksNsJson { tasks, ns }
        };
        UnmappedJson {
            launched_before_window: cause(UnmappedCause::LaunchedBeforeWindow),
            no_launch_recorded: cause(UnmappedCause::NoLaunchRecorded),
            no_op_around_launch: cause(UnmappedCause::NoOpAroundLaunch),
            no_phase_evidence: cause(UnmappedCause::NoPhaseEvidence),
        }
    }

    /// Unmapped tasks, every cause.
    pub fn tasks(&self) -> u64 {
        self.causes().iter().map(|(_, c)| c.tasks).sum()
    }

    /// Unmapped time, every cause.
    pub fn ns(&self) -> i64 {
        self.causes().iter().map(|(_, c)| c.ns).sum()
    }

    /// Every cause with its name, in order.
    pub fn causes(&self) -> [(&'static str, &TasksNsJson); 4] {
        [
            ("launched_before_window", &self.launched_before_window),
            ("no_launch_recorded", &self.no_launch_recorded),
            ("no_op_around_launch", &self.no_op_around_launch),
            ("no_phase_evidence", &self.no_phase_evidence),
        ]
    }
}
