//! PyTorch profiler (Kineto) Chrome-trace JSON, every era of it.
//!
//! Handled: the top-level object and the bare top-level array; 2021 category names (`Operator`,
//! `Runtime`, `Kernel`, `Memcpy`, flow `async`) and today's (`cpu_op`, `cuda_runtime`, `kernel`,
//! `gpu_memcpy`, flows `ac2g` / `async_cpu_to_gpu` / `async_gpu`); correlation ids taken from
//! `args` or recovered from flow events; `cuda_sync` events; timestamps with nanosecond
//! fractions; 64-bit integer args; ROCm (`hip*` calls under CUDA category names); driver-API
//! launches; MTIA device events; CUPTI range-profiler records (device work); CPU-only traces;
//! an event array left without its `]` at the end of the file, as the Chrome trace format
//! allows. A PyTorch Execution Trace, and a Chrome-trace file of another tool (nothing in it
//! understood: `clues.rs`), are recognized and named in the error.

mod build;
mod clues;
mod fast;
mod inputs;
mod raw;

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use crate::error::ReadError;
use crate::json_stream::{JsonStream, ReadElement, StreamError};
use crate::model::Trace;
pub use build::MAX_DUR_NS;
use build::TraceBuilder;
use raw::{RawDevice, RawDistributed};

/// Reads a Kineto trace from an uncompressed JSON byte stream. `path` is used in messages only.
pub fn read<R: Read>(reader: R, path: &Path, gzip: bool) -> Result<Trace, ReadError> {
    read_sized(reader, path, gzip, None)
}

/// [`read`], told about how many bytes of JSON to expect (a hint: the result does not depend
/// on it), so that the event table is allocated once rather than grown.
pub fn read_sized<R: Read>(
    reader: R,
    path: &Path,
    gzip: bool,
    expected_bytes: Option<u64>,
) -> Result<Trace, ReadError> {
    let mut reader = Reader {
        stream: JsonStream::new(reader),
        path,
        gzip,
        events_seen: 0,
    };
    let mut builder = TraceBuilder::default();
    if let Some(bytes) = expected_bytes {
        builder.expect_bytes(bytes);
    }
    reader.document(&mut builder)?;
    let input_bytes = reader.stream.bytes_read();
    if reader.events_seen == 0 {
        return Err(ReadError::NoEvents {
            path: path.to_path_buf(),
        });
    }
    if builder.kept_events() == 0 {
        // Replaying nothing would report a perfect fidelity for a file that was not read.
        let skipped = builder
            .top_skips(2)
            .iter()
            .map(|(reason, count)| format!("{count} {reason}"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(ReadError::NothingUnderstood {
            path: path.to_path_buf(),
            records: reader.events_seen,
            skipped,
            looks_like: match builder.lookalike() {
                Some(tool) => format!(
                    "it looks like {}, which stepcast does not read",
                    tool.describe()
                ),
                None => "it is not a PyTorch profiler (Kineto) trace".to_string(),
            },
        });
    }
    if let Some((start_ns, end_ns)) = builder.span_ns()
        && end_ns - start_ns > MAX_SPAN_NS
    {
        return Err(ReadError::AbsurdSpan {
            path: path.to_path_buf(),
            days: (end_ns - start_ns) / (86_400 * 1_000_000_000),
        });
    }
    Ok(builder.finish(input_bytes))
}

/// The longest profiled window taken: 2^50 ns, 13 days. Events further apart mean a corrupt
/// timestamp; replaying them would stretch the window across it.
const MAX_SPAN_NS: i64 = 1 << 50;

/// Whether an event array ended with its closing `]` or with the file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArrayEnd {
    Closed,
    EndOfFile,
}

struct Reader<'p, R> {
    stream: JsonStream<R>,
    path: &'p Path,
    gzip: bool,
    events_seen: u64,
}

