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
pub(crate) mod inputs;
mod raw;

use std::borrow::Cow;
use std::io::Read;
use std::path::Path;

use crate::chrome::cursor::Incomplete;
pub(crate) use crate::chrome::document::Reread;
use crate::chrome::document::{Document, Sink};
use crate::error::ReadError;
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
    read_document(
        Document::new(reader, path, gzip),
        path,
        expected_bytes,
        None,
    )
}

/// [`read_sized`], for input that `reread` reads again from its start (decompressed) where a
/// message needs the line of an error.
/// What `--step-range` makes steps of in a Kineto trace ([`Trace::step_range_events`]).
pub const STEP_RANGE_EVENTS: &str = "host ops and annotations";

pub(crate) fn read_rereadable<'p, R: Read>(
    reader: R,
    path: &'p Path,
    gzip: bool,
    expected_bytes: Option<u64>,
    reread: Reread<'p>,
    step_range: Option<&regex::Regex>,
) -> Result<Trace, ReadError> {
    read_document(
        Document::rereadable(reader, path, gzip, reread),
        path,
        expected_bytes,
        step_range,
    )
}

fn read_document<R: Read>(
    mut document: Document<'_, R>,
    path: &Path,
    expected_bytes: Option<u64>,
    step_range: Option<&regex::Regex>,
) -> Result<Trace, ReadError> {
    let mut builder = TraceBuilder::default();
    builder.steps_from_ranges(step_range);
    if let Some(bytes) = expected_bytes {
        builder.expect_bytes(bytes);
    }
    document.read(&mut KinetoSink {
        builder: &mut builder,
        schema: None,
        layouts: fast::Layouts::default(),
    })?;
    let input_bytes = document.bytes_read();
    let events_seen = document.events_seen();
    if events_seen == 0 {
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
            records: events_seen,
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

/// The Kineto reader's part of a Chrome-trace document: its events go to the builder, its
/// header members (`deviceProperties`, `baseTimeNanoseconds`, `distributedInfo`) too, and a
/// PyTorch Execution Trace (`schema`, then `nodes`) is refused.
struct KinetoSink<'b> {
    builder: &'b mut TraceBuilder,
    schema: Option<String>,
    /// What the events so far say follows each member, for the next events' reading.
    layouts: fast::Layouts,
}

impl Sink for KinetoSink<'_> {
    #[inline]
    fn read_events(&mut self, bytes: &[u8], first_index: u64) -> Result<(usize, u64), Incomplete> {
        let mut count = 0;
        let builder = &mut *self.builder;
        let used = fast::read_events(bytes, &mut self.layouts, |event| {
            builder.push(event, (first_index + count) as u32)?;
            count += 1;
            Ok(())
        })?;
        Ok((used, count))
    }

    fn member<R: Read>(
        &mut self,
        key: &str,
        document: &mut Document<'_, R>,
    ) -> Result<(), ReadError> {
        match key {
            "deviceProperties" => {
                let devices: Option<Vec<RawDevice>> = document.parse_value("deviceProperties")?;
                self.builder.devices(devices.unwrap_or_default());
            }
            "baseTimeNanoseconds" => {
                let base: Option<raw::Int> = document.parse_value("baseTimeNanoseconds")?;
                self.builder.base_time(base.and_then(raw::Int::get));
            }
            "distributedInfo" => {
                let info: Option<RawDistributed> = document.parse_value("distributedInfo")?;
                self.builder.distributed(info);
            }
            "host_name" => {
                let name: Option<serde_json::Value> = document.parse_value("host_name")?;
                self.builder
                    .host_name(name.and_then(|v| v.as_str().map(str::to_string)));
            }
            "schema" => {
                let value: serde_json::Value = document.parse_value("schema")?;
                self.schema = Some(
                    value
                        .as_str()
                        .map_or_else(|| value.to_string(), str::to_string),
                );
            }
            "nodes" if self.schema.is_some() && !document.saw_events() => {
                return Err(ReadError::ExecutionTrace {
                    path: document.path().to_path_buf(),
                    schema: self.schema.take().unwrap_or_default(),
                });
            }
            _ => document.skip_value(key)?,
        }
        Ok(())
    }

    fn unterminated(&mut self) {
        self.builder.unterminated();
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
