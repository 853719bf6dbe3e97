//! `stepcast-bench synthesize`: a large realistic input made of a real trace's steps.
//!
//! The stepped window of the source (from the start of its first `ProfilerStep#` range to the
//! end of its last event) is written again and again, each copy shifted in time by the window's
//! length, with the integer ids that tie records together (correlation, External id, flow id,
//! …) offset so that they stay unique per copy and `ProfilerStep#N` renumbered. Records before
//! the window and `M` metadata records are written once. The other top-level members
//! (`deviceProperties`, `distributedInfo`, …) are kept as written.
//!
//! The source is parsed with its values kept as raw JSON text, so timestamps keep their
//! nanoseconds (an `f64` cannot hold epoch microseconds with three decimals).

use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

/// `args` members holding ids that must stay unique per copy. One stride serves them all and
/// the flow ids, so that equal ids in different members (a flow id and the correlation it
/// carries, an event-record correlation and the record's own) stay equal.
const ID_ARGS: [&str; 7] = [
    "correlation",
    "External id",
    "external id",
    "wait_on_cuda_event_record_corr_id",
    "Sequence number",
    "Python id",
    "Python parent id",
];

const STEP_PREFIX: &str = "ProfilerStep#";

/// A JSON object's members in source order, values unparsed.
struct Object(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Object {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = Object;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object, A::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(member) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(member);
                }
                Ok(Object(members))
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// A member value of a record, as it will be written in copy `k`.
enum Val {
    /// Written as in the source.
    Raw(Box<RawValue>),
    /// A timestamp in ns, shifted by `k` window lengths.
    Ts(i64),
    /// An id, offset by `k` id strides; `quoted` if the source wrote it as a string.
    Id { value: i64, quoted: bool },
    /// A `ProfilerStep#N` name, renumbered by `k` step strides.
    Step(u64),
    /// An object whose members are rewritten (`args`).
    Object(Vec<(String, Val)>),
}

/// One element of `traceEvents`.
struct Record {
    /// Members as (JSON-escaped key, value); `None` for an element that is not an object,
    /// written verbatim once.
    members: Option<Vec<(String, Val)>>,
    verbatim: Box<RawValue>,
    /// Written in every copy (it lies in the stepped window), or only in the first.
    repeat: bool,
}

/// How copy `k` differs from the source.
struct Shift {
    window_ns: i64,
    id_stride: i64,
    step_stride: u64,
    /// Write timestamps with three decimals (the source had fractional microseconds).
    fractional: bool,
    /// Added to every timestamp: the synthesized rank's clock runs this much ahead.
    clock_offset_ns: i64,
}

/// One rank of a synthesized job: its number, the job's size and its clock offset.
#[derive(Clone, Copy, Debug)]
pub struct AsRank {
    pub rank: i64,
    pub world_size: i64,
    pub clock_offset_ns: i64,
}

pub fn synthesize(source: &Path, target_bytes: u64, output: &Path) -> anyhow::Result<()> {
    synthesize_as(source, target_bytes, output, None)
}

/// [`synthesize`], written as rank `as_rank` of a job (`distributedInfo` rewritten, every
/// timestamp moved by its clock offset).
pub fn synthesize_as(
    source: &Path,
    target_bytes: u64,
    output: &Path,
    as_rank: Option<AsRank>,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let bytes = read_all(source).with_context(|| format!("reading {}", source.display()))?;
    let top: Object = serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not a JSON object", source.display()))?;
    drop(bytes);
    let Some(events_raw) = top
        .0
        .iter()
        .find(|(key, _)| key == "traceEvents")
        .map(|(_, raw)| raw)
    else {
        bail!("{} has no `traceEvents`", source.display());
    };
    let events: Vec<Box<RawValue>> = serde_json::from_str(events_raw.get())
        .with_context(|| format!("`traceEvents` of {} is not an array", source.display()))?;

    let mut plan = Plan::default();
    let mut records: Vec<(Record, Option<i64>, bool)> = Vec::with_capacity(events.len());
    for raw in events {
        let (record, ts, metadata) = plan.record(raw);
        records.push((record, ts, metadata));
    }
    let (Some(window_start), Some(window_end)) = (plan.first_step_ns, plan.last_end_ns) else {
        bail!(
            "{} has no `ProfilerStep#` ranges (cpu_op or user_annotation): there are no steps to repeat",
            source.display()
        );
    };
    let mut window_ns = (window_end - window_start).max(1);
    if !plan.fractional {
        // Whole microseconds, so that shifted integer timestamps stay integers.
        window_ns = (window_ns + 999) / 1000 * 1000;
    }
    let shift = Shift {
        window_ns,
        id_stride: plan.max_id.saturating_add(1).max(1),
        step_stride: match plan.step_range {
            Some((lo, hi)) => hi - lo + 1,
            None => 1,
        },
        fractional: plan.fractional,
        clock_offset_ns: as_rank.map_or(0, |r| r.clock_offset_ns),
    };
    let mut top = top;
    if let Some(r) = as_rank {
        let info = serde_json::json!({ "rank": r.rank, "world_size": r.world_size });
        let raw = RawValue::from_string(info.to_string())?;
        match top.0.iter_mut().find(|(key, _)| key == "distributedInfo") {
            Some((_, value)) => {
                // Keep the recorded members (backend, ...), with this rank's number and size;
                // the source job's declared groups name its ranks, not this job's: dropped.
                let mut recorded: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(value.get()).unwrap_or_default();
                recorded.insert("rank".into(), r.rank.into());
                recorded.insert("world_size".into(), r.world_size.into());
                recorded.remove("pg_config");
                recorded.remove("pg_count");
                *value = RawValue::from_string(serde_json::Value::Object(recorded).to_string())?;
            }
            None => top.0.push(("distributedInfo".into(), raw)),
        }
    }
    let records: Vec<Record> = records
        .into_iter()
        .map(|(mut record, ts, metadata)| {
            record.repeat = !metadata && ts.is_some_and(|ts| ts >= window_start);
            record
        })
        .collect();
    let repeated = records.iter().filter(|r| r.repeat).count();
    let steps_per_copy = plan.step_markers;

    let summary = write_atomically(output, |sink| {
        write_output(sink, &top, &records, &shift, target_bytes)
    })
    .with_context(|| format!("writing {}", output.display()))?;

    let on_disk = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    eprintln!(
        "{}: {} copies of the stepped window ({:.3} s, {} of {} records, {} steps each): \
         {} records, {} steps, {:.1} MB uncompressed ({:.1} MB on disk) in {:.1} s",
        output.display(),
        summary.copies,
        shift.window_ns as f64 / 1e9,
        repeated,
        records.len(),
        steps_per_copy,
        summary.records,
        summary.copies * steps_per_copy,
        summary.bytes as f64 / 1e6,
        on_disk as f64 / 1e6,
        started.elapsed().as_secs_f64(),
    );
    Ok(())
}

/// Reads a file whole, gunzipping it if it is gzip (by content).
fn read_all(path: &Path) -> anyhow::Result<Vec<u8>> {
    let raw = std::fs::read(path)?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::with_capacity(raw.len() * 8);
        flate2::read::MultiGzDecoder::new(raw.as_slice()).read_to_end(&mut out)?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

/// What the first pass learns about the source.
#[derive(Default)]
struct Plan {
    first_step_ns: Option<i64>,
    last_end_ns: Option<i64>,
    max_id: i64,
    step_range: Option<(u64, u64)>,
    step_markers: u64,
    fractional: bool,
}

impl Plan {
    /// Turns one element of `traceEvents` into a record; returns its timestamp and whether it
    /// is metadata (`ph` `M`).
    fn record(&mut self, raw: Box<RawValue>) -> (Record, Option<i64>, bool) {
        let Ok(object) = serde_json::from_str::<Object>(raw.get()) else {
            return (
                Record {
                    members: None,
                    verbatim: raw,
                    repeat: false,
                },
                None,
                false,
            );
        };
        let text = |key: &str| {
            object
                .0
                .iter()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| serde_json::from_str::<String>(v.get()).ok())
        };
        let ph = text("ph").unwrap_or_default();
        let cat = text("cat").unwrap_or_default();
        let name = text("name").unwrap_or_default();
        let flow = matches!(ph.as_str(), "s" | "f" | "t");
        let mut ts = None;
        let mut dur = 0;
        let mut members = Vec::with_capacity(object.0.len());
        for (key, value) in object.0 {
            let val = match key.as_str() {
                "ts" => match micros_to_ns(value.get()) {
                    Some(ns) => {
                        ts = Some(ns);
                        self.fractional |= value.get().contains(['.', 'e', 'E']);
                        Val::Ts(ns)
                    }
                    None => Val::Raw(value),
                },
                "dur" => {
                    dur = micros_to_ns(value.get()).unwrap_or(0).max(0);
                    Val::Raw(value)
                }
                "id" if flow => self.id(value),
                "name" => match name.strip_prefix(STEP_PREFIX).map(str::parse::<u64>) {
                    Some(Ok(number)) => {
                        let (lo, hi) = self.step_range.unwrap_or((number, number));
                        self.step_range = Some((lo.min(number), hi.max(number)));
                        Val::Step(number)
                    }
                    _ => Val::Raw(value),
                },
                "args" => match serde_json::from_str::<Object>(value.get()) {
                    Ok(args) => Val::Object(
                        args.0
                            .into_iter()
                            .map(|(k, v)| {
                                let val = if ID_ARGS.contains(&k.as_str()) {
                                    self.id(v)
                                } else {
                                    Val::Raw(v)
                                };
                                (escape(&k), val)
                            })
                            .collect(),
                    ),
                    Err(_) => Val::Raw(value),
                },
                _ => Val::Raw(value),
            };
            members.push((escape(&key), val));
        }
        let metadata = ph == "M";
        if let Some(ts) = ts.filter(|_| !metadata) {
            let end = ts.saturating_add(dur);
            self.last_end_ns = Some(self.last_end_ns.map_or(end, |e| e.max(end)));
            let is_step = matches!(cat.as_str(), "cpu_op" | "user_annotation")
                && name.starts_with(STEP_PREFIX);
            if is_step {
                self.step_markers += 1;
                self.first_step_ns = Some(self.first_step_ns.map_or(ts, |s| s.min(ts)));
            }
        }
        (
            Record {
                members: Some(members),
                verbatim: raw,
                repeat: false,
            },
            ts,
            metadata,
        )
    }

    fn id(&mut self, value: Box<RawValue>) -> Val {
        let text = value.get().trim();
        let (digits, quoted) = match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
            Some(inner) => (inner, true),
            None => (text, false),
        };
        let parsed = (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.parse::<i64>().ok())
            .flatten();
        match parsed {
            Some(id) => {
                self.max_id = self.max_id.max(id);
                Val::Id { value: id, quoted }
            }
            None => Val::Raw(value),
        }
    }
}

