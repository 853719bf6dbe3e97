//! The Chrome trace format's document: an object with a `traceEvents` array, or a bare array
//! of events, split into windows of events for a format's reader.
//!
//! Every Chrome-trace reader (Kineto, Horovod's timeline, TensorFlow's `Timeline`) walks the
//! same structure and shares its rules: the event array may end without its `]` at the end of
//! the file (the format allows it, and Horovod's timeline relies on it), but the end of the
//! file inside an event is an error, since that event was cut; other top-level members go to
//! the format (`Sink::member`), which parses or skips them; every error names the file and
//! where. The format reads the events themselves, several per call (`Sink::read_events`, on
//! the shared `chrome::cursor`).

use std::io::Read;
use std::path::Path;

use super::cursor::Incomplete;
use super::stream::{JsonStream, ReadElement, StreamError, line_column_in};
use crate::error::ReadError;

/// What a format does with the parts of a Chrome-trace document.
pub(crate) trait Sink {
    /// Reads the events at the start of `bytes` (after any whitespace), and the commas between
    /// them, while they fit, as `kineto::fast::read_events` does: the bytes taken (ending with
    /// an event) and how many events. `first_index` is the first one's position in the array.
    /// An error only when the first event does not fit or is invalid, having kept nothing.
    fn read_events(&mut self, bytes: &[u8], first_index: u64) -> Result<(usize, u64), Incomplete>;

    /// A top-level member other than `traceEvents`: parse it (`Document::parse_value`) or skip
    /// it (`Document::skip_value`), or refuse the file.
    fn member<R: Read>(
        &mut self,
        key: &str,
        document: &mut Document<'_, R>,
    ) -> Result<(), ReadError>;

    /// The event array ended with the file, without its `]`.
    fn unterminated(&mut self);
}

/// Whether an event array ended with its closing `]` or with the file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArrayEnd {
    Closed,
    EndOfFile,
}

/// Reads a document again from its start (decompressed), for the line of an error.
pub(crate) type Reread<'p> = Box<dyn Fn() -> std::io::Result<Box<dyn Read + 'p>> + 'p>;

pub(crate) struct Document<'p, R> {
    stream: JsonStream<R>,
    path: &'p Path,
    gzip: bool,
    events_seen: u64,
    saw_events: bool,
    /// How to read the document again, when the stream does not count lines.
    reread: Option<Reread<'p>>,
}

impl<'p, R: Read> Document<'p, R> {
    pub(crate) fn new(reader: R, path: &'p Path, gzip: bool) -> Self {
        Document {
            stream: JsonStream::new(reader),
            path,
            gzip,
            events_seen: 0,
            saw_events: false,
            reread: None,
        }
    }

    /// A document that can be read again from its start: its lines are counted only for a
    /// message, by reading it again, rather than as the stream moves (3 % of a Kineto ingest).
    pub(crate) fn rereadable(reader: R, path: &'p Path, gzip: bool, reread: Reread<'p>) -> Self {
        Document {
            stream: JsonStream::uncounted(reader),
            path,
            gzip,
            events_seen: 0,
            saw_events: false,
            reread: Some(reread),
        }
    }

    /// 1-based line and column of an offset the stream has reached. Where the stream no longer
    /// knows them, the document is read again; if that fails too (the file is gone), the
    /// line is given as 0 and the column as the byte offset plus one.
    fn line_column(&self, offset: u64) -> (u64, u64) {
        self.stream.line_column(offset).unwrap_or_else(|| {
            self.reread
                .as_ref()
                .and_then(|reread| reread().ok())
                .and_then(|reader| line_column_in(reader, offset).ok())
                .unwrap_or((0, offset + 1))
        })
    }

    /// Records in the event array so far.
    pub(crate) fn events_seen(&self) -> u64 {
        self.events_seen
    }

    /// Bytes read from the input so far (all of it, once [`Document::read`] returned).
    pub(crate) fn bytes_read(&self) -> u64 {
        self.stream.bytes_read()
    }

    /// Whether the top-level object's `traceEvents` was met before the member being read.
    pub(crate) fn saw_events(&self) -> bool {
        self.saw_events
    }

