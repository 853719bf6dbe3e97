//! The binary side of CTF: a data stream file is a sequence of packets (header, context, then
//! event records: header, common context, specific context, payload), each field laid out as
//! its class says (alignment and byte order, bit by bit where a field is not byte-aligned).
//!
//! Event timestamps are the low bits of the stream's default clock: a field of `n` bits
//! replaces the clock's low `n` bits, and a value lower than the clock's low bits means they
//! wrapped once (CTF 1.8 §8, CTF 2's "default clock timestamp" role). A packet's beginning
//! time sets the clock; its end time does not.

use std::rc::Rc;

use super::metadata::{ByteOrder, FieldClass, IntClass, Role, StreamClass, TraceClass};

/// The packet magic number (`0xC1FC1FC1`).
const PACKET_MAGIC: u64 = 0xC1FC_1FC1;

/// A decoded field value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Int(i128),
    Float(f64),
    /// An enumeration's value and the label it maps to, if any.
    Enum(i128, Option<Rc<str>>),
    Str(String),
    Bytes(Vec<u8>),
    Struct(Vec<(Rc<str>, Val)>),
    Array(Vec<Val>),
    /// An optional field not present.
    Absent,
}

impl Val {
    pub fn as_int(&self) -> Option<i128> {
        match self {
            Val::Int(n) | Val::Enum(n, _) => Some(*n),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Val::Str(s) => Some(s),
            Val::Enum(_, Some(label)) => Some(label),
            _ => None,
        }
    }
}

/// One event record, decoded.
#[derive(Clone, Debug)]
pub struct Record {
    pub name: Rc<str>,
    /// Nanoseconds since the clock's origin (the Unix epoch for LTTng); `None` for a stream
    /// without clock.
    pub time_ns: Option<i64>,
    /// The packet context (LTTng: `cpu_id`), the common and specific event contexts (LTTng:
    /// `vtid`, `vpid`, `procname`), and the payload.
    pub packet: Rc<Vec<(Rc<str>, Val)>>,
    pub context: Vec<(Rc<str>, Val)>,
    pub payload: Vec<(Rc<str>, Val)>,
}

impl Record {
    /// A field by name: the payload's, else the event context's, else the packet context's.
    pub fn field(&self, name: &str) -> Option<&Val> {
        fn find<'v>(fields: &'v [(Rc<str>, Val)], name: &str) -> Option<&'v Val> {
            fields.iter().find(|(n, _)| &**n == name).map(|(_, v)| v)
        }
        find(&self.payload, name)
            .or_else(|| find(&self.context, name))
            .or_else(|| find(&self.packet, name))
    }

    pub fn int(&self, name: &str) -> Option<i128> {
        self.field(name).and_then(Val::as_int)
    }

    /// An integer field that fits an `i64` (a thread id, a count); `None` otherwise.
    pub fn i64(&self, name: &str) -> Option<i64> {
        self.int(name).and_then(|n| i64::try_from(n).ok())
    }

    pub fn str(&self, name: &str) -> Option<&str> {
        self.field(name).and_then(Val::as_str)
    }
}

/// What a stream file held besides its records.
#[derive(Debug, Default)]
pub struct StreamStats {
    pub packets: u64,
    /// The largest discarded-events counter a packet context reported (LTTng counts the
    /// records its ring buffer dropped).
    pub discarded: u64,
}

