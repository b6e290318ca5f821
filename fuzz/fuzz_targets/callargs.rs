//! Fuzzes `callargs`, which types `key=value` command-line arguments by a
//! tool's inputSchema (server-chosen, so untrusted).
//!
//! The input is lines: the schema as JSON (empty: none), the `--args`
//! object as JSON (empty: none), then one `key=value` or `key:=json` pair
//! per line. Files (`key=@file`) cannot be read here. Checks: it never
//! panics; on success every pair's key is in the result; a `:=` value is
//! the JSON as serde_json reads it; a plain value of a property declared
//! exactly `"type": "string"` (no union, reference, enum or const) stays
//! the exact string unless it starts with the `@` or `\` of file values
//! and escapes; `missing_required` names only keys that are required and
//! absent.

#![no_main]

use rivumi_mcp_proto::callargs;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn json(line: &str) -> Option<Value> {
    if line.is_empty() {
        return None;
    }
    serde_json::from_str(line).ok()
}

fuzz_target!(|input: &[u8]| {
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let mut lines = text.split('\n');
    let schema = json(lines.next().unwrap_or(""));
    let base = json(lines.next().unwrap_or(""));
    let pairs: Vec<String> = lines.map(str::to_owned).collect();
    let no_files = |_: &str| Err("no files here".to_string());
    let Ok(built) = callargs::build(schema.as_ref(), base, &pairs, &no_files)
    else {
        return;
    };
    let args = built.args;
    let props = schema.as_ref().and_then(|s| s.get("properties"));
    for pair in &pairs {
        if let Some((k, v)) = pair.split_once(":=")
            && !k.contains('=')
        {
            let want: Value = serde_json::from_str(v).expect("accepted JSON");
            assert_eq!(args.get(k), Some(&want), "':=' value of {k:?}");
            continue;
        }
        let (k, v) = pair.split_once('=').expect("accepted key=value");
        let ty = props.and_then(|p| p.get(k)).and_then(|p| p.get("type"));
        let value = args.get(k).unwrap_or_else(|| panic!("{k:?} missing"));
        let plain = props.and_then(|p| p.get(k)).is_some_and(|p| {
            ["anyOf", "oneOf", "allOf", "$ref", "enum", "const"]
                .iter()
                .all(|w| p.get(w).is_none())
        });
        let literal = !v.starts_with(['@', '\\']);
        if plain && literal && ty.is_some_and(|t| t == "string") {
            assert_eq!(value, &Value::String(v.to_owned()), "value of {k:?}");
        }
    }
    for key in callargs::missing_required(schema.as_ref(), &args) {
        assert!(!args.contains_key(&key), "{key:?} is given, not missing");
    }
});
