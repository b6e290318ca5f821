//! Elicitation forms without I/O: what a server's `requestedSchema` asks,
//! how an answer is typed and checked against it, and which answers a
//! form gets from the operator's `--answer`s (or a `batch` line's
//! `answers`) and, under `--elicit defaults`, from the schema's defaults.
//!
//! MCP restricts a form to an object of primitive properties: strings
//! (length, `format`), numbers and integers (ranges), booleans,
//! single-choice enums (`enum`, optionally with `enumNames`, or `oneOf`
//! of `const`/`title`) and multi-select enums (an array whose `items` are
//! such an enum, with `minItems`/`maxItems`). Anything else (nested
//! objects, other arrays, a `$ref`) is refused whole, never half-asked. A value that fails the schema is
//! never sent: the error names the field and the rule. Values given as
//! text are typed like tool arguments ([`crate::callargs`]), so
//! `--answer age=30` is the integer 30 and `--answer zip=01234` stays a
//! string where the schema says string.
//!
//! The prompt on a terminal and the decision what to do with a form live
//! in rivumi-mcp's `ask` module; this module is unit-tested on values.

use serde_json::{Map, Value};

use crate::{callargs, mcp, term};

/// How many enum choices a field may have (a prompt shows only the first
/// few; the rest are typed by value); more is refused.
pub const MAX_CHOICES: usize = 100_000;
/// How many fields a form may have.
pub const MAX_FIELDS: usize = 100;
/// How much of a server's text (message, title, description) is shown.
pub const SHOWN_TEXT: usize = 2000;

/// One field of a form.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// The property's name in the schema.
    pub name: String,
    /// The schema's `title`, if any.
    pub title: Option<String>,
    /// The schema's `description`, if any.
    pub description: Option<String>,
    /// What the field holds, with its rules.
    pub kind: FieldKind,
    /// The schema's `default`, if any.
    pub default: Option<Value>,
    /// Whether the schema lists the field as required.
    pub required: bool,
}

/// What a field holds, with its rules.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldKind {
    /// A string, with optional length bounds and `format`.
    Text {
        /// The least length, in characters.
        min: Option<u64>,
        /// The greatest length, in characters.
        max: Option<u64>,
        /// The schema's `format` (`email`, `uri`, `date`, `date-time`).
        format: Option<String>,
    },
    /// A number, or an integer when `integer`, with optional bounds.
    Number {
        /// Whether only integers are accepted.
        integer: bool,
        /// The least value.
        min: Option<f64>,
        /// The greatest value.
        max: Option<f64>,
    },
    /// `true` or `false`.
    Boolean,
    /// The values, and a label for each (the value when none is given).
    Choice {
        /// The values that may be chosen.
        values: Vec<String>,
        /// A label for each value, in the same order.
        labels: Vec<String>,
    },
    /// Several of the values (a multi-select enum), between `min` and
    /// `max` of them.
    Choices {
        /// The values that may be chosen.
        values: Vec<String>,
        /// A label for each value, in the same order.
        labels: Vec<String>,
        /// The least number of values to choose.
        min: Option<u64>,
        /// The greatest number of values to choose.
        max: Option<u64>,
    },
}

/// A form: the server's message and its fields, in schema order.
#[derive(Clone, Debug, PartialEq)]
pub struct Form {
    /// The server's message, shown above the fields.
    pub message: String,
    /// The fields, in schema order.
    pub fields: Vec<Field>,
    schema: Value,
}

