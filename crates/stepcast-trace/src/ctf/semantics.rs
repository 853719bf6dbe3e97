//! What CTF records mean to stepcast: the table of `docs/formats.md` ("CTF / LTTng").
//!
//! - Ranges: a begin record and its end on one thread make one event (`_entry`/`_exit`,
//!   `_start`/`_end`, `_begin`/`_end` suffixes; OTF2's `Event_Enter`/`Event_Leave` of a
//!   region). Its kind comes from its name: `session` ranges (the Zins & Dagenais TensorFlow
//!   instrumentation: one `Session.run`) are steps; `operation` ranges are ops; calls of the
//!   CUDA driver (`cu*`) are driver calls, of the CUDA runtime, HIP, HSA and OpenCL runtime
//!   calls; OTF2 regions are ops (MPI calls among them); anything else an annotation.
//! - Threads: LTTng-UST's `vpid`/`vtid`/`procname` contexts (`pid`/`tid` where added); OTF2's
//!   location and location group.
//! - The kernel scheduler: `sched_switch` ends a thread's time on its CPU (runnable:
//!   preempted; asleep: blocked) and starts the next thread's; `sched_waking`/`sched_wakeup`
//!   make a blocked thread runnable, woken by the thread running where the wakeup was
//!   recorded. Each traced thread's off-CPU intervals become [`Trace::off_cpu`].
//!
//! Records none of this maps are counted by name in the diagnostics, never dropped silently.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::DecodedTrace;
use super::decode::Record;
use crate::assemble::{Assembly, LaneKey, NewEvent};
use crate::error::ReadError;
use crate::model::{EventKind, LaneId, LaneKind, OffCpu, OffCpuReason, Runtime, ThreadRef, Trace};

/// One open range on a thread.
struct Open {
    /// An OTF2 region (always an op), else a tracepoint range (kind by name).
    region: bool,
    key: String,
    name: String,
    start_ns: i64,
    file_index: u32,
}

/// What a record's name says it is.
enum Shape<'a> {
    Begin(&'a str),
    End(&'a str),
    Other,
}

fn shape(name: &str) -> Shape<'_> {
    for (suffix, begin) in [
        ("_entry", true),
        ("_start", true),
        ("_begin", true),
        ("_exit", false),
        ("_end", false),
    ] {
        if let Some(base) = name.strip_suffix(suffix) {
            return if begin {
                Shape::Begin(base)
            } else {
                Shape::End(base)
            };
        }
    }
    Shape::Other
}

/// The kind of a range whose begin record is `base` (without its suffix) named `name`.
fn kind_of(base: &str, name: &str) -> Option<EventKind> {
    let function = base.rsplit(':').next().unwrap_or(base);
    if function == "session" || function.ends_with("_session") {
        return None; // a step
    }
    if function.contains("operation") {
        return Some(EventKind::CpuOp);
    }
    let api = name.rsplit(':').next().unwrap_or(name);
    let upper_after = |prefix: &str| {
        api.strip_prefix(prefix)
            .and_then(|rest| rest.chars().next())
            .is_some_and(|c| c.is_ascii_uppercase())
    };
    if upper_after("cu") {
        return Some(EventKind::DriverCall);
    }
    if upper_after("cuda") || upper_after("hip") || api.starts_with("hsa_") || upper_after("cl") {
        return Some(EventKind::RuntimeCall);
    }
    Some(EventKind::UserAnnotation)
}

/// A scheduler event: who left or was woken, and what the record says about it.
struct Switch {
    time_ns: i64,
    prev_tid: i64,
    prev_runnable: bool,
    next: ThreadRef,
}

struct Wakeup {
    time_ns: i64,
    tid: i64,
    waker: Option<ThreadRef>,
}

