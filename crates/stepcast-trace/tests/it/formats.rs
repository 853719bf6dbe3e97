//! rocprofv3 JSON and XPlane (issue #14): every vendored file, and every file of the shared
//! collection's `rocprof/` and `xplane/` where that collection is present, is read, and its
//! device work (kernel and copy counts, device time, busy time of every stream) agrees with an
//! independent reading of the same bytes: `serde_json::Value` walked by hand for rocprofv3, a
//! protobuf wire decoder written here for XPlane (no prost, no generated code).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use stepcast_trace::{
    EventKind, LaneKind, ReadError, ReadOptions, Trace, read_processes, read_trace,
    read_trace_bytes,
};

use super::{decompressed, testdata};

/// Per (device, stream): tasks, the sum of their durations and the union of their intervals,
/// in picoseconds (XPlane's unit; rocprofv3's ns × 1000).
#[derive(Debug, Default, PartialEq)]
struct StreamWork {
    tasks: u64,
    kernels: u64,
    copies: u64,
    sum_ps: i128,
    busy_ps: i128,
}

/// Union length of intervals.
fn union_len(mut intervals: Vec<(i128, i128)>) -> i128 {
    intervals.sort_unstable();
    let (mut total, mut end) = (0i128, i128::MIN);
    for (s, e) in intervals {
        if e > end {
            total += e - s.max(end);
            end = e;
        }
    }
    total
}

/// What stepcast read, in the same shape (ns × 1000).
fn from_trace(trace: &Trace) -> BTreeMap<(i64, i64), StreamWork> {
    let mut intervals: BTreeMap<(i64, i64), Vec<(i128, i128)>> = BTreeMap::new();
    let mut out: BTreeMap<(i64, i64), StreamWork> = BTreeMap::new();
    for event in trace.events.iter().filter(|e| e.kind.is_device_task()) {
        let lane = trace.lane(event.lane);
        assert_eq!(lane.kind, LaneKind::DeviceStream);
        let key = (lane.pid, lane.tid);
        let work = out.entry(key).or_default();
        work.tasks += 1;
        work.kernels += (event.kind == EventKind::Kernel) as u64;
        work.copies += (event.kind == EventKind::Memcpy) as u64;
        work.sum_ps += i128::from(event.dur_ns) * 1000;
        let start = i128::from(event.start_ns) * 1000;
        intervals
            .entry(key)
            .or_default()
            .push((start, start + i128::from(event.dur_ns) * 1000));
    }
    for (key, list) in intervals {
        if let Some(work) = out.get_mut(&key) {
            work.busy_ps = union_len(list);
        }
    }
    out
}

