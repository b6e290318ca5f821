//! Tool arguments from the command line, typed by the tool's inputSchema.
//!
//! `key=value` is converted only toward what the schema declares for
//! `key`: a string property stays a string even when it looks like a
//! number (`zip=01234`, `thread_ts=1712.5`), which is the complaint users
//! have most about peers. The declaration is followed the way servers
//! write it: `anyOf`/`oneOf` (Python's `list[str] | None` arrives as
//! `anyOf: [{type: array}, {type: null}]`), type lists, local `$ref`s into
//! `$defs`, `enum` and `const` (typed values), and `allOf` with one typed
//! branch. When several branches fit, the most specific wins (a constant,
//! then null, boolean, integer, number, JSON, string) and a note says so.
//! Without a declared type the value stays a string.
//!
//! The rest is HTTPie's syntax: `key:=json` takes raw JSON, `key=@file`
//! a file's text, `key:=@file` a file's JSON, and `\` before a leading `@`
//! or `=` keeps it literal. A name the schema does not list is refused
//! unless the schema allows more properties. Pure: reading a file is the
//! caller's `read`, and notes are returned, not printed.

use serde_json::{Map, Value};

use crate::suggest::suggest;

/// How deep `$ref`s and combinators are followed; a schema deeper than
/// this (or a `$ref` cycle) is treated as declaring nothing.
const MAX_DEPTH: usize = 16;

/// How the error about a name the schema does not list begins.
pub const UNKNOWN: &str = "unknown argument";

/// Arguments built from the command line, with notes for `-v`.
#[derive(Debug, Default)]
pub struct Built {
    /// The arguments object to send.
    pub args: Map<String, Value>,
    /// Which branch a value was sent as, when more than one fitted.
    pub notes: Vec<String>,
}

/// Reads the text of a file named by `key=@file` (bounded by the caller).
pub type ReadFile<'a> = &'a dyn Fn(&str) -> Result<String, String>;

/// Builds the arguments object. `base` is the `--args` object, if any: it
/// is taken as is, the words on top of it are checked.
pub fn build(
    schema: Option<&Value>,
    base: Option<Value>,
    pairs: &[String],
    read: ReadFile<'_>,
) -> Result<Built, String> {
    let mut built = Built {
        args: match base {
            None => Map::new(),
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "--args must be a JSON object, not {}",
                    type_name(&other)
                ));
            }
        },
        notes: vec![],
    };
    let root = schema.unwrap_or(&Value::Null);
    let props = properties(root);
    let mut given: Vec<&str> = vec![];
    for pair in pairs {
        let word = Word::parse(pair)?;
        if given.contains(&word.key) {
            return Err(format!("argument '{}' is given twice", word.key));
        }
        given.push(word.key);
        let decl = props.and_then(|p| p.get(word.key));
        if decl.is_none() {
            check_known(root, props, word.key)?;
        }
        let value = word.value(root, decl, read, &mut built.notes)?;
        built.args.insert(word.key.to_string(), value);
    }
    Ok(built)
}

/// One `key=value`, `key:=json` word, split.
struct Word<'a> {
    key: &'a str,
    raw: &'a str,
    json: bool,
}

impl<'a> Word<'a> {
    fn parse(pair: &'a str) -> Result<Word<'a>, String> {
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| format!("argument '{pair}' is not key=value"))?;
        let word = match k.strip_suffix(':') {
            Some(k) => Word { key: k, raw: v, json: true },
            None => Word { key: k, raw: v, json: false },
        };
        if word.key.is_empty() {
            return Err(format!("argument '{pair}' has an empty name"));
        }
        Ok(word)
    }