/// Builds the [`Trace`] of the decoded traces under `path`.
pub fn build(path: &Path, traces: &[DecodedTrace]) -> Result<Trace, ReadError> {
    let mut assembly = Assembly::default();
    let mut input_bytes = 0u64;
    // OTF2's definitions: strings, regions and locations, by id.
    let mut strings: HashMap<i128, String> = HashMap::new();
    let mut regions: HashMap<i128, i128> = HashMap::new();
    let mut location_group: HashMap<i128, (i128, Option<i128>)> = HashMap::new();
    let mut records: Vec<(i64, u32, &Record)> = Vec::new();
    let mut no_time = 0u64;
    let mut versions = Vec::new();
    for trace in traces {
        versions.push(format!(
            "{} (CTF {}, {})",
            trace.dir.display(),
            trace.version,
            trace
                .env
                .get("tracer_name")
                .map_or("unknown tracer", String::as_str)
        ));
        if trace.discarded > 0 {
            assembly.diagnostics.note(format!(
                "{}: the tracer discarded {} records (its buffers were full): the trace has gaps",
                trace.dir.display(),
                trace.discarded
            ));
        }
        for record in &trace.records {
            match &*record.name {
                "GlobalDef_String" => {
                    if let (Some(id), Some(value)) = (record.int("self"), record.str("stringValue"))
                    {
                        strings.insert(id, value.to_string());
                    }
                }
                "GlobalDef_Region" => {
                    if let (Some(id), Some(name)) = (record.int("self"), record.int("name")) {
                        regions.insert(id, name);
                    }
                }
                "GlobalDef_Location" => {
                    if let (Some(id), Some(group)) =
                        (record.int("self"), record.int("locationGroup"))
                    {
                        location_group.insert(id, (group, record.int("name")));
                    }
                }
                _ => {}
            }
        }
        for record in &trace.records {
            assembly.records += 1;
            match record.time_ns {
                Some(t) => records.push((t, records.len() as u32, record)),
                None => no_time += 1,
            }
        }
        input_bytes += trace.bytes;
    }
    assembly
        .diagnostics
        .skip_n("record without timestamp (a stream without clock)", no_time);
    assembly
        .diagnostics
        .note(format!("CTF traces read: {}", versions.join("; ")));
    // Merged by time, as babeltrace2's muxer does (ties in stream order).
    records.sort_by_key(|(t, i, _)| (*t, *i));

    let mut open: BTreeMap<LaneKey, Vec<Open>> = BTreeMap::new();
    let mut step_number: u64 = 0;
    let mut switches: Vec<Switch> = Vec::new();
    let mut wakeups: Vec<Wakeup> = Vec::new();
    // The thread each CPU runs, from `sched_switch`: who wakes a thread when the wakeup
    // record has no `tid` context.
    let mut running: HashMap<i128, ThreadRef> = HashMap::new();
    for (index, &(time_ns, _, record)) in records.iter().enumerate() {
        let file_index = index as u32;
        let name = &*record.name;
        if name.starts_with("GlobalDef") {
            assembly
                .diagnostics
                .skip("OTF2 definition (read for names, not an event)");
            continue;
        }
        match name.rsplit(':').next().unwrap_or(name) {
            "sched_switch" => {
                let (Some(prev_tid), Some(next_tid)) =
                    (record.i64("prev_tid"), record.i64("next_tid"))
                else {
                    assembly
                        .diagnostics
                        .skip("sched_switch without prev_tid/next_tid");
                    continue;
                };
                let next = ThreadRef {
                    tid: next_tid,
                    name: record.str("next_comm").unwrap_or("").to_string(),
                };
                if let Some(cpu) = record.int("cpu_id") {
                    running.insert(cpu, next.clone());
                }
                switches.push(Switch {
                    time_ns,
                    prev_tid,
                    prev_runnable: runnable(record),
                    next,
                });
                continue;
            }
            "sched_waking" | "sched_wakeup" => {
                let Some(tid) = payload_i64(record, "tid") else {
                    assembly.diagnostics.skip("sched wakeup without tid");
                    continue;
                };
                // The waker: the current thread where the record was taken (a `tid` context, or
                // the CPU's running thread).
                let waker = match (context_i64(record, "tid"), context_str(record, "procname")) {
                    (Some(tid), name) => Some(ThreadRef {
                        tid,
                        name: name.unwrap_or("").to_string(),
                    }),
                    _ => record
                        .int("cpu_id")
                        .and_then(|cpu| running.get(&cpu).cloned()),
                };
                wakeups.push(Wakeup {
                    time_ns,
                    tid,
                    waker,
                });
                continue;
            }
            _ => {}
        }
        // Host ranges.
        let (lane, lane_name, key, range_name, boundary) = if name == "Event_Enter"
            || name == "Event_Leave"
        {
            let (Some(location), Some(region)) = (record.i64("locationID"), record.int("region"))
            else {
                assembly
                    .diagnostics
                    .skip(format!("{name} without locationID/region"));
                continue;
            };
            let (group, location_name) = location_group
                .get(&i128::from(location))
                .copied()
                .unwrap_or((0, None));
            let region_name = regions
                .get(&region)
                .and_then(|s| strings.get(s))
                .cloned()
                .unwrap_or_else(|| format!("region {region}"));
            let lane_name = location_name.and_then(|s| strings.get(&s)).cloned();
            (
                (
                    LaneKind::CpuThread,
                    i64::try_from(group).unwrap_or(-1),
                    location,
                ),
                lane_name,
                format!("region {region}"),
                region_name,
                if name == "Event_Enter" {
                    Shape::Begin("region")
                } else {
                    Shape::End("region")
                },
            )
        } else {
            let Some(tid) = record.i64("vtid").or_else(|| record.i64("tid")) else {
                assembly
                    .diagnostics
                    .skip(format!("{name}: no thread (vtid/tid context)"));
                continue;
            };
            let pid = record
                .i64("vpid")
                .or_else(|| record.i64("pid"))
                .unwrap_or(0);
            let boundary = shape(name);
            let base = match boundary {
                Shape::Begin(base) | Shape::End(base) => base,
                Shape::Other => {
                    assembly
                        .diagnostics
                        .skip(format!("{name}: not a range or scheduler record"));
                    continue;
                }
            };
            let range_name = record
                .str("name")
                .or_else(|| record.str("op_name"))
                .map(str::to_string)
                .or_else(|| record.int("addr").map(|addr| format!("func {addr:#x}")))
                .unwrap_or_else(|| base.to_string());
            (
                (LaneKind::CpuThread, pid, tid),
                record.str("procname").map(str::to_string),
                base.to_string(),
                range_name,
                boundary,
            )
        };
        assembly.lane(lane, lane_name);
        let stack = open.entry(lane).or_default();
        match boundary {
            Shape::Begin(_) => stack.push(Open {
                region: name == "Event_Enter",
                key,
                name: range_name,
                start_ns: time_ns,
                file_index,
            }),
            Shape::End(_) => {
                let Some(at) = stack.iter().rposition(|o| o.key == key) else {
                    assembly
                        .diagnostics
                        .skip(format!("{name}: an end without its begin"));
                    continue;
                };
                // Ranges opened inside and never closed are counted, not kept.
                let unclosed = stack.len() - at - 1;
                assembly.diagnostics.skip_n(
                    "a begin without its end (inside a closed range)",
                    unclosed as u64,
                );
                let mut removed = stack.drain(at..);
                let Some(begin) = removed.next() else {
                    continue;
                };
                drop(removed);
                // Records are in time order; a difference past `i64` is a corrupt time, which
                // the assembly's bounds then refuse (counted).
                let dur_ns = time_ns.checked_sub(begin.start_ns).unwrap_or(i64::MAX);
                let base = key.as_str();
                let kind = if begin.region {
                    Some(EventKind::CpuOp)
                } else {
                    kind_of(base, &begin.name)
                };
                match kind {
                    None => {
                        assembly.step(
                            step_number,
                            &format!("{} #{step_number}", begin.name),
                            lane,
                            begin.start_ns,
                            dur_ns,
                        );
                        step_number += 1;
                    }
                    Some(kind) => {
                        let name = assembly.intern(&begin.name);
                        assembly.push(NewEvent {
                            lane,
                            kind,
                            name,
                            start_abs_ns: begin.start_ns,
                            dur_ns,
                            correlation: None,
                            bytes: None,
                            sequence_number: None,
                            fill: None,
                            file_index: begin.file_index,
                        });
                    }
                }
            }
            Shape::Other => {}
        }
    }
    let unclosed: usize = open.values().map(Vec::len).sum();
    assembly.diagnostics.skip_n(
        "a begin without its end (the trace ends inside it)",
        unclosed as u64,
    );
    if !switches.is_empty() {
        assembly.diagnostics.note(format!(
            "kernel scheduler: {} sched_switch and {} wakeup records",
            switches.len(),
            wakeups.len()
        ));
    }
    let mut trace = assembly.finish(path, "CTF trace", Runtime::CpuOnly, input_bytes)?;
    trace.off_cpu = off_cpu(&trace, &switches, &wakeups);
    if !switches.is_empty() {
        let threads: std::collections::BTreeSet<LaneId> =
            trace.off_cpu.iter().map(|o| o.lane).collect();
        trace.diagnostics.note(if trace.off_cpu.is_empty() {
            "the scheduler records name none of the traced threads: no off-CPU interval".to_string()
        } else {
            format!(
                "{} off-CPU intervals on {} traced thread(s) (analyze reports them per step)",
                trace.off_cpu.len(),
                threads.len()
            )
        });
    }
    Ok(trace)
}