/// Files of a format: the vendored ones, and those of the shared collection when it is here.
fn files(format: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let vendored = testdata().join(format);
    assert!(
        vendored.is_dir(),
        "test data missing: {}",
        vendored.display()
    );
    let shared = testdata().join("../../shared/traces").join(format);
    for dir in [vendored, shared] {
        collect(&dir, &mut out);
    }
    out.sort();
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// rocprofv3

/// rocprofv3's JSON read as a plain `Value`: dispatches and copies by (GPU index, stream).
fn rocprof_reference(bytes: &[u8]) -> (BTreeMap<(i64, i64), StreamWork>, u64) {
    let doc: Value = serde_json::from_slice(bytes).expect("valid JSON");
    let process = &doc["rocprofiler-sdk-tool"][0];
    let mut gpu_of_agent: BTreeMap<u64, i64> = BTreeMap::new();
    for agent in process["agents"].as_array().expect("agents") {
        if agent["type"] == 2 {
            let index = agent["gpu_index"]
                .as_i64()
                .filter(|&i| i >= 0)
                .or(agent["logical_node_type_id"].as_i64())
                .expect("GPU index");
            gpu_of_agent.insert(agent["id"]["handle"].as_u64().expect("handle"), index);
        }
    }
    let records = &process["buffer_records"];
    let mut intervals: BTreeMap<(i64, i64), Vec<(i128, i128)>> = BTreeMap::new();
    let mut out: BTreeMap<(i64, i64), StreamWork> = BTreeMap::new();
    let mut api_calls = 0;
    let mut add = |key: (i64, i64), record: &Value, kernel: bool| {
        let start = i128::from(record["start_timestamp"].as_u64().expect("start"));
        let end = i128::from(record["end_timestamp"].as_u64().expect("end"));
        let work = out.entry(key).or_default();
        work.tasks += 1;
        work.kernels += kernel as u64;
        work.copies += !kernel as u64;
        work.sum_ps += (end - start) * 1000;
        intervals
            .entry(key)
            .or_default()
            .push((start * 1000, end * 1000));
    };
    for dispatch in records["kernel_dispatch"]
        .as_array()
        .expect("kernel_dispatch")
    {
        let info = &dispatch["dispatch_info"];
        let gpu = gpu_of_agent[&info["agent_id"]["handle"].as_u64().expect("agent")];
        let stream = dispatch["stream_id"]["handle"]
            .as_i64()
            .or(info["queue_id"]["handle"].as_i64())
            .expect("stream or queue");
        add((gpu, stream), dispatch, true);
    }
    for copy in records["memory_copy"].as_array().into_iter().flatten() {
        let gpu = [&copy["dst_agent_id"], &copy["src_agent_id"]]
            .iter()
            .find_map(|a| a["handle"].as_u64().and_then(|h| gpu_of_agent.get(&h)))
            .copied()
            .expect("a GPU end");
        let stream = copy["stream_id"]["handle"].as_i64().unwrap_or(-1);
        add((gpu, stream), copy, false);
    }
    api_calls += records["hip_api"].as_array().map_or(0, |a| a.len() as u64);
    for (key, list) in intervals {
        if let Some(work) = out.get_mut(&key) {
            work.busy_ps = union_len(list);
        }
    }
    (out, api_calls)
}

#[test]
fn rocprof_device_work_agrees_with_an_independent_reading() {
    let files = files("rocprof");
    assert!(!files.is_empty());
    for path in files {
        let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
        let (reference, api_calls) = rocprof_reference(&decompressed(&path));
        let read = from_trace(&trace);
        let total = |m: &BTreeMap<(i64, i64), StreamWork>| -> (u64, i128) {
            m.values()
                .map(|w| (w.tasks, w.sum_ps))
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        };
        assert_eq!(
            total(&read),
            total(&reference),
            "{}: tasks and device time",
            path.display()
        );
        assert_eq!(read, reference, "{}: per-stream work", path.display());
        let calls = trace
            .events
            .iter()
            .filter(|e| e.kind == EventKind::RuntimeCall)
            .count();
        assert_eq!(calls as u64, api_calls, "{}: HIP API calls", path.display());
        assert_eq!(trace.runtime.map(|r| r.as_str()), Some("rocm"));
        assert_eq!(trace.diagnostics.total_skipped(), 0, "{}", path.display());
    }
}

#[test]
fn rocprof_rccl_kernels_keep_their_names() {
    let path = testdata().join("rocprof/TraceLens/tests/rocprof/908_results.json.gz");
    let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    let doc: Value = serde_json::from_slice(&decompressed(&path)).expect("JSON");
    let process = &doc["rocprofiler-sdk-tool"][0];
    let nccl_ids: Vec<u64> = process["kernel_symbols"]
        .as_array()
        .expect("symbols")
        .iter()
        .filter(|s| {
            s["kernel_name"]
                .as_str()
                .is_some_and(|n| n.starts_with("_Z") && n.contains("ncclDevKernel"))
        })
        .filter_map(|s| s["kernel_id"].as_u64())
        .collect();
    let expected = process["buffer_records"]["kernel_dispatch"]
        .as_array()
        .expect("dispatches")
        .iter()
        .filter(|d| {
            d["dispatch_info"]["kernel_id"]
                .as_u64()
                .is_some_and(|id| nccl_ids.contains(&id))
        })
        .count();
    let read = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Kernel && trace.name(e.name).starts_with("ncclDevKernel"))
        .count();
    assert!(expected > 0);
    assert_eq!(read, expected);
}

// ---------------------------------------------------------------------------------------------
// XPlane, decoded by hand from the wire format and the field numbers of `xplane.proto`.

mod wire {
    /// A field: number and value (varint, or the bytes of a length-delimited field).
    pub enum Field<'a> {
        Int(u64),
        Bytes(&'a [u8]),
        Fixed,
    }

