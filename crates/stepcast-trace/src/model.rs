//! The normalized event model every reader produces.
//!
//! All times are `i64` nanoseconds relative to [`Trace::origin_ns`] (the earliest timestamp in
//! the file). Events are rows in vectors addressed by `u32` ids: a 1 GB Kineto file holds about
//! 4 million events, so `u32` leaves three orders of magnitude of headroom.

use std::collections::BTreeMap;
use std::num::NonZeroU64;

use rustc_hash::FxHashMap;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        pub struct $name(pub u32);

        impl $name {
            /// The id as a vector index.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// An interned string (event or lane name).
    NameId
);
id_type!(
    /// An execution lane: a CPU thread or a device stream.
    LaneId
);
id_type!(
    /// An event of [`Trace::events`].
    EventId
);

/// Interned names: kernel and op names repeat hundreds of thousands of times.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    names: Vec<Box<str>>,
    index: FxHashMap<Box<str>, NameId>,
}

impl Interner {
    pub fn intern(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = NameId(self.names.len() as u32);
        self.names.push(name.into());
        self.index.insert(name.into(), id);
        id
    }

    pub fn get(&self, id: NameId) -> &str {
        &self.names[id.index()]
    }

    pub fn lookup(&self, name: &str) -> Option<NameId> {
        self.index.get(name).copied()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// The names by id, without the index that interns them: what a reader of names only
    /// keeps (half the memory).
    pub fn names(&self) -> &[Box<str>] {
        &self.names
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// What kind of resource a lane is.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum LaneKind {
    /// A host thread: `pid`/`tid` of the process and thread.
    CpuThread,
    /// A device queue: `pid` is the device index, `tid` the stream id.
    DeviceStream,
}

/// One execution resource. Lanes are sorted (CPU threads first, then streams by device and id).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    pub kind: LaneKind,
    /// Process id for a CPU thread, device index for a stream.
    pub pid: i64,
    /// Thread id for a CPU thread, stream id for a stream.
    pub tid: i64,
    /// The thread name from the trace metadata, if any.
    pub name: Option<String>,
    /// `pid` and `tid` as the file wrote them, when it wrote strings (e.g. `"stream 7"`);
    /// `None` when they were numbers, equal to `pid` and `tid`.
    pub file_pid: Option<String>,
    pub file_tid: Option<String>,
}

/// What an event records. Containers (ops, annotations) nest; calls and device tasks do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventKind {
    /// An operator (`cpu_op`, 2021 `Operator`).
    CpuOp,
    /// A `record_function` range (`user_annotation`).
    UserAnnotation,
    /// A Python frame (`python_function`).
    PythonFunction,
    /// A runtime API call (`cuda_runtime`, 2021 `Runtime`, ROCm `hip*`, `mtia_runtime`).
    RuntimeCall,
    /// A driver API call (`cuda_driver`, e.g. `cuLaunchKernel`).
    DriverCall,
    /// A device kernel.
    Kernel,
    /// A device copy.
    Memcpy,
    /// A device memset.
    Memset,
    /// A range annotated on the device timeline (`gpu_user_annotation`).
    DeviceAnnotation,
}

impl EventKind {
    pub const ALL: [EventKind; 9] = [
        EventKind::CpuOp,
        EventKind::UserAnnotation,
        EventKind::PythonFunction,
        EventKind::RuntimeCall,
        EventKind::DriverCall,
        EventKind::Kernel,
        EventKind::Memcpy,
        EventKind::Memset,
        EventKind::DeviceAnnotation,
    ];

    /// Work that occupies a device stream.
    pub fn is_device_task(self) -> bool {
        matches!(
            self,
            EventKind::Kernel | EventKind::Memcpy | EventKind::Memset
        )
    }

    /// A host call into the accelerator runtime or driver.
    pub fn is_api_call(self) -> bool {
        matches!(self, EventKind::RuntimeCall | EventKind::DriverCall)
    }