/// A key as a JSON string.
fn escape(key: &str) -> String {
    serde_json::to_string(key).unwrap_or_else(|_| format!("\"{key}\""))
}

/// Microseconds as written (a number or a string of one, with up to nanosecond decimals) to ns.
fn micros_to_ns(text: &str) -> Option<i64> {
    let text = text.trim();
    let text = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if digits.contains(['e', 'E']) {
        let ns = (text.parse::<f64>().ok()? * 1000.0).round();
        return (ns.is_finite() && ns.abs() < 9.0e18).then_some(ns as i64);
    }
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut ns: i64 = 0;
    for b in int_part.bytes() {
        if !b.is_ascii_digit() {
            return None;
        }
        ns = ns.checked_mul(10)?.checked_add(i64::from(b - b'0'))?;
    }
    ns = ns.checked_mul(1000)?;
    let frac = frac_part.as_bytes();
    if !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut scale = 100;
    for &b in frac.iter().take(3) {
        ns = ns.checked_add(i64::from(b - b'0') * scale)?;
        scale /= 10;
    }
    if frac.get(3).is_some_and(|&b| b >= b'5') {
        ns = ns.checked_add(1)?;
    }
    Some(if negative { -ns } else { ns })
}

struct Summary {
    copies: u64,
    records: u64,
    bytes: u64,
}

