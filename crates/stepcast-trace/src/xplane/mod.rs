//! XPlane protobufs (`*.xplane.pb`), written by the TensorFlow 2 and JAX profilers (and read by
//! TensorBoard's profile plugin and xprof): an `XSpace` of planes, each a set of lines (threads,
//! streams) of events whose names and values live in per-plane metadata tables.
//!
//! Read: the `/host:CPU` plane's lines as host threads, their TraceMe events as ops (Python
//! tracer frames, `$file:line function`, as Python frames), the events CUPTI recorded for a
//! launch (they carry a `correlation_id`) as runtime calls; each
//! `/device:*` plane's `Stream #N` lines as streams (on a plane without them, its `XLA Ops`
//! line: TPUs), their events as kernels, copies and memsets linked by `correlation_id`; host
//! events with a `step_num` stat (`StepTraceAnnotation`, Keras' `train` TraceMe) as steps; in
//! a file without them, the host events xprof takes as step markers by name (see
//! [`STEP_MARKER_NAMES`]); with `--step-range`, the host events the pattern matches instead.
//! TensorFlow's allocator records (`MemoryAllocation`, `MemoryDeallocation`) become memory
//! events. Counted and skipped: the derived lines xprof adds to a device plane (`Steps`,
//! `XLA Ops`, `TensorFlow Ops`, name scopes: regroupings of the same stream events), other
//! instants, aggregated events (no time), planes of other kinds.

mod proto;

use std::collections::BTreeMap;
use std::path::Path;

use prost::Message;

use crate::ReadOptions;
use crate::assemble::{Assembly, NewEvent, NewMemory};
use crate::error::ReadError;
use crate::model::{DeviceInfo, EventKind, LaneKind, Runtime, Trace};
use proto::{XEvent, XEventMetadata, XLine, XPlane, XSpace, x_event, x_stat};

/// Whether `head` (the file's first bytes) opens an XSpace: its first field is a plane
/// (field 1, length-delimited) whose own first field is its id or its name (a serializer
/// writes fields in number order, and a plane has a name), and the head is binary, not text
/// (a JSON document may also start with a newline).
pub fn looks_like(head: &[u8]) -> bool {
    let Some((&tag, rest)) = head.split_first() else {
        return false;
    };
    if tag != 0x0a || !is_binary(head) {
        return false;
    }
    let Some((_, rest)) = varint(rest) else {
        return false;
    };
    // id (field 1, varint) or name (field 2, length-delimited).
    matches!(rest.first(), Some(0x08 | 0x12))
}

/// Whether the first 64 bytes hold a control byte no text has (protobuf tags and lengths are
/// small numbers: 0x08, 0x10, 0x12, ...).
fn is_binary(head: &[u8]) -> bool {
    head.iter()
        .take(64)
        .any(|&b| matches!(b, 0x00..=0x08 | 0x0e..=0x1f))
}

/// Whether `head` reads as protobuf wire format of some other schema: it parses as whole
/// fields (three or more, one length-delimited) up to the end of the head or its first 256
/// bytes, or it is a length-prefixed message that does (how Chakra execution traces and other
/// delimited streams are written). Text and JSON are never taken: they hold no control byte
/// (and their bytes soon make a wire type protobuf does not have).
pub fn looks_like_protobuf(head: &[u8]) -> bool {
    if !is_binary(head) {
        return false;
    }
    let window = &head[..head.len().min(256)];
    let raw = fields(window).is_some_and(|(n, delimited, _)| n >= 3 && delimited);
    let prefixed = varint(head).is_some_and(|(len, rest)| {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        (8..=rest.len()).contains(&len)
            && fields(&rest[..len]).is_some_and(|(n, _, whole)| n >= 1 && whole)
    });
    raw || prefixed
}

