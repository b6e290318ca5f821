//! The loopback redirect listener of the login flow (RFC 8252 §7.3).
//!
//! Bound to `127.0.0.1` only. Requests are served one at a time, each with
//! its own short deadline, under the flow's overall deadline. Only a `GET`
//! of the redirect path with the loopback `Host` counts; anything else
//! (a favicon, a POST, a stray tab) gets 404/405/400 and the flow keeps
//! waiting, as does a wrong or missing `state`. An `error=` with the right
//! state ends the flow with that error. The answer is a short static page
//! that reflects nothing from the request.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::term;

/// How long one connection may take to send its request.
const PER_CONNECTION: Duration = Duration::from_secs(5);
/// The largest request head read.
const MAX_HEAD: usize = 16 * 1024;

const PAGE_OK: &str = "<!doctype html><meta charset=utf-8><title>rivumi-mcp</title>\
<p>Login complete. You can close this window and return to the terminal.</p>\n";
const PAGE_FAILED: &str = "<!doctype html><meta charset=utf-8><title>rivumi-mcp</title>\
<p>Login failed. Return to the terminal for details.</p>\n";
const PAGE_BAD: &str = "<!doctype html><meta charset=utf-8><title>rivumi-mcp</title>\
<p>This request is not part of the login.</p>\n";

/// A bound listener and the redirect URI that points at it.
#[derive(Debug)]
pub(crate) struct Listener {
    listener: TcpListener,
    pub(crate) port: u16,
    pub(crate) path: String,
}

/// What the authorization server sent back.
#[derive(Debug)]
pub(crate) struct Callback {
    pub(crate) code: super::pkce::Secret,
}

impl Listener {
    /// Binds `127.0.0.1:port` (0 for an ephemeral port).
    pub(crate) fn bind(port: u16, path: &str) -> Result<Listener> {
        let listener = TcpListener::bind(("127.0.0.1", port)).map_err(|e| {
            Error::usage(format!(
                "cannot listen on 127.0.0.1:{port} for the login callback: {e}"
            ))
        })?;
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(port);
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::server(format!("listener: {e}")))?;
        Ok(Listener { listener, port, path: path.to_string() })
    }

    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{}", self.port, self.path)
    }

    /// Serves requests until the callback with the right `state` arrives
    /// or the deadline fires. An `iss` in the response must be `issuer`
    /// (when known); `iss_required` when the authorization server says it
    /// sends one (RFC 9207).
    pub(crate) fn wait(
        &self,
        state: &str,
        issuer: Option<&str>,
        iss_required: bool,
        deadline: &Deadline,
    ) -> Result<Callback> {
        loop {
            deadline.remaining()?;
            let (stream, peer) = match self.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                Err(e) => {
                    return Err(Error::server(format!("listener: {e}")));
                }
            };
            if let Some(done) =
                self.serve(stream, peer, state, issuer, iss_required)?
            {
                return Ok(done);
            }
        }
    }

    /// One connection. `Ok(None)`: not the callback, keep waiting.
    fn serve(
        &self,
        mut s: TcpStream,
        peer: SocketAddr,
        state: &str,
        issuer: Option<&str>,
        iss_required: bool,
    ) -> Result<Option<Callback>> {
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(PER_CONNECTION));
        let _ = s.set_write_timeout(Some(PER_CONNECTION));
        if !peer.ip().is_loopback() {
            return Ok(None);
        }
        let Some(head) = read_head(&mut s) else {
            return Ok(None);
        };
        let mut lines = head.split("\r\n");
        let request_line = lines.next().unwrap_or("");
        let mut parts = request_line.split(' ');
        let (method, target) =
            (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let host = lines
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("host"))
            .map(|(_, v)| v.trim().to_string());
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        if path != self.path {
            respond(&mut s, 404, "Not Found", PAGE_BAD);
            return Ok(None);
        }
        if method != "GET" {
            respond(&mut s, 405, "Method Not Allowed", PAGE_BAD);
            return Ok(None);
        }
        let want_host = format!("127.0.0.1:{}", self.port);
        if host.as_deref() != Some(want_host.as_str()) {
            respond(&mut s, 400, "Bad Request", PAGE_BAD);
            return Ok(None);
        }
        let params = parse_query(query);
        let get = |k: &str| {
            params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
        };
        if get("state") != Some(state) {
            // A stale tab or a forged request: not ours, keep waiting.
            respond(&mut s, 400, "Bad Request", PAGE_BAD);
            return Ok(None);
        }
        if let (Some(want), Some(got)) = (issuer, get("iss")) {
            let same = crate::urlcheck::Url::parse(got)
                .is_ok_and(|u| u.to_string() == want);
            if !same {
                respond(&mut s, 400, "Bad Request", PAGE_FAILED);
                return Err(Error::new(
                    Kind::Auth,
                    format!(
                        "the authorization response came from issuer '{}', \
                         not '{want}' (RFC 9207); refusing it",
                        term::clip(&term::line(got), 200)
                    ),
                ));
            }
        } else if iss_required && get("iss").is_none() {
            respond(&mut s, 400, "Bad Request", PAGE_FAILED);
            return Err(Error::new(
                Kind::Auth,
                "the authorization server promises an 'iss' parameter \
                 (RFC 9207) but the response has none; refusing it",
            ));
        }
        if let Some(err) = get("error") {
            respond(&mut s, 200, "OK", PAGE_FAILED);
            let desc = get("error_description")
                .map(|d| format!(": {}", term::clip(&term::line(d), 300)))
                .unwrap_or_default();
            return Err(Error::new(
                Kind::Auth,
                format!(
                    "the authorization server refused: {}{desc}",
                    term::clip(&term::line(err), 100)
                ),
            ));
        }
        let Some(code) = get("code").filter(|c| !c.is_empty()) else {
            respond(&mut s, 400, "Bad Request", PAGE_BAD);
            return Ok(None);
        };
        respond(&mut s, 200, "OK", PAGE_OK);
        Ok(Some(Callback { code: super::pkce::Secret::new(code.to_string()) }))
    }
}

/// Reads up to the blank line ending the request head, bounded.
fn read_head(s: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut chunk).ok()?;
        if n == 0 || buf.len() + n > MAX_HEAD {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).ok()
}

fn respond(s: &mut TcpStream, status: u16, reason: &str, page: &str) {
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; \
         charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\n\
         Referrer-Policy: no-referrer\r\nConnection: close\r\n\r\n",
        page.len()
    );
    let _ = s
        .write_all(head.as_bytes())
        .and_then(|_| s.write_all(page.as_bytes()));
    let _ = s.flush();
}

/// Decodes `application/x-www-form-urlencoded` pairs.
pub(crate) fn parse_query(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes a form value (RFC 3986 unreserved characters stay as is).
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `k=v&k=v` from pairs, encoded.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_round_trip() {
        let q = form(&[("code", "a b/c+d"), ("state", "x~y"), ("e", "é")]);
        assert_eq!(q, "code=a%20b%2Fc%2Bd&state=x~y&e=%C3%A9");
        let p = parse_query(&q);
        assert_eq!(p[0], ("code".into(), "a b/c+d".into()));
        assert_eq!(p[2], ("e".into(), "é".into()));
        assert_eq!(
            parse_query("a=%zz&b=%4"),
            [("a".into(), "%zz".into()), ("b".into(), "%4".into())]
        );
        assert_eq!(parse_query("x=1+2"), [("x".into(), "1 2".into())]);
    }
}
