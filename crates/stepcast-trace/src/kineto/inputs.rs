//! Kineto's argument text turned into typed fields, once, at read time: an op's `Input Dims` and
//! `Input type` into [`OpInput`]s, and the one table of PyTorch's type names into [`Dtype`]
//! (for op inputs and for a collective's `dtype`). The core never sees these spellings.

use crate::model::{Diagnostics, Dtype, OpInput};

/// PyTorch's type names as profilers write them, matched ignoring ASCII case after a `c10::`
/// prefix: the C++ type names of op inputs (`float`, `c10::BFloat16`, `long int`, `unsigned
/// char`: `caffe2::TypeMeta::name`), the `ScalarType` names of a collective's `dtype` (`Float`,
/// `Byte`, `Long`), and the NumPy-style aliases some tools write (`float32`, `int64`). One name
/// never means two sizes across these spellings (`Int` and `int` are both 32-bit).
const DTYPE_NAMES: &[(&str, Dtype)] = &[
    ("float", Dtype::Float32),
    ("float32", Dtype::Float32),
    ("double", Dtype::Float64),
    ("float64", Dtype::Float64),
    ("half", Dtype::Float16),
    ("float16", Dtype::Float16),
    ("bfloat16", Dtype::BFloat16),
    ("long", Dtype::Int64),
    ("long int", Dtype::Int64),
    ("long long", Dtype::Int64),
    ("int64", Dtype::Int64),
    ("int64_t", Dtype::Int64),
    ("int", Dtype::Int32),
    ("int32", Dtype::Int32),
    ("short", Dtype::Int16),
    ("short int", Dtype::Int16),
    ("int16", Dtype::Int16),
    ("char", Dtype::Int8),
    ("signed char", Dtype::Int8),
    ("int8", Dtype::Int8),
    ("byte", Dtype::UInt8),
    ("unsigned char", Dtype::UInt8),
    ("uint8", Dtype::UInt8),
    ("bool", Dtype::Bool),
    ("unsigned short", Dtype::UInt16),
    ("uint16", Dtype::UInt16),
    ("unsigned int", Dtype::UInt32),
    ("uint32", Dtype::UInt32),
    ("unsigned long", Dtype::UInt64),
    ("uint64", Dtype::UInt64),
    ("complex<half>", Dtype::Complex32),
    ("complexhalf", Dtype::Complex32),
    ("complex<float>", Dtype::Complex64),
    ("complexfloat", Dtype::Complex64),
    ("complex<double>", Dtype::Complex128),
    ("complexdouble", Dtype::Complex128),
];

/// The [`Dtype`] a PyTorch type name stands for (see [`DTYPE_NAMES`]; `Float8_*` are the
/// 8-bit floats), `None` for a name not in the table.
pub fn dtype_of_name(name: &str) -> Option<Dtype> {
    // The spellings real traces write most, exactly: no case folding to pay for.
    match name {
        "float" | "Float" => return Some(Dtype::Float32),
        "c10::BFloat16" | "BFloat16" => return Some(Dtype::BFloat16),
        "c10::Half" | "Half" => return Some(Dtype::Float16),
        "long int" | "long" | "Long" => return Some(Dtype::Int64),
        "int" => return Some(Dtype::Int32),
        "double" => return Some(Dtype::Float64),
        "bool" => return Some(Dtype::Bool),
        "unsigned char" | "Byte" => return Some(Dtype::UInt8),
        _ => {}
    }
    let name = name.trim();
    let name = name.strip_prefix("c10::").unwrap_or(name);
    if name
        .get(..7)
        .is_some_and(|p| p.eq_ignore_ascii_case("float8_"))
    {
        return Some(Dtype::Float8);
    }
    DTYPE_NAMES
        .iter()
        .find(|(spelling, _)| spelling.eq_ignore_ascii_case(name))
        .map(|&(_, dtype)| dtype)
}

/// `Input type` entries that name a number, not a tensor (`IValue` tags). Checked before the
/// dtype table: as a tag, `Int` is a Python int, not an int32 tensor.
const SCALAR_TAGS: &[&str] = &[
    "Scalar",
    "Int",
    "Double",
    "Bool",
    "ComplexDouble",
    "SymInt",
    "SymFloat",
    "SymBool",
];

/// What one top-level entry of `Input Dims` held.
#[derive(Debug, PartialEq)]
enum DimsEntry {
    /// A list of integers: a tensor's sizes.
    Sizes(Vec<i64>),
    /// A non-empty list of lists of integers: a tensor list's sizes.
    Lists(Vec<Vec<i64>>),
    /// Anything else (a scalar, a string, a non-integer or out-of-range size, deeper lists).
    Unreadable,
}