    /// The value: read from a file for `@`, then JSON for `:=`, else typed
    /// by the declaration.
    fn value(
        &self,
        root: &Value,
        decl: Option<&Value>,
        read: ReadFile<'_>,
        notes: &mut Vec<String>,
    ) -> Result<Value, String> {
        let key = self.key;
        let text = match self.raw.strip_prefix('@') {
            Some(path) => {
                read(path).map_err(|e| format!("argument '{key}': {e}"))?
            }
            None => unescape(self.raw).to_string(),
        };
        if self.json {
            return serde_json::from_str(&text).map_err(|e| {
                let from =
                    if self.raw.starts_with('@') { " (file)" } else { "" };
                format!("argument '{key}': ':=' takes JSON{from}: {e}")
            });
        }
        let mut leaves = vec![];
        if let Some(d) = decl {
            flatten(root, d, 0, &mut leaves);
        }
        coerce(key, &text, &leaves, notes)
    }
}

/// `\@x` and `\=x` are the literal `@x` and `=x`.
fn unescape(raw: &str) -> &str {
    match raw.strip_prefix('\\') {
        Some(rest) if rest.starts_with(['@', '=']) => rest,
        _ => raw,
    }
}

/// The `properties` object of the (possibly `$ref`'d) root schema.
fn properties(root: &Value) -> Option<&Map<String, Value>> {
    deref(root, root, 0)?.get("properties")?.as_object()
}

/// Refuses a name the schema does not list, unless it allows others.
fn check_known(
    root: &Value,
    props: Option<&Map<String, Value>>,
    key: &str,
) -> Result<(), String> {
    // A schema without `properties` lists no names, so it refuses none.
    let Some(schema) = deref(root, root, 0).filter(|_| props.is_some()) else {
        return Ok(());
    };
    let open = match schema.get("additionalProperties") {
        Some(Value::Bool(b)) => *b,
        Some(Value::Object(_)) => true,
        _ => false,
    };
    if open || schema.get("patternProperties").is_some() {
        return Ok(());
    }
    let names = props.into_iter().flat_map(|p| p.keys().map(String::as_str));
    let mut text = format!("{UNKNOWN} '{key}'");
    match suggest(key, names.clone()) {
        Some(s) => text.push_str(&format!("; did you mean '{s}'?")),
        None => {
            let all: Vec<&str> = names.collect();
            if all.is_empty() {
                text.push_str(" (it takes none)");
            } else {
                text.push_str(&format!(" (it takes: {})", all.join(", ")));
            }
        }
    }
    Err(text)
}

/// Follows a local `$ref` (`#/$defs/X`, `#/definitions/X`); `None` for a
/// remote one, a dangling one, or one too deep. Nothing is ever fetched.
fn deref<'a>(
    root: &'a Value,
    node: &'a Value,
    depth: usize,
) -> Option<&'a Value> {
    let mut node = node;
    for _ in depth..MAX_DEPTH {
        match node.get("$ref").and_then(Value::as_str) {
            None => return Some(node),
            Some(r) => {
                let pointer = r.strip_prefix('#')?;
                node = root.pointer(pointer)?;
            }
        }
    }
    None
}

/// The type of a union branch that declares none.
const ANY: &str = "any";

