//! The records of an MXNet profiler trace, read with the shared Chrome-trace tokenizer.
//!
//! MXNet writes `pid` (a category's `std::hash` of its name) and `tid` (`std::hash` of a
//! `std::thread::id`) as `size_t`: 64-bit unsigned, often beyond `i64`. They are read as `u64`,
//! never wrapped; one that is not an unsigned integer is `None`.

use std::path::Path;

use crate::chrome::cursor::{Cursor, Incomplete, Parse, as_str};
use crate::chrome::records::read_records;
use crate::error::ReadError;

/// One element of `traceEvents`, with the members MXNet's `ProfileStat::EmitSubEvent` and
/// `Profiler::EmitPid` write.
#[derive(Clone, Debug, Default)]
pub struct Record {
    pub ph: String,
    pub name: Option<String>,
    /// `cat`: `operator`, `MXNET_C_API`, `Device Storage`, or a user domain's name.
    pub cat: Option<String>,
    pub pid: Option<u64>,
    pub tid: Option<u64>,
    pub ts_us: Option<i64>,
    /// `dur` of an `X` record (MXNet writes none; read should one appear).
    pub dur_us: Option<i64>,
    /// The async id of `b`/`e` records (the thread's hash).
    pub id: Option<u64>,
    /// `args.name`: a process's name (`M`).
    pub arg_name: Option<String>,
    /// A counter's value (`C`): the first integer member of `args`.
    pub counter: Option<i64>,
}

/// An unsigned 64-bit integer (MXNet's `size_t` ids); anything else, or beyond `u64`, `None`.
fn uint(c: &mut Cursor<'_>) -> Parse<Option<u64>> {
    let Some(text) = c.scalar_text()? else {
        return Ok(None);
    };
    Ok(as_str(text).and_then(|t| t.trim().parse::<u64>().ok()))
}

fn record(c: &mut Cursor<'_>) -> Result<Record, Incomplete> {
    let mut record = Record::default();
    c.expect(b'{', "an event object")?;
    c.members(|c, key| {
        match key {
            b"ph" => record.ph = c.string()?.into_owned(),
            b"name" => record.name = Some(c.string()?.into_owned()),
            b"cat" => record.cat = Some(c.string()?.into_owned()),
            b"pid" => record.pid = uint(c)?,
            b"tid" => record.tid = uint(c)?,
            b"id" => record.id = uint(c)?,
            b"ts" => record.ts_us = c.int()?,
            b"dur" => record.dur_us = c.int()?,
            b"args" if c.peek()? == b'{' => {
                c.i += 1;
                c.members(|c, key| {
                    match key {
                        b"name" if c.peek()? == b'"' => {
                            record.arg_name = Some(c.string()?.into_owned())
                        }
                        _ if record.counter.is_none() => record.counter = c.int()?,
                        _ => c.skip_value()?,
                    }
                    Ok(())
                })?;
            }
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    Ok(record)
}

/// Reads every record of an MXNet profile in memory.
pub fn parse(content: &[u8], path: &Path) -> Result<Vec<Record>, ReadError> {
    Ok(read_records(content, path, record)?.records)
}
