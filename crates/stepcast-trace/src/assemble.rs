//! The last step of the readers that first hold a whole file in typed records (Nsight Systems
//! SQLite, rocprofv3 JSON, XPlane): events, sync records and steps with absolute times go in, a
//! [`Trace`] in stepcast's order comes out. This is the one place where those readers choose
//! the trace's origin, number lanes, put events in order, number steps made of ranges
//! (`--step-range`) and carry side tables (launch configurations) through the sort.
//!
//! Kineto's reader has its own, streaming builder (`kineto/build.rs`); these formats are read
//! whole by their decoders anyway, so a plain table sorted at the end is enough. The bounds are
//! Kineto's: a duration past [`MAX_DUR_NS`] or a time outside [`MIN_TS_NS`]..[`MAX_TS_NS`] is
//! skipped and counted, so no later sum of times can overflow.

use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::path::Path;

use crate::error::ReadError;
use crate::kineto::MAX_DUR_NS;
use crate::model::{
    DeviceInfo, Diagnostics, Event, EventId, EventKind, Interner, KernelFill, Lane, LaneId,
    LaneKind, Link, LinkKind, MemoryEvent, NameId, Runtime, SequenceNumber, StepMarker, SyncEvent,
    Trace,
};

/// Times taken, as in Kineto's reader: from -2^60 to 2^62 ns.
const MIN_TS_NS: i64 = -(1 << 60);
const MAX_TS_NS: i64 = 1 << 62;
/// The longest profiled window taken (13 days): events further apart mean a corrupt time.
const MAX_SPAN_NS: i64 = 1 << 50;

/// A lane as the file names it: kind, process (or device) and thread (or stream).
pub type LaneKey = (LaneKind, i64, i64);

/// One event before the trace's origin is known.
#[derive(Clone, Copy)]
struct Pending {
    lane: LaneKey,
    kind: EventKind,
    name: NameId,
    start_abs_ns: i64,
    dur_ns: i64,
    correlation: Option<u64>,
    bytes: Option<u64>,
    sequence_number: Option<i64>,
    /// Index into `Assembly::kernel_fill`, or [`NO_FILL`].
    fill: u32,
    file_index: u32,
}

const NO_FILL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct PendingStep {
    number: u64,
    name: NameId,
    lane: LaneKey,
    start_abs_ns: i64,
    dur_ns: i64,
}

/// A memory event before the trace's origin is known.
pub struct NewMemory {
    pub time_abs_ns: i64,
    /// The device whose memory changed; -1 for host memory.
    pub device: i64,
    /// Bytes allocated (positive) or freed (negative).
    pub bytes: i64,
    pub total_allocated: Option<i64>,
    pub total_reserved: Option<i64>,
    /// The address allocated or freed, if recorded.
    pub addr: Option<u64>,
    /// The host thread that allocated or freed.
    pub lane: LaneKey,
}

/// Events, lanes and steps of one file (or one process of it), in any order.
#[derive(Default)]
pub struct Assembly {
    names: Interner,
    lane_names: BTreeMap<LaneKey, Option<String>>,
    events: Vec<Pending>,
    /// The lane of the last event pushed (declared already).
    last_lane: Option<LaneKey>,
    kernel_fill: Vec<KernelFill>,
    steps: Vec<PendingStep>,
    /// Ranges `step_range` matched, numbered in start order by `finish`.
    step_ranges: Vec<PendingStep>,
    step_range: Option<StepRange>,
    /// What a step-range pattern is matched against in this format (the first `what` given
    /// to `steps_from_ranges`), for [`Trace::step_range_events`].
    step_range_events: Option<&'static str>,
    /// Sync records, with absolute times.
    syncs: Vec<SyncEvent>,
    memory: Vec<NewMemory>,
    pub devices: Vec<DeviceInfo>,
    pub diagnostics: Diagnostics,
    /// Records of the file's event tables (kept or skipped).
    pub records: u64,
}