impl Form {
    /// The form an `elicitation/create` (form mode) asks for; `Err` says
    /// why it cannot be asked.
    pub fn parse(params: &Value) -> Result<Form, String> {
        let message = params
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let schema = params
            .get("requestedSchema")
            .filter(|s| s.is_object())
            .ok_or("the request has no 'requestedSchema' object")?;
        if schema.get("type").is_some_and(|t| t != "object") {
            return Err("the requested schema is not an object".into());
        }
        let props = match schema.get("properties") {
            None => Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(_) => return Err("'properties' is not an object".into()),
        };
        if props.len() > MAX_FIELDS {
            return Err(format!(
                "the form has {} fields (at most {MAX_FIELDS} are asked)",
                props.len()
            ));
        }
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        // In the order the schema lists them (kept by the transport's
        // parse as FIELD_ORDER), then any the order does not name.
        let listed: Vec<&str> = schema
            .get(mcp::FIELD_ORDER)
            .and_then(Value::as_array)
            .map(|o| o.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut names: Vec<&String> = vec![];
        for n in listed {
            if let Some((k, _)) = props.get_key_value(n)
                && !names.contains(&k)
            {
                names.push(k);
            }
        }
        for k in props.keys() {
            if !names.contains(&k) {
                names.push(k);
            }
        }
        let mut fields = vec![];
        for name in names {
            let mut f = Field::parse(name, &props[name])?;
            f.required = required.contains(&name.as_str());
            fields.push(f);
        }
        if let Some(r) = required.iter().find(|r| !props.contains_key(**r)) {
            return Err(format!(
                "field '{}' is required but not described",
                shown(r, 80)
            ));
        }
        Ok(Form { message, fields, schema: schema.clone() })
    }

    /// The field with this name, if the form has one.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Types `NAME=VALUE` words (as `--answer` gives them) by the schema,
    /// like tool arguments, and checks each against its field. Words
    /// naming no field of this form are not for it and are skipped.
    pub fn typed(
        &self,
        words: &[String],
        read: callargs::ReadFile<'_>,
    ) -> Result<Map<String, Value>, String> {
        let mut lists = Map::new();
        let mut mine: Vec<String> = vec![];
        for w in words {
            let Some(f) = self.field(word_name(w)) else { continue };
            match (&f.kind, w.split_once('=')) {
                // "a,b" for a multi-select, as at the prompt.
                (FieldKind::Choices { .. }, Some((k, v)))
                    if !k.ends_with(':') =>
                {
                    lists.insert(k.to_string(), f.typed_text(v)?);
                }
                // yes/no/y/n (and true/false) for a boolean, as at the
                // prompt.
                (FieldKind::Boolean, Some((k, v)))
                    if !k.ends_with(':') && !v.starts_with('@') =>
                {
                    lists.insert(k.to_string(), f.typed_text(v)?);
                }
                _ => mine.push(w.clone()),
            }
        }
        let mut built = callargs::build(Some(&self.schema), None, &mine, read)
            .map_err(|e| e.replace("argument '", "answer '"))?;
        for (k, v) in &built.args {
            if let Some(f) = self.field(k) {
                f.check(v)?;
            }
        }
        built.args.extend(lists);
        Ok(built.args)
    }

    /// The content from `answers` (already typed and checked), plus each
    /// unanswered field's default when `defaults`; and the required
    /// fields still without a value.
    pub fn fill(
        &self,
        answers: &Map<String, Value>,
        defaults: bool,
    ) -> (Map<String, Value>, Vec<String>) {
        let mut content = Map::new();
        let mut missing = vec![];
        for f in &self.fields {
            match (answers.get(&f.name), &f.default) {
                (Some(v), _) => {
                    content.insert(f.name.clone(), v.clone());
                }
                (None, Some(d)) if defaults && f.check(d).is_ok() => {
                    content.insert(f.name.clone(), d.clone());
                }
                _ if f.required => missing.push(f.name.clone()),
                _ => {}
            }
        }
        (content, missing)
    }
}

/// The name a `NAME=VALUE` or `NAME:=JSON` word gives.
pub fn word_name(w: &str) -> &str {
    let k = w.split_once('=').map_or(w, |(k, _)| k);
    k.strip_suffix(':').unwrap_or(k)
}

/// The words of a `batch` line's `answers` object, under the rules of
/// `--answer`: a string is typed by the schema (a leading `@` or `=` is
/// literal: a batch line never reads files), anything else is JSON.
pub fn words_of(answers: &Map<String, Value>) -> Vec<String> {
    answers
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) if s.starts_with(['@', '=']) => {
                format!("{k}=\\{s}")
            }
            Value::String(s) => format!("{k}={s}"),
            v => format!("{k}:={v}"),
        })
        .collect()
}