    /// A stable snake_case name, used in reports and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::CpuOp => "cpu_op",
            EventKind::UserAnnotation => "user_annotation",
            EventKind::PythonFunction => "python_function",
            EventKind::RuntimeCall => "runtime_call",
            EventKind::DriverCall => "driver_call",
            EventKind::Kernel => "kernel",
            EventKind::Memcpy => "memcpy",
            EventKind::Memset => "memset",
            EventKind::DeviceAnnotation => "device_annotation",
        }
    }
}

/// One duration event, normalized.
///
/// 64 bytes: every stage reads the whole table (ingest puts it in order, the graph build
/// walks it), and their time follows its size. The optional numbers are never 0 where
/// present, so each takes 8 bytes (`Option<u64>` takes 16): at 96 bytes an event, reading,
/// building and self-replaying df_index_resolver missed a 2 MB cache 8 % more often
/// (cachegrind), and 128-byte events took 12 % longer than 96-byte ones. (Aligning events to
/// cache lines made the allocator hand out fresh pages for every table: 15× the page faults.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: EventKind,
    pub lane: LaneId,
    pub name: NameId,
    pub start_ns: i64,
    pub dur_ns: i64,
    /// Links a host call to the device work it launched (CUPTI/roctracer correlation id; 0
    /// means none).
    pub correlation: Option<NonZeroU64>,
    /// Links ops to the calls made inside them (`External id`).
    pub external_id: Option<NonZeroU64>,
    /// Bytes moved or set, for copies and memsets (none for 0).
    pub bytes: Option<NonZeroU64>,
    /// Autograd sequence number of an op (pairs backward ops with their forward op).
    pub sequence_number: Option<SequenceNumber>,
    /// Position of the event in the file's event array (for messages and export).
    pub file_index: u32,
}

impl Event {
    pub fn end_ns(&self) -> i64 {
        self.start_ns + self.dur_ns
    }
}

/// An autograd sequence number (0 and up), held in 8 bytes with its `Option` (see [`Event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SequenceNumber(NonZeroU64);

impl SequenceNumber {
    /// `None` for a negative number, which numbers nothing.
    pub fn new(number: i64) -> Option<Self> {
        let number = u64::try_from(number).ok()?;
        // At most `i64::MAX + 1`: no overflow.
        NonZeroU64::new(number + 1).map(SequenceNumber)
    }

    pub fn get(self) -> i64 {
        // Made from a non-negative `i64` plus one.
        (self.0.get() - 1) as i64
    }
}

/// The kind of a recorded CUDA synchronization (`cuda_sync` events, CUPTI 12+).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SyncKind {
    /// `cudaEventSynchronize` (and `cudaEventQuery`, which does not block).
    EventSync,
    /// `cudaStreamSynchronize`.
    StreamSync,
    /// `cudaDeviceSynchronize`.
    ContextSync,
    /// `cudaStreamWaitEvent`: a device-side wait of one stream on another.
    StreamWaitEvent,
}

/// A recorded synchronization: which call waited, and on what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncEvent {
    pub kind: SyncKind,
    /// Correlation id of the runtime call that performed the synchronization.
    pub correlation: u64,
    pub device: i64,
    /// The stream that waits (stream wait event, stream sync), if any.
    pub stream: Option<i64>,
    /// The stream whose work is waited for, if recorded.
    pub wait_on_stream: Option<i64>,
    /// Correlation id of the `cudaEventRecord` call that recorded the awaited event.
    pub wait_on_event_record_correlation: Option<u64>,
    pub start_ns: i64,
    pub dur_ns: i64,
}

/// A `ProfilerStep#N` range on a host thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepMarker {
    pub number: u64,
    /// The marker's name as recorded (`ProfilerStep#N`): the op of work launched in the step
    /// outside any other op.
    pub name: NameId,
    pub lane: LaneId,
    pub start_ns: i64,
    pub dur_ns: i64,
}