/// How the note of a `--step-range` that matched nothing begins (`step_range_note`): the
/// user's pattern then stands for the steps, and the graph infers none of its own.
pub const STEP_RANGE_MATCHED_NONE: &str = "no step markers: none of the";

/// The note `info` shows where `--step-range` was given: how many `what` (`NVTX ranges`) the
/// pattern made steps of, or that it matched none.
pub(crate) fn step_range_note(steps: usize, what: &str, pattern: &regex::Regex) -> String {
    let pattern = pattern.as_str();
    if steps == 0 {
        format!("{STEP_RANGE_MATCHED_NONE} {what} matches `{pattern}`, so the window is one step")
    } else {
        format!("steps are the {steps} {what} matching `{pattern}`")
    }
}

/// `ReadOptions::step_range` as a reader applies it: the pattern, and what the format calls the
/// events it is matched against (for the note `info` shows).
struct StepRange {
    pattern: regex::Regex,
    what: &'static str,
}

/// What one event is, for [`Assembly::push`].
pub struct NewEvent {
    pub lane: LaneKey,
    pub kind: EventKind,
    /// From [`Assembly::intern`].
    pub name: NameId,
    pub start_abs_ns: i64,
    pub dur_ns: i64,
    pub correlation: Option<u64>,
    pub bytes: Option<u64>,
    /// An op's autograd sequence number (PyTorch's `emit_nvtx` ranges).
    pub sequence_number: Option<i64>,
    /// A kernel's launch configuration, where the reader could work it out.
    pub fill: Option<KernelFill>,
    /// The record's position in the file (for messages and export).
    pub file_index: u32,
}

impl Assembly {
    /// Steps will be the events `pattern` matches ([`Assembly::step_range`]), numbered from 0 in
    /// start order, instead of the format's own step markers; `what` names those events
    /// (`NVTX ranges`) in the note `info` shows.
    pub fn steps_from_ranges(&mut self, pattern: Option<&regex::Regex>, what: &'static str) {
        self.step_range_events.get_or_insert(what);
        self.step_range = pattern.map(|pattern| StepRange {
            pattern: pattern.clone(),
            what,
        });
    }

    /// Whether the format's own step markers are read: not when `--step-range` replaces them.
    pub fn reads_step_markers(&self) -> bool {
        self.step_range.is_none()
    }

    /// Takes a named range as a step when the `--step-range` pattern matches its name (`true`:
    /// the reader keeps it as nothing else). Out-of-bounds times are counted and skipped.
    pub fn step_range(
        &mut self,
        name: &str,
        lane: LaneKey,
        start_abs_ns: i64,
        dur_ns: i64,
    ) -> bool {
        if !self
            .step_range
            .as_ref()
            .is_some_and(|range| range.pattern.is_match(name))
        {
            return false;
        }
        if let Some(reason) = time_problem(start_abs_ns, dur_ns) {
            self.diagnostics.skip(format!("step range: {reason}"));
            return true;
        }
        self.lane(lane, None);
        let name = self.names.intern(name);
        self.step_ranges.push(PendingStep {
            // Numbered in start order by `finish`, once every range is read.
            number: 0,
            name,
            lane,
            start_abs_ns,
            dur_ns,
        });
        true
    }

    /// The name's id in the trace being assembled (a reader may keep it to skip the lookup
    /// next time).
    pub fn intern(&mut self, name: &str) -> NameId {
        self.names.intern(name)
    }

    /// Adds a sync record (times absolute, like events'; counted and skipped when out of
    /// bounds).
    pub fn sync(&mut self, sync: SyncEvent) {
        if let Some(reason) = time_problem(sync.start_ns, sync.dur_ns) {
            self.diagnostics.skip(format!("sync record: {reason}"));
            return;
        }
        self.syncs.push(sync);
    }

    /// Declares a lane (a lane with no event is not kept); `name` replaces an earlier `None`.
    pub fn lane(&mut self, key: LaneKey, name: Option<String>) {
        let slot = self.lane_names.entry(key).or_insert(None);
        if slot.is_none() {
            *slot = name;
        }
    }