/// Why an op's inputs could not be read at all.
const UNREADABLE_DIMS: &str = "op inputs whose `Input Dims` is not a JSON list";
const BAD_SHAPE: &str = "tensor inputs whose `Input Dims` entry is not a list of integers";
const UNKNOWN_DTYPE: &str = "tensor inputs of an `Input type` not in the dtype table";
const BAD_TYPES: &str = "op inputs whose `Input type` is not a list of strings";
const MISSING_TYPES: &str = "op inputs without `Input type`";

/// The typed inputs of an op from its `Input Dims`, `Input type` and `Concrete Inputs` text
/// (JSON, as written), one per `Input Dims` entry. `None` (counted) when `Input Dims` is not a
/// JSON list; an entry that cannot be read becomes [`OpInput::Other`], counted when its type
/// says it is a tensor. A number or number list recorded by value as integers becomes
/// [`OpInput::Int`] or [`OpInput::Ints`].
pub fn op_inputs(
    dims: &str,
    types: Option<&str>,
    concrete: Option<&str>,
    diagnostics: &mut Diagnostics,
) -> Option<Vec<OpInput>> {
    let Some(entries) = parse_dims(dims) else {
        diagnostics.arg_unread(UNREADABLE_DIMS);
        return None;
    };
    let types: Vec<std::borrow::Cow<'_, str>> = match types {
        // The type names have no escapes: borrowed; serde_json only for text that has some.
        Some(text) => match plain_strings(text) {
            Some(names) => names.into_iter().map(std::borrow::Cow::Borrowed).collect(),
            None => serde_json::from_str(text).unwrap_or_else(|_| {
                diagnostics.arg_unread(BAD_TYPES);
                Vec::new()
            }),
        },
        None => {
            diagnostics.arg_unread(MISSING_TYPES);
            Vec::new()
        }
    };
    // The values, where recorded: strings without escapes (`"[2, 2]"`, `"1"`, `""`); anything
    // else is no value, not an error (the shapes stand without them).
    let values: Vec<&str> = concrete.and_then(plain_strings).unwrap_or_default();
    let inputs = entries
        .into_iter()
        .enumerate()
        .map(|(k, entry)| {
            let name = types.get(k).map_or("", |t| t.as_ref());
            match (typed_input(entry, name, diagnostics), values.get(k)) {
                (OpInput::Scalar, Some(value)) if name != "Double" => match value.trim() {
                    "True" => OpInput::Bool(true),
                    "False" => OpInput::Bool(false),
                    value => value.parse().map_or(OpInput::Scalar, OpInput::Int),
                },
                (OpInput::Other, Some(value)) if name == "ScalarList" => {
                    integer_list(value).map_or(OpInput::Other, OpInput::Ints)
                }
                (input, _) => input,
            }
        })
        .collect();
    Some(inputs)
}

/// `[2, 2]` as its integers; `None` for anything else.
fn integer_list(text: &str) -> Option<Vec<i64>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
    if inner.is_empty() {
        return Some(Vec::new());
    }
    inner
        .split(',')
        .map(|part| part.trim().parse().ok())
        .collect()
}

fn typed_input(entry: DimsEntry, name: &str, diagnostics: &mut Diagnostics) -> OpInput {
    // PyTorch writes "" for an absent optional tensor (and for inputs it cannot name).
    if name.is_empty() {
        return OpInput::Other;
    }
    if SCALAR_TAGS.contains(&name) {
        return OpInput::Scalar;
    }
    if name == "TensorList" {
        return match entry {
            DimsEntry::Lists(shapes) => OpInput::TensorList(shapes),
            DimsEntry::Sizes(sizes) if sizes.is_empty() => OpInput::TensorList(Vec::new()),
            _ => {
                diagnostics.arg_unread(BAD_SHAPE);
                OpInput::Other
            }
        };
    }
    let dtype = dtype_of_name(name);
    // A name outside the table is still a tensor's when it is spelled like a C++ type (lower
    // case or `c10::`); `IValue` tags (`ScalarList`, `GenericList`, `String`) are capitalized.
    let tensor =
        dtype.is_some() || name.starts_with("c10::") || name.starts_with(char::is_lowercase);
    if !tensor {
        return OpInput::Other;
    }
    match entry {
        DimsEntry::Sizes(shape) => {
            if dtype.is_none() {
                diagnostics.arg_unread(UNKNOWN_DTYPE);
            }
            OpInput::Tensor { shape, dtype }
        }
        DimsEntry::Lists(_) | DimsEntry::Unreadable => {
            diagnostics.arg_unread(BAD_SHAPE);
            OpInput::Other
        }
    }
}

