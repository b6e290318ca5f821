//! The Streamable HTTP front (`serve --listen`): not an open door.
//!
//! - It binds a loopback address only (anything else is a usage error
//!   before any socket exists): a bridge on 0.0.0.0 hands every tool to
//!   the network (MCPJam's CVE-2026-23744).
//! - Every request must carry `Authorization: Bearer TOKEN`: the token is
//!   generated at start (256 random bits, printed once on stderr) or read
//!   from the environment variable `--token-env` names. Compared in
//!   constant time.
//! - `Host` must name a loopback host (`127.0.0.1`, `localhost`, `[::1]`)
//!   and, with a port, ours; an `Origin` is refused unless the operator
//!   allowed it (`--allow-origin`): DNS rebinding and pages in a browser
//!   are kept out. No CORS header is ever sent; a preflight gets 405.
//! - One request per connection (`Connection: close`): the head within
//!   [`HEAD_DEADLINE`] and [`MAX_HEAD`] bytes, the body by
//!   `Content-Length` only, at most [`MAX_BODY`]; at most
//!   [`MAX_CONNECTIONS`] connections at once and [`MAX_SESSIONS`]
//!   sessions. Every refusal is journalled (`serve_refused`).
//! - The handshake era gets a session (`Mcp-Session-Id`, 128 random bits)
//!   at `initialize`; its requests answer as an SSE stream when the host
//!   accepts one, so that what the gateway asks meanwhile (an approval
//!   form, a forwarded elicitation) goes on that stream and the host's
//!   answer comes back as a POST; it cancels one by POSTing
//!   `notifications/cancelled`. A session may open one standalone GET
//!   stream (a second is 409) for what it is told between its requests
//!   (resource updates it subscribed to, list changes), kept alive by a
//!   comment every [`super::KEEP_ALIVE`] and ended with the session.
//! - 2026-07-28 requests need no session. A call, read or prompt whose
//!   host accepts SSE is answered on a stream carrying its progress and
//!   the log messages it asked for, then the result; closing that stream
//!   cancels it (the era has no `notifications/cancelled` over HTTP).
//!   `subscriptions/listen` is such a stream too, until the host closes
//!   it. Anything else gets JSON. The era has no standalone GET (405).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::gateway::{Aborts, Gateway, Host, HostLink, RpcFail};
use super::parked::Spawner;
use super::pending::Pending;
use crate::cancel::Abort;
use crate::error::{Error, Result};
use crate::mcp::{self, Incoming, code};
use crate::{journal, msg, sse, term};

/// How long a connection may take to send its request head.
const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// How long it may take to send its body.
const BODY_DEADLINE: Duration = Duration::from_secs(30);
/// The largest request head.
const MAX_HEAD: usize = 16 * 1024;
/// The largest request body.
const MAX_BODY: usize = 4 << 20;
/// Connections served at once; more are answered 503 and closed.
const MAX_CONNECTIONS: usize = 64;
/// Handshake-era sessions at once.
const MAX_SESSIONS: usize = 64;
/// How long one write to a host's stream may take.
const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// How often a standalone stream looks whether its session ended.
const TICK: Duration = Duration::from_millis(250);
/// The head of an SSE response.
const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                        Cache-Control: no-store\r\nConnection: close\r\n\r\n";
/// The endpoint's path.
pub(crate) const PATH: &str = "/mcp";

/// Parses `--listen`: a loopback address with a port; anything else is a
/// usage error.
pub(crate) fn parse_listen(s: &str) -> Result<SocketAddr> {
    let addr: SocketAddr = s.parse().map_err(|_| {
        Error::usage(format!(
            "--listen: '{}' is not ADDRESS:PORT (e.g. 127.0.0.1:8931)",
            term::line(s)
        ))
    })?;
    if !addr.ip().is_loopback() {
        return Err(Error::usage(format!(
            "--listen: {} is not a loopback address; serve listens on \
             127.0.0.1 or [::1] only",
            addr.ip()
        )));
    }
    Ok(addr)
}

/// The bearer token: from `--token-env VAR`, or new.
fn token(o: &super::Options) -> Result<(String, bool)> {
    if let Some(var) = &o.token_env {
        let v = crate::sys::lookup(var).unwrap_or_default();
        if v.len() < 16 || !v.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::usage(format!(
                "--token-env {var}: the variable must hold a token of at \
                 least 16 printable characters"
            )));
        }
        return Ok((v, false));
    }
    Ok((random_hex(32)?, true))
}

