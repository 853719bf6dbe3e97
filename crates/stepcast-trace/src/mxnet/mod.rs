//! MXNet profiler traces: the `profile.json` that `mx.profiler.set_config(filename=...)` and
//! `mx.profiler.dump()` write (`src/profiler/profiler.cc`, `profiler.h` of apache/mxnet 1.x).
//!
//! The file is `{"traceEvents": [...], "displayTimeUnit": "ms"}`. It opens with one `M`
//! `process_name` record per device slot, `pid` the slot's index: `cpu/0`..`cpu/N`, `gpu/0`..
//! (GPU builds), `cpu pinned/`, `cpu shared/`. Operators the engine ran are `B`/`E` pairs of
//! category `operator` whose `pid` is the device slot ("lie and set process id to be the device
//! number") and `tid` the `std::hash` of the thread that ran them. Every other record is on a
//! `pid` that is the `std::hash` of its category, announced by its own `M` record the first
//! time: the `operator` domain repeats each operator as a `b`/`e` pair (skipped: the `B`/`E`
//! pair is read), `MXNET_C_API` holds the C API calls the front end made (`b`/`e`) and two
//! counters (`C`), `Device Storage` the memory in use per device (`C`, `Memory: cpu/0`, bytes),
//! and each user domain (`mx.profiler.Domain`) its tasks, frames and events. Both hashes are
//! `size_t` and may exceed `i64`: they are read as `u64` and threads are numbered.
//!
//! What becomes of them: operators are ops ([`EventKind::CpuOp`]) on the lane of their thread,
//! C API calls runtime calls ([`EventKind::RuntimeCall`], MXNet's runtime, not an accelerator's)
//! on theirs; the memory counters [`Trace::memory`]; steps are the ranges of a user domain
//! named `train`, or, with `--step-range`, the user ranges whose name the pattern matches; other
//! user ranges are annotations. MXNet records no kernels or copies on device queues: a GPU
//! profile puts its operators on a `gpu/N` slot, timed by the host thread that ran them, and
//! they are read as ops of that thread (their device noted).

mod records;

use std::collections::BTreeMap;
use std::path::Path;

use crate::ReadOptions;
use crate::assemble::{Assembly, LaneKey, NewEvent, NewMemory};
use crate::detect::Source;
use crate::error::ReadError;
use crate::model::{EventKind, LaneKind, Runtime, Trace};

/// The category of the C API calls.
const C_API: &str = "MXNET_C_API";
/// The category of the operators (and of their duplicate async ranges).
const OPERATOR: &str = "operator";
/// The category of the memory counters.
const STORAGE: &str = "Device Storage";
/// The user domain whose ranges are steps by default.
const TRAIN: &str = "train";

/// Whether the start of a file is an MXNet profile: a `traceEvents` object whose first records
/// name the processes after MXNet's device slots (`Profiler::Profiler`: `"cpu/" + i`, always
/// from 0; `cpu pinned/` after the CPUs and GPUs).
pub fn looks_like(head: &[u8]) -> bool {
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let skip = text.iter().take_while(|b| b.is_ascii_whitespace()).count();
    if text.get(skip) != Some(&b'{') {
        return false;
    }
    let has = |needle: &[u8]| memchr::memmem::find(text, needle).is_some();
    has(b"\"traceEvents\"") && has(b"\"process_name\"") && has(b"\"cpu/0\"")
}

/// The detection table's reader.
pub fn read_source(source: &Source<'_>, options: &ReadOptions) -> Result<Vec<Trace>, ReadError> {
    let content = source.content()?;
    Ok(vec![read(&content, source.path, options)?])
}

/// A device slot's name: `cpu/N`, `gpu/N`, `cpu pinned/`, `cpu shared/`.
fn is_device_slot(name: &str) -> bool {
    let numbered = |prefix: &str| {
        name.strip_prefix(prefix)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    };
    numbered("cpu/") || numbered("gpu/") || name == "cpu pinned/" || name == "cpu shared/"
}

/// The device a memory counter (`Memory: gpu/1`) is of: the GPU's index, -1 for host memory.
fn counter_device(name: &str) -> i64 {
    name.trim_start_matches("Memory: ")
        .strip_prefix("gpu/")
        .and_then(|n| n.parse().ok())
        .unwrap_or(-1)
}

/// What a duration record is, from its process and category.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    Op,
    ApiCall,
    /// A user domain's range; `true` for the `train` domain.
    Range(bool),
}

/// A begun record waiting for its end.
struct Open {
    name: String,
    ts_us: i64,
    index: u32,
}

/// A closed range, before it is placed.
struct Closed {
    role: Role,
    name: String,
    tid: u64,
    ts_us: i64,
    end_us: i64,
    index: u32,
}