/// Sanitised and bounded, for showing a server's text.
pub fn shown(s: &str, max: usize) -> String {
    term::clip(&term::line(s), max).into_owned()
}

impl Field {
    fn parse(name: &str, decl: &Value) -> Result<Field, String> {
        let bad = |why: &str| {
            Err(format!(
                "field '{}' {why}; only strings, numbers, integers, booleans \
                 and single-choice enums can be asked",
                shown(name, 80)
            ))
        };
        let Value::Object(d) = decl else {
            return bad("is not described by an object");
        };
        let text =
            |k: &str| d.get(k).and_then(Value::as_str).map(String::from);
        let uint = |k: &str| d.get(k).and_then(Value::as_u64);
        let num = |k: &str| d.get(k).and_then(Value::as_f64);
        let kind = if let Some(values) = choices(d) {
            let (values, labels) = values?;
            FieldKind::Choice { values, labels }
        } else {
            match d.get("type").and_then(Value::as_str) {
                Some("string") => FieldKind::Text {
                    min: uint("minLength"),
                    max: uint("maxLength"),
                    format: text("format"),
                },
                Some(t @ ("number" | "integer")) => FieldKind::Number {
                    integer: t == "integer",
                    min: num("minimum"),
                    max: num("maximum"),
                },
                Some("boolean") => FieldKind::Boolean,
                Some("object") => return bad("is an object"),
                Some("array") => {
                    let items = d.get("items").and_then(Value::as_object);
                    match items.and_then(choices) {
                        Some(Ok((values, labels))) => FieldKind::Choices {
                            values,
                            labels,
                            min: uint("minItems"),
                            max: uint("maxItems"),
                        },
                        Some(Err(e)) => return bad(&e),
                        None => return bad("is an array of no choices"),
                    }
                }
                _ => return bad("has no primitive type"),
            }
        };
        Ok(Field {
            name: name.to_string(),
            title: text("title"),
            description: text("description"),
            kind,
            default: d.get("default").cloned(),
            required: false,
        })
    }

    /// The label a prompt shows: the title, else the name.
    pub fn label(&self) -> String {
        shown(self.title.as_deref().unwrap_or(&self.name), 200)
    }

    /// The type as a prompt shows it: "integer, 1..120", "one of 3".
    pub fn describe(&self) -> String {
        let range = |lo: Option<String>, hi: Option<String>| match (lo, hi) {
            (None, None) => String::new(),
            (lo, hi) => format!(
                ", {}..{}",
                lo.unwrap_or_default(),
                hi.unwrap_or_default()
            ),
        };
        match &self.kind {
            FieldKind::Text { min, max, format } => format!(
                "text{}{}",
                format
                    .as_deref()
                    .map(|f| format!(" ({})", shown(f, 40)))
                    .unwrap_or_default(),
                match (min, max) {
                    (None, None) => String::new(),
                    _ => format!(
                        ", length {}",
                        range(
                            min.map(|n| n.to_string()),
                            max.map(|n| n.to_string())
                        )
                        .trim_start_matches(", ")
                    ),
                }
            ),
            FieldKind::Number { integer, min, max } => format!(
                "{}{}",
                if *integer { "integer" } else { "number" },
                range(min.map(fmt_num), max.map(fmt_num))
            ),
            FieldKind::Boolean => "yes/no".into(),
            FieldKind::Choice { values, .. } => {
                format!("one of {}", values.len())
            }
            FieldKind::Choices { values, min, max, .. } => format!(
                "some of {}{}, separated by commas",
                values.len(),
                range(min.map(|n| n.to_string()), max.map(|n| n.to_string()))
            ),
        }
    }

