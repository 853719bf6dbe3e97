//! Splits a JSON document into top-level values without holding the whole document in memory.
//!
//! A Kineto file is one object whose `traceEvents` array holds nearly all of its bytes. We read
//! the input in chunks, find the extent of one value at a time (an array element, or an object
//! member's value), and hand that slice to `serde_json`, which then borrows strings from it.
//! Peak memory is the largest single value plus one chunk, not the file: a 1 GB trace is ingested
//! in a few megabytes of buffer. The scanner only tracks nesting and strings; `serde_json`
//! validates every value it is given.

use std::io::Read;

/// Why the document could not be split.
#[derive(Debug)]
pub enum StreamError {
    Io(std::io::Error),
    /// The input ended inside a value.
    Truncated {
        offset: u64,
    },
    /// A byte that cannot start or continue a value here.
    Unexpected {
        offset: u64,
        byte: u8,
        expected: &'static str,
    },
    /// A value the element reader rejected.
    Invalid {
        offset: u64,
        expected: &'static str,
    },
}

/// What an element reader reports when it cannot read an element from the bytes at hand.
pub enum ReadElement {
    /// The bytes end inside the element.
    NeedMore,
    /// Invalid at this offset from the element's start.
    Invalid { at: usize, expected: &'static str },
}

const CHUNK: usize = 1 << 20;

/// A forward-only window over a byte stream.
pub struct JsonStream<R> {
    reader: R,
    /// The window is `buf[..filled]`. `buf` keeps its length between reads (only grows for an
    /// element longer than the window): shrinking it and growing it back zeroed a megabyte per
    /// read (1 % of ingest).
    buf: Vec<u8>,
    filled: usize,
    /// Start of unconsumed bytes in `buf`.
    pos: usize,
    /// Absolute offset of `buf[0]` in the stream.
    base: u64,
    eof: bool,
    /// Newlines in bytes already discarded, for line numbers in messages; `None` where they
    /// are not counted because the document can be read again for a message
    /// ([`JsonStream::uncounted`]).
    discarded_lines: Option<u64>,
}

impl<R: Read> JsonStream<R> {
    pub fn new(reader: R) -> Self {
        JsonStream {
            reader,
            buf: Vec::new(),
            filled: 0,
            pos: 0,
            base: 0,
            eof: false,
            discarded_lines: Some(0),
        }
    }

    /// A stream that does not count the newlines of the bytes it discards (3 % of a Kineto
    /// ingest): [`JsonStream::line_column`] then knows only offsets in a window that still
    /// starts at the document's start, and a message counts the lines by reading the document
    /// again ([`line_column_in`]).
    pub fn uncounted(reader: R) -> Self {
        JsonStream {
            discarded_lines: None,
            ..JsonStream::new(reader)
        }
    }

    /// Absolute offset of the next unconsumed byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Total bytes read from the underlying reader so far.
    pub fn bytes_read(&self) -> u64 {
        self.base + self.filled as u64
    }

    /// 1-based line and column of an absolute offset still in the window (or just consumed);
    /// `None` for an [`uncounted`](JsonStream::uncounted) stream past its first window.
    pub fn line_column(&self, offset: u64) -> Option<(u64, u64)> {
        let discarded_lines = if self.base == 0 {
            0
        } else {
            self.discarded_lines?
        };
        let end = offset.saturating_sub(self.base).min(self.filled as u64) as usize;
        let window = &self.buf[..end];
        let lines_in_window = memchr::memchr_iter(b'\n', window).count() as u64;
        let column = match memchr::memrchr(b'\n', window) {
            Some(nl) => (end - nl) as u64,
            None => end as u64 + 1,
        };
        Some((discarded_lines + lines_in_window + 1, column))
    }

    /// Reads another chunk; returns false at end of input.
    fn fill(&mut self) -> Result<bool, StreamError> {
        if self.eof {
            return Ok(false);
        }
        // Drop consumed bytes once they dominate the buffer, so it never grows with the file.
        if self.pos > CHUNK {
            if let Some(lines) = &mut self.discarded_lines {
                *lines += memchr::memchr_iter(b'\n', &self.buf[..self.pos]).count() as u64;
            }
            self.buf.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.base += self.pos as u64;
            self.pos = 0;
        }
        let old_len = self.filled;
        let end = old_len + CHUNK;
        if self.buf.len() < end {
            self.buf.resize(end, 0);
        }
        while self.filled < end {
            match self.reader.read(&mut self.buf[self.filled..end]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(StreamError::Io(e)),
            }
        }
        Ok(self.filled > old_len)
    }