impl StepMarker {
    pub fn end_ns(&self) -> i64 {
        self.start_ns + self.dur_ns
    }
}

/// A change of allocated memory, from the profiler's memory tracking (`profile_memory=True`:
/// Kineto's `[memory]` instant events).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryEvent {
    pub time_ns: i64,
    /// The device whose memory changed; `-1` for host (CPU) memory.
    pub device: i64,
    /// Bytes allocated (positive) or freed (negative).
    pub bytes: i64,
    /// The allocator's total allocated bytes on the device after this change, if recorded.
    pub total_allocated: Option<i64>,
    /// The allocator's total reserved (cached) bytes on the device after this change, if recorded.
    pub total_reserved: Option<i64>,
    /// The address allocated or freed, if recorded (Kineto's `Addr`): a tensor's allocation
    /// and its free share it, which tells how long each allocation lived.
    pub addr: Option<u64>,
    /// The host thread that allocated or freed, if it has a lane in this trace.
    pub lane: Option<LaneId>,
}

/// An accelerator as described in the trace header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub id: i64,
    pub name: String,
    /// Compute capability (`computeMajor.computeMinor`), NVIDIA only.
    pub compute_capability: Option<(i64, i64)>,
    /// Multiprocessors and threads each can hold (`numSms`, `maxThreadsPerMultiprocessor`).
    pub sm_count: Option<i64>,
    pub max_threads_per_sm: Option<i64>,
    /// Device memory (`totalGlobalMem`), bytes: the default memory budget of `optimize`.
    pub memory_bytes: Option<i64>,
}

/// Which accelerator runtime recorded the device side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    Cuda,
    Rocm,
    Mtia,
    /// No device activity in the trace.
    CpuOnly,
}

impl Runtime {
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Cuda => "cuda",
            Runtime::Rocm => "rocm",
            Runtime::Mtia => "mtia",
            Runtime::CpuOnly => "cpu-only",
        }
    }
}

/// Rank information of a distributed job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DistributedInfo {
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub backend: Option<String>,
    /// The host the process ran on (Kineto's top-level `host_name`): processes of one host
    /// read one clock, so a job's ranks on it need no clock alignment between them.
    pub host_name: Option<String>,
    /// The process groups the job declared (`distributedInfo.pg_config`), in recorded order:
    /// what a collective's group name resolves to where its own record names no ranks.
    pub process_groups: Vec<ProcessGroup>,
}

/// One process group a job declared: its name (the same on every member rank), what it is for
/// where PyTorch says (`default_pg`, a subgroup's description) and its members' global ranks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessGroup {
    pub name: String,
    pub description: Option<String>,
    /// Global rank numbers, as recorded (sorted, without duplicates).
    pub ranks: Vec<i64>,
}

/// What the reader saw but did not turn into events, and other facts worth telling the user.
/// Nothing is dropped silently: every skipped record is counted here under a reason.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics {
    /// Reason → number of records skipped for it.
    pub skipped: BTreeMap<String, u64>,
    /// Facts about how the trace was read (one sentence each).
    pub notes: Vec<String>,
    /// Reason → number of args (op inputs, a collective's `dtype`) that could not be read into
    /// typed fields. Their record is still an event; only that field is unknown.
    pub args_unread: BTreeMap<String, u64>,
}

impl Diagnostics {
    pub fn skip(&mut self, reason: impl Into<String>) {
        *self.skipped.entry(reason.into()).or_insert(0) += 1;
    }

    pub fn skip_n(&mut self, reason: impl Into<String>, n: u64) {
        if n > 0 {
            *self.skipped.entry(reason.into()).or_insert(0) += n;
        }
    }

    pub fn arg_unread(&mut self, reason: &str) {
        // Looked up first: the reason is only copied the first time it is counted.
        match self.args_unread.get_mut(reason) {
            Some(n) => *n += 1,
            None => {
                self.args_unread.insert(reason.to_string(), 1);
            }
        }
    }

