//! The rows of an export into one [`Trace`] per process with device work.
//!
//! nsys ids: `globalTid` is `(vm << 56) | (pid << 24) | tid` and a `globalPid` the same with
//! `tid` 0, so a row's process is its `globalPid`, or its `globalTid` with the low 24 bits
//! cleared. Times are integer nanoseconds on the session's clock already.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use rustc_hash::FxHashMap;

use super::occupancy::{LaunchConfig, SmLimits};
use super::schema::Schema;
use crate::ReadOptions;
use crate::assemble::{Assembly, LaneKey, NewEvent};
use crate::error::ReadError;
use crate::kineto::MAX_DUR_NS;
use crate::model::{
    DeviceInfo, EventKind, KernelFill, LaneKind, NameId, Runtime, SyncEvent, SyncKind, Trace,
};

/// The low 24 bits of a `globalTid` are the thread id; the next 24 the process id.
const TID_BITS: u32 = 24;
const TID_MASK: i64 = (1 << TID_BITS) - 1;

/// CUPTI writes `0xFFFFFFFF` (as a 32-bit unsigned) where a record has no stream.
const NO_STREAM: i64 = u32::MAX as i64;

/// `ENUM_NSYS_EVENT_TYPE` ids of the NVTX ranges: push/pop and start/end (the ids nsys has
/// used since 2020; read from the enum table where the export has it).
const NVTX_RANGE_TYPES: [i64; 2] = [59, 60];

/// Where timestamps may lie (ns): as the Kineto reader bounds them, so no later sum overflows.
fn plausible_ns(ns: i64) -> bool {
    (-(1i64 << 60)..=(1i64 << 62)).contains(&ns)
}

fn process_of_tid(global_tid: i64) -> i64 {
    global_tid & !TID_MASK
}

fn pid_of(global_id: i64) -> i64 {
    (global_id >> TID_BITS) & TID_MASK
}

/// An integer column (`None` for NULL or another type).
fn int(row: &Row<'_>, column: usize) -> Option<i64> {
    match row.get_ref(column) {
        Ok(ValueRef::Integer(value)) => Some(value),
        _ => None,
    }
}

/// `StringIds`: every string of the export by id.
struct Strings {
    by_id: FxHashMap<i64, Box<str>>,
}

impl Strings {
    fn read(connection: &Connection, schema: &Schema) -> rusqlite::Result<Strings> {
        let mut by_id = FxHashMap::default();
        if let Some(sql) = schema.select("StringIds", &["id", "value"]) {
            let mut statement = connection.prepare(&sql)?;
            let mut rows = statement.query([])?;
            while let Some(row) = rows.next()? {
                if let (Some(id), Ok(ValueRef::Text(text))) = (int(row, 0), row.get_ref(1)) {
                    by_id.insert(id, String::from_utf8_lossy(text).into());
                }
            }
        }
        Ok(Strings { by_id })
    }

    /// The text of a string column: a `StringIds` id, or the text itself in exports that
    /// wrote it inline.
    fn text<'r>(&'r self, value: ValueRef<'r>) -> Option<&'r str> {
        match value {
            ValueRef::Integer(id) => self.by_id.get(&id).map(|s| &**s),
            ValueRef::Text(text) => std::str::from_utf8(text).ok(),
            _ => None,
        }
    }
}

/// One process being read: its rows go straight into an [`Assembly`], the last stage every
/// whole-file reader shares.
struct Process {
    assembly: Assembly,
    /// String id → interned name, so a repeated kernel name is looked up once.
    name_of_id: FxHashMap<i64, NameId>,
    devices: BTreeSet<i64>,
    device_rows: u64,
    /// Kernels whose launch configuration was read but whose device's limits are unknown.
    kernels_without_limits: u64,
    /// NVTX records of a domain whose payload schemas declare a message size (NCCL's).
    message_size_records: u64,
}

impl Process {
    fn new(step_range: Option<&regex::Regex>) -> Process {
        let mut assembly = Assembly::default();
        assembly.steps_from_ranges(step_range, "NVTX ranges");
        Process {
            assembly,
            name_of_id: FxHashMap::default(),
            devices: BTreeSet::new(),
            device_rows: 0,
            kernels_without_limits: 0,
            message_size_records: 0,
        }
    }

    fn name(&mut self, strings: &Strings, value: ValueRef<'_>) -> Option<NameId> {
        if let ValueRef::Integer(id) = value {
            if let Some(&name) = self.name_of_id.get(&id) {
                return Some(name);
            }
            let name = self.assembly.intern(strings.text(value)?);
            self.name_of_id.insert(id, name);
            return Some(name);
        }
        strings.text(value).map(|text| self.assembly.intern(text))
    }