fn random_hex(n: usize) -> Result<String> {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b)
        .map_err(|e| Error::server(format!("serve: no randomness: {e}")))?;
    Ok(crate::files::hex(&b))
}

/// One handshake-era session: its host, the questions asked of it, and
/// its requests in flight (which it may cancel).
struct Session {
    host: Mutex<Host>,
    pending: Pending,
    aborts: Aborts,
    /// Its key in the gateway's hosts (subscriptions, the GET stream).
    key: u64,
}

struct Front<'g, 'a> {
    gw: &'g Gateway<'a>,
    token: String,
    port: u16,
    origins: Vec<String>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    next: AtomicU64,
}

/// Serves until the process is ended (a signal closes every server).
pub(crate) fn run(
    gw: &Gateway<'_>,
    addr: SocketAddr,
    o: &super::Options,
) -> Result<()> {
    let (token, generated) = token(o)?;
    let listener = TcpListener::bind(addr).map_err(|e| {
        Error::usage(format!("--listen {addr}: cannot bind: {e}"))
    })?;
    let local = listener
        .local_addr()
        .map_err(|e| Error::server(format!("--listen: {e}")))?;
    msg::line(&format!("serve: listening on http://{local}{PATH}"));
    if generated {
        // Printed once; never journalled.
        msg::line(&format!("serve: bearer token: {token}"));
    }
    let front = Front {
        gw,
        token,
        port: local.port(),
        origins: o.origins.clone(),
        sessions: Mutex::new(HashMap::new()),
        next: AtomicU64::new(1),
    };
    let open = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for conn in listener.incoming() {
            let Ok(mut stream) = conn else { continue };
            if open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                refuse_quietly(&mut stream, 503, "too many connections");
                continue;
            }
            open.fetch_add(1, Ordering::SeqCst);
            let (front, open) = (&front, &open);
            scope.spawn(move || {
                front.connection(stream, &scope);
                open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    Ok(())
}

/// A request head, parsed.
#[derive(Debug, PartialEq)]
pub(crate) struct Head {
    pub(crate) method: String,
    pub(crate) path: String,
    /// Names lowercased.
    pub(crate) headers: Vec<(String, String)>,
}

impl Head {
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn count(&self, name: &str) -> usize {
        self.headers.iter().filter(|(n, _)| n == name).count()
    }
}

/// Parses a request head (without the blank line): strict HTTP/1.1.
pub(crate) fn parse_head(
    text: &str,
) -> std::result::Result<Head, &'static str> {
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("malformed request line");
    };
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err("unsupported HTTP version");
    }
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err("malformed method");
    }
    let path = target.split('?').next().unwrap_or("").to_string();
    let mut headers = vec![];
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err("malformed header line");
        };
        let token = |b: u8| {
            b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
        };
        if name.is_empty() || !name.bytes().all(token) {
            return Err("malformed header name");
        }
        if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return Err("control character in a header");
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    Ok(Head { method: method.to_string(), path, headers })
}

/// Whether `host` (a `Host` header) names a loopback host, with our port
/// if it has one.
pub(crate) fn loopback_host(host: &str, port: u16) -> bool {
    let (name, p) = match host.rsplit_once(':') {
        Some((n, p))
            if !n.ends_with(':')
                && (n.starts_with('[') == n.ends_with(']')) =>
        {
            (n, Some(p))
        }
        _ => (host, None),
    };
    let name_ok = matches!(
        name.to_ascii_lowercase().as_str(),
        "127.0.0.1" | "localhost" | "[::1]"
    );
    let port_ok = p.is_none_or(|p| p.parse::<u16>().ok() == Some(port));
    name_ok && port_ok
}

/// Equal strings, compared in time that does not depend on where they
/// differ.
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len()
        && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// The checks every request passes before anything else: `Err((status,