    fn varint(bytes: &[u8], at: &mut usize) -> u64 {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = bytes[*at];
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                break;
            }
        }
        value
    }

    pub fn fields(bytes: &[u8]) -> Vec<(u64, Field<'_>)> {
        let (mut at, mut out) = (0, Vec::new());
        while at < bytes.len() {
            let tag = varint(bytes, &mut at);
            let field = match tag & 7 {
                0 => Field::Int(varint(bytes, &mut at)),
                2 => {
                    let len = varint(bytes, &mut at) as usize;
                    at += len;
                    Field::Bytes(&bytes[at - len..at])
                }
                1 => {
                    at += 8;
                    Field::Fixed
                }
                5 => {
                    at += 4;
                    Field::Fixed
                }
                other => panic!("wire type {other}"),
            };
            out.push((tag >> 3, field));
        }
        out
    }

    pub fn int(fields: &[(u64, Field<'_>)], number: u64) -> i64 {
        fields
            .iter()
            .find_map(|(n, f)| match f {
                Field::Int(v) if *n == number => Some(*v as i64),
                _ => None,
            })
            .unwrap_or(0)
    }

    pub fn text<'a>(fields: &[(u64, Field<'a>)], number: u64) -> &'a str {
        fields
            .iter()
            .find_map(|(n, f)| match f {
                Field::Bytes(b) if *n == number => std::str::from_utf8(b).ok(),
                _ => None,
            })
            .unwrap_or("")
    }

    pub fn messages<'a>(fields: &[(u64, Field<'a>)], number: u64) -> Vec<&'a [u8]> {
        fields
            .iter()
            .filter_map(|(n, f)| match f {
                Field::Bytes(b) if *n == number => Some(*b),
                _ => None,
            })
            .collect()
    }
}

/// What the reference reading finds in an XSpace.
#[derive(Default)]
struct XPlaneReference {
    streams: BTreeMap<(i64, i64), StreamWork>,
    /// Host events with a `correlation_id` stat (the launching calls).
    host_launches: u64,
    /// Host events with a duration, including the launching calls and the steps.
    host_timed: u64,
    /// Host events with a `step_num` stat: (step number, start ps, duration ps).
    steps: Vec<(u64, i128, i128)>,
    /// TensorFlow allocator records by allocator name: (count, bytes allocated less freed).
    memory: BTreeMap<String, (u64, i64)>,
}

