//! Raw Kineto records → checked, normalized [`Trace`] rows.

use std::collections::BTreeSet;
use std::num::NonZeroU64;

use rustc_hash::FxHashMap;

use super::clues::{Clues, Lookalike};
use super::lower;
use super::raw::{Int, LaneNumber, RawArgs, RawDevice, RawDistributed, RawEvent, RawText};

/// What a record whose name is not UTF-8 was expected to hold.
const NOT_UTF8: &str = "a UTF-8 name";

/// Fails for a name that is not UTF-8.
fn check_utf8(name: Option<&[u8]>) -> Result<(), &'static str> {
    match name {
        Some(name) if !name.is_ascii() && std::str::from_utf8(name).is_err() => Err(NOT_UTF8),
        _ => Ok(()),
    }
}
use crate::model::{
    DeviceInfo, Diagnostics, DistributedInfo, Event, EventKind, Interner, Lane, LaneId, LaneKind,
    MemoryEvent, ProcessGroup, Runtime, SequenceNumber, StepMarker, SyncEvent, SyncKind, Trace,
};

/// A lane as the reader keys it: kind, pid (device for streams), tid (stream for streams).
type LaneKey = (LaneKind, i64, i64);

/// A lane's pid and tid as the file wrote them, where it wrote strings.
type FileIds = (Option<String>, Option<String>);

/// An event that lacks its correlation id, to be recovered from a launch flow.
struct FlowLookup {
    /// Position in `TraceBuilder::events`.
    index: u32,
    /// `pid`/`tid` as written, to match flow events.
    raw_pid: i64,
    raw_tid: i64,
}

/// A `[memory]` instant event before times are made relative and its thread gets a lane.
struct PendingMemory {
    raw_pid: i64,
    raw_tid: i64,
    time_abs_ns: i64,
    device: i64,
    bytes: i64,
    total_allocated: Option<i64>,
    total_reserved: Option<i64>,
    addr: Option<u64>,
}

struct PendingStep {
    number: u64,
    name: crate::model::NameId,
    lane: (LaneKind, i64, i64),
    start_abs_ns: i64,
    dur_ns: i64,
}

#[derive(Default)]
pub struct TraceBuilder {
    names: Interner,
    /// `names` by the names' bytes (see `intern_name`).
    name_ids: FxHashMap<Box<[u8]>, crate::model::NameId>,
    /// Accepted duration events in file order, as final rows except that `lane` is a slot of
    /// `lane_keys` and `start_ns` is absolute: `finish` numbers the lanes, makes times relative
    /// and puts them in order in place. One vector, written once: on this machine a fresh
    /// megabyte costs about 0.5 ms in page faults, and per-lane storage copied into a final
    /// vector touched twice the memory (20 % of ingest).
    events: Vec<Event>,
    /// Each event's place in its lane (`start_then_longest`), beside `events`: `finish`
    /// sorts a lane's positions on these, read from a table a quarter the size of the
    /// events' (gathered from 96-byte events, they cost 2.4 % of ingest).
    order_keys: Vec<u128>,
    /// Lane keys by slot, in the order lanes first appear.
    lane_keys: Vec<LaneKey>,
    /// By slot: the positions of the lane's events in `events`, and whether they are in the
    /// trace's order (start, then longest first; file order breaks ties by construction).
    lane_rows: Vec<(Vec<u32>, bool)>,
    lane_slots: FxHashMap<LaneKey, u32>,
    /// The last lane looked up: consecutive records often share one.
    last_lane: Option<(LaneKey, u32)>,
    flow_lookups: Vec<FlowLookup>,
    /// The earliest start in `events`, kept as they come (a pass over the table at the end
    /// cost 0.7 ms of 80).
    events_min_start_ns: Option<i64>,
    syncs: Vec<SyncEvent>,
    steps: Vec<PendingStep>,
    /// `ReadOptions::step_range`: the host ops and annotations it matches are the steps,
    /// numbered in start order, instead of the `ProfilerStep#N` markers.
    step_range: Option<regex::Regex>,
    memory: Vec<PendingMemory>,
    /// Launch flows: (pid, tid, ts) of the flow's end → flow id. Kineto's flow id is the
    /// correlation id, so these recover correlations that `args` lack.
    /// Kept as a list and indexed only if some event lacks its correlation: most traces carry
    /// it in `args`, and hashing every flow cost 2 % of ingest.
    flow_ends: Vec<((i64, i64, i64), NonZeroU64)>,
    fwdbwd_flows: u64,
    thread_names: FxHashMap<(i64, i64), String>,
    /// Per lane, its pid and tid as the file wrote them, where it wrote strings (2021 traces:
    /// `"tid": "stream 7"`).
    lane_labels: FxHashMap<LaneKey, FileIds>,
    devices: Vec<DeviceInfo>,
    distributed: Option<DistributedInfo>,
    /// `host_name` read before `distributedInfo`.
    host_name: Option<String>,
    diagnostics: Diagnostics,
    records: u64,
    /// `baseTimeNanoseconds`: add to every `ts` for the profiler's clock (0 if absent).
    base_time_ns: i64,
    saw_hip: bool,
    saw_mtia: bool,
    /// NCCL metadata by the record's index in the file (see `Trace::comm_args`).
    comm_args: Vec<(u32, crate::model::CommArgs)>,
    /// Kernel launch configurations by the record's index in the file (`Trace::kernel_fill`).
    kernel_fill: Vec<(u32, crate::model::KernelFill)>,
    /// Op input shapes by the record's index in the file (see `Trace::op_inputs`).
    op_inputs: Vec<(u32, Vec<crate::model::OpInput>)>,
    /// Ops' record-function ids by the record's index in the file.
    record_function_ids: Vec<(u32, u64)>,
    pipeline_transfers: Vec<(u32, crate::model::PipelineTransfer)>,
    /// The latest end in `events`, kept as they come (see [`TraceBuilder::span_ns`]).
    events_max_end_ns: Option<i64>,
    /// CUPTI range-profiler records kept as device work.
    range_profiler_events: u64,
    /// The event array ended with the file, without its `]`.
    unterminated: bool,
    clues: Clues,
}