/// Whether `sched_switch` left its previous thread runnable: LTTng writes the kernel's task
/// state as an integer (0: running), ftrace as letters (`R`, `R+`).
fn runnable(record: &Record) -> bool {
    match record.field("prev_state") {
        Some(value) => match (value.as_int(), value.as_str()) {
            (_, Some(text)) if !text.chars().all(|c| c.is_ascii_digit()) => text.starts_with('R'),
            (Some(state), _) => state == 0,
            _ => false,
        },
        None => false,
    }
}

fn context_i64(record: &Record, name: &str) -> Option<i64> {
    record
        .context
        .iter()
        .find(|(n, _)| &**n == name)
        .and_then(|(_, v)| v.as_int())
        .and_then(|n| i64::try_from(n).ok())
}

/// A payload integer (a wakeup's `tid` is the woken thread's, not the context's current one).
fn payload_i64(record: &Record, name: &str) -> Option<i64> {
    record
        .payload
        .iter()
        .find(|(n, _)| &**n == name)
        .and_then(|(_, v)| v.as_int())
        .and_then(|n| i64::try_from(n).ok())
}

fn context_str<'r>(record: &'r Record, name: &str) -> Option<&'r str> {
    record
        .context
        .iter()
        .find(|(n, _)| &**n == name)
        .and_then(|(_, v)| v.as_str())
}

