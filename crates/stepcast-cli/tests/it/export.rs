//! `stepcast export`: the written file is a conformant Chrome trace (checked against the rules
//! of the Trace Event Format by [`check_chrome_trace`]), it re-imports as the recording, and a
//! failed run writes nothing.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde::de::{MapAccess, Visitor};
use serde_json::Value;
use stepcast::graph::{BuildOptions, TaskKind, build};
use stepcast_trace::{EventKind, LaneKind, read_trace};

use super::{NCCL, TRACE, TempDir, path_str, stepcast};

/// Two streams waiting on each other's CUDA events; no step markers.
const MULTI_STREAM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/kineto/HolisticTraceAnalysis/tests/data/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz"
);

/// The Kineto category a recorded task is exported under, by the kind of event it was made
/// from.
const TASK_CATEGORIES: [(&str, EventKind); 6] = [
    ("cpu_op", EventKind::CpuOp),
    ("cuda_runtime", EventKind::RuntimeCall),
    ("cuda_driver", EventKind::DriverCall),
    ("kernel", EventKind::Kernel),
    ("gpu_memcpy", EventKind::Memcpy),
    ("gpu_memset", EventKind::Memset),
];

/// A complete event (`ph: "X"`), in integer nanoseconds.
#[derive(Clone, Debug)]
pub(super) struct Slice {
    pub(super) pid: i64,
    pub(super) tid: i64,
    pub(super) start_ns: i64,
    pub(super) end_ns: i64,
    pub(super) cat: String,
    pub(super) name: String,
    pub(super) args: Value,
}

/// What [`check_chrome_trace`] found in a valid export.
#[derive(Debug, Default)]
pub(super) struct Summary {
    /// `process_name` by pid.
    pub(super) processes: BTreeMap<i64, String>,
    /// `thread_name` by (pid, tid).
    pub(super) threads: BTreeMap<(i64, i64), String>,
    pub(super) slices: Vec<Slice>,
    /// Flow ids with both ends.
    flows: usize,
    counters: usize,
    /// Top-level members other than `traceEvents`.
    other: BTreeMap<String, Value>,
}

impl Summary {
    fn slices_of(&self, pid: i64) -> impl Iterator<Item = &Slice> {
        self.slices.iter().filter(move |slice| slice.pid == pid)
    }

    /// Task slices of process `pid` (those with a `kind` argument).
    fn tasks_of(&self, pid: i64) -> Vec<&Slice> {
        self.slices_of(pid)
            .filter(|slice| slice.args.get("kind").is_some())
            .collect()
    }
}

/// The top-level members of a JSON object, in file order.
struct Members(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MembersVisitor;
        impl<'de> Visitor<'de> for MembersVisitor {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut members = Vec::new();
                while let Some(member) = map.next_entry::<String, Value>()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(MembersVisitor)
    }
}

/// Returns early with a violation message when `condition` does not hold.
macro_rules! ensure {
    ($condition:expr, $($message:tt)+) => {
        if !$condition {
            return Err(format!($($message)+));
        }
    };
}

/// Microseconds → integer nanoseconds (exact for the three decimals the export writes).
fn ns(event: &Value, key: &str) -> Result<i64, String> {
    let micros = event[key]
        .as_f64()
        .ok_or_else(|| format!("`{key}` is not a number in {event}"))?;
    Ok((micros * 1000.0).round() as i64)
}

fn integer(event: &Value, key: &str) -> Result<i64, String> {
    event[key]
        .as_i64()
        .ok_or_else(|| format!("`{key}` is not an integer in {event}"))
}

fn text<'a>(event: &'a Value, key: &str) -> Result<&'a str, String> {
    event[key]
        .as_str()
        .ok_or_else(|| format!("`{key}` is not a string in {event}"))
}

/// A point of a flow: (pid, tid, ts in ns).
type FlowPoint = (i64, i64, i64);

