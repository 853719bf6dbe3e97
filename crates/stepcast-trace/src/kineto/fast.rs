//! Kineto's reader of one element of `traceEvents`, on the shared Chrome-trace cursor
//! (`chrome/cursor.rs`): the members stepcast needs are picked out in one pass (each name
//! classified as an `EventMember` or `ArgMember`, the match on it below), everything else
//! skipped, and the bytes between members predicted from the events before
//! (`chrome/layout.rs`). It is held to the serde mirror in `raw.rs` by a test that reads every
//! trace in `testdata/` both ways.

use super::raw::{
    Int, LaneNumber, Micros, RawArgs, RawEvent, RawJson, RawText, Timestamp, micros_bytes_to_ns,
};
use crate::chrome::cursor::{Cursor, Incomplete, Parse, as_str};
use crate::chrome::layout::{Layout, MemberKey};

/// Reads one event object at the start of `bytes` (after any whitespace), with a fresh layout.
/// Returns the event and the number of bytes it took.
#[cfg(test)]
pub fn event(bytes: &[u8]) -> Parse<(RawEvent<'_>, usize)> {
    let mut event = RawEvent::default();
    let used = read_event(bytes, &mut Layouts::default(), &mut event)?;
    Ok((event, used))
}

/// The member layouts learned from the events read so far (`chrome/layout.rs`): kept by the
/// caller from one call of [`read_events`] to the next.
#[derive(Default)]
pub struct Layouts {
    event: Layout<EventMember>,
    args: Layout<ArgMember>,
}

#[cfg(test)]
impl Layouts {
    /// How many separators have been learned, in all.
    fn learned(&self) -> u64 {
        self.event.learned() + self.args.learned()
    }
}

/// Reads the events at the start of `bytes` (after any whitespace), and the commas between
/// them, while they fit, handing each to `push`. Returns the bytes taken, which end with an
/// event: the separator after it, and anything else, is left to the caller, as is an event
/// that does not fit or is invalid unless it is the first (then its error is returned, and
/// nothing was pushed). An event `push` refuses (it returns what was expected) is an error at
/// that event. One call per window of the input rather than per event: the caller's
/// per-event bookkeeping (a peek for the element, another for the separator, the
/// window checks) cost 4 % of ingest.
pub fn read_events<'a>(
    bytes: &'a [u8],
    layouts: &mut Layouts,
    mut push: impl FnMut(&RawEvent<'a>) -> Result<(), &'static str>,
) -> Parse<usize> {
    let mut event = RawEvent::default();
    let mut used = read_event(bytes, layouts, &mut event)?;
    if let Err(expected) = push(&event) {
        return Err(Incomplete::Invalid { at: 0, expected });
    }
    loop {
        let mut c = Cursor { b: bytes, i: used };
        if c.peek() != Ok(b',') {
            return Ok(used);
        }
        let next = c.i + 1;
        let mut event = RawEvent::default();
        match read_event(&bytes[next..], layouts, &mut event) {
            Ok(n) => {
                if let Err(expected) = push(&event) {
                    return Err(Incomplete::Invalid { at: next, expected });
                }
                used = next + n;
            }
            Err(_) => return Ok(used),
        }
    }
}

/// [`event`] into `event`, which must start as `RawEvent::default()`. Filled in place: a
/// `RawEvent` is about 600 bytes, and moving it out of the reader and into the builder cost
/// 6 % of ingest. On an error, `event` holds a part of the object.
pub fn read_event<'a>(
    bytes: &'a [u8],
    layouts: &mut Layouts,
    event: &mut RawEvent<'a>,
) -> Parse<usize> {
    let mut c = Cursor { b: bytes, i: 0 };
    c.ws()?;
    c.expect(b'{', "an event object")?;
    let args_layout = &mut layouts.args;
    c.members_by_layout(
        &mut layouts.event,
        EventMember::of,
        EventMember::Other,
        |c, member| {
            match member {
                EventMember::Ph => event.ph = Some(c.known_string(known_phase)?),
                EventMember::Cat => event.cat = Some(c.known_string(known_category)?),
                EventMember::Name => event.name = Some(c.text()?),
                EventMember::Pid => event.pid = Some(c.lane_number()?),
                EventMember::Tid => event.tid = Some(c.lane_number()?),
                EventMember::Ts => {
                    let ns = match c.plain_micros_ns(true)? {
                        Some(ns) => Some(ns),
                        None => c.scalar_text()?.and_then(micros_bytes_to_ns),
                    };
                    event.ts = Some(Timestamp(ns));
                }
                EventMember::Dur => event.dur = Some(Micros(c.micros()?)),
                EventMember::Id => event.id = Some(Int(c.int()?)),
                EventMember::Args if c.peek()? == b'{' => {
                    c.i += 1;
                    args(c, args_layout, event.args.insert(RawArgs::default()))?;
                }
                _ => c.skip_value()?,
            }
            Ok(())
        },
    )?;
    Ok(c.i)
}

