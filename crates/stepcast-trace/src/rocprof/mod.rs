//! AMD rocprofv3 JSON (`rocprofv3 --kernel-trace --hip-trace --output-format json`): the
//! `rocprofiler-sdk-tool` document of rocprofiler-sdk.
//!
//! Read: kernel dispatches (one lane per GPU and HIP stream; the HSA queue where a file has no
//! stream ids), HIP API calls (one lane per host thread) linked to the work they enqueued by
//! rocprofiler-sdk's internal correlation id, asynchronous memory copies, the GPU agents as
//! devices. RCCL kernels (`ncclDevKernel_*`) keep their names, which is what makes them
//! collectives to the graph. Counted and skipped: every other record kind (HSA API, markers,
//! RCCL API, allocations, scratch memory, ...), and every process after the first (a trace is
//! one process). The CSV output is not read.

mod records;

use std::collections::BTreeMap;
use std::path::Path;

use crate::ReadOptions;
use crate::assemble::{Assembly, LaneKey, NewEvent};
use crate::error::ReadError;
use crate::model::{DeviceInfo, EventKind, LaneKind, Runtime, Trace};
use records::{Agent, Document, Process};

/// The document's only top-level member.
const TOOL_KEY: &[u8] = b"\"rocprofiler-sdk-tool\"";

/// Whether `head` (the first bytes of the uncompressed file) opens a rocprofv3 JSON document:
/// `{` and then the `rocprofiler-sdk-tool` member.
pub fn looks_like(head: &[u8]) -> bool {
    let rest = trim_start(head);
    rest.first() == Some(&b'{') && trim_start(&rest[1..]).starts_with(TOOL_KEY)
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[start..]
}

/// Reads a rocprofv3 JSON document (uncompressed bytes). `path` is used in messages only;
/// steps are the ROCTx ranges `options.step_range` matches, if given.
pub fn read(bytes: &[u8], path: &Path, options: &ReadOptions) -> Result<Trace, ReadError> {
    let document: Document = serde_json::from_slice(bytes).map_err(|e| json_error(e, path))?;
    let mut processes = document.processes.into_iter();
    let Some(process) = processes.next() else {
        return Err(ReadError::NotATrace {
            path: path.to_path_buf(),
            detail: "its `rocprofiler-sdk-tool` array is empty (no profiled process)".to_string(),
        });
    };
    let mut assembly = Assembly::default();
    assembly.steps_from_ranges(options.step_range.as_ref(), "ROCTx ranges");
    let others = processes.count() as u64;
    if others > 0 {
        assembly.diagnostics.skip_n(
            "process after the first (a trace is one process: split the file per process)",
            others,
        );
    }
    read_process(process, &mut assembly);
    assembly.finish(path, "rocprofv3 JSON", Runtime::Rocm, bytes.len() as u64)
}

fn json_error(error: serde_json::Error, path: &Path) -> ReadError {
    if error.is_eof() {
        ReadError::Truncated {
            path: path.to_path_buf(),
            context: "the rocprofv3 JSON document".to_string(),
            offset: 0,
        }
    } else {
        ReadError::Json {
            path: path.to_path_buf(),
            line: error.line() as u64,
            column: error.column() as u64,
            context: "the rocprofv3 JSON document".to_string(),
            message: error.to_string(),
        }
    }
}

/// A GPU agent as a device: its index among the node's GPUs.
struct Gpu {
    index: i64,
}