/// Decodes every record of one data stream file. Errors name the byte where decoding failed.
pub fn decode_stream(
    class: &TraceClass,
    bytes: &[u8],
    records: &mut Vec<Record>,
) -> Result<StreamStats, String> {
    let mut stats = StreamStats::default();
    let mut offset = 0usize;
    let mut clock: u64 = 0;
    while offset < bytes.len() {
        let data = &bytes[offset..];
        let mut cursor = Cursor {
            data,
            pos: 0,
            end: (data.len() as u64) * 8,
            refs: Vec::new(),
            clock: &mut clock,
            apply_roles: true,
            facts: Facts::default(),
        };
        let at = |cursor: &Cursor<'_>, e: String| {
            format!(
                "packet at byte {offset}, byte {}: {e}",
                offset as u64 + cursor.pos / 8
            )
        };
        if let Some(header) = &class.packet_header {
            cursor.value(header).map_err(|e| at(&cursor, e))?;
        }
        if let Some(magic) = cursor.facts.magic
            && magic != PACKET_MAGIC
        {
            return Err(format!(
                "packet at byte {offset}: its magic number is {magic:#x}, not 0xc1fc1fc1"
            ));
        }
        let stream_id = cursor.facts.stream_class.unwrap_or(0);
        let stream = class.streams.get(&stream_id).ok_or_else(|| {
            format!("packet at byte {offset}: stream class {stream_id} is not in the metadata")
        })?;
        let packet_fields = match &stream.packet_context {
            Some(context) => match cursor.value(context).map_err(|e| at(&cursor, e))? {
                Val::Struct(fields) => fields,
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        if let Some(discarded) = packet_fields
            .iter()
            .find(|(n, _)| &**n == "events_discarded")
            .and_then(|(_, v)| v.as_int())
            .and_then(|n| u64::try_from(n).ok())
        {
            stats.discarded = stats.discarded.max(discarded);
        }
        let packet_bits = cursor.facts.packet_bits.unwrap_or(cursor.end);
        let content_bits = cursor.facts.content_bits.unwrap_or(packet_bits);
        if packet_bits == 0 || !packet_bits.is_multiple_of(8) || content_bits > packet_bits {
            return Err(format!(
                "packet at byte {offset}: its sizes do not fit (packet {packet_bits} bits, content {content_bits} bits)"
            ));
        }
        if packet_bits > cursor.end {
            return Err(format!(
                "packet at byte {offset} is truncated: it declares {} bytes, the file holds {} more",
                packet_bits / 8,
                data.len()
            ));
        }
        if cursor.pos > content_bits {
            return Err(format!(
                "packet at byte {offset}: its header and context run past its content size"
            ));
        }
        cursor.end = content_bits;
        let packet = Rc::new(packet_fields);
        let base_refs = cursor.refs.len();
        while cursor.pos < cursor.end {
            cursor.refs.truncate(base_refs);
            let before = cursor.pos;
            let record = cursor
                .record(class, stream, &packet)
                .map_err(|e| at(&cursor, e))?;
            if cursor.pos == before {
                // An event record class of no bits would repeat for ever.
                return Err(at(
                    &cursor,
                    "an event record takes no bits: the metadata cannot describe this stream"
                        .to_string(),
                ));
            }
            records.push(record);
        }
        stats.packets += 1;
        offset += (packet_bits / 8) as usize;
    }
    Ok(stats)
}

/// Values the roles of header and context fields gave.
#[derive(Default)]
struct Facts {
    magic: Option<u64>,
    stream_class: Option<u64>,
    packet_bits: Option<u64>,
    content_bits: Option<u64>,
    event_class: Option<u64>,
}

struct Cursor<'a> {
    data: &'a [u8],
    /// Bit position from the packet's start.
    pos: u64,
    /// Where the packet's content ends, in bits.
    end: u64,
    /// Integer and enumeration fields decoded so far (name, value, label), most recent last:
    /// where lengths, tags and selectors are found.
    refs: Vec<(Rc<str>, i128, Option<Rc<str>>)>,
    clock: &'a mut u64,
    /// Roles are read in headers and contexts, not in payloads.
    apply_roles: bool,
    facts: Facts,
}

