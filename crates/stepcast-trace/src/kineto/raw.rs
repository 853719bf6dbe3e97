//! Serde mirrors of Kineto records, borrowing from the input. Checked and normalized in `build`.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::value::RawValue;

/// One element of `traceEvents`, as written. Every field is optional: the checks are ours.
/// Filled by the single-pass reader in `fast.rs`; the serde derive is the reference it is
/// tested against.
#[derive(Deserialize, Debug, Default, PartialEq)]
pub struct RawEvent<'a> {
    #[serde(borrow)]
    pub ph: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pub cat: Option<Cow<'a, str>>,
    /// Kept as bytes: checked as UTF-8 by the builder once per distinct name.
    #[serde(borrow)]
    pub name: Option<RawText<'a>>,
    pub pid: Option<LaneNumber>,
    pub tid: Option<LaneNumber>,
    /// Microseconds, possibly with a fraction down to nanoseconds: parsed from the text, since an
    /// `f64` cannot hold today's epoch microseconds to the nanosecond.
    pub ts: Option<Timestamp>,
    /// Durations are small: an `f64` holds them to well below a nanosecond.
    pub dur: Option<Micros>,
    /// Flow id (`s`/`f` events).
    pub id: Option<Int>,
    #[serde(borrow)]
    pub args: Option<RawArgs<'a>>,
}

/// The `args` members stepcast reads; all others are skipped by serde without allocating.
#[derive(Deserialize, Debug, Default, PartialEq)]
pub struct RawArgs<'a> {
    pub correlation: Option<Int>,
    #[serde(rename = "External id", alias = "external id")]
    pub external_id: Option<Int>,
    /// An op's record-function id (non-zero while an Execution Trace observer runs).
    #[serde(rename = "Record function id")]
    pub record_function_id: Option<Int>,
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
    /// `[memory]` events: bytes allocated (positive) or freed (negative).
    #[serde(rename = "Bytes")]
    pub alloc_bytes: Option<Int>,
    /// `[memory]` events: the address allocated or freed (an allocation and its free share
    /// it).
    #[serde(rename = "Addr")]
    pub addr: Option<Int>,
    /// `[memory]` events: the allocator's totals after the change.
    #[serde(rename = "Total Allocated")]
    pub total_allocated: Option<Int>,
    #[serde(rename = "Total Reserved")]
    pub total_reserved: Option<Int>,
    /// `[memory]` events: 0 for host memory, otherwise an accelerator (1 is CUDA).
    #[serde(rename = "Device Type")]
    pub device_type: Option<Int>,
    #[serde(rename = "Device Id")]
    pub device_id: Option<Int>,
    /// NCCL metadata (`record_param_comms`, NCCL kernels): see `model::CommArgs`.
    #[serde(rename = "Collective name", borrow)]
    pub collective_name: Option<Cow<'a, str>>,
    #[serde(rename = "In msg nelems")]
    pub in_msg_nelems: Option<Int>,
    #[serde(rename = "Out msg nelems")]
    pub out_msg_nelems: Option<Int>,
    #[serde(rename = "Group size")]
    pub group_size: Option<Int>,
    #[serde(borrow)]
    pub dtype: Option<Cow<'a, str>>,
    #[serde(rename = "Process Group Name", borrow)]
    pub pg_name: Option<Cow<'a, str>>,
    #[serde(rename = "Seq")]
    pub comm_seq: Option<Int>,
    /// `"[0, 1]"` (a string of a list, as PyTorch writes it) or a list.
    #[serde(rename = "Process Group Ranks", borrow)]
    pub pg_ranks: Option<RawJson<'a>>,
    /// Op input shapes and types (`record_shapes=True`), as the file wrote them; read into
    /// `model::OpInput`s by `inputs.rs`.
    #[serde(rename = "Input Dims", borrow)]
    pub input_dims: Option<RawJson<'a>>,
    /// Kernels: CUPTI's summary of the launch configuration (numbers kept as written, read
    /// into `model::KernelFill`).
    #[serde(rename = "warps per SM", borrow)]
    pub warps_per_sm: Option<RawJson<'a>>,
    #[serde(rename = "est. achieved occupancy %", borrow)]
    pub occupancy_pct: Option<RawJson<'a>>,
    /// Kernels: the grid, `[x, y, z]` as written.
    #[serde(borrow)]
    pub grid: Option<RawJson<'a>>,
    #[serde(rename = "Input type", borrow)]
    pub input_type: Option<RawJson<'a>>,
    /// The values of an op's number and number-list inputs as text (`"[2, 2]"`, `"1"`), one
    /// per input, `""` for the others.
    #[serde(rename = "Concrete Inputs", borrow)]
    pub concrete_inputs: Option<RawJson<'a>>,
}

