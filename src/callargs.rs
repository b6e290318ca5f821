//! Tool arguments from the command line, typed by the tool's inputSchema.
//!
//! `key=value` is converted only toward the type the schema declares for
//! `key`: a string property stays a string even when it looks like a
//! number (`zip=01234`, `thread_ts=1712.5`), which is the complaint users
//! have most about peers. Without a declared type the value stays a string.
//! `key:=json` takes raw JSON. Pure; reading stdin or files happens in the
//! command.

use serde_json::{Map, Value};

/// Builds the arguments object. `base` is the `--args` object, if any.
pub(crate) fn build(
    schema: Option<&Value>,
    base: Option<Value>,
    pairs: &[String],
) -> Result<Map<String, Value>, String> {
    let mut args = match base {
        None => Map::new(),
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(format!(
                "--args must be a JSON object, not {}",
                type_name(&other)
            ));
        }
    };
    let props = schema.and_then(|s| s.get("properties"));
    let mut given: Vec<&str> = vec![];
    for pair in pairs {
        let (key, value) = if let Some((k, v)) = pair.split_once(":=") {
            if !k.contains('=') {
                let v: Value = serde_json::from_str(v).map_err(|e| {
                    format!("argument '{k}': ':=' takes JSON: {e}")
                })?;
                (k, v)
            } else {
                split_plain(pair, props)?
            }
        } else {
            split_plain(pair, props)?
        };
        if key.is_empty() {
            return Err(format!("argument '{pair}' has an empty name"));
        }
        if given.contains(&key) {
            return Err(format!("argument '{key}' is given twice"));
        }
        given.push(key);
        args.insert(key.to_string(), value);
    }
    Ok(args)
}

fn split_plain<'a>(
    pair: &'a str,
    props: Option<&Value>,
) -> Result<(&'a str, Value), String> {
    let (k, v) = pair
        .split_once('=')
        .ok_or_else(|| format!("argument '{pair}' is not key=value"))?;
    let ty = props.and_then(|p| p.get(k)).and_then(|p| p.get("type"));
    Ok((k, coerce(k, v, ty)?))
}

/// Converts `raw` to the declared type (a name or a list of names).
fn coerce(key: &str, raw: &str, ty: Option<&Value>) -> Result<Value, String> {
    let types: Vec<&str> = match ty {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => {
            ts.iter().filter_map(Value::as_str).collect()
        }
        _ => return Ok(Value::String(raw.to_string())),
    };
    for t in &types {
        if let Some(v) = convert(raw, t) {
            return Ok(v);
        }
    }
    Err(format!(
        "argument '{key}': '{raw}' is not {} (use {key}:=<json> for raw JSON)",
        types.iter().map(|t| article(t)).collect::<Vec<_>>().join(" or ")
    ))
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
        "array" => serde_json::from_str(raw).ok().filter(Value::is_array),
        "object" => serde_json::from_str(raw).ok().filter(Value::is_object),
        _ => None,
    }
}

fn article(t: &str) -> String {
    match t {
        "integer" | "array" | "object" => format!("an {t}"),
        "null" => "null".to_string(),
        _ => format!("a {t}"),
    }
}

pub(crate) fn type_name(v: &Value) -> &'static str {
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
pub(crate) fn missing_required(
    schema: Option<&Value>,
    args: &Map<String, Value>,
) -> Vec<String> {
    schema
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "s": {"type": "string"}, "i": {"type": "integer"},
            "n": {"type": "number"}, "b": {"type": "boolean"},
            "arr": {"type": "array"}, "either": {"type": ["integer", "string"]},
        }, "required": ["s"]})
    }

    fn b(pairs: &[&str]) -> Result<Map<String, Value>, String> {
        let pairs: Vec<String> = pairs.iter().map(|s| s.to_string()).collect();
        build(Some(&schema()), None, &pairs)
    }

    #[test]
    fn strings_stay_strings() {
        let a = b(&["s=007", "i=7", "n=1.5", "b=true", "other=42"]).unwrap();
        assert_eq!(
            Value::Object(a),
            json!({"s": "007", "i": 7, "n": 1.5,
            "b": true, "other": "42"})
        );
    }

    #[test]
    fn raw_json_and_unions() {
        let a =
            b(&["arr=[1,2]", "x:={\"k\":1}", "either=x", "s=a=b"]).unwrap();
        assert_eq!(
            Value::Object(a),
            json!({"arr": [1, 2], "x": {"k": 1},
            "either": "x", "s": "a=b"})
        );
        assert_eq!(b(&["either=5"]).unwrap()["either"], json!(5));
    }

    #[test]
    fn type_errors_and_duplicates() {
        assert!(b(&["i=1.5"]).unwrap_err().contains("not an integer"));
        assert!(b(&["b=yes"]).is_err());
        assert!(b(&["s=1", "s=2"]).unwrap_err().contains("twice"));
        assert!(b(&["x:=nope"]).is_err());
        assert!(build(None, Some(json!([1])), &[]).is_err());
    }

    #[test]
    fn required() {
        let a = b(&["i=1"]).unwrap();
        assert_eq!(missing_required(Some(&schema()), &a), ["s"]);
    }
}