    pub fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    pub fn total_skipped(&self) -> u64 {
        self.skipped.values().sum()
    }
}

/// A profiled window of one process (one rank), normalized.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// Absolute time of `0` in this trace, in nanoseconds of the profiler's clock (Kineto's
    /// `baseTimeNanoseconds` included when the file has one).
    pub origin_ns: i64,
    /// What the file's own timestamps are relative to: Kineto's `baseTimeNanoseconds` (0 when
    /// absent). An event's `ts` as written, in µs, is
    /// `(origin_ns + start_ns - file_time_base_ns) / 1000`.
    pub file_time_base_ns: i64,
    pub names: Interner,
    pub lanes: Vec<Lane>,
    /// Sorted by lane, then start, then longest first (so containers precede their children).
    pub events: Vec<Event>,
    pub syncs: Vec<SyncEvent>,
    /// Sorted by start.
    pub steps: Vec<StepMarker>,
    /// Memory allocations and frees, sorted by time (file order among equal times). Times are
    /// relative to `origin_ns` like every other time, and may precede it: memory events do not
    /// move the origin.
    pub memory: Vec<MemoryEvent>,
    pub devices: Vec<DeviceInfo>,
    pub distributed: Option<DistributedInfo>,
    /// The process the trace is of, where the file holds several (an Nsight Systems capture
    /// of a multi-GPU job: one trace per process); `None` for a file of one process.
    pub process_id: Option<i64>,
    pub runtime: Option<Runtime>,
    /// Uncompressed size of the input in bytes.
    pub input_bytes: u64,
    /// Number of records in the input's event array.
    pub records: u64,
    pub diagnostics: Diagnostics,
    /// NCCL metadata of the events that carry it (`record_param_comms` ops and, in newer
    /// traces, the collective kernels themselves), sorted by event.
    pub comm_args: Vec<(EventId, CommArgs)>,
    /// Input shapes and types of the ops that record them (`record_shapes=True`), one entry
    /// per input in order, sorted by event.
    pub op_inputs: Vec<(EventId, Vec<OpInput>)>,
    /// The record-function id of the ops that record a non-zero one (Kineto's `Record function
    /// id`, written while an Execution Trace observer runs: the ET node's `rf_id`), sorted by
    /// event.
    pub record_function_ids: Vec<(EventId, u64)>,
    /// How much of its device a kernel fills, where CUPTI recorded its launch configuration,
    /// sorted by event.
    pub kernel_fill: Vec<(EventId, KernelFill)>,
    /// When traced host threads were off their CPU, from the kernel scheduler's events (a CTF
    /// trace with `sched_switch`), sorted by lane and start; empty when the trace has none.
    pub off_cpu: Vec<OffCpu>,
    /// What `ReadOptions::step_range` makes steps of in this format (`NVTX ranges`), where
    /// it applies; `None` where steps are the format's own markers only (Kineto's
    /// `ProfilerStep#N`). Said to a user whose trace has no step markers.
    pub step_range_events: Option<&'static str>,
    /// The tensors a communication library's stage moves (Horovod's timeline: a fused
    /// all-reduce carries several), sorted by event.
    pub comm_tensors: Vec<(EventId, Vec<CommTensor>)>,
    /// The point-to-point transfers of a `torch.distributed.pipelining` schedule, by the range
    /// its runtime runs each action in (`PP:1SEND_F0`), sorted by event.
    pub pipeline_transfers: Vec<(EventId, PipelineTransfer)>,
    /// Dependencies the recording states between events of different lanes (a tensor's
    /// communication stages in order, the gradient it carries, the op that consumes it),
    /// sorted by target event.
    pub links: Vec<Link>,
}

impl Trace {
    pub fn name(&self, id: NameId) -> &str {
        self.names.get(id)
    }

    pub fn lane(&self, id: LaneId) -> &Lane {
        &self.lanes[id.index()]
    }