fn args<'a>(
    c: &mut Cursor<'a>,
    layout: &mut Layout<ArgMember>,
    args: &mut RawArgs<'a>,
) -> Parse<()> {
    use ArgMember as A;
    c.members_by_layout(layout, ArgMember::of, ArgMember::Other, |c, member| {
        match member {
            A::Correlation => args.correlation = Some(Int(c.int()?)),
            A::ExternalId => args.external_id = Some(Int(c.int()?)),
            A::RecordFunctionId => args.record_function_id = Some(Int(c.int()?)),
            A::Device => args.device = Some(Int(c.int()?)),
            A::Stream => args.stream = Some(Int(c.int()?)),
            A::StreamId => args.stream_id = Some(Int(c.int()?)),
            A::Bytes => args.bytes = Some(Int(c.int()?)),
            A::SequenceNumber => args.sequence_number = Some(Int(c.int()?)),
            A::CudaSyncKind => args.cuda_sync_kind = Some(c.string()?),
            A::WaitOnStream => args.wait_on_stream = Some(Int(c.int()?)),
            A::WaitOnEventRecord => args.wait_on_cuda_event_record_corr_id = Some(Int(c.int()?)),
            A::Name => args.name = Some(c.string()?),
            A::AllocBytes => args.alloc_bytes = Some(Int(c.int()?)),
            A::Addr => args.addr = Some(Int(c.int()?)),
            A::TotalAllocated => args.total_allocated = Some(Int(c.int()?)),
            A::TotalReserved => args.total_reserved = Some(Int(c.int()?)),
            A::DeviceType => args.device_type = Some(Int(c.int()?)),
            A::DeviceId => args.device_id = Some(Int(c.int()?)),
            A::CollectiveName => args.collective_name = Some(c.string()?),
            A::InMsgNelems => args.in_msg_nelems = Some(Int(c.int()?)),
            A::OutMsgNelems => args.out_msg_nelems = Some(Int(c.int()?)),
            A::GroupSize => args.group_size = Some(Int(c.int()?)),
            A::Dtype => args.dtype = Some(c.string()?),
            A::PgName => args.pg_name = Some(c.string()?),
            A::CommSeq => args.comm_seq = Some(Int(c.int()?)),
            A::PgRanks => args.pg_ranks = Some(c.raw_json()?),
            A::InputDims => args.input_dims = Some(c.raw_json()?),
            A::WarpsPerSm => args.warps_per_sm = Some(c.raw_json()?),
            A::OccupancyPct => args.occupancy_pct = Some(c.raw_json()?),
            A::Grid => args.grid = Some(c.raw_json()?),
            A::InputType => args.input_type = Some(c.raw_json()?),
            A::ConcreteInputs => args.concrete_inputs = Some(c.raw_json()?),
            _ => c.skip_value()?,
        }
        Ok(())
    })
}

/// The members of an event the reader tells apart (`Other`: all the rest, skipped).
#[derive(Clone, Copy, PartialEq, Eq)]
enum EventMember {
    Ph,
    Cat,
    Name,
    Pid,
    Tid,
    Ts,
    Dur,
    Id,
    Args,
    Other,
}

impl EventMember {
    fn of(name: &[u8]) -> Self {
        match name {
            b"ph" => Self::Ph,
            b"cat" => Self::Cat,
            b"name" => Self::Name,
            b"pid" => Self::Pid,
            b"tid" => Self::Tid,
            b"ts" => Self::Ts,
            b"dur" => Self::Dur,
            b"id" => Self::Id,
            b"args" => Self::Args,
            _ => Self::Other,
        }
    }
}

impl MemberKey for EventMember {
    const COUNT: usize = Self::Other as usize + 1;
    fn index(self) -> usize {
        self as usize
    }
}