/// Checks the Chrome Trace Event Format rules the export promises and returns what it holds,
/// or the first rule broken:
///
/// - the document is an object whose first member is `displayTimeUnit` (`"ns"` or `"ms"`), with
///   a `traceEvents` array of objects, each with a string `ph`;
/// - metadata (`M`) events come first and name processes and threads (`args.name`) or order them
///   (`args.sort_index`); every other event has a numeric `ts`, and they are sorted by it;
/// - every complete event (`X`) has integer `pid`/`tid`, a string `name` and `cat`, and
///   `ts >= 0`, `dur >= 0`, on a named thread of a named process;
/// - no two complete events of one track (`pid`, `tid`) partially overlap: sorted by start
///   (the longer first on a tie), each slice either starts at or after the end of every slice
///   still open, or ends at or before the innermost open one (nesting and touching are fine);
/// - every flow start (`s`) has exactly one flow end (`f`, `bp: "e"`) with the same `id`, not
///   earlier, and both lie inside a complete event of their track, to bind to;
/// - every counter (`C`) has a non-empty `args` of numbers.
fn chrome_trace(document: &str) -> Result<Summary, String> {
    let Members(members) =
        serde_json::from_str(document).map_err(|e| format!("not a JSON object: {e}"))?;
    ensure!(
        members.first().map(|(key, _)| key.as_str()) == Some("displayTimeUnit"),
        "displayTimeUnit is not the first member"
    );
    ensure!(
        matches!(members[0].1.as_str(), Some("ns" | "ms")),
        "displayTimeUnit is {}",
        members[0].1
    );
    let mut summary = Summary::default();
    let mut events = None;
    for (key, value) in members {
        if key == "traceEvents" {
            events = Some(value);
        } else {
            summary.other.insert(key, value);
        }
    }
    let events = events.ok_or("no traceEvents")?;
    let events = events.as_array().ok_or("traceEvents is not an array")?;

    let mut metadata_done = false;
    let mut last_ts = i64::MIN;
    let mut flow_starts: BTreeMap<i64, FlowPoint> = BTreeMap::new();
    let mut flow_ends: BTreeMap<i64, FlowPoint> = BTreeMap::new();
    for event in events {
        ensure!(event.is_object(), "event {event} is not an object");
        let ph = text(event, "ph")?;
        if ph == "M" {
            ensure!(!metadata_done, "metadata event after other events: {event}");
            let pid = integer(event, "pid")?;
            match text(event, "name")? {
                "process_name" => {
                    let name = text(&event["args"], "name")?.to_string();
                    summary.processes.insert(pid, name);
                }
                "thread_name" => {
                    let tid = integer(event, "tid")?;
                    let name = text(&event["args"], "name")?.to_string();
                    let first = summary.threads.insert((pid, tid), name).is_none();
                    ensure!(first, "thread ({pid}, {tid}) named twice");
                }
                "process_sort_index" | "thread_sort_index" => {
                    integer(&event["args"], "sort_index")?;
                }
                other => return Err(format!("unexpected metadata event `{other}`")),
            }
            continue;
        }
        metadata_done = true;
        let ts = ns(event, "ts")?;
        ensure!(ts >= last_ts, "events are not sorted by ts at {event}");
        last_ts = ts;
        match ph {
            "X" => {
                let pid = integer(event, "pid")?;
                let tid = integer(event, "tid")?;
                let dur = ns(event, "dur")?;
                ensure!(ts >= 0 && dur >= 0, "negative ts or dur: {event}");
                ensure!(
                    summary.threads.contains_key(&(pid, tid)),
                    "slice on an unnamed thread: {event}"
                );
                summary.slices.push(Slice {
                    pid,
                    tid,
                    start_ns: ts,
                    end_ns: ts + dur,
                    cat: text(event, "cat")?.to_string(),
                    name: text(event, "name")?.to_string(),
                    args: event["args"].clone(),
                });
            }
            "s" | "f" => {
                ensure!(
                    text(event, "cat")? == "critical_path",
                    "flow category: {event}"
                );
                text(event, "name")?;
                let point = (integer(event, "pid")?, integer(event, "tid")?, ts);
                let id = integer(event, "id")?;
                let points = if ph == "s" {
                    &mut flow_starts
                } else {
                    ensure!(
                        event["bp"] == "e",
                        "flow end not bound to its enclosing slice: {event}"
                    );
                    &mut flow_ends
                };
                ensure!(points.insert(id, point).is_none(), "flow id {id} reused");
            }
            "C" => {
                integer(event, "pid")?;
                text(event, "name")?;
                let args = event["args"].as_object().ok_or("counter without args")?;
                ensure!(
                    !args.is_empty() && args.values().all(Value::is_number),
                    "counter args are not numbers: {event}"
                );
                summary.counters += 1;
            }
            other => return Err(format!("unexpected phase `{other}`")),
        }
    }
    for &(pid, _) in summary.threads.keys() {
        ensure!(
            summary.processes.contains_key(&pid),
            "unnamed process {pid}"
        );
    }

    let mut tracks: BTreeMap<(i64, i64), Vec<&Slice>> = BTreeMap::new();
    for slice in &summary.slices {
        tracks
            .entry((slice.pid, slice.tid))
            .or_default()
            .push(slice);
    }
    for (track, slices) in &mut tracks {
        slices.sort_by_key(|slice| (slice.start_ns, std::cmp::Reverse(slice.end_ns)));
        let mut open: Vec<&Slice> = Vec::new();
        for &slice in slices.iter() {
            while open.last().is_some_and(|top| top.end_ns <= slice.start_ns) {
                open.pop();
            }
            if let Some(top) = open.last() {
                ensure!(
                    slice.end_ns <= top.end_ns,
                    "partial overlap on track {track:?}: {top:?} and {slice:?}"
                );
            }
            open.push(slice);
        }
    }

    ensure!(
        flow_starts.keys().eq(flow_ends.keys()),
        "flows without both ends: starts {:?}, ends {:?}",
        flow_starts.keys().collect::<Vec<_>>(),
        flow_ends.keys().collect::<Vec<_>>()
    );
    let enclosed = |&(pid, tid, ts): &FlowPoint| {
        tracks.get(&(pid, tid)).is_some_and(|slices| {
            slices.iter().any(|slice| {
                slice.start_ns <= ts
                    && (ts < slice.end_ns || slice.start_ns == slice.end_ns && ts == slice.start_ns)
            })
        })
    };
    for (id, start) in &flow_starts {
        let end = &flow_ends[id];
        ensure!(start.2 <= end.2, "flow {id} ends before it starts");
        ensure!(enclosed(start), "flow {id} starts outside any slice");
        ensure!(enclosed(end), "flow {id} ends outside any slice");
    }
    summary.flows = flow_starts.len();
    Ok(summary)
}