    /// Number of events of each kind, in [`EventKind::ALL`] order.
    pub fn events_by_kind(&self) -> Vec<(EventKind, usize)> {
        let mut counts = [0usize; EventKind::ALL.len()];
        for event in &self.events {
            counts[event.kind as usize] += 1;
        }
        EventKind::ALL.iter().copied().zip(counts).collect()
    }

    /// The recorded inputs of op `event`, if it recorded them.
    pub fn inputs_of(&self, event: EventId) -> Option<&[OpInput]> {
        of_event(&self.op_inputs, event).map(Vec::as_slice)
    }

    /// The pipeline transfer the range `event` runs, if it is one.
    pub fn pipeline_transfer(&self, event: EventId) -> Option<PipelineTransfer> {
        of_event(&self.pipeline_transfers, event).copied()
    }

    /// The record-function id of op `event`, if it recorded a non-zero one.
    pub fn record_function_id(&self, event: EventId) -> Option<u64> {
        of_event(&self.record_function_ids, event).copied()
    }

    /// The range of `events` that lies on `lane` (events are sorted by lane).
    pub fn lane_events(&self, lane: LaneId) -> &[Event] {
        let lo = self.events.partition_point(|e| e.lane < lane);
        let hi = self.events.partition_point(|e| e.lane <= lane);
        &self.events[lo..hi]
    }
}

/// The entry of a side table sorted by event (`Trace::op_inputs` and the like) for `event`.
fn of_event<T>(table: &[(EventId, T)], event: EventId) -> Option<&T> {
    let i = table.binary_search_by_key(&event, |(e, _)| *e).ok()?;
    Some(&table[i].1)
}

/// Why a host thread was off its CPU, as the scheduler's `sched_switch` said.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OffCpuReason {
    /// Switched out while runnable (`prev_state` R): another thread took its CPU; it waited
    /// for a CPU until it ran again.
    Preempted,
    /// Switched out asleep (`prev_state` S, D, ...): it waited (a lock, I/O, a condition)
    /// until a wakeup, then for a CPU.
    Blocked,
}

impl OffCpuReason {
    pub fn as_str(self) -> &'static str {
        match self {
            OffCpuReason::Preempted => "preempted",
            OffCpuReason::Blocked => "blocked",
        }
    }
}

/// A thread the scheduler named (`sched_switch`'s `next_tid`/`next_comm`, a waker).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadRef {
    pub tid: i64,
    pub name: String,
}

/// An interval when a traced host thread was not running.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffCpu {
    pub lane: LaneId,
    pub start_ns: i64,
    pub dur_ns: i64,
    pub reason: OffCpuReason,
    /// The thread its CPU switched to when it left.
    pub next: Option<ThreadRef>,
    /// A blocked thread's wakeup (`sched_waking`/`sched_wakeup`): when it became runnable,
    /// and the thread that woke it, where the trace says.
    pub wakeup_ns: Option<i64>,
    pub waker: Option<ThreadRef>,
}

impl OffCpu {
    pub fn end_ns(&self) -> i64 {
        self.start_ns + self.dur_ns
    }
}

/// A tensor handed to a communication library, as its timeline names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommTensor {
    /// The library's name for it (Horovod: `allreduce.fc1.weight`).
    pub name: String,
    /// Sizes, where recorded.
    pub shape: Option<Vec<i64>>,
    pub dtype: Option<Dtype>,
    /// The partition of the tensor a stage moves, where the library cuts tensors (BytePS:
    /// the low 16 bits of its key); `None` for a stage of the whole tensor.
    pub partition: Option<u32>,
}

impl CommTensor {
    /// Bytes of the tensor, where its shape and type are known.
    pub fn bytes(&self) -> Option<i64> {
        shape_elements(self.shape.as_deref()?)?.checked_mul(self.dtype?.bytes())
    }
}