    /// Types text typed at the prompt: a number for numbers, yes/no for
    /// booleans, a choice by value, label or number; then checks it.
    pub fn typed_text(&self, text: &str) -> Result<Value, String> {
        let t = text.trim();
        let v = match &self.kind {
            FieldKind::Text { .. } => Value::String(text.to_string()),
            FieldKind::Number { .. } => {
                let n: serde_json::Number = serde_json::from_str(t)
                    .map_err(|_| self.rule("must be a number"))?;
                Value::Number(n)
            }
            FieldKind::Boolean => match t.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err(self.rule("must be yes or no")),
            },
            FieldKind::Choice { values, labels } => {
                Value::String(self.pick(values, labels, t)?)
            }
            FieldKind::Choices { values, labels, .. } => Value::Array(
                t.split(',')
                    .map(str::trim)
                    .filter(|w| !w.is_empty())
                    .map(|w| self.pick(values, labels, w).map(Value::String))
                    .collect::<Result<_, _>>()?,
            ),
        };
        self.check(&v)?;
        Ok(v)
    }

    /// One choice typed by value, label or number (from 1).
    fn pick(
        &self,
        values: &[String],
        labels: &[String],
        t: &str,
    ) -> Result<String, String> {
        let by_number = || {
            t.parse::<usize>()
                .ok()
                .filter(|n| (1..=values.len()).contains(n))
                .map(|n| values[n - 1].clone())
        };
        let by_label =
            || labels.iter().position(|l| l == t).map(|i| values[i].clone());
        values
            .iter()
            .find(|v| *v == t)
            .cloned()
            .or_else(by_number)
            .or_else(by_label)
            .ok_or_else(|| {
                self.rule(&format!(
                    "'{}' is not one of the choices (or its number)",
                    shown(t, 80)
                ))
            })
    }

    /// Checks a value against the field's rules.
    pub fn check(&self, v: &Value) -> Result<(), String> {
        match (&self.kind, v) {
            (FieldKind::Text { min, max, format }, Value::String(s)) => {
                let n = s.chars().count() as u64;
                if min.is_some_and(|m| n < m) {
                    return Err(self.rule(&format!(
                        "must be at least {} characters",
                        min.unwrap_or(0)
                    )));
                }
                if max.is_some_and(|m| n > m) {
                    return Err(self.rule(&format!(
                        "must be at most {} characters",
                        max.unwrap_or(0)
                    )));
                }
                match format.as_deref() {
                    Some(f) if !format_ok(f, s) => Err(self
                        .rule(&format!("must be a valid {}", shown(f, 40)))),
                    _ => Ok(()),
                }
            }
            (FieldKind::Number { integer, min, max }, Value::Number(n)) => {
                if *integer && !(n.is_i64() || n.is_u64()) {
                    return Err(self.rule("must be an integer"));
                }
                let x = n.as_f64().unwrap_or(f64::NAN);
                if let Some(m) = min.filter(|m| x < *m) {
                    return Err(
                        self.rule(&format!("must be at least {}", fmt_num(m)))
                    );
                }
                if let Some(m) = max.filter(|m| x > *m) {
                    return Err(
                        self.rule(&format!("must be at most {}", fmt_num(m)))
                    );
                }
                Ok(())
            }
            (FieldKind::Boolean, Value::Bool(_)) => Ok(()),
            (FieldKind::Choice { values, .. }, Value::String(s))
                if values.contains(s) =>
            {
                Ok(())
            }
            (FieldKind::Choice { .. }, _) => {
                Err(self.rule("must be one of the choices"))
            }
            (FieldKind::Choices { values, min, max, .. }, Value::Array(a)) => {
                if !a.iter().all(|v| {
                    v.as_str().is_some_and(|s| values.iter().any(|x| x == s))
                }) {
                    return Err(self.rule("must hold only the choices"));
                }
                let n = a.len() as u64;
                if let Some(m) = min.filter(|m| n < *m) {
                    return Err(self.rule(&format!("must pick at least {m}")));
                }
                if let Some(m) = max.filter(|m| n > *m) {
                    return Err(self.rule(&format!("must pick at most {m}")));
                }
                Ok(())
            }
            (FieldKind::Choices { .. }, _) => {
                Err(self.rule("must be a list of the choices"))
            }
            (kind, v) => Err(self.rule(&format!(
                "must be {}, not {}",
                match kind {
                    FieldKind::Text { .. } => "a string",
                    FieldKind::Number { integer: true, .. } => "an integer",
                    FieldKind::Number { .. } => "a number",
                    _ => "a boolean",
                },
                callargs::type_name(v)
            ))),
        }
    }

    /// "field 'age': must be at most 120".
    fn rule(&self, why: &str) -> String {
        format!("field '{}': {why}", shown(&self.name, 80))
    }
}