fn write_output(
    sink: &mut dyn Write,
    top: &Object,
    records: &[Record],
    shift: &Shift,
    target_bytes: u64,
) -> anyhow::Result<Summary> {
    let mut out = Counted { sink, bytes: 0 };
    let mut summary = Summary {
        copies: 0,
        records: 0,
        bytes: 0,
    };
    let mut line = Vec::with_capacity(1 << 12);
    out.emit(b"{\n")?;
    for (i, (key, value)) in top.0.iter().enumerate() {
        line.clear();
        if i > 0 {
            line.extend_from_slice(b",\n");
        }
        write!(line, "  {}: ", escape(key))?;
        if key != "traceEvents" {
            line.extend_from_slice(value.get().as_bytes());
            out.emit(&line)?;
            continue;
        }
        line.extend_from_slice(b"[\n");
        out.emit(&line)?;
        let mut first = true;
        for k in 0u64.. {
            for record in records.iter().filter(|r| k == 0 || r.repeat) {
                line.clear();
                if !first {
                    line.extend_from_slice(b",\n");
                }
                first = false;
                match &record.members {
                    Some(members) => write_object(&mut line, members, k, shift)?,
                    None => line.extend_from_slice(record.verbatim.get().as_bytes()),
                }
                out.emit(&line)?;
                summary.records += 1;
            }
            summary.copies = k + 1;
            if out.bytes >= target_bytes {
                break;
            }
        }
        out.emit(b"\n  ]")?;
    }
    out.emit(b"\n}\n")?;
    summary.bytes = out.bytes;
    Ok(summary)
}