    /// Adds an event, or counts it under a reason when its times are out of bounds.
    pub fn push(&mut self, event: NewEvent) {
        if let Some(reason) = time_problem(event.start_abs_ns, event.dur_ns) {
            self.diagnostics.skip(reason);
            return;
        }
        // Rows of one lane come in runs: its declaration is looked up once per run.
        if self.last_lane != Some(event.lane) {
            self.lane(event.lane, None);
            self.last_lane = Some(event.lane);
        }
        let fill = match event.fill {
            Some(fill) => {
                self.kernel_fill.push(fill);
                (self.kernel_fill.len() - 1) as u32
            }
            None => NO_FILL,
        };
        self.events.push(Pending {
            lane: event.lane,
            kind: event.kind,
            name: event.name,
            start_abs_ns: event.start_abs_ns,
            dur_ns: event.dur_ns,
            correlation: event.correlation,
            bytes: event.bytes,
            sequence_number: event.sequence_number,
            fill,
            file_index: event.file_index,
        });
    }

    /// Adds a step marker on a host thread (counted and skipped when its times are out of
    /// bounds).
    pub fn step(&mut self, number: u64, name: &str, lane: LaneKey, start_abs_ns: i64, dur_ns: i64) {
        if let Some(reason) = time_problem(start_abs_ns, dur_ns) {
            self.diagnostics.skip(format!("step marker: {reason}"));
            return;
        }
        self.lane(lane, None);
        let name = self.names.intern(name);
        self.steps.push(PendingStep {
            number,
            name,
            lane,
            start_abs_ns,
            dur_ns,
        });
    }

    /// Adds a memory event (skipped and counted when its time is out of bounds). Memory events
    /// do not move the trace's origin, as in Kineto's reader.
    pub fn memory(&mut self, memory: NewMemory) {
        if time_problem(memory.time_abs_ns, 0).is_some() {
            self.diagnostics
                .skip("memory event: timestamp out of range");
            return;
        }
        self.memory.push(memory);
    }

