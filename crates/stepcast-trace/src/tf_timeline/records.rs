//! The records of a TensorFlow `Timeline`, read with the shared Chrome-trace tokenizer.

use std::path::Path;

use crate::chrome::cursor::{Cursor, Incomplete};
use crate::chrome::records::read_records;
use crate::error::ReadError;

/// One element of `traceEvents`, with the members the `Timeline` writes.
#[derive(Clone, Debug, Default)]
pub struct Record {
    pub ph: String,
    pub name: Option<String>,
    pub pid: Option<i64>,
    pub tid: Option<i64>,
    pub ts_us: Option<i64>,
    pub dur_us: Option<i64>,
    /// Flow id (`s`/`t`).
    pub id: Option<i64>,
    /// `args.name`: a process's name (`M`) or an op's node.
    pub arg_name: Option<String>,
}

pub struct Parsed {
    pub records: Vec<Record>,
}

fn record(c: &mut Cursor<'_>) -> Result<Record, Incomplete> {
    let mut record = Record::default();
    c.expect(b'{', "an event object")?;
    c.members(|c, key| {
        match key {
            b"ph" => record.ph = c.string()?.into_owned(),
            b"name" => record.name = Some(c.string()?.into_owned()),
            b"pid" => record.pid = c.int()?,
            b"tid" => record.tid = c.int()?,
            b"ts" => record.ts_us = c.int()?,
            b"dur" => record.dur_us = c.int()?,
            b"id" => record.id = c.int()?,
            b"args" if c.peek()? == b'{' => {
                c.i += 1;
                c.members(|c, key| {
                    match key {
                        b"name" => record.arg_name = Some(c.string()?.into_owned()),
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

/// Reads every record of a timeline in memory.
pub fn parse(content: &[u8], path: &Path) -> Result<Parsed, ReadError> {
    let records = read_records(content, path, record)?.records;
    Ok(Parsed { records })
}