pub(super) fn check_chrome_trace(document: &str) -> Summary {
    chrome_trace(document)
        .unwrap_or_else(|violation| panic!("not a valid Chrome trace: {violation}"))
}

/// Runs `stepcast export` with `args` into a new file and returns its text.
fn export(dir: &TempDir, args: &[&str]) -> String {
    let out = dir.path().join("export.json");
    let mut command = vec!["export"];
    command.extend_from_slice(args);
    command.extend_from_slice(&["-o", path_str(&out)]);
    let run = stepcast(&command);
    run.assert_success();
    assert!(
        run.stdout.is_empty(),
        "export prints nothing: {}",
        run.stdout
    );
    assert_eq!(
        dir.entries(),
        vec!["export.json"],
        "only the export is left"
    );
    std::fs::read_to_string(&out).expect("read the export")
}

/// The checks every export passes: a conformant trace with a recorded and a replayed process
/// showing the same tracks and tasks, and a critical path.
fn check(args: &[&str]) -> Summary {
    let dir = TempDir::new("export");
    let summary = check_chrome_trace(&export(&dir, args));
    assert_eq!(summary.processes[&1], "recorded");
    assert_eq!(summary.processes[&2], "replayed");
    let tracks_of = |pid: i64| -> Vec<&String> {
        summary
            .threads
            .iter()
            .filter(|((p, _), _)| *p == pid)
            .map(|(_, name)| name)
            .collect()
    };
    let recorded_tracks = tracks_of(1);
    assert_eq!(
        recorded_tracks,
        tracks_of(2),
        "both processes have the same tracks"
    );
    assert!(recorded_tracks.iter().any(|name| *name == "steps"));
    assert!(
        recorded_tracks
            .iter()
            .any(|name| name.starts_with("CPU thread "))
    );
    assert!(
        recorded_tracks
            .iter()
            .any(|name| name.starts_with("GPU 0 stream "))
    );

    let recorded = summary.tasks_of(1);
    let replayed = summary.tasks_of(2);
    assert!(!recorded.is_empty());
    assert_eq!(
        recorded.len(),
        replayed.len(),
        "every task is on both sides"
    );
    for slice in &recorded {
        assert!(
            TASK_CATEGORIES.iter().any(|(cat, _)| *cat == slice.cat),
            "recorded task with a non-Kineto category: {slice:?}"
        );
    }
    for slice in &replayed {
        assert!(slice.cat.starts_with("replay."), "{slice:?}");
        assert!(slice.args["recorded_ts"].is_number());
    }
    let launched = recorded
        .iter()
        .filter(|slice| slice.args["kind"] == "kernel")
        .filter(|slice| slice.args["correlation"].is_u64())
        .count();
    assert!(launched > 0, "kernels carry their correlation id");
    assert!(summary.flows > 0, "the critical path is drawn");
    summary
}