/// A cursor over JSON text. Nothing here recurses: the text comes from the trace, and a
/// recursive parser overflowed the thread's stack on hostile nesting (issue #11).
struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn peek(&mut self) -> Option<u8> {
        while self.b.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        let found = self.peek() == Some(c);
        if found {
            self.i += 1;
        }
        found
    }

    /// Skips one JSON value of any depth (a depth counter, not recursion). `None` when the
    /// text ends inside it.
    fn skip_value(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => self.skip_string()?,
                b'[' | b'{' => {
                    depth += 1;
                    self.i += 1;
                }
                b']' | b'}' => {
                    depth = depth.checked_sub(1)?;
                    self.i += 1;
                }
                _ => {
                    let start = self.i;
                    self.skip_scalar();
                    if self.i == start {
                        // A `,` or `:` between values of a container being skipped.
                        self.i += 1;
                    }
                }
            }
            if depth == 0 {
                return Some(());
            }
        }
    }

    fn skip_string(&mut self) -> Option<()> {
        self.i += 1;
        while *self.b.get(self.i)? != b'"' {
            self.i += if self.b[self.i] == b'\\' { 2 } else { 1 };
        }
        self.i += 1;
        Some(())
    }

    /// Skips a number or literal; returns its text.
    fn skip_scalar(&mut self) -> &[u8] {
        let start = self.i;
        while self.b.get(self.i).is_some_and(|c| {
            !matches!(c, b',' | b']' | b'}' | b':' | b'[' | b'{' | b'"') && !c.is_ascii_whitespace()
        }) {
            self.i += 1;
        }
        &self.b[start..self.i]
    }

    /// After a list's `[`: its integers, `None` (the list skipped to its `]`) when an element
    /// is anything else. The outer `None` is text ending inside the list.
    fn int_list(&mut self) -> Option<Option<Vec<i64>>> {
        let mut sizes = Vec::new();
        let mut ok = true;
        loop {
            match self.peek()? {
                b']' => {
                    self.i += 1;
                    return Some(ok.then_some(sizes));
                }
                b',' => self.i += 1,
                b'-' | b'0'..=b'9' => {
                    let text = self.skip_scalar();
                    match std::str::from_utf8(text).ok().and_then(|t| t.parse().ok()) {
                        Some(size) if ok => sizes.push(size),
                        _ => ok = false,
                    }
                }
                _ => {
                    self.skip_value()?;
                    ok = false;
                }
            }
        }
    }
}

/// Walks the whole of `text` as one JSON list: `item` reads each entry from its first byte
/// (the cursor on it). `false` when the text is not a list, an entry is refused, or text
/// follows the list.
fn whole_list(text: &str, mut item: impl FnMut(&mut Cursor<'_>, u8) -> Option<()>) -> bool {
    let mut c = Cursor {
        b: text.as_bytes(),
        i: 0,
    };
    if !c.eat(b'[') {
        return false;
    }
    loop {
        match c.peek() {
            None => return false,
            Some(b']') => {
                c.i += 1;
                break;
            }
            Some(b',') => c.i += 1,
            Some(first) => {
                if item(&mut c, first).is_none() {
                    return false;
                }
            }
        }
    }
    c.peek().is_none()
}

/// The strings of a JSON list of strings without escapes (`["float", "", "Scalar"]`); `None`
/// for any other text.
fn plain_strings(text: &str) -> Option<Vec<&str>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let whole = whole_list(text, |c, first| {
        if first != b'"' {
            return None;
        }
        let start = c.i + 1;
        let len = memchr::memchr2(b'"', b'\\', bytes.get(start..)?)?;
        if bytes[start + len] == b'\\' {
            return None;
        }
        out.push(text.get(start..start + len)?);
        c.i = start + len + 1;
        Some(())
    });
    whole.then_some(out)
}

/// The top-level entries of `Input Dims` text, `None` when it is not a whole JSON list.
fn parse_dims(text: &str) -> Option<Vec<DimsEntry>> {
    let mut entries = Vec::new();
    let whole = whole_list(text, |c, first| {
        if first == b'[' {
            c.i += 1;
            entries.push(dims_entry(c)?);
        } else {
            c.skip_value()?;
            entries.push(DimsEntry::Unreadable);
        }
        Some(())
    });
    whole.then_some(entries)
}

/// One entry of `Input Dims`, after its `[`: sizes, or a list of sizes.
fn dims_entry(c: &mut Cursor<'_>) -> Option<DimsEntry> {
    if c.peek()? != b'[' {
        return Some(match c.int_list()? {
            Some(sizes) => DimsEntry::Sizes(sizes),
            None => DimsEntry::Unreadable,
        });
    }
    let mut lists = Vec::new();
    let mut ok = true;
    loop {
        match c.peek()? {
            b']' => {
                c.i += 1;
                break;
            }
            b',' => c.i += 1,
            b'[' => {
                c.i += 1;
                match c.int_list()? {
                    Some(sizes) if ok => lists.push(sizes),
                    _ => ok = false,
                }
            }
            _ => {
                c.skip_value()?;
                ok = false;
            }
        }
    }
    Some(if ok {
        DimsEntry::Lists(lists)
    } else {
        DimsEntry::Unreadable
    })
}

