//! The records of a Horovod timeline, read with the shared Chrome-trace tokenizer.

use std::collections::BTreeMap;
use std::path::Path;

use crate::chrome::cursor::{Cursor, Incomplete};
use crate::chrome::records::read_records;
use crate::error::ReadError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Begin,
    End,
    /// A rank's readiness tick inside a negotiation (`X`, no duration).
    Complete,
    Instant,
    Metadata,
    Other,
}

/// One element of the event array, with the members Horovod writes.
#[derive(Clone, Debug)]
pub struct Record {
    pub phase: Phase,
    pub name: Option<String>,
    pub pid: Option<i64>,
    pub ts_us: Option<i64>,
    /// `args.name` of a `process_name` record: the tensor of that pid.
    pub process_name: Option<String>,
    pub dtype: Option<String>,
    pub shape: Option<Vec<i64>>,
    pub start_since_epoch_us: Option<i64>,
}

/// A timeline's records and what they say of the file.
pub struct Parsed {
    pub records: Vec<Record>,
    pub unterminated: bool,
    pub start_since_epoch_us: Option<i64>,
    /// pid → (tensor name, tensor index in order of first appearance).
    tensors: BTreeMap<i64, (String, usize)>,
    names_in_order: Vec<String>,
}

impl Parsed {
    pub fn tensor_name(&self, pid: i64) -> String {
        self.tensors
            .get(&pid)
            .map_or_else(|| format!("tensor {pid}"), |(name, _)| name.clone())
    }

    pub fn tensor_count(&self) -> usize {
        self.names_in_order.len()
    }

    /// Whether only metadata and instants lie between two records.
    pub fn only_metadata_between(&self, a: usize, b: usize) -> bool {
        self.records.get(a + 1..b).is_some_and(|between| {
            between
                .iter()
                .all(|r| matches!(r.phase, Phase::Metadata | Phase::Instant))
        })
    }
}

fn record(c: &mut Cursor<'_>) -> Result<Record, Incomplete> {
    let mut record = Record {
        phase: Phase::Other,
        name: None,
        pid: None,
        ts_us: None,
        process_name: None,
        dtype: None,
        shape: None,
        start_since_epoch_us: None,
    };
    c.expect(b'{', "an event object")?;
    c.members(|c, key| {
        match key {
            b"ph" => {
                record.phase = match c.string()?.as_ref() {
                    "B" => Phase::Begin,
                    "E" => Phase::End,
                    "X" => Phase::Complete,
                    "i" | "I" => Phase::Instant,
                    "M" => Phase::Metadata,
                    _ => Phase::Other,
                }
            }
            b"name" => record.name = Some(c.string()?.into_owned()),
            b"pid" => record.pid = c.int()?,
            b"ts" => record.ts_us = c.int()?,
            b"args" if c.peek()? == b'{' => {
                c.i += 1;
                c.members(|c, key| {
                    match key {
                        b"name" => record.process_name = Some(c.string()?.into_owned()),
                        b"dtype" => record.dtype = Some(c.string()?.into_owned()),
                        b"shape" => record.shape = parse_shape(&c.string()?),
                        b"start_time_since_epoch_in_micros" => {
                            record.start_since_epoch_us = c.int()?
                        }
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

/// `TensorShape::DebugString`: `[10, 1024]` (`[]` for a scalar).
pub fn parse_shape(text: &str) -> Option<Vec<i64>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
    if inner.is_empty() {
        return Some(Vec::new());
    }
    inner
        .split(',')
        .map(|size| size.trim().parse::<i64>().ok().filter(|&s| s >= 0))
        .collect()
}

/// Reads every record of a timeline in memory.
pub fn parse(content: &[u8], path: &Path) -> Result<Parsed, ReadError> {
    let sink = read_records(content, path, record)?;
    let mut tensors = BTreeMap::new();
    let mut names_in_order = Vec::new();
    let mut start_since_epoch_us = None;
    for r in &sink.records {
        if r.phase != Phase::Metadata || r.name.as_deref() != Some("process_name") {
            continue;
        }
        start_since_epoch_us = start_since_epoch_us.or(r.start_since_epoch_us);
        if let (Some(pid), Some(name)) = (r.pid, &r.process_name)
            && !tensors.contains_key(&pid)
        {
            tensors.insert(pid, (name.clone(), names_in_order.len()));
            names_in_order.push(name.clone());
        }
    }
    Ok(Parsed {
        records: sink.records,
        unterminated: sink.unterminated,
        start_since_epoch_us,
        tensors,
        names_in_order,
    })
}

#[cfg(test)]
mod tests {
    use super::parse_shape;

    #[test]
    fn shapes_read_as_tensorshape_writes_them() {
        assert_eq!(parse_shape("[10, 1024]"), Some(vec![10, 1024]));
        assert_eq!(parse_shape("[]"), Some(vec![]));
        assert_eq!(parse_shape("[3]"), Some(vec![3]));
        assert_eq!(parse_shape("[-1, 2]"), None);
        assert_eq!(parse_shape("10"), None);
    }
}
