//! TensorFlow 1 `Timeline` Chrome traces: `timeline.Timeline(run_metadata.step_stats)
//! .generate_chrome_trace_format()` after a `Session.run` with `FULL_TRACE`
//! (`tensorflow/python/client/timeline.py`). One file is one `Session.run`: one step.
//!
//! The file is `{"traceEvents": [...]}`. `M` `process_name` records name each `pid` after a
//! device's stats: `/job:.../device:CPU:0 Compute` and `.../device:GPU:0 Compute` (ops run by
//! the executor's threads, `tid`),
//! `/device:GPU:0/stream:N Compute` (kernels on a stream), `/device:GPU:0/memcpy Compute`
//! (copies), `... Tensors` (tensor lifetimes, `N`/`D` records) and `Allocators` (memory
//! counters, `C`). Ops are `X` records of category `Op`, `args.name` the node
//! (`gradients/fc1/MatMul_grad/MatMul`) and `args.op` its type. `DataFlow` flows (`s` at the
//! producer, `t` at the consumer, paired by `id`) are the tensors passed between ops of
//! different threads or devices: recorded dependencies (`Trace::links`, `LinkKind::DataFlow`).

mod records;

use std::collections::BTreeMap;
use std::path::Path;

use crate::assemble::{Assembly, ByRecord, LaneKey, NewEvent};
use crate::detect::Source;
use crate::error::ReadError;
use crate::model::{EventKind, LaneKind, LinkKind, Runtime, Trace};

/// Whether the start of a file is a TensorFlow `Timeline`: a `traceEvents` object whose first
/// records name TensorFlow devices (`/job:`, `/device:`) or carry its `Op` category.
pub fn looks_like(head: &[u8]) -> bool {
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let skip = text.iter().take_while(|b| b.is_ascii_whitespace()).count();
    if text.get(skip) != Some(&b'{') || memchr::memmem::find(text, b"\"traceEvents\"").is_none() {
        return false;
    }
    let named_device = memchr::memmem::find(text, b"\"/job:").is_some()
        || memchr::memmem::find(text, b"\"/device:").is_some();
    named_device && memchr::memmem::find(text, b"Compute\"").is_some()
}

/// The detection table's reader.
pub fn read_source(source: &Source<'_>, _: &crate::ReadOptions) -> Result<Vec<Trace>, ReadError> {
    let content = source.content()?;
    Ok(vec![read(&content, source.path)?])
}

/// What a process of the file holds, from its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProcessKind {
    /// Ops run by host threads (a CPU device's `Compute`).
    HostOps,
    /// Kernels of one device stream.
    Stream,
    /// Copies.
    Copies,
    /// Tensor lifetimes, allocator counters: not work.
    Other,
}

fn process_kind(name: &str) -> ProcessKind {
    if !name.ends_with(" Compute") {
        return ProcessKind::Other;
    }
    let device = name.trim_end_matches(" Compute");
    if device.contains("memcpy") {
        ProcessKind::Copies
    } else if device.contains("/stream:all") {
        // The all-streams summary duplicates the per-stream kernels.
        ProcessKind::Other
    } else if device.contains("/stream:") {
        ProcessKind::Stream
    } else {
        // A device's op-level stats (`/device:CPU:0`, and `/device:GPU:0`, whose ops the
        // executor's threads run and launch from the host).
        ProcessKind::HostOps
    }
}