fn xplane_reference(bytes: &[u8]) -> XPlaneReference {
    use wire::{fields, int, messages, text};
    let mut out = XPlaneReference::default();
    let mut intervals: BTreeMap<(i64, i64), Vec<(i128, i128)>> = BTreeMap::new();
    for plane in messages(&fields(bytes), 1) {
        let plane = fields(plane);
        let name = text(&plane, 2);
        // XPlane.event_metadata (4) and stat_metadata (5): map entries of key 1, value 2.
        let mut event_names: BTreeMap<i64, String> = BTreeMap::new();
        for entry in messages(&plane, 4) {
            let entry = fields(entry);
            let meta = messages(&entry, 2).first().map(|m| fields(m));
            event_names.insert(
                int(&entry, 1),
                meta.map_or(String::new(), |m| text(&m, 2).to_string()),
            );
        }
        let mut stat_ids: BTreeMap<String, i64> = BTreeMap::new();
        for entry in messages(&plane, 5) {
            let entry = fields(entry);
            if let Some(meta) = messages(&entry, 2).first() {
                stat_ids.insert(text(&fields(meta), 2).to_string(), int(&entry, 1));
            }
        }
        let has_stat = |event: &[(u64, wire::Field<'_>)], stat: &str| {
            let Some(&id) = stat_ids.get(stat) else {
                return false;
            };
            messages(event, 4).iter().any(|s| int(&fields(s), 1) == id)
        };
        let device = name
            .strip_prefix("/device:")
            .and_then(|d| d.rsplit(':').next())
            .and_then(|n| n.parse::<i64>().ok());
        for line in messages(&plane, 3) {
            let line = fields(line);
            let line_id = int(&line, 1);
            let line_ps = i128::from(int(&line, 3)) * 1000;
            let is_stream = text(&line, 2).starts_with("Stream #");
            for event in messages(&line, 4) {
                let event = fields(event);
                let start = line_ps + i128::from(int(&event, 2));
                let dur = i128::from(int(&event, 3));
                if name == "/host:CPU" && dur > 0 {
                    out.host_timed += 1;
                    out.host_launches += has_stat(&event, "correlation_id") as u64;
                }
                let event_name = event_names.get(&int(&event, 1)).map_or("", String::as_str);
                if name == "/host:CPU"
                    && let (
                        "MemoryAllocation" | "MemoryDeallocation",
                        Some(&allocator),
                        Some(&size),
                    ) = (
                        event_name,
                        stat_ids.get("allocator_name"),
                        stat_ids.get("allocation_bytes"),
                    )
                {
                    let stats: Vec<_> = messages(&event, 4).iter().map(|s| fields(s)).collect();
                    let find = |id: i64| stats.iter().find(|s| int(s, 1) == id);
                    // A string stat: `str_value` (5) or `ref_value` (7) naming a stat metadata.
                    let allocator_name = find(allocator).map_or(String::new(), |s| {
                        let by_ref = int(s, 7);
                        if by_ref != 0 {
                            stat_ids
                                .iter()
                                .find(|(_, id)| **id == by_ref)
                                .map_or(String::new(), |(n, _)| n.clone())
                        } else {
                            text(s, 5).to_string()
                        }
                    });
                    let bytes = find(size).map_or(0, |s| int(s, 3).max(int(s, 4)));
                    let sign = if event_name == "MemoryAllocation" {
                        1
                    } else {
                        -1
                    };
                    let entry = out.memory.entry(allocator_name).or_default();
                    entry.0 += 1;
                    entry.1 += sign * bytes;
                }
                if name == "/host:CPU"
                    && let Some(&id) = stat_ids.get("step_num")
                {
                    for stat in messages(&event, 4).iter().map(|s| fields(s)) {
                        // XStat: metadata_id (1), then uint64 (3) or int64 (4).
                        if int(&stat, 1) == id {
                            let number = int(&stat, 3).max(int(&stat, 4)) as u64;
                            out.steps.push((number, start, dur));
                        }
                    }
                }
                let (Some(device), true) = (device, is_stream) else {
                    continue;
                };
                let event_name = &event_names[&int(&event, 1)];
                let copy = has_stat(&event, "memcpy_details") || event_name.starts_with("Memcpy");
                let work = out.streams.entry((device, line_id)).or_default();
                work.tasks += 1;
                work.kernels += (!copy && !event_name.starts_with("Memset")) as u64;
                work.copies += copy as u64;
                work.sum_ps += dur;
                intervals
                    .entry((device, line_id))
                    .or_default()
                    .push((start, start + dur));
            }
        }
    }
    for (key, list) in intervals {
        if let Some(work) = out.streams.get_mut(&key) {
            work.busy_ps = union_len(list);
        }
    }
    out
}

#[test]
fn xplane_device_work_agrees_with_an_independent_reading() {
    let files: Vec<PathBuf> = files("xplane")
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".xplane.pb"))
        .collect();
    assert!(!files.is_empty());
    for path in files {
        let shown = path.display();
        let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
        let reference = xplane_reference(&std::fs::read(&path).expect("read"));
        let read = from_trace(&trace);
        assert_eq!(
            read.keys().collect::<Vec<_>>(),
            reference.streams.keys().collect::<Vec<_>>(),
            "{shown}: streams"
        );
        for (key, want) in &reference.streams {
            let got = &read[key];
            assert_eq!(
                (got.tasks, got.kernels, got.copies),
                (want.tasks, want.kernels, want.copies),
                "{shown}: tasks of stream {key:?}"
            );
            // stepcast keeps whole ns: each start and end rounds down, so a sum or a union
            // moves by under 1 ns per task.
            let slack = i128::from(want.tasks as u32) * 1000;
            assert!(
                (got.sum_ps - want.sum_ps).abs() < slack.max(1000),
                "{shown}: device time of {key:?}: {} vs {} ps",
                got.sum_ps,
                want.sum_ps
            );
            assert!(
                (got.busy_ps - want.busy_ps).abs() < slack.max(1000),
                "{shown}: busy time of {key:?}: {} vs {} ps",
                got.busy_ps,
                want.busy_ps
            );
        }
        let count = |kind: EventKind| trace.events.iter().filter(|e| e.kind == kind).count() as u64;
        assert_eq!(
            count(EventKind::RuntimeCall),
            reference.host_launches,
            "{shown}: launching calls"
        );
        assert_eq!(
            count(EventKind::RuntimeCall)
                + count(EventKind::CpuOp)
                + count(EventKind::PythonFunction)
                + trace.steps.len() as u64,
            reference.host_timed,
            "{shown}: timed host events"
        );
        // Memory: every allocator record, on its allocator's device (`GPU_<n>_bfc`: GPU n,
        // others host memory, -1).
        let mut want_memory: BTreeMap<i64, (u64, i64)> = BTreeMap::new();
        for (allocator, &(count, bytes)) in &reference.memory {
            let device = allocator
                .strip_prefix("GPU_")
                .and_then(|r| r.strip_suffix("_bfc"))
                .and_then(|n| n.parse().ok())
                .unwrap_or(-1);
            let entry = want_memory.entry(device).or_default();
            entry.0 += count;
            entry.1 += bytes;
        }
        let mut got_memory: BTreeMap<i64, (u64, i64)> = BTreeMap::new();
        for m in &trace.memory {
            let entry = got_memory.entry(m.device).or_default();
            entry.0 += 1;
            entry.1 += m.bytes;
        }
        assert_eq!(got_memory, want_memory, "{shown}: memory events by device");
        // Steps: each host event with a `step_num` stat, its times to the ns.
        let mut want_steps: Vec<(u64, i128, i128)> = reference
            .steps
            .iter()
            .map(|&(n, start, dur)| (n, start.div_euclid(1000), (start + dur).div_euclid(1000)))
            .collect();
        want_steps.sort_unstable();
        let mut got_steps: Vec<(u64, i128, i128)> = trace
            .steps
            .iter()
            .map(|s| {
                let start = i128::from(trace.origin_ns) + i128::from(s.start_ns);
                (s.number, start, start + i128::from(s.dur_ns))
            })
            .collect();
        got_steps.sort_unstable();
        assert_eq!(got_steps, want_steps, "{shown}: steps");
        // Every device task finds its launching call by correlation.
        let calls: std::collections::BTreeSet<u64> = trace
            .events
            .iter()
            .filter(|e| e.kind == EventKind::RuntimeCall)
            .filter_map(|e| e.correlation.map(u64::from))
            .collect();
        let device: Vec<_> = trace
            .events
            .iter()
            .filter(|e| e.kind.is_device_task())
            .collect();
        let linked = device
            .iter()
            .filter(|e| e.correlation.is_some_and(|c| calls.contains(&c.get())))
            .count();
        assert_eq!(
            linked,
            device.len(),
            "{shown}: device tasks linked to a call"
        );
    }
}

