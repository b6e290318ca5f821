//! Fuzzes the config parser: `jsonpos` cross-checked against serde_json,
//! then the whole of `config::validate`.
//!
//! - jsonpos and serde_json agree on what is JSON: each accepts exactly
//!   what the other does, and on the value (duplicate keys: the last one
//!   wins in both), so a config that check-config passes means what any
//!   other JSON reader would take it to mean.
//! - Every position jsonpos or config reports is inside the text.
//! - `validate` never panics, strict or not, with variables set or not
//!   (the first input byte's low bit picks which); strict mode only adds
//!   errors, never accepts what lax mode refuses; invalid JSON is never a valid config; a refused file
//!   has a file-level error and, in a usable file, a refused server entry
//!   has an error naming that server, so that every refusal can say why
//!   (as `launch` and `config::refuse` do); every accepted URL is in its
//!   canonical form.

#![no_main]

use std::path::Path;

use config::Config;
use rivumi_mcp_proto::{jsonpos, urlcheck};
use rivumi_mcp::config;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

/// The plain value of a jsonpos node, the last duplicate key winning as in
/// serde_json (jsonpos's own `to_value` exists only under `cfg(test)`).
fn to_value(node: &jsonpos::Node) -> Value {
    use jsonpos::Kind;
    match &node.kind {
        Kind::Null => Value::Null,
        Kind::Bool(b) => Value::Bool(*b),
        Kind::Number(n) => Value::Number(n.clone()),
        Kind::String(s) => Value::String(s.clone()),
        Kind::Array(items) => {
            Value::Array(items.iter().map(to_value).collect())
        }
        Kind::Object(members) => {
            let mut map = Map::new();
            for m in members {
                map.insert(m.key.clone(), to_value(&m.value));
            }
            Value::Object(map)
        }
    }
}

/// Whether `pos` points into `text` or just past the end of a line.
/// Lines end where jsonpos (and the editors) end them: LF, CRLF, or a
/// lone CR.
fn inside(text: &str, pos: jsonpos::Pos) -> bool {
    let lines: Vec<&str> = text
        .split("\r\n")
        .flat_map(|l| l.split('\n'))
        .flat_map(|l| l.split('\r'))
        .collect();
    let Some(line) = lines.get((pos.line as usize).wrapping_sub(1)) else {
        return false;
    };
    pos.col >= 1 && pos.col as usize <= line.chars().count() + 1
}

/// Every member position in the tree is inside the text.
fn check_positions(text: &str, node: &jsonpos::Node) {
    assert!(inside(text, node.pos), "value at {} outside the text", node.pos);
    match &node.kind {
        jsonpos::Kind::Array(items) => {
            items.iter().for_each(|n| check_positions(text, n));
        }
        jsonpos::Kind::Object(members) => {
            for m in members {
                assert!(
                    inside(text, m.key_pos),
                    "key at {} outside",
                    m.key_pos
                );
                check_positions(text, &m.value);
            }
        }
        _ => {}
    }
}

fn check_json(text: &str) -> bool {
    let ours = jsonpos::parse(text);
    let theirs = serde_json::from_str::<Value>(text);
    match (&ours, &theirs) {
        (Ok(doc), Ok(value)) => {
            assert_eq!(
                &to_value(&doc.root),
                value,
                "jsonpos and serde_json disagree"
            );
            check_positions(text, &doc.root);
            for d in &doc.duplicates {
                assert!(inside(text, d.pos) && inside(text, d.first));
            }
        }
        (Ok(_), Err(e)) => {
            panic!("jsonpos accepts what serde_json refuses: {e}")
        }
        (Err(e), Ok(_)) => {
            panic!("jsonpos refuses what serde_json accepts: {e}")
        }
        (Err(e), Err(_)) => {
            assert!(inside(text, e.pos), "syntax error at {} outside", e.pos);
        }
    }
    ours.is_ok()
}

fn check_config(text: &str, json_ok: bool, strict: bool, set: bool) -> Config {
    let lookup = |_: &str| set.then(|| "fuzz".to_owned());
    let path = Path::new("fuzz.mcp.json");
    let c = config::validate(text, path, Path::new("."), strict, &lookup);
    if !json_ok {
        assert!(!c.is_valid(), "invalid JSON gave a valid config");
    }
    for d in &c.diagnostics {
        assert!(
            inside(text, d.pos),
            "diagnostic at {} outside the text",
            d.pos
        );
    }
    if !c.file_ok {
        assert!(
            c.diagnostics.iter().any(|d| {
                d.severity == config::Severity::Error && d.server.is_none()
            }),
            "file refused without a file-level error"
        );
    }
    for e in &c.entries {
        match &e.server {
            None => assert!(
                !c.file_ok || c.first_error(&e.name).is_some(),
                "entry refused without an error naming it"
            ),
            Some(s) => {
                if let config::Transport::Http(h) = &s.transport {
                    let again = urlcheck::Url::parse(&h.url.to_string());
                    assert_eq!(
                        again.as_ref(),
                        Ok(&h.url),
                        "URL not canonical"
                    );
                }
            }
        }
    }
    c
}

/// Strict mode only adds errors: whatever it accepts, lax mode accepts.
fn check_strict_adds_only(strict: &Config, lax: &Config) {
    assert!(!strict.is_valid() || lax.is_valid(), "strict valid, lax not");
    assert_eq!(strict.names(), lax.names(), "modes see different servers");
    for e in &strict.entries {
        if e.server.is_some() {
            let accepted =
                lax.entry(&e.name).is_some_and(|l| l.server.is_some());
            assert!(accepted, "server accepted only in strict mode");
        }
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&flags, rest)) = input.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let json_ok = check_json(text);
    let set = flags & 1 != 0;
    let strict = check_config(text, json_ok, true, set);
    let lax = check_config(text, json_ok, false, set);
    check_strict_adds_only(&strict, &lax);
});