/// The largest duration taken as recorded: 2^50 ns, 13 days. A profiled window lasts seconds
/// to minutes; a longer `dur` is a corrupt or foreign value, and taking it would carry values
/// near `i64::MAX` into every sum the replay makes.
pub const MAX_DUR_NS: i64 = 1 << 50;

/// Timestamps (after `baseTimeNanoseconds`) are taken from -2^60 to 2^62 ns: a Unix-epoch clock
/// reads 2^60.6 ns today, and 2^62 is the year 2116. Within these bounds every difference of
/// two timestamps, plus a duration, fits an `i64`.
const MIN_TS_NS: i64 = -(1 << 60);
const MAX_TS_NS: i64 = 1 << 62;

fn plausible_ts(ts_ns: i64) -> bool {
    (MIN_TS_NS..=MAX_TS_NS).contains(&ts_ns)
}

/// Up to this size the event table is put in order in place; beyond it, into a new table. In
/// place touches no new memory, which pays while the table fits in the caches.
const IN_PLACE_MAX_BYTES: usize = 32 << 20;

/// An event's place in its lane as one number: by start, then longest first (so a container
/// precedes what it contains); orders as `(start_ns, Reverse(dur_ns))` does.
fn start_then_longest(start_ns: i64, dur_ns: i64) -> u128 {
    // Flipping the sign bit maps i64 onto u64 in order; the duration's bits are inverted too.
    let start = (start_ns as u64) ^ (1 << 63);
    let longest = !((dur_ns as u64) ^ (1 << 63));
    (u128::from(start) << 64) | u128::from(longest)
}

/// `items` in `order` (`items[k]` becomes the old `items[order[k]]`), each passed through `fix`
/// once on its way rather than in a pass of its own over the table.
fn put_in_order<T: Clone>(
    mut items: Vec<T>,
    order: Vec<u32>,
    in_place: bool,
    mut fix: impl FnMut(&mut T),
) -> Vec<T> {
    if in_place {
        permute_in_place(&mut items, order, fix);
        items
    } else {
        // Read in order into a new table: the reads are independent (and, within a lane,
        // ascending), where following the permutation's cycles waits on one cache miss after
        // another (1 GB of JSON: 0.26 s here against 0.52 s in place).
        order
            .iter()
            .map(|&i| {
                let mut item = items[i as usize].clone();
                fix(&mut item);
                item
            })
            .collect()
    }
}

/// Puts `items` in `order` following each cycle of the permutation: the cycle's first item is
/// held aside and every other moves once, straight to its place (swapping it along the
/// cycle wrote each item twice), and nothing the size of `items` is allocated. With the
/// fix-up folded in, `finish` took 2.7 ms less of a 78 ms read of df_index_resolver (the
/// profile's samples, 60 reads).
fn permute_in_place<T: Clone>(items: &mut [T], mut order: Vec<u32>, mut fix: impl FnMut(&mut T)) {
    debug_assert_eq!(items.len(), order.len());
    // Positions whose item is in place and fixed.
    const DONE: u32 = u32::MAX;
    for start in 0..order.len() {
        let first = order[start];
        if first == DONE {
            continue;
        }
        order[start] = DONE;
        if first as usize == start {
            fix(&mut items[start]);
            continue;
        }
        let mut held = items[start].clone();
        fix(&mut held);
        let mut at = start;
        let mut from = first as usize;
        while from != start {
            let mut item = items[from].clone();
            fix(&mut item);
            items[at] = item;
            at = from;
            from = std::mem::replace(&mut order[at], DONE) as usize;
        }
        items[at] = held;
    }
}

/// An id; 0 and negative values mean "none" (2021 traces write `"external id": 0`).
fn positive(int: Option<Int>) -> Option<NonZeroU64> {
    int.and_then(Int::get)
        .and_then(|v| u64::try_from(v).ok())
        .and_then(NonZeroU64::new)
}

/// The NCCL metadata of an event's `args`.
fn comm_args(
    args: &RawArgs,
    diagnostics: &mut crate::model::Diagnostics,
) -> crate::model::CommArgs {
    let dtype = args.dtype.as_deref().and_then(|name| {
        let dtype = super::inputs::dtype_of_name(name);
        if dtype.is_none() {
            diagnostics.arg_unread("collective `dtype`s not in the dtype table");
        }
        dtype
    });
    crate::model::CommArgs {
        collective: args.collective_name.as_deref().map(str::to_string),
        in_nelems: args.in_msg_nelems.and_then(Int::get),
        out_nelems: args.out_msg_nelems.and_then(Int::get),
        group_size: args.group_size.and_then(Int::get),
        dtype,
        process_group: args.pg_name.as_deref().map(str::to_string),
        seq: args.comm_seq.and_then(Int::get),
        group_ranks: args.pg_ranks.and_then(|raw| {
            let ranks = rank_list(raw.0);
            // `[]`: PyTorch's record of a collective outside any group (a size-1 group).
            let empty = matches!(raw.0.trim(), "[]" | "\"[]\"");
            if ranks.is_none() && !empty {
                diagnostics.arg_unread("`Process Group Ranks` that are not a list of ranks");
            }
            ranks
        }),
    }
}