#[test]
fn xplane_steps_come_from_step_num_stats() {
    // A JAX CPU run recorded here (testdata/xplane/stepcast/jax-cpu-mlp/record.py): six steps
    // marked with `StepTraceAnnotation("train", step_num=i)`, no device plane.
    let path = testdata().join("xplane/stepcast/jax-cpu-mlp/train.xplane.pb");
    let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    let numbers: Vec<u64> = trace.steps.iter().map(|s| s.number).collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4, 5]);
    assert!(trace.steps.iter().all(|s| trace.name(s.name) == "train"));
    assert_eq!(trace.runtime.map(|r| r.as_str()), Some("cpu-only"));
    // Steps are markers, not ops: no `train` op is left on the thread.
    assert!(!trace.events.iter().any(|e| trace.name(e.name) == "train"));
}

/// The same JAX program recorded here on an H100 (`testdata/xplane/stepcast/jax-gpu-mlp/`, by
/// `testdata/kineto/stepcast/h100-pairs/record.sh`): XLA's launches on the host thread, the
/// kernels on a `Stream #` line of the GPU plane, linked by correlation, inside six steps.
#[test]
fn xplane_jax_gpu_steps_hold_their_kernels() {
    let path = testdata().join("xplane/stepcast/jax-gpu-mlp/train.xplane.pb");
    let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    let numbers: Vec<u64> = trace.steps.iter().map(|s| s.number).collect();
    assert_eq!(numbers, [0, 1, 2, 3, 4, 5]);
    assert_ne!(trace.runtime.map(|r| r.as_str()), Some("cpu-only"));
    let kernels: Vec<_> = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Kernel)
        .collect();
    assert!(!kernels.is_empty());
    // Each step's launches put its kernels after the step began: a kernel whose launching
    // call is inside a step starts after that step's start.
    let calls: BTreeMap<u64, i64> = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::RuntimeCall)
        .filter_map(|e| Some((e.correlation?.get(), e.start_ns)))
        .collect();
    for kernel in &kernels {
        let call = kernel.correlation.and_then(|c| calls.get(&c.get()));
        let call = call.unwrap_or_else(|| panic!("kernel without its launch"));
        assert!(kernel.start_ns >= *call, "a kernel before its launch");
    }
}