fn read_process(process: Process, assembly: &mut Assembly) {
    let Process {
        metadata,
        agents,
        strings,
        kernel_symbols,
        buffer_records,
    } = process;
    let pid = metadata.pid.unwrap_or(0);
    let gpus = gpus(&agents, assembly);
    let kernel_names: BTreeMap<u64, String> = kernel_symbols
        .into_iter()
        .filter_map(|symbol| {
            let name = symbol
                .formatted_kernel_name
                .filter(|n| !n.is_empty())
                .or(symbol.kernel_name.filter(|n| !n.is_empty()))?;
            Some((symbol.kernel_id?, name))
        })
        .collect();
    let operation_name = |kind: Option<usize>, operation: Option<usize>| -> Option<&str> {
        strings
            .buffer_records
            .get(kind?)?
            .operations
            .get(operation?)
            .map(String::as_str)
    };

    let has_api = !buffer_records.hip_api.is_empty();
    let mut file_index = 0u32;
    let mut next_index = || {
        file_index = file_index.saturating_add(1);
        file_index - 1
    };

    let mut without_stream = 0u64;
    let mut unnamed = 0u64;
    for dispatch in &buffer_records.kernel_dispatch {
        assembly.records += 1;
        let index = next_index();
        let info = &dispatch.dispatch_info;
        let Some(gpu) = info.agent_id.handle.and_then(|h| gpus.get(&h)) else {
            assembly
                .diagnostics
                .skip("kernel dispatch on an agent that is not a GPU of `agents`");
            continue;
        };
        let Some((start_abs_ns, dur_ns)) = times(dispatch.start_timestamp, dispatch.end_timestamp)
        else {
            assembly
                .diagnostics
                .skip("kernel dispatch without a valid start and end timestamp");
            continue;
        };
        let stream = match dispatch.stream_id.and_then(|s| s.handle) {
            Some(stream) => stream,
            None => {
                without_stream += 1;
                info.queue_id.handle.unwrap_or(0)
            }
        };
        let fallback;
        let name = match info.kernel_id.and_then(|id| kernel_names.get(&id)) {
            Some(name) => name.as_str(),
            None => {
                unnamed += 1;
                fallback = format!("kernel {}", info.kernel_id.unwrap_or(0));
                fallback.as_str()
            }
        };
        let name = assembly.intern(name);
        assembly.push(NewEvent {
            lane: (LaneKind::DeviceStream, gpu.index, clamp(stream)),
            kind: EventKind::Kernel,
            name,
            start_abs_ns,
            dur_ns,
            correlation: dispatch.correlation_id.internal.filter(|_| has_api),
            bytes: None,
            sequence_number: None,
            fill: None,
            file_index: index,
        });
    }

    let mut copies_without_stream = 0u64;
    for copy in &buffer_records.memory_copy {
        assembly.records += 1;
        let index = next_index();
        // A copy occupies the GPU it goes to, or the one it comes from (device to host).
        let gpu = [copy.dst_agent_id, copy.src_agent_id]
            .iter()
            .find_map(|agent| agent.handle.and_then(|h| gpus.get(&h)));
        let Some(gpu) = gpu else {
            assembly
                .diagnostics
                .skip("memory copy between agents none of which is a GPU");
            continue;
        };
        let Some((start_abs_ns, dur_ns)) = times(copy.start_timestamp, copy.end_timestamp) else {
            assembly
                .diagnostics
                .skip("memory copy without a valid start and end timestamp");
            continue;
        };
        // Without a stream id, the copies of a GPU share one lane of their own.
        let stream = match copy.stream_id.and_then(|s| s.handle) {
            Some(stream) => clamp(stream),
            None => {
                copies_without_stream += 1;
                COPY_LANE
            }
        };
        let name =
            assembly.intern(operation_name(copy.kind, copy.operation).unwrap_or("MEMORY_COPY"));
        assembly.push(NewEvent {
            lane: (LaneKind::DeviceStream, gpu.index, stream),
            kind: EventKind::Memcpy,
            name,
            start_abs_ns,
            dur_ns,
            correlation: copy.correlation_id.internal.filter(|_| has_api),
            bytes: copy.bytes,
            sequence_number: None,
            fill: None,
            file_index: index,
        });
    }

    for call in &buffer_records.hip_api {
        assembly.records += 1;
        let index = next_index();
        let Some(name) = operation_name(call.kind, call.operation) else {
            assembly
                .diagnostics
                .skip("HIP API record whose kind and operation name no call of `strings`");
            continue;
        };
        let Some((start_abs_ns, dur_ns)) = times(call.start_timestamp, call.end_timestamp) else {
            assembly
                .diagnostics
                .skip("HIP API record without a valid start and end timestamp");
            continue;
        };
        let lane: LaneKey = (LaneKind::CpuThread, pid, call.thread_id.unwrap_or(0));
        let name = assembly.intern(name);
        assembly.push(NewEvent {
            lane,
            kind: EventKind::RuntimeCall,
            name,
            start_abs_ns,
            dur_ns,
            correlation: call.correlation_id.internal,
            bytes: None,
            sequence_number: None,
            fill: None,
            file_index: index,
        });
    }

    let marker_names: BTreeMap<u64, &str> = strings
        .marker_api
        .iter()
        .filter_map(|m| Some((m.key?, m.value.as_deref()?)))
        .collect();
    let mut marker_ranges = 0u64;
    for marker in &buffer_records.marker_api {
        assembly.records += 1;
        let index = next_index();
        let Some(name) = marker
            .correlation_id
            .internal
            .and_then(|c| marker_names.get(&c))
        else {
            assembly
                .diagnostics
                .skip("ROCTx record whose message is not in `strings.marker_api`");
            continue;
        };
        let Some((start_abs_ns, dur_ns)) = times(marker.start_timestamp, marker.end_timestamp)
        else {
            assembly
                .diagnostics
                .skip("ROCTx record without a valid start and end timestamp");
            continue;
        };
        if dur_ns == 0 {
            assembly
                .diagnostics
                .skip("ROCTx mark (an instant, not a range)");
            continue;
        }
        let lane: LaneKey = (LaneKind::CpuThread, pid, marker.thread_id.unwrap_or(0));
        if assembly.step_range(name, lane, start_abs_ns, dur_ns) {
            continue;
        }
        marker_ranges += 1;
        let name = assembly.intern(name);
        assembly.push(NewEvent {
            lane,
            kind: EventKind::UserAnnotation,
            name,
            start_abs_ns,
            dur_ns,
            correlation: None,
            bytes: None,
            sequence_number: None,
            fill: None,
            file_index: index,
        });
    }

    for (kind, count) in &buffer_records.other {
        if count.0 > 0 {
            assembly.records += count.0;
            assembly
                .diagnostics
                .skip_n(format!("`{kind}` record (not read)"), count.0);
        }
    }

    let notes = &mut assembly.diagnostics;
    notes.note(format!(
        "read as rocprofv3 JSON (rocprofiler-sdk-tool): {} kernel dispatches, {} memory copies, {} HIP API calls, {marker_ranges} ROCTx ranges as annotations",
        buffer_records.kernel_dispatch.len(),
        buffer_records.memory_copy.len(),
        buffer_records.hip_api.len()
    ));
    if !has_api {
        notes.note(
            "no HIP API records (rocprofv3 ran without --hip-trace): device work only, no launching calls",
        );
    }
    if without_stream > 0 {
        notes.note(format!(
            "{without_stream} kernel dispatches carry no HIP stream id: their lane is their HSA queue"
        ));
    }
    if copies_without_stream > 0 {
        notes.note(format!(
            "{copies_without_stream} memory copies carry no stream id: a GPU's copies share lane {COPY_LANE}"
        ));
    }
    if unnamed > 0 {
        notes.note(format!(
            "{unnamed} kernel dispatches name a kernel id absent from `kernel_symbols`: named `kernel <id>`"
        ));
    }
    notes.note("no distributed information: rank and world size are unknown");
}