/// The output, counting the (uncompressed) bytes written.
struct Counted<'a> {
    sink: &'a mut dyn Write,
    bytes: u64,
}

impl Counted<'_> {
    fn emit(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.bytes += data.len() as u64;
        self.sink.write_all(data)
    }
}

fn write_object(
    out: &mut Vec<u8>,
    members: &[(String, Val)],
    k: u64,
    shift: &Shift,
) -> anyhow::Result<()> {
    out.push(b'{');
    for (i, (key, value)) in members.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b": ");
        write_value(out, value, k, shift)?;
    }
    out.push(b'}');
    Ok(())
}

fn write_value(out: &mut Vec<u8>, value: &Val, k: u64, shift: &Shift) -> anyhow::Result<()> {
    let k_i64 = i64::try_from(k).context("too many copies")?;
    let overflow = || anyhow::anyhow!("copy {k} overflows a timestamp or id");
    match value {
        Val::Raw(raw) => out.extend_from_slice(raw.get().as_bytes()),
        Val::Ts(ns) => {
            let ns = k_i64
                .checked_mul(shift.window_ns)
                .and_then(|d| ns.checked_add(d))
                .and_then(|ns| ns.checked_add(shift.clock_offset_ns))
                .ok_or_else(overflow)?;
            if shift.fractional {
                let sign = if ns < 0 { "-" } else { "" };
                let abs = ns.unsigned_abs();
                write!(out, "{sign}{}.{:03}", abs / 1000, abs % 1000)?;
            } else {
                write!(out, "{}", ns.div_euclid(1000))?;
            }
        }
        Val::Id { value, quoted } => {
            let id = k_i64
                .checked_mul(shift.id_stride)
                .and_then(|d| value.checked_add(d))
                .ok_or_else(overflow)?;
            if *quoted {
                write!(out, "\"{id}\"")?;
            } else {
                write!(out, "{id}")?;
            }
        }
        Val::Step(number) => {
            let n = k
                .checked_mul(shift.step_stride)
                .and_then(|d| number.checked_add(d))
                .ok_or_else(overflow)?;
            write!(out, "\"{STEP_PREFIX}{n}\"")?;
        }
        Val::Object(members) => write_object(out, members, k, shift)?,
    }
    Ok(())
}

