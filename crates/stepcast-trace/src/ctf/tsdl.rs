//! CTF 1.8 metadata: the Trace Stream Description Language (TSDL), as text or packetized
//! (LTTng writes its metadata in packets, each a 37-byte header and a slice of the text).
//!
//! A recursive-descent parser of the declarations tracers write: `typealias`, `typedef`,
//! `trace`, `env`, `clock`, `stream`, `event` and `callsite` blocks, named `struct`, `enum`
//! and `variant` definitions, and the field classes `integer`, `floating_point`, `string`,
//! `struct`, `enum`, `variant`, arrays and sequences. Errors are one sentence with the token
//! where parsing stopped.

use std::collections::HashMap;
use std::rc::Rc;

use super::metadata::{
    ByteOrder, Clock, EventClass, FieldClass, FieldRef, IntClass, Role, StreamClass, TraceClass,
    VariantOption,
};

/// The magic number of a metadata packet, as a little-endian `u32` reads it.
const METADATA_PACKET_MAGIC: u32 = 0x75D1_1D57;
/// A metadata packet header: magic, uuid, checksum, content and packet size (bits),
/// compression, encryption and checksum schemes, major and minor.
const METADATA_PACKET_HEADER_BYTES: usize = 37;

/// Whether `head` is packetized CTF 1.8 metadata (either byte order).
pub fn is_packetized(head: &[u8]) -> bool {
    head.get(..4)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .is_some_and(|b| {
            u32::from_le_bytes(b) == METADATA_PACKET_MAGIC
                || u32::from_be_bytes(b) == METADATA_PACKET_MAGIC
        })
}

/// The metadata text of a packetized metadata file.
pub fn unpacketize(bytes: &[u8]) -> Result<String, String> {
    let mut text = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        let header = bytes
            .get(at..at + METADATA_PACKET_HEADER_BYTES)
            .ok_or_else(|| format!("metadata packet at byte {at} is truncated"))?;
        let word =
            |i: usize| -> [u8; 4] { [header[i], header[i + 1], header[i + 2], header[i + 3]] };
        let little = u32::from_le_bytes(word(0)) == METADATA_PACKET_MAGIC;
        let read = |i: usize| {
            if little {
                u32::from_le_bytes(word(i))
            } else {
                u32::from_be_bytes(word(i))
            }
        };
        if !little && u32::from_be_bytes(word(0)) != METADATA_PACKET_MAGIC {
            return Err(format!("metadata packet at byte {at} has no magic number"));
        }
        let content_bytes = read(24) as usize / 8;
        let packet_bytes = read(28) as usize / 8;
        if header[32] != 0 || header[33] != 0 {
            return Err(format!(
                "metadata packet at byte {at} is compressed or encrypted, which is not read"
            ));
        }
        if content_bytes < METADATA_PACKET_HEADER_BYTES || packet_bytes < content_bytes {
            return Err(format!(
                "metadata packet at byte {at} has sizes that do not fit (content {content_bytes} B, packet {packet_bytes} B)"
            ));
        }
        let content = bytes
            .get(at + METADATA_PACKET_HEADER_BYTES..at + content_bytes)
            .ok_or_else(|| format!("metadata packet at byte {at} runs past the end of the file"))?;
        text.extend_from_slice(content);
        at += packet_bytes;
    }
    // Text, by the specification; a stray byte is not worth refusing the trace for.
    Ok(String::from_utf8_lossy(&text).into_owned())
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Ident(String),
    Int(i128),
    Str(String),
    Punct(&'static str),
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Ident(s) => write!(f, "`{s}`"),
            Token::Int(n) => write!(f, "`{n}`"),
            Token::Str(s) => write!(f, "\"{s}\""),
            Token::Punct(p) => write!(f, "`{p}`"),
        }
    }
}

const PUNCTS: [&str; 13] = [
    ":=", "...", "{", "}", "[", "]", "(", ")", "<", ">", ";", ",", "=",
];