/// Counts the whole fields at the start of `bytes`: (count, whether one is length-delimited,
/// whether they end exactly at the end of `bytes`). `None` at a field protobuf cannot have.
fn fields(mut bytes: &[u8]) -> Option<(usize, bool, bool)> {
    let (mut n, mut delimited) = (0, false);
    while !bytes.is_empty() {
        let Some((tag, rest)) = varint(bytes) else {
            return Some((n, delimited, false));
        };
        if tag >> 3 == 0 {
            return None;
        }
        let rest = match tag & 7 {
            0 => varint(rest).map(|(_, rest)| rest),
            1 => rest.get(8..),
            2 => {
                delimited = true;
                let Some((len, rest)) = varint(rest) else {
                    return Some((n, delimited, false));
                };
                usize::try_from(len).ok().and_then(|len| rest.get(len..))
            }
            5 => rest.get(4..),
            _ => return None,
        };
        let Some(rest) = rest else {
            return Some((n, delimited, false));
        };
        n += 1;
        bytes = rest;
    }
    Some((n, delimited, true))
}

/// A base-128 varint and the bytes after it.
fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

/// Host events that mark a step by their name alone, in a file whose events carry no
/// `step_num`: xprof's explicit host step markers (`IsExplicitHostStepMarker`: a name that
/// begins `train`, `test` or `TraceContext` and holds no `/`, so TensorFlow's op names such as
/// `training/Adam/...` are not steps), and `StepMarker`.
pub const STEP_MARKER_NAMES: &str = "^(?:train|test|TraceContext|StepMarker)[^/]*$";

/// Reads an XPlane protobuf. `path` is used in messages only; steps are the host events
/// `options.step_range` matches, if given.
pub fn read(bytes: &[u8], path: &Path, options: &ReadOptions) -> Result<Trace, ReadError> {
    let not_xplane = |detail: String| ReadError::NotXPlane {
        path: path.to_path_buf(),
        detail,
    };
    let space = XSpace::decode(bytes).map_err(|e| {
        not_xplane(format!(
            "it does not decode as an XSpace ({e}); a truncated file or another protobuf"
        ))
    })?;
    let known =
        |plane: &XPlane| plane.name.starts_with("/host:") || plane.name.starts_with("/device:");
    if !space.planes.iter().any(known) {
        let names: Vec<&str> = space
            .planes
            .iter()
            .map(|p| p.name.as_str())
            .take(4)
            .collect();
        return Err(not_xplane(if space.planes.is_empty() {
            "it holds no plane".to_string()
        } else {
            format!(
                "none of its {} planes is a /host: or /device: plane (names: {:?})",
                space.planes.len(),
                names
            )
        }));
    }

    let mut assembly = Assembly::default();
    let mut file_index = 0u32;
    let mut summary = Summary::default();
    // What a step-range pattern matches here, said first (the fallback below names its own).
    assembly.steps_from_ranges(None, "host events");
    if let Some(pattern) = &options.step_range {
        assembly.steps_from_ranges(Some(pattern), "host events");
    } else if !space
        .planes
        .iter()
        .filter(|plane| plane.name == "/host:CPU")
        .any(has_step_numbers)
    {
        // The pattern is a constant, checked by a test: it always compiles.
        if let Ok(names) = regex::Regex::new(STEP_MARKER_NAMES) {
            assembly.steps_from_ranges(
                Some(&names),
                "host events named as xprof's step markers (no event has a `step_num` stat)",
            );
            summary.steps_by_name = true;
        }
    }
    for plane in &space.planes {
        if plane.name == "/host:CPU" {
            read_host(plane, &mut assembly, &mut file_index, &mut summary);
        } else if let Some(device) = plane.name.strip_prefix("/device:") {
            read_device(plane, device, &mut assembly, &mut file_index, &mut summary);
        } else {
            let events: u64 = plane.lines.iter().map(|l| l.events.len() as u64).sum();
            assembly.records += events;
            assembly.diagnostics.skip_n(
                format!("event of plane `{}` (not read)", plane.name),
                events,
            );
        }
    }
    summary.note(&space, &mut assembly);
    assembly.finish(path, "XPlane", Runtime::Cuda, bytes.len() as u64)
}