impl Cursor<'_> {
    fn record(
        &mut self,
        class: &TraceClass,
        stream: &StreamClass,
        packet: &Rc<Vec<(Rc<str>, Val)>>,
    ) -> Result<Record, String> {
        self.facts.event_class = None;
        self.apply_roles = true;
        if let Some(header) = &stream.event_header {
            self.value(header)?;
        }
        let mut context = Vec::new();
        if let Some(common) = &stream.event_context
            && let Val::Struct(fields) = self.value(common)?
        {
            context.extend(fields);
        }
        let id = self.facts.event_class.unwrap_or(0);
        let event = stream
            .events
            .get(&id)
            .ok_or_else(|| format!("event record class {id} is not in the metadata"))?;
        self.apply_roles = false;
        if let Some(specific) = &event.context
            && let Val::Struct(fields) = self.value(specific)?
        {
            context.extend(fields);
        }
        let payload = match &event.payload {
            Some(payload) => match self.value(payload)? {
                Val::Struct(fields) => fields,
                _ => Vec::new(),
            },
            None => Vec::new(),
        };
        let time_ns = class
            .clock_of(stream)
            .and_then(|clock| clock.to_ns(*self.clock));
        Ok(Record {
            name: event.name.clone(),
            time_ns,
            packet: packet.clone(),
            context,
            payload,
        })
    }

    fn align(&mut self, bits: u32) -> Result<(), String> {
        let bits = u64::from(bits.max(1));
        self.pos = self.pos.div_ceil(bits) * bits;
        if self.pos > self.end {
            return Err("a field's alignment runs past the packet's content".to_string());
        }
        Ok(())
    }

    fn need(&self, bits: u64) -> Result<(), String> {
        if self.pos.checked_add(bits).is_none_or(|end| end > self.end) {
            return Err(format!(
                "a field of {bits} bits runs past the packet's content (is the stream truncated?)"
            ));
        }
        Ok(())
    }

    fn bits(&mut self, count: u32, order: ByteOrder) -> Result<u64, String> {
        self.need(u64::from(count))?;
        let mut value: u64 = 0;
        if self.pos.is_multiple_of(8) && count.is_multiple_of(8) {
            let start = (self.pos / 8) as usize;
            let bytes = &self.data[start..start + (count / 8) as usize];
            match order {
                ByteOrder::Little => {
                    for (i, b) in bytes.iter().enumerate() {
                        value |= u64::from(*b) << (8 * i);
                    }
                }
                ByteOrder::Big => {
                    for b in bytes {
                        value = (value << 8) | u64::from(*b);
                    }
                }
            }
        } else {
            for i in 0..u64::from(count) {
                let at = self.pos + i;
                let byte = self.data[(at / 8) as usize];
                match order {
                    ByteOrder::Little => value |= u64::from((byte >> (at % 8)) & 1) << i,
                    ByteOrder::Big => value = (value << 1) | u64::from((byte >> (7 - at % 8)) & 1),
                }
            }
        }
        self.pos += u64::from(count);
        Ok(value)
    }

    fn int(&mut self, int: &IntClass) -> Result<i128, String> {
        self.align(int.align)?;
        let raw = self.bits(int.bits, int.order)?;
        if self.apply_roles {
            self.role(int.role, raw, int.bits);
        }
        Ok(
            if int.signed && int.bits < 64 && raw >> (int.bits - 1) & 1 == 1 {
                i128::from(raw) - (1i128 << int.bits)
            } else if int.signed {
                i128::from(raw as i64)
            } else {
                i128::from(raw)
            },
        )
    }

    fn role(&mut self, role: Role, raw: u64, bits: u32) {
        match role {
            Role::Magic => self.facts.magic = Some(raw),
            Role::StreamClassId => self.facts.stream_class = Some(raw),
            Role::PacketTotalBits => self.facts.packet_bits = Some(raw),
            Role::PacketContentBits => self.facts.content_bits = Some(raw),
            Role::EventClassId => self.facts.event_class = Some(raw),
            Role::ClockTimestamp => {
                *self.clock = if bits >= 64 {
                    raw
                } else {
                    let mask = (1u64 << bits) - 1;
                    let mut next = (*self.clock & !mask) | raw;
                    if raw < *self.clock & mask {
                        next = next.wrapping_add(1u64 << bits);
                    }
                    next
                };
            }
            Role::PacketEndTimestamp | Role::None => {}
        }
    }

    fn lookup(&self, name: &str) -> Result<(i128, Option<Rc<str>>), String> {
        self.refs
            .iter()
            .rev()
            .find(|(n, _, _)| &**n == name)
            .map(|(_, v, l)| (*v, l.clone()))
            .ok_or_else(|| {
                format!("field `{name}` that a length or tag refers to was not decoded before")
            })
    }

    fn length(&self, name: &str, elem_bits: u64) -> Result<u64, String> {
        let (value, _) = self.lookup(name)?;
        let len = u64::try_from(value).map_err(|_| format!("length `{name}` is negative"))?;
        // A hostile length is refused before anything is allocated for it.
        if len.saturating_mul(elem_bits.max(1)) > self.end.saturating_sub(self.pos) {
            return Err(format!(
                "length `{name}` = {len} runs past the packet's content"
            ));
        }
        Ok(len)
    }

    fn bytes(&mut self, len: u64) -> Result<&[u8], String> {
        self.align(8)?;
        self.need(len.saturating_mul(8))?;
        let start = (self.pos / 8) as usize;
        self.pos += len * 8;
        Ok(&self.data[start..start + len as usize])
    }

    fn value(&mut self, class: &FieldClass) -> Result<Val, String> {
        self.value_named(class, None)
    }

    fn value_named(&mut self, class: &FieldClass, name: Option<&Rc<str>>) -> Result<Val, String> {
        let value = match class {
            FieldClass::Int(int) => Val::Int(self.int(int)?),
            FieldClass::Enum { int, mappings } => {
                let value = self.int(int)?;
                let label = mappings
                    .iter()
                    .find(|(_, lo, hi)| (*lo..=*hi).contains(&value))
                    .map(|(l, _, _)| l.clone());
                Val::Enum(value, label)
            }
            FieldClass::VarInt { signed, role } => {
                self.align(8)?;
                let mut value: u128 = 0;
                let mut shift = 0u32;
                loop {
                    let byte = self.bits(8, ByteOrder::Little)?;
                    if shift < 128 {
                        value |= u128::from(byte & 0x7f) << shift;
                    }
                    shift += 7;
                    if byte & 0x80 == 0 {
                        break;
                    }
                    if shift > 70 {
                        return Err("a variable-length integer longer than 10 bytes".to_string());
                    }
                }
                let value = if *signed && shift < 128 && (value >> (shift - 1)) & 1 == 1 {
                    value as i128 - (1i128 << shift)
                } else {
                    value as i128
                };
                if self.apply_roles {
                    // A value past 64 bits cannot be a size or id: it fails their checks.
                    self.role(*role, u64::try_from(value).unwrap_or(u64::MAX), 64);
                }
                Val::Int(value)
            }
            FieldClass::Float { bits, align, order } => {
                self.align(*align)?;
                let raw = self.bits(*bits, *order)?;
                Val::Float(if *bits == 32 {
                    f64::from(f32::from_bits(raw as u32))
                } else {
                    f64::from_bits(raw)
                })
            }
            FieldClass::String => {
                self.align(8)?;
                let start = (self.pos / 8) as usize;
                let limit = (self.end / 8) as usize;
                let nul = self.data[start..limit]
                    .iter()
                    .position(|b| *b == 0)
                    .ok_or("a string is not terminated within the packet's content")?;
                self.pos += ((nul + 1) * 8) as u64;
                Val::Str(String::from_utf8_lossy(&self.data[start..start + nul]).into_owned())
            }
            FieldClass::StaticString(len) => text(self.bytes(*len)?),
            FieldClass::DynString(len) => {
                let len = self.length(&len.0, 8)?;
                text(self.bytes(len)?)
            }
            FieldClass::StaticBlob(len) => Val::Bytes(self.bytes(*len)?.to_vec()),
            FieldClass::DynBlob(len) => {
                let len = self.length(&len.0, 8)?;
                Val::Bytes(self.bytes(len)?.to_vec())
            }
            FieldClass::Struct { fields, .. } => {
                self.align(class.align())?;
                let mut values = Vec::with_capacity(fields.len());
                for (field_name, field) in fields.iter() {
                    let value = self.value_named(field, Some(field_name))?;
                    values.push((field_name.clone(), value));
                }
                Val::Struct(values)
            }
            FieldClass::Array { elem, len } => self.elements(elem, *len)?,
            FieldClass::Sequence { elem, len } => {
                let len = self.length(&len.0, min_bits(elem))?;
                self.elements(elem, len)?
            }
            FieldClass::Variant { tag, options } => {
                let (value, label) = self.lookup(&tag.0)?;
                let option = options
                    .iter()
                    .find(|o| o.ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&value)))
                    .or_else(|| {
                        let label = label.as_deref()?;
                        options.iter().find(|o| {
                            &*o.name == label
                                || o.name.strip_prefix('_') == Some(label)
                                || label.strip_prefix('_') == Some(&*o.name)
                        })
                    })
                    .ok_or_else(|| {
                        format!("variant tag `{}` = {value} selects no option", tag.0)
                    })?;
                self.value_named(&option.class, Some(&option.name))?
            }
            FieldClass::Optional {
                selector,
                ranges,
                class,
            } => {
                let (value, _) = self.lookup(&selector.0)?;
                let present = match ranges {
                    Some(ranges) => ranges.iter().any(|(lo, hi)| (*lo..=*hi).contains(&value)),
                    None => value != 0,
                };
                if present {
                    self.value_named(class, name)?
                } else {
                    Val::Absent
                }
            }
        };
        if let Some(name) = name
            && let Some(n) = value.as_int()
        {
            let label = match &value {
                Val::Enum(_, label) => label.clone(),
                _ => None,
            };
            self.refs.push((name.clone(), n, label));
        }
        Ok(value)
    }

    fn elements(&mut self, elem: &FieldClass, len: u64) -> Result<Val, String> {
        if let FieldClass::Int(int) = elem
            && int.text
            && int.bits == 8
        {
            return Ok(text(self.bytes(len)?));
        }
        // Checked before allocating: the elements must fit the packet, and elements of no bits
        // (empty structures) are not repeated without end.
        let bits = min_bits(elem);
        self.need(len.saturating_mul(bits))?;
        if bits == 0 && len > MAX_EMPTY_ELEMENTS {
            return Err(format!("an array of {len} elements that take no bits"));
        }
        self.align(elem.align())?;
        let mut values = Vec::with_capacity(len.min(1 << 16) as usize);
        for _ in 0..len {
            values.push(self.value(elem)?);
        }
        Ok(Val::Array(values))
    }
}

