//! The HTTP headers of the 2026-07-28 wire (SEP-2243), as pure functions.
//!
//! Every modern POST names its protocol version and method
//! (`MCP-Protocol-Version`, `Mcp-Method`); `tools/call` and `prompts/get`
//! name `params.name` and `resources/read` names `params.uri` in
//! `Mcp-Name`. A tool may designate parameters with `x-mcp-header` in its
//! input schema; their values are mirrored into `Mcp-Param-{Name}` so
//! that gateways can route without parsing bodies. A value that is not
//! safe as a header (anything outside printable ASCII, leading or
//! trailing whitespace, or text that looks like the sentinel itself) is
//! sent as `=?base64?{UTF-8 in base64}?=`.
//!
//! The `x-mcp-header` rules are checked when a tool is listed: a tool
//! whose designation is invalid is left out (with a warning), the rest of
//! the server's tools stay usable.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use super::method;

/// The schema keyword that designates a parameter.
pub const X_MCP_HEADER: &str = "x-mcp-header";
/// The prefix of a mirrored parameter's header.
const PARAM_PREFIX: &str = "Mcp-Param-";
const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// A parameter that a tool designated for mirroring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamHeader {
    /// The path of `properties` keys from the schema root.
    pub path: Vec<String>,
    /// The header's name after `Mcp-Param-`, as the tool spelt it.
    pub name: String,
}

/// Schema keywords whose subschemas are not statically reachable through
/// `properties` alone: a designation anywhere under them is invalid.
const UNREACHABLE: &[&str] = &[
    "items",
    "prefixItems",
    "contains",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "propertyNames",
    "patternProperties",
    "dependentSchemas",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "$defs",
    "definitions",
];

/// Keywords whose value maps names to subschemas.
const NAMED_SUBSCHEMAS: &[&str] =
    &["patternProperties", "dependentSchemas", "$defs", "definitions"];

/// RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// The designated parameters of an input schema, or why the designation
/// makes the tool invalid: an empty or non-token name, a type other than
/// string, integer or boolean, a name used twice (ignoring case), or a
/// designation that is not reachable through `properties` only.
pub fn declarations(
    schema: Option<&Value>,
) -> Result<Vec<ParamHeader>, String> {
    let mut out: Vec<ParamHeader> = vec![];
    if let Some(s) = schema {
        visit(s, &mut vec![], true, &mut out)?;
    }
    Ok(out)
}

fn visit(
    node: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    out: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    let Value::Object(schema) = node else { return Ok(()) };
    let at = || {
        if path.is_empty() { "<root>".to_string() } else { path.join(".") }
    };
    if let Some(raw) = schema.get(X_MCP_HEADER) {
        if !reachable || path.is_empty() {
            return Err(format!(
                "{}: x-mcp-header is allowed only on a property reached \
                 through 'properties' alone",
                at()
            ));
        }
        let name = match raw {
            Value::String(s) if !s.is_empty() => s,
            _ => {
                return Err(format!(
                    "{}: x-mcp-header must be a non-empty string",
                    at()
                ));
            }
        };
        if !name.chars().all(is_tchar) {
            return Err(format!(
                "{}: x-mcp-header is not an HTTP token (no spaces, colons, \
                 control or non-ASCII characters)",
                at()
            ));
        }
        let ty = schema.get("type").and_then(Value::as_str);
        if !matches!(ty, Some("string" | "integer" | "boolean")) {
            return Err(format!(
                "{}: x-mcp-header is allowed only on string, integer or \
                 boolean properties",
                at()
            ));
        }
        if out.iter().any(|d| d.name.eq_ignore_ascii_case(name)) {
            return Err(format!(
                "x-mcp-header '{name}' is used twice (names ignore case)"
            ));
        }
        out.push(ParamHeader { path: path.clone(), name: name.clone() });
    }
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (k, child) in props {
            path.push(k.clone());
            let r = visit(child, path, reachable, out);
            path.pop();
            r?;
        }
    }
    for &k in UNREACHABLE {
        let Some(sub) = schema.get(k) else { continue };
        let branches: Vec<&Value> = match sub {
            Value::Array(a) => a.iter().collect(),
            Value::Object(m) if NAMED_SUBSCHEMAS.contains(&k) => {
                m.values().collect()
            }
            v => vec![v],
        };
        for b in branches {
            path.push(format!("<{k}>"));
            let r = visit(b, path, false, out);
            path.pop();
            r?;
        }
    }
    Ok(())
}