/// A string value as bytes, not yet checked as UTF-8 where it was read without escapes (the
/// fast reader; serde gives checked text). Compared by content.
#[derive(Debug, Clone)]
pub enum RawText<'a> {
    Bytes(&'a [u8]),
    Decoded(String),
}

impl RawText<'_> {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            RawText::Bytes(bytes) => bytes,
            RawText::Decoded(text) => text.as_bytes(),
        }
    }
}

impl PartialEq for RawText<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawText<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = RawText<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<RawText<'de>, E> {
                Ok(RawText::Bytes(v.as_bytes()))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawText<'de>, E> {
                Ok(RawText::Decoded(v.to_string()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<RawText<'de>, E> {
                Ok(RawText::Decoded(v))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// A JSON value kept as the text the file wrote (parsed later, by whoever needs it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawJson<'a>(pub &'a str);

impl<'de: 'a, 'a> Deserialize<'de> for RawJson<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw: &'a RawValue = Deserialize::deserialize(deserializer)?;
        Ok(RawJson(raw.get()))
    }
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

/// A `pid`/`tid` field: an integer, or a string that may hold one (`"25738"`, `"stream 7"`).
/// The number is `None` when the text names none (`"Spans"`); a string is also kept as written,
/// so reports can name the lane in the file's own terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaneNumber(pub Option<i64>, pub Option<Box<str>>);

impl<'de> Deserialize<'de> for LaneNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct LaneVisitor;
        impl<'de> Visitor<'de> for LaneVisitor {
            type Value = LaneNumber;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a process or thread id")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LaneNumber, E> {
                Ok(LaneNumber(Some(v), None))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LaneNumber, E> {
                Ok(LaneNumber(i64::try_from(v).ok(), None))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<LaneNumber, E> {
                let fits = v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15;
                Ok(LaneNumber(fits.then_some(v as i64), None))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LaneNumber, E> {
                Ok(LaneNumber(lane_number_text(v), Some(v.into())))
            }
        }
        deserializer.deserialize_any(LaneVisitor)
    }
}

impl LaneNumber {
    pub fn get(&self) -> Option<i64> {
        self.0
    }

    /// The id as the file wrote it, when it wrote a string.
    pub fn label(&self) -> Option<&str> {
        self.1.as_deref()
    }
}

/// A duration in microseconds, as a number (or a string holding one), converted to
/// nanoseconds. `None` inside when it is not a finite number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Micros(pub Option<i64>);

impl<'de> Deserialize<'de> for Micros {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MicrosVisitor;
        impl<'de> Visitor<'de> for MicrosVisitor {
            type Value = Micros;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a duration in microseconds")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Micros, E> {
                Ok(Micros(v.checked_mul(1000)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Micros, E> {
                Ok(Micros(
                    i64::try_from(v).ok().and_then(|v| v.checked_mul(1000)),
                ))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Micros, E> {
                let ns = (v * 1000.0).round();
                Ok(Micros(
                    (ns.is_finite() && ns.abs() < 9.0e18).then_some(ns as i64),
                ))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Micros, E> {
                Ok(Micros(v.trim().parse::<f64>().ok().and_then(|f| {
                    let ns = (f * 1000.0).round();
                    (ns.is_finite() && ns.abs() < 9.0e18).then_some(ns as i64)
                })))
            }
        }
        deserializer.deserialize_any(MicrosVisitor)
    }
}

impl Micros {
    pub fn get(self) -> Option<i64> {
        self.0
    }
}

/// An event time in nanoseconds, parsed exactly from the decimal text of microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timestamp(pub Option<i64>);

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw: &RawValue = Deserialize::deserialize(deserializer)?;
        Ok(Timestamp(micros_text_to_ns(raw.get())))
    }
}

impl Timestamp {
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
    #[serde(rename = "numSms")]
    pub num_sms: Option<Int>,
    #[serde(rename = "maxThreadsPerMultiprocessor")]
    pub max_threads_per_sm: Option<Int>,
    #[serde(rename = "totalGlobalMem")]
    pub total_global_mem: Option<Int>,
}

/// `distributedInfo`.
#[derive(Deserialize)]
pub struct RawDistributed {
    pub rank: Option<Int>,
    pub world_size: Option<Int>,
    pub backend: Option<String>,
    /// The declared process groups: a list of `{pg_name, pg_desc, pg_size, ranks}` in the
    /// versions seen; kept as written and read leniently (`build.rs`), so that a version of
    /// another shape costs the groups, not the trace.
    pub pg_config: Option<serde_json::Value>,
}

/// Parses a Kineto timestamp or duration (microseconds as a JSON number) into nanoseconds,
/// exactly: `1712867402348256.123` is `1712867402348256123`. Sub-nanosecond digits are rounded
/// half up, so two events one nanosecond apart never swap order.
pub fn micros_text_to_ns(text: &str) -> Option<i64> {
    micros_bytes_to_ns(text.as_bytes())
}

/// [`micros_text_to_ns`] on bytes (the reader parses numbers without a UTF-8 check), in one
/// pass over the digits: this runs for every timestamp of a trace.
pub fn micros_bytes_to_ns(text: &[u8]) -> Option<i64> {
    let text = text.trim_ascii();
    let text = text
        .strip_prefix(b"\"")
        .and_then(|t| t.strip_suffix(b"\""))
        .unwrap_or(text);
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let mut micros: i64 = 0;
    let mut at = 0;
    while let Some(&b) = digits.get(at).filter(|b| b.is_ascii_digit()) {
        micros = micros.checked_mul(10)?.checked_add((b - b'0') as i64)?;
        at += 1;
    }
    let int_digits = at;
    // Three fractional digits are nanoseconds; the fourth rounds (half up); the rest are
    // only checked.
    let mut frac_ns: i64 = 0;
    let mut frac_digits = 0;
    if digits.get(at) == Some(&b'.') {
        at += 1;
        while let Some(&b) = digits.get(at).filter(|b| b.is_ascii_digit()) {
            let digit = (b - b'0') as i64;
            match frac_digits {
                0..=2 => frac_ns += digit * [100, 10, 1][frac_digits],
                3 if digit >= 5 => frac_ns += 1,
                _ => {}
            }
            frac_digits += 1;
            at += 1;
        }
    }
    if at < digits.len() {
        if !matches!(digits[at], b'e' | b'E') {
            return None;
        }
        // An exponent: rare enough for a float parse.
        let micros: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
        let ns = (micros * 1000.0).round();
        return (ns.is_finite() && ns.abs() < 9.0e18).then_some(ns as i64);
    }
    if int_digits == 0 && frac_digits == 0 {
        return None;
    }
    let ns = micros.checked_mul(1000)?.checked_add(frac_ns)?;
    Some(if negative { -ns } else { ns })
}

/// The number a `pid`/`tid` string names: `"25738"`, or the trailing number of `"stream 7"`.
pub(super) fn lane_number_text(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(n) = text.parse() {
        return Some(n);
    }
    let digits_from = text
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    text[digits_from..].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_keep_nanoseconds_beyond_f64_precision() {
        assert_eq!(
            micros_text_to_ns("1712867402348256.123"),
            Some(1_712_867_402_348_256_123)
        );
        assert_eq!(
            micros_text_to_ns("1712867402348256"),
            Some(1_712_867_402_348_256_000)
        );
        assert_eq!(micros_text_to_ns("0.0015"), Some(2));
        assert_eq!(micros_text_to_ns("-3"), Some(-3000));
        assert_eq!(micros_text_to_ns("1.5e3"), Some(1_500_000));
        assert_eq!(micros_text_to_ns("\"12\""), Some(12_000));
        assert_eq!(micros_text_to_ns("null"), None);
    }

    #[test]
    fn lane_numbers_from_strings() {
        let lane = |text: &str| {
            serde_json::from_str::<LaneNumber>(text)
                .expect("lane")
                .get()
        };
        assert_eq!(lane("\"stream 7\""), Some(7));
        assert_eq!(lane("\"25738\""), Some(25738));
        assert_eq!(lane("\"Spans\""), None);
        assert_eq!(lane("-1"), Some(-1));
        let micros = |text: &str| serde_json::from_str::<Micros>(text).expect("dur").get();
        assert_eq!(micros("4426.114"), Some(4_426_114));
        assert_eq!(micros("12"), Some(12_000));
    }
}