/// reason))`.
pub(crate) fn check(
    head: &Head,
    port: u16,
    token: &str,
    origins: &[String],
) -> std::result::Result<(), (u16, &'static str)> {
    if head.path != PATH {
        return Err((404, "unknown path"));
    }
    match head.get("host") {
        Some(h) if head.count("host") == 1 && loopback_host(h, port) => {}
        _ => return Err((403, "Host is not a loopback name")),
    }
    if let Some(o) = head.get("origin")
        && (head.count("origin") > 1 || !origins.iter().any(|a| a == o))
    {
        return Err((403, "Origin not allowed"));
    }
    if head.method == "OPTIONS" {
        return Err((405, "no CORS here"));
    }
    let bearer = head
        .get("authorization")
        .filter(|_| head.count("authorization") == 1)
        .and_then(|a| a.strip_prefix("Bearer "));
    match bearer {
        Some(t) if same(t, token) => Ok(()),
        Some(_) => Err((401, "wrong bearer token")),
        None => Err((401, "missing bearer token")),
    }
}

/// Reads the head (up to the blank line) within the deadline; returns it
/// and whatever of the body came with it.
fn read_head(
    s: &mut TcpStream,
) -> std::result::Result<(String, Vec<u8>), (u16, &'static str)> {
    let until = Instant::now() + HEAD_DEADLINE;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8(buf[..i].to_vec())
                .map_err(|_| (400, "request head is not UTF-8"))?;
            return Ok((head, buf[i + 4..].to_vec()));
        }
        if buf.len() > MAX_HEAD {
            return Err((431, "request head too large"));
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err((408, "request head too slow"));
        }
        let _ = s.set_read_timeout(Some(left));
        match s.read(&mut chunk) {
            Ok(0) => return Err((400, "connection closed in the head")),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => return Err((408, "request head too slow")),
        }
    }
}

fn read_body(
    s: &mut TcpStream,
    head: &Head,
    mut got: Vec<u8>,
) -> std::result::Result<Vec<u8>, (u16, &'static str)> {
    if head.get("transfer-encoding").is_some() {
        return Err((411, "send a Content-Length, not chunks"));
    }
    let len = match head.get("content-length") {
        Some(l) if head.count("content-length") == 1 => {
            l.parse::<usize>().map_err(|_| (400, "bad Content-Length"))?
        }
        None => 0,
        _ => return Err((400, "bad Content-Length")),
    };
    if len > MAX_BODY {
        return Err((413, "request body too large"));
    }
    let until = Instant::now() + BODY_DEADLINE;
    let mut chunk = [0u8; 16 * 1024];
    while got.len() < len {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err((408, "request body too slow"));
        }
        let _ = s.set_read_timeout(Some(left));
        match s.read(&mut chunk) {
            Ok(0) => return Err((400, "connection closed in the body")),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(_) => return Err((408, "request body too slow")),
        }
    }
    got.truncate(len);
    Ok(got)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Writes a whole response and closes.
fn respond(
    s: &mut TcpStream,
    status: u16,
    headers: &[(&str, &str)],
    body: &str,
) {
    let mut text = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (n, v) in headers {
        text.push_str(&format!("{n}: {v}\r\n"));
    }
    text.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    ));
    let _ = s.write_all(text.as_bytes()).and_then(|_| s.flush());
}

/// A refusal: a short plain text, journalled.
fn refuse(s: &mut TcpStream, status: u16, why: &str) {
    journal::event(
        "serve_refused",
        json!({"front": "http", "status": status, "reason": why}),
    );
    msg::debug(&format!("serve: refused a request: {status} {why}"));
    let mut extra = vec![("Content-Type", "text/plain; charset=utf-8")];
    if status == 401 {
        extra.push(("WWW-Authenticate", "Bearer"));
    }
    respond(s, status, &extra, &format!("{why}\n"));
}

fn refuse_quietly(s: &mut TcpStream, status: u16, why: &str) {
    journal::event(
        "serve_refused",
        json!({"front": "http", "status": status, "reason": why}),
    );
    respond(s, status, &[], "");
}

fn json_reply(
    s: &mut TcpStream,
    status: u16,
    session: Option<&str>,
    body: &Value,
) {
    let mut h = vec![("Content-Type", "application/json")];
    if let Some(id) = session {
        h.push(("Mcp-Session-Id", id));
    }
    respond(s, status, &h, &body.to_string());
}

/// What the gateway asks the host while a handshake-era request runs:
/// events on that request's SSE stream, answered by later POSTs.
struct StreamLink {
    stream: Mutex<TcpStream>,
    /// `None` for a 2026-07-28 request: told things, never asked.
    session: Option<Arc<Session>>,
    next: AtomicU64,
    tag: u64,
}

impl StreamLink {
    fn event(&self, m: &Value) -> bool {
        let mut s = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        s.write_all(sse::encode(&m.to_string()).as_bytes())
            .and_then(|_| s.flush())
            .is_ok()
    }
}