    fn skip(&mut self, reason: impl Into<String>) {
        self.assembly.diagnostics.skip(reason);
    }

    /// Checks a record's times; `None` (counted) when absent or absurd.
    fn times(&mut self, what: &str, start: Option<i64>, end: Option<i64>) -> Option<(i64, i64)> {
        let (Some(start), Some(end)) = (start, end) else {
            self.skip(format!("{what} without a start or an end"));
            return None;
        };
        let dur = end.checked_sub(start);
        match dur {
            Some(dur) if plausible_ns(start) && (0..=MAX_DUR_NS).contains(&dur) => {
                Some((start, dur))
            }
            _ => {
                self.skip(format!("{what} with an absurd start or end"));
                None
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        kind: EventKind,
        lane: LaneKey,
        name: NameId,
        (start_ns, dur_ns): (i64, i64),
        correlation: Option<i64>,
        bytes: Option<i64>,
        sequence_number: Option<i64>,
        fill: Option<KernelFill>,
        file_index: u32,
    ) {
        self.assembly.push(NewEvent {
            lane,
            kind,
            name,
            start_abs_ns: start_ns,
            dur_ns,
            correlation: correlation.filter(|&c| c > 0).map(|c| c as u64),
            bytes: bytes.filter(|&b| b >= 0).map(|b| b as u64),
            sequence_number,
            fill,
            file_index,
        });
    }
}

/// Everything read, by process (`globalPid`).
struct Reader<'a> {
    connection: &'a Connection,
    schema: &'a Schema,
    strings: Strings,
    processes: BTreeMap<i64, Process>,
    step_range: Option<&'a regex::Regex>,
    /// Rows read so far, over every table: a record's position in messages.
    rows: u32,
    tables_used: Vec<&'static str>,
    /// Rows without a `globalPid`/`globalTid`: no process to count them in, so counted here
    /// and reported in the first trace.
    orphan_rows: u64,
}

/// The process of id `global_pid`, begun if new (a free function so that callers keep their
/// other borrows of the reader).
fn process<'p>(
    processes: &'p mut BTreeMap<i64, Process>,
    step_range: Option<&regex::Regex>,
    global_pid: i64,
) -> &'p mut Process {
    processes
        .entry(global_pid)
        .or_insert_with(|| Process::new(step_range))
}

impl Reader<'_> {
    fn next_index(&mut self) -> u32 {
        let index = self.rows;
        self.rows = self.rows.saturating_add(1);
        index
    }

    /// Runs `SELECT columns FROM table` and hands each row to `each`; a table (or required
    /// column) the export lacks is passed over.
    fn each_row(
        &mut self,
        table: &'static str,
        columns: &[&str],
        mut each: impl FnMut(&mut Self, &Row<'_>),
    ) -> rusqlite::Result<()> {
        let Some(sql) = self.schema.select(table, columns) else {
            return Ok(());
        };
        let connection = self.connection;
        let mut statement = connection.prepare(&sql)?;
        let mut rows = statement.query([])?;
        let mut any = false;
        while let Some(row) = rows.next()? {
            any = true;
            each(self, row);
        }
        if any {
            self.tables_used.push(table);
        }
        Ok(())
    }
}

/// An enum table's labels by id (`ENUM_CUDA_MEM_KIND`, ...), or `fallback` without one.
fn enum_labels(
    connection: &Connection,
    schema: &Schema,
    table: &str,
    fallback: &[(i64, &str)],
) -> rusqlite::Result<FxHashMap<i64, String>> {
    let mut labels: FxHashMap<i64, String> = FxHashMap::default();
    if let Some(sql) = schema.select(table, &["id", "label"]) {
        let mut statement = connection.prepare(&sql)?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            if let (Some(id), Ok(label)) = (int(row, 0), row.get::<_, String>(1)) {
                labels.insert(id, label);
            }
        }
    }
    if labels.is_empty() {
        labels = fallback
            .iter()
            .map(|&(id, l)| (id, l.to_string()))
            .collect();
    }
    Ok(labels)
}

/// CUPTI's `CUpti_ActivityMemcpyKind`, as Kineto abbreviates it in copy names.
const COPY_KINDS: [(i64, &str); 11] = [
    (0, "Unknown"),
    (1, "HtoD"),
    (2, "DtoH"),
    (3, "HtoA"),
    (4, "AtoH"),
    (5, "AtoA"),
    (6, "AtoD"),
    (7, "DtoA"),
    (8, "DtoD"),
    (9, "HtoH"),
    (10, "PtoP"),
];