/// A list of global ranks as PyTorch writes it: a JSON list, or a string holding one
/// (`"[0, 1]"`), sorted and without duplicates. `None` where it is not one (an empty list is
/// not a group either).
fn rank_list(raw: &str) -> Option<Vec<i64>> {
    let text: std::borrow::Cow<'_, str> = match serde_json::from_str::<String>(raw) {
        Ok(inner) => inner.into(),
        Err(_) => raw.into(),
    };
    let mut ranks = serde_json::from_str::<Vec<i64>>(text.trim()).ok()?;
    ranks.sort_unstable();
    ranks.dedup();
    (!ranks.is_empty() && ranks.iter().all(|&r| r >= 0)).then_some(ranks)
}

/// The groups of `distributedInfo.pg_config` (a list of `{pg_name, pg_desc, ranks}`), with
/// how many entries could not be read as one.
fn process_groups(config: Option<&serde_json::Value>) -> (Vec<ProcessGroup>, usize) {
    let Some(entries) = config.and_then(serde_json::Value::as_array) else {
        return (Vec::new(), usize::from(config.is_some()));
    };
    let mut groups = Vec::new();
    let mut unread = 0;
    for entry in entries {
        let name = entry.get("pg_name").and_then(|n| match n {
            serde_json::Value::String(s) => Some(s.clone()),
            serde_json::Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
        let ranks = entry.get("ranks").and_then(|r| rank_list(&r.to_string()));
        match (name, ranks) {
            (Some(name), Some(ranks)) => groups.push(ProcessGroup {
                name,
                description: entry
                    .get("pg_desc")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string),
                ranks,
            }),
            _ => unread += 1,
        }
    }
    (groups, unread)
}

/// `-1` means "none" in Kineto's sync records.
fn non_negative(int: Option<Int>) -> Option<i64> {
    int.and_then(Int::get).filter(|&v| v >= 0)
}

impl TraceBuilder {
    /// Steps will be the host ops and annotations `pattern` matches (`train_step` ranges of a
    /// program that never called `prof.step()`), numbered from 0 in start order, instead of
    /// the `ProfilerStep#N` markers; each is kept as nothing else, as a marker is.
    pub fn steps_from_ranges(&mut self, pattern: Option<&regex::Regex>) {
        self.step_range = pattern.cloned();
    }

    /// Reserves the event table (and the launch flows, and the memory events) for an input of
    /// about `bytes` bytes of JSON. Reserved but untouched memory costs address space, not
    /// RAM: the estimate is generous (a Kineto record takes 100 to 400 bytes of JSON, one every
    /// 200 is assumed) so that the tables are not reallocated, which would copy them and touch
    /// twice their memory.
    pub fn expect_bytes(&mut self, bytes: u64) {
        const JSON_BYTES_PER_RECORD: u64 = 200;
        // Beyond this the hint is not trusted (a gzip size is only known modulo 4 GiB anyway).
        const MAX_RESERVED_RECORDS: u64 = 1 << 26;
        let records = (bytes / JSON_BYTES_PER_RECORD).min(MAX_RESERVED_RECORDS) as usize;
        // A hint that cannot be honoured is ignored: the table then grows as it fills.
        let _ = self.events.try_reserve(records);
        let _ = self.order_keys.try_reserve(records);
        let _ = self.flow_ends.try_reserve(records);
        let _ = self.memory.try_reserve(records / 4);
    }

    pub fn devices(&mut self, devices: Vec<RawDevice>) {
        self.devices = devices
            .into_iter()
            .enumerate()
            .map(|(i, d)| DeviceInfo {
                id: d.id.and_then(Int::get).unwrap_or(i as i64),
                name: d.name.unwrap_or_default(),
                compute_capability: d
                    .compute_major
                    .and_then(Int::get)
                    .zip(d.compute_minor.and_then(Int::get)),
                sm_count: d.num_sms.and_then(Int::get).filter(|&n| n > 0),
                max_threads_per_sm: d.max_threads_per_sm.and_then(Int::get).filter(|&n| n > 0),
                memory_bytes: d.total_global_mem.and_then(Int::get).filter(|&n| n > 0),
            })
            .collect();
    }

    /// Since 2023 Kineto writes `ts` relative to a base time recorded once per process.
    pub fn base_time(&mut self, base_ns: Option<i64>) {
        self.base_time_ns = base_ns.unwrap_or(0);
    }

    pub fn distributed(&mut self, info: Option<RawDistributed>) {
        self.distributed = info.map(|d| {
            let (process_groups, unread) = process_groups(d.pg_config.as_ref());
            if unread > 0 {
                self.diagnostics.note(format!(
                    "{unread} entries of `distributedInfo.pg_config` are not a process group \
                     with a name and ranks: left out"
                ));
            }
            DistributedInfo {
                rank: d.rank.and_then(Int::get),
                world_size: d.world_size.and_then(Int::get),
                backend: d.backend,
                host_name: self.host_name.take(),
                process_groups,
            }
        });
    }

    /// Kineto's top-level `host_name`, kept with `distributedInfo` (whichever comes first).
    pub fn host_name(&mut self, name: Option<String>) {
        let name = name.filter(|n| !n.trim().is_empty());
        match &mut self.distributed {
            Some(info) => info.host_name = name,
            None => self.host_name = name,
        }
    }

    /// Takes one record. Fails (saying what was expected) only where the record's name is not
    /// UTF-8: the reader leaves that check to the name's first use, here.
    pub fn push(&mut self, raw: &RawEvent, file_index: u32) -> Result<(), &'static str> {
        self.records += 1;
        let Some(ph) = raw.ph.as_deref() else {
            self.diagnostics.skip("records without a `ph` phase");
            return Ok(());
        };
        let name = raw.name.as_ref().map(RawText::as_bytes);
        if ph == "X" {
            // Interning checks the name, once per distinct name.
            if !self.duration_event(raw, file_index)? {
                check_utf8(name)?;
            }
            return Ok(());
        }
        check_utf8(name)?;
        match ph {
            "s" | "f" | "t" => self.flow_event(raw, ph),
            "M" => self.metadata(raw),
            "i" | "I" if name == Some(b"[memory]") => self.memory_event(raw),
            "i" | "I" => {
                let reason = match raw.cat.as_deref() {
                    Some("cpu_instant_event") => "CPU instant events",
                    _ => {
                        self.clues.look(raw);
                        "instant markers (profiler window start/end)"
                    }
                };
                self.diagnostics.skip(reason);
            }
            other => {
                self.clues.look(raw);
                self.diagnostics
                    .skip(format!("records with phase `{other}`"));
            }
        }
        Ok(())
    }

    /// Takes a duration event; says whether its name was checked as UTF-8 (it is where the
    /// event is kept or is a step marker).
    fn duration_event(&mut self, raw: &RawEvent, file_index: u32) -> Result<bool, &'static str> {
        let cat = lower(raw.cat.as_deref().unwrap_or(""));
        let kind = match cat.as_ref() {
            "cpu_op" | "operator" => EventKind::CpuOp,
            "user_annotation" => EventKind::UserAnnotation,
            "python_function" => EventKind::PythonFunction,
            "cuda_runtime" | "runtime" => EventKind::RuntimeCall,
            "mtia_runtime" => {
                self.saw_mtia = true;
                EventKind::RuntimeCall
            }
            "cuda_driver" => EventKind::DriverCall,
            "kernel" => EventKind::Kernel,
            "mtia_ccp_events" => {
                self.saw_mtia = true;
                EventKind::Kernel
            }
            "gpu_memcpy" | "memcpy" => EventKind::Memcpy,
            "gpu_memset" | "memset" => EventKind::Memset,
            "gpu_user_annotation" => EventKind::DeviceAnnotation,
            "cuda_sync" => {
                self.sync_event(raw);
                return Ok(false);
            }
            // CUPTI's range profiler (Kineto's `CUDA_PROFILER_RANGE` activity) writes one
            // record per kernel or range it measured, on the device: device work, though its
            // times are Kineto's even split of the profiled span (noted in `finish`).
            "cuda_profiler_range" => {
                self.range_profiler_events += 1;
                EventKind::Kernel
            }
            "trace" => return self.skipped("profiler window spans (`Trace`)"),
            "overhead" => return self.skipped("profiler overhead ranges"),
            "" => {
                self.clues.look(raw);
                return self.skipped("duration events without a category");
            }
            other => {
                self.clues.look(raw);
                return self.skipped(format!("events of unknown category `{other}`"));
            }
        };
        let Some(start_abs_ns) = raw.ts.and_then(|t| t.get()) else {
            return self.skipped("events without a valid `ts`");
        };
        if !plausible_ts(start_abs_ns) {
            return self.skipped("events with an absurd `ts` (before 1933 or after 2116)");
        }
        let dur_ns = match raw.dur.and_then(|d| d.get()) {
            Some(d) if d > MAX_DUR_NS => {
                return self.skipped("events with an absurd `dur` (over 13 days)");
            }
            Some(d) if d >= 0 => d,
            _ => {
                return self.skipped("events with a missing or negative `dur`");
            }
        };
        let (Some(raw_pid), Some(raw_tid)) = (
            raw.pid.as_ref().and_then(LaneNumber::get),
            raw.tid.as_ref().and_then(LaneNumber::get),
        ) else {
            return self.skipped(format!(
                "{} events with a non-numeric pid or tid",
                kind.as_str()
            ));
        };
        let empty = RawArgs::default();
        let args = raw.args.as_ref().unwrap_or(&empty);
        let on_device = kind.is_device_task() || kind == EventKind::DeviceAnnotation;
        let lane = if on_device {
            let device = args.device.and_then(Int::get).unwrap_or(raw_pid);
            let stream = args
                .stream
                .or(args.stream_id)
                .and_then(Int::get)
                .unwrap_or(raw_tid);
            (LaneKind::DeviceStream, device, stream)
        } else {
            (LaneKind::CpuThread, raw_pid, raw_tid)
        };
        let labels = (
            raw.pid.as_ref().and_then(LaneNumber::label),
            raw.tid.as_ref().and_then(LaneNumber::label),
        );
        if labels != (None, None) && !self.lane_labels.contains_key(&lane) {
            let owned = (labels.0.map(str::to_string), labels.1.map(str::to_string));
            self.lane_labels.insert(lane, owned);
        }
        let name = raw.name.as_ref().map_or(&b""[..], RawText::as_bytes);
        let host_range = matches!(kind, EventKind::CpuOp | EventKind::UserAnnotation)
            && lane.0 == LaneKind::CpuThread;
        if let Some(pattern) = self.step_range.as_ref().filter(|_| host_range) {
            let text = std::str::from_utf8(name).map_err(|_| NOT_UTF8)?;
            if pattern.is_match(text) {
                let name = self.intern_name(name)?;
                self.steps.push(PendingStep {
                    // Numbered in start order by `finish`.
                    number: 0,
                    name,
                    lane,
                    start_abs_ns,
                    dur_ns,
                });
                return Ok(true);
            }
            // The markers the pattern replaces are dropped, as they are when read.
            if name.starts_with(b"ProfilerStep#") {
                return Ok(true);
            }
        } else if let (EventKind::CpuOp | EventKind::UserAnnotation, Some(number)) =
            (kind, name.strip_prefix(b"ProfilerStep#"))
        {
            let number = std::str::from_utf8(number).map_err(|_| NOT_UTF8)?;
            match number.trim().parse() {
                Ok(number) => {
                    let name = self.intern_name(name)?;
                    self.steps.push(PendingStep {
                        number,
                        name,
                        lane,
                        start_abs_ns,
                        dur_ns,
                    });
                }
                Err(_) => self
                    .diagnostics
                    .skip("`ProfilerStep#` markers without a step number"),
            }
            return Ok(true);
        }
        if kind == EventKind::RuntimeCall && name.starts_with(b"hip") {
            self.saw_hip = true;
        }
        let name = self.intern_name(name)?;
        if args.collective_name.is_some()
            || args.in_msg_nelems.is_some()
            || args.group_size.is_some()
            || args.pg_ranks.is_some()
        {
            let args = comm_args(args, &mut self.diagnostics);
            self.comm_args.push((file_index, args));
        }
        if kind == EventKind::Kernel
            && let (Some(warps), Some(occupancy)) = (args.warps_per_sm, args.occupancy_pct)
        {
            let number = |raw: &str| {
                raw.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
            };
            if let (Some(warps_per_sm), Some(occupancy_pct)) =
                (number(warps.0), number(occupancy.0))
            {
                self.kernel_fill.push((
                    file_index,
                    crate::model::KernelFill {
                        warps_per_sm,
                        occupancy_pct,
                        blocks: args.grid.and_then(|grid| grid_blocks(grid.0)),
                    },
                ));
            }
        }
        // An annotation may record its inputs too: gloo's `gloo:all_reduce` range on its worker
        // thread carries the tensor it reduces (what tells one group's collectives from
        // another's where no record names the group).
        if matches!(kind, EventKind::CpuOp | EventKind::UserAnnotation)
            && let Some(dims) = args.input_dims
            && let Some(inputs) = super::inputs::op_inputs(
                dims.0,
                args.input_type.map(|t| t.0),
                args.concrete_inputs.map(|t| t.0),
                &mut self.diagnostics,
            )
        {
            self.op_inputs.push((file_index, inputs));
        }
        if matches!(kind, EventKind::CpuOp | EventKind::UserAnnotation)
            && let Some(id) = positive(args.record_function_id)
        {
            self.record_function_ids.push((file_index, id.get()));
        }
        if kind == EventKind::UserAnnotation
            && let Some(transfer) = crate::model::PipelineTransfer::parse(self.names.get(name))
        {
            self.pipeline_transfers.push((file_index, transfer));
        }
        let correlation = positive(args.correlation);
        let slot = self.lane_slot(lane);
        let index = self.events.len() as u32;
        let (rows, sorted) = &mut self.lane_rows[slot as usize];
        let key = start_then_longest(start_abs_ns, dur_ns);
        if let Some(&last) = rows.last()
            && let Some(&last) = self.order_keys.get(last as usize)
            && key < last
        {
            *sorted = false;
        }
        rows.push(index);
        self.order_keys.push(key);
        self.events_min_start_ns = Some(
            self.events_min_start_ns
                .map_or(start_abs_ns, |min| min.min(start_abs_ns)),
        );
        let end_abs_ns = start_abs_ns + dur_ns;
        self.events_max_end_ns = Some(
            self.events_max_end_ns
                .map_or(end_abs_ns, |max| max.max(end_abs_ns)),
        );
        if correlation.is_none() && (kind.is_device_task() || kind.is_api_call()) {
            self.flow_lookups.push(FlowLookup {
                index,
                raw_pid,
                raw_tid,
            });
        }
        self.events.push(Event {
            kind,
            lane: LaneId(slot),
            name,
            start_ns: start_abs_ns,
            dur_ns,
            correlation,
            external_id: positive(args.external_id),
            bytes: positive(args.bytes),
            sequence_number: args
                .sequence_number
                .and_then(Int::get)
                .and_then(SequenceNumber::new),
            file_index,
        });
        Ok(true)
    }

    /// Counts a skipped duration event, whose name was not checked.
    fn skipped(&mut self, reason: impl Into<String>) -> Result<bool, &'static str> {
        self.diagnostics.skip(reason);
        Ok(false)
    }

    /// The id of an event name given as bytes: looked up by its bytes, checked as UTF-8 and
    /// interned the first time (a `from_utf8` per event cost 3 % of ingest).
    fn intern_name(&mut self, name: &[u8]) -> Result<crate::model::NameId, &'static str> {
        if let Some(&id) = self.name_ids.get(name) {
            return Ok(id);
        }
        let text = std::str::from_utf8(name).map_err(|_| NOT_UTF8)?;
        let id = self.names.intern(text);
        self.name_ids.insert(name.into(), id);
        Ok(id)
    }

    /// The slot of `lane` in `self.lanes`, made on first sight.
    fn lane_slot(&mut self, lane: LaneKey) -> u32 {
        if let Some((key, slot)) = self.last_lane
            && key == lane
        {
            return slot;
        }
        let slot = match self.lane_slots.get(&lane) {
            Some(&slot) => slot,
            None => {
                let slot = self.lane_keys.len() as u32;
                self.lane_keys.push(lane);
                self.lane_rows.push((Vec::new(), true));
                self.lane_slots.insert(lane, slot);
                slot
            }
        };
        self.last_lane = Some((lane, slot));
        slot
    }

    fn sync_event(&mut self, raw: &RawEvent) {
        let empty = RawArgs::default();
        let args = raw.args.as_ref().unwrap_or(&empty);
        let label = args
            .cuda_sync_kind
            .as_deref()
            .or(raw
                .name
                .as_ref()
                .and_then(|name| std::str::from_utf8(name.as_bytes()).ok()))
            .unwrap_or("");
        let kind = match label {
            "Event Sync" => SyncKind::EventSync,
            "Stream Sync" => SyncKind::StreamSync,
            "Context Sync" => SyncKind::ContextSync,
            "Stream Wait Event" => SyncKind::StreamWaitEvent,
            _ => {
                return self
                    .diagnostics
                    .skip(format!("`cuda_sync` events of unknown kind `{label}`"));
            }
        };
        let (Some(start_ns), Some(dur_ns), Some(correlation)) = (
            raw.ts.and_then(|t| t.get()),
            raw.dur.and_then(|d| d.get()),
            positive(args.correlation),
        ) else {
            return self
                .diagnostics
                .skip("`cuda_sync` events without ts, dur or correlation");
        };
        if !plausible_ts(start_ns) || !(0..=MAX_DUR_NS).contains(&dur_ns) {
            return self
                .diagnostics
                .skip("`cuda_sync` events with an absurd `ts` or `dur`");
        }
        self.syncs.push(SyncEvent {
            kind,
            correlation: correlation.get(),
            device: args.device.and_then(Int::get).unwrap_or(0),
            stream: non_negative(args.stream),
            wait_on_stream: non_negative(args.wait_on_stream),
            wait_on_event_record_correlation: non_negative(args.wait_on_cuda_event_record_corr_id)
                .map(|v| v as u64),
            start_ns,
            dur_ns,
        });
    }

    /// A `[memory]` instant event: an allocation (positive `Bytes`) or free (negative).
    fn memory_event(&mut self, raw: &RawEvent) {
        let empty = RawArgs::default();
        let args = raw.args.as_ref().unwrap_or(&empty);
        let (Some(time_abs_ns), Some(bytes)) = (
            raw.ts.and_then(|t| t.get()),
            args.alloc_bytes.and_then(Int::get),
        ) else {
            return self
                .diagnostics
                .skip("memory events without a valid `ts` or `Bytes`");
        };
        if !plausible_ts(time_abs_ns) {
            return self
                .diagnostics
                .skip("memory events with an absurd `ts` (before 1933 or after 2116)");
        }
        let (Some(raw_pid), Some(raw_tid)) = (
            raw.pid.as_ref().and_then(LaneNumber::get),
            raw.tid.as_ref().and_then(LaneNumber::get),
        ) else {
            return self
                .diagnostics
                .skip("memory events with a non-numeric pid or tid");
        };
        // Device Type 0 is host memory; otherwise the Device Id names the accelerator.
        let device = match (
            args.device_type.and_then(Int::get),
            args.device_id.and_then(Int::get),
        ) {
            (Some(0), _) | (_, None) => -1,
            (_, Some(id)) => id,
        };
        self.memory.push(PendingMemory {
            raw_pid,
            raw_tid,
            time_abs_ns,
            device,
            bytes,
            total_allocated: args.total_allocated.and_then(Int::get),
            total_reserved: args.total_reserved.and_then(Int::get),
            addr: args
                .addr
                .and_then(Int::get)
                .and_then(|a| u64::try_from(a).ok()),
        });
    }

    fn flow_event(&mut self, raw: &RawEvent, ph: &str) {
        let cat = lower(raw.cat.as_deref().unwrap_or(""));
        match cat.as_ref() {
            "ac2g" | "async_cpu_to_gpu" | "async_gpu" | "async" => {
                let key = (
                    raw.pid.as_ref().and_then(LaneNumber::get),
                    raw.tid.as_ref().and_then(LaneNumber::get),
                    raw.ts.and_then(|t| t.get()),
                    // 0 links nothing, as in `args` (`positive`).
                    positive(raw.id),
                );
                let (Some(pid), Some(tid), Some(ts), Some(id)) = key else {
                    return self
                        .diagnostics
                        .skip("launch flow events without pid, tid, ts or id");
                };
                // Both ends are indexed: the start sits on the launching call, the end on the
                // device task (or, for non-launch calls, on the call itself).
                let _ = ph;
                self.flow_ends.push(((pid, tid, ts), id));
            }
            "fwdbwd" => self.fwdbwd_flows += 1,
            other => self
                .diagnostics
                .skip(format!("flow events of category `{other}`")),
        }
    }

    fn metadata(&mut self, raw: &RawEvent) {
        if raw.name.as_ref().map(RawText::as_bytes) == Some(b"process_name") {
            self.clues.look(raw);
        }
        if raw.name.as_ref().map(RawText::as_bytes) != Some(b"thread_name") {
            return; // process names, sort indices, labels: display-only
        }
        let (Some(pid), Some(tid)) = (
            raw.pid.as_ref().and_then(LaneNumber::get),
            raw.tid.as_ref().and_then(LaneNumber::get),
        ) else {
            return;
        };
        if let Some(name) = raw.args.as_ref().and_then(|a| a.name.as_deref()) {
            self.thread_names.insert((pid, tid), name.to_string());
        }
    }

    /// Records that the event array ended with the file, without its `]`: the Chrome trace
    /// format allows this (a process that dies mid-trace leaves it so; Horovod never writes it).
    pub fn unterminated(&mut self) {
        self.unterminated = true;
    }

    /// How many duration events were kept (ops, calls, device work, step markers).
    pub fn kept_events(&self) -> usize {
        self.events.len() + self.steps.len()
    }

    /// The tool whose output the skipped records look like, if any.
    pub fn lookalike(&self) -> Option<Lookalike> {
        self.clues.best()
    }

    /// The reasons most records were skipped for, most common first (at most `n`).
    pub fn top_skips(&self, n: usize) -> Vec<(String, u64)> {
        let mut skips: Vec<(String, u64)> = self
            .diagnostics
            .skipped
            .iter()
            .map(|(reason, &count)| (reason.clone(), count))
            .collect();
        skips.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        skips.truncate(n);
        skips
    }

    /// From the earliest start to the latest end of the kept events and step markers, in ns.
    pub fn span_ns(&self) -> Option<(i64, i64)> {
        let steps_start = self.steps.iter().map(|s| s.start_abs_ns).min();
        let steps_end = self.steps.iter().map(|s| s.start_abs_ns + s.dur_ns).max();
        let start = self
            .events_min_start_ns
            .into_iter()
            .chain(steps_start)
            .min()?;
        let end = self.events_max_end_ns.into_iter().chain(steps_end).max()?;
        Some((start, end))
    }

    pub fn finish(mut self, input_bytes: u64) -> Trace {
        let origin_ns = self
            .events_min_start_ns
            .into_iter()
            .chain(self.steps.iter().map(|s| s.start_abs_ns))
            .chain(self.syncs.iter().map(|s| s.start_ns))
            .min()
            .unwrap_or(0);

        let lane_keys: BTreeSet<(LaneKind, i64, i64)> = self
            .lane_keys
            .iter()
            .copied()
            .chain(self.steps.iter().map(|s| s.lane))
            .collect();
        let lane_ids: FxHashMap<(LaneKind, i64, i64), LaneId> = lane_keys
            .iter()
            .enumerate()
            .map(|(i, &key)| (key, LaneId(i as u32)))
            .collect();
        let lanes: Vec<Lane> = lane_keys
            .iter()
            .map(|&(kind, pid, tid)| {
                let (file_pid, file_tid) = self
                    .lane_labels
                    .get(&(kind, pid, tid))
                    .cloned()
                    .unwrap_or_default();
                Lane {
                    kind,
                    pid,
                    tid,
                    name: match kind {
                        LaneKind::CpuThread => self.thread_names.get(&(pid, tid)).cloned(),
                        LaneKind::DeviceStream => None,
                    },
                    file_pid,
                    file_tid,
                }
            })
            .collect();

        let mut recovered = 0u64;
        if !self.flow_lookups.is_empty() {
            let flow_ends: FxHashMap<(i64, i64, i64), NonZeroU64> =
                self.flow_ends.iter().copied().collect();
            for lookup in &self.flow_lookups {
                let event = &mut self.events[lookup.index as usize];
                event.correlation = flow_ends
                    .get(&(lookup.raw_pid, lookup.raw_tid, event.start_ns))
                    .copied();
                recovered += event.correlation.is_some() as u64;
            }
        }
        let lane_of_slot: Vec<LaneId> = self.lane_keys.iter().map(|key| lane_ids[key]).collect();
        let events = std::mem::take(&mut self.events);
        // The final order as positions in `events`: lanes in order, each lane's positions
        // sorted unless they arrived sorted. Kineto writes a lane as a few sorted runs (ops,
        // then runtime calls, ...), which the stable sort merges; it also keeps file order
        // among ties. Sorting 4-byte positions and moving each event once cost 7 % of ingest
        // less than sorting the events themselves.
        let mut slots: Vec<usize> = (0..self.lane_keys.len()).collect();
        slots.sort_unstable_by_key(|&slot| lane_of_slot[slot]);
        let mut order: Vec<u32> = Vec::with_capacity(events.len());
        for slot in slots {
            let (mut rows, sorted) = std::mem::take(&mut self.lane_rows[slot]);
            if !sorted {
                // The keys gathered beside their positions: read through the position on every
                // comparison, they cost a cache miss each (4 % of ingest).
                let mut keyed: Vec<(u128, u32)> = rows
                    .iter()
                    .map(|&i| (self.order_keys[i as usize], i))
                    .collect();
                keyed.sort_by_key(|&(key, _)| key);
                rows.clear();
                rows.extend(keyed.iter().map(|&(_, i)| i));
            }
            order.append(&mut rows);
        }
        let in_place = events.len() * std::mem::size_of::<Event>() <= IN_PLACE_MAX_BYTES;
        let events = put_in_order(events, order, in_place, |event| {
            event.lane = lane_of_slot[event.lane.index()];
            event.start_ns -= origin_ns;
        });

        // Side tables (NCCL metadata, op input shapes) follow their event through the sort: a
        // record's file index is unique.
        let comm_args = follow_events(&events, std::mem::take(&mut self.comm_args));
        let kernel_fill = follow_events(&events, std::mem::take(&mut self.kernel_fill));
        let op_inputs = follow_events(&events, std::mem::take(&mut self.op_inputs));
        let record_function_ids =
            follow_events(&events, std::mem::take(&mut self.record_function_ids));
        let pipeline_transfers =
            follow_events(&events, std::mem::take(&mut self.pipeline_transfers));

        for sync in &mut self.syncs {
            sync.start_ns -= origin_ns;
        }
        self.syncs
            .sort_unstable_by_key(|s| (s.start_ns, s.correlation));

        let mut steps: Vec<StepMarker> = self
            .steps
            .iter()
            .map(|s| StepMarker {
                number: s.number,
                name: s.name,
                lane: lane_ids[&s.lane],
                start_ns: s.start_abs_ns - origin_ns,
                dur_ns: s.dur_ns,
            })
            .collect();
        steps.sort_unstable_by_key(|s| (s.start_ns, s.number));
        if let Some(pattern) = &self.step_range {
            for (number, step) in steps.iter_mut().enumerate() {
                step.number = number as u64;
            }
            self.diagnostics.note(crate::assemble::step_range_note(
                steps.len(),
                super::STEP_RANGE_EVENTS,
                pattern,
            ));
        }

        // Memory events keep file order among equal times (a stable sort).
        let mut memory: Vec<MemoryEvent> = self
            .memory
            .iter()
            .map(|m| MemoryEvent {
                time_ns: m.time_abs_ns - origin_ns,
                device: m.device,
                bytes: m.bytes,
                total_allocated: m.total_allocated,
                total_reserved: m.total_reserved,
                addr: m.addr,
                lane: lane_ids
                    .get(&(LaneKind::CpuThread, m.raw_pid, m.raw_tid))
                    .copied(),
            })
            .collect();
        memory.sort_by_key(|m| m.time_ns);

        let has_device_work = events.iter().any(|e| e.kind.is_device_task());
        let runtime = if self.saw_mtia {
            Runtime::Mtia
        } else if self.saw_hip {
            Runtime::Rocm
        } else if has_device_work {
            Runtime::Cuda
        } else {
            Runtime::CpuOnly
        };

        let diagnostics = &mut self.diagnostics;
        if self.unterminated {
            diagnostics.note(
                "the event array is not closed (no `]` at the end of the file), as the Chrome trace format allows: read up to its last whole event",
            );
        }
        if self.range_profiler_events > 0 {
            diagnostics.note(format!(
                "{} CUPTI range-profiler records (`cuda_profiler_range`) are device work; their times are Kineto's even split of the profiled span, not measurements",
                self.range_profiler_events
            ));
        }
        if recovered > 0 {
            diagnostics.note(format!(
                "{recovered} correlation ids were recovered from launch flow events (absent from args)"
            ));
        }
        if self.fwdbwd_flows > 0 {
            diagnostics.note(format!(
                "{} autograd forward/backward flow events (`fwdbwd`) are kept for op mapping, not used by the replay",
                self.fwdbwd_flows
            ));
        }
        if self.distributed.is_none() {
            diagnostics.note("no `distributedInfo`: rank and world size are unknown");
        }
        if !self.syncs.is_empty() {
            diagnostics.note(format!(
                "{} `cuda_sync` events give exact synchronization dependencies",
                self.syncs.len()
            ));
        }

        Trace {
            origin_ns: origin_ns.saturating_add(self.base_time_ns),
            file_time_base_ns: self.base_time_ns,
            names: self.names,
            lanes,
            events,
            syncs: self.syncs,
            steps,
            memory,
            devices: self.devices,
            distributed: self.distributed,
            process_id: None,
            runtime: Some(runtime),
            input_bytes,
            records: self.records,
            diagnostics: self.diagnostics,
            comm_args,
            op_inputs,
            record_function_ids,
            pipeline_transfers,
            kernel_fill,
            off_cpu: Vec::new(),
            comm_tensors: Vec::new(),
            links: Vec::new(),
            step_range_events: Some(super::STEP_RANGE_EVENTS),
        }
    }
}