/// The output file: plain or gzip, buffered.
enum Sink {
    Plain(BufWriter<File>),
    Gzip(Box<flate2::write::GzEncoder<BufWriter<File>>>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Plain(w) => w.write(buf),
            Sink::Gzip(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.write_all(buf),
            Sink::Gzip(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Plain(w) => w.flush(),
            Sink::Gzip(w) => w.flush(),
        }
    }
}

impl Sink {
    fn finish(self) -> std::io::Result<File> {
        let buffered = match self {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w.finish()?,
        };
        let file = buffered.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(file)
    }
}

/// Writes `output` through a temporary file beside it, renamed over `output` only once
/// complete: the output is whole or absent.
fn write_atomically<T>(
    output: &Path,
    write: impl FnOnce(&mut dyn Write) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let gzip = output
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".gz"));
    let file_name = output
        .file_name()
        .and_then(|n| n.to_str())
        .context("the output path has no file name")?;
    let temp: PathBuf = output.with_file_name(format!(".{file_name}.tmp-{}", std::process::id()));
    let result = (|| {
        let file = File::create(&temp)
            .with_context(|| format!("creating temporary file {}", temp.display()))?;
        let buffered = BufWriter::with_capacity(1 << 20, file);
        let mut sink = if gzip {
            Sink::Gzip(Box::new(flate2::write::GzEncoder::new(
                buffered,
                flate2::Compression::default(),
            )))
        } else {
            Sink::Plain(buffered)
        };
        let value = write(&mut sink)?;
        sink.finish()?;
        std::fs::rename(&temp, output)
            .with_context(|| format!("renaming {} to {}", temp.display(), output.display()))?;
        Ok(value)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_to_nanoseconds() {
        assert_eq!(
            micros_to_ns("1712867402348256.123"),
            Some(1_712_867_402_348_256_123)
        );
        assert_eq!(micros_to_ns("\"12\""), Some(12_000));
        assert_eq!(micros_to_ns("1.5"), Some(1_500));
        assert_eq!(micros_to_ns("null"), None);
    }

    fn synthesize_str(source: &str, target: u64) -> serde_json::Value {
        let dir = std::env::temp_dir().join(format!("stepcast-bench-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let input = dir.join(format!("in-{target}.json"));
        let output = dir.join(format!("out-{target}.json"));
        std::fs::write(&input, source).expect("write input");
        synthesize(&input, target, &output).expect("synthesize");
        let text = std::fs::read_to_string(&output).expect("read output");
        let _ = std::fs::remove_dir_all(&dir);
        serde_json::from_str(&text).expect("output is JSON")
    }

    #[test]
    fn repeats_the_stepped_window_with_shifted_times_and_ids() {
        let source = r#"{
  "schemaVersion": 1,
  "traceEvents": [
    {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "ts": 5, "args": {"name": "python"}},
    {"ph": "X", "cat": "cpu_op", "name": "before", "pid": 1, "tid": 1, "ts": 5, "dur": 2, "args": {"External id": 1}},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 10, "dur": 20, "args": {"External id": 2}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12, "dur": 3, "args": {"External id": 3, "correlation": 7}},
    {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 12, "cat": "ac2g", "name": "ac2g"},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 20, "args": {"External id": 3, "correlation": 7}}
  ],
  "traceName": "x"
}"#;
        let out = synthesize_str(source, 1500);
        assert_eq!(out["schemaVersion"], 1);
        assert_eq!(out["traceName"], "x");
        let events = out["traceEvents"].as_array().expect("events");
        // 6 records once, then 4 per further copy.
        assert!(events.len() >= 10 && (events.len() - 6).is_multiple_of(4));
        let steps: Vec<&str> = events
            .iter()
            .filter_map(|e| e["name"].as_str())
            .filter(|n| n.starts_with(STEP_PREFIX))
            .collect();
        assert_eq!(steps[..2], ["ProfilerStep#3", "ProfilerStep#4"]);
        // Window: 10 µs to 40 µs, so copy 1 is 30 µs later; ids offset by max id + 1 = 8.
        let second_step = &events[6];
        assert_eq!(second_step["ts"], 40);
        assert_eq!(second_step["args"]["External id"], 10);
        let second_kernel = &events[9];
        assert_eq!(second_kernel["ts"], 50);
        assert_eq!(second_kernel["args"]["correlation"], 15);
        assert_eq!(events[8]["id"], 15);
        assert_eq!(
            events.iter().filter(|e| e["ph"] == "M").count(),
            1,
            "metadata is written once"
        );
    }

    #[test]
    fn fractional_timestamps_keep_three_decimals() {
        let source = r#"{"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 1712867402348256.123, "dur": 1.5}
]}"#;
        let dir = std::env::temp_dir().join(format!("stepcast-bench-frac-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let input = dir.join("in.json");
        let output = dir.join("out.json");
        std::fs::write(&input, source).expect("write input");
        synthesize(&input, 1, &output).expect("synthesize");
        let text = std::fs::read_to_string(&output).expect("read output");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(text.contains("\"ts\": 1712867402348256.123"), "{text}");
    }
}
