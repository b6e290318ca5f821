//! The loopback redirect listener of the login flow (RFC 8252 §7.3).
//!
//! Bound to `127.0.0.1` only. Any local program can connect to the port,
//! so no connection may hold up the one that matters: each accepted
//! connection is served on its own thread (at most [`MAX_CONNECTIONS`] at
//! once; more are closed at once) and must deliver its whole request head,
//! at most [`MAX_HEAD`] bytes, within [`HEAD_DEADLINE`] of being accepted,
//! however slowly it trickles. The accept loop itself never reads, so a
//! silent or trickling client cannot stop the browser's request from being
//! served, and the flow's overall deadline always holds.
//!
//! Only a `GET` of the redirect path with the loopback `Host` counts;
//! anything else (a favicon, a POST, a stray tab, garbage, a huge head)
//! gets 404/405/400/431 and the flow keeps waiting, as does a wrong or
//! missing `state`. An `error=` (or a wrong `iss`) with the right state
//! ends the flow with that error. The answer is a short static page that
//! reflects nothing from the request.
//!
//! Paste-back (`login --no-browser`): where the browser runs on another
//! machine, its redirect to 127.0.0.1 fails, and the person pastes the
//! address it ended at (or only the code) on stdin. A pasted address must
//! be the redirect URI exactly (scheme, host, port and path) and passes
//! the same checks as a callback (`state`, `iss` compared as strings, an
//! `error=`); anything else ends the login with an error, since nobody
//! but the person types there. A bare code carries no `state`: PKCE still
//! binds it to this login, and it is refused when the authorization
//! server promises an `iss` (RFC 9207), which only an address can carry.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::term;

/// How long one connection may take to send its whole request head.
const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// The largest request head read.
const MAX_HEAD: usize = 16 * 1024;
/// Connections served at once; a connection beyond this is closed unread.
const MAX_CONNECTIONS: usize = 64;
/// How often the accept loop looks for a new connection or a result.
const POLL: Duration = Duration::from_millis(10);

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

/// What every connection's thread checks a request against.
struct Expect {
    path: String,
    host: String,
    state: super::pkce::Secret,
    issuer: Option<String>,
    iss_required: bool,
}

/// Decrements the count of connections being served when dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
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
    /// (when known), byte for byte; `iss_required` when the authorization
    /// server says it sends one (RFC 9207).
    pub(crate) fn wait(
        &self,
        state: &str,
        issuer: Option<&str>,
        iss_required: bool,
        paste: Option<&mpsc::Receiver<String>>,
        deadline: &Deadline,
    ) -> Result<Callback> {
        let expect = Arc::new(Expect {
            path: self.path.clone(),
            host: format!("127.0.0.1:{}", self.port),
            state: super::pkce::Secret::new(state.to_string()),
            issuer: issuer.map(str::to_string),
            iss_required,
        });
        let busy = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel::<Result<Callback>>();
        loop {
            // A result first: the callback may be what just arrived.
            if let Ok(r) = rx.try_recv() {
                return r;
            }
            if let Some(line) = paste.and_then(|p| p.try_recv().ok())
                && let Some(r) = pasted(&line, &expect)
            {
                return r;
            }
            deadline.remaining()?;
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    if busy.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
                        busy.fetch_sub(1, Ordering::SeqCst);
                        drop(stream);
                        continue;
                    }
                    let slot = Slot(busy.clone());
                    let (expect, tx) = (expect.clone(), tx.clone());
                    let spawned = std::thread::Builder::new()
                        .name("login-callback".into())
                        .spawn(move || {
                            let _slot = slot;
                            if let Some(r) = serve(stream, peer, &expect) {
                                // The receiver is gone once the flow ended.
                                let _ = tx.send(r);
                            }
                        });
                    if let Err(e) = spawned {
                        return Err(Error::server(format!(
                            "listener: cannot start a thread: {e}"
                        )));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    // Wait for a result or the next poll, whichever first.
                    if let Ok(r) = rx.recv_timeout(POLL) {
                        return r;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::server(format!("listener: {e}")));
                }
            }
        }
    }
}