#[test]
fn export_of_a_window_is_a_conformant_chrome_trace() {
    for trace in [MULTI_STREAM, TRACE] {
        let summary = check(&[trace]);
        assert_eq!(summary.other["otherData"]["selected_step"], Value::Null);
        // Without step markers the window is one step.
        let steps: Vec<&Slice> = summary
            .slices
            .iter()
            .filter(|slice| slice.cat == "stepcast.step")
            .collect();
        assert_eq!(steps.len(), 2, "one step slice per process");
    }
}

#[test]
fn export_of_one_step_holds_that_step() {
    let summary = check(&[NCCL, "--step", "5"]);
    assert_eq!(summary.other["otherData"]["selected_step"], 5);
    for pid in [1, 2] {
        let steps: Vec<&Slice> = summary
            .slices_of(pid)
            .filter(|slice| slice.cat == "stepcast.step")
            .collect();
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].name, "ProfilerStep#5");
        let in_step = summary
            .tasks_of(pid)
            .iter()
            .filter(|slice| slice.args["step"] == 5)
            .count() as u64;
        assert_eq!(Some(in_step), steps[0].args["tasks"].as_u64());
    }
    // One arrow per hop of the critical path: at least one between each two of its tasks.
    let replay = stepcast(&["replay", NCCL, "--step", "5", "--json"]);
    replay.assert_success();
    let path_tasks = replay.json()["steps"][0]["critical_path"]["tasks"]
        .as_u64()
        .expect("critical_path.tasks") as usize;
    assert!(summary.flows + 1 >= path_tasks, "{} flows", summary.flows);
    // Tasks of other steps appear only where the step's critical path runs through them.
    let others = summary
        .tasks_of(2)
        .iter()
        .filter(|slice| slice.args["step"] != 5)
        .count();
    assert!(others <= summary.flows + 1, "{others} tasks of other steps");
}

/// BERT inference on an H100, recorded with `profile_memory=True` and module annotations.
const BERT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/kineto/TraceLens/tests/traces/h100/gaunernst_bert-small-uncased__1016001.json.gz"
);

#[test]
fn export_shows_memory_layers_and_phases() {
    let summary = check(&[BERT]);
    let trace = read_trace(Path::new(BERT)).expect("read the trace");
    assert!(!trace.memory.is_empty());
    // One allocated sample per memory event, per device, on the recorded side only.
    let mut expected: BTreeMap<String, usize> = BTreeMap::new();
    for event in &trace.memory {
        let device = match event.device {
            device if device < 0 => "CPU".to_string(),
            device => format!("GPU {device}"),
        };
        *expected
            .entry(format!("{device} memory allocated"))
            .or_default() += 1;
    }
    let dir = TempDir::new("memory");
    let document: Value = serde_json::from_str(&export(&dir, &[BERT])).expect("the export is JSON");
    let mut allocated: BTreeMap<String, usize> = BTreeMap::new();
    for event in document["traceEvents"].as_array().expect("events") {
        if event["ph"] == "C" {
            assert_eq!(event["pid"], 1, "memory is recorded, not replayed");
            let name = event["name"].as_str().expect("counter name");
            if name.ends_with(" allocated") {
                *allocated.entry(name.to_string()).or_default() += 1;
            }
        }
    }
    assert_eq!(allocated, expected);
    assert!(summary.counters > 0);

    let phases = [
        "forward",
        "backward",
        "optimizer",
        "communication",
        "data_loading",
        "other",
    ];
    for pid in [1, 2] {
        let runs: Vec<&Slice> = summary
            .slices_of(pid)
            .filter(|slice| slice.cat == "stepcast.phase" || slice.cat == "stepcast.layer")
            .collect();
        assert!(runs.iter().any(|slice| slice.cat == "stepcast.layer"));
        for slice in &runs {
            let phase = slice.args["phase"].as_str().expect("phase");
            assert!(phases.contains(&phase), "{slice:?}");
            assert!(slice.args["tasks"].as_u64().is_some_and(|n| n > 0));
            let track = &summary.threads[&(slice.pid, slice.tid)];
            assert!(track.ends_with(" phases and layers"), "{track}");
        }
    }
}