#[test]
fn xplane_launching_calls_are_named_for_their_api() {
    let path = testdata().join(
        "xplane/tensorflow-profiler/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb",
    );
    let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    let mut names: BTreeMap<&str, u64> = BTreeMap::new();
    for event in trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::RuntimeCall)
    {
        *names.entry(trace.name(event.name)).or_default() += 1;
    }
    // A kernel's call launches it; a copy's says by its `async` flag whether it waited. The
    // device side of this file has 1,330 kernels and 226 copies (the reference reading above).
    let kernels = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Kernel)
        .count() as u64;
    let copies = trace
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Memcpy)
        .count() as u64;
    assert_eq!(names.get("cudaLaunchKernel").copied(), Some(kernels));
    assert_eq!(
        names.get("cudaMemcpy").copied().unwrap_or(0)
            + names.get("cudaMemcpyAsync").copied().unwrap_or(0),
        copies
    );
    assert!(
        names.get("cudaMemcpy").is_some_and(|&n| n > 0),
        "synchronous copies (async:0)"
    );
    // Its allocator records are memory events (checked one by one against the reference
    // reading above), on the host and on GPUs 1, 4 and 6.
    let devices: std::collections::BTreeSet<i64> = trace.memory.iter().map(|m| m.device).collect();
    assert_eq!(devices.into_iter().collect::<Vec<_>>(), [-1, 1, 4, 6]);
}

// ---------------------------------------------------------------------------------------------
// Bad input

#[test]
fn a_truncated_xplane_is_one_clear_error() {
    let path = testdata().join(
        "xplane/tensorflow-profiler/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb",
    );
    let bytes = std::fs::read(&path).expect("read");
    let cut = &bytes[..bytes.len() / 2];
    let err = read_trace_bytes(cut, Path::new("cut.xplane.pb")).expect_err("truncated");
    assert!(matches!(err, ReadError::NotXPlane { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("cut.xplane.pb is not an XPlane"),
        "{err}"
    );
}

#[test]
fn a_protobuf_that_is_not_xplane_is_one_clear_error() {
    // An XSpace-shaped message whose one plane is not a host or device plane: field 1 (a plane)
    // holding field 2 (its name).
    let name = b"/metadata:other";
    let mut plane = vec![0x12, name.len() as u8];
    plane.extend_from_slice(name);
    let mut bytes = vec![0x0a, plane.len() as u8];
    bytes.extend_from_slice(&plane);
    let err = read_trace_bytes(&bytes, Path::new("other.pb")).expect_err("not XPlane");
    assert!(matches!(err, ReadError::NotXPlane { .. }), "{err:?}");

    // The Chakra execution trace of the shared collection (length-prefixed protobuf messages),
    // where that collection is present.
    let chakra = testdata().join("../../shared/traces/chakra/chakra/tests/data/chakra.0.et");
    if chakra.is_file() {
        let err = read_trace(&chakra).expect_err("chakra is not XPlane");
        assert!(matches!(err, ReadError::NotXPlane { .. }), "{err:?}");
        assert!(err.to_string().contains("chakra.0.et"), "{err}");
    }
}

#[test]
fn bad_rocprof_documents_are_clear_errors() {
    let path = testdata().join("rocprof/TraceLens/tests/rocprof/908_results.json.gz");
    let bytes = decompressed(&path);
    let cut = &bytes[..bytes.len() / 3];
    let err = read_trace_bytes(cut, Path::new("cut.json")).expect_err("truncated");
    assert!(matches!(err, ReadError::Truncated { .. }), "{err:?}");

    let empty = br#"{"rocprofiler-sdk-tool": []}"#;
    let err = read_trace_bytes(empty, Path::new("empty.json")).expect_err("no process");
    assert!(matches!(err, ReadError::NotATrace { .. }), "{err:?}");

    let nothing = br#"{"rocprofiler-sdk-tool": [{"buffer_records": {"hsa_api": [{}, {}]}}]}"#;
    let err = read_trace_bytes(nothing, Path::new("nothing.json")).expect_err("no dispatch");
    assert!(
        matches!(err, ReadError::NothingUnderstood { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("2 `hsa_api` record"), "{err}");
}

#[test]
fn json_that_starts_like_a_protobuf_is_still_read_as_kineto() {
    // A newline is XSpace's first tag byte (0x0a), `{` a length, `"` an XPlane tag (0x22): the
    // sniff must still see text, not protobuf. The same for every JSON opening of this kind.
    for opening in [
        "\n{\"traceEvents\"",
        "\n\n{\"traceEvents\"",
        "{\"traceEvents\"",
    ] {
        let json = format!(
            "{opening}: [{{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":2}}]}}"
        );
        let trace = read_trace_bytes(json.as_bytes(), Path::new("x.json"))
            .unwrap_or_else(|e| panic!("{opening:?}: {e}"));
        assert_eq!(trace.events.len(), 1);
    }
}