/// One connection, on its own thread. `None`: not the callback, keep
/// waiting.
fn serve(
    mut s: TcpStream,
    peer: SocketAddr,
    want: &Expect,
) -> Option<Result<Callback>> {
    if !peer.ip().is_loopback() {
        return None;
    }
    let _ = s.set_nonblocking(false);
    let _ = s.set_write_timeout(Some(HEAD_DEADLINE));
    let head = match read_head(&mut s, Instant::now() + HEAD_DEADLINE) {
        Head::Complete(h) => h,
        Head::TooLarge => {
            respond(&mut s, 431, "Request Header Fields Too Large", PAGE_BAD);
            return None;
        }
        Head::NotText => {
            respond(&mut s, 400, "Bad Request", PAGE_BAD);
            return None;
        }
        Head::Incomplete => return None,
    };
    let r = check(&head, want);
    let (status, reason, page) = match &r {
        Ok(_) => (200, "OK", PAGE_OK),
        Err(Refusal::Ended(_)) => (200, "OK", PAGE_FAILED),
        Err(Refusal::Issuer(_)) => (400, "Bad Request", PAGE_FAILED),
        Err(Refusal::Status(code, reason)) => (*code, *reason, PAGE_BAD),
    };
    respond(&mut s, status, reason, page);
    match r {
        Ok(cb) => Some(Ok(cb)),
        Err(Refusal::Ended(e) | Refusal::Issuer(e)) => Some(Err(e)),
        Err(Refusal::Status(..)) => None,
    }
}

/// Why a request is not the successful callback.
enum Refusal {
    /// Not part of the login (status, reason): the flow keeps waiting.
    Status(u16, &'static str),
    /// The response names another issuer, or none when one is promised.
    Issuer(Error),
    /// The authorization server sent an error: the flow ends with it.
    Ended(Error),
}

/// Checks one request head against what the flow expects.
fn check(head: &str, want: &Expect) -> Result<Callback, Refusal> {
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
    if path != want.path {
        return Err(Refusal::Status(404, "Not Found"));
    }
    if method != "GET" {
        return Err(Refusal::Status(405, "Method Not Allowed"));
    }
    if host.as_deref() != Some(want.host.as_str()) {
        return Err(Refusal::Status(400, "Bad Request"));
    }
    check_params(&parse_query(query), want)
}

/// Checks the parameters of an authorization response (a callback's or a
/// pasted address's) against what the flow expects.
fn check_params(
    params: &[(String, String)],
    want: &Expect,
) -> Result<Callback, Refusal> {
    let get =
        |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if get("state") != Some(want.state.expose()) {
        // A stale tab or a forged request: not ours, keep waiting.
        return Err(Refusal::Status(400, "Bad Request"));
    }
    // RFC 9207 §2.4: a simple string comparison with the issuer as the
    // metadata published it; no case folding, port elision, trailing
    // slash or percent-encoding normalization (a normalized match is how
    // a mix-up attacker's look-alike issuer would get through). A present
    // `iss` is checked whether or not the server advertised it.
    if let (Some(issuer), Some(got)) = (&want.issuer, get("iss")) {
        if got != issuer {
            return Err(Refusal::Issuer(Error::new(
                Kind::Auth,
                format!(
                    "the authorization response came from issuer '{}', \
                     not '{issuer}' (RFC 9207); refusing it",
                    term::clip(&term::line(got), 200)
                ),
            )));
        }
    } else if want.iss_required && get("iss").is_none() {
        return Err(Refusal::Issuer(Error::new(
            Kind::Auth,
            "the authorization server promises an 'iss' parameter \
             (RFC 9207) but the response has none; refusing it",
        )));
    }
    if let Some(err) = get("error") {
        let desc = get("error_description")
            .map(|d| format!(": {}", term::clip(&term::line(d), 300)))
            .unwrap_or_default();
        return Err(Refusal::Ended(Error::new(
            Kind::Auth,
            format!(
                "the authorization server refused: {}{desc}",
                term::clip(&term::line(err), 100)
            ),
        )));
    }
    let Some(code) = get("code").filter(|c| !c.is_empty()) else {
        return Err(Refusal::Status(400, "Bad Request"));
    };
    Ok(Callback { code: super::pkce::Secret::new(code.to_string()) })
}

/// The longest line read from stdin.
const MAX_PASTE: u64 = 16 * 1024;

/// The lines typed or piped on stdin, read on a thread of their own (which
/// ends at end of file; a line past [`MAX_PASTE`] bytes ends it too).
pub(crate) fn pasted_lines() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    let _ = std::thread::Builder::new().name("login-paste".into()).spawn(
        move || {
            use std::io::BufRead;
            let stdin = std::io::stdin();
            let mut input = stdin.lock();
            loop {
                let mut buf = Vec::new();
                let n = (&mut input)
                    .take(MAX_PASTE)
                    .read_until(b'\n', &mut buf)
                    .unwrap_or(0);
                if n == 0 || (n as u64 == MAX_PASTE && !buf.ends_with(b"\n")) {
                    return;
                }
                let line = String::from_utf8_lossy(&buf).trim().to_string();
                if !line.is_empty() && tx.send(line).is_err() {
                    return;
                }
            }
        },
    );
    rx
}