/// `(kind, absolute start, duration, correlation)` of every event, sorted.
fn event_rows(
    trace: &stepcast_trace::Trace,
) -> Vec<(EventKind, i64, i64, Option<std::num::NonZeroU64>)> {
    let mut rows: Vec<_> = trace
        .events
        .iter()
        .map(|event| {
            (
                event.kind,
                trace.origin_ns + event.start_ns,
                event.dur_ns,
                event.correlation,
            )
        })
        .collect();
    rows.sort_unstable();
    rows
}

/// Reads the export back with stepcast's own reader and checks that it sees the recorded tasks
/// (and nothing else) as Kineto events.
fn check_reimport(args: &[&str]) -> stepcast_trace::Trace {
    let dir = TempDir::new("reimport");
    let text = export(&dir, args);
    let summary = check_chrome_trace(&text);
    let reimported =
        read_trace(&dir.path().join("export.json")).expect("stepcast reads its own export");
    let by_kind: BTreeMap<EventKind, usize> = reimported.events_by_kind().into_iter().collect();
    for (cat, kind) in TASK_CATEGORIES {
        let exported = summary
            .tasks_of(1)
            .iter()
            .filter(|slice| slice.cat == cat)
            .count();
        assert_eq!(by_kind[&kind], exported, "re-imported {cat} events");
    }
    let re_imported_total: usize = by_kind.values().sum();
    assert_eq!(re_imported_total, summary.tasks_of(1).len());
    // Everything else is skipped as stepcast's own: the replay, the steps, the flows.
    for reason in reimported.diagnostics.skipped.keys() {
        assert!(
            reason.contains("`replay.")
                || reason.contains("`stepcast.")
                || reason.contains("`critical_path`"),
            "unexpected skip on re-import: {reason}"
        );
    }
    // Device tasks land on their own device and stream again.
    for lane in &reimported.lanes {
        if lane.kind == LaneKind::DeviceStream {
            let name = format!("GPU {} stream {}", lane.pid, lane.tid);
            assert!(summary.threads.values().any(|thread| *thread == name));
        }
    }
    reimported
}

#[test]
fn export_reimports_as_the_recording() {
    let original = read_trace(Path::new(MULTI_STREAM)).expect("read the trace");
    let reimported = check_reimport(&[MULTI_STREAM]);
    // Times survive the round trip to the nanosecond: the export's origin is the trace's.
    let window = build(&original, &BuildOptions::default());
    let mut tasks: Vec<_> = (0..window.graph.task_count())
        .map(|t| {
            let event = &original.events[window.graph.event[t].index()];
            (
                event.kind,
                original.origin_ns + event.start_ns,
                event.dur_ns,
                event.correlation,
            )
        })
        .collect();
    tasks.sort_unstable();
    let rows: Vec<_> = event_rows(&reimported)
        .into_iter()
        .map(|(kind, start, dur, correlation)| {
            // The export's timestamps are relative to the original origin.
            (kind, start + original.origin_ns, dur, correlation)
        })
        .collect();
    assert_eq!(rows, tasks);
    // The re-imported recording builds the same tasks again.
    let rebuilt = build(&reimported, &BuildOptions::default());
    let kinds = |graph: &stepcast::graph::Graph| -> BTreeMap<TaskKind, usize> {
        let mut counts = BTreeMap::new();
        for &kind in &graph.kind {
            *counts.entry(kind).or_default() += 1;
        }
        counts
    };
    assert_eq!(kinds(&rebuilt.graph), kinds(&window.graph));
}

#[test]
fn export_of_one_step_reimports() {
    check_reimport(&[NCCL, "--step", "5"]);
}

#[test]
fn export_is_byte_identical_across_runs() {
    let dir = TempDir::new("identical");
    for args in [&[NCCL][..], &[NCCL, "--step", "5"][..]] {
        let first = export(&dir, args);
        let second = export(&dir, args);
        assert!(
            first == second,
            "stepcast export {args:?} differs between runs"
        );
    }
}