/// nsys's `ENUM_CUDA_MEM_KIND` labels (used when the export lacks the table).
const MEMORY_KINDS: [(i64, &str); 8] = [
    (0, "Pageable"),
    (1, "Pinned"),
    (2, "Device"),
    (3, "Array"),
    (4, "Managed"),
    (5, "Device Static"),
    (6, "Managed Static"),
    (7, "Unknown"),
];

/// Every process with device work in the export, as traces (`path` names the file in errors,
/// `input_bytes` is its size).
pub fn read_processes(
    connection: &Connection,
    schema: &Schema,
    options: &ReadOptions,
    path: &Path,
    input_bytes: u64,
) -> Result<Vec<Trace>, ReadError> {
    let rows = read_rows(connection, schema, options).map_err(|cause| ReadError::Sqlite {
        path: path.to_path_buf(),
        cause: cause.to_string(),
    })?;
    let Rows {
        processes,
        thread_names,
        gpus,
        tables_used,
        orphan_rows,
    } = rows;
    let tables_used = tables_used.join(", ");

    let mut without_device = 0u64;
    let mut traces = Vec::new();
    let n_with_device = processes.values().filter(|p| p.device_rows > 0).count();
    for (global_pid, process) in processes {
        if process.device_rows == 0 {
            without_device += process.assembly.records;
            continue;
        }
        let mut trace = finish(process, &thread_names, &gpus, path, input_bytes)?;
        if n_with_device > 1 {
            trace.process_id = Some(pid_of(global_pid));
        }
        trace.diagnostics.note(format!(
            "Nsight Systems SQLite export; tables read: {tables_used}"
        ));
        traces.push(trace);
    }
    if let Some(first) = traces.first_mut() {
        first.diagnostics.skip_n(
            "records of processes without device work (not a rank of this job)",
            without_device,
        );
        first
            .diagnostics
            .skip_n("records without a process or thread id", orphan_rows);
    }
    Ok(traces)
}

/// The rows of an export, by process, and the tables shared by every process.
struct Rows {
    processes: BTreeMap<i64, Process>,
    thread_names: FxHashMap<(i64, i64), String>,
    gpus: FxHashMap<i64, Gpu>,
    tables_used: Vec<&'static str>,
    orphan_rows: u64,
}

fn read_rows(
    connection: &Connection,
    schema: &Schema,
    options: &ReadOptions,
) -> rusqlite::Result<Rows> {
    let mut reader = Reader {
        connection,
        schema,
        strings: Strings::read(connection, schema)?,
        processes: BTreeMap::new(),
        step_range: options.step_range.as_ref(),
        rows: 0,
        tables_used: Vec::new(),
        orphan_rows: 0,
    };
    // The GPUs first: a kernel's launch configuration becomes how much of its device it
    // fills only where the device's limits are known.
    let gpus = gpus(&mut reader)?;
    device_work(&mut reader, &gpus)?;
    let memory_kinds = enum_labels(connection, schema, "ENUM_CUDA_MEM_KIND", &MEMORY_KINDS)?;
    copies(&mut reader, &memory_kinds)?;
    memsets(&mut reader, &memory_kinds)?;
    calls(&mut reader)?;
    syncs(&mut reader)?;
    nvtx(&mut reader)?;
    nccl_payloads(&mut reader)?;
    let thread_names = thread_names(&mut reader)?;
    Ok(Rows {
        processes: reader.processes,
        thread_names,
        gpus,
        tables_used: reader.tables_used,
        orphan_rows: reader.orphan_rows,
    })
}

/// The columns every device-work table shares, in this order; a table's own follow them.
const DEVICE_COLUMNS: [&str; 6] = [
    "start",
    "end",
    "deviceId",
    "streamId",
    "correlationId?",
    "globalPid",
];

/// A device-work record's name and, for a kernel, how much of its device it fills.
type Named = Option<(NameId, Option<KernelFill>)>;