impl HostLink for StreamLink {
    fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> std::result::Result<Value, String> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let id = json!(format!("serve-{}-{n}", self.tag));
        let Some(session) = &self.session else {
            return Err("a 2026-07-28 host is not asked on a stream".into());
        };
        let question = (&id, method, params);
        session.pending.ask_host(question, timeout, |m| self.event(m))
    }

    fn notify(&self, method: &str, params: Value) {
        self.event(
            &json!({"jsonrpc": "2.0", "method": method, "params": params}),
        );
    }

    fn keep_alive(&self) -> bool {
        let mut s = self.stream.lock().unwrap_or_else(|e| e.into_inner());
        s.write_all(b": keep-alive\n\n").and_then(|_| s.flush()).is_ok()
    }
}

impl Front<'_, '_> {
    fn connection<'s>(&'s self, mut s: TcpStream, spawn: &dyn Spawner<'s>) {
        let (head, early) = match read_head(&mut s) {
            Ok(h) => h,
            Err((status, why)) => return refuse(&mut s, status, why),
        };
        let head = match parse_head(&head) {
            Ok(h) => h,
            Err(why) => return refuse(&mut s, 400, why),
        };
        if let Err((status, why)) =
            check(&head, self.port, &self.token, &self.origins)
        {
            return refuse(&mut s, status, why);
        }
        match head.method.as_str() {
            "POST" => {}
            "DELETE" => {
                let gone = head.get("mcp-session-id").and_then(|id| {
                    self.sessions
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(id)
                });
                if let Some(session) = &gone {
                    // Its GET stream ends, its subscriptions go.
                    self.gw.forget_host(session.key);
                }
                let status = if gone.is_some() { 204 } else { 404 };
                return respond(&mut s, status, &[], "");
            }
            "GET" => return self.standalone(s, &head),
            _ => {
                return refuse(
                    &mut s,
                    405,
                    "only POST, GET (a session's stream) and DELETE (of a \
                     session)",
                );
            }
        }
        let body = match read_body(&mut s, &head, early) {
            Ok(b) => b,
            Err((status, why)) => return refuse(&mut s, status, why),
        };
        let m: Value = match serde_json::from_slice(&body) {
            Ok(m) => m,
            Err(e) => {
                let f = RpcFail::new(
                    code::PARSE_ERROR,
                    format!("parse error: {e}"),
                );
                return json_reply(
                    &mut s,
                    400,
                    None,
                    &f.response(Value::Null),
                );
            }
        };
        self.message(s, &head, m, spawn);
    }

    fn session(&self, head: &Head) -> Option<Arc<Session>> {
        let id = head.get("mcp-session-id")?;
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    /// `initialize` in the handshake era: the gateway's answer, and a new
    /// session (at most `MAX_SESSIONS`) whose id goes in the reply.
    fn initialize(
        &self,
        mut s: TcpStream,
        id: Value,
        method: &str,
        params: &Value,
    ) {
        let key = self.next.fetch_add(1, Ordering::SeqCst);
        let mut host = Host { key, ..Host::default() };
        let r = self.gw.handle(&mut host, None, None, (&id, method), params);
        let sid = match random_hex(16) {
            Ok(sid) => sid,
            Err(e) => return refuse(&mut s, 503, &e.to_string()),
        };
        {
            let mut all =
                self.sessions.lock().unwrap_or_else(|e| e.into_inner());
            if all.len() >= MAX_SESSIONS {
                drop(all);
                return refuse(&mut s, 503, "too many sessions");
            }
            all.insert(
                sid.clone(),
                Arc::new(Session {
                    host: Mutex::new(host),
                    pending: Pending::default(),
                    aborts: Aborts::default(),
                    key,
                }),
            );
        }
        let body = match r {
            Ok(v) => mcp::response(id, v),
            Err(f) => f.response(id),
        };
        json_reply(&mut s, 200, Some(&sid), &body)
    }

    /// A 2026-07-28 request: no session; a call, read or prompt (or a
    /// listen) that accepts SSE is answered as a stream.
    fn modern_message<'s>(
        &'s self,
        mut s: TcpStream,
        head: &Head,
        id: Value,
        method: &str,
        params: &Value,
        spawn: &dyn Spawner<'s>,
    ) {
        if let (Some(h), Some(Ok(()))) = (
            head.get("mcp-protocol-version"),
            mcp::host::modern_version(params),
        ) && h != mcp::Version::MODERN.as_str()
        {
            let f = RpcFail::new(
                code::HEADER_MISMATCH,
                "MCP-Protocol-Version does not match the request's _meta",
            );
            return json_reply(&mut s, 400, None, &f.response(id));
        }
        let listen = method == mcp::method::SUBSCRIPTIONS_LISTEN;
        if (super::gateway::asks(method) || listen)
            && streams(head)
            && mcp::host::modern_version(params) == Some(Ok(()))
        {
            return self.modern_stream(s, id, method, params, spawn);
        }
        let mut host = Host::default();
        let r = self.gw.handle(
            &mut host,
            None,
            Some(spawn),
            (&id, method),
            params,
        );
        let status = match &r {
            Err(f) if f.code == code::UNSUPPORTED_PROTOCOL_VERSION => 400,
            _ => 200,
        };
        let body = match r {
            Ok(v) => mcp::response(id, v),
            Err(f) => f.response(id),
        };
        json_reply(&mut s, status, None, &body)
    }

    fn message<'s>(
        &'s self,
        mut s: TcpStream,
        head: &Head,
        m: Value,
        spawn: &dyn Spawner<'s>,
    ) {
        let (id, method, params) = match mcp::classify(m) {
            Incoming::Request { id, method, params } => (id, method, params),
            Incoming::Response { id, outcome } => {
                let Some(session) = self.session(head) else {
                    return refuse(&mut s, 404, "unknown or missing session");
                };
                session.pending.answer(&id, outcome);
                return respond(&mut s, 202, &[], "");
            }
            Incoming::Notification { method, params } => {
                if method == mcp::method::CANCELLED
                    && let Some(session) = self.session(head)
                {
                    session.aborts.cancel(&params);
                }
                return respond(&mut s, 202, &[], "");
            }
            Incoming::Invalid(why) => {
                let f = RpcFail::new(code::INVALID_REQUEST, why);
                return json_reply(
                    &mut s,
                    400,
                    None,
                    &f.response(Value::Null),
                );
            }
        };
        if mcp::host::modern_version(&params).is_some() {
            return self.modern_message(s, head, id, &method, &params, spawn);
        }
        if method == mcp::method::INITIALIZE {
            return self.initialize(s, id, &method, &params);
        }
        let Some(session) = self.session(head) else {
            let (status, why) = match head.get("mcp-session-id") {
                Some(_) => (404, "unknown session"),
                None => {
                    (400, "missing Mcp-Session-Id (send initialize first)")
                }
            };
            return refuse(&mut s, status, why);
        };
        let mut host = *session.host.lock().unwrap_or_else(|e| e.into_inner());
        // A disconnect is not a cancellation in this era: the host POSTs
        // notifications/cancelled, and the request then gets no response.
        let abort = session.aborts.start(&id, &method);
        let _entered = abort.as_ref().map(Abort::enter);
        if !streams(head) {
            let r =
                self.gw.handle(&mut host, None, None, (&id, &method), &params);
            if session.aborts.finish(&id, abort.as_ref()) {
                return respond(&mut s, 202, &[], "");
            }
            let body = match r {
                Ok(v) => mcp::response(id, v),
                Err(f) => f.response(id),
            };
            return json_reply(&mut s, 200, None, &body);
        }
        let Some(link) = self.open_stream(s, Some(session.clone())) else {
            session.aborts.finish(&id, abort.as_ref());
            return;
        };
        let dyn_link: Arc<dyn HostLink> = link.clone();
        let r = self.gw.handle(
            &mut host,
            Some(&dyn_link),
            None,
            (&id, &method),
            &params,
        );
        if session.aborts.finish(&id, abort.as_ref()) {
            return;
        }
        let body = match r {
            Ok(v) => mcp::response(id, v),
            Err(f) => f.response(id),
        };
        link.event(&body);
    }

    /// The standalone GET stream of a handshake-era session: what the
    /// session is told between its requests (resource updates, list
    /// changes). One per session; a comment every [`super::KEEP_ALIVE`]; it ends
    /// with the session, or when the host goes away. 2026-07-28 has no
    /// such stream (405), nor sessions.
    fn standalone(&self, mut s: TcpStream, head: &Head) {
        let modern = head.get("mcp-protocol-version")
            == Some(mcp::Version::MODERN.as_str());
        if modern || head.get("mcp-session-id").is_none() {
            return refuse(
                &mut s,
                405,
                "no standalone stream without a session (2026-07-28 has \
                 none)",
            );
        }
        let Some(session) = self.session(head) else {
            return refuse(&mut s, 404, "unknown session");
        };
        if !streams(head) {
            return refuse(&mut s, 406, "accept text/event-stream");
        }
        let _ = s.set_write_timeout(Some(WRITE_DEADLINE));
        let Ok(probe) = s.try_clone() else { return };
        let link = Arc::new(StreamLink {
            stream: Mutex::new(probe),
            session: None,
            next: AtomicU64::new(1),
            tag: self.next.fetch_add(1, Ordering::SeqCst),
        });
        let dyn_link: Arc<dyn HostLink> = link.clone();
        if !self.gw.hosts.attach_first(session.key, dyn_link.clone()) {
            return refuse(&mut s, 409, "this session has a stream already");
        }
        if s.write_all(SSE_HEAD.as_bytes()).is_err() {
            self.gw.hosts.detach_link(session.key, &dyn_link);
            return;
        }
        let mut quiet = Duration::ZERO;
        loop {
            std::thread::sleep(TICK);
            quiet += TICK;
            let live =
                self.session(head).is_some_and(|x| Arc::ptr_eq(&x, &session))
                    && self.gw.hosts.attached(session.key, &dyn_link);
            if !live {
                break;
            }
            if quiet >= super::KEEP_ALIVE {
                quiet = Duration::ZERO;
                if !link.keep_alive() {
                    break;
                }
            }
        }
        self.gw.hosts.detach_link(session.key, &dyn_link);
        let st = link.stream.lock().unwrap_or_else(|e| e.into_inner());
        let _ = st.shutdown(std::net::Shutdown::Both);
    }

    /// Starts an SSE response on `s`: the link that writes its events.
    fn open_stream(
        &self,
        mut s: TcpStream,
        session: Option<Arc<Session>>,
    ) -> Option<Arc<StreamLink>> {
        // A host that stops reading holds a writer at most this long.
        let _ = s.set_write_timeout(Some(WRITE_DEADLINE));
        s.write_all(SSE_HEAD.as_bytes()).ok()?;
        Some(Arc::new(StreamLink {
            stream: Mutex::new(s),
            session,
            next: AtomicU64::new(1),
            tag: self.next.fetch_add(1, Ordering::SeqCst),
        }))
    }

    /// A 2026-07-28 call, read or prompt whose host accepts a stream: its
    /// progress and log messages go on the stream before the result, and
    /// closing the stream is how the host cancels it (the era has no
    /// `notifications/cancelled` over HTTP).
    fn modern_stream<'s>(
        &'s self,
        s: TcpStream,
        id: Value,
        method: &str,
        params: &Value,
        spawn: &dyn Spawner<'s>,
    ) {
        let Ok(probe) = s.try_clone() else { return };
        let Some(link) = self.open_stream(s, None) else { return };
        let abort = Abort::default();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        {
            let (abort, done) = (abort.clone(), done.clone());
            spawn.spawn_boxed(Box::new(move || watch(&probe, &done, &abort)));
        }
        let _entered = abort.enter();
        let dyn_link: Arc<dyn HostLink> = link.clone();
        let mut host = Host::default();
        let r = self.gw.handle(
            &mut host,
            Some(&dyn_link),
            Some(spawn),
            (&id, method),
            params,
        );
        done.store(true, Ordering::SeqCst);
        if !abort.fired() {
            link.event(&match r {
                Ok(v) => mcp::response(id, v),
                Err(f) => f.response(id),
            });
        }
        // Wakes the watcher.
        let s = link.stream.lock().unwrap_or_else(|e| e.into_inner());
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
}