/// The members of `args` the reader tells apart. The skipped ones Kineto writes (`EvIdx` and
/// after) are named too, only so that the layout after each is learned apart from the
/// others': a kernel's `args` skip seven of them between the members read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArgMember {
    Correlation,
    ExternalId,
    RecordFunctionId,
    Device,
    Stream,
    StreamId,
    Bytes,
    SequenceNumber,
    CudaSyncKind,
    WaitOnStream,
    WaitOnEventRecord,
    Name,
    AllocBytes,
    TotalAllocated,
    TotalReserved,
    DeviceType,
    DeviceId,
    CollectiveName,
    InMsgNelems,
    OutMsgNelems,
    GroupSize,
    Dtype,
    PgName,
    CommSeq,
    PgRanks,
    InputDims,
    WarpsPerSm,
    OccupancyPct,
    InputType,
    ConcreteInputs,
    EvIdx,
    Cbid,
    Addr,
    Context,
    Queued,
    RegistersPerThread,
    SharedMemory,
    BlocksPerSm,
    Grid,
    Block,
    FwdThreadId,
    Other,
}

impl ArgMember {
    fn of(name: &[u8]) -> Self {
        match name {
            b"correlation" => Self::Correlation,
            b"External id" | b"external id" => Self::ExternalId,
            b"Record function id" => Self::RecordFunctionId,
            b"device" => Self::Device,
            b"stream" => Self::Stream,
            b"stream_id" => Self::StreamId,
            b"bytes" => Self::Bytes,
            b"Sequence number" => Self::SequenceNumber,
            b"cuda_sync_kind" => Self::CudaSyncKind,
            b"wait_on_stream" => Self::WaitOnStream,
            b"wait_on_cuda_event_record_corr_id" => Self::WaitOnEventRecord,
            b"name" => Self::Name,
            b"Bytes" => Self::AllocBytes,
            b"Total Allocated" => Self::TotalAllocated,
            b"Total Reserved" => Self::TotalReserved,
            b"Device Type" => Self::DeviceType,
            b"Device Id" => Self::DeviceId,
            b"Collective name" => Self::CollectiveName,
            b"In msg nelems" => Self::InMsgNelems,
            b"Out msg nelems" => Self::OutMsgNelems,
            b"Group size" => Self::GroupSize,
            b"dtype" => Self::Dtype,
            b"Process Group Name" => Self::PgName,
            b"Seq" => Self::CommSeq,
            b"Process Group Ranks" => Self::PgRanks,
            b"Input Dims" => Self::InputDims,
            b"warps per SM" => Self::WarpsPerSm,
            b"est. achieved occupancy %" => Self::OccupancyPct,
            b"Input type" => Self::InputType,
            b"Concrete Inputs" => Self::ConcreteInputs,
            b"Ev Idx" => Self::EvIdx,
            b"cbid" => Self::Cbid,
            b"Addr" => Self::Addr,
            b"context" => Self::Context,
            b"queued" => Self::Queued,
            b"registers per thread" => Self::RegistersPerThread,
            b"shared memory" => Self::SharedMemory,
            b"blocks per SM" => Self::BlocksPerSm,
            b"grid" => Self::Grid,
            b"block" => Self::Block,
            b"Fwd thread id" => Self::FwdThreadId,
            _ => Self::Other,
        }
    }
}

impl MemberKey for ArgMember {
    const COUNT: usize = Self::Other as usize + 1;
    fn index(self) -> usize {
        self as usize
    }
}

/// The phases Kineto writes, as `&'static str`: [`Cursor::known_string`] gives these without
/// a UTF-8 check of the input.
fn known_phase(bytes: &[u8]) -> Option<&'static str> {
    Some(match bytes {
        b"X" => "X",
        b"f" => "f",
        b"s" => "s",
        b"i" => "i",
        b"M" => "M",
        b"t" => "t",
        b"I" => "I",
        _ => return None,
    })
}

/// Kineto's categories, today's and 2021's (see [`known_phase`]).
fn known_category(bytes: &[u8]) -> Option<&'static str> {
    Some(match bytes {
        b"cpu_op" => "cpu_op",
        b"ac2g" => "ac2g",
        b"cuda_runtime" => "cuda_runtime",
        b"cpu_instant_event" => "cpu_instant_event",
        b"kernel" => "kernel",
        b"gpu_memcpy" => "gpu_memcpy",
        b"user_annotation" => "user_annotation",
        b"gpu_memset" => "gpu_memset",
        b"gpu_user_annotation" => "gpu_user_annotation",
        b"python_function" => "python_function",
        b"cuda_driver" => "cuda_driver",
        b"cuda_sync" => "cuda_sync",
        b"fwdbwd" => "fwdbwd",
        b"Trace" => "Trace",
        b"Operator" => "Operator",
        b"Runtime" => "Runtime",
        b"Kernel" => "Kernel",
        b"Memcpy" => "Memcpy",
        b"Memset" => "Memset",
        _ => return None,
    })
}

