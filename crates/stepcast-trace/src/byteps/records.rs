//! The records of a BytePS communication trace (`comm.json`), read with the shared Chrome-trace
//! tokenizer.

use std::path::Path;

use crate::chrome::cursor::{Cursor, Incomplete};
use crate::chrome::records::read_records;
use crate::error::ReadError;

/// One element of `traceEvents`, with the members `BytePSGlobal::EmitTrace` writes.
#[derive(Clone, Debug, Default)]
pub struct Record {
    pub ph: String,
    pub name: Option<String>,
    /// `"Comm.<tensor>"`: a string (a number is kept as its text).
    pub pid: Option<String>,
    /// `"total"`, or the partition's key as text.
    pub tid: Option<String>,
    pub ts_us: Option<i64>,
    pub dur_us: Option<i64>,
}

pub struct Parsed {
    pub records: Vec<Record>,
    pub unterminated: bool,
}

/// A string's content or a number's text, as an owned string (`None` for other values).
fn text(c: &mut Cursor<'_>) -> Result<Option<String>, Incomplete> {
    Ok(c.scalar_text()?
        .map(|bytes| String::from_utf8_lossy(bytes).trim().to_string()))
}

fn record(c: &mut Cursor<'_>) -> Result<Record, Incomplete> {
    let mut record = Record::default();
    c.expect(b'{', "an event object")?;
    c.members(|c, key| {
        match key {
            b"ph" => record.ph = c.string()?.into_owned(),
            b"name" => record.name = Some(c.string()?.into_owned()),
            b"pid" => record.pid = text(c)?,
            b"tid" => record.tid = text(c)?,
            b"ts" => record.ts_us = c.int()?,
            b"dur" => record.dur_us = c.int()?,
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    Ok(record)
}

/// Reads every record of a `comm.json` in memory.
pub fn parse(content: &[u8], path: &Path) -> Result<Parsed, ReadError> {
    let read = read_records(content, path, record)?;
    Ok(Parsed {
        records: read.records,
        unterminated: read.unterminated,
    })
}