/// What was read, for the notes `info` shows.
#[derive(Default)]
struct Summary {
    host_lines: u64,
    stream_lines: u64,
    device_planes: Vec<String>,
    launches_named: u64,
    steps: u64,
    xla_ops_as_stream: u64,
    memory_events: u64,
    /// Steps are host events named like step markers, the file having no `step_num` stat.
    steps_by_name: bool,
}

/// Whether any event of the plane carries a `step_num` stat (its own or its metadata's).
fn has_step_numbers(plane: &XPlane) -> bool {
    let Some((&id, _)) = plane
        .stat_metadata
        .iter()
        .find(|(_, meta)| meta.name == "step_num")
    else {
        return false;
    };
    let carries = |stats: &[proto::XStat]| stats.iter().any(|stat| stat.metadata_id == id);
    plane
        .event_metadata
        .values()
        .any(|meta| carries(&meta.stats))
        || plane
            .lines
            .iter()
            .flat_map(|line| &line.events)
            .any(|event| carries(&event.stats))
}

impl Summary {
    fn note(&self, space: &XSpace, assembly: &mut Assembly) {
        let reads_step_markers = assembly.reads_step_markers();
        let notes = &mut assembly.diagnostics;
        let planes = if self.device_planes.is_empty() {
            String::new()
        } else {
            format!(" ({})", self.device_planes.join(", "))
        };
        notes.note(format!(
            "read as XPlane (XSpace protobuf): {} host thread lines, {} device stream lines on {} device planes{planes}",
            self.host_lines,
            self.stream_lines,
            self.device_planes.len(),
        ));
        if self.launches_named > 0 {
            notes.note(format!(
                "{} host events with a `correlation_id` are the launching calls CUPTI recorded: XPlane names them after the work launched, stepcast after the call (`cudaLaunchKernel`, `cudaMemcpy`, `cudaMemcpyAsync`, `cudaMemsetAsync`)",
                self.launches_named
            ));
        }
        if self.memory_events > 0 {
            notes.note(format!(
                "{} allocator records (`MemoryAllocation`/`MemoryDeallocation`) are memory events: `GPU_<n>_bfc` is GPU n, other allocators host memory",
                self.memory_events
            ));
        }
        if self.xla_ops_as_stream > 0 {
            notes.note(format!(
                "{} device planes have no `Stream #` line: their `XLA Ops` line is read as their one stream",
                self.xla_ops_as_stream
            ));
        }
        if self.steps > 0 {
            notes.note(format!(
                "{} step markers from host events with a `step_num` stat",
                self.steps
            ));
        } else if self.steps_by_name {
            // `Assembly::finish` says how many events the names made steps.
        } else if reads_step_markers {
            notes.note(
                "no step markers (no host event with a `step_num` stat): the window is one step",
            );
        }
        for error in &space.errors {
            notes.note(format!("the profiler reported an error: {error}"));
        }
        for warning in &space.warnings {
            notes.note(format!("the profiler reported a warning: {warning}"));
        }
        notes.note("no distributed information: rank and world size are unknown");
    }
}

/// A plane's stat names by id, and lookups of an event's stats (its own, then its metadata's).
struct Stats<'a> {
    plane: &'a XPlane,
    ids: BTreeMap<&'a str, i64>,
}

impl<'a> Stats<'a> {
    fn new(plane: &'a XPlane) -> Self {
        let ids = plane
            .stat_metadata
            .iter()
            .map(|(&id, meta)| (meta.name.as_str(), id))
            .collect();
        Stats { plane, ids }
    }

