//! A single-pass reader for one element of `traceEvents`.
//!
//! Why not serde alone: a Kineto file is millions of small objects, and the members stepcast
//! needs are a handful of them. Splitting the document (to bound memory) and then handing each
//! object to `serde_json` reads every byte twice; this reader finds the object's extent while it
//! picks out the members, and skips everything else with `memchr`. It is held to the serde
//! mirror in `raw.rs` by a test that reads every trace in `testdata/` both ways.
//!
//! Strictness: the structure (braces, brackets, quotes, colons, commas) and every value it
//! keeps are checked; skipped scalars must be made of number or literal characters. Skipped
//! strings are not checked for valid escapes.

use std::borrow::Cow;

use super::raw::{
    Int, LaneNumber, Micros, RawArgs, RawEvent, RawJson, RawText, Timestamp, micros_bytes_to_ns,
};

/// Why an element could not be read from the bytes at hand.
#[derive(Debug, PartialEq, Eq)]
pub enum Incomplete {
    /// The bytes end inside the element: read more and try again.
    NeedMore,
    /// Not valid JSON (or not an object), at this offset from the element's start.
    Invalid { at: usize, expected: &'static str },
}

type Parse<T> = Result<T, Incomplete>;

/// Reads one event object at the start of `bytes` (after any whitespace). Returns the event
/// and the number of bytes it took.
#[cfg(test)]
pub fn event(bytes: &[u8]) -> Parse<(RawEvent<'_>, usize)> {
    let mut event = RawEvent::default();
    let used = read_event(bytes, &mut event)?;
    Ok((event, used))
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
    mut push: impl FnMut(&RawEvent<'a>) -> Result<(), &'static str>,
) -> Parse<usize> {
    let mut event = RawEvent::default();
    let mut used = read_event(bytes, &mut event)?;
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
        match read_event(&bytes[next..], &mut event) {
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
pub fn read_event<'a>(bytes: &'a [u8], event: &mut RawEvent<'a>) -> Parse<usize> {
    let mut c = Cursor { b: bytes, i: 0 };
    c.ws()?;
    c.expect(b'{', "an event object")?;
    c.members(|c, key| {
        match key {
            b"ph" => event.ph = Some(c.known_string(known_phase)?),
            b"cat" => event.cat = Some(c.known_string(known_category)?),
            b"name" => event.name = Some(c.text()?),
            b"pid" => event.pid = Some(c.lane_number()?),
            b"tid" => event.tid = Some(c.lane_number()?),
            b"ts" => {
                let ns = match c.plain_micros_ns(true)? {
                    Some(ns) => Some(ns),
                    None => c.scalar_text()?.and_then(micros_bytes_to_ns),
                };
                event.ts = Some(Timestamp(ns));
            }
            b"dur" => event.dur = Some(Micros(c.micros()?)),
            b"id" => event.id = Some(Int(c.int()?)),
            b"args" if c.peek()? == b'{' => {
                c.i += 1;
                args(c, event.args.insert(RawArgs::default()))?;
            }
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    Ok(c.i)
}

fn args<'a>(c: &mut Cursor<'a>, args: &mut RawArgs<'a>) -> Parse<()> {
    c.members(|c, key| {
        match key {
            b"correlation" => args.correlation = Some(Int(c.int()?)),
            b"External id" | b"external id" => args.external_id = Some(Int(c.int()?)),
            b"device" => args.device = Some(Int(c.int()?)),
            b"stream" => args.stream = Some(Int(c.int()?)),
            b"stream_id" => args.stream_id = Some(Int(c.int()?)),
            b"bytes" => args.bytes = Some(Int(c.int()?)),
            b"Sequence number" => args.sequence_number = Some(Int(c.int()?)),
            b"cuda_sync_kind" => args.cuda_sync_kind = Some(c.string()?),
            b"wait_on_stream" => args.wait_on_stream = Some(Int(c.int()?)),
            b"wait_on_cuda_event_record_corr_id" => {
                args.wait_on_cuda_event_record_corr_id = Some(Int(c.int()?))
            }
            b"name" => args.name = Some(c.string()?),
            b"Bytes" => args.alloc_bytes = Some(Int(c.int()?)),
            b"Total Allocated" => args.total_allocated = Some(Int(c.int()?)),
            b"Total Reserved" => args.total_reserved = Some(Int(c.int()?)),
            b"Device Type" => args.device_type = Some(Int(c.int()?)),
            b"Device Id" => args.device_id = Some(Int(c.int()?)),
            b"Collective name" => args.collective_name = Some(c.string()?),
            b"In msg nelems" => args.in_msg_nelems = Some(Int(c.int()?)),
            b"Out msg nelems" => args.out_msg_nelems = Some(Int(c.int()?)),
            b"Group size" => args.group_size = Some(Int(c.int()?)),
            b"dtype" => args.dtype = Some(c.string()?),
            b"Process Group Name" => args.pg_name = Some(c.string()?),
            b"Seq" => args.comm_seq = Some(Int(c.int()?)),
            b"Input Dims" => args.input_dims = Some(c.raw_json()?),
            b"warps per SM" => args.warps_per_sm = Some(c.raw_json()?),
            b"est. achieved occupancy %" => args.occupancy_pct = Some(c.raw_json()?),
            b"Input type" => args.input_type = Some(c.raw_json()?),
            _ => c.skip_value()?,
        }
        Ok(())
    })
}

/// An integer read from JSON number bytes.
enum ParsedInt {
    Fits(i64),
    TooLarge,
    Invalid,
}

/// `[-]digits`, as `str::parse::<i64>` reads it, from bytes.
fn parse_integer(text: &[u8]) -> ParsedInt {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return ParsedInt::Invalid;
    }
    let mut value: i64 = 0;
    for &d in digits {
        let digit = (d - b'0') as i64;
        let next = value.checked_mul(10).and_then(|v| {
            if negative {
                v.checked_sub(digit)
            } else {
                v.checked_add(digit)
            }
        });
        match next {
            Some(v) => value = v,
            None => return ParsedInt::TooLarge,
        }
    }
    ParsedInt::Fits(value)
}

/// The bytes as text, if they are UTF-8 (number bytes always are).
fn as_str(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

/// A number as [`Cursor::plain_number`] reads it: at most 18 integer digits.
struct PlainNumber {
    negative: bool,
    magnitude: i64,
    /// The first three fractional digits as nanoseconds, the fourth rounding half up.
    frac_ns: i64,
}

impl PlainNumber {
    fn value(&self) -> i64 {
        if self.negative {
            -self.magnitude
        } else {
            self.magnitude
        }
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

/// `10^k` for the digit counts [`leading_digits`] returns.
const POW10: [i64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// How many of the eight bytes of `chunk` (first byte lowest) are ASCII digits before the first
/// other byte, and the value of those digits. Branch-free: one run of digits costs a few
/// multiplications instead of a multiply-add chain per digit (ts has 16 digits).
#[inline(always)]
fn leading_digits(chunk: u64) -> (usize, u64) {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // A byte's high bit is set where it is below '0' (the subtraction) or above '9' (the
    // addition). Borrows and carries move only upwards, from bytes before the first non-digit,
    // which are digits and make none: the first non-digit is always found.
    let below = chunk.wrapping_sub(0x30 * ONES);
    let above = chunk.wrapping_add(0x46 * ONES);
    let non_digit = (below | above) & (0x80 * ONES);
    let count = (non_digit.trailing_zeros() / 8) as usize;
    if count == 0 {
        return (0, 0);
    }
    // The digits' values, moved to the high end so that the bytes before them read as
    // leading zeros; then pairs, quads and the eight are combined (first byte most
    // significant).
    let mut v = (chunk & 0x0f0f_0f0f_0f0f_0f0f) << (8 * (8 - count));
    v = (v.wrapping_mul(10) + (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    v = (v.wrapping_mul(100) + (v >> 16)) & 0x0000_ffff_0000_ffff;
    v = (v.wrapping_mul(10_000) + (v >> 32)) & 0x0000_0000_ffff_ffff;
    (count, v)
}

/// Strings up to this long are scanned byte by byte; longer ones with `memchr`.
const SHORT_STRING: usize = 32;

/// The cursor's small readers are `#[inline(always)]`: a value returned through memory (a
/// `Result` of a `Cow` or a slice) and read back at once stalled on store forwarding, which
/// cost 12 % of ingest; inlined, the values stay in registers. (Inlining `members` and
/// `skip_value` as well made it slower.)
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

fn is_ws(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\r' | b'\t')
}

impl<'a> Cursor<'a> {
    fn invalid<T>(&self, expected: &'static str) -> Parse<T> {
        Err(Incomplete::Invalid {
            at: self.i,
            expected,
        })
    }

    #[inline(always)]
    fn ws(&mut self) -> Parse<()> {
        while self.i < self.b.len() {
            if !is_ws(self.b[self.i]) {
                return Ok(());
            }
            self.i += 1;
        }
        Err(Incomplete::NeedMore)
    }

    #[inline(always)]
    fn peek(&mut self) -> Parse<u8> {
        self.ws()?;
        Ok(self.b[self.i])
    }

    #[inline(always)]
    fn expect(&mut self, byte: u8, expected: &'static str) -> Parse<()> {
        if self.peek()? != byte {
            return self.invalid(expected);
        }
        self.i += 1;
        Ok(())
    }

    /// The members of an object whose `{` is consumed, up to and including its `}`.
    fn members(&mut self, mut member: impl FnMut(&mut Self, &[u8]) -> Parse<()>) -> Parse<()> {
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(());
        }
        loop {
            if self.peek()? != b'"' {
                return self.invalid("a member name");
            }
            let (key, escaped) = self.raw_string()?;
            self.expect(b':', "':' after a member name")?;
            self.ws()?;
            // An escaped key is none of ours: no member stepcast reads needs escaping. A `null`
            // member is as good as absent (as serde reads an `Option`).
            if escaped || self.b[self.i] == b'n' {
                self.skip_value()?
            } else {
                member(self, key)?
            }
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return self.invalid("',' or '}' after a member"),
            }
        }
    }

    /// The bytes between the quotes of a string at the cursor, and whether they hold escapes.
    #[inline(always)]
    fn raw_string(&mut self) -> Parse<(&'a [u8], bool)> {
        debug_assert_eq!(self.b[self.i], b'"');
        let start = self.i + 1;
        let mut at = start;
        let mut escaped = false;
        // Most strings are short (member names, `"X"`, `"cpu_op"`): a plain loop finds their
        // end before `memchr` would have set up (15 % less time in string scanning).
        let short_end = (start + SHORT_STRING).min(self.b.len());
        while at < short_end {
            match self.b[at] {
                b'"' => {
                    self.i = at + 1;
                    return Ok((&self.b[start..at], false));
                }
                b'\\' => break,
                _ => at += 1,
            }
        }
        loop {
            let Some(off) = memchr::memchr2(b'"', b'\\', &self.b[at..]) else {
                return Err(Incomplete::NeedMore);
            };
            at += off;
            if self.b[at] == b'"' {
                self.i = at + 1;
                return Ok((&self.b[start..at], escaped));
            }
            escaped = true;
            at += 2;
            if at > self.b.len() {
                return Err(Incomplete::NeedMore);
            }
        }
    }

    #[inline(always)]
    fn string(&mut self) -> Parse<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return self.invalid("a string");
        }
        let at = self.i;
        let (bytes, escaped) = self.raw_string()?;
        if !escaped {
            return match std::str::from_utf8(bytes) {
                Ok(text) => Ok(Cow::Borrowed(text)),
                Err(_) => Err(Incomplete::Invalid {
                    at,
                    expected: "a UTF-8 string",
                }),
            };
        }
        // Rare: let serde_json decode the escapes (quotes included).
        match serde_json::from_slice::<String>(&self.b[at..self.i]) {
            Ok(text) => Ok(Cow::Owned(text)),
            Err(_) => Err(Incomplete::Invalid {
                at,
                expected: "a string with valid escapes",
            }),
        }
    }

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

    /// [`Self::string`], taken from `known` when it is one of them: most `ph` and `cat`
    /// values are, which saves a `from_utf8` call on each (0.5 ms of 78 on df_index_resolver).
    #[inline(always)]
    fn known_string(
        &mut self,
        known: impl Fn(&[u8]) -> Option<&'static str>,
    ) -> Parse<Cow<'a, str>> {
        if self.peek()? == b'"' {
            let at = self.i;
            let (bytes, escaped) = self.raw_string()?;
            if !escaped && let Some(text) = known(bytes) {
                return Ok(Cow::Borrowed(text));
            }
            self.i = at;
        }
        self.string()
    }

    /// A number's text, or a string's content, for values read as numbers. `None` for `null`,
    /// booleans, objects and arrays (skipped). Bytes, not `str`: numbers are parsed from the
    /// bytes directly (a UTF-8 check per number cost 6 % of ingest).
    #[inline(always)]
    fn scalar_text(&mut self) -> Parse<Option<&'a [u8]>> {
        match self.peek()? {
            b'"' => Ok(Some(self.raw_string()?.0)),
            b'{' | b'[' => self.skip_value().map(|_| None),
            _ => {
                let text = self.scalar()?;
                Ok(match text {
                    b"null" | b"true" | b"false" => None,
                    _ => Some(text),
                })
            }
        }
    }

    /// A bare scalar (number or literal); must be followed by a delimiter within `b`.
    #[inline(always)]
    fn scalar(&mut self) -> Parse<&'a [u8]> {
        let start = self.i;
        let mut letters = false;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E' => {}
                b'a'..=b'z' => letters = true,
                _ => break,
            }
            self.i += 1;
        }
        if self.i == self.b.len() {
            return Err(Incomplete::NeedMore);
        }
        let text = &self.b[start..self.i];
        if text.is_empty() || letters && !matches!(text, b"null" | b"true" | b"false") {
            return Err(Incomplete::Invalid {
                at: start,
                expected: "a number or literal",
            });
        }
        Ok(text)
    }

    /// A number written the common way, `-?digits` (with `fraction`, also `.digits`), followed
    /// by a delimiter, read in one pass as microseconds → nanoseconds, exactly as
    /// `micros_bytes_to_ns` reads it. `Ok(None)` with the cursor unmoved for anything else
    /// (exponents, strings, literals, very long numbers): the caller then takes the general path.
    #[inline(always)]
    fn plain_micros_ns(&mut self, fraction: bool) -> Parse<Option<i64>> {
        let start = self.i;
        let Some(number) = self.plain_number(fraction)? else {
            return Ok(None);
        };
        match number.magnitude.checked_mul(1000) {
            Some(ns) if ns <= i64::MAX - 999 => {
                let ns = ns + number.frac_ns;
                Ok(Some(if number.negative { -ns } else { ns }))
            }
            // Out of range: the general path says so.
            _ => {
                self.i = start;
                Ok(None)
            }
        }
    }

    /// `-?digits(.digits)?` followed by a delimiter; see [`Self::plain_micros_ns`].
    #[inline(always)]
    fn plain_number(&mut self, fraction: bool) -> Parse<Option<PlainNumber>> {
        self.ws()?;
        let b = self.b;
        let start = self.i;
        let negative = b.get(start) == Some(&b'-');
        let digits_from = start + negative as usize;
        let mut at = digits_from;
        let mut value: i64 = 0;
        // 18 digits always fit an i64; a longer number takes the general path.
        let digits_end = (digits_from + 18).min(b.len());
        // Eight bytes at a time while they are all digits, then the last partial run (see
        // `leading_digits`); the byte loop below takes the rest near the end of `b`.
        while at + 8 <= digits_end {
            let Ok(chunk) = <[u8; 8]>::try_from(&b[at..at + 8]) else {
                break;
            };
            let (count, digits) = leading_digits(u64::from_le_bytes(chunk));
            value = value * POW10[count] + digits as i64;
            at += count;
            if count < 8 {
                break;
            }
        }
        while at < digits_end && b[at].is_ascii_digit() {
            value = value * 10 + (b[at] - b'0') as i64;
            at += 1;
        }
        if at == digits_from {
            return Ok(None);
        }
        let mut frac_ns: i64 = 0;
        if fraction && b.get(at) == Some(&b'.') {
            at += 1;
            let frac_from = at;
            while at < b.len() && b[at].is_ascii_digit() {
                let digit = (b[at] - b'0') as i64;
                match at - frac_from {
                    0..=2 => frac_ns += digit * [100, 10, 1][at - frac_from],
                    3 if digit >= 5 => frac_ns += 1,
                    _ => {}
                }
                at += 1;
            }
            if at == frac_from {
                return Ok(None);
            }
        }
        match b.get(at) {
            None => Err(Incomplete::NeedMore),
            Some(b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') => {
                self.i = at;
                Ok(Some(PlainNumber {
                    negative,
                    magnitude: value,
                    frac_ns,
                }))
            }
            Some(_) => Ok(None),
        }
    }

    /// An integer as `Int` reads it: integral numbers and digit strings; anything else `None`.
    #[inline(always)]
    fn int(&mut self) -> Parse<Option<i64>> {
        if let Some(number) = self.plain_number(false)? {
            return Ok(Some(number.value()));
        }
        let is_string = self.peek()? == b'"';
        let Some(text) = self.scalar_text()? else {
            return Ok(None);
        };
        let text = if is_string { text.trim_ascii() } else { text };
        Ok(match parse_integer(text) {
            ParsedInt::Fits(v) => Some(v),
            // Beyond i64: kept as "no value", never wrapped.
            ParsedInt::TooLarge => None,
            ParsedInt::Invalid if is_string => None,
            ParsedInt::Invalid => as_str(text)
                .and_then(|t| t.parse::<f64>().ok())
                .filter(|v| v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15)
                .map(|v| v as i64),
        })
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

    #[inline(always)]
    fn micros(&mut self) -> Parse<Option<i64>> {
        // Integers only: a fraction is read through `f64` below, as the serde mirror does.
        if let Some(number) = self.plain_number(false)? {
            return Ok(number.value().checked_mul(1000));
        }
        let is_string = self.peek()? == b'"';
        let Some(text) = self.scalar_text()? else {
            return Ok(None);
        };
        if let (false, ParsedInt::Fits(v)) = (is_string, parse_integer(text)) {
            return Ok(v.checked_mul(1000));
        }
        let ns = as_str(text)
            .and_then(|t| t.trim().parse::<f64>().ok())
            .map(|f| (f * 1000.0).round());
        Ok(ns
            .filter(|ns| ns.is_finite() && ns.abs() < 9.0e18)
            .map(|ns| ns as i64))
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

    fn skip_value(&mut self) -> Parse<()> {
        match self.peek()? {
            b'"' => self.raw_string().map(|_| ()),
            b'{' | b'[' => self.skip_container(),
            _ => self.scalar().map(|_| ()),
        }
    }

    fn skip_container(&mut self) -> Parse<()> {
        let mut depth = 0u32;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'"' => {
                    self.raw_string()?;
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        self.i += 1;
                        return Ok(());
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
        Err(Incomplete::NeedMore)
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

    /// The eight-at-a-time digit reader against a byte loop, on runs of every length followed
    /// by every kind of byte (borrows and carries would corrupt the bytes after a non-digit).
    #[test]
    fn leading_digits_reads_what_a_byte_loop_reads() {
        let others = [
            b'/', b':', b',', b' ', b'.', b'e', b'"', 0x00, 0x7f, 0x80, 0xb0, 0xba, 0xff,
        ];
        let mut checked = 0;
        for count in 0..=8 {
            for &other in &others {
                for seed in 0..20u64 {
                    let mut bytes = [0u8; 8];
                    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ count as u64;
                    for (k, byte) in bytes.iter_mut().enumerate() {
                        state = state
                            .wrapping_mul(6_364_136_223_846_793_005)
                            .wrapping_add(1);
                        *byte = match k.cmp(&count) {
                            std::cmp::Ordering::Less => b'0' + (state >> 60) as u8 % 10,
                            std::cmp::Ordering::Equal => other,
                            std::cmp::Ordering::Greater => {
                                others[(state >> 59) as usize % others.len()]
                            }
                        };
                    }
                    let expected_count = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
                    let expected_value = bytes[..expected_count]
                        .iter()
                        .fold(0u64, |v, &d| v * 10 + (d - b'0') as u64);
                    assert_eq!(
                        leading_digits(u64::from_le_bytes(bytes)),
                        (expected_count, expected_value),
                        "{bytes:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 9 * others.len() * 20);
    }

    /// Several events per call: each as `event` reads it, and the call stops after the last
    /// whole event before anything it must leave to the caller.
    #[test]
    fn reads_events_until_one_does_not_fit() {
        let a = r#"{"ph": "X", "name": "a", "ts": 1}"#;
        let b = r#"{"ph": "i", "name": "b", "args": {"External id": 2}}"#;
        let read = |text: &str| {
            let mut names = Vec::new();
            let used = read_events(text.as_bytes(), |e| {
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
        use crate::json_stream::JsonStream;
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
        for path in &files {
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
                    let (fast, used) = event(value).expect("fast");
                    assert_eq!(used, value.len(), "{}", path.display());
                    assert_eq!(fast, reference, "{}", path.display());
                    compared += 1;
                }
            }
        }
        assert!(compared > 1_000_000, "compared only {compared} events");
    }
}