fn lex(text: &str) -> Result<Vec<(Token, usize)>, String> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0usize;
    let mut line = 1usize;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
            i += 1;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else if bytes[i..].starts_with(b"//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if bytes[i..].starts_with(b"/*") {
            let end = text[i + 2..]
                .find("*/")
                .ok_or_else(|| format!("line {line}: a comment is never closed"))?;
            line += text[i..i + 2 + end].matches('\n').count();
            i += end + 4;
        } else if c == b'"' {
            let mut s = String::new();
            i += 1;
            loop {
                match bytes.get(i) {
                    None => return Err(format!("line {line}: a string is never closed")),
                    Some(b'"') => break,
                    Some(b'\\') => {
                        let next = text[i + 1..].chars().next();
                        s.push(match next {
                            Some('n') => '\n',
                            Some('t') => '\t',
                            Some(other) => other,
                            None => return Err(format!("line {line}: a string is never closed")),
                        });
                        i += 1 + next.map_or(0, char::len_utf8);
                    }
                    Some(_) => {
                        let ch = text[i..].chars().next().unwrap_or('?');
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            i += 1;
            tokens.push((Token::Str(s), line));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            tokens.push((Token::Ident(text[start..i].to_string()), line));
        } else if c.is_ascii_digit()
            || (c == b'-' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let negative = c == b'-';
            if negative {
                i += 1;
            }
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let literal = text[start..i].trim_end_matches(['u', 'U', 'l', 'L']);
            let value = if let Some(hex) = literal
                .strip_prefix("0x")
                .or_else(|| literal.strip_prefix("0X"))
            {
                i128::from_str_radix(hex, 16)
            } else if literal.len() > 1 && literal.starts_with('0') {
                i128::from_str_radix(&literal[1..], 8)
            } else {
                literal.parse::<i128>()
            }
            .map_err(|_| format!("line {line}: `{literal}` is not a number"))?;
            tokens.push((Token::Int(if negative { -value } else { value }), line));
        } else if c == b'.' && !bytes[i..].starts_with(b"...") {
            tokens.push((Token::Punct("."), line));
            i += 1;
        } else if c == b':' && !bytes[i..].starts_with(b":=") {
            tokens.push((Token::Punct(":"), line));
            i += 1;
        } else if let Some(p) = PUNCTS.iter().find(|p| bytes[i..].starts_with(p.as_bytes())) {
            tokens.push((Token::Punct(p), line));
            i += p.len();
        } else if c == b'*' || c == b'+' {
            // Pointers and `+` never appear in what tracers write; kept as a token so the
            // parser names it.
            tokens.push((Token::Punct(if c == b'*' { "*" } else { "+" }), line));
            i += 1;
        } else {
            return Err(format!(
                "line {line}: unexpected character {:?}",
                text[i..].chars().next().unwrap_or('?')
            ));
        }
    }
    Ok(tokens)
}

/// Type names that start a field class rather than name an alias.
const KEYWORDS: [&str; 6] = [
    "integer",
    "floating_point",
    "string",
    "struct",
    "enum",
    "variant",
];

/// How deeply field classes may nest: far more than tracers write, few enough that hostile
/// metadata cannot exhaust the stack of the parser or the decoder.
const MAX_NESTING: usize = 32;

struct Parser {
    tokens: Vec<(Token, usize)>,
    at: usize,
    /// Field classes being parsed, one inside the other.
    depth: usize,
    native: ByteOrder,
    aliases: HashMap<String, FieldClass>,
    structs: HashMap<String, FieldClass>,
    enums: HashMap<String, FieldClass>,
    variants: HashMap<String, FieldClass>,
}

type Parsed<T> = Result<T, String>;

/// Parses TSDL text into a trace class.
pub fn parse(text: &str) -> Result<TraceClass, String> {
    let tokens = lex(text)?;
    let native = trace_byte_order(&tokens).unwrap_or(ByteOrder::Little);
    let mut parser = Parser {
        tokens,
        at: 0,
        depth: 0,
        native,
        aliases: HashMap::new(),
        structs: HashMap::new(),
        enums: HashMap::new(),
        variants: HashMap::new(),
    };
    let mut class = TraceClass {
        version: "1.8".to_string(),
        ..TraceClass::default()
    };
    let mut events: Vec<(u64, u64, EventClass)> = Vec::new();
    while parser.at < parser.tokens.len() {
        parser.top_level(&mut class, &mut events)?;
    }
    class.add_events(events);
    Ok(class)
}

/// The trace's byte order (`trace { byte_order = le; }`), which `native` means everywhere,
/// including in type aliases declared before the `trace` block.
fn trace_byte_order(tokens: &[(Token, usize)]) -> Option<ByteOrder> {
    let mut depth = 0i32;
    let mut in_trace = false;
    for (i, (token, _)) in tokens.iter().enumerate() {
        match token {
            Token::Punct("{") => depth += 1,
            Token::Punct("}") => {
                depth -= 1;
                if depth == 0 {
                    in_trace = false;
                }
            }
            Token::Ident(word) if depth == 0 && word == "trace" => in_trace = true,
            Token::Ident(word) if in_trace && depth == 1 && word == "byte_order" => {
                if let Some((Token::Ident(value), _)) = tokens.get(i + 2) {
                    return order_named(value);
                }
            }
            _ => {}
        }
    }
    None
}

fn order_named(word: &str) -> Option<ByteOrder> {
    match word {
        "le" | "little" => Some(ByteOrder::Little),
        "be" | "big" | "network" => Some(ByteOrder::Big),
        _ => None,
    }
}

/// A value on the right of `=` in a block.
#[derive(Clone, Debug)]
enum Value {
    Int(i128),
    Text(String),
}

impl Value {
    fn int(&self) -> Option<i128> {
        match self {
            Value::Int(n) => Some(*n),
            Value::Text(t) => match t.as_str() {
                "true" | "TRUE" => Some(1),
                "false" | "FALSE" => Some(0),
                _ => None,
            },
        }
    }
    fn text(&self) -> String {
        match self {
            Value::Int(n) => n.to_string(),
            Value::Text(t) => t.clone(),
        }
    }
}

/// One entry of a block: `path = value;` or `path := type;`.
enum Entry {
    Value(String, Value),
    Type(String, FieldClass),
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at).map(|(t, _)| t)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Token> {
        self.tokens.get(self.at + ahead).map(|(t, _)| t)
    }

    fn error<T>(&self, what: &str) -> Parsed<T> {
        match self.tokens.get(self.at) {
            Some((token, line)) => Err(format!("line {line}: {what}, found {token}")),
            None => Err(format!("{what}, found the end of the metadata")),
        }
    }

    fn next(&mut self) -> Parsed<Token> {
        match self.tokens.get(self.at) {
            Some((token, _)) => {
                self.at += 1;
                Ok(token.clone())
            }
            None => self.error("more metadata expected"),
        }
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Token::Punct(q)) if *q == p)
    }

    fn eat_punct(&mut self, p: &str) -> bool {
        if self.is_punct(p) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Parsed<()> {
        if self.eat_punct(p) {
            Ok(())
        } else {
            self.error(&format!("`{p}` expected"))
        }
    }

    fn ident(&mut self) -> Parsed<String> {
        match self.peek() {
            Some(Token::Ident(word)) => {
                let word = word.clone();
                self.at += 1;
                Ok(word)
            }
            _ => self.error("a name expected"),
        }
    }

    fn is_ident(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Token::Ident(w)) if w == word)
    }

    fn top_level(
        &mut self,
        class: &mut TraceClass,
        events: &mut Vec<(u64, u64, EventClass)>,
    ) -> Parsed<()> {
        if self.eat_punct(";") {
            return Ok(());
        }
        let keyword = match self.peek() {
            Some(Token::Ident(word)) => word.clone(),
            _ => return self.error("a declaration expected"),
        };
        match keyword.as_str() {
            "typealias" => self.typealias(),
            "typedef" => {
                self.at += 1;
                let class = self.field_class(true)?;
                let name = self.ident()?;
                self.aliases.insert(name, class);
                self.expect(";")
            }
            "trace" => {
                self.at += 1;
                for entry in self.block()? {
                    match entry {
                        Entry::Type(path, field) if path == "packet.header" => {
                            class.packet_header = Some(with_roles(field, Scope::PacketHeader));
                        }
                        Entry::Value(path, value) if path == "major" => {
                            class.version = format!("{}.8", value.text());
                        }
                        _ => {}
                    }
                }
                Ok(())
            }
            "env" => {
                self.at += 1;
                for entry in self.block()? {
                    if let Entry::Value(key, value) = entry {
                        class.env.insert(key, value.text());
                    }
                }
                Ok(())
            }
            "clock" => {
                self.at += 1;
                let mut clock = Clock {
                    name: String::new(),
                    freq_hz: 1_000_000_000,
                    offset_s: 0,
                    offset_cycles: 0,
                };
                for entry in self.block()? {
                    if let Entry::Value(key, value) = entry {
                        let int = value.int().and_then(|n| i64::try_from(n).ok());
                        match key.as_str() {
                            "name" => clock.name = value.text(),
                            "freq" => {
                                clock.freq_hz = int
                                    .and_then(|n| u64::try_from(n).ok())
                                    .filter(|n| *n > 0)
                                    .ok_or("the clock's `freq` is not a positive number")?
                            }
                            "offset_s" => clock.offset_s = int.unwrap_or(0),
                            "offset" => clock.offset_cycles = int.unwrap_or(0),
                            _ => {}
                        }
                    }
                }
                class.clocks.push(clock);
                Ok(())
            }
            "stream" => {
                self.at += 1;
                let mut stream = StreamClass::default();
                let mut id = 0u64;
                for entry in self.block()? {
                    match entry {
                        Entry::Value(key, value) if key == "id" => {
                            id = value.int().and_then(|n| u64::try_from(n).ok()).unwrap_or(0)
                        }
                        Entry::Type(path, field) => match path.as_str() {
                            "packet.context" => {
                                stream.packet_context =
                                    Some(with_roles(field, Scope::PacketContext))
                            }
                            "event.header" => {
                                stream.event_header = Some(with_roles(field, Scope::EventHeader))
                            }
                            "event.context" => stream.event_context = Some(field),
                            _ => {}
                        },
                        _ => {}
                    }
                }
                let slot = class.streams.entry(id).or_default();
                stream.events = std::mem::take(&mut slot.events);
                *slot = stream;
                Ok(())
            }
            "event" => {
                self.at += 1;
                let (mut name, mut id, mut stream_id) = (String::new(), 0u64, 0u64);
                let (mut context, mut payload) = (None, None);
                for entry in self.block()? {
                    match entry {
                        Entry::Value(key, value) => match key.as_str() {
                            "name" => name = value.text(),
                            "id" => {
                                id = value.int().and_then(|n| u64::try_from(n).ok()).unwrap_or(0)
                            }
                            "stream_id" => {
                                stream_id =
                                    value.int().and_then(|n| u64::try_from(n).ok()).unwrap_or(0)
                            }
                            _ => {}
                        },
                        Entry::Type(path, field) => match path.as_str() {
                            "context" => context = Some(field),
                            "fields" => payload = Some(field),
                            _ => {}
                        },
                    }
                }
                events.push((
                    stream_id,
                    id,
                    EventClass {
                        name: name.into(),
                        context,
                        payload,
                    },
                ));
                Ok(())
            }
            "callsite" => {
                self.at += 1;
                self.block().map(|_| ())
            }
            "struct" | "enum" | "variant" => {
                // A named definition at the top level.
                self.field_class(false)?;
                self.expect(";")
            }
            _ => self
                .error("a declaration (trace, env, clock, stream, event, typealias...) expected"),
        }
    }

    fn typealias(&mut self) -> Parsed<()> {
        self.at += 1;
        let class = self.field_class(false)?;
        self.expect(":=")?;
        let mut name = Vec::new();
        while let Some(Token::Ident(word)) = self.peek() {
            name.push(word.clone());
            self.at += 1;
        }
        if name.is_empty() {
            return self.error("the alias's name expected");
        }
        self.aliases.insert(name.join(" "), class);
        self.expect(";")
    }

    /// Passes a stray `;` or a `typealias` inside a block; whether it did.
    fn separator_or_alias(&mut self) -> Parsed<bool> {
        if self.eat_punct(";") {
            return Ok(true);
        }
        if self.is_ident("typealias") {
            self.typealias()?;
            return Ok(true);
        }
        Ok(false)
    }

    /// `{ entries } ;`
    fn block(&mut self) -> Parsed<Vec<Entry>> {
        self.expect("{")?;
        let mut entries = Vec::new();
        while !self.eat_punct("}") {
            if self.separator_or_alias()? {
                continue;
            }
            let mut path = self.ident()?;
            while self.eat_punct(".") {
                path.push('.');
                path.push_str(&self.ident()?);
            }
            if self.eat_punct(":=") {
                let class = self.field_class(false)?;
                entries.push(Entry::Type(path, class));
            } else {
                self.expect("=")?;
                let value = self.value()?;
                entries.push(Entry::Value(path, value));
            }
            self.expect(";")?;
        }
        self.eat_punct(";");
        Ok(entries)
    }

    fn value(&mut self) -> Parsed<Value> {
        match self.next()? {
            Token::Int(n) => Ok(Value::Int(n)),
            Token::Str(s) => Ok(Value::Text(s)),
            Token::Ident(mut word) => {
                while self.eat_punct(".") {
                    word.push('.');
                    word.push_str(&self.ident()?);
                }
                Ok(Value::Text(word))
            }
            Token::Punct(_) => {
                self.at -= 1;
                self.error("a value expected")
            }
        }
    }

    /// A field class. `declarator_follows`: an alias name is followed by a field name (which
    /// is left for the caller).
    fn field_class(&mut self, declarator_follows: bool) -> Parsed<FieldClass> {
        if self.depth >= MAX_NESTING {
            return self.error(&format!("field classes nest deeper than {MAX_NESTING}"));
        }
        self.depth += 1;
        let class = self.field_class_at_depth(declarator_follows);
        self.depth -= 1;
        class
    }

    fn field_class_at_depth(&mut self, declarator_follows: bool) -> Parsed<FieldClass> {
        let word = match self.peek() {
            Some(Token::Ident(word)) => word.clone(),
            _ => return self.error("a type expected"),
        };
        match word.as_str() {
            "integer" => {
                self.at += 1;
                let attrs = self.attributes()?;
                Ok(FieldClass::Int(self.integer(&attrs)?))
            }
            "floating_point" => {
                self.at += 1;
                let attrs = self.attributes()?;
                let exp = attr_int(&attrs, "exp_dig").unwrap_or(8);
                let mant = attr_int(&attrs, "mant_dig").unwrap_or(24);
                let bits = u32::try_from(exp + mant).unwrap_or(0);
                if bits != 32 && bits != 64 {
                    return Err(format!(
                        "a floating point of {exp}+{mant} bits is not read (only 32 and 64)"
                    ));
                }
                Ok(FieldClass::Float {
                    bits,
                    align: attr_int(&attrs, "align")
                        .and_then(|n| u32::try_from(n).ok())
                        .unwrap_or(8),
                    order: self.order(&attrs),
                })
            }
            "string" => {
                self.at += 1;
                if self.is_punct("{") {
                    self.attributes()?;
                }
                Ok(FieldClass::String)
            }
            "struct" => {
                self.at += 1;
                // An anonymous struct opens its body at once: a word here is its name.
                let name = match self.peek() {
                    Some(Token::Ident(n)) => Some(n.clone()),
                    _ => None,
                };
                if name.is_some() {
                    self.at += 1;
                }
                let class = if self.is_punct("{") {
                    let fields = self.fields()?;
                    let mut align = 1;
                    if self.is_ident("align") {
                        self.at += 1;
                        self.expect("(")?;
                        align = match self.next()? {
                            Token::Int(n) => u32::try_from(n).unwrap_or(1),
                            _ => return self.error("an alignment expected"),
                        };
                        self.expect(")")?;
                    }
                    let class = FieldClass::Struct {
                        align,
                        fields: Rc::new(fields),
                    };
                    if let Some(name) = &name {
                        self.structs.insert(name.clone(), class.clone());
                    }
                    class
                } else {
                    let name = name.unwrap_or_default();
                    match self.structs.get(&name) {
                        Some(class) => class.clone(),
                        None => return self.error(&format!("struct `{name}` is not defined")),
                    }
                };
                Ok(class)
            }
            "enum" => {
                self.at += 1;
                let mut name = None;
                if let Some(Token::Ident(n)) = self.peek() {
                    name = Some(n.clone());
                    self.at += 1;
                }
                if !self.is_punct(":") && !self.is_punct("{") {
                    let name = name.unwrap_or_default();
                    return match self.enums.get(&name) {
                        Some(class) => Ok(class.clone()),
                        None => self.error(&format!("enum `{name}` is not defined")),
                    };
                }
                let int = if self.eat_punct(":") {
                    match self.field_class(false)? {
                        FieldClass::Int(int) => int,
                        _ => return self.error("an enum's container must be an integer"),
                    }
                } else {
                    match self.aliases.get("int") {
                        Some(FieldClass::Int(int)) => int.clone(),
                        _ => return self.error("an enum without container type expected `:`"),
                    }
                };
                let mappings = self.enum_body()?;
                let class = FieldClass::Enum {
                    int,
                    mappings: Rc::new(mappings),
                };
                if let Some(name) = name {
                    self.enums.insert(name, class.clone());
                }
                Ok(class)
            }
            "variant" => {
                self.at += 1;
                let mut name = None;
                if let Some(Token::Ident(n)) = self.peek() {
                    name = Some(n.clone());
                    self.at += 1;
                }
                let mut tag = None;
                if self.eat_punct("<") {
                    let mut path = self.ident()?;
                    while self.eat_punct(".") {
                        path = self.ident()?;
                    }
                    tag = Some(field_name(&path).to_string());
                    self.expect(">")?;
                }
                let options = if self.is_punct("{") {
                    let fields = self.fields()?;
                    let options: Vec<VariantOption> = fields
                        .into_iter()
                        .map(|(name, class)| VariantOption {
                            name,
                            ranges: Vec::new(),
                            class,
                        })
                        .collect();
                    Rc::new(options)
                } else {
                    let key = name.clone().unwrap_or_default();
                    match self.variants.get(&key) {
                        Some(FieldClass::Variant { options, .. }) => options.clone(),
                        _ => return self.error(&format!("variant `{key}` is not defined")),
                    }
                };
                let class = FieldClass::Variant {
                    tag: FieldRef(tag.unwrap_or_default().into()),
                    options,
                };
                if let Some(name) = name {
                    self.variants.entry(name).or_insert_with(|| class.clone());
                }
                Ok(class)
            }
            _ => {
                // An alias name, possibly of several words (`unsigned long`).
                let mut count = 0;
                while let Some(Token::Ident(w)) = self.peek_at(count) {
                    if KEYWORDS.contains(&w.as_str()) {
                        break;
                    }
                    count += 1;
                }
                let take = if declarator_follows && count > 1 {
                    count - 1
                } else {
                    count
                };
                let words: Vec<String> = (0..take)
                    .filter_map(|i| match self.peek_at(i) {
                        Some(Token::Ident(w)) => Some(w.clone()),
                        _ => None,
                    })
                    .collect();
                let name = words.join(" ");
                match self.aliases.get(&name) {
                    Some(class) => {
                        let class = class.clone();
                        self.at += take;
                        Ok(class)
                    }
                    None => self.error(&format!("type `{name}` is not defined")),
                }
            }
        }
    }

    fn integer(&self, attrs: &[(String, Value)]) -> Parsed<IntClass> {
        let bits = attr_int(attrs, "size")
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=64).contains(n))
            .ok_or("an integer's `size` is missing or not within 1..64 bits")?;
        let align = attr_int(attrs, "align")
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(if bits % 8 == 0 { 8 } else { 1 });
        let text = attrs.iter().any(|(k, v)| {
            k == "encoding" && matches!(v.text().as_str(), "UTF8" | "utf8" | "ASCII" | "ascii")
        });
        let role = if attrs
            .iter()
            .any(|(k, v)| k == "map" && v.text().starts_with("clock."))
        {
            Role::ClockTimestamp
        } else {
            Role::None
        };
        Ok(IntClass {
            bits,
            align: align.max(1),
            signed: attr_int(attrs, "signed").unwrap_or(0) != 0,
            order: self.order(attrs),
            text,
            role,
        })
    }

    fn order(&self, attrs: &[(String, Value)]) -> ByteOrder {
        attrs
            .iter()
            .find(|(k, _)| k == "byte_order")
            .and_then(|(_, v)| order_named(&v.text()))
            .unwrap_or(self.native)
    }

    /// `{ key = value; ... }` of an integer, floating point or string.
    fn attributes(&mut self) -> Parsed<Vec<(String, Value)>> {
        self.expect("{")?;
        let mut attrs = Vec::new();
        while !self.eat_punct("}") {
            if self.eat_punct(";") {
                continue;
            }
            let key = self.ident()?;
            self.expect("=")?;
            let value = self.value()?;
            attrs.push((key, value));
            self.expect(";")?;
        }
        Ok(attrs)
    }

    /// `{ LABEL = N, LABEL = A ... B, LABEL, }`
    fn enum_body(&mut self) -> Parsed<Vec<(Rc<str>, i128, i128)>> {
        self.expect("{")?;
        let mut mappings = Vec::new();
        let mut next = 0i128;
        while !self.eat_punct("}") {
            let label = match self.next()? {
                Token::Ident(l) | Token::Str(l) => l,
                _ => {
                    self.at -= 1;
                    return self.error("an enumeration label expected");
                }
            };
            let (mut lo, mut hi) = (next, next);
            if self.eat_punct("=") {
                lo = match self.next()? {
                    Token::Int(n) => n,
                    _ => return self.error("an enumeration value expected"),
                };
                hi = lo;
                if self.eat_punct("...") {
                    hi = match self.next()? {
                        Token::Int(n) => n,
                        _ => return self.error("an enumeration range end expected"),
                    };
                }
            }
            next = hi.saturating_add(1);
            mappings.push((Rc::from(label.as_str()), lo, hi));
            if !self.eat_punct(",") && !self.is_punct("}") {
                return self.error("`,` or `}` expected in an enumeration");
            }
        }
        Ok(mappings)
    }

    /// `{ TYPE name[len]...; ... }` of a struct or variant.
    fn fields(&mut self) -> Parsed<Vec<(Rc<str>, FieldClass)>> {
        self.expect("{")?;
        let mut fields = Vec::new();
        while !self.eat_punct("}") {
            if self.separator_or_alias()? {
                continue;
            }
            let class = self.field_class(true)?;
            loop {
                let name = self.ident()?;
                let mut dims = Vec::new();
                while self.eat_punct("[") {
                    match self.next()? {
                        Token::Int(n) => dims.push(Err(u64::try_from(n).unwrap_or(0))),
                        Token::Ident(mut path) => {
                            while self.eat_punct(".") {
                                path = self.ident()?;
                            }
                            dims.push(Ok(field_name(&path).to_string()));
                        }
                        _ => return self.error("an array length expected"),
                    }
                    self.expect("]")?;
                }
                let mut class = class.clone();
                for dim in dims.into_iter().rev() {
                    class = match dim {
                        Err(len) => FieldClass::Array {
                            elem: Rc::new(class),
                            len,
                        },
                        Ok(path) => FieldClass::Sequence {
                            elem: Rc::new(class),
                            len: FieldRef(path.into()),
                        },
                    };
                }
                fields.push((Rc::from(field_name(&name)), class));
                if !self.eat_punct(",") {
                    break;
                }
            }
            self.expect(";")?;
        }
        Ok(fields)
    }
}