/// Reads an MXNet profile held in memory.
pub fn read(content: &[u8], path: &Path, options: &ReadOptions) -> Result<Trace, ReadError> {
    let parsed = records::parse(content, path)?;
    let mut processes: BTreeMap<u64, String> = BTreeMap::new();
    for r in &parsed {
        if r.ph == "M"
            && r.name.as_deref() == Some("process_name")
            && let (Some(pid), Some(name)) = (r.pid, &r.arg_name)
        {
            processes.insert(pid, name.clone());
        }
    }
    let mut assembly = Assembly::default();
    assembly.records = parsed.len() as u64;
    // Begun records by (pid, tid, async id, B/E or b/e): MXNet writes a stat's begin and end
    // one after the other, so a stack per key pairs them, nested ranges included.
    let mut open: BTreeMap<(u64, u64, Option<u64>), Vec<Open>> = BTreeMap::new();
    let mut closed: Vec<Closed> = Vec::new();
    // (ts µs, counter name, bytes in use, thread)
    let mut memory: Vec<(i64, String, i64, u64)> = Vec::new();
    let mut devices_used: BTreeMap<String, u64> = BTreeMap::new();
    for (index, r) in parsed.iter().enumerate() {
        let index = index as u32;
        let process = r.pid.and_then(|pid| processes.get(&pid));
        let cat = r.cat.as_deref().unwrap_or("");
        match r.ph.as_str() {
            "M" => {
                if r.name.as_deref() != Some("process_name") {
                    assembly
                        .diagnostics
                        .skip("metadata records other than process names");
                }
                continue;
            }
            "C" => {
                let (Some(name), Some(ts), Some(value)) = (&r.name, r.ts_us, r.counter) else {
                    assembly
                        .diagnostics
                        .skip("counters without name, ts or value");
                    continue;
                };
                if cat == STORAGE && name.starts_with("Memory: ") {
                    memory.push((ts, name.clone(), value, r.tid.unwrap_or(0)));
                } else {
                    assembly
                        .diagnostics
                        .skip(format!("counters `{name}` ({cat}): not work"));
                }
                continue;
            }
            "B" | "E" | "b" | "e" | "X" => {}
            other => {
                assembly
                    .diagnostics
                    .skip(format!("records with phase `{other}`"));
                continue;
            }
        }
        let (Some(pid), Some(tid), Some(ts), Some(name)) = (r.pid, r.tid, r.ts_us, &r.name) else {
            assembly
                .diagnostics
                .skip("duration records without pid, tid, ts or name");
            continue;
        };
        let device = process.filter(|p| is_device_slot(p));
        let role = if let Some(device) = device {
            *devices_used.entry(device.clone()).or_insert(0) += u64::from(r.ph != "E");
            Role::Op
        } else if cat == OPERATOR {
            assembly.diagnostics.skip(
                "`operator` domain ranges (b/e): the same operators again; their B/E records \
                 on the device are read",
            );
            continue;
        } else if cat == C_API {
            Role::ApiCall
        } else if process.is_none() {
            assembly
                .diagnostics
                .skip("duration records of an unnamed process");
            continue;
        } else {
            Role::Range(cat == TRAIN)
        };
        let is_async = matches!(r.ph.as_str(), "b" | "e");
        let key = (pid, tid, if is_async { r.id } else { None });
        match r.ph.as_str() {
            "B" | "b" => open.entry(key).or_default().push(Open {
                name: name.clone(),
                ts_us: ts,
                index,
            }),
            "X" => {
                let Some(dur) = r.dur_us else {
                    assembly.diagnostics.skip("complete records without dur");
                    continue;
                };
                closed.push(Closed {
                    role,
                    name: name.clone(),
                    tid,
                    ts_us: ts,
                    end_us: ts.saturating_add(dur),
                    index,
                });
            }
            _ => {
                let stack = open.entry(key).or_default();
                match stack.last() {
                    Some(begin) if begin.name == *name => {
                        if let Some(begin) = stack.pop() {
                            closed.push(Closed {
                                role,
                                name: begin.name,
                                tid,
                                ts_us: begin.ts_us,
                                end_us: ts,
                                index: begin.index,
                            });
                        }
                    }
                    _ => assembly.diagnostics.skip("end records without their begin"),
                }
            }
        }
    }
    let unclosed: usize = open.values().map(Vec::len).sum();
    assembly
        .diagnostics
        .skip_n("begin records without their end", unclosed as u64);

    // Threads numbered in the order of their hashes, the hash kept as the lane's `file_tid`.
    let threads: BTreeMap<u64, i64> = closed
        .iter()
        .map(|c| c.tid)
        .chain(memory.iter().map(|m| m.3))
        .collect::<std::collections::BTreeSet<u64>>()
        .into_iter()
        .enumerate()
        .map(|(i, tid)| (tid, i as i64))
        .collect();
    let lane_of = |tid: u64| -> LaneKey { (LaneKind::CpuThread, 0, threads[&tid]) };
    for (&tid, &number) in &threads {
        let mut roles: Vec<&str> = Vec::new();
        if closed
            .iter()
            .any(|c| c.tid == tid && c.role == Role::ApiCall)
        {
            roles.push("C API calls");
        }
        if closed.iter().any(|c| c.tid == tid && c.role == Role::Op) {
            roles.push("operators");
        }
        let what = if roles.is_empty() {
            String::new()
        } else {
            format!(": {}", roles.join(", "))
        };
        assembly.lane(
            (LaneKind::CpuThread, 0, number),
            Some(format!("MXNet thread {tid}{what}")),
        );
    }
    assembly.steps_from_ranges(
        options.step_range.as_ref(),
        "MXNet user ranges (mx.profiler tasks, frames, events)",
    );
    let mut train: Vec<&Closed> = Vec::new();
    let (mut ops, mut calls, mut annotations) = (0u64, 0u64, 0u64);
    for c in &closed {
        let (Some(start), Some(end)) = (c.ts_us.checked_mul(1000), c.end_us.checked_mul(1000))
        else {
            assembly.diagnostics.skip("timestamp out of range");
            continue;
        };
        let lane = lane_of(c.tid);
        let kind = match c.role {
            Role::Op => {
                ops += 1;
                EventKind::CpuOp
            }
            Role::ApiCall => {
                calls += 1;
                EventKind::RuntimeCall
            }
            Role::Range(is_train) => {
                if assembly.step_range(&c.name, lane, start, end - start) {
                    continue;
                }
                if is_train && assembly.reads_step_markers() {
                    train.push(c);
                    continue;
                }
                annotations += 1;
                EventKind::UserAnnotation
            }
        };
        let name = assembly.intern(&c.name);
        assembly.push(NewEvent {
            lane,
            kind,
            name,
            start_abs_ns: start,
            dur_ns: end - start,
            correlation: None,
            bytes: None,
            sequence_number: None,
            fill: None,
            file_index: c.index,
        });
    }
    train.sort_by_key(|c| (c.ts_us, c.index));
    for (number, c) in train.iter().enumerate() {
        assembly.step(
            number as u64,
            &c.name,
            lane_of(c.tid),
            c.ts_us.saturating_mul(1000),
            c.end_us.saturating_sub(c.ts_us).saturating_mul(1000),
        );
    }
    // A counter holds the bytes in use after each change; the change is the difference.
    let mut last: BTreeMap<&str, i64> = BTreeMap::new();
    let samples = memory.len();
    for (ts, name, value, tid) in &memory {
        let before = last.insert(name.as_str(), *value).unwrap_or(0);
        assembly.memory(NewMemory {
            time_abs_ns: ts.saturating_mul(1000),
            device: counter_device(name),
            bytes: value.saturating_sub(before),
            total_allocated: Some(*value),
            total_reserved: None,
            addr: None,
            lane: lane_of(*tid),
        });
    }
    let has_gpu = devices_used.keys().any(|d| d.starts_with("gpu/"));
    let device_list = devices_used
        .iter()
        .map(|(d, n)| format!("{n} on {d}"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut trace = assembly.finish(
        path,
        "MXNet profile",
        if has_gpu {
            Runtime::Cuda
        } else {
            Runtime::CpuOnly
        },
        content.len() as u64,
    )?;
    for lane in &mut trace.lanes {
        if let Some((tid, _)) = threads.iter().find(|(_, n)| **n == lane.tid) {
            lane.file_tid = Some(tid.to_string());
        }
    }
    let steps = if options.step_range.is_some() {
        String::new()
    } else if trace.steps.is_empty() {
        "; no `train` domain ranges, so the window is one step (--step-range REGEX takes others)"
            .to_string()
    } else {
        format!(
            "; steps are the {} ranges of the `train` domain",
            trace.steps.len()
        )
    };
    trace.diagnostics.note(format!(
        "read as MXNet profiler JSON: {ops} operators ({device_list}) on {} threads, {calls} C API \
         calls, {annotations} user ranges as annotations, {samples} memory counter samples{steps}",
        threads.len()
    ));
    if has_gpu {
        trace.diagnostics.note(
            "MXNet records operators on a GPU as timed by the host thread that ran them; it \
             records no kernels or copies on device streams",
        );
    }
    Ok(trace)
}