/// Why one event waits for another, as the recording states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LinkKind {
    /// The next stage of a tensor's communication (negotiate → fusion-buffer copy →
    /// all-reduce → copy out, Horovod's per-tensor timeline).
    CommStage,
    /// The op that produced a gradient → the negotiation of its all-reduce, which ends once
    /// every rank's gradient is ready (it may begin earlier, at another rank's request).
    GradientReady,
    /// The op that produced a gradient → the first stage of each of its partitions, which
    /// begins when the gradient is handed to the library (BytePS enqueues it from the
    /// gradient's hook).
    GradientEnqueued,
    /// The last stage of an all-reduce → the first op that reads the reduced tensor.
    ReducedTensorUsed,
    /// An op → an op of another thread or device that takes its output (TensorFlow's
    /// `Timeline` `DataFlow` flows).
    DataFlow,
}

/// `to` waits for `from` to end: to begin (`CommStage`, `GradientEnqueued`, `DataFlow`), or to complete (the others: the
/// task holding `to` may have begun and blocks until then).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link {
    pub to: EventId,
    pub from: EventId,
    pub kind: LinkKind,
}

/// The element type of a tensor (PyTorch's scalar types). Readers map their format's
/// spellings onto it (Kineto: `kineto/inputs.rs`); the core only asks for its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dtype {
    Bool,
    UInt8,
    Int8,
    UInt16,
    Int16,
    UInt32,
    Int32,
    UInt64,
    Int64,
    /// Any of the 8-bit floats (`Float8_e4m3fn`, `Float8_e5m2`, ...).
    Float8,
    Float16,
    BFloat16,
    Float32,
    Float64,
    /// Complex of two `Float16`.
    Complex32,
    Complex64,
    Complex128,
}

impl Dtype {
    /// Bytes per element.
    pub fn bytes(self) -> i64 {
        match self {
            Dtype::Bool | Dtype::UInt8 | Dtype::Int8 | Dtype::Float8 => 1,
            Dtype::UInt16 | Dtype::Int16 | Dtype::Float16 | Dtype::BFloat16 => 2,
            Dtype::UInt32 | Dtype::Int32 | Dtype::Float32 | Dtype::Complex32 => 4,
            Dtype::UInt64 | Dtype::Int64 | Dtype::Float64 | Dtype::Complex64 => 8,
            Dtype::Complex128 => 16,
        }
    }
}

/// One input of an op as the profiler recorded it (`record_shapes=True`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OpInput {
    /// A tensor: its sizes as recorded (`[]`: a 0-dim tensor, one element) and its element
    /// type (`None`: a type name the reader does not know).
    Tensor {
        shape: Vec<i64>,
        dtype: Option<Dtype>,
    },
    /// A list of tensors (`_foreach_` ops, `cat`): each tensor's sizes. Profilers record no
    /// element type for a list.
    TensorList(Vec<Vec<i64>>),
    /// A number (`Scalar`, `Int`, `Double`, `Bool`) whose value is not an integer recorded
    /// by value.
    Scalar,
    /// An integer recorded by value (`Concrete Inputs`, newer PyTorch): a convolution's
    /// `groups`.
    Int(i64),
    /// A boolean recorded by value (`Concrete Inputs` `True`/`False`): an attention op's
    /// `is_causal`.
    Bool(bool),
    /// A list of integers recorded by value (`Concrete Inputs` of a `ScalarList`): a
    /// convolution's strides, padding and dilation.
    Ints(Vec<i64>),
    /// Anything else: an absent optional tensor, a list of numbers, a string, or an input
    /// whose record could not be read as a shape (counted in `Diagnostics::args_unread`).
    Other,
}

impl OpInput {
    /// Elements of a tensor input (`None` for other inputs, or a shape with a negative size or
    /// a product past `i64`).
    pub fn elements(&self) -> Option<i64> {
        match self {
            OpInput::Tensor { shape, .. } => shape_elements(shape),
            _ => None,
        }
    }