/// One alternative a value may take.
#[derive(Debug, Clone, Copy)]
enum Leaf<'a> {
    Type(&'a str),
    Enum(&'a [Value]),
    Const(&'a Value),
}

/// The alternatives a declaration allows, through `$ref`, `anyOf`,
/// `oneOf`, `allOf` (one typed branch) and type lists.
fn flatten<'a>(
    root: &'a Value,
    node: &'a Value,
    depth: usize,
    out: &mut Vec<Leaf<'a>>,
) {
    let Some(node) = deref(root, node, depth) else { return };
    if depth >= MAX_DEPTH {
        return;
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(branches) = node.get(k).and_then(Value::as_array) {
            for b in branches {
                let before = out.len();
                flatten(root, b, depth + 1, out);
                // A branch that declares nothing takes anything: as a
                // string, the least specific fit.
                if out.len() == before {
                    out.push(Leaf::Type(ANY));
                }
            }
            return;
        }
    }
    if let Some(branches) = node.get("allOf").and_then(Value::as_array) {
        let typed: Vec<Vec<Leaf<'a>>> = branches
            .iter()
            .map(|b| {
                let mut l = vec![];
                flatten(root, b, depth + 1, &mut l);
                l
            })
            .filter(|l| !l.is_empty())
            .collect();
        if let [one] = typed.as_slice() {
            out.extend(one.iter().copied());
        }
        return;
    }
    if let Some(c) = node.get("const") {
        out.push(Leaf::Const(c));
    } else if let Some(e) = node.get("enum").and_then(Value::as_array) {
        out.push(Leaf::Enum(e));
    } else {
        match node.get("type") {
            Some(Value::String(t)) => out.push(Leaf::Type(t)),
            Some(Value::Array(ts)) => {
                out.extend(
                    ts.iter().filter_map(Value::as_str).map(Leaf::Type),
                );
            }
            _ => {}
        }
    }
}

/// How specific a fit is: lower wins.
fn rank(leaf: Leaf<'_>) -> u8 {
    match leaf {
        Leaf::Const(_) | Leaf::Enum(_) => 0,
        Leaf::Type("null") => 1,
        Leaf::Type("boolean") => 2,
        Leaf::Type("integer") => 3,
        Leaf::Type("number") => 4,
        Leaf::Type("array" | "object") => 5,
        Leaf::Type(_) => 6,
    }
}

fn describe(leaf: Leaf<'_>) -> String {
    match leaf {
        Leaf::Type(t) => article(t),
        Leaf::Const(c) => format!("the constant {c}"),
        Leaf::Enum(e) => format!(
            "one of {}",
            e.iter().map(Value::to_string).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The value `raw` stands for under one alternative, if it fits.
fn fit(raw: &str, leaf: Leaf<'_>) -> Option<Value> {
    let same = |v: &Value| match v {
        Value::String(s) => s == raw,
        other => serde_json::from_str::<Value>(raw).is_ok_and(|r| r == *other),
    };
    match leaf {
        Leaf::Type(t) => convert(raw, t),
        Leaf::Const(c) => same(c).then(|| c.clone()),
        Leaf::Enum(e) => e.iter().find(|v| same(v)).cloned(),
    }
}

/// Converts `raw` to the most specific alternative that fits.
fn coerce(
    key: &str,
    raw: &str,
    leaves: &[Leaf<'_>],
    notes: &mut Vec<String>,
) -> Result<Value, String> {
    if leaves.is_empty() {
        return Ok(Value::String(raw.to_string()));
    }
    let mut fits: Vec<(Leaf<'_>, Value)> =
        leaves.iter().filter_map(|l| fit(raw, *l).map(|v| (*l, v))).collect();
    fits.sort_by_key(|(l, _)| rank(*l));
    let Some((best, value)) = fits.first().cloned() else {
        let mut wanted: Vec<String> =
            leaves.iter().map(|l| describe(*l)).collect();
        wanted.dedup();
        return Err(format!(
            "argument '{key}': '{raw}' is not {} (use {key}:=<json> for raw JSON)",
            wanted.join(" or ")
        ));
    };
    if fits.len() > 1 {
        let others: Vec<String> =
            fits[1..].iter().map(|(l, _)| describe(*l)).collect();
        notes.push(format!(
            "argument '{key}': '{raw}' fits {} and {}; sent as {}",
            describe(best),
            others.join(" and "),
            describe(best)
        ));
    }
    Ok(value)
}

fn convert(raw: &str, ty: &str) -> Option<Value> {
    match ty {
        "string" => Some(Value::String(raw.to_string())),
        "integer" => raw
            .parse::<i64>()
            .ok()
            .map(Value::from)
            .or_else(|| raw.parse::<u64>().ok().map(Value::from)),
        "number" => {
            if let Ok(i) = raw.parse::<i64>() {
                return Some(Value::from(i));
            }
            raw.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
        }
        "boolean" => match raw {
            "true" => Some(Value::Bool(true)),
            "false" => Some(Value::Bool(false)),
            _ => None,
        },
        "null" => (raw == "null").then_some(Value::Null),
        ANY => Some(Value::String(raw.to_string())),
        "array" => serde_json::from_str(raw).ok().filter(Value::is_array),
        "object" => serde_json::from_str(raw).ok().filter(Value::is_object),
        _ => None,
    }
}

fn article(t: &str) -> String {
    match t {
        "integer" | "array" | "object" => format!("an {t}"),
        "null" => "null".to_string(),
        ANY => "anything".to_string(),
        _ => format!("a {t}"),
    }
}

/// The JSON type of a value, as a schema spells it (`"string"`, `"integer"`, ...).
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Required properties missing from `args`.
pub fn missing_required(
    schema: Option<&Value>,
    args: &Map<String, Value>,
) -> Vec<String> {
    schema
        .and_then(|s| deref(s, s, 0))
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|req| {
            req.iter()
                .filter_map(Value::as_str)
                .filter(|k| !args.contains_key(*k))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// One parameter of a tool as `list` shows it: `name: type`, `name?: …`
/// when optional, enums and constants by value.
pub fn signature(schema: Option<&Value>) -> Vec<String> {
    let Some(root) = schema else { return vec![] };
    let required: Vec<&str> = deref(root, root, 0)
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = properties(root) else { return vec![] };
    // Required ones first, in the schema's order; then the rest by name
    // (the order of `properties` is not kept by the JSON parser).
    let first = required.iter().filter_map(|r| props.get_key_value(*r));
    let rest = props.iter().filter(|(n, _)| !required.contains(&n.as_str()));
    first
        .chain(rest)
        .map(|(name, decl)| {
            let mut leaves = vec![];
            flatten(root, decl, 0, &mut leaves);
            let mut types: Vec<String> =
                leaves.iter().map(|l| short(root, decl, *l)).collect();
            types.dedup();
            let opt = if required.contains(&name.as_str()) { "" } else { "?" };
            match types.is_empty() {
                true => format!("{name}{opt}"),
                false => format!("{name}{opt}: {}", types.join("|")),
            }
        })
        .collect()
}

/// One parameter of a tool, as its detail view shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// The property's name.
    pub name: String,
    /// `name: type` or `name?: type`, as [`signature`] writes it.
    pub signature: String,
    /// Whether the schema's `required` lists it.
    pub required: bool,
    /// Its `description`, as the server wrote it.
    pub description: Option<String>,
    /// Its `default`, when the schema gives one.
    pub default: Option<Value>,
    /// The values an `enum` or `const` (in any branch) allows.
    pub choices: Vec<Value>,
    /// A value that fits: the default, else the first choice, else one of
    /// the first declared type (`text`, `1`, `true`, `{}`; a list holds one
    /// item of its `items` type, or none).
    pub example: Value,
}

/// Every parameter of an inputSchema, in [`signature`]'s order (required
/// ones first), with its description, default, allowed values and an
/// example value.
pub fn parameters(schema: Option<&Value>) -> Vec<Param> {
    let Some(root) = schema else { return vec![] };
    let Some(props) = properties(root) else { return vec![] };
    let required: Vec<&str> = deref(root, root, 0)
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let sigs = signature(schema);
    let first = required.iter().filter_map(|r| props.get_key_value(*r));
    let rest = props.iter().filter(|(n, _)| !required.contains(&n.as_str()));
    first
        .chain(rest)
        .zip(sigs)
        .map(|((name, raw), signature)| {
            let decl = deref(root, raw, 0).unwrap_or(raw);
            let text = |k: &str| {
                raw.get(k).or_else(|| decl.get(k)).and_then(Value::as_str)
            };
            let default = raw.get("default").or_else(|| decl.get("default"));
            let mut leaves = vec![];
            flatten(root, raw, 0, &mut leaves);
            let mut choices: Vec<Value> = vec![];
            for l in &leaves {
                match l {
                    Leaf::Enum(vs) => choices.extend(vs.iter().cloned()),
                    Leaf::Const(c) => choices.push((*c).clone()),
                    Leaf::Type(_) => {}
                }
            }
            let typed = leaves.iter().find_map(|l| match l {
                Leaf::Type(t) if *t != "null" => Some(*t),
                _ => None,
            });
            let example = default
                .cloned()
                .or_else(|| choices.first().cloned())
                .unwrap_or_else(|| {
                    let item = || {
                        let items = decl.get("items")?;
                        let items = deref(root, items, 0).unwrap_or(items);
                        let t = items.get("type").and_then(Value::as_str)?;
                        Some(example_of(t, items))
                    };
                    match typed.unwrap_or("string") {
                        // One item of the declared item type: an empty
                        // list is seldom what a required list may be.
                        "array" => Value::Array(item().into_iter().collect()),
                        t => example_of(t, decl),
                    }
                });
            Param {
                name: name.clone(),
                signature,
                required: required.contains(&name.as_str()),
                description: text("description")
                    .or_else(|| text("title"))
                    .map(str::to_string),
                default: default.cloned(),
                choices,
                example,
            }
        })
        .collect()
}

/// An example value of JSON Schema type `t` for declaration `decl`: the
/// least it allows for a number (else 1), `true`, `{}`, `[]`, or a string
/// that fits its `format`.
fn example_of(t: &str, decl: &Value) -> Value {
    match t {
        "integer" | "number" => decl
            .get("minimum")
            .filter(|m| m.is_number())
            .cloned()
            .unwrap_or(Value::from(1)),
        "boolean" => Value::Bool(true),
        "array" => Value::Array(vec![]),
        "object" => Value::Object(Map::new()),
        _ => Value::from(
            match decl.get("format").and_then(Value::as_str).unwrap_or("") {
                "uri" | "url" | "iri" => "https://example.com/",
                "email" => "user@example.com",
                "date" => "2026-01-01",
                "date-time" => "2026-01-01T00:00:00Z",
                _ => "text",
            },
        ),
    }
}

/// A short type name: `string`, `string[]`, `1|2|3`, `"a"`.
fn short(root: &Value, decl: &Value, leaf: Leaf<'_>) -> String {
    match leaf {
        Leaf::Type("array") => {
            let mut l = vec![];
            if let Some(items) = find_items(root, decl, 0) {
                flatten(root, items, 1, &mut l);
            }
            match l.as_slice() {
                [Leaf::Type(t)] if *t != "array" => format!("{t}[]"),
                _ => "array".to_string(),
            }
        }
        Leaf::Type(t) => t.to_string(),
        Leaf::Const(c) => c.to_string(),
        Leaf::Enum(e) => {
            e.iter().map(Value::to_string).collect::<Vec<_>>().join("|")
        }
    }
}

/// The `items` of the array branch of a declaration.
fn find_items<'a>(
    root: &'a Value,
    node: &'a Value,
    depth: usize,
) -> Option<&'a Value> {
    let node = deref(root, node, depth)?;
    if depth >= MAX_DEPTH {
        return None;
    }
    if let Some(i) = node.get("items") {
        return Some(i);
    }
    ["anyOf", "oneOf", "allOf"]
        .iter()
        .filter_map(|k| node.get(*k).and_then(Value::as_array))
        .flatten()
        .find_map(|b| find_items(root, b, depth + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "s": {"type": "string"}, "i": {"type": "integer"},
            "n": {"type": "number"}, "b": {"type": "boolean"},
            "arr": {"type": "array"}, "either": {"type": ["integer", "string"]},
            "x": {},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}},
                               {"type": "null"}]},
            "limit": {"type": ["integer", "null"]},
            "level": {"enum": [1, 2, "three"]},
            "mode": {"const": 5},
            "unit": {"$ref": "#/$defs/Unit"},
            "box": {"allOf": [{"$ref": "#/$defs/Box"}], "description": "d"},
            "loop": {"$ref": "#/$defs/Loop"},
            "far": {"$ref": "https://example.com/s.json"},
        }, "required": ["s"], "additionalProperties": false,
        "$defs": {"Unit": {"enum": ["c", "f"]}, "Box": {"type": "object"},
                  "Loop": {"$ref": "#/$defs/Loop"}}})
    }

    fn no_file(p: &str) -> Result<String, String> {
        match p {
            "t.json" => Ok("[1, 2]".into()),
            "t.txt" => Ok("text\n".into()),
            _ => Err(format!("{p}: cannot open")),
        }
    }

    fn built(pairs: &[&str]) -> Result<Built, String> {
        let pairs: Vec<String> = pairs.iter().map(|s| s.to_string()).collect();
        build(Some(&schema()), None, &pairs, &no_file)
    }

    fn b(pairs: &[&str]) -> Result<Map<String, Value>, String> {
        built(pairs).map(|b| b.args)
    }

    #[test]
    fn strings_stay_strings() {
        let a = b(&["s=007", "i=7", "n=1.5", "b=true", "x=42"]).unwrap();
        assert_eq!(
            Value::Object(a),
            json!({"s": "007", "i": 7, "n": 1.5, "b": true, "x": "42"})
        );
    }

    #[test]
    fn raw_json_and_unions() {
        let a =
            b(&["arr=[1,2]", "x:={\"k\":1}", "either=x", "s=a=b"]).unwrap();
        assert_eq!(
            Value::Object(a),
            json!({"arr": [1, 2], "x": {"k": 1}, "either": "x", "s": "a=b"})
        );
        assert_eq!(b(&["either=5"]).unwrap()["either"], json!(5));
    }

    #[test]
    fn follows_any_of_refs_enums_and_consts() {
        let a = b(&[
            "tags=[\"a\",\"b\"]",
            "limit=5",
            "level=2",
            "mode=5",
            "unit=c",
            "box={\"k\":1}",
        ])
        .unwrap();
        assert_eq!(
            Value::Object(a),
            json!({"tags": ["a", "b"], "limit": 5, "level": 2, "mode": 5,
                   "unit": "c", "box": {"k": 1}})
        );
        assert_eq!(b(&["tags=null"]).unwrap()["tags"], Value::Null);
        assert_eq!(b(&["level=three"]).unwrap()["level"], json!("three"));
        let e = b(&["level=4"]).unwrap_err();
        assert!(e.contains("'4' is not one of 1, 2, \"three\""), "{e}");
        let e = b(&["tags=a"]).unwrap_err();
        assert!(e.contains("is not an array or null"), "{e}");
        assert!(b(&["unit=k"]).is_err());
        assert!(b(&["mode=6"]).is_err());
        // A cycle or a remote $ref declares nothing: a string.
        assert_eq!(b(&["loop=1", "far=2"]).unwrap()["far"], json!("2"));
        // A union branch that declares nothing takes anything, last.
        let open = json!({"properties": {"v": {"anyOf": [
            {"type": "integer"}, {"description": "anything"}]}}});
        let pairs = |p: &str| vec![p.to_string()];
        let v = |p: &str| build(Some(&open), None, &pairs(p), &no_file);
        assert_eq!(v("v=5").unwrap().args["v"], json!(5));
        assert_eq!(v("v=abc").unwrap().args["v"], json!("abc"));
        assert_eq!(signature(Some(&open)), ["v?: integer|any"]);
    }

    #[test]
    fn the_most_specific_fit_wins_and_says_so() {
        let r = built(&["either=5"]).unwrap();
        assert_eq!(r.args["either"], json!(5));
        assert_eq!(
            r.notes,
            [
                "argument 'either': '5' fits an integer and a string; sent as an integer"
            ]
        );
        assert!(built(&["either=x"]).unwrap().notes.is_empty());
    }

    #[test]
    fn files_and_escapes() {
        let a =
            b(&["s=@t.txt", "arr:=@t.json", "x=\\@me", "b:=true"]).unwrap();
        assert_eq!(a["s"], "text\n");
        assert_eq!(a["arr"], json!([1, 2]));
        assert_eq!(a["x"], "@me");
        assert_eq!(b(&["x=\\=y"]).unwrap()["x"], "=y");
        assert_eq!(b(&["x=a\\@"]).unwrap()["x"], "a\\@");
        let e = b(&["s=@nope"]).unwrap_err();
        assert_eq!(e, "argument 's': nope: cannot open");
        assert!(b(&["s:=@t.txt"]).unwrap_err().contains("(file)"));
    }

    #[test]
    fn unknown_names_are_refused_unless_allowed() {
        let e = b(&["limt=1"]).unwrap_err();
        assert!(
            e.starts_with("unknown argument 'limt'; did you mean 'limit'?"),
            "{e}"
        );
        let open = json!({"type": "object", "properties": {"a": {}},
                          "additionalProperties": true});
        let pairs = vec!["zz=1".to_string()];
        assert!(build(Some(&open), None, &pairs, &no_file).is_ok());
        let none = json!({"type": "object", "properties": {}});
        let e = build(Some(&none), None, &pairs, &no_file).unwrap_err();
        assert!(e.contains("(it takes none)"), "{e}");
        let unlisted = json!({"type": "object"});
        assert!(build(Some(&unlisted), None, &pairs, &no_file).is_ok());
        // --args is passed as is.
        let base = Some(json!({"zz": 1}));
        assert!(build(Some(&none), base, &[], &no_file).is_ok());
    }

    #[test]
    fn type_errors_and_duplicates() {
        assert!(b(&["i=1.5"]).unwrap_err().contains("not an integer"));
        assert!(b(&["b=yes"]).is_err());
        assert!(b(&["s=1", "s=2"]).unwrap_err().contains("twice"));
        assert!(b(&["x:=nope"]).is_err());
        assert!(b(&["=1"]).unwrap_err().contains("empty name"));
        assert!(build(None, Some(json!([1])), &[], &no_file).is_err());
    }

    #[test]
    fn required() {
        let a = b(&["i=1"]).unwrap();
        assert_eq!(missing_required(Some(&schema()), &a), ["s"]);
    }

    #[test]
    fn signatures() {
        let s = signature(Some(&schema()));
        assert_eq!(s[0], "s: string");
        assert!(s.contains(&"tags?: string[]|null".to_string()), "{s:?}");
        assert!(s.contains(&"level?: 1|2|\"three\"".to_string()), "{s:?}");
        assert!(s.contains(&"x?".to_string()), "{s:?}");
        assert!(s.contains(&"unit?: \"c\"|\"f\"".to_string()), "{s:?}");
    }

    #[test]
    fn parameters_for_the_detail_view() {
        let schema = json!({
            "type": "object",
            "required": ["q"],
            "properties": {
                "q": {"type": "string", "description": "The query."},
                "n": {"type": "integer", "default": 5},
                "mode": {"$ref": "#/$defs/Mode"},
                "tags": {"anyOf": [{"type": "array"}, {"type": "null"}]},
            },
            "$defs": {"Mode": {"enum": ["fast", "slow"],
                               "description": "How."}},
        });
        let p = parameters(Some(&schema));
        let names: Vec<&str> = p.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["q", "mode", "n", "tags"]);
        assert!(p[0].required && !p[1].required);
        assert_eq!(p[0].description.as_deref(), Some("The query."));
        assert_eq!(p[0].example, json!("text"));
        assert_eq!(p[1].choices, [json!("fast"), json!("slow")]);
        assert_eq!(p[1].description.as_deref(), Some("How."));
        assert_eq!(p[1].example, json!("fast"));
        assert_eq!(p[2].default, Some(json!(5)));
        assert_eq!(p[2].example, json!(5));
        assert_eq!(p[3].example, json!([]));
        let s = json!({"type": "object", "required": ["cmd", "ns"],
            "properties": {
                "cmd": {"type": "array", "items": {"type": "string"}},
                "ns": {"type": "array", "items": {"$ref": "#/$defs/N"}}},
            "$defs": {"N": {"type": "integer", "minimum": 2}}});
        let p = parameters(Some(&s));
        assert_eq!(p[0].example, json!(["text"]));
        assert_eq!(p[1].example, json!([2]));
        let s = json!({"type": "object", "required": ["u", "k"], "properties": {
            "u": {"type": "string", "format": "uri"},
            "k": {"type": "integer", "minimum": 3}}});
        let p = parameters(Some(&s));
        assert_eq!(p[0].example, json!("https://example.com/"));
        assert_eq!(p[1].example, json!(3));
        assert_eq!(p[0].signature, "u: string");
        assert!(parameters(None).is_empty());
    }
}
