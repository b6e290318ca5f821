//! Strict JSON parsing that keeps source positions, key order and duplicate
//! keys, for validating the hand-edited `.mcp.json` config file.
//!
//! serde_json is right for JSON on the wire, but a config file needs more:
//! diagnostics that point at `line:column` and a JSON pointer, object
//! members in file order (servers are reported in the order the user wrote
//! them), and every duplicate key reported instead of silently keeping the
//! last one. This module owns that parser. It is strict RFC 8259 (no BOM,
//! comments, trailing commas, single quotes, NaN, leading zeros, ...), caps
//! the nesting depth so that hostile input cannot overflow the stack, and
//! builds numbers through serde_json so that values agree with it exactly.
//!
//! [`parse_jsonc`] is the one relaxation, for files that editors write in
//! JSONC (VS Code's `.vscode/mcp.json`): `//` and `/* */` comments and a
//! trailing comma are accepted there, and nothing else changes.

use std::collections::HashMap;
use std::fmt;

use serde_json::{Map, Number, Value};

/// Deepest nesting of arrays and objects accepted; the parser recurses once
/// per level, so this bound is what keeps the stack safe. 127, so that
/// every document accepted here is also accepted by serde_json (whose
/// recursion limit is 128 levels including the innermost value): the two
/// parsers must agree (the `config` fuzz target checks it).
const MAX_DEPTH: u32 = 127;

/// A place in the source text, reported to the user as `line:col`.
///
/// Both are 1-based; `col` counts Unicode scalar values, not bytes, so that
/// it matches what an editor shows on lines with non-ASCII text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pos {
    /// The line, from 1.
    pub line: u32,
    /// The column, from 1, in Unicode scalar values.
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A JSON value together with where it starts, so that every diagnostic
/// about it can point at the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Where the value starts.
    pub pos: Pos,
    /// The value.
    pub kind: Kind,
}

/// The value itself. Objects are a list, not a map, so that file order and
/// duplicate members survive for the caller to judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as serde_json holds it.
    Number(Number),
    /// A string, unescaped.
    String(String),
    /// An array's elements, in order.
    Array(Vec<Node>),
    /// An object's members, in file order, duplicates kept.
    Object(Vec<Member>),
}

/// One `"key": value` entry of an object, with the key's own position for
/// diagnostics about the key (unknown field, duplicate, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The key, unescaped.
    pub key: String,
    /// Where the key starts.
    pub key_pos: Pos,
    /// The member's value.
    pub value: Node,
}

/// A key that appeared more than once in the same object; serde_json would
/// silently keep the last one, so every later occurrence is reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// JSON pointer (RFC 6901) of the duplicated member.
    pub pointer: String,
    /// Where the later occurrence of the key is.
    pub pos: Pos,
    /// Where the first occurrence of the key is.
    pub first: Pos,
}

/// A parsed document: its root value and every duplicate key in it, in the
/// order the later keys appear in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// The document's root value.
    pub root: Node,
    /// Every duplicate key, in file order.
    pub duplicates: Vec<Duplicate>,
}

/// Why the text is not JSON: where, and what was expected and found there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// Where the error is.
    pub pos: Pos,
    /// What was expected and what was found.
    pub msg: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.pos, self.msg)
    }
}

impl std::error::Error for SyntaxError {}

/// Parses `text` as exactly one strict JSON value surrounded only by JSON
/// whitespace, keeping positions, member order and duplicate keys.
pub fn parse(text: &str) -> Result<Doc, SyntaxError> {
    parse_with(text, false)
}

/// [`parse`], with JSONC's comments and trailing commas allowed.
pub fn parse_jsonc(text: &str) -> Result<Doc, SyntaxError> {
    parse_with(text, true)
}

fn parse_with(text: &str, jsonc: bool) -> Result<Doc, SyntaxError> {
    let mut p = Parser::new(text);
    p.jsonc = jsonc;
    if text.starts_with('\u{FEFF}') {
        return p.err_here("byte order mark at start of file");
    }
    p.skip_ws()?;
    let root = p.value()?;
    p.skip_ws()?;
    if p.peek().is_some() {
        let msg = format!(
            "expected end of input after the top-level value, found {}",
            p.found()
        );
        return p.err_here(msg);
    }
    Ok(Doc { root, duplicates: p.duplicates })
}

/// Escapes one reference token of a JSON pointer (RFC 6901): `~` becomes
/// `~0` and `/` becomes `~1`, so keys containing them stay unambiguous.
pub fn pointer_escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

impl Node {
    /// Converts to a serde_json value for code that wants plain data; like
    /// serde_json, the last of several duplicate keys wins.
    pub fn to_value(&self) -> Value {
        match &self.kind {
            Kind::Null => Value::Null,
            Kind::Bool(b) => Value::Bool(*b),
            Kind::Number(n) => Value::Number(n.clone()),
            Kind::String(s) => Value::String(s.clone()),
            Kind::Array(items) => {
                Value::Array(items.iter().map(Node::to_value).collect())
            }
            Kind::Object(members) => {
                let mut map = Map::new();
                for m in members {
                    map.insert(m.key.clone(), m.value.to_value());
                }
                Value::Object(map)
            }
        }
    }