    /// Elements of a tensor or of every tensor of a list (`None` for other inputs, or a shape
    /// with a negative size or a sum past `i64`).
    pub fn tensor_elements(&self) -> Option<i64> {
        match self {
            OpInput::TensorList(shapes) => shapes
                .iter()
                .try_fold(0i64, |sum, shape| sum.checked_add(shape_elements(shape)?)),
            other => other.elements(),
        }
    }

    /// Bytes of a tensor input of known type (elements × bytes per element, checked).
    pub fn bytes(&self) -> Option<i64> {
        match self {
            OpInput::Tensor {
                dtype: Some(dtype), ..
            } => self.elements()?.checked_mul(dtype.bytes()),
            _ => None,
        }
    }
}

/// Elements of a tensor of sizes `shape`: their product (1 for `[]`), `None` when a size is
/// negative or the product overflows `i64` (a hostile or corrupt shape).
pub fn shape_elements(shape: &[i64]) -> Option<i64> {
    shape.iter().try_fold(1i64, |acc, &size| {
        if size < 0 {
            None
        } else {
            acc.checked_mul(size)
        }
    })
}

/// One side of a transfer between pipeline stages, as `torch.distributed.pipelining`'s
/// schedule runtime names the range it runs it in: `PP:` and the action (`_Action`'s form:
/// the stage index, `SEND_F`, `RECV_F`, `SEND_B` or `RECV_B`, the microbatch index), e.g.
/// `PP:1SEND_F0`, stage 1 sending microbatch 0's activations to stage 2. Stages are the
/// schedule's (virtual) stages, several a rank under an interleaved schedule; a forward
/// transfer goes from stage s to s + 1, a backward one from s to s − 1.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct PipelineTransfer {
    pub stage: u32,
    pub sends: bool,
    /// Activations (forward), else their gradients (backward).
    pub forward: bool,
    pub microbatch: u32,
}

impl PipelineTransfer {
    /// From a range's name, where it is a pipeline transfer's.
    pub fn parse(name: &str) -> Option<PipelineTransfer> {
        let action = name.strip_prefix("PP:")?;
        let digits = action.bytes().take_while(u8::is_ascii_digit).count();
        let stage = action[..digits].parse().ok()?;
        let rest = &action[digits..];
        let (sends, forward, microbatch) = [
            ("SEND_F", true, true),
            ("RECV_F", false, true),
            ("SEND_B", true, false),
            ("RECV_B", false, false),
        ]
        .into_iter()
        .find_map(|(kind, sends, forward)| {
            let microbatch = rest.strip_prefix(kind)?;
            // Digits only: `parse` would take a sign too.
            if !microbatch.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            Some((sends, forward, microbatch.parse().ok()?))
        })?;
        Some(PipelineTransfer {
            stage,
            sends,
            forward,
            microbatch,
        })
    }

    /// Whether `receive` is the other side of this send: the next stage's (the previous one's,
    /// backward) receive of the same microbatch's same tensor.
    pub fn pairs_with(&self, receive: &PipelineTransfer) -> bool {
        let next = if self.forward {
            self.stage.checked_add(1)
        } else {
            self.stage.checked_sub(1)
        };
        self.sends
            && !receive.sends
            && self.forward == receive.forward
            && self.microbatch == receive.microbatch
            && next == Some(receive.stage)
    }
}

/// The NCCL metadata PyTorch writes in the `args` of `record_param_comms` (and of the NCCL
/// kernels, in newer traces). Only what the collective cost models read is kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommArgs {
    /// `Collective name` (`allreduce`, `allgather`, `broadcast`, ...), as written.
    pub collective: Option<String>,
    /// `In msg nelems` and `Out msg nelems`: elements sent and received by this rank.
    pub in_nelems: Option<i64>,
    pub out_nelems: Option<i64>,
    /// `Group size`: ranks in the process group.
    pub group_size: Option<i64>,
    /// `dtype` (`Float`, `BFloat16`, ...); `None` when absent or of a spelling the reader does
    /// not know (counted in `Diagnostics::args_unread`).
    pub dtype: Option<Dtype>,
    /// `Process Group Name` (or `pg_name`).
    pub process_group: Option<String>,
    /// `Seq` (newer PyTorch): the collective's sequence number within its process group, the
    /// same on every member rank; what matches one collective across ranks.
    pub seq: Option<i64>,
    /// `Process Group Ranks` (newer PyTorch): the group's members' global ranks (sorted,
    /// without duplicates); what a collective waits for.
    pub group_ranks: Option<Vec<i64>>,
}