#[cfg(test)]
mod tests {
    use super::{DimsEntry, dtype_of_name, op_inputs, parse_dims};
    use crate::model::{Diagnostics, Dtype, OpInput};

    #[test]
    fn dims_parse_as_recorded() {
        assert_eq!(
            parse_dims(r#"[[2, 3], [], [[4], [5, 6]], "x", [1.5], [[[7]]]]"#),
            Some(vec![
                DimsEntry::Sizes(vec![2, 3]),
                DimsEntry::Sizes(vec![]),
                DimsEntry::Lists(vec![vec![4], vec![5, 6]]),
                DimsEntry::Unreadable,
                DimsEntry::Unreadable,
                DimsEntry::Unreadable,
            ])
        );
        assert_eq!(parse_dims("[[2, 3]"), None, "unclosed");
        assert_eq!(parse_dims("[[2, 3]] x"), None, "trailing text");
        assert_eq!(parse_dims("{}"), None);
        assert_eq!(parse_dims(""), None);
    }

    /// Hostile nesting (a million brackets) is read without recursing: it once overflowed the
    /// stack (issue #11). Balanced, it is an unreadable entry; unbalanced, no inputs at all.
    #[test]
    fn deep_nesting_is_refused_not_a_stack_overflow() {
        let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
        assert_eq!(parse_dims(&deep), Some(vec![DimsEntry::Unreadable]));
        assert_eq!(parse_dims(&"[".repeat(1_000_000)), None);
        assert_eq!(parse_dims(&"]".repeat(1_000_000)), None);
    }

    #[test]
    fn hostile_sizes_give_no_count_and_no_panic() {
        let mut diagnostics = Diagnostics::default();
        let inputs = op_inputs(
            "[[9223372036854775807, 2], [-1, 4], [99999999999999999999], [3]]",
            Some(r#"["float", "c10::Half", "double", "c10::Float9"]"#),
            None,
            &mut diagnostics,
        )
        .unwrap_or_default();
        assert_eq!(inputs.len(), 4);
        assert_eq!(inputs[0].elements(), None, "overflow");
        assert_eq!(inputs[1].bytes(), None, "negative size");
        assert_eq!(inputs[2], OpInput::Other, "past i64");
        assert_eq!(
            inputs[3],
            OpInput::Tensor {
                shape: vec![3],
                dtype: None
            }
        );
        assert_eq!(inputs[3].bytes(), None, "unknown dtype");
        assert_eq!(diagnostics.args_unread.values().sum::<u64>(), 2);
    }

    #[test]
    fn types_say_what_an_input_is() {
        let mut diagnostics = Diagnostics::default();
        let inputs = op_inputs(
            "[[2, 3], [], [], [[4], [5]], [], [2]]",
            Some(r#"["c10::BFloat16", "Scalar", "", "TensorList", "Int", "ScalarList"]"#),
            None,
            &mut diagnostics,
        );
        assert_eq!(
            inputs,
            Some(vec![
                OpInput::Tensor {
                    shape: vec![2, 3],
                    dtype: Some(Dtype::BFloat16)
                },
                OpInput::Scalar,
                OpInput::Other,
                OpInput::TensorList(vec![vec![4], vec![5]]),
                OpInput::Scalar,
                OpInput::Other,
            ])
        );
        assert_eq!(inputs.and_then(|i| i[0].bytes()), Some(12));
        assert!(diagnostics.args_unread.is_empty());
    }

    #[test]
    fn one_table_for_both_spellings() {
        for (cpp, scalar_type) in [
            ("float", "Float"),
            ("c10::Half", "Half"),
            ("c10::BFloat16", "BFloat16"),
            ("long int", "Long"),
            ("unsigned char", "Byte"),
            ("double", "Double"),
            ("bool", "Bool"),
            ("int", "Int"),
        ] {
            assert!(dtype_of_name(cpp).is_some(), "{cpp}");
            assert_eq!(dtype_of_name(cpp), dtype_of_name(scalar_type), "{cpp}");
        }
        assert_eq!(dtype_of_name("Float8_e4m3fn").map(Dtype::bytes), Some(1));
        assert_eq!(
            dtype_of_name("c10::complex<float>").map(Dtype::bytes),
            Some(8)
        );
        assert_eq!(dtype_of_name("long").map(Dtype::bytes), Some(8));
        assert_eq!(dtype_of_name("Scalar"), None);
        assert_eq!(dtype_of_name("float8"), None);
    }
}