    fn get(
        &self,
        event: &'a XEvent,
        meta: Option<&'a XEventMetadata>,
        name: &str,
    ) -> Option<&'a x_stat::Value> {
        let id = *self.ids.get(name)?;
        let own = event.stats.iter();
        let shared = meta.into_iter().flat_map(|m| m.stats.iter());
        own.chain(shared)
            .find(|stat| stat.metadata_id == id)
            .and_then(|stat| stat.value.as_ref())
    }

    fn uint(&self, event: &'a XEvent, meta: Option<&'a XEventMetadata>, name: &str) -> Option<u64> {
        match self.get(event, meta, name)? {
            x_stat::Value::Uint64Value(v) => Some(*v),
            x_stat::Value::Int64Value(v) => u64::try_from(*v).ok(),
            x_stat::Value::StrValue(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    fn text(
        &self,
        event: &'a XEvent,
        meta: Option<&'a XEventMetadata>,
        name: &str,
    ) -> Option<&'a str> {
        match self.get(event, meta, name)? {
            x_stat::Value::StrValue(s) => Some(s),
            // A string stored once, as the name of a stat metadata entry.
            x_stat::Value::RefValue(id) => {
                let id = i64::try_from(*id).ok()?;
                self.plane.stat_metadata.get(&id).map(|m| m.name.as_str())
            }
            _ => None,
        }
    }
}

/// An event's absolute start and duration in ns, or why it has none. XPlane times are
/// picoseconds after the line's start (ns); start and end are each rounded down to the ns,
/// so that durations of back-to-back events still add up to their span.
fn times(line_ns: i64, event: &XEvent) -> Result<(i64, i64), &'static str> {
    let offset_ps = match event.data {
        Some(x_event::Data::OffsetPs(offset)) => offset,
        Some(x_event::Data::NumOccurrences(_)) => {
            return Err("aggregated event (`num_occurrences`, no time)");
        }
        None => 0,
    };
    let start_ps = i128::from(line_ns) * 1000 + i128::from(offset_ps);
    let end_ps = start_ps + i128::from(event.duration_ps);
    if event.duration_ps < 0 {
        return Err("negative or absurd duration");
    }
    let start = i64::try_from(start_ps.div_euclid(1000)).map_err(|_| "timestamp out of range")?;
    let end = i64::try_from(end_ps.div_euclid(1000)).map_err(|_| "timestamp out of range")?;
    let dur = end
        .checked_sub(start)
        .ok_or("negative or absurd duration")?;
    Ok((start, dur))
}

/// The host lane's process id: one XSpace is one host process.
const HOST_PID: i64 = 0;

fn read_host(plane: &XPlane, assembly: &mut Assembly, file_index: &mut u32, summary: &mut Summary) {
    let stats = Stats::new(plane);
    for line in &plane.lines {
        summary.host_lines += 1;
        let lane = (LaneKind::CpuThread, HOST_PID, line.id);
        let name = if line.display_name.is_empty() {
            &line.name
        } else {
            &line.display_name
        };
        assembly.lane(lane, Some(name.clone()));
        for event in &line.events {
            let Some(Timed {
                index,
                meta,
                name,
                start_abs_ns,
                dur_ns,
            }) = timed(plane, line, event, assembly, file_index)
            else {
                continue;
            };
            if dur_ns > 0 && assembly.step_range(name, lane, start_abs_ns, dur_ns) {
                continue;
            }
            if assembly.reads_step_markers()
                && let Some(number) = stats.uint(event, meta, "step_num")
            {
                summary.steps += 1;
                assembly.step(number, name, lane, start_abs_ns, dur_ns);
                continue;
            }
            if let "MemoryAllocation" | "MemoryDeallocation" = name {
                match memory_event(&stats, event, meta, name == "MemoryAllocation") {
                    Some((device, bytes, total_allocated, total_reserved)) => {
                        assembly.memory(NewMemory {
                            time_abs_ns: start_abs_ns,
                            device,
                            bytes,
                            total_allocated,
                            total_reserved,
                            addr: None,
                            lane,
                        });
                        summary.memory_events += 1;
                    }
                    None => assembly
                        .diagnostics
                        .skip("memory record without `allocator_name` and `allocation_bytes`"),
                }
                continue;
            }
            if dur_ns == 0 {
                assembly
                    .diagnostics
                    .skip("instant host event (no duration)");
                continue;
            }
            let correlation = stats.uint(event, meta, "correlation_id");
            let (kind, name) = match correlation {
                Some(_) => {
                    summary.launches_named += 1;
                    (EventKind::RuntimeCall, call_name(&stats, event, meta, name))
                }
                // xprof's Python tracer names a frame `$file:line function`.
                None if name.starts_with('$') => (EventKind::PythonFunction, name),
                None => (EventKind::CpuOp, name),
            };
            let name = assembly.intern(name);
            assembly.push(NewEvent {
                lane,
                kind,
                name,
                start_abs_ns,
                dur_ns,
                correlation,
                bytes: None,
                sequence_number: None,
                fill: None,
                file_index: index,
            });
        }
    }
}