    /// The path that messages name.
    pub(crate) fn path(&self) -> &'p Path {
        self.path
    }

    /// Reads the document: a bare event array, or an object whose `traceEvents` member is
    /// one and whose other members go to [`Sink::member`].
    pub(crate) fn read(&mut self, sink: &mut impl Sink) -> Result<(), ReadError> {
        self.document(sink)
    }

    fn document(&mut self, sink: &mut impl Sink) -> Result<(), ReadError> {
        match self.peek("the start of the document")? {
            None => Err(ReadError::Empty {
                path: self.path.to_path_buf(),
            }),
            Some(b'[') => self.events(sink).map(|_| ()),
            Some(b'{') => self.object(sink),
            Some(_) => Err(self.not_json()),
        }
    }

    fn object(&mut self, sink: &mut impl Sink) -> Result<(), ReadError> {
        self.stream.bump();
        let mut keys: Vec<String> = Vec::new();
        loop {
            match self.peek("the top-level object")? {
                Some(b'}') => break,
                Some(b'"') => {}
                Some(_) | None => return Err(self.unexpected("a member name or '}'")),
            }
            let key: String = self.parse_value("a top-level member name")?;
            self.expect(b':', "':'", "the top-level object")?;
            if key == "traceEvents" {
                self.saw_events = true;
                if self.events(sink)? == ArrayEnd::EndOfFile {
                    // The array, and so the object around it, ended with the file.
                    return Ok(());
                }
            } else {
                sink.member(&key, self)?;
            }
            if keys.len() < 12 {
                keys.push(key);
            }
            match self.peek("the top-level object")? {
                Some(b',') => self.stream.bump(),
                Some(b'}') => {}
                _ => return Err(self.unexpected("',' or '}'")),
            }
        }
        if !self.saw_events {
            return Err(ReadError::NotATrace {
                path: self.path.to_path_buf(),
                detail: if keys.is_empty() {
                    "it is an empty object".to_string()
                } else {
                    format!(
                        "it has no `traceEvents` array (top-level members: {})",
                        keys.join(", ")
                    )
                },
            });
        }
        Ok(())
    }

    /// The event array, up to its `]` or, as the Chrome trace format allows, the end of the
    /// file after a whole event (or a comma after one). The end of the file inside an event
    /// is still an error: that event was cut.
    fn events(&mut self, sink: &mut impl Sink) -> Result<ArrayEnd, ReadError> {
        match self.peek("`traceEvents`")? {
            Some(b'[') => self.stream.bump(),
            _ => {
                return Err(ReadError::NotATrace {
                    path: self.path.to_path_buf(),
                    detail: "`traceEvents` is not an array".to_string(),
                });
            }
        }
        loop {
            // Built only for a message: formatting it per event would cost 3 % of ingest.
            let seen = self.events_seen;
            let context = || format!("`traceEvents` (after event #{seen})");
            match self.peek_or_end(context)? {
                Some(b']') => {
                    self.stream.bump();
                    return Ok(ArrayEnd::Closed);
                }
                Some(_) => {}
                None => {
                    sink.unterminated();
                    return Ok(ArrayEnd::EndOfFile);
                }
            }
            let index = self.events_seen;
            let mut read_events = 0;
            let read = self.stream.read_element(|bytes| {
                sink.read_events(bytes, index)
                    .map(|(used, count)| {
                        read_events = count;
                        used
                    })
                    .map_err(|error| match error {
                        Incomplete::NeedMore => ReadElement::NeedMore,
                        Incomplete::Invalid { at, expected } => {
                            ReadElement::Invalid { at, expected }
                        }
                    })
            });
            if let Err(error) = read {
                return Err(self.stream_error(error, &format!("event #{index}")));
            }
            self.events_seen += read_events;
            match self.peek_or_end(context)? {
                Some(b',') => self.stream.bump(),
                Some(b']') => {}
                None => {
                    sink.unterminated();
                    return Ok(ArrayEnd::EndOfFile);
                }
                _ => return Err(self.unexpected("',' or ']' between events")),
            }
        }
    }

    pub(crate) fn parse_value<T: for<'de> serde::Deserialize<'de>>(
        &mut self,
        context: &str,
    ) -> Result<T, ReadError> {
        let offset = self.stream.offset();
        let bytes = match self.stream.next_value() {
            Ok(bytes) => bytes,
            Err(e) => return Err(self.stream_error(e, context)),
        };
        // Member names and small header values: owned parsing is fine here.
        serde_json::from_slice::<T>(bytes).map_err(|e| {
            let (line, column) = self.line_column(offset);
            ReadError::Json {
                path: self.path.to_path_buf(),
                line,
                column,
                context: context.to_string(),
                message: e.to_string(),
            }
        })
    }

    pub(crate) fn skip_value(&mut self, key: &str) -> Result<(), ReadError> {
        let context = format!("member `{key}`");
        let offset = self.stream.offset();
        let bytes = match self.stream.next_value() {
            Ok(bytes) => bytes,
            Err(e) => return Err(self.stream_error(e, &context)),
        };
        // Validate what we skip, so a corrupt header is not mistaken for a whole file.
        serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
            .map(|_| ())
            .map_err(|e| {
                let (line, column) = self.line_column(offset);
                ReadError::Json {
                    path: self.path.to_path_buf(),
                    line,
                    column,
                    context,
                    message: e.to_string(),
                }
            })
    }

    fn peek(&mut self, context: &str) -> Result<Option<u8>, ReadError> {
        if context == "the start of the document" {
            return match self.stream.peek() {
                Ok(byte) => Ok(byte),
                Err(e) => Err(self.stream_error(e, context)),
            };
        }
        self.peek_with(|| context.to_string())
    }

    /// The next byte after whitespace, `None` at the end of input.
    fn peek_or_end(&mut self, context: impl FnOnce() -> String) -> Result<Option<u8>, ReadError> {
        match self.stream.peek() {
            Ok(byte) => Ok(byte),
            Err(e) => {
                let context = context();
                Err(self.stream_error(e, &context))
            }
        }
    }

    /// The next byte after whitespace; the end of input is an error in `context`.
    fn peek_with(&mut self, context: impl FnOnce() -> String) -> Result<Option<u8>, ReadError> {
        match self.stream.peek() {
            Ok(Some(b)) => Ok(Some(b)),
            Ok(None) => Err(ReadError::Truncated {
                path: self.path.to_path_buf(),
                context: context(),
                offset: self.stream.offset(),
            }),
            Err(e) => {
                let context = context();
                Err(self.stream_error(e, &context))
            }
        }
    }

    fn expect(&mut self, byte: u8, what: &'static str, context: &str) -> Result<(), ReadError> {
        self.stream
            .expect(byte, what)
            .map_err(|e| self.stream_error(e, context))
    }

    fn stream_error(&self, error: StreamError, context: &str) -> ReadError {
        let path = self.path.to_path_buf();
        match error {
            StreamError::Io(cause) if self.gzip => ReadError::Gzip { path, cause },
            StreamError::Io(cause) => ReadError::Io { path, cause },
            StreamError::Truncated { offset } => ReadError::Truncated {
                path,
                context: context.to_string(),
                offset,
            },
            StreamError::Invalid { offset, expected } => {
                let (line, column) = self.line_column(offset);
                ReadError::Json {
                    path,
                    line,
                    column,
                    context: context.to_string(),
                    message: format!("expected {expected}"),
                }
            }
            StreamError::Unexpected {
                offset,
                byte,
                expected,
            } => {
                let (line, column) = self.line_column(offset);
                ReadError::Json {
                    path,
                    line,
                    column,
                    context: context.to_string(),
                    message: format!("expected {expected}, found {}", show_byte(byte)),
                }
            }
        }
    }

    fn unexpected(&mut self, expected: &'static str) -> ReadError {
        let offset = self.stream.offset();
        let found = match self.stream.peek() {
            Ok(Some(b)) => show_byte(b),
            _ => "the end of the file".to_string(),
        };
        let (line, column) = self.line_column(offset);
        ReadError::Json {
            path: self.path.to_path_buf(),
            line,
            column,
            context: "the document structure".to_string(),
            message: format!("expected {expected}, found {found}"),
        }
    }

    fn not_json(&mut self) -> ReadError {
        let offset = self.stream.offset();
        let found = match self.stream.peek() {
            Ok(Some(b)) => show_byte(b),
            _ => "nothing".to_string(),
        };
        let _ = offset;
        ReadError::NotJson {
            path: self.path.to_path_buf(),
            found,
            format: if self.gzip {
                "gzip-compressed non-JSON"
            } else {
                "non-JSON"
            },
        }
    }
}

fn show_byte(byte: u8) -> String {
    if byte.is_ascii_graphic() {
        format!("'{}'", byte as char)
    } else {
        format!("byte 0x{byte:02x}")
    }
}