impl<R: Read> Reader<'_, R> {
    fn document(&mut self, builder: &mut TraceBuilder) -> Result<(), ReadError> {
        match self.peek("the start of the document")? {
            None => Err(ReadError::Empty {
                path: self.path.to_path_buf(),
            }),
            Some(b'[') => self.events(builder).map(|_| ()),
            Some(b'{') => self.object(builder),
            Some(_) => Err(self.not_json()),
        }
    }

    fn object(&mut self, builder: &mut TraceBuilder) -> Result<(), ReadError> {
        self.stream.bump();
        let mut keys: Vec<String> = Vec::new();
        let mut schema: Option<String> = None;
        let mut saw_events = false;
        loop {
            match self.peek("the top-level object")? {
                Some(b'}') => break,
                Some(b'"') => {}
                Some(_) | None => return Err(self.unexpected("a member name or '}'")),
            }
            let key: String = self.parse_value("a top-level member name")?;
            self.expect(b':', "':'", "the top-level object")?;
            match key.as_str() {
                "traceEvents" => {
                    saw_events = true;
                    if self.events(builder)? == ArrayEnd::EndOfFile {
                        // The array, and so the object around it, ended with the file.
                        return Ok(());
                    }
                }
                "deviceProperties" => {
                    let devices: Option<Vec<RawDevice>> = self.parse_value("deviceProperties")?;
                    builder.devices(devices.unwrap_or_default());
                }
                "baseTimeNanoseconds" => {
                    let base: Option<raw::Int> = self.parse_value("baseTimeNanoseconds")?;
                    builder.base_time(base.and_then(raw::Int::get));
                }
                "distributedInfo" => {
                    let info: Option<RawDistributed> = self.parse_value("distributedInfo")?;
                    builder.distributed(info);
                }
                "schema" => {
                    let value: serde_json::Value = self.parse_value("schema")?;
                    schema = Some(
                        value
                            .as_str()
                            .map_or_else(|| value.to_string(), str::to_string),
                    );
                }
                "nodes" if schema.is_some() && !saw_events => {
                    return Err(ReadError::ExecutionTrace {
                        path: self.path.to_path_buf(),
                        schema: schema.unwrap_or_default(),
                    });
                }
                _ => {
                    self.skip_value(&key)?;
                }
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
        if !saw_events {
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
    fn events(&mut self, builder: &mut TraceBuilder) -> Result<ArrayEnd, ReadError> {
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
                    builder.unterminated();
                    return Ok(ArrayEnd::EndOfFile);
                }
            }
            let index = self.events_seen;
            let mut read_events = 0;
            let read = self.stream.read_element(|bytes| {
                read_events = 0;
                fast::read_events(bytes, |event| {
                    builder.push(event, (index + read_events) as u32)?;
                    read_events += 1;
                    Ok(())
                })
                .map_err(|error| match error {
                    fast::Incomplete::NeedMore => ReadElement::NeedMore,
                    fast::Incomplete::Invalid { at, expected } => {
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
                    builder.unterminated();
                    return Ok(ArrayEnd::EndOfFile);
                }
                _ => return Err(self.unexpected("',' or ']' between events")),
            }
        }
    }

    fn parse_value<T: for<'de> serde::Deserialize<'de>>(
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
            let (line, column) = self.stream.line_column(offset);
            ReadError::Json {
                path: self.path.to_path_buf(),
                line,
                column,
                context: context.to_string(),
                message: e.to_string(),
            }
        })
    }

    fn skip_value(&mut self, key: &str) -> Result<(), ReadError> {
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
                let (line, column) = self.stream.line_column(offset);
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
                let (line, column) = self.stream.line_column(offset);
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
                let (line, column) = self.stream.line_column(offset);
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
        let (line, column) = self.stream.line_column(offset);
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

/// Lowercase category name, borrowed when already lowercase.
fn lower(cat: &str) -> Cow<'_, str> {
    if cat.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(cat.to_ascii_lowercase())
    } else {
        Cow::Borrowed(cat)
    }
}