/// Reads one device-work table (kernels, copies, memsets): its rows become `kind` events on
/// their (device, stream) lane, named by `name` (given the row's device), with the bytes of
/// `bytes_column` if given. `what` names the records in diagnostics.
fn device_table(
    reader: &mut Reader<'_>,
    table: &'static str,
    (kind, what): (EventKind, &'static str),
    own_columns: &[&str],
    bytes_column: Option<usize>,
    mut name: impl FnMut(&mut Process, &Strings, &Row<'_>, i64) -> Named,
) -> rusqlite::Result<()> {
    let columns: Vec<&str> = DEVICE_COLUMNS.iter().chain(own_columns).copied().collect();
    reader.each_row(table, &columns, |reader, row| {
        let index = reader.next_index();
        let Some(global_pid) = int(row, 5) else {
            reader.orphan_rows += 1;
            return;
        };
        let strings = &reader.strings;
        let process = process(&mut reader.processes, reader.step_range, global_pid);
        process.assembly.records += 1;
        let Some(times) = process.times(what, int(row, 0), int(row, 1)) else {
            return;
        };
        let (Some(device), Some(stream)) = (int(row, 2), int(row, 3)) else {
            return process.skip(format!("{what} without a device or stream"));
        };
        let Some((name, fill)) = name(process, strings, row, device) else {
            return process.skip(format!("{what} whose name is not in StringIds"));
        };
        process.device_rows += 1;
        process.devices.insert(device);
        process.push(
            kind,
            (LaneKind::DeviceStream, device, stream),
            name,
            times,
            int(row, 4),
            bytes_column.and_then(|column| int(row, column)),
            None,
            fill,
            index,
        );
    })
}

/// The kernel table's launch-configuration columns, after the name columns (from column 8).
const LAUNCH_COLUMNS: [&str; 10] = [
    "gridX?",
    "gridY?",
    "gridZ?",
    "blockX?",
    "blockY?",
    "blockZ?",
    "registersPerThread?",
    "staticSharedMemory?",
    "dynamicSharedMemory?",
    "sharedMemoryExecuted?",
];

fn device_work(reader: &mut Reader<'_>, gpus: &FxHashMap<i64, Gpu>) -> rusqlite::Result<()> {
    let columns: Vec<&str> = ["demangledName?", "shortName?"]
        .into_iter()
        .chain(LAUNCH_COLUMNS)
        .collect();
    device_table(
        reader,
        "CUPTI_ACTIVITY_KIND_KERNEL",
        (EventKind::Kernel, "kernels"),
        &columns,
        None,
        |process, strings, row, device| {
            let mut column = |c| row.get_ref(c).ok().and_then(|v| process.name(strings, v));
            let name = column(6).or_else(|| column(7))?;
            let at = |i: usize| int(row, 8 + i);
            let launch = LaunchConfig {
                grid: [at(0), at(1), at(2)],
                block: [at(3), at(4), at(5)],
                registers_per_thread: at(6),
                static_shared_bytes: at(7),
                dynamic_shared_bytes: at(8),
                shared_carveout_bytes: at(9),
            };
            let fill = if launch.is_recorded() {
                match gpus.get(&device).and_then(|gpu| gpu.limits.as_ref()) {
                    Some(limits) => limits.fill(&launch),
                    None => {
                        process.kernels_without_limits += 1;
                        None
                    }
                }
            } else {
                None
            };
            Some((name, fill))
        },
    )
}

fn copies(reader: &mut Reader<'_>, memory_kinds: &FxHashMap<i64, String>) -> rusqlite::Result<()> {
    let copy_kinds: FxHashMap<i64, &str> = COPY_KINDS.iter().copied().collect();
    device_table(
        reader,
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        (EventKind::Memcpy, "copies"),
        &["bytes?", "copyKind?", "srcKind?", "dstKind?"],
        Some(6),
        |process, _, row, _| {
            let kind = int(row, 7)
                .and_then(|k| copy_kinds.get(&k).copied())
                .unwrap_or("Unknown");
            let memory = |column| {
                int(row, column)
                    .and_then(|k| memory_kinds.get(&k))
                    .map_or("Unknown", String::as_str)
            };
            // Kineto's spelling, which the graph reads (a pageable copy blocks its call).
            let name = format!("Memcpy {kind} ({} -> {})", memory(8), memory(9));
            Some((process.assembly.intern(&name), None))
        },
    )
}

fn memsets(reader: &mut Reader<'_>, memory_kinds: &FxHashMap<i64, String>) -> rusqlite::Result<()> {
    device_table(
        reader,
        "CUPTI_ACTIVITY_KIND_MEMSET",
        (EventKind::Memset, "memsets"),
        &["bytes?", "memKind?"],
        Some(6),
        |process, _, row, _| {
            let memory = int(row, 7)
                .and_then(|k| memory_kinds.get(&k))
                .map_or("Unknown", String::as_str);
            Some((process.assembly.intern(&format!("Memset ({memory})")), None))
        },
    )
}

/// A runtime API name without nsys's version suffix (`cudaLaunchKernel_v7000` →
/// `cudaLaunchKernel`, as Kineto names it); `_v2` and the like are part of the API's name.
fn api_name(name: &str) -> &str {
    match name.rsplit_once("_v") {
        Some((base, version))
            if name.starts_with("cuda")
                && version.len() >= 4
                && version.bytes().all(|b| b.is_ascii_digit()) =>
        {
            base
        }
        _ => name,
    }
}

fn calls(reader: &mut Reader<'_>) -> rusqlite::Result<()> {
    // Each string id's API name and kind, worked out once: API names repeat.
    let mut api_names: FxHashMap<i64, Option<(Box<str>, EventKind)>> = FxHashMap::default();
    reader.each_row(
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        &["start", "end", "globalTid", "correlationId?", "nameId"],
        |reader, row| {
            let index = reader.next_index();
            let Some(global_tid) = int(row, 2) else {
                reader.orphan_rows += 1;
                return;
            };
            let strings = &reader.strings;
            let named = match row.get_ref(4) {
                Ok(ValueRef::Integer(id)) => api_names
                    .entry(id)
                    .or_insert_with(|| {
                        strings.text(ValueRef::Integer(id)).map(|text| {
                            let name = api_name(text);
                            // Runtime calls are `cuda*`; driver calls `cu*` (nsys keeps both in
                            // this table, told apart by `eventClass` as well).
                            let kind = if name.starts_with("cuda") {
                                EventKind::RuntimeCall
                            } else {
                                EventKind::DriverCall
                            };
                            (Box::<str>::from(name), kind)
                        })
                    })
                    .as_ref(),
                _ => None,
            };
            let process = process(
                &mut reader.processes,
                reader.step_range,
                process_of_tid(global_tid),
            );
            process.assembly.records += 1;
            let Some(times) = process.times("runtime calls", int(row, 0), int(row, 1)) else {
                return;
            };
            let Some((name, kind)) = named else {
                return process.skip("runtime calls whose name is not in StringIds");
            };
            let (name, kind) = (process.assembly.intern(name), *kind);
            process.push(
                kind,
                (
                    LaneKind::CpuThread,
                    pid_of(global_tid),
                    global_tid & TID_MASK,
                ),
                name,
                times,
                int(row, 3),
                None,
                None,
                None,
                index,
            );
        },
    )
}

/// `CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`, with the stream of each awaited event from
/// `CUPTI_ACTIVITY_KIND_CUDA_EVENT` (the `cudaEventRecord` records) where the export has them.
fn syncs(reader: &mut Reader<'_>) -> rusqlite::Result<()> {
    // (globalPid, eventSyncId) → (stream, correlation) of the record; and by `eventId`, every
    // record of that event in correlation order, for exports without `eventSyncId`.
    let mut by_sync_id: FxHashMap<(i64, i64), (i64, i64)> = FxHashMap::default();
    let mut by_event: FxHashMap<(i64, i64), Vec<(i64, i64)>> = FxHashMap::default();
    reader.each_row(
        "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
        &[
            "globalPid",
            "eventId",
            "eventSyncId?",
            "streamId",
            "correlationId",
        ],
        |reader, row| {
            reader.next_index();
            let (Some(pid), Some(event), Some(stream), Some(correlation)) =
                (int(row, 0), int(row, 1), int(row, 3), int(row, 4))
            else {
                return;
            };
            if let Some(sync_id) = int(row, 2).filter(|&id| id != 0) {
                by_sync_id.insert((pid, sync_id), (stream, correlation));
            }
            by_event
                .entry((pid, event))
                .or_default()
                .push((correlation, stream));
        },
    )?;
    for records in by_event.values_mut() {
        records.sort_unstable();
    }
    let sync_types: FxHashMap<i64, SyncKind> = [
        (1, SyncKind::EventSync),
        (2, SyncKind::StreamWaitEvent),
        (3, SyncKind::StreamSync),
        (4, SyncKind::ContextSync),
    ]
    .into_iter()
    .collect();
    reader.each_row(
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
        &[
            "start",
            "end",
            "deviceId",
            "streamId?",
            "correlationId",
            "globalPid",
            "syncType",
            "eventId?",
            "eventSyncId?",
        ],
        |reader, row| {
            reader.next_index();
            let Some(global_pid) = int(row, 5) else {
                reader.orphan_rows += 1;
                return;
            };
            let process = process(&mut reader.processes, reader.step_range, global_pid);
            process.assembly.records += 1;
            let Some((start_ns, dur_ns)) = process.times("sync records", int(row, 0), int(row, 1))
            else {
                return;
            };
            let Some(&kind) = int(row, 6).and_then(|t| sync_types.get(&t)) else {
                return process.skip("sync records of unknown type");
            };
            let Some(correlation) = int(row, 4).filter(|&c| c > 0) else {
                return process.skip("sync records without a correlation id");
            };
            // The `cudaEventRecord` of the awaited event: by its unique sync id, else the
            // event's latest record made before this call.
            let record = int(row, 8)
                .filter(|&id| id != 0)
                .and_then(|id| by_sync_id.get(&(global_pid, id)).copied())
                .or_else(|| {
                    let records = by_event.get(&(global_pid, int(row, 7)?))?;
                    let before = records.partition_point(|&(c, _)| c < correlation);
                    before.checked_sub(1).map(|i| (records[i].1, records[i].0))
                });
            let stream = int(row, 3).filter(|&s| s != NO_STREAM && s >= 0);
            if kind == SyncKind::StreamWaitEvent && record.is_none() {
                // Without the record the awaited stream is unknown: the graph then reads the
                // `cudaStreamWaitEvent` call by its documented semantics instead.
                return process.skip(
                    "stream-wait sync records without their event's record (no CUDA_EVENT row): \
                     the call's semantics are used",
                );
            }
            process.assembly.sync(SyncEvent {
                kind,
                correlation: correlation as u64,
                device: int(row, 2).unwrap_or(0),
                stream,
                wait_on_stream: record.map(|(stream, _)| stream),
                wait_on_event_record_correlation: record
                    .and_then(|(_, c)| u64::try_from(c).ok())
                    .filter(|&c| c > 0),
                start_ns,
                dur_ns,
            });
        },
    )
}

/// An `emit_nvtx` range's op name and autograd sequence number: PyTorch writes
/// `aten::mm, seq = 12, op_id = 34, sizes = [...]`; the name is what precedes the first
/// `, key = ` it appends.
fn nvtx_op(text: &str) -> Option<(&str, Option<i64>)> {
    const KEYS: [&str; 4] = [" seq = ", " op_id = ", " sizes = ", " input_op_ids = "];
    // Found by their commas (`memchr`), not by four substring searches per range: a capture
    // holds tens of thousands of these ranges.
    let bytes = text.as_bytes();
    let mut cut = None;
    let mut sequence = None;
    for comma in memchr::memchr_iter(b',', bytes) {
        let rest = &text[comma + 1..];
        let Some(key) = KEYS.iter().find(|key| rest.starts_with(**key)) else {
            continue;
        };
        cut.get_or_insert(comma);
        if *key == " seq = " {
            let value = &rest[key.len()..];
            sequence = value.split(',').next().and_then(|v| v.trim().parse().ok());
        }
    }
    Some((&text[..cut?], sequence))
}

fn nvtx(reader: &mut Reader<'_>) -> rusqlite::Result<()> {
    let size_domains = message_size_domains(reader)?;
    let mut range_types: Vec<i64> = Vec::new();
    if let Some(sql) = reader
        .schema
        .select("ENUM_NSYS_EVENT_TYPE", &["id", "name"])
    {
        let mut statement = reader.connection.prepare(&sql)?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let name: String = row.get(1).unwrap_or_default();
            if let (Some(id), "NvtxPushPopRange" | "NvtxStartEndRange") = (int(row, 0), &*name) {
                range_types.push(id);
            }
        }
    }
    if range_types.is_empty() {
        range_types = NVTX_RANGE_TYPES.to_vec();
    }
    reader.each_row(
        "NVTX_EVENTS",
        &[
            "start",
            "end?",
            "eventType",
            "globalTid?",
            "text?",
            "textId?",
            "domainId?",
        ],
        |reader, row| {
            let index = reader.next_index();
            let Some(global_tid) = int(row, 3) else {
                reader.orphan_rows += 1;
                return;
            };
            let strings = &reader.strings;
            let process = process(
                &mut reader.processes,
                reader.step_range,
                process_of_tid(global_tid),
            );
            process.assembly.records += 1;
            if int(row, 6).is_some_and(|domain| size_domains.contains(&domain)) {
                process.message_size_records += 1;
            }
            if !int(row, 2).is_some_and(|t| range_types.contains(&t)) {
                return process
                    .skip("NVTX records that are not ranges (marks, domain and name records)");
            }
            let Some(times) = process.times("NVTX ranges", int(row, 0), int(row, 1)) else {
                return;
            };
            let text = row
                .get_ref(4)
                .ok()
                .and_then(|v| strings.text(v))
                .or_else(|| row.get_ref(5).ok().and_then(|v| strings.text(v)));
            let Some(text) = text else {
                return process.skip("NVTX ranges without a name");
            };
            let lane = (
                LaneKind::CpuThread,
                pid_of(global_tid),
                global_tid & TID_MASK,
            );
            let assembly = &mut process.assembly;
            if assembly.step_range(text, lane, times.0, times.1) {
                return;
            }
            if assembly.reads_step_markers()
                && let Some(number) = text.strip_prefix("ProfilerStep#")
            {
                match number.trim().parse() {
                    Ok(number) => assembly.step(number, text, lane, times.0, times.1),
                    Err(_) => assembly
                        .diagnostics
                        .skip("`ProfilerStep#` ranges without a step number"),
                }
                return;
            }
            let (kind, name, sequence) = match nvtx_op(text) {
                Some((op, sequence)) => (EventKind::CpuOp, op, sequence),
                None => (EventKind::UserAnnotation, text, None),
            };
            let name = assembly.intern(name);
            process.push(kind, lane, name, times, None, None, sequence, None, index);
        },
    )
}

/// The NVTX payload columns an export may fill (nsys writes a range's payload to one of them).
const PAYLOAD_COLUMNS: [&str; 9] = [
    "uint64Value",
    "int64Value",
    "doubleValue",
    "uint32Value",
    "int32Value",
    "floatValue",
    "jsonTextId",
    "jsonText",
    "binaryData",
];

/// NCCL's NVTX domain declares payload schemas with a `Message size [bytes]` entry
/// (`NVTX_PAYLOAD_SCHEMA_ENTRIES`); its ranges carry the size only where the export wrote their
/// payload. No export read so far does (the columns are empty), so sizes are not decoded: this
/// says, per process, how many such ranges there are and whether any carries a payload, so
/// that collectives without a size are not mistaken for an oversight.
fn nccl_payloads(reader: &mut Reader<'_>) -> rusqlite::Result<()> {
    let schema = reader.schema;
    // The NVTX pass counted the domain's records: without any, no scan of the table is needed.
    if !reader
        .processes
        .values()
        .any(|process| process.message_size_records > 0)
        || !schema.has_column("NVTX_EVENTS", "globalTid")
    {
        return Ok(());
    }
    let payload: Vec<String> = PAYLOAD_COLUMNS
        .iter()
        .filter(|c| schema.has_column("NVTX_EVENTS", c))
        .map(|c| format!("count(\"{c}\")"))
        .collect();
    let payload = if payload.is_empty() {
        "0".to_string()
    } else {
        payload.join(" + ")
    };
    let sql = format!(
        "SELECT globalTid - (globalTid & {TID_MASK}), count(*), {payload} FROM NVTX_EVENTS \
         WHERE domainId IN (SELECT domainId FROM NVTX_PAYLOAD_SCHEMA_ENTRIES \
         WHERE name LIKE 'Message size%') GROUP BY 1 ORDER BY 1"
    );
    let mut statement = reader.connection.prepare(&sql)?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let (Some(global_pid), Some(ranges), Some(with_payload)) =
            (int(row, 0), int(row, 1), int(row, 2))
        else {
            continue;
        };
        let Some(process) = reader.processes.get_mut(&global_pid) else {
            continue;
        };
        process.assembly.diagnostics.note(if with_payload == 0 {
            format!(
                "{ranges} NVTX records of the domain whose payload schemas hold NCCL's `Message \
                 size [bytes]` carry no payload in this export: collective sizes are unknown \
                 (costed from each kernel's fastest instance)"
            )
        } else {
            format!(
                "{with_payload} of {ranges} NVTX records of NCCL's domain carry a payload, \
                 which stepcast does not decode yet: collective sizes are unknown"
            )
        });
    }
    Ok(())
}