    /// The trace, in stepcast's order: lanes by (kind, pid, tid), events by lane, start,
    /// longest first, then file order; times relative to the earliest start. A file none of
    /// whose records became an event is refused (`format` names it in the message), as is one
    /// whose events span an absurd time.
    pub fn finish(
        self,
        path: &Path,
        format: &str,
        runtime: Runtime,
        input_bytes: u64,
    ) -> Result<Trace, ReadError> {
        let Assembly {
            names,
            lane_names,
            events,
            last_lane: _,
            kernel_fill: fills,
            mut steps,
            mut step_ranges,
            step_range,
            step_range_events,
            mut syncs,
            memory,
            devices,
            mut diagnostics,
            records,
        } = self;
        if let Some(range) = &step_range {
            step_ranges.sort_by_key(|step| (step.start_abs_ns, step.dur_ns));
            steps = step_ranges
                .iter()
                .enumerate()
                .map(|(number, step)| PendingStep {
                    number: number as u64,
                    ..*step
                })
                .collect();
            diagnostics.note(step_range_note(steps.len(), range.what, &range.pattern));
        }
        if events.is_empty() {
            let mut skips: Vec<(&String, &u64)> = diagnostics.skipped.iter().collect();
            skips.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
            let skipped = skips
                .iter()
                .take(2)
                .map(|(reason, count)| format!("{count} {reason}"))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(ReadError::NothingUnderstood {
                path: path.to_path_buf(),
                records,
                skipped: if skipped.is_empty() {
                    "no records".to_string()
                } else {
                    skipped
                },
                looks_like: format!(
                    "the {format} holds no kernel, copy or host event stepcast reads"
                ),
            });
        }
        let starts = events
            .iter()
            .map(|e| e.start_abs_ns)
            .chain(syncs.iter().map(|s| s.start_ns))
            .chain(steps.iter().map(|s| s.start_abs_ns));
        let ends = events
            .iter()
            .map(|e| e.start_abs_ns + e.dur_ns)
            .chain(steps.iter().map(|s| s.start_abs_ns + s.dur_ns));
        let (origin_ns, end_ns) = (starts.min().unwrap_or(0), ends.max().unwrap_or(0));
        if end_ns - origin_ns > MAX_SPAN_NS {
            return Err(ReadError::AbsurdSpan {
                path: path.to_path_buf(),
                days: (end_ns - origin_ns) / (86_400 * 1_000_000_000),
            });
        }

        // Only lanes that hold an event or a step are kept.
        // A hash set: collecting every event's key into an ordered set sorts them all.
        let used: rustc_hash::FxHashSet<LaneKey> = events
            .iter()
            .map(|e| e.lane)
            .chain(steps.iter().map(|s| s.lane))
            .collect();
        let mut lanes = Vec::with_capacity(used.len());
        let mut lane_ids: BTreeMap<LaneKey, LaneId> = BTreeMap::new();
        for (key, name) in lane_names {
            if !used.contains(&key) {
                continue;
            }
            lane_ids.insert(key, LaneId(lanes.len() as u32));
            let (kind, pid, tid) = key;
            lanes.push(Lane {
                kind,
                pid,
                tid,
                name,
                file_pid: None,
                file_tid: None,
            });
        }

        // Each event's lane looked up once, not at every comparison of the sort (a map lookup
        // per comparison was a sixth of an nsys export's ingest). Every event's lane is
        // declared (`push` declares it), so none is dropped and an event's position is its
        // `EventId`.
        // Small keys are sorted, not the events themselves, so each event moves once.
        let mut order: Vec<(LaneId, i64, std::cmp::Reverse<i64>, u32, u32)> = events
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let lane = *lane_ids.get(&e.lane)?;
                Some((
                    lane,
                    e.start_abs_ns,
                    std::cmp::Reverse(e.dur_ns),
                    e.file_index,
                    i as u32,
                ))
            })
            .collect();
        // Stable (run-adaptive) sort: a reader pushes each table in time order, so the keys
        // come in a few long sorted runs that a merge sort joins in near-linear time.
        order.sort();
        let mut kernel_fill: Vec<(EventId, KernelFill)> = Vec::with_capacity(fills.len());
        let events: Vec<Event> = order
            .iter()
            .map(|&(lane, .., i)| (events[i as usize], lane))
            .enumerate()
            .map(|(id, (e, lane))| {
                if let Some(&fill) = fills.get(e.fill as usize) {
                    kernel_fill.push((EventId(id as u32), fill));
                }
                Event {
                    kind: e.kind,
                    lane,
                    name: e.name,
                    start_ns: e.start_abs_ns - origin_ns,
                    dur_ns: e.dur_ns,
                    // An id of 0 links nothing (as Kineto writes it; held as an id, it
                    // would tie every record that carries it to one call), and a size of 0
                    // moves nothing.
                    correlation: e.correlation.and_then(NonZeroU64::new),
                    external_id: None,
                    bytes: e.bytes.and_then(NonZeroU64::new),
                    sequence_number: e.sequence_number.and_then(SequenceNumber::new),
                    file_index: e.file_index,
                }
            })
            .collect();
        for sync in &mut syncs {
            sync.start_ns -= origin_ns;
        }
        syncs.sort_unstable_by_key(|s| (s.start_ns, s.correlation));
        // Work on one stream runs in order; records that overlap there are worth telling, as
        // the replay runs a lane's tasks one after another.
        let overlapping = events
            .windows(2)
            .filter(|pair| {
                pair[0].lane == pair[1].lane
                    && pair[1].kind.is_device_task()
                    && pair[0].kind.is_device_task()
                    && pair[1].start_ns < pair[0].end_ns()
            })
            .count();
        if overlapping > 0 {
            diagnostics.note(format!(
                "{overlapping} device tasks start before the previous task on their stream ends (the records overlap; the replay runs a stream's tasks in order)"
            ));
        }
        let mut steps: Vec<StepMarker> = steps
            .into_iter()
            .filter_map(|s| {
                Some(StepMarker {
                    number: s.number,
                    name: s.name,
                    lane: *lane_ids.get(&s.lane)?,
                    start_ns: s.start_abs_ns - origin_ns,
                    dur_ns: s.dur_ns,
                })
            })
            .collect();
        steps.sort_unstable_by_key(|s| (s.start_ns, s.number));
        // File order among equal times (a stable sort), as in Kineto's reader.
        let mut memory: Vec<MemoryEvent> = memory
            .into_iter()
            .map(|m| MemoryEvent {
                time_ns: m.time_abs_ns - origin_ns,
                device: m.device,
                bytes: m.bytes,
                total_allocated: m.total_allocated,
                total_reserved: m.total_reserved,
                addr: m.addr,
                lane: lane_ids.get(&m.lane).copied(),
            })
            .collect();
        memory.sort_by_key(|m| m.time_ns);
        let has_device_work = events.iter().any(|e| e.kind.is_device_task());
        if !has_device_work {
            diagnostics.note("no device work: the trace is host-only");
        }

        Ok(Trace {
            origin_ns,
            file_time_base_ns: 0,
            names,
            lanes,
            events,
            syncs,
            steps,
            memory,
            devices,
            distributed: None,
            process_id: None,
            runtime: Some(if has_device_work {
                runtime
            } else {
                Runtime::CpuOnly
            }),
            input_bytes,
            records,
            diagnostics,
            comm_args: Vec::new(),
            op_inputs: Vec::new(),
            record_function_ids: Vec::new(),
            pipeline_transfers: Vec::new(),
            kernel_fill,
            off_cpu: Vec::new(),
            comm_tensors: Vec::new(),
            links: Vec::new(),
            step_range_events,
        })
    }
}