/// The bound on an off-CPU interval's start (from the origin) and length: the bounds the
/// readers put on event times, so no later sum of them overflows.
const MAX_OFF_CPU_TIME_NS: i64 = 1 << 50;

/// The off-CPU intervals of the trace's host threads: from a `sched_switch` that takes one off
/// its CPU to the next that puts it back, with the first wakeup of it in between.
fn off_cpu(trace: &Trace, switches: &[Switch], wakeups: &[Wakeup]) -> Vec<OffCpu> {
    let mut lane_of: HashMap<i64, LaneId> = HashMap::new();
    for (i, lane) in trace.lanes.iter().enumerate() {
        if lane.kind == LaneKind::CpuThread {
            lane_of.entry(lane.tid).or_insert(LaneId(i as u32));
        }
    }
    // Each thread's wakeups in time order, so an interval finds its own by binary search.
    let mut wakeups_of: HashMap<i64, Vec<&Wakeup>> = HashMap::new();
    for wakeup in wakeups {
        wakeups_of.entry(wakeup.tid).or_default().push(wakeup);
    }
    let mut out: HashMap<i64, &Switch> = HashMap::new();
    let mut intervals = Vec::new();
    for switch in switches {
        if let Some(left) = out.remove(&switch.next.tid)
            && let Some(&lane) = lane_of.get(&switch.next.tid)
        {
            let wakeup = wakeups_of.get(&switch.next.tid).and_then(|list| {
                let first = list.partition_point(|w| w.time_ns < left.time_ns);
                list.get(first)
                    .filter(|w| w.time_ns <= switch.time_ns)
                    .copied()
            });
            let reason = if left.prev_runnable {
                OffCpuReason::Preempted
            } else {
                OffCpuReason::Blocked
            };
            // Times past the trace's bounds (a corrupt clock) give no interval.
            let start_ns = left.time_ns.checked_sub(trace.origin_ns);
            let dur_ns = switch.time_ns.checked_sub(left.time_ns);
            if let (Some(start_ns), Some(dur_ns)) = (start_ns, dur_ns)
                && (-MAX_OFF_CPU_TIME_NS..=MAX_OFF_CPU_TIME_NS).contains(&start_ns)
                && (0..=MAX_OFF_CPU_TIME_NS).contains(&dur_ns)
            {
                let wakeup = wakeup.filter(|_| reason == OffCpuReason::Blocked);
                intervals.push(OffCpu {
                    lane,
                    start_ns,
                    dur_ns,
                    reason,
                    next: Some(left.next.clone()),
                    wakeup_ns: wakeup.map(|w| start_ns + (w.time_ns - left.time_ns)),
                    waker: wakeup.and_then(|w| w.waker.clone()),
                });
            }
        }
        if lane_of.contains_key(&switch.prev_tid) {
            out.insert(switch.prev_tid, switch);
        }
    }
    intervals.sort_by_key(|o| (o.lane, o.start_ns));
    intervals
}