#[test]
fn export_failure_writes_nothing() {
    let dir = TempDir::new("export-fails");
    let not_a_trace = dir.path().join("not-a-trace.json");
    std::fs::write(&not_a_trace, br#"{"hello": "world"}"#).expect("write input");
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, b"").expect("write input");
    let missing = dir.path().join("missing.json");
    let out_dir = TempDir::new("export-fails-out");
    let out = out_dir.path().join("out.json");
    let cases: [(&[&str], &str); 5] = [
        (&[path_str(&not_a_trace)], "not a profiler trace"),
        (&[path_str(&empty)], "is empty"),
        (&[path_str(&missing)], "cannot read"),
        (&[NCCL, "--step", "99"], "has no step 99; its steps are"),
        (&[MULTI_STREAM, "--step", "1"], "no ProfilerStep markers"),
    ];
    for (args, message) in cases {
        let mut command = vec!["export"];
        command.extend_from_slice(args);
        command.extend_from_slice(&["-o", path_str(&out)]);
        let run = stepcast(&command);
        assert_eq!(run.code, Some(1), "stepcast {command:?}: {}", run.stderr);
        assert!(run.stdout.is_empty());
        assert!(
            run.stderr.starts_with("stepcast: error: ") && run.stderr.contains(message),
            "stepcast {command:?}: {}",
            run.stderr
        );
        assert_eq!(
            out_dir.entries(),
            Vec::<String>::new(),
            "nothing is written"
        );
    }
    // A failed run leaves an existing output as it was.
    std::fs::write(&out, b"previous").expect("write output");
    let run = stepcast(&["export", path_str(&empty), "-o", path_str(&out)]);
    assert_eq!(run.code, Some(1));
    assert_eq!(std::fs::read(&out).expect("read output"), b"previous");
    assert_eq!(out_dir.entries(), vec!["out.json"]);
}

#[test]
fn export_needs_an_output_file() {
    let run = stepcast(&["export", TRACE]);
    assert_eq!(run.code, Some(2), "a missing -o is a usage error");
    assert!(run.stderr.contains("--output"), "{}", run.stderr);
}

/// A document with process 1 and its thread 1 named, then `events`.
fn document(events: &[String]) -> String {
    let mut all = vec![
        r#"{"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"p"}}"#.to_string(),
        r#"{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"t"}}"#.to_string(),
    ];
    all.extend_from_slice(events);
    format!(
        r#"{{"displayTimeUnit":"ns","traceEvents":[{}]}}"#,
        all.join(",")
    )
}

