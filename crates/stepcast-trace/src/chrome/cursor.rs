//! A cursor over the bytes of one Chrome-trace event: the JSON tokenizer every Chrome-trace
//! reader shares (Kineto's `kineto/fast.rs`, Horovod's timeline, TensorFlow's and MXNet's).
//!
//! Why not serde alone: a trace is millions of small objects, and the members a reader needs
//! are a handful of them. Splitting the document (to bound memory) and then handing each
//! object to `serde_json` reads every byte twice; a reader built on this cursor finds the
//! object's extent while it picks out the members it wants (`Cursor::members`, its own match
//! on the key), and skips everything else with `memchr`.
//!
//! Strictness: the structure (braces, brackets, quotes, colons, commas) and every value a
//! reader keeps are checked; skipped scalars must be made of number or literal characters.
//! Skipped strings are not checked for valid escapes.

use std::borrow::Cow;

/// Why an element could not be read from the bytes at hand.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Incomplete {
    /// The bytes end inside the element: read more and try again.
    NeedMore,
    /// Not valid JSON (or not an object), at this offset from the element's start.
    Invalid { at: usize, expected: &'static str },
}

pub(crate) type Parse<T> = Result<T, Incomplete>;

/// An integer read from JSON number bytes.
pub(crate) enum ParsedInt {
    Fits(i64),
    TooLarge,
    Invalid,
}

/// `[-]digits`, as `str::parse::<i64>` reads it, from bytes.
pub(crate) fn parse_integer(text: &[u8]) -> ParsedInt {
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
pub(crate) fn as_str(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

/// A number as [`Cursor::plain_number`] reads it: at most 18 integer digits.
pub(crate) struct PlainNumber {
    negative: bool,
    magnitude: i64,
    /// The first three fractional digits as nanoseconds, the fourth rounding half up.
    frac_ns: i64,
}

impl PlainNumber {
    pub(crate) fn value(&self) -> i64 {
        if self.negative {
            -self.magnitude
        } else {
            self.magnitude
        }
    }
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

/// The index of the first `"` or `\\` among the eight bytes of `chunk` (first byte lowest), or 8.
#[inline(always)]
fn quote_or_backslash(chunk: u64) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const LOW7: u64 = 0x7f * ONES;
    // A byte's high bit is set where the byte is zero; exact per byte (nothing carries out of
    // a byte).
    let zero = |x: u64| !(((x & LOW7) + LOW7) | x) & (0x80 * ONES);
    let hits = zero(chunk ^ (b'"' as u64 * ONES)) | zero(chunk ^ (b'\\' as u64 * ONES));
    (hits.trailing_zeros() / 8) as usize
}

/// Strings up to about this long are scanned eight bytes at a time; longer ones with `memchr`.
const SHORT_STRING: usize = 32;

/// The cursor's small readers are `#[inline(always)]`: a value returned through memory (a
/// `Result` of a `Cow` or a slice) and read back at once stalled on store forwarding, which
/// cost 12 % of ingest; inlined, the values stay in registers. (Inlining `members` and
/// `skip_value` as well made it slower.)
pub(crate) struct Cursor<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) i: usize,
}

fn is_ws(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\r' | b'\t')
}

impl<'a> Cursor<'a> {
    pub(crate) fn invalid<T>(&self, expected: &'static str) -> Parse<T> {
        Err(Incomplete::Invalid {
            at: self.i,
            expected,
        })
    }

    #[inline(always)]
    pub(crate) fn ws(&mut self) -> Parse<()> {
        // On locals rather than stepping `self.i`: 27 M fewer instructions in a read of
        // df_index_resolver (cachegrind).
        let (b, mut i) = (self.b, self.i);
        while let Some(&byte) = b.get(i) {
            if !is_ws(byte) {
                self.i = i;
                return Ok(());
            }
            i += 1;
        }
        self.i = i;
        Err(Incomplete::NeedMore)
    }

    #[inline(always)]
    pub(crate) fn peek(&mut self) -> Parse<u8> {
        self.ws()?;
        Ok(self.b[self.i])
    }

    #[inline(always)]
    pub(crate) fn expect(&mut self, byte: u8, expected: &'static str) -> Parse<()> {
        if self.peek()? != byte {
            return self.invalid(expected);
        }
        self.i += 1;
        Ok(())
    }

    /// The members of an object whose `{` is consumed, up to and including its `}`.
    pub(crate) fn members(
        &mut self,
        mut member: impl FnMut(&mut Self, &[u8]) -> Parse<()>,
    ) -> Parse<()> {
        let mut first = true;
        while let Some((key, escaped)) = self.member_start(first)? {
            first = false;
            // An escaped key is none of ours: no member stepcast reads needs escaping. A `null`
            // member is as good as absent (as serde reads an `Option`).
            if escaped || self.b[self.i] == b'n' {
                self.skip_value()?
            } else {
                member(self, key)?
            }
        }
        Ok(())
    }

    /// What follows an object's `{` (`first`) or a member's value: the next member's name
    /// (its bytes between the quotes, and whether they hold escapes), its colon and the
    /// whitespace after it, the cursor then at the value; or the `}` ending the object
    /// (`None`, the cursor after it). The grammar between members, for [`Self::members`] and
    /// `Cursor::members_by_layout` (`layout.rs`) alike.
    #[inline(always)]
    pub(crate) fn member_start(&mut self, first: bool) -> Parse<Option<(&'a [u8], bool)>> {
        match self.peek()? {
            b'}' => {
                self.i += 1;
                return Ok(None);
            }
            b',' if !first => self.i += 1,
            _ if first => {}
            _ => return self.invalid("',' or '}' after a member"),
        }
        if self.peek()? != b'"' {
            return self.invalid("a member name");
        }
        let name = self.raw_string()?;
        self.expect(b':', "':' after a member name")?;
        self.ws()?;
        Ok(Some(name))
    }