/// Reads a TensorFlow `Timeline` held in memory.
pub fn read(content: &[u8], path: &Path) -> Result<Trace, ReadError> {
    let parsed = records::parse(content, path)?;
    let mut processes: BTreeMap<i64, (String, ProcessKind)> = BTreeMap::new();
    for r in &parsed.records {
        if r.ph == "M"
            && r.name.as_deref() == Some("process_name")
            && let (Some(pid), Some(name)) = (r.pid, &r.arg_name)
        {
            processes.insert(pid, (name.clone(), process_kind(name)));
        }
    }
    let mut assembly = Assembly::default();
    assembly.records = parsed.records.len() as u64;
    let mut kept: Vec<(usize, LaneKey, i64, i64)> = Vec::new();
    for (index, r) in parsed.records.iter().enumerate() {
        let process = r.pid.and_then(|pid| processes.get(&pid));
        match r.ph.as_str() {
            "X" => {}
            "M" => continue,
            "s" | "t" => continue,
            other => {
                assembly.diagnostics.skip(format!(
                    "records with phase `{other}` (tensor lifetimes, allocator counters)"
                ));
                continue;
            }
        }
        let Some((device, kind)) = process else {
            assembly.diagnostics.skip("ops of an unnamed process");
            continue;
        };
        let (Some(pid), Some(ts), Some(dur)) = (r.pid, r.ts_us, r.dur_us) else {
            assembly.diagnostics.skip("ops without pid, ts or dur");
            continue;
        };
        let (lane_kind, event_kind) = match kind {
            ProcessKind::HostOps => (LaneKind::CpuThread, EventKind::CpuOp),
            ProcessKind::Stream => (LaneKind::DeviceStream, EventKind::Kernel),
            ProcessKind::Copies => (LaneKind::DeviceStream, EventKind::Memcpy),
            ProcessKind::Other => {
                assembly
                    .diagnostics
                    .skip("ops of a summary process (all streams)");
                continue;
            }
        };
        let tid = r.tid.unwrap_or(0);
        let key: LaneKey = (lane_kind, pid, tid);
        assembly.lane(key, Some(format!("{device} (thread {tid})")));
        // The node's name (`fc1/MatMul`) names the event; its type is in `args.op`.
        let name = assembly.intern(r.arg_name.as_deref().or(r.name.as_deref()).unwrap_or("?"));
        assembly.push(NewEvent {
            lane: key,
            kind: event_kind,
            name,
            start_abs_ns: ts.saturating_mul(1000),
            dur_ns: dur.max(0).saturating_mul(1000),
            correlation: None,
            bytes: None,
            sequence_number: None,
            fill: None,
            file_index: index as u32,
        });
        kept.push((index, key, ts, ts.saturating_add(dur.max(0))));
    }
    // Flows: the op on the flow's lane whose time holds its point.
    let op_at = |pid: i64, tid: i64, ts: i64| -> Option<usize> {
        kept.iter()
            .filter(|(_, (_, p, t), start, end)| {
                *p == pid && *t == tid && *start <= ts && ts <= *end
            })
            .max_by_key(|(_, _, start, _)| *start)
            .map(|(index, ..)| *index)
    };
    let mut starts: BTreeMap<i64, usize> = BTreeMap::new();
    let mut flows: Vec<(u32, u32)> = Vec::new();
    let mut unresolved = 0u64;
    for r in &parsed.records {
        let (Some(id), Some(pid), Some(ts)) = (r.id, r.pid, r.ts_us) else {
            continue;
        };
        let op = op_at(pid, r.tid.unwrap_or(0), ts);
        match (r.ph.as_str(), op) {
            ("s", Some(op)) => {
                starts.insert(id, op);
            }
            ("t", Some(to)) => match starts.get(&id) {
                Some(&from) if from != to => flows.push((from as u32, to as u32)),
                Some(_) => {}
                None => unresolved += 1,
            },
            ("s" | "t", None) => unresolved += 1,
            _ => {}
        }
    }
    assembly
        .diagnostics
        .skip_n("DataFlow flow points on no op", unresolved);
    let mut trace = assembly.finish(
        path,
        "TensorFlow Timeline",
        Runtime::Cuda,
        content.len() as u64,
    )?;
    trace.links = ByRecord::of(&trace).links(&flows, LinkKind::DataFlow);
    trace.links.dedup();
    trace.diagnostics.note(format!(
        "TensorFlow Timeline: one Session.run (one step); {} DataFlow dependencies between ops",
        trace.links.len()
    ));
    Ok(trace)
}
