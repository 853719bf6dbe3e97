//! CTF 2 metadata: a sequence of JSON fragments, each after a record separator (0x1E):
//! preamble, trace class, field class aliases, clock classes, data stream classes and event
//! record classes. Field classes are read into the same model as CTF 1.8's.

use std::collections::HashMap;
use std::rc::Rc;

use serde_json::Value;

use super::metadata::{
    ByteOrder, Clock, EventClass, FieldClass, FieldRef, IntClass, Role, StreamClass, TraceClass,
    VariantOption,
};

/// The record separator that starts every CTF 2 metadata fragment.
pub const RECORD_SEPARATOR: u8 = 0x1e;

/// Whether `head` starts CTF 2 metadata.
pub fn looks_like(head: &[u8]) -> bool {
    head.first() == Some(&RECORD_SEPARATOR)
        && head
            .get(1..head.len().min(200))
            .is_some_and(|rest| rest.windows(8).any(|w| w == b"preamble"))
}

/// Parses CTF 2 metadata.
pub fn parse(bytes: &[u8]) -> Result<TraceClass, String> {
    let mut class = TraceClass {
        version: "2".to_string(),
        ..TraceClass::default()
    };
    let mut aliases: HashMap<String, FieldClass> = HashMap::new();
    let mut events: Vec<(u64, u64, EventClass)> = Vec::new();
    for (index, fragment) in bytes.split(|b| *b == RECORD_SEPARATOR).enumerate().skip(1) {
        let value: Value = serde_json::from_slice(fragment)
            .map_err(|e| format!("metadata fragment {index} is not JSON: {e}"))?;
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        let at = |what: &str| format!("metadata fragment {index} ({kind}): {what}");
        let field = |key: &str,
                     aliases: &HashMap<String, FieldClass>|
         -> Result<Option<FieldClass>, String> {
            value
                .get(key)
                .map(|v| field_class(v, aliases))
                .transpose()
                .map_err(|e| at(&e))
        };
        match kind {
            "preamble" => {
                let version = value.get("version").and_then(Value::as_u64);
                if version != Some(2) {
                    return Err(at("the preamble's version is not 2"));
                }
            }
            "trace-class" => {
                class.packet_header = field("packet-header-field-class", &aliases)?;
                if let Some(Value::Object(env)) = value.get("environment") {
                    for (key, v) in env {
                        let text = match v {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        class.env.insert(key.clone(), text);
                    }
                }
            }
            "field-class-alias" => {
                let name = value
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| at("an alias without a name"))?;
                let fc = field("field-class", &aliases)?
                    .ok_or_else(|| at("an alias without a class"))?;
                aliases.insert(name.to_string(), fc);
            }
            "clock-class" => {
                let name = value
                    .get("name")
                    .or_else(|| value.get("id"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let freq_hz = value
                    .get("frequency")
                    .and_then(Value::as_u64)
                    .filter(|f| *f > 0)
                    .ok_or_else(|| at("the clock's frequency is not a positive number"))?;
                let offset = value
                    .get("offset-from-origin")
                    .or_else(|| value.get("offset"));
                let part = |key: &str| {
                    offset
                        .and_then(|o| o.get(key))
                        .and_then(Value::as_i64)
                        .unwrap_or(0)
                };
                class.clocks.push(Clock {
                    name,
                    freq_hz,
                    offset_s: part("seconds"),
                    offset_cycles: part("cycles"),
                });
            }
            "data-stream-class" => {
                let id = value.get("id").and_then(Value::as_u64).unwrap_or(0);
                let stream = StreamClass {
                    packet_context: field("packet-context-field-class", &aliases)?,
                    event_header: field("event-record-header-field-class", &aliases)?,
                    event_context: field("event-record-common-context-field-class", &aliases)?,
                    events: Default::default(),
                    clock: value
                        .get("default-clock-class-name")
                        .or_else(|| value.get("default-clock-class-id"))
                        .and_then(Value::as_str)
                        .map(str::to_string),
                };
                let slot = class.streams.entry(id).or_default();
                let events_so_far = std::mem::take(&mut slot.events);
                *slot = stream;
                slot.events = events_so_far;
            }
            "event-record-class" => {
                let id = value.get("id").and_then(Value::as_u64).unwrap_or(0);
                let stream_id = value
                    .get("data-stream-class-id")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                let name = value.get("name").and_then(Value::as_str).unwrap_or("");
                events.push((
                    stream_id,
                    id,
                    EventClass {
                        name: name.into(),
                        context: field("specific-context-field-class", &aliases)?,
                        payload: field("payload-field-class", &aliases)?,
                    },
                ));
            }
            // Fragments of later versions or extensions carry nothing decoding needs.
            _ => {}
        }
    }
    class.add_events(events);
    Ok(class)
}

fn field_class(value: &Value, aliases: &HashMap<String, FieldClass>) -> Result<FieldClass, String> {
    if let Some(name) = value.as_str() {
        return aliases
            .get(name)
            .cloned()
            .ok_or_else(|| format!("field class alias `{name}` is not defined"));
    }
    let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
    let u64_of = |key: &str| value.get(key).and_then(Value::as_u64);
    let location = |key: &str| -> Result<FieldRef, String> {
        let loc = value
            .get(key)
            .ok_or_else(|| format!("a {kind} field class without `{key}`"))?;
        let path = loc.get("path").unwrap_or(loc);
        path.as_array()
            .and_then(|p| p.last())
            .and_then(Value::as_str)
            .map(|last| FieldRef(last.into()))
            .ok_or_else(|| format!("a {kind} field class whose `{key}` has no path"))
    };
    let int = |signed: bool| -> Result<IntClass, String> {
        let bits = u64_of("length")
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=64).contains(n))
            .ok_or_else(|| format!("a {kind} field class's length is not within 1..64 bits"))?;
        Ok(IntClass {
            bits,
            align: u64_of("alignment")
                .and_then(|n| u32::try_from(n).ok())
                .unwrap_or(1)
                .max(1),
            signed,
            order: order(value),
            text: false,
            role: roles(value),
        })
    };
    Ok(match kind {
        "fixed-length-unsigned-integer"
        | "fixed-length-boolean"
        | "fixed-length-bit-array"
        | "fixed-length-bit-map" => FieldClass::Int(int(false)?),
        "fixed-length-signed-integer" => FieldClass::Int(int(true)?),
        "fixed-length-unsigned-enumeration" | "fixed-length-signed-enumeration" => {
            let int = int(kind.contains("-signed-"))?;
            let mut mappings = Vec::new();
            if let Some(Value::Object(map)) = value.get("mappings") {
                for (label, ranges) in map {
                    for (lo, hi) in ranges_of(ranges) {
                        mappings.push((Rc::from(label.as_str()), lo, hi));
                    }
                }
            }
            FieldClass::Enum {
                int,
                mappings: Rc::new(mappings),
            }
        }
        "fixed-length-floating-point-number" => {
            let bits = u64_of("length").unwrap_or(0);
            if bits != 32 && bits != 64 {
                return Err(format!(
                    "a floating point number of {bits} bits is not read"
                ));
            }
            FieldClass::Float {
                bits: bits as u32,
                align: u64_of("alignment")
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(1)
                    .max(1),
                order: order(value),
            }
        }
        "variable-length-unsigned-integer" | "variable-length-unsigned-enumeration" => {
            FieldClass::VarInt {
                signed: false,
                role: roles(value),
            }
        }
        "variable-length-signed-integer" | "variable-length-signed-enumeration" => {
            FieldClass::VarInt {
                signed: true,
                role: roles(value),
            }
        }
        "null-terminated-string" => FieldClass::String,
        "static-length-string" => FieldClass::StaticString(u64_of("length").unwrap_or(0)),
        "dynamic-length-string" => FieldClass::DynString(location("length-field-location")?),
        "static-length-blob" => FieldClass::StaticBlob(u64_of("length").unwrap_or(0)),
        "dynamic-length-blob" => FieldClass::DynBlob(location("length-field-location")?),
        "structure" => {
            let mut fields = Vec::new();
            for member in value
                .get("member-classes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = member.get("name").and_then(Value::as_str).unwrap_or("");
                let class = member
                    .get("field-class")
                    .ok_or_else(|| format!("structure member `{name}` has no field class"))?;
                fields.push((Rc::from(name), field_class(class, aliases)?));
            }
            FieldClass::Struct {
                align: u64_of("minimum-alignment")
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(1)
                    .max(1),
                fields: Rc::new(fields),
            }
        }
        "static-length-array" | "dynamic-length-array" => {
            let elem = value
                .get("element-field-class")
                .ok_or_else(|| format!("a {kind} without element field class"))?;
            let elem = Rc::new(field_class(elem, aliases)?);
            if kind == "static-length-array" {
                FieldClass::Array {
                    elem,
                    len: u64_of("length").unwrap_or(0),
                }
            } else {
                FieldClass::Sequence {
                    elem,
                    len: location("length-field-location")?,
                }
            }
        }
        "optional" => FieldClass::Optional {
            selector: location("selector-field-location")?,
            ranges: value.get("selector-field-ranges").map(ranges_of),
            class: Rc::new(field_class(
                value
                    .get("field-class")
                    .ok_or("an optional without field class")?,
                aliases,
            )?),
        },
        "variant" => {
            let mut options = Vec::new();
            for option in value
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                options.push(VariantOption {
                    name: option
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .into(),
                    ranges: option
                        .get("selector-field-ranges")
                        .map(ranges_of)
                        .unwrap_or_default(),
                    class: field_class(
                        option
                            .get("field-class")
                            .ok_or("a variant option without field class")?,
                        aliases,
                    )?,
                });
            }
            FieldClass::Variant {
                tag: location("selector-field-location")?,
                options: Rc::new(options),
            }
        }
        other => return Err(format!("field class type `{other}` is not read")),
    })
}

fn order(value: &Value) -> ByteOrder {
    match value.get("byte-order").and_then(Value::as_str) {
        Some("big-endian" | "be") => ByteOrder::Big,
        _ => ByteOrder::Little,
    }
}

fn roles(value: &Value) -> Role {
    let mut role = Role::None;
    for name in value
        .get("roles")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        role = match name {
            "packet-magic-number" => Role::Magic,
            "data-stream-class-id" => Role::StreamClassId,
            "packet-total-length" => Role::PacketTotalBits,
            "packet-content-length" => Role::PacketContentBits,
            "default-clock-timestamp" => Role::ClockTimestamp,
            "packet-end-default-clock-timestamp" => Role::PacketEndTimestamp,
            "event-record-class-id" => Role::EventClassId,
            _ => role,
        };
    }
    role
}

/// `[[lo, hi], ...]` as inclusive ranges.
fn ranges_of(value: &Value) -> Vec<(i128, i128)> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|pair| {
            let pair = pair.as_array()?;
            let bound = |v: &Value| {
                v.as_i64()
                    .map(i128::from)
                    .or_else(|| v.as_u64().map(i128::from))
            };
            Some((bound(pair.first()?)?, bound(pair.get(1)?)?))
        })
        .collect()
}