/// A field's name as CTF 1.8 defines it: a leading underscore only keeps a name that is a
/// keyword from being one (§7.1), so `_vtid` is `vtid` (babeltrace2 shows it so).
fn field_name(declared: &str) -> &str {
    declared.strip_prefix('_').unwrap_or(declared)
}

fn attr_int(attrs: &[(String, Value)], key: &str) -> Option<i128> {
    attrs
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, v)| v.int())
}

/// Where a struct sits, for the roles CTF 1.8 gives by field name.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    PacketHeader,
    PacketContext,
    EventHeader,
}

/// Gives the well-known fields of a scope their roles (CTF 1.8 names them; CTF 2 says roles).
pub fn with_roles(class: FieldClass, scope: Scope) -> FieldClass {
    match class {
        FieldClass::Struct { align, fields } => {
            let fields = fields
                .iter()
                .map(|(name, field)| (name.clone(), role_of(name, field.clone(), scope)))
                .collect();
            FieldClass::Struct {
                align,
                fields: Rc::new(fields),
            }
        }
        other => other,
    }
}

fn role_of(name: &str, class: FieldClass, scope: Scope) -> FieldClass {
    let role = match (scope, name) {
        (Scope::PacketHeader, "magic") => Some(Role::Magic),
        (Scope::PacketHeader, "stream_id") => Some(Role::StreamClassId),
        (Scope::PacketContext, "packet_size") => Some(Role::PacketTotalBits),
        (Scope::PacketContext, "content_size") => Some(Role::PacketContentBits),
        (Scope::PacketContext, "timestamp_end") => Some(Role::PacketEndTimestamp),
        (Scope::EventHeader, "id") => Some(Role::EventClassId),
        _ => None,
    };
    match class {
        FieldClass::Int(mut int) => {
            if let Some(role) = role {
                int.role = role;
            }
            FieldClass::Int(int)
        }
        FieldClass::Enum { mut int, mappings } => {
            if let Some(role) = role {
                int.role = role;
            }
            FieldClass::Enum { int, mappings }
        }
        // The event header's variant (LTTng's compact and extended headers) holds `id` and
        // `timestamp` again.
        FieldClass::Variant { tag, options } if scope == Scope::EventHeader => {
            let options = options
                .iter()
                .map(|option| VariantOption {
                    name: option.name.clone(),
                    ranges: option.ranges.clone(),
                    class: with_roles(option.class.clone(), scope),
                })
                .collect();
            FieldClass::Variant {
                tag,
                options: Rc::new(options),
            }
        }
        FieldClass::Struct { .. } if scope == Scope::EventHeader => with_roles(class, scope),
        other => other,
    }
}