fn with_step_range(path: &Path, pattern: &str) -> Trace {
    let options = ReadOptions {
        step_range: Some(regex::Regex::new(pattern).expect("regex")),
        ..ReadOptions::default()
    };
    let mut traces = read_processes(path, &options).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(traces.len(), 1);
    traces.swap_remove(0)
}

// See: issue 14 (`--step-range` for XPlane).
#[test]
fn xplane_step_range_makes_steps_of_matching_host_events() {
    // The JAX run marks its steps twice: a `train` TraceMe that also carries `step_num`. The
    // pattern must find the same six ranges the stats do, numbered in start order.
    let path = testdata().join("xplane/stepcast/jax-cpu-mlp/train.xplane.pb");
    let by_stat = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    let by_name = with_step_range(&path, "^train$");
    let spans = |t: &Trace| -> Vec<(u64, i64, i64)> {
        t.steps
            .iter()
            .map(|s| (s.number, s.start_ns + t.origin_ns, s.dur_ns))
            .collect()
    };
    assert_eq!(spans(&by_name), spans(&by_stat));
    assert!(
        by_name
            .diagnostics
            .notes
            .iter()
            .any(|n| n == "steps are the 6 host events matching `^train$`"),
        "{:?}",
        by_name.diagnostics.notes
    );
    // A pattern that matches nothing leaves one window, and says so.
    let none = with_step_range(&path, "^no such event$");
    assert!(none.steps.is_empty());
    assert!(
        none.diagnostics
            .notes
            .iter()
            .any(|n| n.contains("none of the host events matches")),
        "{:?}",
        none.diagnostics.notes
    );
}

#[test]
fn xplane_without_step_numbers_looks_for_xprof_step_marker_names() {
    // The TensorFlow sample has no `step_num` stat and no host event named like a step.
    let path = testdata().join(
        "xplane/tensorflow-profiler/demo/plugins/profile/GPU-multi-worker/34.83.195.179_6003.xplane.pb",
    );
    let trace = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    assert!(trace.steps.is_empty());
    assert!(
        trace
            .diagnostics
            .notes
            .iter()
            .any(|n| n.contains("named as xprof's step markers") && n.contains("one step")),
        "{:?}",
        trace.diagnostics.notes
    );
}

/// A rocprofv3 document made here (not a recording: no shared rocprofv3 file has ROCTx records)
/// in rocprofiler-sdk's layout: one GPU, two kernel dispatches, no HIP API records, and the
/// ROCTx ranges `step` (twice) and `forward`, named through `strings.marker_api` by their
/// internal correlation id, as rocprofiler-sdk's own tests read them.
const ROCTX_DOCUMENT: &str = r#"{"rocprofiler-sdk-tool": [{
  "metadata": {"pid": 42},
  "agents": [{"id": {"handle": 7}, "type": 2, "gpu_index": 0, "name": "gfx942"}],
  "strings": {
    "buffer_records": [{"kind": "NONE", "operations": []},
                       {"kind": "MARKER_CORE_RANGE_API", "operations": ["roctxRangePush"]}],
    "marker_api": [{"key": 11, "value": "step"}, {"key": 12, "value": "forward"},
                   {"key": 13, "value": "step"}]
  },
  "kernel_symbols": [{"kernel_id": 1, "formatted_kernel_name": "gemm"}],
  "buffer_records": {
    "kernel_dispatch": [
      {"correlation_id": {"internal": 21}, "start_timestamp": 1100, "end_timestamp": 1500,
       "dispatch_info": {"agent_id": {"handle": 7}, "queue_id": {"handle": 1}, "kernel_id": 1}},
      {"correlation_id": {"internal": 22}, "start_timestamp": 2100, "end_timestamp": 2600,
       "dispatch_info": {"agent_id": {"handle": 7}, "queue_id": {"handle": 1}, "kernel_id": 1}}
    ],
    "marker_api": [
      {"kind": 1, "operation": 0, "thread_id": 42, "correlation_id": {"internal": 13},
       "start_timestamp": 2000, "end_timestamp": 2900},
      {"kind": 1, "operation": 0, "thread_id": 42, "correlation_id": {"internal": 11},
       "start_timestamp": 1000, "end_timestamp": 1900},
      {"kind": 1, "operation": 0, "thread_id": 42, "correlation_id": {"internal": 12},
       "start_timestamp": 1050, "end_timestamp": 1400}
    ]
  }
}]}"#;

