//! The wire between an invocation and the daemon: one JSON object per
//! line on a Unix socket, versioned and bounded.
//!
//! Every connection opens with one request line (`open`, `status` or
//! `stop`) carrying [`VERSION`] and the build's version; the daemon
//! answers one line (`{"ok": true, ...}` or `{"ok": false, "error": ...}`).
//! After a successful `open` the connection carries the session's
//! JSON-RPC messages both ways as `{"m": MESSAGE}` lines; the daemon may
//! also send `{"gone": TEXT}` (the server exited: the calls in flight
//! fail with TEXT) and the invocation `{"op": "retire"}` (its request
//! timed out: the server is closed, as cold). A line longer than its
//! bound ends the connection; nothing is buffered beyond one line.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

/// The wire's version: a daemon of another version is not used.
pub(crate) const VERSION: u64 = 1;
/// The bound of a control line (the requests and replies other than
/// messages).
pub(crate) const MAX_CONTROL: usize = 1 << 20;
/// What a message line may carry beyond the message itself.
pub(crate) const FRAME_OVERHEAD: usize = 64 << 10;

/// The build, so that a daemon of another build is not used either.
pub(crate) fn build() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// The header every request line carries.
pub(crate) fn request(op: &str) -> serde_json::Map<String, Value> {
    let v = json!({"rivumi_daemon": VERSION, "build": build(), "op": op});
    match v {
        Value::Object(m) => m,
        _ => unreachable!("an object literal"),
    }
}

/// Why a request line is not one this daemon serves, or `None`.
pub(crate) fn mismatch(req: &Value) -> Option<String> {
    let v = req.get("rivumi_daemon").and_then(Value::as_u64);
    let b = req.get("build").and_then(Value::as_str);
    if v == Some(VERSION) && b == Some(build()) {
        return None;
    }
    Some(format!(
        "the daemon is rivumi-mcp {} (wire {VERSION}); the caller is {} \
         (wire {})",
        build(),
        crate::term::clip(&crate::term::line(b.unwrap_or("?")), 40),
        v.map_or("?".to_string(), |v| v.to_string())
    ))
}

/// Reads one line of at most `max` bytes; `Ok(None)` at a clean end of
/// the stream. `partial` keeps what a read that timed out had already
/// taken, so the next call continues the same line.
pub(crate) fn read_line(
    r: &mut impl BufRead,
    partial: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<Value>> {
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            if partial.is_empty() {
                return Ok(None);
            }
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the connection ended inside a line",
            ));
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if partial.len() + take > max + 1 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a line longer than {max} bytes"),
            ));
        }
        partial.extend_from_slice(&buf[..take]);
        r.consume(take);
        if done {
            let line = std::mem::take(partial);
            return serde_json::from_slice(&line).map(Some).map_err(|e| {
                std::io::Error::new(std::io::ErrorKind::InvalidData, e)
            });
        }
    }
}

/// Writes one line.
pub(crate) fn write_line(
    w: &mut impl Write,
    v: &Value,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(v)?;
    bytes.push(b'\n');
    w.write_all(&bytes)?;
    w.flush()
}

/// The client capabilities as the wire carries them.
pub(crate) fn caps_to_json(c: crate::mcp::Capabilities) -> Value {
    json!({"form": c.elicitation_form, "url": c.elicitation_url,
           "sampling": c.sampling, "roots": c.roots})
}

pub(crate) fn caps_from_json(v: &Value) -> crate::mcp::Capabilities {
    let b = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
    crate::mcp::Capabilities {
        elicitation_form: b("form"),
        elicitation_url: b("url"),
        sampling: b("sampling"),
        roots: b("roots"),
    }
}

/// The 2026-07-28 headers a message line carries (`"h"`), if any.
pub(crate) fn headers_from_json(
    line: &Value,
) -> Option<Vec<(String, String)>> {
    line.get("h")?
        .as_array()?
        .iter()
        .map(|p| {
            Some((
                p.get(0)?.as_str()?.to_string(),
                p.get(1)?.as_str()?.to_string(),
            ))
        })
        .collect()
}

/// What the opening found, as the wire carries it.
pub(crate) fn info_to_json(s: &crate::session::ServerInfo) -> Value {
    json!({"protocol": s.protocol, "info": s.info,
           "capabilities": s.capabilities, "instructions": s.instructions,
           "chosen": s.chosen})
}

pub(crate) fn info_from_json(v: &Value) -> Option<crate::session::ServerInfo> {
    let protocol = v.get("protocol")?.as_str()?.to_string();
    let version = crate::mcp::Version::parse(&protocol)?;
    Some(crate::session::ServerInfo {
        version: Some(version),
        protocol,
        info: v.get("info").cloned().unwrap_or(Value::Null),
        capabilities: v.get("capabilities").cloned().unwrap_or(json!({})),
        instructions: v
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_string),
        chosen: v
            .get("chosen")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded_and_continue_after_a_partial_read() {
        let mut partial = vec![];
        let mut r = std::io::BufReader::new(&b"{\"a\":1}\n{\"b\":2}\n"[..]);
        assert_eq!(
            read_line(&mut r, &mut partial, 100).unwrap(),
            Some(json!({"a": 1}))
        );
        assert_eq!(
            read_line(&mut r, &mut partial, 100).unwrap(),
            Some(json!({"b": 2}))
        );
        assert_eq!(read_line(&mut r, &mut partial, 100).unwrap(), None);
        let long = format!("\"{}\"\n", "x".repeat(200));
        let mut r = std::io::BufReader::new(long.as_bytes());
        assert!(read_line(&mut r, &mut vec![], 100).is_err());
    }

    #[test]
    fn another_version_or_build_is_a_mismatch() {
        let ok = Value::Object(request("status"));
        assert_eq!(mismatch(&ok), None);
        let mut old = ok.clone();
        old["rivumi_daemon"] = json!(0);
        assert!(mismatch(&old).is_some());
        let mut other = ok;
        other["build"] = json!("0.0.0");
        assert!(mismatch(&other).is_some());
    }

    #[test]
    fn capabilities_round_trip() {
        let c = crate::mcp::Capabilities {
            elicitation_form: true,
            elicitation_url: false,
            sampling: true,
            roots: false,
        };
        assert_eq!(caps_from_json(&caps_to_json(c)), c);
    }
}