    /// Skips whitespace and returns the next byte without consuming it (`None` at end of input).
    pub fn peek(&mut self) -> Result<Option<u8>, StreamError> {
        loop {
            while self.pos < self.filled {
                let byte = self.buf[self.pos];
                if matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                    self.pos += 1;
                } else {
                    return Ok(Some(byte));
                }
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Consumes `byte` (after whitespace) or fails naming what was expected.
    pub fn expect(&mut self, byte: u8, expected: &'static str) -> Result<(), StreamError> {
        match self.peek()? {
            Some(b) if b == byte => {
                self.pos += 1;
                Ok(())
            }
            Some(b) => Err(StreamError::Unexpected {
                offset: self.offset(),
                byte: b,
                expected,
            }),
            None => Err(StreamError::Truncated {
                offset: self.offset(),
            }),
        }
    }

    /// Consumes one byte that `peek` returned.
    pub fn bump(&mut self) {
        self.pos += 1;
    }

    /// Reads the next element (after whitespace) with `read`, which is given the unconsumed
    /// bytes and returns how many it used. `read` must have no effect when it fails: it is
    /// called again, on more bytes, when the element did not fit in the window.
    pub fn read_element(
        &mut self,
        mut read: impl FnMut(&[u8]) -> Result<usize, ReadElement>,
    ) -> Result<(), StreamError> {
        if self.peek()?.is_none() {
            return Err(StreamError::Truncated {
                offset: self.offset(),
            });
        }
        loop {
            match read(&self.buf[self.pos..self.filled]) {
                Ok(used) => {
                    self.pos += used;
                    return Ok(());
                }
                Err(ReadElement::NeedMore) => {
                    if !self.fill()? {
                        return Err(StreamError::Truncated {
                            offset: self.bytes_read(),
                        });
                    }
                }
                Err(ReadElement::Invalid { at, expected }) => {
                    return Err(StreamError::Invalid {
                        offset: self.offset() + at as u64,
                        expected,
                    });
                }
            }
        }
    }

    /// Finds the next complete value (after whitespace), consumes it and returns its bytes.
    pub fn next_value(&mut self) -> Result<&[u8], StreamError> {
        if self.peek()?.is_none() {
            return Err(StreamError::Truncated {
                offset: self.offset(),
            });
        }
        self.next_value_from(self.pos, self.pos, 0)
    }

    fn next_value_from(
        &mut self,
        start: usize,
        resume: usize,
        depth: u32,
    ) -> Result<&[u8], StreamError> {
        let (mut start, mut resume, mut depth) = (start, resume, depth);
        loop {
            match self.scan_from(resume, depth) {
                Scan::Done(end) => {
                    self.pos = end;
                    return Ok(&self.buf[start..end]);
                }
                Scan::NeedMore {
                    resume: r,
                    depth: d,
                } => {
                    let before = self.pos;
                    if !self.fill()? {
                        return Err(StreamError::Truncated {
                            offset: self.bytes_read(),
                        });
                    }
                    let shift = before - self.pos;
                    start -= shift;
                    resume = r - shift;
                    depth = d;
                }
                Scan::Bad(at, byte) => {
                    return Err(StreamError::Unexpected {
                        offset: self.base + at as u64,
                        byte,
                        expected: "a JSON value",
                    });
                }
            }
        }
    }

    /// Scans from `at` with `depth` open containers. At depth 0, `at` must start a value.
    /// Strings are always scanned whole, so a resume point never falls inside one.
    fn scan_from(&self, mut at: usize, mut depth: u32) -> Scan {
        let buf = &self.buf[..self.filled];
        loop {
            if at >= buf.len() {
                return Scan::NeedMore { resume: at, depth };
            }
            let byte = buf[at];
            match byte {
                b'"' => match string_end(buf, at + 1) {
                    Some(end) => {
                        at = end;
                        if depth == 0 {
                            return Scan::Done(at);
                        }
                    }
                    None => return Scan::NeedMore { resume: at, depth },
                },
                b'{' | b'[' => {
                    depth += 1;
                    at += 1;
                }
                b'}' | b']' => {
                    if depth == 0 {
                        return Scan::Bad(at, byte);
                    }
                    depth -= 1;
                    at += 1;
                    if depth == 0 {
                        return Scan::Done(at);
                    }
                }
                _ if depth > 0 => {
                    // Skip to the next byte that can change the nesting.
                    match memchr::memchr3(b'"', b'{', b'}', &buf[at..]) {
                        Some(off) => {
                            let next_bracket = memchr::memchr2(b'[', b']', &buf[at..at + off]);
                            at += next_bracket.unwrap_or(off);
                        }
                        None => {
                            let tail = &buf[at..];
                            match memchr::memchr2(b'[', b']', tail) {
                                Some(off) => at += off,
                                None => {
                                    return Scan::NeedMore {
                                        resume: buf.len(),
                                        depth,
                                    };
                                }
                            }
                        }
                    }
                }
                _ => {
                    // A scalar at top level: number, true, false, null.
                    let mut end = at;
                    while end < buf.len()
                        && !matches!(buf[end], b',' | b']' | b'}' | b' ' | b'\n' | b'\r' | b'\t')
                    {
                        end += 1;
                    }
                    if end == buf.len() && !self.eof {
                        return Scan::NeedMore { resume: at, depth };
                    }
                    if end == at {
                        return Scan::Bad(at, byte);
                    }
                    return Scan::Done(end);
                }
            }
        }
    }
}

/// 1-based line and column of `offset` in the document `reader` reads from its start, as
/// [`JsonStream::line_column`] gives them.
pub fn line_column_in(mut reader: impl Read, offset: u64) -> std::io::Result<(u64, u64)> {
    let mut buf = vec![0u8; CHUNK];
    let (mut at, mut lines, mut last_newline) = (0u64, 0u64, None);
    while at < offset {
        let want = (offset - at).min(CHUNK as u64) as usize;
        let n = match reader.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        if let Some(nl) = memchr::memrchr(b'\n', &buf[..n]) {
            last_newline = Some(at + nl as u64);
        }
        at += n as u64;
    }
    let column = match last_newline {
        Some(nl) => at - nl,
        None => at + 1,
    };
    Ok((lines + 1, column))
}

enum Scan {
    Done(usize),
    NeedMore { resume: usize, depth: u32 },
    Bad(usize, u8),
}

/// Index just past the closing quote of a string whose content starts at `at`.
fn string_end(buf: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let off = memchr::memchr2(b'"', b'\\', &buf[at..])?;
        at += off;
        if buf[at] == b'"' {
            return Some(at + 1);
        }
        // A backslash escapes the next byte, whatever it is.
        at += 2;
        if at > buf.len() {
            return None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(doc: &str) -> Vec<String> {
        let mut stream = JsonStream::new(doc.as_bytes());
        let mut out = Vec::new();
        stream.expect(b'[', "[").expect("array");
        loop {
            if stream.peek().expect("peek") == Some(b']') {
                break;
            }
            let v = stream.next_value().expect("value");
            out.push(String::from_utf8(v.to_vec()).expect("utf8"));
            if stream.peek().expect("peek") == Some(b',') {
                stream.bump();
            }
        }
        out
    }

    #[test]
    fn splits_nested_values_and_strings_with_brackets() {
        let doc = r#"[ {"a": [1, {"b": "x]}\"y"}]}, 12.5e3, "s\\", [[]], true ]"#;
        assert_eq!(
            values(doc),
            vec![
                r#"{"a": [1, {"b": "x]}\"y"}]}"#,
                "12.5e3",
                r#""s\\""#,
                "[[]]",
                "true"
            ]
        );
    }

    /// Gives at most `piece` bytes per read, as a decompressor may.
    struct Pieces<'a> {
        bytes: &'a [u8],
        piece: usize,
    }

    impl Read for Pieces<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.piece.min(out.len()).min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// Several windows' worth of values, one longer than a window, read in odd-sized pieces:
    /// every value whole, at its offset, with its line.
    #[test]
    fn values_across_many_windows() {
        let long = format!("\"{}\"", "x".repeat(CHUNK + CHUNK / 2));
        let mut doc = String::from("[");
        let mut expected = Vec::new();
        for k in 0..400_000u32 {
            if k == 250_000 {
                expected.push((doc.len() as u64, long.clone()));
                doc.push_str(&long);
                doc.push_str(",\n");
            }
            let value = format!("{{\"k\": {k}}}");
            expected.push((doc.len() as u64, value.clone()));
            doc.push_str(&value);
            doc.push_str(if k % 3 == 0 { ",\n" } else { ", " });
        }
        doc.push_str("0]");
        expected.push(((doc.len() - 2) as u64, "0".to_string()));
        assert!(doc.len() > 4 * CHUNK);
        let mut stream = JsonStream::new(Pieces {
            bytes: doc.as_bytes(),
            piece: 65_537,
        });
        stream.expect(b'[', "[").expect("array");
        let (mut line, mut line_counted_to) = (1, 0);
        for (k, (offset, value)) in expected.iter().enumerate() {
            assert!(stream.peek().expect("peek").is_some());
            assert_eq!(stream.offset(), *offset);
            if k % 1000 == 0 {
                line += doc[line_counted_to..*offset as usize].matches('\n').count() as u64;
                line_counted_to = *offset as usize;
                assert_eq!(stream.line_column(*offset).map(|(l, _)| l), Some(line));
                let again = line_column_in(doc.as_bytes(), *offset).expect("read again");
                assert_eq!(Some(again), stream.line_column(*offset));
            }
            assert_eq!(stream.next_value().expect("value"), value.as_bytes());
            if stream.peek().expect("peek") == Some(b',') {
                stream.bump();
            }
        }
        assert_eq!(stream.peek().expect("peek"), Some(b']'));
        assert_eq!(stream.bytes_read(), doc.len() as u64);
    }

    #[test]
    fn truncated_value_is_an_error() {
        let mut stream = JsonStream::new(&br#"[{"a": [1, 2"#[..]);
        stream.expect(b'[', "[").expect("array");
        assert!(matches!(
            stream.next_value(),
            Err(StreamError::Truncated { .. })
        ));
    }
}