/// Why an event's times cannot be taken, if they cannot.
fn time_problem(start_abs_ns: i64, dur_ns: i64) -> Option<&'static str> {
    if !(0..=MAX_DUR_NS).contains(&dur_ns) {
        Some("negative or absurd duration")
    } else if !(MIN_TS_NS..=MAX_TS_NS).contains(&start_abs_ns) {
        Some("timestamp out of range")
    } else {
        None
    }
}

/// The event of a trace made from each record (by its index in the file): how a reader's side
/// tables (tensors, arguments, links), kept by record while the events were assembled and
/// sorted, find their events. A record that made no event drops its rows.
pub struct ByRecord(BTreeMap<u32, EventId>);

impl ByRecord {
    pub fn of(trace: &Trace) -> ByRecord {
        ByRecord(
            trace
                .events
                .iter()
                .enumerate()
                .map(|(id, e)| (e.file_index, EventId(id as u32)))
                .collect(),
        )
    }

    pub fn event(&self, record: u32) -> Option<EventId> {
        self.0.get(&record).copied()
    }

    /// Rows keyed by record, keyed by event instead, sorted by event.
    pub fn rows<T>(&self, rows: impl IntoIterator<Item = (u32, T)>) -> Vec<(EventId, T)> {
        let mut out: Vec<(EventId, T)> = rows
            .into_iter()
            .filter_map(|(record, row)| Some((self.event(record)?, row)))
            .collect();
        out.sort_by_key(|(event, _)| *event);
        out
    }

    /// Links of `kind` between records, as links between their events, sorted.
    pub fn links<'a>(
        &self,
        pairs: impl IntoIterator<Item = &'a (u32, u32)>,
        kind: LinkKind,
    ) -> Vec<Link> {
        let mut out: Vec<Link> = pairs
            .into_iter()
            .filter_map(|&(from, to)| {
                Some(Link {
                    from: self.event(from)?,
                    to: self.event(to)?,
                    kind,
                })
            })
            .collect();
        out.sort();
        out
    }
}