/// Whether the host accepts an SSE stream as the answer.
fn streams(head: &Head) -> bool {
    head.get("accept").is_some_and(|a| a.contains("text/event-stream"))
}

/// Gives the request up when the host closes its connection before the
/// answer is written (the host sends nothing more on it: one request per
/// connection).
fn watch(
    probe: &TcpStream,
    done: &std::sync::atomic::AtomicBool,
    abort: &Abort,
) {
    let _ = probe.set_read_timeout(None);
    let mut b = [0u8; 1];
    loop {
        match probe.peek(&mut b) {
            Ok(0) | Err(_) => break,
            // Bytes after the request: read and dropped.
            Ok(_) => {
                let mut sink = [0u8; 1024];
                if (&*probe).read(&mut sink).unwrap_or(0) == 0 {
                    break;
                }
            }
        }
    }
    if !done.load(Ordering::SeqCst) {
        msg::debug(
            "serve: the host closed the stream: the request is cancelled",
        );
        journal::event("serve_cancelled", json!({"by": "host"}));
        abort.fire();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(lines: &[&str]) -> Head {
        let mut all = vec!["POST /mcp HTTP/1.1"];
        all.extend_from_slice(lines);
        parse_head(&all.join("\r\n")).unwrap()
    }

    const TOKEN: &str = "0123456789abcdef0123";

    #[test]
    fn only_loopback_binds() {
        assert!(parse_listen("127.0.0.1:0").is_ok());
        assert!(parse_listen("[::1]:8931").is_ok());
        let e = parse_listen("0.0.0.0:8931").unwrap_err();
        assert!(e.to_string().contains("not a loopback address"), "{e}");
        assert!(parse_listen("192.168.1.2:80").is_err());
        assert!(parse_listen("localhost:80").is_err());
    }

    #[test]
    fn hosts_must_be_loopback_names_with_our_port() {
        assert!(loopback_host("127.0.0.1:8931", 8931));
        assert!(loopback_host("localhost", 8931));
        assert!(loopback_host("[::1]:8931", 8931));
        assert!(loopback_host("LOCALHOST:8931", 8931));
        assert!(!loopback_host("127.0.0.1:80", 8931));
        assert!(!loopback_host("evil.example:8931", 8931));
        assert!(!loopback_host("localhost.evil.example", 8931));
        assert!(loopback_host("[::1]", 1));
    }

    #[test]
    fn the_checks_refuse_what_they_must() {
        let auth = format!("Authorization: Bearer {TOKEN}");
        let ok = head(&["Host: 127.0.0.1:9", &auth]);
        assert_eq!(check(&ok, 9, TOKEN, &[]), Ok(()));
        let no_token = head(&["Host: 127.0.0.1:9"]);
        assert_eq!(check(&no_token, 9, TOKEN, &[]).unwrap_err().0, 401);
        let wrong = head(&["Host: 127.0.0.1:9", "Authorization: Bearer nope"]);
        assert_eq!(check(&wrong, 9, TOKEN, &[]).unwrap_err().0, 401);
        let foreign = head(&["Host: evil.example", &auth]);
        assert_eq!(check(&foreign, 9, TOKEN, &[]).unwrap_err().0, 403);
        let origin = head(&[
            "Host: localhost:9",
            "Origin: https://evil.example",
            &auth,
        ]);
        assert_eq!(check(&origin, 9, TOKEN, &[]).unwrap_err().0, 403);
        let allowed = vec!["https://evil.example".to_string()];
        assert_eq!(check(&origin, 9, TOKEN, &allowed), Ok(()));
        let two = head(&["Host: localhost:9", "Host: evil.example", &auth]);
        assert_eq!(check(&two, 9, TOKEN, &[]).unwrap_err().0, 403);
        let mut other = head(&["Host: localhost:9", &auth]);
        other.path = "/other".into();
        assert_eq!(check(&other, 9, TOKEN, &[]).unwrap_err().0, 404);
    }

    #[test]
    fn heads_are_parsed_strictly() {
        assert!(parse_head("POST /mcp HTTP/1.1\r\nHost: a").is_ok());
        assert!(parse_head("POST /mcp HTTP/2\r\nHost: a").is_err());
        assert!(parse_head("POST  /mcp HTTP/1.1").is_err());
        assert!(parse_head("post /mcp HTTP/1.1").is_err());
        assert!(parse_head("POST /mcp HTTP/1.1\r\nBad Name: x").is_err());
        assert!(parse_head("POST /mcp HTTP/1.1\r\nNoColon").is_err());
        assert!(parse_head("POST /mcp HTTP/1.1\r\nX: a\u{0}b").is_err());
        let h = parse_head("GET /mcp?x=1 HTTP/1.1\r\nHOST: a").unwrap();
        assert_eq!(h.path, "/mcp");
        assert_eq!(h.get("host"), Some("a"));
        assert!(same("abc", "abc") && !same("abc", "abd") && !same("a", "ab"));
    }
}