/// Elements of no bits an array may hold (more is a hostile length).
const MAX_EMPTY_ELEMENTS: u64 = 1 << 16;

/// The fewest bits an element of `class` takes (for bounding lengths before decoding).
fn min_bits(class: &FieldClass) -> u64 {
    match class {
        FieldClass::Int(int) | FieldClass::Enum { int, .. } => u64::from(int.bits),
        FieldClass::Float { bits, .. } => u64::from(*bits),
        FieldClass::String | FieldClass::VarInt { .. } => 8,
        FieldClass::StaticString(len) | FieldClass::StaticBlob(len) => len.saturating_mul(8),
        FieldClass::Struct { fields, .. } => fields
            .iter()
            .fold(0u64, |sum, (_, f)| sum.saturating_add(min_bits(f))),
        FieldClass::Array { elem, len } => len.saturating_mul(min_bits(elem)),
        _ => 0,
    }
}

/// Characters up to the first NUL.
fn text(bytes: &[u8]) -> Val {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    Val::Str(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet of `events`, each an 8-bit id, then a 3-bit and a 5-bit big-endian field
    /// packed in one byte, and a 16-bit timestamp of clock `c` (1 GHz).
    const METADATA: &str = "/* CTF 1.8 */
        trace { major = 1; minor = 8; byte_order = be; };
        clock { name = c; freq = 1000000000; };
        stream {
            event.header := struct {
                integer { size = 8; } id;
                integer { size = 16; map = clock.c.value; } timestamp;
            };
        };
        event { name = \"e\"; id = 0; fields := struct {
            integer { size = 3; align = 1; } a;
            integer { size = 5; align = 1; signed = true; } b;
        }; };";

    #[test]
    fn big_endian_bit_fields_and_a_wrapping_timestamp() {
        let class = crate::ctf::tsdl::parse(METADATA).expect("metadata");
        // a = 0b101 (5), b = 0b11110 (-2 in 5-bit two's complement): 0b101_11110 = 0xBE.
        // Timestamps 0xFFF0 then 0x0010: the 16-bit clock wrapped once in between.
        let bytes = [0, 0xff, 0xf0, 0xbe, 0, 0x00, 0x10, 0xbe];
        let mut records = Vec::new();
        decode_stream(&class, &bytes, &mut records).expect("decodes");
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].int("a"), Some(5));
        assert_eq!(records[0].int("b"), Some(-2));
        assert_eq!(records[0].time_ns, Some(0xfff0));
        assert_eq!(records[1].time_ns, Some(0x1_0010));
    }

    #[test]
    fn an_event_cut_by_the_end_of_its_stream_is_an_error() {
        let class = crate::ctf::tsdl::parse(METADATA).expect("metadata");
        let error = decode_stream(&class, &[0, 0xff, 0xf0, 0xbe, 0, 0x00], &mut Vec::new())
            .expect_err("truncated");
        assert!(error.contains("runs past"), "{error}");
    }
}
