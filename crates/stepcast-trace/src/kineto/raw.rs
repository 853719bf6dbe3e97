//! Serde mirrors of Kineto records, borrowing from the input. Checked and normalized in `build`.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::value::RawValue;

/// One element of `traceEvents`, as written. Every field is optional: the checks are ours.
#[derive(Deserialize)]
pub struct RawEvent<'a> {
    #[serde(borrow)]
    pub ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub cat: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub pid: Option<&'a RawValue>,
    #[serde(borrow)]
    pub tid: Option<&'a RawValue>,
    /// Microseconds, possibly with a fraction down to nanoseconds: parsed from the text, since an
    /// `f64` cannot hold today's epoch microseconds to the nanosecond.
    #[serde(borrow)]
    pub ts: Option<&'a RawValue>,
    #[serde(borrow)]
    pub dur: Option<&'a RawValue>,
    /// Flow id (`s`/`f` events).
    #[serde(borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(borrow)]
    pub args: Option<RawArgs<'a>>,
}

/// The `args` members stepcast reads; all others are skipped by serde without allocating.
#[derive(Deserialize, Default)]
pub struct RawArgs<'a> {
    pub correlation: Option<Int>,
    #[serde(rename = "External id", alias = "external id")]
    pub external_id: Option<Int>,
    pub device: Option<Int>,
    pub stream: Option<Int>,
    /// MTIA writes the stream as a string.
    pub stream_id: Option<Int>,
    pub bytes: Option<Int>,
    #[serde(rename = "Sequence number")]
    pub sequence_number: Option<Int>,
    #[serde(borrow)]
    pub cuda_sync_kind: Option<Cow<'a, str>>,
    pub wait_on_stream: Option<Int>,
    pub wait_on_cuda_event_record_corr_id: Option<Int>,
    /// Thread or process name of an `M` record.
    #[serde(borrow)]
    pub name: Option<Cow<'a, str>>,
}

/// An integer written as a JSON integer, a float with an integral value, or a string of digits.
/// Values outside `i64` (64-bit ids such as `Comms Id`) are kept as `None`, never wrapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Int(pub Option<i64>);

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IntVisitor;
        impl<'de> Visitor<'de> for IntVisitor {
            type Value = Int;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Int, E> {
                Ok(Int(Some(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Int, E> {
                Ok(Int(i64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Int, E> {
                let fits = v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15;
                Ok(Int(fits.then_some(v as i64)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Int, E> {
                Ok(Int(v.trim().parse().ok()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Int, E> {
                Ok(Int(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Int, E> {
                Ok(Int(None))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Int, A::Error> {
                while seq.next_element::<de::IgnoredAny>()?.is_some() {}
                Ok(Int(None))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Int, A::Error> {
                while map
                    .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Int(None))
            }
        }
        deserializer.deserialize_any(IntVisitor)
    }
}

impl Int {
    pub fn get(self) -> Option<i64> {
        self.0
    }
}

/// `deviceProperties[i]`.
#[derive(Deserialize)]
pub struct RawDevice {
    pub id: Option<Int>,
    pub name: Option<String>,
    #[serde(rename = "computeMajor")]
    pub compute_major: Option<Int>,
    #[serde(rename = "computeMinor")]
    pub compute_minor: Option<Int>,
}

/// `distributedInfo`.
#[derive(Deserialize)]
pub struct RawDistributed {
    pub rank: Option<Int>,
    pub world_size: Option<Int>,
    pub backend: Option<String>,
}

/// Parses a Kineto timestamp or duration (microseconds as a JSON number) into nanoseconds,
/// exactly: `1712867402348256.123` is `1712867402348256123`. Sub-nanosecond digits are rounded
/// half up, so two events one nanosecond apart never swap order.
pub fn micros_to_ns(raw: &RawValue) -> Option<i64> {
    let text = raw.get().trim();
    let text = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    if digits.contains(['e', 'E']) {
        let micros: f64 = text.parse().ok()?;
        let ns = (micros * 1000.0).round();
        return (ns.is_finite() && ns.abs() < 9.0e18).then_some(ns as i64);
    }
    let (int_part, frac_part) = match digits.split_once('.') {
        Some((i, f)) => (i, f),
        None => (digits, ""),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut ns: i64 = 0;
    for b in int_part.bytes() {
        if !b.is_ascii_digit() {
            return None;
        }
        ns = ns.checked_mul(10)?.checked_add((b - b'0') as i64)?;
    }
    ns = ns.checked_mul(1000)?;
    let frac = frac_part.as_bytes();
    let mut scale = 100;
    for (i, &b) in frac.iter().enumerate() {
        if !b.is_ascii_digit() {
            return None;
        }
        let digit = (b - b'0') as i64;
        if i < 3 {
            ns += digit * scale;
            scale /= 10;
        } else {
            if i == 3 && digit >= 5 {
                ns += 1;
            }
            if i >= 3 {
                // Remaining digits only needed for validation.
                continue;
            }
        }
    }
    Some(if negative { -ns } else { ns })
}

/// A `pid`/`tid` field: an integer, or a string that may hold one (`"25738"`, `"stream 7"`).
pub fn lane_number(raw: &RawValue) -> Option<i64> {
    let text = raw.get().trim();
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        if let Ok(n) = inner.trim().parse() {
            return Some(n);
        }
        // "stream 7", "GPU 0": the trailing number names the resource.
        let digits_from = inner
            .rfind(|c: char| !c.is_ascii_digit())
            .map_or(0, |i| i + 1);
        return inner[digits_from..].parse().ok();
    }
    if let Ok(n) = text.parse::<i64>() {
        return Some(n);
    }
    text.parse::<f64>()
        .ok()
        .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
        .map(|f| f as i64)
}

/// A flow id: an integer or a string.
pub fn flow_id(raw: &RawValue) -> Option<u64> {
    let text = raw.get().trim();
    let text = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).expect("raw value")
    }

    #[test]
    fn timestamps_keep_nanoseconds_beyond_f64_precision() {
        assert_eq!(
            micros_to_ns(&raw("1712867402348256.123")),
            Some(1_712_867_402_348_256_123)
        );
        assert_eq!(
            micros_to_ns(&raw("1712867402348256")),
            Some(1_712_867_402_348_256_000)
        );
        assert_eq!(micros_to_ns(&raw("0.0015")), Some(2));
        assert_eq!(micros_to_ns(&raw("-3")), Some(-3000));
        assert_eq!(micros_to_ns(&raw("1.5e3")), Some(1_500_000));
        assert_eq!(micros_to_ns(&raw("\"12\"")), Some(12_000));
        assert_eq!(micros_to_ns(&raw("null")), None);
    }

    #[test]
    fn lane_numbers_from_strings() {
        assert_eq!(lane_number(&raw("\"stream 7\"")), Some(7));
        assert_eq!(lane_number(&raw("\"25738\"")), Some(25738));
        assert_eq!(lane_number(&raw("\"Spans\"")), None);
        assert_eq!(lane_number(&raw("-1")), Some(-1));
    }
}
