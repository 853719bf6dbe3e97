//! The CTF reader against independent references: babeltrace2's event counts (recorded in
//! `testdata/ctf/tracecompass-test-traces/babeltrace2-counts.tsv` by the script beside it, and
//! compared live where `babeltrace2` is installed), LTTng's packet index for the CTF 2 trace
//! that babeltrace2 2.0 cannot read, OTF2's own event counts for the MPI trace, and the
//! kernel's ftrace text for the scheduler events of the recorded trace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use stepcast_trace::{EventKind, OffCpuReason, ctf};

use super::testdata;

fn ctf_dir() -> PathBuf {
    let dir = testdata().join("ctf/tracecompass-test-traces");
    assert!(dir.is_dir(), "{} is missing", dir.display());
    dir
}

/// Per event name: count, sum of timestamps, first and last (ns from the clock's origin).
type Summary = BTreeMap<String, (u64, i128, i64, i64)>;

fn summary(path: &Path) -> Summary {
    let mut out: Summary = BTreeMap::new();
    for trace in ctf::decode(path).unwrap_or_else(|e| panic!("{e}")) {
        for record in &trace.records {
            let ns = record.time_ns.expect("a timestamp");
            let entry = out
                .entry(record.name.to_string())
                .or_insert((0, 0, i64::MAX, i64::MIN));
            entry.0 += 1;
            entry.1 += i128::from(ns);
            entry.2 = entry.2.min(ns);
            entry.3 = entry.3.max(ns);
        }
    }
    out
}

#[test]
fn ctf_traces_read_whole_event_counts_and_times_equal_babeltrace2() {
    let dir = ctf_dir();
    let reference = std::fs::read_to_string(dir.join("babeltrace2-counts.tsv")).expect("reference");
    let mut expected: BTreeMap<String, Summary> = BTreeMap::new();
    for line in reference.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        let number = |i: usize| f[i].parse::<i128>().expect("a number");
        expected.entry(f[0].to_string()).or_default().insert(
            f[1].to_string(),
            (
                number(2) as u64,
                number(3),
                number(4) as i64,
                number(5) as i64,
            ),
        );
    }
    assert_eq!(expected.len(), 3, "the reference names three traces");
    for (trace, names) in &expected {
        let path = dir.join(trace);
        // Counts exactly; times within 1 ns each: babeltrace2 converts a clock's offset and
        // value to ns apart, in floating point, where stepcast adds the cycles first (exact).
        let found = summary(&path);
        assert_eq!(
            found.keys().collect::<Vec<_>>(),
            names.keys().collect::<Vec<_>>(),
            "{trace}"
        );
        for (name, &(count, sum, first, last)) in names {
            let (n, s, f, l) = found[name];
            assert_eq!(n, count, "{trace} {name}: count");
            assert!(
                (s - sum).abs() <= i128::from(count),
                "{trace} {name}: sum {s} vs {sum}"
            );
            assert!(
                (f - first).abs() <= 1 && (l - last).abs() <= 1,
                "{trace} {name}: first/last"
            );
        }
        // Live, where babeltrace2 is installed: one line per event.
        if let Ok(out) = std::process::Command::new("babeltrace2")
            .arg(&path)
            .output()
            && out.status.success()
        {
            let lines = String::from_utf8_lossy(&out.stdout).lines().count() as u64;
            assert_eq!(
                lines,
                names.values().map(|v| v.0).sum::<u64>(),
                "{trace}: babeltrace2 live"
            );
        }
    }
}