/// Re-keys a side table from file record indices to the ids of the sorted `events`, in event
/// order; rows whose record did not become an event are dropped.
/// Blocks a kernel launched from its recorded grid (`[x, y, z]`): `None` for anything else, a
/// dimension below 1, or a product past `u64`.
fn grid_blocks(raw: &str) -> Option<u64> {
    let dims: Vec<u64> = serde_json::from_str(raw).ok()?;
    if dims.is_empty() || dims.contains(&0) {
        return None;
    }
    dims.iter()
        .try_fold(1u64, |blocks, &d| blocks.checked_mul(d))
}

fn follow_events<T>(events: &[Event], mut rows: Vec<(u32, T)>) -> Vec<(crate::model::EventId, T)> {
    let mut out = Vec::with_capacity(rows.len());
    if rows.is_empty() {
        return out;
    }
    let by_record: FxHashMap<u32, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, (record, _))| (*record, i))
        .collect();
    let mut taken: Vec<Option<T>> = rows.drain(..).map(|(_, row)| Some(row)).collect();
    for (id, event) in events.iter().enumerate() {
        if let Some(row) = by_record
            .get(&event.file_index)
            .and_then(|&i| taken[i].take())
        {
            out.push((crate::model::EventId(id as u32), row));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{put_in_order, start_then_longest};

    /// The one-number key orders events as the tuple it stands for, at the edges of i64 too.
    #[test]
    fn event_key_orders_as_start_then_longest() {
        let values = [i64::MIN, -1_000, -1, 0, 1, 7, 1_000, i64::MAX - 1, i64::MAX];
        let pairs: Vec<(i64, i64)> = values
            .iter()
            .flat_map(|&s| values.iter().map(move |&d| (s, d)))
            .collect();
        for &(s1, d1) in &pairs {
            for &(s2, d2) in &pairs {
                let by_tuple = (s1, std::cmp::Reverse(d1)).cmp(&(s2, std::cmp::Reverse(d2)));
                let by_key = start_then_longest(s1, d1).cmp(&start_then_longest(s2, d2));
                assert_eq!(by_key, by_tuple, "({s1}, {d1}) against ({s2}, {d2})");
            }
        }
    }

    #[test]
    fn both_ways_of_ordering_agree() {
        // A pseudo-random permutation (Fisher-Yates, fixed seed), except that every tenth
        // position is left in place.
        let n = 1000u32;
        let mut order: Vec<u32> = (0..n).collect();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for k in (1..n as usize).rev().filter(|k| !k.is_multiple_of(10)) {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let j = (state >> 33) as usize % (k + 1);
            if !j.is_multiple_of(10) {
                order.swap(k, j);
            }
        }
        assert!(order.iter().enumerate().any(|(k, &i)| k != i as usize));
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..n).collect::<Vec<_>>(), "not a permutation");
        let items: Vec<String> = (0..n).map(|k| format!("item {k}")).collect();
        let expected: Vec<String> = order.iter().map(|&i| items[i as usize].clone()).collect();
        let expected: Vec<String> = expected.iter().map(|item| format!("{item}!")).collect();
        let fix = |item: &mut String| item.push('!');
        assert_eq!(
            put_in_order(items.clone(), order.clone(), true, fix),
            expected
        );
        assert_eq!(put_in_order(items, order, false, fix), expected);
    }
}