/// A complete event on thread 1 of process 1.
fn x(ts: &str, dur: &str) -> String {
    format!(r#"{{"ph":"X","cat":"c","name":"n","pid":1,"tid":1,"ts":{ts},"dur":{dur}}}"#)
}

/// A flow event on thread 1 of process 1.
fn flow(ph: &str, id: u32, ts: &str) -> String {
    let bind = if ph == "f" { r#","bp":"e""# } else { "" };
    format!(
        r#"{{"ph":"{ph}","cat":"critical_path","name":"f","id":{id},"pid":1,"tid":1,"ts":{ts}{bind}}}"#
    )
}

#[test]
fn the_validator_rejects_what_the_format_forbids() {
    let valid = [
        x("0.000", "10.000"),
        x("2.000", "3.000"),
        flow("s", 1, "3.000"),
        // Touching is not overlapping; the float sum 0.1 + 0.2 must not read as an overlap.
        x("10.000", "0.100"),
        x("10.100", "0.200"),
        x("10.300", "0.000"),
        flow("f", 1, "10.300"),
        r#"{"ph":"C","name":"memory","pid":1,"ts":11.000,"args":{"bytes":5}}"#.to_string(),
    ];
    let summary = check_chrome_trace(&document(&valid));
    assert_eq!(
        (summary.slices.len(), summary.flows, summary.counters),
        (5, 1, 1)
    );

    let partial_overlap = [x("0.000", "10.000"), x("5.000", "10.000")];
    let unsorted = [x("5.000", "1.000"), x("1.000", "1.000")];
    let negative = [x("1.000", "-1.000")];
    let unnamed_thread =
        [r#"{"ph":"X","cat":"c","name":"n","pid":1,"tid":2,"ts":0,"dur":1}"#.to_string()];
    let late_metadata = [
        x("0.000", "1.000"),
        r#"{"ph":"M","name":"thread_name","pid":1,"tid":3,"args":{"name":"u"}}"#.to_string(),
    ];
    let open_flow = [x("0.000", "1.000"), flow("s", 1, "0.500")];
    let unbound_flow = [
        x("0.000", "1.000"),
        flow("s", 1, "0.500"),
        flow("f", 1, "2.000"),
    ];
    let backwards_flow = [
        x("0.000", "1.000"),
        flow("f", 1, "0.200"),
        flow("s", 1, "0.500"),
    ];
    let unbound_end = [
        x("0.000", "1.000"),
        flow("s", 1, "0.500"),
        r#"{"ph":"f","cat":"critical_path","name":"f","id":1,"pid":1,"tid":1,"ts":0.600}"#
            .to_string(),
    ];
    let text_counter =
        [r#"{"ph":"C","name":"memory","pid":1,"ts":1,"args":{"bytes":"5"}}"#.to_string()];
    let cases: [(String, &str); 12] = [
        (document(&partial_overlap), "partial overlap"),
        (document(&unsorted), "not sorted"),
        (document(&negative), "negative ts or dur"),
        (document(&unnamed_thread), "unnamed thread"),
        (document(&late_metadata), "metadata event after"),
        (document(&open_flow), "flows without both ends"),
        (document(&unbound_flow), "ends outside any slice"),
        (document(&backwards_flow), "ends before it starts"),
        (document(&unbound_end), "not bound"),
        (document(&text_counter), "counter args"),
        (
            r#"{"traceEvents":[],"displayTimeUnit":"ns"}"#.to_string(),
            "displayTimeUnit is not the first member",
        ),
        ("[]".to_string(), "not a JSON object"),
    ];
    for (document, violation) in cases {
        match chrome_trace(&document) {
            Ok(_) => panic!("accepted {document}"),
            Err(message) => assert!(
                message.contains(violation),
                "{document}: expected `{violation}`, got `{message}`"
            ),
        }
    }
}

// See: issue 16 (the critical path and the predicted timeline as Perfetto tracks).
#[test]
fn export_overlays_the_critical_path_and_a_prediction() {
    let summary = check(&[NCCL, "--step", "5", "--model", "faster_cpu"]);
    assert_eq!(summary.processes[&3], "predicted: faster_cpu");
    let replay = stepcast(&["replay", NCCL, "--step", "5", "--json"]);
    replay.assert_success();
    let path_tasks = replay.json()["steps"][0]["critical_path"]["tasks"]
        .as_u64()
        .expect("critical_path.tasks") as usize;
    for pid in [1, 2] {
        let on_path: Vec<&Slice> = summary
            .slices_of(pid)
            .filter(|slice| slice.cat == "stepcast.critical_path")
            .collect();
        assert_eq!(
            on_path.len(),
            path_tasks,
            "process {pid}: one slice per task on the replay's critical path"
        );
        // Each is a copy of a task slice of the same process.
        let tasks = summary.tasks_of(pid);
        for slice in on_path {
            assert!(
                tasks.iter().any(|task| task.name == slice.name
                    && task.start_ns == slice.start_ns
                    && task.end_ns == slice.end_ns),
                "{slice:?}"
            );
        }
    }
    let predicted = summary.tasks_of(3);
    assert!(!predicted.is_empty());
    assert!(
        predicted
            .iter()
            .all(|slice| slice.cat.starts_with("replay."))
    );
    assert!(predicted.iter().any(|slice| slice.args["step"] == 5));
    let predicted_path = summary
        .slices_of(3)
        .filter(|slice| slice.cat == "stepcast.critical_path")
        .count();
    assert!(
        predicted_path > 0,
        "the prediction's critical path is drawn"
    );
    // The predicted step is shorter: faster_cpu halves host work on a host-bound trace.
    let span = |pid: i64| {
        let tasks = summary.tasks_of(pid);
        let in_step: Vec<_> = tasks.iter().filter(|s| s.args["step"] == 5).collect();
        let start = in_step.iter().map(|s| s.start_ns).min().expect("tasks");
        let end = in_step.iter().map(|s| s.end_ns).max().expect("tasks");
        end - start
    };
    assert!(
        span(3) < span(2),
        "predicted {} vs replayed {}",
        span(3),
        span(2)
    );
}

#[test]
fn export_rejects_an_unknown_model_before_reading() {
    let run = stepcast(&[
        "export",
        "/no/such.json",
        "-o",
        "/tmp/x.json",
        "--model",
        "warp_drive",
    ]);
    assert_eq!(run.code, Some(2), "{}", run.stderr);
}