/// The NVTX domains whose payload schemas have a `Message size [bytes]` entry (NCCL's), from
/// the small schema table.
fn message_size_domains(reader: &Reader<'_>) -> rusqlite::Result<BTreeSet<i64>> {
    let mut domains = BTreeSet::new();
    if !reader
        .schema
        .has_column("NVTX_PAYLOAD_SCHEMA_ENTRIES", "domainId")
        || !reader
            .schema
            .has_column("NVTX_PAYLOAD_SCHEMA_ENTRIES", "name")
    {
        return Ok(domains);
    }
    let mut statement = reader.connection.prepare(
        "SELECT DISTINCT domainId FROM NVTX_PAYLOAD_SCHEMA_ENTRIES \
         WHERE name LIKE 'Message size%'",
    )?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        if let Some(domain) = int(row, 0) {
            domains.insert(domain);
        }
    }
    Ok(domains)
}

/// `ThreadNames`: thread (process id, thread id) → name.
fn thread_names(reader: &mut Reader<'_>) -> rusqlite::Result<FxHashMap<(i64, i64), String>> {
    let mut names = FxHashMap::default();
    reader.each_row("ThreadNames", &["globalTid", "nameId"], |reader, row| {
        if let (Some(tid), Some(name)) = (
            int(row, 0),
            row.get_ref(1).ok().and_then(|v| reader.strings.text(v)),
        ) {
            names.insert((pid_of(tid), tid & TID_MASK), name.to_string());
        }
    })?;
    Ok(names)
}