/// Whether `v` must travel base64-encoded.
fn needs_encoding(v: &str) -> bool {
    v.chars().any(|c| !(' '..='~').contains(&c))
        || v.trim() != v
        || (v.starts_with(SENTINEL_START) && v.ends_with(SENTINEL_END))
}

/// A value as a header carries it: as is when safe, else the sentinel.
pub fn encode(v: &str) -> String {
    if needs_encoding(v) {
        format!("{SENTINEL_START}{}{SENTINEL_END}", STANDARD.encode(v))
    } else {
        v.to_string()
    }
}

/// A primitive argument as header text: strings as they are, numbers in
/// decimal, booleans in lower case; `None` for null, absent, objects and
/// arrays (which are never mirrored).
fn primitive(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The `Mcp-Param-*` headers of a call.
pub fn param_headers(
    declared: &[ParamHeader],
    arguments: &Map<String, Value>,
) -> Vec<(String, String)> {
    declared
        .iter()
        .filter_map(|d| {
            let (first, rest) = d.path.split_first()?;
            let mut v = arguments.get(first)?;
            for k in rest {
                v = v.get(k)?;
            }
            let text = primitive(v)?;
            Some((format!("{PARAM_PREFIX}{}", d.name), encode(&text)))
        })
        .collect()
}

/// The standard headers of a modern request: version, method, and the
/// name its method mirrors.
pub fn standard(
    version: &str,
    method_name: &str,
    params: &Value,
) -> Vec<(String, String)> {
    let mut h = vec![
        ("MCP-Protocol-Version".to_string(), version.to_string()),
        ("Mcp-Method".to_string(), method_name.to_string()),
    ];
    let source = match method_name {
        method::TOOLS_CALL | method::PROMPTS_GET => "name",
        method::RESOURCES_READ => "uri",
        method::TASKS_GET
        | method::TASKS_RESULT
        | method::TASKS_CANCEL
        | method::TASKS_UPDATE => "taskId",
        _ => return h,
    };
    if let Some(v) = params.get(source).and_then(Value::as_str) {
        h.push(("Mcp-Name".to_string(), encode(v)));
    }
    h
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decls(schema: Value) -> Result<Vec<ParamHeader>, String> {
        declarations(Some(&schema))
    }

    #[test]
    fn finds_designations_at_any_properties_depth() {
        let d = decls(json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "opts": {"type": "object", "properties": {
                "level": {"type": "integer", "x-mcp-header": "Level"}}},
            "query": {"type": "string"}}}))
        .unwrap();
        // Properties are visited in key order (serde_json keeps none).
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].path, ["opts", "level"]);
        assert_eq!(
            d[1],
            ParamHeader { path: vec!["region".into()], name: "Region".into() }
        );
        assert_eq!(decls(json!({"type": "object"})).unwrap(), vec![]);
        assert_eq!(declarations(None).unwrap(), vec![]);
    }

    #[test]
    fn refuses_invalid_designations() {
        let one = |prop: Value| decls(json!({"properties": {"p": prop}}));
        for bad in [
            json!({"type": "string", "x-mcp-header": ""}),
            json!({"type": "string", "x-mcp-header": 7}),
            json!({"type": "object", "x-mcp-header": "Data"}),
            json!({"type": "array", "x-mcp-header": "Items"}),
            json!({"type": "null", "x-mcp-header": "Nil"}),
            json!({"type": "number", "x-mcp-header": "Score"}),
            json!({"x-mcp-header": "NoType"}),
            json!({"type": "string", "x-mcp-header": "My Region"}),
            json!({"type": "string", "x-mcp-header": "Region:Primary"}),
            json!({"type": "string", "x-mcp-header": "Région"}),
            json!({"type": "string", "x-mcp-header": "Region\t1"}),
        ] {
            assert!(one(bad.clone()).is_err(), "{bad}");
        }
        let dup = decls(json!({"properties": {
            "a": {"type": "string", "x-mcp-header": "MyField"},
            "b": {"type": "string", "x-mcp-header": "myfield"}}}));
        assert!(dup.unwrap_err().contains("used twice"));
        let hidden = decls(json!({"properties": {"a": {"anyOf": [
            {"type": "string", "x-mcp-header": "A"}]}}}));
        assert!(hidden.unwrap_err().contains("'properties' alone"));
        let in_defs = decls(json!({"$defs": {"x": {"type": "string",
            "x-mcp-header": "X"}}}));
        assert!(in_defs.is_err());
        let on_root = decls(json!({"type": "string", "x-mcp-header": "R"}));
        assert!(on_root.is_err());
    }

    #[test]
    fn encodes_only_what_is_not_header_safe() {
        assert_eq!(encode("us-west1"), "us-west1");
        assert_eq!(encode("us west 1"), "us west 1");
        assert_eq!(encode(""), "");
        assert_eq!(encode("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode("us-west1 "), "=?base64?dXMtd2VzdDEg?=");
        assert_eq!(encode("\tindented"), "=?base64?CWluZGVudGVk?=");
        assert_eq!(encode("a\r\nb"), "=?base64?YQ0KYg==?=");
        // Text that looks like the sentinel is encoded, so it round-trips.
        assert_eq!(
            encode("=?base64?eA==?="),
            "=?base64?PT9iYXNlNjQ/ZUE9PT89?="
        );
    }

    #[test]
    fn mirrors_primitives_and_omits_the_rest() {
        let d = decls(json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "method_val": {"type": "string", "x-mcp-header": "Method"},
            "nested": {"type": "object", "properties": {
                "n": {"type": "integer", "x-mcp-header": "N"}}},
            "float_val": {"type": "number"}}}))
        .unwrap();
        let args = json!({"region": "eu", "priority": 42, "verbose": null,
            "method_val": "m", "nested": {"n": -3}, "float_val": 3.5});
        let h = param_headers(&d, args.as_object().unwrap());
        assert_eq!(
            h,
            [
                ("Mcp-Param-Method".to_string(), "m".to_string()),
                ("Mcp-Param-N".into(), "-3".into()),
                ("Mcp-Param-Priority".into(), "42".into()),
                ("Mcp-Param-Region".into(), "eu".into()),
            ]
        );
        let h = param_headers(&d, &Map::new());
        assert!(h.is_empty());
        let t = json!({"verbose": false});
        assert_eq!(
            param_headers(&d, t.as_object().unwrap()),
            [("Mcp-Param-Verbose".to_string(), "false".to_string())]
        );
    }

    #[test]
    fn tasks_methods_mirror_the_task_id() {
        for m in ["tasks/get", "tasks/result", "tasks/cancel", "tasks/update"]
        {
            let h = standard("2026-07-28", m, &json!({"taskId": "t-1"}));
            assert_eq!(h[2], ("Mcp-Name".into(), "t-1".into()), "{m}");
        }
        assert_eq!(standard("v", "tasks/list", &json!({})).len(), 2);
    }

    #[test]
    fn standard_headers_name_what_the_method_mirrors() {
        let h =
            standard("2026-07-28", "tools/call", &json!({"name": "my-tool"}));
        assert_eq!(h[0], ("MCP-Protocol-Version".into(), "2026-07-28".into()));
        assert_eq!(h[1], ("Mcp-Method".into(), "tools/call".into()));
        assert_eq!(h[2], ("Mcp-Name".into(), "my-tool".into()));
        let r = standard(
            "v",
            "resources/read",
            &json!({"uri": "file:///path/to/file%20name.txt"}),
        );
        assert_eq!(r[2].1, "file:///path/to/file%20name.txt");
        let l = standard("v", "tools/list", &json!({}));
        assert_eq!(l.len(), 2);
        let u = standard("v", "prompts/get", &json!({"name": "ünï"}));
        assert!(u[2].1.starts_with("=?base64?"));
    }
}