/// The lane of a GPU's copies when the file records no stream for them.
const COPY_LANE: i64 = -1;

/// A stream or queue handle as a lane id (handles are small counters; a huge one is kept apart
/// rather than wrapped).
fn clamp(handle: u64) -> i64 {
    i64::try_from(handle).unwrap_or(i64::MAX)
}

/// Start and duration from rocprofiler-sdk's start and end timestamps (ns), if they make an
/// interval.
fn times(start: Option<u64>, end: Option<u64>) -> Option<(i64, i64)> {
    let start = i64::try_from(start?).ok()?;
    let end = i64::try_from(end?).ok()?;
    (end >= start).then_some((start, end - start))
}

/// The GPU agents by handle, also written to `assembly.devices`.
fn gpus(agents: &[Agent], assembly: &mut Assembly) -> BTreeMap<u64, Gpu> {
    let mut gpus = BTreeMap::new();
    for agent in agents.iter().filter(|a| a.agent_type == Some(2)) {
        let Some(handle) = agent.id.handle else {
            continue;
        };
        let index = agent
            .gpu_index
            .filter(|&i| i >= 0)
            .or(agent.logical_node_type_id)
            .unwrap_or(gpus.len() as i64);
        let name = agent
            .product_name
            .clone()
            .or_else(|| agent.name.clone())
            .unwrap_or_default();
        assembly.devices.push(DeviceInfo {
            id: index,
            name,
            compute_capability: None,
            sm_count: agent.cu_count,
            // A compute unit holds `max_waves_per_cu` wavefronts of `wave_front_size` threads.
            max_threads_per_sm: agent
                .max_waves_per_cu
                .zip(agent.wave_front_size)
                .and_then(|(waves, width)| waves.checked_mul(width))
                .filter(|&t| t > 0),
            memory_bytes: None,
        });
        gpus.insert(handle, Gpu { index });
    }
    assembly.devices.sort_by_key(|d| d.id);
    gpus
}