    /// The first member with this key, when this is an object; duplicates
    /// are reported separately, so the first one is the one to diagnose.
    pub fn get(&self, key: &str) -> Option<&Member> {
        match &self.kind {
            Kind::Object(members) => members.iter().find(|m| m.key == key),
            _ => None,
        }
    }

    /// The JSON type's name, for "expected a string, found a number" style
    /// diagnostics.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            Kind::Null => "null",
            Kind::Bool(_) => "boolean",
            Kind::Number(_) => "number",
            Kind::String(_) => "string",
            Kind::Array(_) => "array",
            Kind::Object(_) => "object",
        }
    }
}

/// Recursive-descent parser state: a byte cursor with its line and column
/// kept in step, the current nesting depth, and the JSON pointer of the
/// value being parsed (for duplicate reports).
#[derive(Debug)]
struct Parser<'a> {
    src: &'a str,
    at: usize,
    line: u32,
    col: u32,
    depth: u32,
    path: String,
    duplicates: Vec<Duplicate>,
    /// Comments and trailing commas allowed ([`parse_jsonc`]).
    jsonc: bool,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        Parser {
            src,
            at: 0,
            line: 1,
            col: 1,
            depth: 0,
            path: String::new(),
            duplicates: Vec::new(),
            jsonc: false,
        }
    }

    fn pos(&self) -> Pos {
        Pos { line: self.line, col: self.col }
    }

    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.at).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<u8> {
        self.src.as_bytes().get(self.at.saturating_add(ahead)).copied()
    }

    /// Consumes one byte. The column advances on the first byte of each
    /// UTF-8 sequence only, so it counts characters.
    fn bump(&mut self) {
        if let Some(b) = self.peek() {
            self.at += 1;
            // A lone CR is a line break too (as editors count lines).
            let lone_cr = b == b'\r' && self.peek() != Some(b'\n');
            if b == b'\n' || lone_cr {
                self.line = self.line.saturating_add(1);
                self.col = 1;
            } else if b & 0xC0 != 0x80 {
                self.col = self.col.saturating_add(1);
            }
        }
    }

    /// Skips whitespace (and, in JSONC, comments; an unterminated block
    /// comment is an error at its start).
    fn skip_ws(&mut self) -> Result<(), SyntaxError> {
        loop {
            while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
                self.bump();
            }
            if !self.jsonc || self.peek() != Some(b'/') {
                return Ok(());
            }
            let open = self.pos();
            match self.peek_at(1) {
                Some(b'/') => self.line_comment()?,
                Some(b'*') => {
                    self.bump();
                    self.bump();
                    loop {
                        match (self.peek(), self.peek_at(1)) {
                            (None, _) => {
                                return self.err(
                                    open,
                                    "unterminated '/*' comment".to_string(),
                                );
                            }
                            (Some(b'*'), Some(b'/')) => {
                                self.bump();
                                self.bump();
                                break;
                            }
                            _ => self.bump(),
                        }
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// Skips a `//` comment up to the line break that ends it: LF or CR
    /// (a lone CR included), where VS Code's `jsonc-parser` ends it, so
    /// that a reviewer, `check-config` and the editor read the same
    /// file. VT, FF, U+2028 and U+2029 ended comments in older versions
    /// of that parser and do not in newer ones: a comment holding one is
    /// refused rather than read one way here and another way there.
    fn line_comment(&mut self) -> Result<(), SyntaxError> {
        loop {
            let rest = &self.src.as_bytes()[self.at..];
            let ambiguous = match rest {
                [] | [b'\n' | b'\r', ..] => return Ok(()),
                [0x0B, ..] => Some("a vertical tab"),
                [0x0C, ..] => Some("a form feed"),
                [0xE2, 0x80, 0xA8, ..] => Some("U+2028 (line separator)"),
                [0xE2, 0x80, 0xA9, ..] => Some("U+2029 (paragraph separator)"),
                _ => None,
            };
            if let Some(what) = ambiguous {
                return self.err_here(format!(
                    "a '//' comment holds {what}, which some editors read \
                     as the end of the comment; remove it"
                ));
            }
            self.bump();
        }
    }

    fn is_digit(&self) -> bool {
        matches!(self.peek(), Some(b'0'..=b'9'))
    }

    fn digits(&mut self) {
        while self.is_digit() {
            self.bump();
        }
    }

    /// Describes the character at the cursor for "found ..." messages.
    /// Only JSON's own punctuation is quoted; anything else is named by
    /// its class, because the text of a broken file may be a secret pasted
    /// in the wrong place (an error says where, not what).
    fn found(&self) -> String {
        match self.src.get(self.at..).and_then(|s| s.chars().next()) {
            None => "end of input".to_owned(),
            Some(c) if c.is_ascii_punctuation() => format!("'{c}'"),
            Some(c) if c.is_ascii_digit() => "a digit".to_owned(),
            Some(c) if c.is_ascii_alphabetic() => "a letter".to_owned(),
            Some(c) if c.is_control() || c.is_whitespace() => {
                format!("U+{:04X}", u32::from(c))
            }
            Some(_) => "a non-ASCII character".to_owned(),
        }
    }

    fn err<T>(
        &self,
        pos: Pos,
        msg: impl Into<String>,
    ) -> Result<T, SyntaxError> {
        Err(SyntaxError { pos, msg: msg.into() })
    }

    fn err_here<T>(&self, msg: impl Into<String>) -> Result<T, SyntaxError> {
        self.err(self.pos(), msg)
    }

    /// The source text between two cursor positions; both always fall on
    /// ASCII bytes, so this cannot fail, but it is checked all the same.
    fn slice(&self, from: usize) -> Result<&'a str, SyntaxError> {
        match self.src.get(from..self.at) {
            Some(s) => Ok(s),
            None => self.err_here("internal error: cursor inside a character"),
        }
    }

    fn value(&mut self) -> Result<Node, SyntaxError> {
        let pos = self.pos();
        let kind = match self.peek() {
            Some(b'{') => self.object()?,
            Some(b'[') => self.array()?,
            Some(b'"') => Kind::String(self.string()?),
            Some(b'-' | b'0'..=b'9') => Kind::Number(self.number()?),
            Some(b) if b.is_ascii_alphabetic() => self.literal()?,
            Some(b) => {
                let hint = match b {
                    b'\'' => " (strings need double quotes)",
                    b'/' | b'#' => " (comments are not allowed)",
                    b'+' => " (numbers must not start with '+')",
                    b'.' => " (numbers need a digit before '.')",
                    _ => "",
                };
                let msg = format!(
                    "expected a JSON value, found {}{hint}",
                    self.found()
                );
                return self.err_here(msg);
            }
            None => {
                return self
                    .err_here("expected a JSON value, found end of input");
            }
        };
        Ok(Node { pos, kind })
    }

    /// Enters one level of nesting at `open`, refusing to go past the cap.
    fn enter(&mut self, open: Pos) -> Result<(), SyntaxError> {
        self.depth = self.depth.saturating_add(1);
        if self.depth > MAX_DEPTH {
            return self.err(open, "nesting deeper than 127 levels");
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn object(&mut self) -> Result<Kind, SyntaxError> {
        self.enter(self.pos())?;
        self.bump(); // '{'
        let mut members = Vec::new();
        let mut seen: HashMap<String, Pos> = HashMap::new();
        self.skip_ws()?;
        if self.peek() == Some(b'}') {
            self.bump();
            self.leave();
            return Ok(Kind::Object(members));
        }
        loop {
            let key_pos = self.pos();
            if self.peek() != Some(b'"') {
                let msg = if members.is_empty() {
                    format!(
                        "expected '\"' or '}}' after '{{', found {}",
                        self.found()
                    )
                } else {
                    format!(
                        "expected '\"' to start an object key, found {}",
                        self.found()
                    )
                };
                return self.err_here(msg);
            }
            let key = self.string()?;
            let outer = self.path.len();
            self.path.push('/');
            self.path.push_str(&pointer_escape(&key));
            match seen.get(&key) {
                Some(&first) => self.duplicates.push(Duplicate {
                    pointer: self.path.clone(),
                    pos: key_pos,
                    first,
                }),
                None => {
                    seen.insert(key.clone(), key_pos);
                }
            }
            self.skip_ws()?;
            if self.peek() != Some(b':') {
                let msg = format!(
                    "expected ':' after object key, found {}",
                    self.found()
                );
                return self.err_here(msg);
            }
            self.bump();
            self.skip_ws()?;
            let value = self.value()?;
            self.path.truncate(outer);
            members.push(Member { key, key_pos, value });
            if self.separator(b'}', "object member")? {
                break;
            }
        }
        self.leave();
        Ok(Kind::Object(members))
    }

    /// After a member or element: a `,` (not followed by `close`: no
    /// trailing commas) continues, `close` ends the container (`Ok(true)`).
    fn separator(
        &mut self,
        close: u8,
        what: &str,
    ) -> Result<bool, SyntaxError> {
        let close_char = char::from(close);
        self.skip_ws()?;
        match self.peek() {
            Some(b',') => {
                let comma = self.pos();
                self.bump();
                self.skip_ws()?;
                if self.peek() == Some(close) && self.jsonc {
                    self.bump();
                    return Ok(true);
                }
                if self.peek() == Some(close) {
                    let msg = format!("trailing comma before '{close_char}'");
                    return self.err(comma, msg);
                }
                Ok(false)
            }
            Some(c) if c == close => {
                self.bump();
                Ok(true)
            }
            _ => {
                let msg = format!(
                    "expected ',' or '{close_char}' after {what}, found {}",
                    self.found()
                );
                self.err_here(msg)
            }
        }
    }

    fn array(&mut self) -> Result<Kind, SyntaxError> {
        self.enter(self.pos())?;
        self.bump(); // '['
        let mut items = Vec::new();
        self.skip_ws()?;
        if self.peek() == Some(b']') {
            self.bump();
            self.leave();
            return Ok(Kind::Array(items));
        }
        loop {
            let outer = self.path.len();
            self.path.push('/');
            self.path.push_str(&items.len().to_string());
            let item = self.value()?;
            self.path.truncate(outer);
            items.push(item);
            if self.separator(b']', "array element")? {
                break;
            }
        }
        self.leave();
        Ok(Kind::Array(items))
    }

    /// Parses a string literal; an unterminated one is reported at its
    /// opening quote, which is where the user has to look.
    fn string(&mut self) -> Result<String, SyntaxError> {
        let open = self.pos();
        self.bump(); // '"'
        let mut out = String::new();
        let mut run = self.at;
        loop {
            match self.peek() {
                None => {
                    return self
                        .err(open, "unexpected end of input inside a string");
                }
                Some(b'"') => {
                    out.push_str(self.slice(run)?);
                    self.bump();
                    return Ok(out);
                }
                Some(b'\\') => {
                    out.push_str(self.slice(run)?);
                    self.escape(open, &mut out)?;
                    run = self.at;
                }
                Some(b) if b < 0x20 => {
                    let msg =
                        format!("control character U+{b:04X} inside a string");
                    return self.err_here(msg);
                }
                Some(_) => self.bump(),
            }
        }
    }

    /// Parses one escape sequence (cursor on the backslash) into `out`.
    fn escape(
        &mut self,
        open: Pos,
        out: &mut String,
    ) -> Result<(), SyntaxError> {
        let start = self.pos();
        self.bump(); // '\\'
        let c = match self.peek() {
            Some(b'"') => '"',
            Some(b'\\') => '\\',
            Some(b'/') => '/',
            Some(b'b') => '\u{8}',
            Some(b'f') => '\u{c}',
            Some(b'n') => '\n',
            Some(b'r') => '\r',
            Some(b't') => '\t',
            Some(b'u') => {
                self.bump();
                let c = self.unicode_escape(open, start)?;
                out.push(c);
                return Ok(());
            }
            None => {
                return self
                    .err(open, "unexpected end of input inside a string");
            }
            Some(_) => {
                let msg = format!(
                    "invalid escape in a string: expected one of \
                     \" \\ / b f n r t u after '\\', found {}",
                    self.found()
                );
                return self.err_here(msg);
            }
        };
        self.bump();
        out.push(c);
        Ok(())
    }

    /// Decodes the rest of a `\uXXXX` escape (cursor after the `u`),
    /// joining a surrogate pair; `start` is the escape's backslash.
    fn unicode_escape(
        &mut self,
        open: Pos,
        start: Pos,
    ) -> Result<char, SyntaxError> {
        let first = self.hex4(open)?;
        let code = if (0xD800..0xDC00).contains(&first) {
            if self.peek() != Some(b'\\') || self.peek_at(1) != Some(b'u') {
                let msg = format!(
                    "lone surrogate \\u{first:04X} in a string \
                     (not followed by a low surrogate escape)"
                );
                return self.err(start, msg);
            }
            self.bump();
            self.bump();
            let second = self.hex4(open)?;
            if !(0xDC00..0xE000).contains(&second) {
                let msg = format!(
                    "lone surrogate \\u{first:04X} in a string \
                     (followed by \\u{second:04X}, not a low surrogate)"
                );
                return self.err(start, msg);
            }
            0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        } else if (0xDC00..0xE000).contains(&first) {
            let msg = format!(
                "lone surrogate \\u{first:04X} in a string \
                 (low surrogate without a high one before it)"
            );
            return self.err(start, msg);
        } else {
            first
        };
        match char::from_u32(code) {
            Some(c) => Ok(c),
            None => {
                self.err(start, format!("invalid code point U+{code:04X}"))
            }
        }
    }

    fn hex4(&mut self, open: Pos) -> Result<u32, SyntaxError> {
        let mut code = 0;
        for _ in 0..4 {
            let digit = match self.peek() {
                None => {
                    return self
                        .err(open, "unexpected end of input inside a string");
                }
                Some(b) => char::from(b).to_digit(16),
            };
            match digit {
                Some(d) => code = code * 16 + d,
                None => {
                    let msg = format!(
                        "expected 4 hex digits after '\\u', found {}",
                        self.found()
                    );
                    return self.err_here(msg);
                }
            }
            self.bump();
        }
        Ok(code)
    }

    /// Checks the RFC 8259 number grammar, then lets serde_json turn the
    /// text into a Number so that the value is exactly what it would give.
    fn number(&mut self) -> Result<Number, SyntaxError> {
        let pos = self.pos();
        let start = self.at;
        if self.peek() == Some(b'-') {
            self.bump();
        }
        match self.peek() {
            Some(b'0') => {
                let zero = self.pos();
                self.bump();
                if self.is_digit() {
                    return self.err(
                        zero,
                        "leading zeros are not allowed in numbers",
                    );
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => {
                let msg = format!(
                    "expected a digit after '-', found {}",
                    self.found()
                );
                return self.err_here(msg);
            }
        }
        if self.peek() == Some(b'.') {
            self.bump();
            if !self.is_digit() {
                let msg = format!(
                    "expected a digit after the decimal point, found {}",
                    self.found()
                );
                return self.err_here(msg);
            }
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.bump();
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.bump();
            }
            if !self.is_digit() {
                let msg = format!(
                    "expected a digit in the exponent, found {}",
                    self.found()
                );
                return self.err_here(msg);
            }
            self.digits();
        }
        let text = self.slice(start)?;
        match serde_json::from_str::<Number>(text) {
            Ok(n) => Ok(n),
            Err(_) => self.err(pos, "number out of range"),
        }
    }

    /// Parses `true`, `false` or `null`; any other bare word is an error
    /// that says, for the usual mistakes (`NaN`, `True`), what is wrong,
    /// without quoting it: it may be a token pasted without quotes.
    fn literal(&mut self) -> Result<Kind, SyntaxError> {
        let pos = self.pos();
        let start = self.at;
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        while self.peek().is_some_and(is_word) {
            self.bump();
        }
        let word = self.slice(start)?;
        match word {
            "true" => Ok(Kind::Bool(true)),
            "false" => Ok(Kind::Bool(false)),
            "null" => Ok(Kind::Null),
            _ => {
                let hint = match word {
                    "NaN" | "Infinity" => " (NaN and Infinity are not JSON)",
                    "True" | "False" | "Null" | "TRUE" | "FALSE" | "NULL" => {
                        " (JSON literals are lowercase)"
                    }
                    _ => " (strings need double quotes)",
                };
                let msg = format!("expected a JSON value, found a word{hint}");
                self.err(pos, msg)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    fn p(line: u32, col: u32) -> Pos {
        Pos { line, col }
    }

    /// Parses text that must be refused, returning the error.
    fn fail(text: &str) -> SyntaxError {
        match parse(text) {
            Ok(doc) => panic!("{text:?} parsed as {:?}", doc.root),
            Err(e) => e,
        }
    }

    fn member<'a>(node: &'a Node, key: &str) -> &'a Member {
        node.get(key).unwrap_or_else(|| panic!("no member {key:?}"))
    }

    #[test]
    fn positions_of_nested_values() -> TestResult {
        let text = "{\n  \"a\": [1,\n    {\"b\": true}],\n\t\"c\" :null\n}";
        let doc = parse(text)?;
        assert_eq!(doc.root.pos, p(1, 1));
        let a = member(&doc.root, "a");
        assert_eq!(a.key_pos, p(2, 3));
        assert_eq!(a.value.pos, p(2, 8));
        let Kind::Array(items) = &a.value.kind else { panic!("not an array") };
        assert_eq!(items[0].pos, p(2, 9));
        assert_eq!(items[1].pos, p(3, 5));
        let b = member(&items[1], "b");
        assert_eq!(b.key_pos, p(3, 6));
        assert_eq!(b.value.pos, p(3, 11));
        let c = member(&doc.root, "c");
        assert_eq!(c.key_pos, p(4, 2));
        assert_eq!(c.value.pos, p(4, 7));
        assert!(doc.duplicates.is_empty());
        Ok(())
    }

    #[test]
    fn columns_count_characters_not_bytes() -> TestResult {
        // "é" is 2 bytes, "😀" is 4 bytes (and a surrogate pair in UTF-16).
        let doc = parse("{\"é😀\": \"ü\", \"k\": 1}")?;
        let k = member(&doc.root, "k");
        assert_eq!(k.key_pos, p(1, 13));
        assert_eq!(k.value.pos, p(1, 18));
        let e = fail("[\"日本\", x]");
        assert_eq!(e.pos, p(1, 8));
        assert_eq!(
            e.to_string(),
            "1:8: expected a JSON value, found a word \
             (strings need double quotes)"
        );
        Ok(())
    }

    #[test]
    fn crlf_line_endings() -> TestResult {
        let doc = parse("{\r\n\"a\":\r\n  2\r\n}")?;
        assert_eq!(member(&doc.root, "a").value.pos, p(3, 3));
        Ok(())
    }

    #[test]
    fn keeps_member_order_and_duplicates() -> TestResult {
        let doc = parse(r#"{"z": 1, "a": 2, "z": 3, "m": 4, "z": 5}"#)?;
        let Kind::Object(members) = &doc.root.kind else {
            panic!("not object")
        };
        let keys: Vec<&str> = members.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["z", "a", "z", "m", "z"]);
        assert_eq!(doc.duplicates.len(), 2);
        assert_eq!(doc.duplicates[0].pointer, "/z");
        assert_eq!(doc.duplicates[0].first, p(1, 2));
        assert_eq!(doc.duplicates[0].pos, p(1, 18));
        assert_eq!(doc.duplicates[1].pos, p(1, 34));
        assert_eq!(doc.duplicates[1].first, p(1, 2));
        // get() returns the first, to_value() keeps the last, as serde_json.
        let z = member(&doc.root, "z");
        assert_eq!(z.value.to_value(), Value::from(1));
        assert_eq!(
            doc.root.to_value(),
            serde_json::from_str::<Value>(
                r#"{"z": 1, "a": 2, "z": 3, "m": 4, "z": 5}"#
            )?
        );
        assert_eq!(doc.root.to_value()["z"], Value::from(5));
        Ok(())
    }

    #[test]
    fn nested_duplicates_have_escaped_pointers() -> TestResult {
        let text = r#"{
  "mcpServers": {
    "a/b~c": {"env": {"X": "1", "X": "2"}},
    "list": [{"k": 1}, {"k": 1, "k": 2}],
    "a/b~c": {}
  },
  "": {"": 0, "": 1}
}"#;
        let doc = parse(text)?;
        let got: Vec<(&str, Pos, Pos)> = doc
            .duplicates
            .iter()
            .map(|d| (d.pointer.as_str(), d.pos, d.first))
            .collect();
        assert_eq!(
            got,
            [
                ("/mcpServers/a~1b~0c/env/X", p(3, 33), p(3, 23)),
                ("/mcpServers/list/1/k", p(4, 33), p(4, 25)),
                ("/mcpServers/a~1b~0c", p(5, 5), p(3, 5)),
                // The inner "" under the top-level "": two empty tokens.
                ("//", p(7, 15), p(7, 8)),
            ]
        );
        Ok(())
    }

    #[test]
    fn same_key_in_different_objects_is_not_a_duplicate() -> TestResult {
        let doc = parse(r#"{"a": {"x": 1}, "b": {"x": 2}, "c": [{"x": 3}]}"#)?;
        assert!(doc.duplicates.is_empty());
        Ok(())
    }

    #[test]
    fn pointer_escape_rfc6901() {
        assert_eq!(pointer_escape("a/b"), "a~1b");
        assert_eq!(pointer_escape("m~n"), "m~0n");
        assert_eq!(pointer_escape("~1"), "~01");
        assert_eq!(pointer_escape("/~"), "~1~0");
        assert_eq!(pointer_escape(""), "");
    }

    #[test]
    fn strictness_rules() {
        let cases: &[(&str, Pos, &str)] = &[
            ("", p(1, 1), "expected a JSON value, found end of input"),
            ("  \n ", p(2, 2), "expected a JSON value, found end of input"),
            ("\u{FEFF}{}", p(1, 1), "byte order mark at start of file"),
            (
                "{} // c",
                p(1, 4),
                "expected end of input after the top-level value, found '/'",
            ),
            (
                "// c\n{}",
                p(1, 1),
                "expected a JSON value, found '/' (comments are not allowed)",
            ),
            (
                "{\"a\": 1 /* c */}",
                p(1, 9),
                "expected ',' or '}' after object member, found '/'",
            ),
            ("[1, 2,]", p(1, 6), "trailing comma before ']'"),
            ("{\"a\": 1,\n}", p(1, 8), "trailing comma before '}'"),
            (
                "[1}",
                p(1, 3),
                "expected ',' or ']' after array element, found '}'",
            ),
            (
                "{\"a\": 1]",
                p(1, 8),
                "expected ',' or '}' after object member, found ']'",
            ),
            ("{,}", p(1, 2), "expected '\"' or '}' after '{', found ','"),
            ("[,1]", p(1, 2), "expected a JSON value, found ','"),
            ("[1,,2]", p(1, 4), "expected a JSON value, found ','"),
            ("{'a': 1}", p(1, 2), "expected '\"' or '}' after '{', found '''"),
            (
                "['a']",
                p(1, 2),
                "expected a JSON value, found ''' \
                 (strings need double quotes)",
            ),
            (
                "{\"a\": 1, b: 2}",
                p(1, 10),
                "expected '\"' to start an object key, found a letter",
            ),
            (
                "{\"a\" 1}",
                p(1, 6),
                "expected ':' after object key, found a digit",
            ),
            ("{\"a\":}", p(1, 6), "expected a JSON value, found '}'"),
            (
                "{\"a\"",
                p(1, 5),
                "expected ':' after object key, found end of input",
            ),
            (
                "[1",
                p(1, 3),
                "expected ',' or ']' after array element, found end of input",
            ),
            (
                "NaN",
                p(1, 1),
                "expected a JSON value, found a word \
                 (NaN and Infinity are not JSON)",
            ),
            (
                "[-Infinity]",
                p(1, 3),
                "expected a digit after '-', found a letter",
            ),
            (
                "True",
                p(1, 1),
                "expected a JSON value, found a word \
                 (JSON literals are lowercase)",
            ),
            (
                "nul",
                p(1, 1),
                "expected a JSON value, found a word \
                 (strings need double quotes)",
            ),
            (
                "truex",
                p(1, 1),
                "expected a JSON value, found a word \
                 (strings need double quotes)",
            ),
            ("01", p(1, 1), "leading zeros are not allowed in numbers"),
            ("[-007]", p(1, 3), "leading zeros are not allowed in numbers"),
            (
                "+1",
                p(1, 1),
                "expected a JSON value, found '+' \
                 (numbers must not start with '+')",
            ),
            (
                ".5",
                p(1, 1),
                "expected a JSON value, found '.' \
                 (numbers need a digit before '.')",
            ),
            (
                "1.",
                p(1, 3),
                "expected a digit after the decimal point, found end of input",
            ),
            (
                "1.e5",
                p(1, 3),
                "expected a digit after the decimal point, found a letter",
            ),
            (
                "1e",
                p(1, 3),
                "expected a digit in the exponent, found end of input",
            ),
            (
                "1e+",
                p(1, 4),
                "expected a digit in the exponent, found end of input",
            ),
            ("-", p(1, 2), "expected a digit after '-', found end of input"),
            ("- 1", p(1, 2), "expected a digit after '-', found U+0020"),
            (
                "0x10",
                p(1, 2),
                "expected end of input after the top-level value, found a letter",
            ),
            ("1e400", p(1, 1), "number out of range"),
            (
                "1 2",
                p(1, 3),
                "expected end of input after the top-level value, found a digit",
            ),
            (
                "{}{}",
                p(1, 3),
                "expected end of input after the top-level value, found '{'",
            ),
            ("\u{A0}1", p(1, 1), "expected a JSON value, found U+00A0"),
            ("\u{C}1", p(1, 1), "expected a JSON value, found U+000C"),
            ("\"abc", p(1, 1), "unexpected end of input inside a string"),
            ("[\"a\\", p(1, 2), "unexpected end of input inside a string"),
            ("\"\\u12", p(1, 1), "unexpected end of input inside a string"),
            ("\"a\nb\"", p(1, 3), "control character U+000A inside a string"),
            ("\"a\tb\"", p(1, 3), "control character U+0009 inside a string"),
            ("\"\u{0}\"", p(1, 2), "control character U+0000 inside a string"),
            (
                "\"\u{1F}\"",
                p(1, 2),
                "control character U+001F inside a string",
            ),
            (
                "\"\\x\"",
                p(1, 3),
                "invalid escape in a string: expected one of \
                 \" \\ / b f n r t u after '\\', found a letter",
            ),
            (
                "\"\\'\"",
                p(1, 3),
                "invalid escape in a string: expected one of \
                 \" \\ / b f n r t u after '\\', found '''",
            ),
            (
                "\"\\u12G4\"",
                p(1, 6),
                "expected 4 hex digits after '\\u', found a letter",
            ),
            (
                "\"\\uD800\"",
                p(1, 2),
                "lone surrogate \\uD800 in a string \
                 (not followed by a low surrogate escape)",
            ),
            (
                "\"x\\uDBFF\\n\"",
                p(1, 3),
                "lone surrogate \\uDBFF in a string \
                 (not followed by a low surrogate escape)",
            ),
            (
                "\"\\uD800\\u0041\"",
                p(1, 2),
                "lone surrogate \\uD800 in a string \
                 (followed by \\u0041, not a low surrogate)",
            ),
            (
                "\"\\uDC00\"",
                p(1, 2),
                "lone surrogate \\uDC00 in a string \
                 (low surrogate without a high one before it)",
            ),
        ];
        for (text, pos, msg) in cases {
            let e = fail(text);
            assert_eq!(
                (e.pos, e.msg.as_str()),
                (*pos, *msg),
                "input {text:?}"
            );
        }
    }

    #[test]
    fn jsonc_comments_and_trailing_commas() -> TestResult {
        let text = "// top\n{ /* a */ \"a\": [1, 2,], // end\n \"b\": 1, }\n";
        let doc = parse_jsonc(text)?;
        assert_eq!(
            doc.root.to_value(),
            serde_json::json!({"a": [1, 2], "b": 1})
        );
        assert_eq!(member(&doc.root, "b").key_pos, p(3, 2));
        // Strict JSON stays strict.
        assert!(parse(text).is_err());
        assert_eq!(parse_jsonc("{} /* open").unwrap_err().pos, p(1, 4));
        // A lone slash, and a comma with nothing before it, stay errors.
        assert!(parse_jsonc("{\"a\": 1 / 2}").is_err());
        assert!(parse_jsonc("[,]").is_err());
        Ok(())
    }

    /// A `//` comment ends where VS Code's parser ends it: at LF, CRLF
    /// or a lone CR; what older versions of that parser also took for a
    /// line break is refused.
    #[test]
    fn jsonc_line_comments_end_where_the_editor_ends_them() -> TestResult {
        for nl in ["\n", "\r\n", "\r"] {
            let text = format!("{{ // note{nl}\"a\": 1}}");
            let doc = parse_jsonc(&text)?;
            assert_eq!(doc.root.to_value(), serde_json::json!({"a": 1}));
            assert_eq!(member(&doc.root, "a").key_pos, p(2, 1), "{nl:?}");
        }
        for (sep, what) in [
            ("\u{2028}", "U+2028"),
            ("\u{2029}", "U+2029"),
            ("\u{b}", "vertical tab"),
            ("\u{c}", "form feed"),
        ] {
            let text = format!("{{ // note{sep}\"a\": 1\n}}");
            let e = parse_jsonc(&text).unwrap_err();
            assert!(e.msg.contains(what), "{e:?}");
            assert_eq!(e.pos, p(1, 10));
        }
        // In a block comment they are only text.
        assert!(parse_jsonc("{ /* \u{2028} \r */ }").is_ok());
        // Strict JSON: a lone CR is whitespace and counts as a line.
        assert_eq!(member(&parse("{\r\"a\": 1}")?.root, "a").key_pos, p(2, 1));
        Ok(())
    }

    #[test]
    fn syntax_error_display() {
        let e = fail("{\n  \"a\": 1,\n}");
        assert_eq!(e.to_string(), "2:9: trailing comma before '}'");
    }

    #[test]
    fn whitespace_around_the_value() -> TestResult {
        let doc = parse(" \t\r\n true \t\r\n ")?;
        assert_eq!(doc.root.kind, Kind::Bool(true));
        assert_eq!(doc.root.pos, p(2, 2));
        Ok(())
    }

    #[test]
    fn escapes_decode() -> TestResult {
        let doc =
            parse(r#""\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00 \u0000""#)?;
        assert_eq!(
            doc.root.kind,
            Kind::String("\" \\ / \u{8} \u{c} \n \r \t é 😀 \u{0}".to_owned())
        );
        // DEL and non-ASCII characters may appear unescaped.
        let doc = parse("\"\u{7F}é\"")?;
        assert_eq!(doc.root.kind, Kind::String("\u{7F}é".to_owned()));
        Ok(())
    }

    #[test]
    fn depth_cap() -> TestResult {
        let deep = "[".repeat(100_000);
        let e = fail(&deep);
        assert_eq!(e.msg, "nesting deeper than 127 levels");
        assert_eq!(e.pos, p(1, 128));
        let objects = "{\"a\":".repeat(100_000);
        assert_eq!(fail(&objects).msg, "nesting deeper than 127 levels");
        let ok = format!("{}{}", "[".repeat(127), "]".repeat(127));
        parse(&ok)?;
        // Regression (fuzz/regressions/config/depth-128): 128 levels are
        // more than serde_json takes, so they are refused here too.
        let over = format!("{}{}", "[".repeat(128), "]".repeat(128));
        assert!(serde_json::from_str::<Value>(&over).is_err());
        assert_eq!(fail(&over).msg, "nesting deeper than 127 levels");
        // Depth is about nesting, not about how many containers there are.
        let wide = format!("[{}[]]", "[[]],".repeat(1000));
        parse(&wide)?;
        Ok(())
    }

    #[test]
    fn numbers_match_serde_json() -> TestResult {
        let texts = [
            "0",
            "-0",
            "1e5",
            "1.5E-3",
            "-12.25e+2",
            "1E400000000000000000000000000000000000000000000000000000000000",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "1e-400",
        ];
        for text in texts {
            if text.starts_with("1E4") {
                assert_eq!(fail(text).msg, "number out of range");
                continue;
            }
            let doc = parse(text)?;
            let want: Number = serde_json::from_str(text)?;
            assert_eq!(doc.root.kind, Kind::Number(want.clone()), "{text}");
            assert_eq!(doc.root.to_value(), Value::Number(want), "{text}");
            assert_eq!(doc.root.type_name(), "number");
        }
        let Kind::Number(n) = parse("18446744073709551615")?.root.kind else {
            panic!("not a number")
        };
        assert_eq!(n.as_u64(), Some(u64::MAX));
        let Kind::Number(n) = parse("-0")?.root.kind else {
            panic!("not a number")
        };
        assert_eq!(n.as_f64().map(f64::is_sign_negative), Some(true));
        let Kind::Number(n) =
            parse("123456789012345678901234567890")?.root.kind
        else {
            panic!("not a number")
        };
        assert!(n.is_f64());
        Ok(())
    }

    #[test]
    fn to_value_equals_serde_json() -> TestResult {
        let text = r#"
{
  "mcpServers": {
    "files": {
      "command": "npx",
      "args": ["-y", "@mcp/fs", "/tmp/a b"],
      "env": {"DEBUG": "1", "ÜNICODE": "\u00fc\ud83d\ude00"}
    },
    "remote": {"type": "http", "url": "https://example.com/mcp",
               "headers": {}, "timeout": 30.5, "retries": -3,
               "enabled": true, "note": null, "tags": [[], [{}], 1e-2]}
  },
  "big": 98765432109876543210
}"#;
        let want: Value = serde_json::from_str(text)?;
        let doc = parse(text)?;
        assert_eq!(doc.root.to_value(), want);
        assert!(doc.duplicates.is_empty());
        Ok(())
    }

    #[test]
    fn every_prefix_is_refused_without_panicking() -> TestResult {
        let text = r#"{"a": [1, -2.5e3, {"\u00e9\uD83D\uDE00 é": null}],
 "b": true, "c": "x\n"}"#;
        let want: Value = serde_json::from_str(text)?;
        assert_eq!(parse(text)?.root.to_value(), want);
        for (i, _) in text.char_indices().skip(1) {
            let prefix = text.get(..i).ok_or("not a char boundary")?;
            assert!(parse(prefix).is_err(), "prefix {prefix:?} parsed");
        }
        Ok(())
    }

    #[test]
    fn accessors() -> TestResult {
        let doc =
            parse(r#"{"n": null, "b": false, "s": "x", "a": [], "o": {}}"#)?;
        let names: Vec<&str> = ["n", "b", "s", "a", "o"]
            .iter()
            .map(|k| member(&doc.root, k).value.type_name())
            .collect();
        assert_eq!(names, ["null", "boolean", "string", "array", "object"]);
        assert!(doc.root.get("missing").is_none());
        assert!(member(&doc.root, "a").value.get("x").is_none());
        Ok(())
    }
}