/// A TensorFlow allocator record (`MemoryAllocation` / `MemoryDeallocation` TraceMe): the
/// device of its allocator (`GPU_<n>_bfc` is GPU n; any other allocator, e.g. `gpu_host_bfc`,
/// is host memory, -1), the bytes allocated (freed: negative), and the allocator's totals after
/// it (`bytes_allocated`, `bytes_reserved`).
fn memory_event<'a>(
    stats: &Stats<'a>,
    event: &'a XEvent,
    meta: Option<&'a XEventMetadata>,
    allocation: bool,
) -> Option<(i64, i64, Option<i64>, Option<i64>)> {
    let allocator = stats.text(event, meta, "allocator_name")?;
    let bytes = i64::try_from(stats.uint(event, meta, "allocation_bytes")?).ok()?;
    let device = allocator
        .strip_prefix("GPU_")
        .and_then(|rest| rest.strip_suffix("_bfc"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(-1);
    let total = |name| {
        stats
            .uint(event, meta, name)
            .and_then(|v| i64::try_from(v).ok())
    };
    Some((
        device,
        if allocation { bytes } else { -bytes },
        total("bytes_allocated"),
        total("bytes_reserved"),
    ))
}

/// The runtime call behind a host event CUPTI recorded for a launch. XPlane names it after
/// the work (the kernel's name, `MemcpyH2D`); the graph needs the call, which the event's
/// details tell: a kernel launch, or a copy whose `async` flag says whether the call waited.
fn call_name<'a>(
    stats: &Stats<'a>,
    event: &'a XEvent,
    meta: Option<&'a XEventMetadata>,
    name: &'a str,
) -> &'a str {
    if name.starts_with("cu") || name.starts_with("hip") {
        return name; // already an API name
    }
    if let Some(details) = stats.text(event, meta, "memcpy_details") {
        return if detail(details, "async") == Some(0) {
            "cudaMemcpy"
        } else {
            "cudaMemcpyAsync"
        };
    }
    if name.starts_with("Memset") {
        return "cudaMemsetAsync";
    }
    if name.starts_with("Memcpy") {
        return "cudaMemcpyAsync";
    }
    "cudaLaunchKernel"
}

/// A number of a details stat (`size:112 dest:4 async:0`).
fn detail(details: &str, key: &str) -> Option<u64> {
    details.split_whitespace().find_map(|part| {
        let (k, v) = part.split_once(':')?;
        (k == key).then(|| v.parse().ok()).flatten()
    })
}

/// A device line of stream events as CUPTI recorded them (`Stream #134(Compute)`); the other
/// lines of a GPU plane are xprof's regroupings of the same work.
fn is_stream_line(name: &str) -> bool {
    name.starts_with("Stream #")
}