/// One pasted line: `None` for nothing to act on, else the outcome of the
/// login (see the module docs).
fn pasted(line: &str, want: &Expect) -> Option<Result<Callback>> {
    let refused = |why: String| {
        Some(Err(Error::new(Kind::Auth, format!("{why}; refusing it"))))
    };
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    let redirect = format!("http://{}{}", want.host, want.path);
    let Some((base, query)) = line.split_once('?') else {
        if line.contains("://") || line.contains('=') {
            return refused(format!(
                "the pasted address has no query; it must be the redirect \
                 URI {redirect} with the authorization response"
            ));
        }
        return Some(bare_code(line, want));
    };
    if base != redirect {
        return refused(format!(
            "the pasted address '{}' is not the redirect URI {redirect}",
            term::clip(&term::line(base), 200)
        ));
    }
    let query = query.split('#').next().unwrap_or("");
    let params = parse_query(query);
    let state = params.iter().find(|(k, _)| k == "state").map(|(_, v)| v);
    if state.map(String::as_str) != Some(want.state.expose()) {
        return refused(
            "the pasted address carries another state than this login's (a \
             stale or forged response)"
                .into(),
        );
    }
    Some(match check_params(&params, want) {
        Ok(cb) => Ok(cb),
        Err(Refusal::Ended(e) | Refusal::Issuer(e)) => Err(e),
        Err(Refusal::Status(..)) => Err(Error::new(
            Kind::Auth,
            "the pasted address has no code; refusing it",
        )),
    })
}

/// A pasted code without the address around it.
fn bare_code(code: &str, want: &Expect) -> Result<Callback> {
    if want.iss_required {
        return Err(Error::new(
            Kind::Auth,
            "the authorization server promises an 'iss' parameter (RFC \
             9207), which only the whole address carries: paste the \
             address, not the code",
        ));
    }
    if !code.bytes().all(|b| (0x21..0x7f).contains(&b)) || code.len() > 4096 {
        return Err(Error::new(
            Kind::Auth,
            "the pasted text is neither the redirect address nor a code; \
             refusing it",
        ));
    }
    Ok(Callback { code: super::pkce::Secret::new(code.to_string()) })
}

/// How reading a request head ended.
enum Head {
    Complete(String),
    /// Past [`MAX_HEAD`] bytes without the blank line.
    TooLarge,
    /// Not UTF-8.
    NotText,
    /// Closed, failed or too slow: dropped without an answer.
    Incomplete,
}

/// Reads up to the blank line ending the request head: at most
/// [`MAX_HEAD`] bytes, all of them before `until` (each read waits only
/// for what is left, so trickling bytes does not extend it).
fn read_head(s: &mut TcpStream, until: Instant) -> Head {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
            return Head::Incomplete;
        }
        let n = match s.read(&mut chunk) {
            Ok(0) => return Head::Incomplete,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return Head::Incomplete,
        };
        if buf.len() + n > MAX_HEAD {
            return Head::TooLarge;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buf).map_or(Head::NotText, Head::Complete)
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

    /// What `check` makes of a callback carrying `iss` (if any), for an
    /// issuer published as `http://127.0.0.1:8000` that does (or does not)
    /// advertise `iss`.
    fn iss_outcome(iss: Option<&str>, advertised: bool) -> &'static str {
        let want = Expect {
            path: "/callback".into(),
            host: "127.0.0.1:5555".into(),
            state: super::super::pkce::Secret::new("st".into()),
            issuer: Some("http://127.0.0.1:8000".into()),
            iss_required: advertised,
        };
        let iss =
            iss.map(|i| format!("&iss={}", encode(i))).unwrap_or_default();
        let head = format!(
            "GET /callback?code=c&state=st{iss} HTTP/1.1\r\nHost: 127.0.0.1:5555\r\n\r\n"
        );
        match check(&head, &want) {
            Ok(_) => "accepted",
            Err(Refusal::Issuer(_)) => "refused",
            Err(_) => "other",
        }
    }

    #[test]
    fn iss_is_compared_as_an_exact_string() {
        let exact = Some("http://127.0.0.1:8000");
        assert_eq!(iss_outcome(exact, true), "accepted");
        assert_eq!(iss_outcome(exact, false), "accepted");
        // Equal only after normalization: refused, advertised or not.
        for near in [
            "http://127.0.0.1:8000/",
            "HTTP://127.0.0.1:8000",
            "http://127.0.0.1:08000",
            "http://127.0.0.1:8000/%2e",
        ] {
            assert_eq!(iss_outcome(Some(near), true), "refused", "{near}");
            assert_eq!(iss_outcome(Some(near), false), "refused", "{near}");
        }
        // Missing: refused only when the metadata promised it.
        assert_eq!(iss_outcome(None, true), "refused");
        assert_eq!(iss_outcome(None, false), "accepted");
    }
}