/// A GPU of `TARGET_INFO_GPU`: what the trace says of it, and the limits its multiprocessors
/// put on a kernel's resident blocks (when the export records them all).
pub(super) struct Gpu {
    info: DeviceInfo,
    limits: Option<SmLimits>,
}

/// `TARGET_INFO_GPU` (optional: cut-down exports lack it): CUDA device index → device.
fn gpus(reader: &mut Reader<'_>) -> rusqlite::Result<FxHashMap<i64, Gpu>> {
    let mut gpus = FxHashMap::default();
    reader.each_row(
        "TARGET_INFO_GPU",
        &[
            "cuDevice?",
            "id",
            "name?",
            "computeMajor?",
            "computeMinor?",
            "smCount?",
            "maxWarpsPerSm?",
            "threadsPerWarp?",
            "totalMemory?",
            "maxBlocksPerSm?",
            "maxRegistersPerSm?",
            "maxShmemPerSm?",
        ],
        |reader, row| {
            let Some(id) = int(row, 0).or_else(|| int(row, 1)) else {
                return;
            };
            let name = row
                .get_ref(2)
                .ok()
                .and_then(|v| reader.strings.text(v))
                .unwrap_or("")
                .to_string();
            let threads = match (int(row, 6), int(row, 7)) {
                (Some(warps), Some(per_warp)) => warps.checked_mul(per_warp),
                _ => None,
            };
            let limits = SmLimits::new(
                int(row, 3),
                int(row, 5),
                int(row, 6),
                int(row, 7),
                int(row, 9),
                int(row, 10),
                int(row, 11),
            );
            gpus.insert(
                id,
                Gpu {
                    info: DeviceInfo {
                        id,
                        name,
                        compute_capability: int(row, 3).zip(int(row, 4)),
                        sm_count: int(row, 5),
                        max_threads_per_sm: threads,
                        memory_bytes: int(row, 8).filter(|&bytes| bytes > 0),
                    },
                    limits,
                },
            );
        },
    )?;
    Ok(gpus)
}

