//! The rows of an export into one [`Trace`] per process with device work.
//!
//! nsys ids: `globalTid` is `(vm << 56) | (pid << 24) | tid` and a `globalPid` the same with
//! `tid` 0, so a row's process is its `globalPid`, or its `globalTid` with the low 24 bits
//! cleared. Times are integer nanoseconds on the session's clock already.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::types::ValueRef;
use rusqlite::{Connection, Row};
use rustc_hash::FxHashMap;

use super::schema::Schema;
use crate::ReadOptions;
use crate::kineto::MAX_DUR_NS;
use crate::model::{
    DeviceInfo, Diagnostics, Event, EventKind, Interner, Lane, LaneId, LaneKind, NameId, Runtime,
    StepMarker, SyncEvent, SyncKind, Trace,
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

/// A lane before lanes are numbered: (kind, process or device, thread or stream).
type LaneKey = (LaneKind, i64, i64);

/// A step marker before lanes are numbered and times made relative.
#[derive(Clone, Copy)]
struct PendingStep {
    number: u64,
    name: NameId,
    lane: LaneKey,
    start_ns: i64,
    dur_ns: i64,
}

/// One process being read.
#[derive(Default)]
struct Process {
    names: Interner,
    /// String id → interned name, so a repeated kernel name is looked up once.
    name_of_id: FxHashMap<i64, NameId>,
    events: Vec<Event>,
    /// Lane key of each event (resolved to a `LaneId` at the end).
    lane_keys: Vec<LaneKey>,
    syncs: Vec<SyncEvent>,
    steps: Vec<PendingStep>,
    /// NVTX ranges matched by `--step-range`, numbered once all are read.
    step_ranges: Vec<PendingStep>,
    devices: BTreeSet<i64>,
    device_rows: u64,
    records: u64,
    diagnostics: Diagnostics,
}

impl Process {
    fn name(&mut self, strings: &Strings, value: ValueRef<'_>) -> Option<NameId> {
        if let ValueRef::Integer(id) = value {
            if let Some(&name) = self.name_of_id.get(&id) {
                return Some(name);
            }
            let name = self.names.intern(strings.text(value)?);
            self.name_of_id.insert(id, name);
            return Some(name);
        }
        strings.text(value).map(|text| self.names.intern(text))
    }

    /// Checks a record's times; `None` (counted) when absent or absurd.
    fn times(&mut self, what: &str, start: Option<i64>, end: Option<i64>) -> Option<(i64, i64)> {
        let (Some(start), Some(end)) = (start, end) else {
            self.diagnostics
                .skip(format!("{what} without a start or an end"));
            return None;
        };
        let dur = end.checked_sub(start);
        match dur {
            Some(dur) if plausible_ns(start) && (0..=MAX_DUR_NS).contains(&dur) => {
                Some((start, dur))
            }
            _ => {
                self.diagnostics
                    .skip(format!("{what} with an absurd start or end"));
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
        file_index: u32,
    ) {
        self.events.push(Event {
            kind,
            lane: LaneId(0),
            name,
            start_ns,
            dur_ns,
            correlation: correlation.filter(|&c| c > 0).map(|c| c as u64),
            external_id: None,
            bytes: bytes.filter(|&b| b >= 0).map(|b| b as u64),
            sequence_number,
            file_index,
        });
        self.lane_keys.push(lane);
    }
}

/// Everything read, by process (`globalPid`).
struct Reader<'a> {
    connection: &'a Connection,
    schema: &'a Schema,
    strings: Strings,
    processes: BTreeMap<i64, Process>,
    /// Rows read so far, over every table: a record's position in messages.
    rows: u32,
    tables_used: Vec<&'static str>,
    /// Rows without a `globalPid`/`globalTid`: no process to count them in, so counted here
    /// and reported in the first trace.
    orphan_rows: u64,
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

pub fn read_processes(
    connection: &Connection,
    schema: &Schema,
    options: &ReadOptions,
) -> rusqlite::Result<Vec<Trace>> {
    let mut reader = Reader {
        connection,
        schema,
        strings: Strings::read(connection, schema)?,
        processes: BTreeMap::new(),
        rows: 0,
        tables_used: Vec::new(),
        orphan_rows: 0,
    };
    device_work(&mut reader)?;
    let memory_kinds = enum_labels(connection, schema, "ENUM_CUDA_MEM_KIND", &MEMORY_KINDS)?;
    copies(&mut reader, &memory_kinds)?;
    memsets(&mut reader, &memory_kinds)?;
    calls(&mut reader)?;
    syncs(&mut reader)?;
    nvtx(&mut reader, options)?;
    let thread_names = thread_names(&mut reader)?;
    let gpus = gpus(&mut reader)?;
    let tables_used = reader.tables_used.join(", ");
    let reader_orphans = reader.orphan_rows;

    let mut without_device = 0u64;
    let mut traces = Vec::new();
    let n_with_device = reader
        .processes
        .values()
        .filter(|p| p.device_rows > 0)
        .count();
    for (global_pid, process) in reader.processes {
        if process.device_rows == 0 {
            without_device += process.records;
            continue;
        }
        let mut trace = finish(process, &thread_names, &gpus, options);
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
            .skip_n("records without a process or thread id", reader_orphans);
    }
    Ok(traces)
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

/// Reads one device-work table (kernels, copies, memsets): its rows become `kind` events on
/// their (device, stream) lane, named by `name`, with the bytes of `bytes_column` if given.
/// `what` names the records in diagnostics.
fn device_table(
    reader: &mut Reader<'_>,
    table: &'static str,
    (kind, what): (EventKind, &'static str),
    own_columns: &[&str],
    bytes_column: Option<usize>,
    mut name: impl FnMut(&mut Process, &Strings, &Row<'_>) -> Option<NameId>,
) -> rusqlite::Result<()> {
    let columns: Vec<&str> = DEVICE_COLUMNS.iter().chain(own_columns).copied().collect();
    reader.each_row(table, &columns, |reader, row| {
        let index = reader.next_index();
        let Some(global_pid) = int(row, 5) else {
            reader.orphan_rows += 1;
            return;
        };
        let strings = &reader.strings;
        let process = reader.processes.entry(global_pid).or_default();
        process.records += 1;
        let Some(times) = process.times(what, int(row, 0), int(row, 1)) else {
            return;
        };
        let (Some(device), Some(stream)) = (int(row, 2), int(row, 3)) else {
            return process
                .diagnostics
                .skip(format!("{what} without a device or stream"));
        };
        let Some(name) = name(process, strings, row) else {
            return process
                .diagnostics
                .skip(format!("{what} whose name is not in StringIds"));
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
            index,
        );
    })
}

fn device_work(reader: &mut Reader<'_>) -> rusqlite::Result<()> {
    device_table(
        reader,
        "CUPTI_ACTIVITY_KIND_KERNEL",
        (EventKind::Kernel, "kernels"),
        &["demangledName?", "shortName?"],
        None,
        |process, strings, row| {
            let mut column = |c| row.get_ref(c).ok().and_then(|v| process.name(strings, v));
            column(6).or_else(|| column(7))
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
        |process, _, row| {
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
            Some(process.names.intern(&name))
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
        |process, _, row| {
            let memory = int(row, 7)
                .and_then(|k| memory_kinds.get(&k))
                .map_or("Unknown", String::as_str);
            Some(process.names.intern(&format!("Memset ({memory})")))
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
            let process = reader
                .processes
                .entry(process_of_tid(global_tid))
                .or_default();
            process.records += 1;
            let Some(times) = process.times("runtime calls", int(row, 0), int(row, 1)) else {
                return;
            };
            let Some((name, kind)) = named else {
                return process
                    .diagnostics
                    .skip("runtime calls whose name is not in StringIds");
            };
            let (name, kind) = (process.names.intern(name), *kind);
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
            let process = reader.processes.entry(global_pid).or_default();
            process.records += 1;
            let Some((start_ns, dur_ns)) = process.times("sync records", int(row, 0), int(row, 1))
            else {
                return;
            };
            let Some(&kind) = int(row, 6).and_then(|t| sync_types.get(&t)) else {
                return process.diagnostics.skip("sync records of unknown type");
            };
            let Some(correlation) = int(row, 4).filter(|&c| c > 0) else {
                return process
                    .diagnostics
                    .skip("sync records without a correlation id");
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
                return process.diagnostics.skip(
                    "stream-wait sync records without their event's record (no CUDA_EVENT row): \
                     the call's semantics are used",
                );
            }
            process.syncs.push(SyncEvent {
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

fn nvtx(reader: &mut Reader<'_>, options: &ReadOptions) -> rusqlite::Result<()> {
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
        ],
        |reader, row| {
            let index = reader.next_index();
            let Some(global_tid) = int(row, 3) else {
                reader.orphan_rows += 1;
                return;
            };
            let strings = &reader.strings;
            let process = reader
                .processes
                .entry(process_of_tid(global_tid))
                .or_default();
            process.records += 1;
            if !int(row, 2).is_some_and(|t| range_types.contains(&t)) {
                return process
                    .diagnostics
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
                return process.diagnostics.skip("NVTX ranges without a name");
            };
            let lane = (
                LaneKind::CpuThread,
                pid_of(global_tid),
                global_tid & TID_MASK,
            );
            if let Some(pattern) = &options.step_range {
                if pattern.is_match(text) {
                    let name = process.names.intern(text);
                    process.step_ranges.push(PendingStep {
                        // Numbered in start order once every range is read.
                        number: 0,
                        name,
                        lane,
                        start_ns: times.0,
                        dur_ns: times.1,
                    });
                    return;
                }
            } else if let Some(number) = text.strip_prefix("ProfilerStep#") {
                match number.trim().parse() {
                    Ok(number) => {
                        let name = process.names.intern(text);
                        process.steps.push(PendingStep {
                            number,
                            name,
                            lane,
                            start_ns: times.0,
                            dur_ns: times.1,
                        });
                    }
                    Err(_) => process
                        .diagnostics
                        .skip("`ProfilerStep#` ranges without a step number"),
                }
                return;
            }
            let (kind, name, sequence) = match nvtx_op(text) {
                Some((op, sequence)) => (EventKind::CpuOp, op, sequence),
                None => (EventKind::UserAnnotation, text, None),
            };
            let name = process.names.intern(name);
            process.push(kind, lane, name, times, None, None, sequence, index);
        },
    )
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

/// `TARGET_INFO_GPU` (optional: cut-down exports lack it): CUDA device index → device.
fn gpus(reader: &mut Reader<'_>) -> rusqlite::Result<FxHashMap<i64, DeviceInfo>> {
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
            gpus.insert(
                id,
                DeviceInfo {
                    id,
                    name,
                    compute_capability: int(row, 3).zip(int(row, 4)),
                    sm_count: int(row, 5),
                    max_threads_per_sm: threads,
                    memory_bytes: int(row, 8).filter(|&bytes| bytes > 0),
                },
            );
        },
    )?;
    Ok(gpus)
}

/// One process's rows as a [`Trace`]: times relative to its earliest record, lanes in order,
/// events sorted by lane, start and longest first.
fn finish(
    mut process: Process,
    thread_names: &FxHashMap<(i64, i64), String>,
    gpus: &FxHashMap<i64, DeviceInfo>,
    options: &ReadOptions,
) -> Trace {
    if options.step_range.is_some() {
        process
            .step_ranges
            .sort_by_key(|step| (step.start_ns, step.dur_ns));
        for (number, step) in process.step_ranges.iter().enumerate() {
            process.steps.push(PendingStep {
                number: number as u64,
                ..*step
            });
        }
    }
    let origin_ns = process
        .events
        .iter()
        .map(|e| e.start_ns)
        .chain(process.syncs.iter().map(|s| s.start_ns))
        .chain(process.steps.iter().map(|s| s.start_ns))
        .min()
        .unwrap_or(0);
    let lane_keys: BTreeSet<LaneKey> = process
        .lane_keys
        .iter()
        .copied()
        .chain(process.steps.iter().map(|s| s.lane))
        .collect();
    let lane_ids: FxHashMap<LaneKey, LaneId> = lane_keys
        .iter()
        .enumerate()
        .map(|(i, &key)| (key, LaneId(i as u32)))
        .collect();
    let lanes: Vec<Lane> = lane_keys
        .iter()
        .map(|&(kind, pid, tid)| Lane {
            kind,
            pid,
            tid,
            name: match kind {
                LaneKind::CpuThread => thread_names.get(&(pid, tid)).cloned(),
                LaneKind::DeviceStream => None,
            },
            file_pid: None,
            file_tid: None,
        })
        .collect();
    for (event, key) in process.events.iter_mut().zip(&process.lane_keys) {
        event.lane = lane_ids[key];
        event.start_ns -= origin_ns;
    }
    // File order among ties (the sort is stable): a record's row position.
    process
        .events
        .sort_by_key(|e| (e.lane, e.start_ns, std::cmp::Reverse(e.dur_ns)));
    for sync in &mut process.syncs {
        sync.start_ns -= origin_ns;
    }
    process
        .syncs
        .sort_unstable_by_key(|s| (s.start_ns, s.correlation));
    let mut steps: Vec<StepMarker> = process
        .steps
        .iter()
        .map(|step| StepMarker {
            number: step.number,
            name: step.name,
            lane: lane_ids[&step.lane],
            start_ns: step.start_ns - origin_ns,
            dur_ns: step.dur_ns,
        })
        .collect();
    steps.sort_unstable_by_key(|s| (s.start_ns, s.number));
    let devices: Vec<DeviceInfo> = process
        .devices
        .iter()
        .filter_map(|id| gpus.get(id).cloned())
        .collect();

    let diagnostics = &mut process.diagnostics;
    if devices.is_empty() {
        diagnostics.note("no TARGET_INFO_GPU table: device names and sizes are unknown");
    }
    if !process.syncs.is_empty() {
        diagnostics.note(format!(
            "{} CUPTI synchronization records give exact synchronization dependencies",
            process.syncs.len()
        ));
    }
    diagnostics.note("no rank is recorded in an nsys export: rank and world size are unknown");
    if let Some(pattern) = &options.step_range {
        diagnostics.note(format!(
            "steps are the {} NVTX ranges matching `{}`",
            steps.len(),
            pattern.as_str()
        ));
    }
    Trace {
        origin_ns,
        file_time_base_ns: 0,
        names: process.names,
        lanes,
        events: process.events,
        syncs: process.syncs,
        steps,
        memory: Vec::new(),
        devices,
        distributed: None,
        process_id: None,
        runtime: Some(Runtime::Cuda),
        input_bytes: 0,
        records: process.records,
        diagnostics: process.diagnostics,
        comm_args: Vec::new(),
        op_inputs: Vec::new(),
        kernel_fill: Vec::new(),
        comm_tensors: Vec::new(),
        links: Vec::new(),
    }
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