    /// The bytes between the quotes of a string at the cursor, and whether they hold escapes.
    #[inline(always)]
    pub(crate) fn raw_string(&mut self) -> Parse<(&'a [u8], bool)> {
        debug_assert_eq!(self.b[self.i], b'"');
        let start = self.i + 1;
        let mut at = start;
        let mut escaped = false;
        // Most strings are short (member names, `"X"`, `"cpu_op"`): a plain loop finds their
        // end before `memchr` would have set up (15 % less time in string scanning), and
        // eight bytes at a time before a loop per byte (1–2 % of the Kineto reader); the
        // last few bytes of the input, byte by byte.
        let short_end = (start + SHORT_STRING).min(self.b.len());
        while let Some(&[b0, b1, b2, b3, b4, b5, b6, b7]) = self.b.get(at..at + 8)
            && at < short_end
        {
            let word = u64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]);
            match quote_or_backslash(word) {
                8 => at += 8,
                k => {
                    at += k;
                    if self.b[at] == b'"' {
                        self.i = at + 1;
                        return Ok((&self.b[start..at], false));
                    }
                    break;
                }
            }
        }
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
    pub(crate) fn string(&mut self) -> Parse<Cow<'a, str>> {
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

    /// [`Self::string`], taken from `known` when it is one of them: most `ph` and `cat`
    /// values are, which saves a `from_utf8` call on each (0.5 ms of 78 on df_index_resolver).
    #[inline(always)]
    pub(crate) fn known_string(
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
    pub(crate) fn scalar_text(&mut self) -> Parse<Option<&'a [u8]>> {
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
    pub(crate) fn scalar(&mut self) -> Parse<&'a [u8]> {
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
    pub(crate) fn plain_micros_ns(&mut self, fraction: bool) -> Parse<Option<i64>> {
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
    pub(crate) fn plain_number(&mut self, fraction: bool) -> Parse<Option<PlainNumber>> {
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
    pub(crate) fn int(&mut self) -> Parse<Option<i64>> {
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
    pub(crate) fn micros(&mut self) -> Parse<Option<i64>> {
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

    pub(crate) fn skip_value(&mut self) -> Parse<()> {
        match self.peek()? {
            b'"' => self.raw_string().map(|_| ()),
            b'{' | b'[' => self.skip_container(),
            b'0'..=b'9' | b'-' => {
                // Most skipped values are integers (Kineto's `Ev Idx`, `cbid`, a kernel's
                // registers): digits up to a delimiter end one as `scalar` would end it,
                // without its per-byte classes. Anything else is `scalar`'s to read.
                let mut at = self.i + 1;
                while self.b.get(at).is_some_and(u8::is_ascii_digit) {
                    at += 1;
                }
                if let Some(b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') = self.b.get(at) {
                    self.i = at;
                    return Ok(());
                }
                self.scalar().map(|_| ())
            }
            _ => self.scalar().map(|_| ()),
        }
    }

    pub(crate) fn skip_container(&mut self) -> Parse<()> {
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

    /// The eight-at-a-time search for a quote or a backslash against a byte loop: every byte
    /// value at every position, after bytes that are neither (near misses included).
    #[test]
    fn quote_or_backslash_finds_what_a_byte_loop_finds() {
        let fill = [b'a', 0xa2, 0xdc, b'#', b']', 0x00, 0x22 ^ 0x01, 0x5c ^ 0x80];
        let mut checked = 0;
        for at in 0..8 {
            for byte in 0..=255u8 {
                for seed in 0..4usize {
                    let mut bytes = [0u8; 8];
                    for (k, b) in bytes.iter_mut().enumerate() {
                        *b = match k.cmp(&at) {
                            std::cmp::Ordering::Less => fill[(seed + k) % fill.len()],
                            std::cmp::Ordering::Equal => byte,
                            std::cmp::Ordering::Greater => [b'"', b'\\', b'x'][(seed + k) % 3],
                        };
                    }
                    let expected = bytes
                        .iter()
                        .position(|&b| b == b'"' || b == b'\\')
                        .unwrap_or(8);
                    assert_eq!(
                        quote_or_backslash(u64::from_le_bytes(bytes)),
                        expected,
                        "{bytes:?}"
                    );
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 8 * 256 * 4);
        assert_eq!(quote_or_backslash(u64::from_le_bytes(*b"abcdefgh")), 8);
    }

    /// Skipping a value that starts like a number ends where `scalar` ends it, or fails as it
    /// fails: the integer fast path changes nothing but the time.
    #[test]
    fn skipping_a_number_ends_where_scalar_ends() {
        for value in [
            "0", "-0", "7", "-12", "282", "1.5", "-1.5E-2", "1e3", "-", "12a", "1-2", "12true",
        ] {
            for after in ["", ",", "}", "]", " ", "\n", "\t", ":", "\"", "x", "."] {
                let text = format!("{value}{after}");
                let mut skipped = Cursor {
                    b: text.as_bytes(),
                    i: 0,
                };
                let mut scanned = Cursor {
                    b: text.as_bytes(),
                    i: 0,
                };
                let reference = scanned.scalar().map(|_| scanned.i);
                assert_eq!(
                    skipped.skip_value().map(|()| skipped.i),
                    reference,
                    "{text:?}"
                );
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
}