/// The choices of an enum field (`enum` with optional `enumNames`, or
/// `oneOf`/`anyOf` of `const` with `title`), when it is one.
#[allow(clippy::type_complexity)]
fn choices(
    d: &Map<String, Value>,
) -> Option<Result<(Vec<String>, Vec<String>), String>> {
    let strings = |a: &Vec<Value>| -> Option<Vec<String>> {
        a.iter().map(|v| v.as_str().map(String::from)).collect()
    };
    let too_many = |n: usize| {
        Err(format!(
            "an enum of {n} choices (at most {MAX_CHOICES} are asked)"
        ))
    };
    if let Some(Value::Array(e)) = d.get("enum") {
        if e.len() > MAX_CHOICES {
            return Some(too_many(e.len()));
        }
        let Some(values) = strings(e) else {
            return Some(Err("an enum whose values are not strings".into()));
        };
        let labels = d
            .get("enumNames")
            .and_then(Value::as_array)
            .and_then(strings)
            .filter(|l| l.len() == values.len())
            .unwrap_or_else(|| values.clone());
        return Some(Ok((values, labels)));
    }
    let branches =
        d.get("oneOf").or_else(|| d.get("anyOf")).and_then(Value::as_array)?;
    if branches.len() > MAX_CHOICES {
        return Some(too_many(branches.len()));
    }
    let mut values = vec![];
    let mut labels = vec![];
    for b in branches {
        let v = b.get("const").and_then(Value::as_str)?;
        values.push(v.to_string());
        labels.push(
            b.get("title").and_then(Value::as_str).unwrap_or(v).to_string(),
        );
    }
    Some(Ok((values, labels)))
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

/// The string formats MCP names, checked loosely (what a person can get
/// wrong by a typo); unknown formats pass.
fn format_ok(format: &str, s: &str) -> bool {
    let digits = |t: &str, n: usize| {
        t.len() == n && t.bytes().all(|b| b.is_ascii_digit())
    };
    let date = |t: &str| {
        let p: Vec<&str> = t.split('-').collect();
        p.len() == 3
            && digits(p[0], 4)
            && digits(p[1], 2)
            && digits(p[2], 2)
            && (1..=12).contains(&p[1].parse::<u8>().unwrap_or(0))
            && (1..=31).contains(&p[2].parse::<u8>().unwrap_or(0))
    };
    match format {
        "email" => {
            s.split_once('@')
                .is_some_and(|(a, b)| !a.is_empty() && b.contains('.'))
                && !s.contains(char::is_whitespace)
        }
        "uri" => {
            s.split_once(':').is_some_and(|(a, b)| {
                !a.is_empty()
                    && a.chars().all(|c| {
                        c.is_ascii_alphanumeric() || "+-.".contains(c)
                    })
                    && !b.is_empty()
            }) && !s.contains(char::is_whitespace)
        }
        "date" => date(s),
        "date-time" => s.split_once(['T', 't']).is_some_and(|(d, t)| {
            date(d) && t.len() >= 8 && t.as_bytes()[2] == b':'
        }),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn no_files(_: &str) -> Result<String, String> {
        Err("no files here".into())
    }

    fn sep1034() -> Value {
        json!({"message": "Test client default value handling",
               "requestedSchema": {"type": "object", "properties": {
                 "name": {"type": "string", "default": "John Doe"},
                 "age": {"type": "integer", "default": 30, "minimum": 0,
                         "maximum": 150},
                 "score": {"type": "number", "default": 95.5},
                 "status": {"type": "string", "enum":
                            ["active", "inactive", "pending"],
                            "default": "active"},
                 "verified": {"type": "boolean", "default": true}},
               "required": []}})
    }

    #[test]
    fn defaults_fill_every_unanswered_field() {
        let f = Form::parse(&sep1034()).unwrap();
        assert_eq!(f.fields.len(), 5);
        let (content, missing) = f.fill(&Map::new(), true);
        assert!(missing.is_empty());
        assert_eq!(
            Value::Object(content),
            json!({"name": "John Doe", "age": 30, "score": 95.5,
                   "status": "active", "verified": true})
        );
        let (content, _) = f.fill(&Map::new(), false);
        assert!(content.is_empty());
    }

    #[test]
    fn answers_are_typed_by_the_schema_and_checked() {
        let f = Form::parse(&sep1034()).unwrap();
        let words: Vec<String> =
            ["age=31", "name=007", "verified=false", "other=x"]
                .map(String::from)
                .into();
        let a = f.typed(&words, &no_files).unwrap();
        assert_eq!(
            Value::Object(a),
            json!({"age": 31, "name": "007", "verified": false})
        );
        for (typed, want) in
            [("yes", true), ("n", false), ("Y", true), ("no", false)]
        {
            let a = f.typed(&[format!("verified={typed}")], &no_files);
            assert_eq!(a.unwrap()["verified"], json!(want), "{typed}");
        }
        let e = f.typed(&["verified=maybe".into()], &no_files).unwrap_err();
        assert!(e.contains("must be yes or no"), "{e}");
        let e = f.typed(&["age=151".into()], &no_files).unwrap_err();
        assert_eq!(e, "field 'age': must be at most 150");
        let e = f.typed(&["status=gone".into()], &no_files).unwrap_err();
        assert!(e.contains("'status'"), "{e}");
        let e = f.typed(&["age=x".into()], &no_files).unwrap_err();
        assert!(e.contains("age"), "{e}");
    }

    #[test]
    fn required_fields_without_answers_are_missing() {
        let f = Form::parse(&json!({"requestedSchema": {
            "properties": {"a": {"type": "string"},
                           "b": {"type": "string", "default": "x"}},
            "required": ["a", "b"]}}))
        .unwrap();
        let (_, missing) = f.fill(&Map::new(), true);
        assert_eq!(missing, ["a"]);
    }

    #[test]
    fn text_typed_at_a_prompt_is_checked() {
        let f = Form::parse(&json!({"requestedSchema": {"properties": {
            "n": {"type": "integer", "minimum": 1},
            "s": {"type": "string", "minLength": 2, "maxLength": 3},
            "m": {"type": "string", "format": "email"},
            "c": {"oneOf": [{"const": "r", "title": "Red"},
                            {"const": "g", "title": "Green"}]},
            "b": {"type": "boolean"}}}}))
        .unwrap();
        let get = |n: &str| f.field(n).unwrap();
        assert_eq!(get("n").typed_text(" 4 "), Ok(json!(4)));
        assert!(get("n").typed_text("1.5").unwrap_err().contains("integer"));
        assert!(get("n").typed_text("0").unwrap_err().contains("at least 1"));
        assert!(get("s").typed_text("a").unwrap_err().contains("at least 2"));
        assert!(get("s").typed_text("abcd").is_err());
        assert_eq!(get("s").typed_text("ab"), Ok(json!("ab")));
        assert!(get("m").typed_text("nope").unwrap_err().contains("email"));
        assert_eq!(get("m").typed_text("a@b.c"), Ok(json!("a@b.c")));
        assert_eq!(get("c").typed_text("2"), Ok(json!("g")));
        assert_eq!(get("c").typed_text("Red"), Ok(json!("r")));
        assert!(get("c").typed_text("blue").is_err());
        assert_eq!(get("b").typed_text("Y"), Ok(json!(true)));
        assert_eq!(get("b").describe(), "yes/no");
        assert_eq!(get("n").describe(), "integer, 1..");
        assert_eq!(get("s").describe(), "text, length 2..3");
    }

    #[test]
    fn nested_and_oversized_schemas_are_refused_whole() {
        let nested = json!({"requestedSchema": {"properties": {
            "ok": {"type": "string"}, "deep": {"type": "object"}}}});
        assert!(Form::parse(&nested).unwrap_err().contains("'deep'"));
        let list = json!({"requestedSchema": {"properties": {
            "l": {"type": "array", "items": {"type": "object"}}}}});
        assert!(Form::parse(&list).unwrap_err().contains("array"));
        let many: Vec<String> = (0..10_000).map(|i| i.to_string()).collect();
        let big = json!({"requestedSchema": {"properties": {
            "e": {"type": "string", "enum": many}}}});
        let f = Form::parse(&big).unwrap();
        assert_eq!(
            f.field("e").unwrap().typed_text("9999"),
            Ok(json!("9999"))
        );
        let more: Vec<u32> = (0..=100_000).collect();
        let huge = json!({"requestedSchema": {"properties": {
            "e": {"type": "string", "enum": more}}}});
        assert!(Form::parse(&huge).unwrap_err().contains("100001 choices"));
        let hostile = json!({"requestedSchema": {"properties": {
            "\u{1b}[2J\u{202e}x": {"type": "object"}}}});
        let e = Form::parse(&hostile).unwrap_err();
        assert!(!e.contains('\u{1b}') && !e.contains('\u{202e}'), "{e}");
        assert!(Form::parse(&json!({})).is_err());
    }

    #[test]
    fn multi_select_enums_take_several_choices() {
        let f = Form::parse(&json!({"requestedSchema": {"properties": {
            "fish": {"type": "array", "minItems": 1, "maxItems": 2,
                     "items": {"anyOf": [{"const": "f1", "title": "Tuna"},
                                         {"const": "f2", "title": "Salmon"},
                                         {"const": "f3"}]}}}}}))
        .unwrap();
        let fish = f.field("fish").unwrap();
        assert_eq!(fish.typed_text("Tuna, 3"), Ok(json!(["f1", "f3"])));
        assert!(fish.typed_text("").unwrap_err().contains("at least 1"));
        assert!(fish.typed_text("1,2,3").unwrap_err().contains("at most 2"));
        assert!(fish.typed_text("cod").unwrap_err().contains("'cod'"));
        let a = f.typed(&["fish=f2,f1".into()], &no_files).unwrap();
        assert_eq!(a["fish"], json!(["f2", "f1"]));
        let a = f.typed(&[r#"fish:=["f3"]"#.into()], &no_files).unwrap();
        assert_eq!(a["fish"], json!(["f3"]));
        assert!(fish.check(&json!(["x"])).is_err());
    }

    #[test]
    fn batch_answers_follow_the_answer_rules() {
        let mut m = Map::new();
        m.insert("age".into(), json!("31"));
        m.insert("verified".into(), json!(true));
        m.insert("name".into(), json!("@etc/passwd"));
        let words = words_of(&m);
        let f = Form::parse(&sep1034()).unwrap();
        let a = f.typed(&words, &no_files).unwrap();
        assert_eq!(
            Value::Object(a),
            json!({"age": 31, "verified": true, "name": "@etc/passwd"})
        );
        assert_eq!(word_name("a:=1"), "a");
        assert_eq!(word_name("b=x=y"), "b");
    }

    #[test]
    fn fields_are_asked_in_the_schema_order() {
        let params = json!({"message": "m", "requestedSchema": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"},
                           "c": {"type": "string"}},
            mcp::FIELD_ORDER: ["c", "a", "a", "nope"]}});
        let f = Form::parse(&params).unwrap();
        let names: Vec<&str> =
            f.fields.iter().map(|f| f.name.as_str()).collect();
        // The listed ones in order (once each, unknown names ignored),
        // then the rest.
        assert_eq!(names, ["c", "a", "b"]);
    }
}
