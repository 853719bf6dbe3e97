//! Every event of a Chrome-trace document held in memory, each read by a format's own record
//! parser: what the smaller Chrome-trace readers share (Horovod's and BytePS's communication
//! timelines, TensorFlow's `Timeline`, MXNet's profile), where Kineto streams its events
//! itself.

use std::io::Read;
use std::path::Path;

use super::cursor::{Cursor, Incomplete};
use super::document::{Document, Sink};
use crate::error::ReadError;

/// The events of a document, in file order.
pub(crate) struct Records<T> {
    pub records: Vec<T>,
    /// The event array ended with the file, without its `]` (as the format allows).
    pub unterminated: bool,
}

struct RecordSink<T> {
    record: fn(&mut Cursor<'_>) -> Result<T, Incomplete>,
    records: Vec<T>,
    unterminated: bool,
}

impl<T> Sink for RecordSink<T> {
    fn read_events(&mut self, bytes: &[u8], _: u64) -> Result<(usize, u64), Incomplete> {
        let mut used = 0;
        let mut count = 0;
        loop {
            let mut c = Cursor { b: bytes, i: used };
            if count > 0 {
                if c.peek() != Ok(b',') {
                    return Ok((used, count));
                }
                c.i += 1;
            }
            match (self.record)(&mut c) {
                Ok(record) => {
                    self.records.push(record);
                    used = c.i;
                    count += 1;
                }
                Err(error) if count == 0 => return Err(error),
                Err(_) => return Ok((used, count)),
            }
        }
    }

    fn member<R: Read>(
        &mut self,
        key: &str,
        document: &mut Document<'_, R>,
    ) -> Result<(), ReadError> {
        document.skip_value(key)
    }

    fn unterminated(&mut self) {
        self.unterminated = true;
    }
}

/// Reads every event of the document `content` (the file `path`) with `record`; other
/// top-level members are skipped. A document without any event is an error naming the file.
pub(crate) fn read_records<T>(
    content: &[u8],
    path: &Path,
    record: fn(&mut Cursor<'_>) -> Result<T, Incomplete>,
) -> Result<Records<T>, ReadError> {
    let mut sink = RecordSink {
        record,
        records: Vec::new(),
        unterminated: false,
    };
    // The content is in memory: an error's line is counted there, not as the window moves.
    let reread: super::document::Reread<'_> = Box::new(move || Ok(Box::new(content)));
    Document::rereadable(content, path, false, reread).read(&mut sink)?;
    if sink.records.is_empty() {
        return Err(ReadError::NoEvents {
            path: path.to_path_buf(),
        });
    }
    Ok(Records {
        records: sink.records,
        unterminated: sink.unterminated,
    })
}
