//! The trace class a CTF metadata stream describes, whichever syntax wrote it (CTF 1.8's TSDL,
//! `tsdl.rs`; CTF 2's JSON, `json.rs`): field classes, clocks, data stream classes and event
//! record classes. Only what decoding and the semantics map need is kept.

use std::collections::BTreeMap;
use std::rc::Rc;

/// Byte order of a fixed-length field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteOrder {
    Little,
    Big,
}

/// What a field means to the decoder beyond its value (CTF 2's roles; CTF 1.8 says the same
/// through well-known field names and `map = clock.NAME.value`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    None,
    /// The packet magic number (0xC1FC1FC1).
    Magic,
    StreamClassId,
    /// Total size of the packet, in bits.
    PacketTotalBits,
    /// Size of the packet's content (header, context, events), in bits.
    PacketContentBits,
    /// A value of the default clock (event timestamps, a packet's beginning time).
    ClockTimestamp,
    /// The packet's end time: read, but it does not move the clock.
    PacketEndTimestamp,
    EventClassId,
}

/// A field class.
#[derive(Clone, Debug)]
pub enum FieldClass {
    Int(IntClass),
    /// CTF 2's variable-length (LEB128) integers.
    VarInt {
        signed: bool,
        role: Role,
    },
    Float {
        bits: u32,
        align: u32,
        order: ByteOrder,
    },
    Enum {
        int: IntClass,
        /// Label and inclusive range of values.
        mappings: Rc<Vec<(Rc<str>, i128, i128)>>,
    },
    /// A null-terminated string.
    String,
    /// A string of a fixed number of bytes, or of the bytes a length field says (NUL ends it
    /// early).
    StaticString(u64),
    DynString(FieldRef),
    StaticBlob(u64),
    DynBlob(FieldRef),
    Struct {
        align: u32,
        fields: Rc<Vec<(Rc<str>, FieldClass)>>,
    },
    Array {
        elem: Rc<FieldClass>,
        len: u64,
    },
    Sequence {
        elem: Rc<FieldClass>,
        len: FieldRef,
    },
    Variant {
        tag: FieldRef,
        options: Rc<Vec<VariantOption>>,
    },
    /// CTF 2's optional: present when its selector (a boolean or integer) selects it.
    Optional {
        selector: FieldRef,
        ranges: Option<Vec<(i128, i128)>>,
        class: Rc<FieldClass>,
    },
}

/// One option of a variant: selected by its name (CTF 1.8: the tag enumeration's label) or by
/// the tag's value (CTF 2: ranges).
#[derive(Clone, Debug)]
pub struct VariantOption {
    pub name: Rc<str>,
    pub ranges: Vec<(i128, i128)>,
    pub class: FieldClass,
}

/// A fixed-length integer.
#[derive(Clone, Debug)]
pub struct IntClass {
    pub bits: u32,
    /// Alignment in bits.
    pub align: u32,
    pub signed: bool,
    pub order: ByteOrder,
    /// Characters (a CTF 1.8 `encoding = UTF8` byte): arrays and sequences of them are text.
    pub text: bool,
    pub role: Role,
}

/// Where a length, tag or selector is: CTF 1.8 names a field (possibly by a dotted path), CTF 2
/// gives a path; both are resolved by their last name, the closest field of that name decoded
/// before (the lexical scoping both specifications describe, for the layouts tracers write).
#[derive(Clone, Debug)]
pub struct FieldRef(pub Rc<str>);

impl FieldClass {
    /// Alignment in bits of the field's first bit.
    pub fn align(&self) -> u32 {
        match self {
            FieldClass::Int(int) | FieldClass::Enum { int, .. } => int.align,
            FieldClass::Float { align, .. } => *align,
            FieldClass::Struct { align, fields } => {
                fields.iter().map(|(_, f)| f.align()).fold(*align, u32::max)
            }
            FieldClass::Array { elem, .. } | FieldClass::Sequence { elem, .. } => elem.align(),
            FieldClass::VarInt { .. }
            | FieldClass::String
            | FieldClass::StaticString(_)
            | FieldClass::DynString(_)
            | FieldClass::StaticBlob(_)
            | FieldClass::DynBlob(_) => 8,
            FieldClass::Variant { .. } | FieldClass::Optional { .. } => 1,
        }
    }
}

/// A clock: its frequency and where its zero lies (seconds and cycles after the epoch).
#[derive(Clone, Debug)]
pub struct Clock {
    pub name: String,
    pub freq_hz: u64,
    pub offset_s: i64,
    pub offset_cycles: i64,
}

impl Clock {
    /// Nanoseconds since the clock's origin (the Unix epoch for LTTng's clocks) of `cycles`,
    /// or `None` if it does not fit an `i64`. Exact: the offset's cycles and the value are
    /// added before rounding down (babeltrace2 converts each apart, in floating point, so its
    /// times can be 1 ns lower).
    pub fn to_ns(&self, cycles: u64) -> Option<i64> {
        let freq = i128::from(self.freq_hz.max(1));
        let total = i128::from(self.offset_cycles) + i128::from(cycles);
        let ns =
            i128::from(self.offset_s) * 1_000_000_000 + (total * 1_000_000_000).div_euclid(freq);
        i64::try_from(ns).ok()
    }
}

/// A data stream class.
#[derive(Clone, Debug, Default)]
pub struct StreamClass {
    pub packet_context: Option<FieldClass>,
    pub event_header: Option<FieldClass>,
    pub event_context: Option<FieldClass>,
    /// Its event record classes by id.
    pub events: BTreeMap<u64, EventClass>,
    /// The clock its timestamps count, where the metadata names one.
    pub clock: Option<String>,
}

/// An event record class.
#[derive(Clone, Debug)]
pub struct EventClass {
    pub name: Rc<str>,
    pub context: Option<FieldClass>,
    pub payload: Option<FieldClass>,
}

/// A whole trace class.
#[derive(Clone, Debug, Default)]
pub struct TraceClass {
    /// `1.8` or `2`.
    pub version: String,
    pub packet_header: Option<FieldClass>,
    pub streams: BTreeMap<u64, StreamClass>,
    pub clocks: Vec<Clock>,
    /// The `env` block (CTF 1.8) or `environment` (CTF 2): tracer name, domain, hostname...
    pub env: BTreeMap<String, String>,
}

impl TraceClass {
    /// Puts each `(stream class id, event class id, class)` in its stream class: event
    /// classes may come before or after their stream's declaration in the metadata.
    pub fn add_events(&mut self, events: Vec<(u64, u64, EventClass)>) {
        for (stream_id, id, event) in events {
            self.streams
                .entry(stream_id)
                .or_default()
                .events
                .insert(id, event);
        }
    }

    /// The clock of `stream`: the one it names, else the trace's only (or first) clock.
    pub fn clock_of(&self, stream: &StreamClass) -> Option<&Clock> {
        match &stream.clock {
            Some(name) => self.clocks.iter().find(|c| &c.name == name),
            None => self.clocks.first(),
        }
    }
}