// See: issue 14 (`--step-range` for rocprofv3).
#[test]
fn rocprof_step_range_makes_steps_of_matching_roctx_ranges() {
    let path = std::env::temp_dir().join(format!("stepcast-{}-roctx.json", std::process::id()));
    std::fs::write(&path, ROCTX_DOCUMENT).expect("scratch file");
    let stepped = with_step_range(&path, "^step$");
    let plain = read_trace(&path);
    let _ = std::fs::remove_file(&path);
    let plain = plain.unwrap_or_else(|e| panic!("{e}"));

    // Steps in start order, numbered from 0, on the ranges' thread.
    let steps: Vec<(u64, i64, i64)> = stepped
        .steps
        .iter()
        .map(|s| (s.number, s.start_ns + stepped.origin_ns, s.dur_ns))
        .collect();
    assert_eq!(steps, [(0, 1000, 900), (1, 2000, 900)]);
    // The matched ranges are steps, not annotations; the other range stays an annotation.
    let annotations = |t: &Trace| -> Vec<String> {
        t.events
            .iter()
            .filter(|e| e.kind == EventKind::UserAnnotation)
            .map(|e| t.name(e.name).to_string())
            .collect()
    };
    assert_eq!(annotations(&stepped), ["forward"]);
    assert_eq!(annotations(&plain), ["step", "forward", "step"]);
    assert!(plain.steps.is_empty());
}

/// A program that never called `prof.step()` but wrapped each iteration in
/// `record_function("train_step")` (`kineto/stepcast/cpu-step-ranges/`, recorded here): the
/// pattern makes those ranges its steps, numbered in start order, with the times the file
/// records for them (read here from the JSON itself), and keeps them as nothing else; without it
/// the trace has no step and the ranges are annotations.
#[test]
fn kineto_step_range_makes_steps_of_matching_host_ranges() {
    let path = testdata().join("kineto/stepcast/cpu-step-ranges/userstep.json.gz");
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{e}"));
    let json: serde_json::Value = serde_json::from_reader(flate2::read::GzDecoder::new(file))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut recorded: Vec<(f64, f64)> = json["traceEvents"]
        .as_array()
        .expect("traceEvents")
        .iter()
        .filter(|e| e["name"] == "train_step" && e["ph"] == "X")
        .map(|e| {
            (
                e["ts"].as_f64().expect("ts"),
                e["dur"].as_f64().expect("dur"),
            )
        })
        .collect();
    recorded.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(recorded.len(), 6);

    let plain = read_trace(&path).unwrap_or_else(|e| panic!("{e}"));
    assert!(plain.steps.is_empty());
    let named = |t: &Trace| {
        t.events
            .iter()
            .filter(|e| t.name(e.name) == "train_step")
            .count()
    };
    assert_eq!(named(&plain), 6);

    let stepped = with_step_range(&path, "^train_step$");
    assert_eq!(named(&stepped), 0);
    assert_eq!(stepped.events.len(), plain.events.len() - 6);
    assert_eq!(stepped.steps.len(), 6);
    for (k, (step, (ts_us, dur_us))) in stepped.steps.iter().zip(&recorded).enumerate() {
        assert_eq!(step.number, k as u64);
        let start_us = (stepped.origin_ns + step.start_ns - stepped.file_time_base_ns) as f64 / 1e3;
        assert!((start_us - ts_us).abs() < 0.002, "{step:?} against {ts_us}");
        assert!(
            (step.dur_ns as f64 / 1e3 - dur_us).abs() < 0.002,
            "{step:?} against {dur_us}"
        );
    }
    assert!(
        stepped
            .diagnostics
            .notes
            .iter()
            .any(|n| n == "steps are the 6 host ops and annotations matching `^train_step$`"),
        "{:?}",
        stepped.diagnostics.notes
    );
    let none = with_step_range(&path, "^no such range$");
    assert!(none.steps.is_empty());
    assert_eq!(none.events.len(), plain.events.len());
}