fn read_device(
    plane: &XPlane,
    device: &str,
    assembly: &mut Assembly,
    file_index: &mut u32,
    summary: &mut Summary,
) {
    let stats = Stats::new(plane);
    // `GPU:3` → 3; a plane without a number keeps its id.
    let index = device
        .rsplit(':')
        .next()
        .and_then(|n| n.parse::<i64>().ok())
        .unwrap_or(plane.id);
    summary.device_planes.push(plane.name.clone());
    let plane_stat = |name: &str| -> Option<i64> {
        let id = *stats.ids.get(name)?;
        plane
            .stats
            .iter()
            .find(|s| s.metadata_id == id)
            .and_then(|s| match s.value.as_ref()? {
                x_stat::Value::Int64Value(v) => Some(*v),
                x_stat::Value::Uint64Value(v) => i64::try_from(*v).ok(),
                _ => None,
            })
    };
    assembly.devices.push(DeviceInfo {
        id: index,
        name: plane.name.clone(),
        compute_capability: plane_stat("compute_cap_major").zip(plane_stat("compute_cap_minor")),
        sm_count: plane_stat("core_count"),
        max_threads_per_sm: None,
        // xprof's device planes say their memory as `memory_size`, where they say it.
        memory_bytes: plane_stat("memory_size").filter(|&b| b > 0),
    });
    let has_streams = plane.lines.iter().any(|l| is_stream_line(&l.name));
    if !has_streams && plane.lines.iter().any(|l| l.name == "XLA Ops") {
        summary.xla_ops_as_stream += 1;
    }
    for line in &plane.lines {
        let is_stream = is_stream_line(&line.name) || (!has_streams && line.name == "XLA Ops");
        if !is_stream {
            assembly.records += line.events.len() as u64;
            assembly.diagnostics.skip_n(
                format!(
                    "event of the derived device line `{}` (xprof's regrouping of the stream events, not more work)",
                    line.name
                ),
                line.events.len() as u64,
            );
            continue;
        }
        summary.stream_lines += 1;
        let lane = (LaneKind::DeviceStream, index, line.id);
        for event in &line.events {
            let Some(Timed {
                index,
                meta,
                name,
                start_abs_ns,
                dur_ns,
            }) = timed(plane, line, event, assembly, file_index)
            else {
                continue;
            };
            let copy = stats.text(event, meta, "memcpy_details");
            let kind = if copy.is_some() || name.starts_with("Memcpy") {
                EventKind::Memcpy
            } else if name.starts_with("Memset") {
                EventKind::Memset
            } else {
                EventKind::Kernel
            };
            let name = assembly.intern(name);
            assembly.push(NewEvent {
                lane,
                kind,
                name,
                start_abs_ns,
                dur_ns,
                correlation: stats.uint(event, meta, "correlation_id"),
                bytes: copy.and_then(|d| detail(d, "size")),
                sequence_number: None,
                fill: None,
                file_index: index,
            });
        }
    }
}

/// An event of a line with its metadata, name and times resolved.
struct Timed<'a> {
    /// The event's position among the file's events.
    index: u32,
    meta: Option<&'a XEventMetadata>,
    name: &'a str,
    start_abs_ns: i64,
    dur_ns: i64,
}

/// Counts `event` as a record and resolves it; an event without a time is counted as skipped
/// (`None`).
fn timed<'a>(
    plane: &'a XPlane,
    line: &XLine,
    event: &XEvent,
    assembly: &mut Assembly,
    file_index: &mut u32,
) -> Option<Timed<'a>> {
    assembly.records += 1;
    let index = *file_index;
    *file_index = file_index.saturating_add(1);
    let meta = plane.event_metadata.get(&event.metadata_id);
    match times(line.timestamp_ns, event) {
        Ok((start_abs_ns, dur_ns)) => Some(Timed {
            index,
            meta,
            name: meta.map_or("", |m| m.name.as_str()),
            start_abs_ns,
            dur_ns,
        }),
        Err(reason) => {
            assembly.diagnostics.skip(reason);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::STEP_MARKER_NAMES;

    #[test]
    fn step_marker_names_are_xprofs() {
        let names = regex::Regex::new(STEP_MARKER_NAMES).expect("the pattern compiles");
        for step in [
            "train",
            "train_step",
            "test",
            "test_step 3",
            "TraceContext",
            "StepMarker",
        ] {
            assert!(names.is_match(step), "{step}");
        }
        // Op names under a `training/` scope, Python frames and jitted calls are not steps.
        for other in [
            "training/Adam/update",
            "$train.py:10 train_step",
            "PjitFunction(train_step)",
            "retrain",
        ] {
            assert!(!names.is_match(other), "{other}");
        }
    }
}