/// One process's rows as a [`Trace`], through the [`Assembly`] every whole-file reader ends in
/// (origin, lane numbering, order, steps from `--step-range`); thread names and devices are
/// the export's, shared by every process.
fn finish(
    process: Process,
    thread_names: &FxHashMap<(i64, i64), String>,
    gpus: &FxHashMap<i64, Gpu>,
    path: &Path,
    input_bytes: u64,
) -> Result<Trace, ReadError> {
    let Process {
        mut assembly,
        devices: device_ids,
        kernels_without_limits,
        ..
    } = process;
    for (&(pid, tid), name) in thread_names {
        assembly.lane((LaneKind::CpuThread, pid, tid), Some(name.clone()));
    }
    assembly.devices = device_ids
        .iter()
        .filter_map(|id| gpus.get(id).map(|gpu| gpu.info.clone()))
        .collect();

    let diagnostics = &mut assembly.diagnostics;
    if assembly.devices.is_empty() {
        diagnostics.note("no TARGET_INFO_GPU table: device names and sizes are unknown");
    }
    if kernels_without_limits > 0 {
        diagnostics.note(format!(
            "{kernels_without_limits} kernels' launch configurations are recorded, but not \
             their device's multiprocessor limits (TARGET_INFO_GPU smCount, maxWarpsPerSm, \
             maxBlocksPerSm, maxRegistersPerSm, maxShmemPerSm): how much of the device they \
             fill is unknown, so the replay's device capacity model leaves them alone"
        ));
    }
    diagnostics.note("no rank is recorded in an nsys export: rank and world size are unknown");
    let mut trace = assembly.finish(path, "Nsight Systems export", Runtime::Cuda, input_bytes)?;
    if !trace.syncs.is_empty() {
        trace.diagnostics.note(format!(
            "{} CUPTI synchronization records give exact synchronization dependencies",
            trace.syncs.len()
        ));
    }
    if !trace.kernel_fill.is_empty() {
        trace.diagnostics.note(format!(
            "{} kernels' share of their device from their launch configuration (grid, block, \
             registers, shared memory) and the device's limits: theoretical occupancy",
            trace.kernel_fill.len()
        ));
    }
    Ok(trace)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_names_lose_only_the_version_suffix() {
        assert_eq!(api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(
            api_name("cudaStreamGetCaptureInfo_v2_v11030"),
            "cudaStreamGetCaptureInfo_v2"
        );
        assert_eq!(api_name("cuMemcpyDtoHAsync_v2"), "cuMemcpyDtoHAsync_v2");
        assert_eq!(api_name("cuLaunchKernelEx"), "cuLaunchKernelEx");
    }

    #[test]
    fn emit_nvtx_ranges_name_their_op() {
        assert_eq!(
            nvtx_op("aten::mm, seq = 12, op_id = 34"),
            Some(("aten::mm", Some(12)))
        );
        assert_eq!(
            nvtx_op("aten::to, op_id = 317177"),
            Some(("aten::to", None))
        );
        assert_eq!(nvtx_op("ncclSend"), None);
    }
}