/// Kineto's own value types, read with the shared cursor.
impl<'a> Cursor<'a> {
    /// A string as its bytes where it has no escapes (not checked as UTF-8 here), else decoded.
    #[inline(always)]
    fn text(&mut self) -> Parse<RawText<'a>> {
        if self.peek()? != b'"' {
            return self.invalid("a string");
        }
        let at = self.i;
        let (bytes, escaped) = self.raw_string()?;
        if !escaped {
            return Ok(RawText::Bytes(bytes));
        }
        self.i = at;
        Ok(RawText::Decoded(self.string()?.into_owned()))
    }

    /// A value as the text it was written in (checked as [`Cursor::skip_value`] checks it).
    fn raw_json(&mut self) -> Parse<RawJson<'a>> {
        self.peek()?;
        let start = self.i;
        self.skip_value()?;
        let text = as_str(&self.b[start..self.i]).ok_or(Incomplete::Invalid {
            at: start,
            expected: "UTF-8 text",
        })?;
        Ok(RawJson(text))
    }

    #[inline(always)]
    fn lane_number(&mut self) -> Parse<LaneNumber> {
        let is_string = self.peek()? == b'"';
        if is_string {
            let text = self.string()?;
            let number = super::raw::lane_number_text(&text);
            return Ok(LaneNumber(number, Some(text.into())));
        }
        Ok(LaneNumber(self.int()?, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(text: &str) -> RawEvent<'_> {
        let (fast, used) = event(text.as_bytes()).expect("fast reader");
        assert_eq!(used, text.trim_end().len());
        let reference: RawEvent = serde_json::from_str(text).expect("serde reader");
        assert_eq!(fast, reference);
        fast
    }

    #[test]
    fn reads_what_serde_reads() {
        let e = both(
            r#"{"ph": "X", "cat": "kernel", "name": "k\u00e9\"x", "pid": 0, "tid": "stream 7",
               "ts": 1712867402348256.123, "dur": 4.5, "args": {"External id": 12, "grid": [1, [2]],
               "stream": 7, "correlation": 10159970886766084423, "bytes": 4096.0,
               "note": "a } ] \\ \" b", "device": null}} "#,
        );
        assert_eq!(e.ts, Some(Timestamp(Some(1_712_867_402_348_256_123))));
        assert_eq!(
            e.name.as_ref().map(RawText::as_bytes),
            Some("ké\"x".as_bytes())
        );
        let args = e.args.expect("args");
        assert_eq!(args.correlation, Some(Int(None)));
        assert_eq!(args.bytes, Some(Int(Some(4096))));
        both(r#"{"ph": "f", "id": "17", "pid": 1, "tid": 2, "ts": 5, "bp": "e"}"#);
        both(r#"{}"#);
    }

    /// Numbers on the one-pass path and at its edges read as serde reads them.
    #[test]
    fn numbers_read_as_serde_reads_them() {
        for number in [
            "0",
            "-0",
            "-0.5",
            "7",
            "-12",
            "1669783687464181",
            "1669783687464181.9995",
            "1712867402348256.123",
            "1.0005",
            "1.00049",
            "123456789012345678",
            "9223372036854775",
            "9223372036854776",
            "12345678901234567890",
            "1e3",
            "-1.5E-2",
            "4096.0",
            "\"12\"",
            "null",
        ] {
            let text = format!(
                r#"{{"ts": {number}, "dur": {number}, "id": {number}, "pid": {number},
                   "args": {{"External id": {number}, "stream": {number}}}}}"#
            );
            both(&text);
        }
    }

    /// Strings whose end or escapes fall anywhere in or after the word-at-a-time scan.
    #[test]
    fn strings_read_as_serde_reads_them() {
        for len in 0..48 {
            for special in ["", r#"\""#, r"\\", r"\u00e9", "é", "!#[]{}"] {
                let text: String = (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect();
                let (head, tail) = text.split_at(len / 2);
                both(&format!(
                    r#"{{"name": "{head}{special}{tail}", "cat": "{special}{text}"}}"#
                ));
            }
        }
    }

    /// Several events per call: each as `event` reads it, and the call stops after the last
    /// whole event before anything it must leave to the caller.
    #[test]
    fn reads_events_until_one_does_not_fit() {
        let a = r#"{"ph": "X", "name": "a", "ts": 1}"#;
        let b = r#"{"ph": "i", "name": "b", "args": {"External id": 2}}"#;
        let read = |text: &str| {
            let mut names = Vec::new();
            let used = read_events(text.as_bytes(), &mut Layouts::default(), |e| {
                assert_eq!(
                    e,
                    &event(if e.ph.as_deref() == Some("X") { a } else { b }.as_bytes())
                        .expect("event")
                        .0
                );
                let name = e.name.as_ref().map_or(&b""[..], RawText::as_bytes);
                names.push(String::from_utf8_lossy(name).into_owned());
                Ok(())
            });
            used.map(|used| (used, names))
        };
        let two = format!("{a},\n  {b}");
        assert_eq!(
            read(&format!("  {two}\n]")),
            Ok((two.len() + 2, vec!["a".into(), "b".into()]))
        );
        // A separator other than a comma, an event cut short and an invalid one: left to the
        // caller, which sees them as the first thing in its next call.
        for rest in ["]", " ;", ", {\"ph\": \"X", ", {\"ph\" 1}", ", ", ","] {
            let text = format!("{two}{rest}");
            assert_eq!(
                read(&text),
                Ok((two.len(), vec!["a".into(), "b".into()])),
                "{text}"
            );
        }
        assert_eq!(read(r#"{"ph": "X""#), Err(Incomplete::NeedMore));
        assert!(matches!(
            read(r#"{"ph" 1}, {}"#),
            Err(Incomplete::Invalid { .. })
        ));
    }

    #[test]
    fn asks_for_more_when_cut() {
        let text = r#"{"ph": "X", "name": "abc", "args": {"a": [1, 2]}}"#;
        for cut in 0..text.len() {
            assert_eq!(
                event(&text.as_bytes()[..cut]).err(),
                Some(Incomplete::NeedMore),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn rejects_malformed_objects() {
        for text in [
            r#"{"ph" "X"} "#,
            r#"{"ph": "X",, } "#,
            r#"[1] "#,
            r#"{"a": tru$} "#,
            r#"{"a": 1 "b": 2} "#,
        ] {
            assert!(
                matches!(event(text.as_bytes()), Err(Incomplete::Invalid { .. })),
                "{text}"
            );
        }
    }

    /// The fast reader agrees with the serde mirror on every event of every real trace.
    #[test]
    fn agrees_with_serde_on_every_testdata_trace() {
        use crate::chrome::stream::JsonStream;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/kineto");
        let mut files = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("testdata/kineto is in the repository") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.to_string_lossy().contains(".json") {
                    files.push(path);
                }
            }
        }
        files.sort();
        assert!(
            files.len() > 30,
            "testdata/kineto has {} traces",
            files.len()
        );
        let mut compared = 0u64;
        let mut predicted = 0u64;
        for path in &files {
            // One layout per file, as the reader keeps it: most events are then read by
            // prediction alone (and the test fails if few are), the rest the general way.
            let mut layouts = Layouts::default();
            let bytes = std::fs::read(path).expect("read");
            let reader: Box<dyn std::io::Read> = if bytes.starts_with(&[0x1f, 0x8b]) {
                Box::new(flate2::read::MultiGzDecoder::new(&bytes[..]))
            } else {
                Box::new(&bytes[..])
            };
            let mut stream = JsonStream::new(reader);
            if stream.peek().expect("peek") != Some(b'{') {
                continue;
            }
            stream.bump();
            loop {
                match stream.peek().expect("peek") {
                    Some(b'}') | None => break,
                    Some(b',') => stream.bump(),
                    _ => {}
                }
                let key: String =
                    serde_json::from_slice(stream.next_value().expect("key")).expect("key");
                stream.expect(b':', ":").expect("colon");
                if key != "traceEvents" {
                    stream.next_value().expect("value");
                    continue;
                }
                stream.expect(b'[', "[").expect("array");
                loop {
                    match stream.peek().expect("peek") {
                        Some(b']') => {
                            stream.bump();
                            break;
                        }
                        Some(b',') => stream.bump(),
                        _ => {}
                    }
                    let value = stream.next_value().expect("event");
                    let reference: RawEvent = serde_json::from_slice(value).expect("serde");
                    let learned = layouts.learned();
                    let mut fast = RawEvent::default();
                    let used = read_event(value, &mut layouts, &mut fast).expect("fast");
                    assert_eq!(used, value.len(), "{}", path.display());
                    assert_eq!(fast, reference, "{}", path.display());
                    compared += 1;
                    predicted += u64::from(layouts.learned() == learned);
                }
            }
        }
        assert!(compared > 1_000_000, "compared only {compared} events");
        // 89 % when this was written.
        assert!(
            predicted * 4 > compared * 3,
            "{predicted} of {compared} events read without learning"
        );
    }
}