/// A kernel's launch configuration as CUPTI summarizes it: `warps per SM` (its warps over the
/// device's multiprocessors) and `est. achieved occupancy %` (the share of a multiprocessor's
/// warp slots its resident blocks fill).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KernelFill {
    pub warps_per_sm: f64,
    pub occupancy_pct: f64,
    /// Blocks launched (the grid's product), where recorded: a multi-tensor kernel's blocks
    /// count the chunks of the tensors it updates.
    pub blocks: Option<u64>,
}

/// Where a copy moves its bytes, from its name (CUPTI's `Memcpy HtoD (Pinned -> Device)`,
/// which Kineto keeps on CUDA and ROCm alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyDirection {
    HostToDevice,
    DeviceToHost,
    /// Within one device: run by the device's multiprocessors, like a kernel.
    DeviceToDevice,
    /// Between two devices.
    PeerToPeer,
    HostToHost,
    Unknown,
}

impl CopyDirection {
    /// The direction a copy event's name gives.
    pub fn of_copy(name: &str) -> CopyDirection {
        let Some(rest) = name.strip_prefix("Memcpy ") else {
            return CopyDirection::Unknown;
        };
        match rest.get(..4) {
            Some("HtoD") => CopyDirection::HostToDevice,
            Some("DtoH") => CopyDirection::DeviceToHost,
            Some("DtoD") => CopyDirection::DeviceToDevice,
            Some("PtoP") => CopyDirection::PeerToPeer,
            Some("HtoH") => CopyDirection::HostToHost,
            _ => CopyDirection::Unknown,
        }
    }
}

impl KernelFill {
    /// How many times over its resident blocks fill the device (waves): more than 1 means it
    /// holds every multiprocessor until its last wave. `None` when the occupancy is 0 or
    /// unknown. `max_warps_per_sm` is the device's (`maxThreadsPerMultiprocessor / 32`).
    pub fn waves(&self, max_warps_per_sm: f64) -> Option<f64> {
        let resident = self.occupancy_pct / 100.0 * max_warps_per_sm;
        (resident > 0.0 && self.warps_per_sm.is_finite() && self.warps_per_sm >= 0.0)
            .then(|| self.warps_per_sm / resident)
    }
}

impl CommArgs {
    /// Bytes per element of `dtype`, if known.
    pub fn dtype_bytes(&self) -> Option<i64> {
        self.dtype.map(Dtype::bytes)
    }

    /// The larger of the input and output message, in bytes, if both size and type are known.
    pub fn bytes(&self) -> Option<i64> {
        let nelems = self.in_nelems.max(self.out_nelems)?;
        nelems.checked_mul(self.dtype_bytes()?)
    }
}

#[cfg(test)]
mod tests {
    use super::{Event, SequenceNumber};

    /// The event table's row stays at 64 bytes (see [`Event`]): a field that grows it is a
    /// cost every stage pays.
    #[test]
    fn an_event_is_64_bytes() {
        assert_eq!(std::mem::size_of::<Event>(), 64);
    }

    #[test]
    fn sequence_numbers_round_trip_and_negatives_are_none() {
        for n in [0, 1, 41, i64::MAX - 1, i64::MAX] {
            assert_eq!(SequenceNumber::new(n).map(SequenceNumber::get), Some(n));
        }
        for n in [-1, i64::MIN] {
            assert_eq!(SequenceNumber::new(n), None);
        }
        assert!(SequenceNumber::new(3) < SequenceNumber::new(4));
    }
}