#[test]
fn ctf2_trace_packets_match_its_lttng_index() {
    // babeltrace2 2.0.4 cannot read CTF 2 (babeltrace2-ctf2.err); LTTng's index of each data
    // stream file gives every packet's sizes and time range: each decoded packet must be
    // one of them, and each record must lie inside its packet's range.
    let dir = ctf_dir().join("CTF2-7.0-trace-with-index");
    let metadata = std::fs::read(dir.join("metadata")).expect("metadata");
    let clock = metadata
        .split(|b| *b == 0x1e)
        .filter_map(|f| serde_json::from_slice::<serde_json::Value>(f).ok())
        .find(|f| f["type"] == "clock-class")
        .expect("a clock class");
    assert_eq!(clock["frequency"], 1_000_000_000);
    let offset_ns = clock["offset-from-origin"]["seconds"]
        .as_i64()
        .expect("test data")
        * 1_000_000_000
        + clock["offset-from-origin"]["cycles"]
            .as_i64()
            .expect("test data");
    let mut index = Vec::new();
    for entry in std::fs::read_dir(dir.join("index")).expect("index") {
        let bytes = std::fs::read(entry.expect("entry").path()).expect("idx");
        assert_eq!(&bytes[..4], &[0xc1, 0xf1, 0xdc, 0xc1], "CTF index magic");
        let size = u32::from_be_bytes(bytes[12..16].try_into().expect("test data")) as usize;
        for chunk in bytes[16..].chunks(size) {
            let word = |i: usize| {
                u64::from_be_bytes(chunk[i * 8..i * 8 + 8].try_into().expect("test data"))
            };
            // packet size, content size (bits), begin, end (cycles).
            index.push((word(1), word(2), word(3), word(4)));
        }
    }
    index.sort();
    let traces = ctf::decode(&dir).expect("decodes");
    assert_eq!(traces.len(), 1);
    let trace = &traces[0];
    assert_eq!(trace.version, "2");
    assert_eq!(trace.packets as usize, index.len(), "packets");
    let mut seen = Vec::new();
    for record in &trace.records {
        let field = |name: &str| {
            record
                .packet
                .iter()
                .find(|(n, _)| &**n == name)
                .and_then(|(_, v)| v.as_int())
                .expect(name) as u64
        };
        let packet = (
            field("packet_size"),
            field("content_size"),
            field("timestamp_begin"),
            field("timestamp_end"),
        );
        assert!(
            index.binary_search(&packet).is_ok(),
            "{packet:?} not in the index"
        );
        let t = record.time_ns.expect("a time");
        assert!(
            (offset_ns + packet.2 as i64..=offset_ns + packet.3 as i64).contains(&t),
            "record at {t} outside its packet"
        );
        if seen.last() != Some(&packet) {
            seen.push(packet);
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen, index, "every indexed packet holds records");
}

#[test]
fn otf2_regions_become_ops_and_counts_match_the_location_definitions() {
    // OTF2 (re-encoded by barectf) says how many events each location wrote
    // (`GlobalDef_Location.numberOfEvents`): the decoded `Event_*` records must add up to it.
    let path = ctf_dir().join("mpi_allreduce");
    let traces = ctf::decode(&path).expect("decodes");
    let records: Vec<&ctf::Record> = traces.iter().flat_map(|t| &t.records).collect();
    let declared: i128 = records
        .iter()
        .filter(|r| &*r.name == "GlobalDef_Location")
        .map(|r| r.int("numberOfEvents").expect("numberOfEvents"))
        .sum();
    let events = records
        .iter()
        .filter(|r| r.name.starts_with("Event_"))
        .count() as i128;
    assert_eq!(events, declared);
    let enters = records.iter().filter(|r| &*r.name == "Event_Enter").count();
    let trace = stepcast_trace::read_trace(&path).expect("reads");
    assert_eq!(
        trace.events.len(),
        enters,
        "every region entered and left is an op"
    );
    assert!(trace.events.iter().all(|e| e.kind == EventKind::CpuOp));
    assert!(
        trace
            .events
            .iter()
            .any(|e| trace.name(e.name) == "MPI_Allreduce"),
        "region names come from the string definitions"
    );
    assert_eq!(trace.lanes.len(), 8, "one thread per MPI location");
}

#[test]
fn recorded_scheduler_events_give_the_threads_off_cpu_intervals_as_ftrace_recorded() {
    // The kernel's own text (ftrace) of the recording, read here with string splitting: the
    // training thread leaves its CPU at a `sched_switch` with `prev_pid` = it and comes back at
    // the next with `next_pid` = it; `prev_state` R is a preemption.
    let session = testdata().join("ctf/recorded/train-session");
    let trace = stepcast_trace::read_trace(&session).expect("reads");
    let main = trace.steps.first().expect("steps").lane;
    let tid = trace.lane(main).tid;
    let text =
        std::fs::read_to_string(session.join("kernel-ftrace/ftrace-sched.txt")).expect("ftrace");
    let mut expected = Vec::new();
    let mut left: Option<(i64, bool, i64)> = None;
    for line in text.lines().filter(|l| l.contains(": sched_switch: ")) {
        let time_us: i64 = {
            let stamp = line
                .split(": sched_switch")
                .next()
                .expect("test data")
                .rsplit(' ')
                .next()
                .expect("test data");
            let (s, us) = stamp.split_once('.').expect("test data");
            s.parse::<i64>().expect("test data") * 1_000_000 + us.parse::<i64>().expect("test data")
        };
        let value = |key: &str| {
            line.split(key)
                .nth(1)
                .map(|rest| rest.split(' ').next().expect("test data").to_string())
        };
        if value(" next_pid=").and_then(|p| p.parse::<i64>().ok()) == Some(tid)
            && let Some((at, preempted, next)) = left.take()
        {
            expected.push((time_us - at, preempted, next));
        }
        if value(" prev_pid=").and_then(|p| p.parse::<i64>().ok()) == Some(tid) {
            left = Some((
                time_us,
                value(" prev_state=").is_some_and(|s| s.starts_with('R')),
                value(" next_pid=")
                    .and_then(|p| p.parse().ok())
                    .expect("next_pid"),
            ));
        }
    }
    let found: Vec<(i64, bool, i64)> = trace
        .off_cpu
        .iter()
        .filter(|o| o.lane == main)
        .map(|o| {
            (
                o.dur_ns / 1000,
                o.reason == OffCpuReason::Preempted,
                o.next.as_ref().map_or(-1, |n| n.tid),
            )
        })
        .collect();
    assert!(found.iter().any(|o| o.1), "the recording holds preemptions");
    assert!(
        expected.len() > 12,
        "the training thread was off its CPU in every step"
    );
    assert_eq!(found, expected);
}

/// A copy of a shared trace in a fresh temporary directory, for damaging.
fn copy_of(trace: &str) -> PathBuf {
    let to = std::env::temp_dir().join(format!("stepcast-ctf-{}-{trace}", std::process::id()));
    let _ = std::fs::remove_dir_all(&to);
    std::fs::create_dir_all(&to).expect("temp dir");
    for entry in std::fs::read_dir(ctf_dir().join(trace)).expect("trace") {
        let path = entry.expect("entry").path();
        if path.is_file() {
            std::fs::copy(&path, to.join(path.file_name().expect("test data"))).expect("copy");
        }
    }
    to
}

#[test]
fn damaged_ctf_traces_are_one_readable_error_naming_the_file() {
    // A stream cut inside a packet, and metadata that is not CTF, each refused naming the file.
    let dir = copy_of("mpi_allreduce");
    let stream = dir.join("3");
    let bytes = std::fs::read(&stream).expect("stream");
    std::fs::write(&stream, &bytes[..bytes.len() - 100]).expect("cut");
    let message = stepcast_trace::read_trace(&dir)
        .expect_err("truncated")
        .to_string();
    assert!(message.contains(&stream.display().to_string()), "{message}");
    assert!(message.contains("truncated"), "{message}");
    std::fs::write(&stream, &bytes).expect("restore");
    let metadata = dir.join("metadata");
    let text = std::fs::read_to_string(&metadata).expect("metadata");
    std::fs::write(&metadata, text.replace("event {", "evnt {")).expect("break");
    let message = stepcast_trace::read_trace(&dir)
        .expect_err("bad metadata")
        .to_string();
    assert!(
        message.contains(&metadata.display().to_string()),
        "{message}"
    );
    assert!(message.contains("evnt"), "{message}");
    let _ = std::fs::remove_dir_all(&dir);
}
