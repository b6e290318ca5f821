//! A scripted HTTP/1.1 server on 127.0.0.1, in-process and std-only, for
//! the Streamable HTTP tests.
//!
//! [`HttpFixture::start`] binds an ephemeral port and serves every
//! connection on its own thread, several requests per connection
//! (keep-alive). Each request is parsed (request line, headers with
//! lowercased names, a `Content-Length` or chunked body), recorded, and
//! handed to the test's handler together with a [`Conn`] to answer on: a
//! whole response, a JSON body, an event stream written piece by piece, a
//! stall, a trickle, or nothing at all (the connection is closed).
//!
//! [`McpScript`] is a small, correct MCP server on top, with knobs for
//! what a test needs to vary (JSON or SSE answers, sessions that expire,
//! failing `initialize`, stream resumption, ...). A test that needs one
//! method answered differently wraps it:
//!
//! ```ignore
//! let script = McpScript::new();
//! let fx = HttpFixture::start(move |req, conn| {
//!     if req.rpc_method() == Some("tools/call") {
//!         conn.stall(Duration::from_secs(10));
//!     } else {
//!         script.handle(req, conn);
//!     }
//! });
//! ```
//!
//! The fixture stops accepting when dropped; handlers that loop (streams
//! that never end) check [`Conn::alive`].

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The longest a connection waits for its next request.
const IDLE: Duration = Duration::from_secs(30);
/// The most bytes of a request head (line and headers).
const MAX_HEAD: usize = 64 * 1024;
/// The most bytes of a request body.
const MAX_BODY: usize = 64 << 20;

/// One request as the fixture received it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// Whether the body came chunked.
    pub chunked: bool,
    /// The connection it came on (numbered from 0 in accept order).
    pub conn: usize,
    /// When it had been read completely.
    pub at: Instant,
    /// The status the handler answered with, if it answered.
    pub status: Option<u16>,
    /// When the handler was done with it (its response written, a stream
    /// closed).
    pub done: Option<Instant>,
}

impl Request {
    /// The value of a header (case-insensitive name); the first one.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    /// Every value of a header.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The body as JSON; `Null` when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The JSON-RPC method of a POSTed message.
    pub fn rpc_method(&self) -> Option<String> {
        self.json().get("method").and_then(Value::as_str).map(str::to_string)
    }

    /// The JSON-RPC id of a POSTed message.
    pub fn rpc_id(&self) -> Option<Value> {
        self.json().get("id").cloned()
    }

    /// A POSTed JSON-RPC response (an id, no method).
    pub fn is_rpc_response(&self) -> bool {
        let v = self.json();
        v.get("id").is_some() && v.get("method").is_none()
    }

    /// `METHOD path rpc-method`, for failure messages.
    /// A GET for the server's own event stream: an event stream asked for
    /// without `Last-Event-ID` (not the resumption of a request's stream,
    /// nor a metadata document or an authorization page).
    pub fn is_standalone_get(&self) -> bool {
        self.method == "GET"
            && self.header("accept") == Some("text/event-stream")
            && self.header("last-event-id").is_none()
    }

    pub fn summary(&self) -> String {
        let what = self.rpc_method().unwrap_or_else(|| {
            if self.is_rpc_response() {
                "(response)".to_string()
            } else {
                String::new()
            }
        });
        format!("{} {} {what} -> {:?}", self.method, self.path, self.status)
    }
}

type Log = Arc<Mutex<Vec<Request>>>;
type Handler = Arc<dyn Fn(&Request, &mut Conn) + Send + Sync + 'static>;

/// The scripted server; stops accepting when dropped.
pub struct HttpFixture {
    port: u16,
    log: Log,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for HttpFixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpFixture").field("port", &self.port).finish()
    }
}

impl HttpFixture {
    /// Binds `127.0.0.1:0` and serves every request with `handler`.
    pub fn start<F>(handler: F) -> HttpFixture
    where
        F: Fn(&Request, &mut Conn) + Send + Sync + 'static,
    {
        let listener =
            TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let log: Log = Arc::new(Mutex::new(vec![]));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Handler = Arc::new(handler);
        let accept = {
            let (log, stop) = (log.clone(), stop.clone());
            thread::spawn(move || {
                let mut n = 0;
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (log, stop, h) =
                        (log.clone(), stop.clone(), handler.clone());
                    let id = n;
                    n += 1;
                    thread::spawn(move || serve(stream, id, &*h, &log, &stop));
                }
            })
        };
        HttpFixture { port, log, stop, accept: Some(accept) }
    }

    /// A fixture that is [`McpScript`] and nothing else.
    pub fn mcp(script: McpScript) -> HttpFixture {
        HttpFixture::start(move |req, conn| script.handle(req, conn))
    }

    /// A fixture that answers every request with 200 `ok` (a stand-in for
    /// a proxy that must never be used).
    pub fn ok() -> HttpFixture {
        HttpFixture::start(|_, conn| {
            conn.respond(200, &[("content-type", "text/plain")], b"ok");
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Every request so far, in arrival order, except the standalone
    /// GET streams (see [`HttpFixture::standalone_gets`]): the client opens
    /// one on a thread of its own once a session is initialized, so where
    /// it falls among the other requests is a matter of timing.
    pub fn requests(&self) -> Vec<Request> {
        let mut all = self.log.lock().unwrap().clone();
        all.retain(|r| !r.is_standalone_get());
        all
    }

    /// The standalone GET streams the client opened, in arrival order.
    pub fn standalone_gets(&self) -> Vec<Request> {
        let mut all = self.log.lock().unwrap().clone();
        all.retain(Request::is_standalone_get);
        all
    }

    /// The requests so far (standalone GETs too), one
    /// [`Request::summary`] a line.
    pub fn summary(&self) -> String {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.summary())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The POSTs carrying a JSON-RPC `method`, in order.
    pub fn posts_of(&self, method: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.method == "POST" && r.rpc_method().as_deref() == Some(method)
            })
            .collect()
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Unblock accept().
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Serves one connection: requests until EOF, an error, or a response
/// that closes it.
fn serve(
    stream: TcpStream,
    id: usize,
    handler: &(dyn Fn(&Request, &mut Conn) + Send + Sync),
    log: &Log,
    stop: &Arc<AtomicBool>,
) {
    let _ = stream.set_read_timeout(Some(IDLE));
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read_half);
    loop {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Some(mut req) = read_request(&mut reader) else { break };
        req.conn = id;
        let wants_close = req
            .header("connection")
            .is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let index = {
            let mut l = log.lock().unwrap();
            l.push(req.clone());
            l.len() - 1
        };
        let Ok(write_half) = stream.try_clone() else { break };
        let mut conn = Conn {
            stream: write_half,
            log: log.clone(),
            index,
            stop: stop.clone(),
            answered: false,
            close: false,
            failed: false,
        };
        handler(&req, &mut conn);
        let keep = conn.answered && !conn.close && !conn.failed;
        log.lock().unwrap()[index].done = Some(Instant::now());
        if !keep || wants_close {
            let _ = stream.shutdown(Shutdown::Both);
            break;
        }
    }
}

/// Reads one line of a request's head into `line` and counts it in
/// `head`; `None` at EOF or on an error.
fn head_line(
    r: &mut BufReader<TcpStream>,
    line: &mut String,
    head: &mut usize,
) -> Option<()> {
    line.clear();
    let n = r.read_line(line).ok()?;
    if n == 0 {
        return None;
    }
    *head += n;
    Some(())
}

/// Reads one request; `None` at EOF or on anything malformed.
fn read_request(r: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut head = 0;
    let mut line = String::new();
    // Tolerate stray empty lines before a request line (RFC 9112 §2.2).
    loop {
        head_line(r, &mut line, &mut head)?;
        if !line.trim().is_empty() {
            break;
        }
        if head > MAX_HEAD {
            return None;
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = vec![];
    loop {
        head_line(r, &mut line, &mut head)?;
        if head > MAX_HEAD {
            return None;
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let get =
        |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let chunked = get("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        read_chunked(r)?
    } else if let Some(len) = get("content-length") {
        let len: usize = len.trim().parse().ok()?;
        if len > MAX_BODY {
            return None;
        }
        let mut b = vec![0; len];
        r.read_exact(&mut b).ok()?;
        b
    } else {
        vec![]
    };
    Some(Request {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
        chunked,
        conn: 0,
        at: Instant::now(),
        status: None,
        done: None,
    })
}

fn read_chunked(r: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut body = vec![];
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line).ok()?;
        let size = line.trim().split(';').next()?.trim();
        let size = usize::from_str_radix(size, 16).ok()?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                line.clear();
                if r.read_line(&mut line).ok()? == 0 || line.trim().is_empty()
                {
                    return Some(body);
                }
            }
        }
        if body.len() + size > MAX_BODY {
            return None;
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..]).ok()?;
        line.clear();
        r.read_line(&mut line).ok()?;
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        _ => "Status",
    }
}

/// The answering side of one request.
pub struct Conn {
    stream: TcpStream,
    log: Log,
    index: usize,
    stop: Arc<AtomicBool>,
    answered: bool,
    close: bool,
    failed: bool,
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn").field("request", &self.index).finish()
    }
}

impl Conn {
    /// Writes the status line and headers. Without a `content-length`
    /// among them the body is delimited by closing the connection, so
    /// `connection: close` is added and the connection ends after the
    /// handler.
    pub fn head(&mut self, status: u16, headers: &[(&str, &str)]) {
        let has_length = headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("content-length"));
        let mut h = format!("HTTP/1.1 {status} {}\r\n", reason(status));
        for (k, v) in headers {
            h.push_str(&format!("{k}: {v}\r\n"));
        }
        if !has_length {
            self.close = true;
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("connection"))
            {
                h.push_str("connection: close\r\n");
            }
        }
        h.push_str("\r\n");
        self.answered = true;
        self.log.lock().unwrap()[self.index].status = Some(status);
        self.write_raw(h.as_bytes());
    }

    /// A whole response with a `content-length`.
    pub fn respond(
        &mut self,
        status: u16,
        headers: &[(&str, &str)],
        body: &[u8],
    ) {
        let len = body.len().to_string();
        let mut h: Vec<(&str, &str)> = headers.to_vec();
        h.push(("content-length", &len));
        self.head(status, &h);
        self.write_raw(body);
    }

    /// A JSON body (`application/json`), plus `extra` headers.
    pub fn json(&mut self, status: u16, extra: &[(&str, &str)], v: &Value) {
        let mut h = vec![("content-type", "application/json")];
        h.extend_from_slice(extra);
        self.respond(status, &h, v.to_string().as_bytes());
    }

    /// An empty body (`202 Accepted` for notifications).
    pub fn empty(&mut self, status: u16) {
        self.respond(status, &[], b"");
    }

    /// The head of an event stream; write the events with
    /// [`Conn::write_raw`] or [`Conn::event`]. The stream ends when the
    /// handler returns (the connection is closed).
    pub fn sse(&mut self, extra: &[(&str, &str)]) {
        let mut h = vec![("content-type", "text/event-stream")];
        h.extend_from_slice(extra);
        self.head(200, &h);
    }

    /// One `message` event with these fields before its data: `id`.
    pub fn event(&mut self, id: Option<&str>, v: &Value) -> bool {
        let mut s = String::new();
        if let Some(id) = id {
            s.push_str(&format!("id: {id}\n"));
        }
        s.push_str(&format!("data: {v}\n\n"));
        self.write_raw(s.as_bytes())
    }

    /// Writes and flushes raw bytes; false once the peer is gone.
    pub fn write_raw(&mut self, bytes: &[u8]) -> bool {
        if self.failed {
            return false;
        }
        let ok =
            self.stream.write_all(bytes).and_then(|_| self.stream.flush());
        if ok.is_err() {
            self.failed = true;
        }
        !self.failed
    }

    /// Whether the peer is still there (as far as writes tell) and the
    /// fixture still runs.
    pub fn alive(&self) -> bool {
        !self.failed && !self.stop.load(Ordering::SeqCst)
    }

    /// Sleeps up to `d`, ending early when the fixture stops.
    pub fn sleep(&self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end && !self.stop.load(Ordering::SeqCst) {
            thread::sleep(
                (end - Instant::now()).min(Duration::from_millis(20)),
            );
        }
    }

    /// Writes `chunks` one after the other with `gap` between them.
    pub fn chunks(&mut self, chunks: &[&[u8]], gap: Duration) {
        for (i, c) in chunks.iter().enumerate() {
            if i > 0 {
                self.sleep(gap);
            }
            if !self.write_raw(c) {
                return;
            }
        }
    }

    /// A JSON head (with a `content-length`) and then nothing for `d`.
    pub fn stall(&mut self, d: Duration) {
        self.head(
            200,
            &[("content-type", "application/json"), ("content-length", "100")],
        );
        self.close = true;
        self.sleep(d);
    }

    /// A JSON body written one byte every `every`, until it is done, the
    /// peer leaves or the fixture stops.
    pub fn trickle(&mut self, body: &[u8], every: Duration) {
        let len = body.len().to_string();
        self.head(
            200,
            &[("content-type", "application/json"), ("content-length", &len)],
        );
        self.close = true;
        for b in body {
            if !self.alive() || !self.write_raw(&[*b]) {
                return;
            }
            self.sleep(every);
        }
    }

    /// A redirect to `location`.
    pub fn redirect(&mut self, status: u16, location: &str) {
        self.respond(
            status,
            &[("location", location), ("content-type", "text/plain")],
            b"moved",
        );
    }

    /// Closes the connection after this request whatever was written.
    pub fn close(&mut self) {
        self.close = true;
    }

    /// Every request the fixture has received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().unwrap().clone()
    }

    /// Waits up to `limit` until `pred` holds for the requests so far.
    pub fn wait_for(
        &self,
        limit: Duration,
        pred: impl Fn(&[Request]) -> bool,
    ) -> bool {
        let end = Instant::now() + limit;
        loop {
            if pred(&self.log.lock().unwrap()) {
                return true;
            }
            if Instant::now() >= end || self.stop.load(Ordering::SeqCst) {
                return false;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
}

// ---------------------------------------------------------------------------
// A minimal MCP server
// ---------------------------------------------------------------------------

/// The protocol versions the script accepts from a client.
pub const VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The id of the event after which [`McpScript::resume`] streams end.
pub const RESUME_EVENT_ID: &str = "7";

/// A minimal correct MCP server over Streamable HTTP: `initialize`
/// (the client's version when supported), `notifications/*` and client
/// responses get 202, `tools/list` has one `echo` tool, `tools/call echo`
/// returns its `text`, `ping` gets `{}`, the rest -32601. `GET` without a
/// resumable stream and every other path get 405; `DELETE` ends the
/// session.
#[derive(Debug, Default)]
pub struct McpScript {
    sse: bool,
    priming: bool,
    sessions: bool,
    expire_after: Vec<usize>,
    init_status: Option<u16>,
    protocol: Option<String>,
    batch_tools_list: bool,
    delete_status: Option<u16>,
    call_preamble: Vec<String>,
    server_requests: Vec<Value>,
    resume: Option<u64>,
    modern: bool,
    confirm_asks: Option<Value>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// (id, requests accepted, ended), in issue order.
    sessions: Vec<(String, usize, bool)>,
    /// The response a resumed stream delivers.
    stash: Option<Value>,
}

impl McpScript {
    pub fn new() -> McpScript {
        McpScript::default()
    }

    /// Answer requests with an event stream instead of a JSON body.
    pub fn sse(mut self) -> McpScript {
        self.sse = true;
        self
    }

    /// Open every event stream with a priming event (`id: 1`, empty data).
    pub fn priming(mut self) -> McpScript {
        self.priming = true;
        self
    }

    /// Issue `Mcp-Session-Id: sess-N` on initialize and require it after
    /// (400 without, 404 for an unknown or ended one).
    pub fn sessions(mut self) -> McpScript {
        self.sessions = true;
        self
    }

    /// Session `i` (from 0) accepts `budget[i]` POSTs after initialize;
    /// the next gets 404 and ends it. Later sessions never expire.
    pub fn expire_after(mut self, budget: &[usize]) -> McpScript {
        self.sessions = true;
        self.expire_after = budget.to_vec();
        self
    }

    /// Answer every POST with this status (and a short text body), as a
    /// server of the old HTTP+SSE transport does.
    pub fn init_status(mut self, status: u16) -> McpScript {
        self.init_status = Some(status);
        self
    }

    /// Negotiate this version whatever the client asks.
    pub fn protocol(mut self, v: &str) -> McpScript {
        self.protocol = Some(v.to_string());
        self
    }

    /// Speak MCP 2026-07-28 only: `server/discover` answers, `initialize`
    /// gets 400 `-32022`, every request must carry `MCP-Protocol-Version:
    /// 2026-07-28` and a matching `Mcp-Method` (else 400 `-32020`), results
    /// carry `resultType`. The tool `confirm` answers `input_required`
    /// (an elicitation, `requestState` "st-1") until the retry carries
    /// `inputResponses` and that state, then echoes both back.
    pub fn modern(mut self) -> McpScript {
        self.modern = true;
        self
    }

    /// Modern, and `confirm` asks these `inputRequests` instead.
    pub fn confirm_asks(mut self, requests: Value) -> McpScript {
        self.modern = true;
        self.confirm_asks = Some(requests);
        self
    }

    /// Answer `tools/list` with a one-element batch array.
    pub fn batch_tools_list(mut self) -> McpScript {
        self.batch_tools_list = true;
        self
    }

    /// Answer `DELETE` with this status (default 200).
    pub fn delete_status(mut self, status: u16) -> McpScript {
        self.delete_status = Some(status);
        self
    }

    /// Raw event-stream text written before the `tools/call` response
    /// (implies [`McpScript::sse`]); `{id}` becomes the request's id.
    pub fn call_preamble(mut self, raw: &str) -> McpScript {
        self.sse = true;
        self.call_preamble.push(raw.to_string());
        self
    }

    /// Server requests sent on the `tools/call` stream before its
    /// response (implies [`McpScript::sse`]); the response waits (up to
    /// 5 s) until the client has POSTed a reply to each.
    pub fn server_request(mut self, req: Value) -> McpScript {
        self.sse = true;
        self.server_requests.push(req);
        self
    }

    /// The `tools/call` stream sends `retry: MS` and a notification with
    /// id [`RESUME_EVENT_ID`], then ends before the response, which a
    /// `GET` with that `Last-Event-ID` delivers.
    pub fn resume(mut self, retry_ms: u64) -> McpScript {
        self.sessions = true;
        self.resume = Some(retry_ms);
        self
    }

    /// The JSON-RPC answer to a client request (not for initialize's
    /// session handling, which [`McpScript::handle`] does).
    pub fn answer(&self, msg: &Value) -> Value {
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let result = match msg.get("method").and_then(Value::as_str) {
            Some("initialize") => {
                let asked = params
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let v = match &self.protocol {
                    Some(v) => v.clone(),
                    None if VERSIONS.contains(&asked) => asked.to_string(),
                    None => VERSIONS[0].to_string(),
                };
                json!({
                    "protocolVersion": v,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "http-fixture", "version": "1.0"},
                })
            }
            Some("ping") => json!({}),
            Some("tools/list") => json!({"tools": [{
                "name": "echo",
                "description": "Echoes its text",
                "annotations": {"readOnlyHint": true},
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                },
            }]}),
            Some("tools/call") => {
                let name = params.get("name").and_then(Value::as_str);
                let text = params
                    .pointer("/arguments/text")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if name != Some("echo") {
                    return json!({"jsonrpc": "2.0", "id": id, "error": {
                        "code": -32602, "message": "unknown tool"}});
                }
                json!({"content": [{"type": "text", "text": text}]})
            }
            m => {
                return json!({"jsonrpc": "2.0", "id": id, "error": {
                    "code": -32601,
                    "message": format!("no method {}", m.unwrap_or("?")),
                }});
            }
        };
        json!({"jsonrpc": "2.0", "id": id, "result": result})
    }

    /// Serves one request.
    pub fn handle(&self, req: &Request, conn: &mut Conn) {
        if req.path != "/mcp" {
            conn.respond(404, &[("content-type", "text/plain")], b"no");
            return;
        }
        match req.method.as_str() {
            "POST" => self.post(req, conn),
            "GET" => self.get(req, conn),
            "DELETE" => {
                if let Some(sid) = req.header("mcp-session-id") {
                    let mut st = self.state.lock().unwrap();
                    for s in st.sessions.iter_mut().filter(|s| s.0 == sid) {
                        s.2 = true;
                    }
                }
                conn.empty(self.delete_status.unwrap_or(200));
            }
            _ => conn.empty(405),
        }
    }

    /// Checks the session of a non-initialize request; false when it was
    /// answered with an error.
    fn session_ok(&self, req: &Request, conn: &mut Conn) -> bool {
        if !self.sessions {
            return true;
        }
        let Some(sid) = req.header("mcp-session-id") else {
            conn.respond(400, &[], b"missing session id");
            return false;
        };
        let mut st = self.state.lock().unwrap();
        let Some(i) = st.sessions.iter().position(|s| s.0 == sid) else {
            drop(st);
            conn.respond(404, &[], b"unknown session");
            return false;
        };
        let budget = self.expire_after.get(i).copied();
        let s = &mut st.sessions[i];
        if s.2 || budget.is_some_and(|b| s.1 >= b) {
            s.2 = true;
            drop(st);
            conn.respond(404, &[], b"session expired");
            return false;
        }
        s.1 += 1;
        true
    }

    /// The 2026-07-28 server of [`McpScript::modern`].
    fn post_modern(&self, req: &Request, conn: &mut Conn) {
        let msg = req.json();
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let err = |code: i64, message: &str, data: Value| {
            json!({"jsonrpc": "2.0", "id": id, "error":
                {"code": code, "message": message, "data": data}})
        };
        if method == "initialize" {
            let e = err(
                -32022,
                "Unsupported protocol version",
                json!({"supported": ["2026-07-28"]}),
            );
            conn.json(400, &[], &e);
            return;
        }
        if msg.get("id").is_none() {
            conn.empty(202);
            return;
        }
        let version = req.header("mcp-protocol-version");
        let meta = msg
            .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion");
        if version != Some("2026-07-28")
            || meta != Some(&json!("2026-07-28"))
            || req.header("mcp-method") != Some(method)
        {
            conn.json(400, &[], &err(-32020, "header mismatch", Value::Null));
            return;
        }
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let mut result = match method {
            "server/discover" => json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "instructions": "modern fixture",
            }),
            "tools/list" => {
                let mut r = self.answer(&msg)["result"].clone();
                r["tools"].as_array_mut().unwrap().push(json!({
                    "name": "confirm", "description": "Asks first",
                    "annotations": {"readOnlyHint": true},
                    "inputSchema": {"type": "object"}}));
                r["ttlMs"] = json!(0);
                r
            }
            "tools/call" if params["name"] == "confirm" => {
                let answered = params.get("inputResponses").is_some()
                    && params.get("requestState") == Some(&json!("st-1"));
                if answered {
                    json!({"content": [{"type": "text", "text": format!(
                        "{} {}", params["inputResponses"], params["requestState"])}]})
                } else {
                    let asks =
                        self.confirm_asks.clone().unwrap_or_else(|| {
                            json!({"ok": {"method": "elicitation/create",
                            "params": {"message": "Go on?", "requestedSchema":
                                {"type": "object", "properties": {}}}}})
                        });
                    json!({"resultType": "input_required", "requestState": "st-1",
                        "inputRequests": asks})
                }
            }
            _ => {
                let a = self.answer(&msg);
                match a.get("result") {
                    Some(r) => r.clone(),
                    None => {
                        conn.json(200, &[], &a);
                        return;
                    }
                }
            }
        };
        if result.get("resultType").is_none() {
            result["resultType"] = json!("complete");
        }
        result["_meta"] = json!({"io.modelcontextprotocol/serverInfo":
            {"name": "modern-fixture", "version": "2.0"}});
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
        self.reply(conn, &[], &answer, &[]);
    }

    fn post(&self, req: &Request, conn: &mut Conn) {
        if self.modern {
            return self.post_modern(req, conn);
        }
        let msg = req.json();
        let method = msg.get("method").and_then(Value::as_str);
        // An old HTTP+SSE server refuses every POST alike.
        if let Some(status) = self.init_status {
            conn.respond(
                status,
                &[("content-type", "text/plain")],
                b"not here",
            );
            return;
        }
        if method == Some("initialize") {
            let mut extra = vec![];
            let sid;
            if self.sessions {
                let mut st = self.state.lock().unwrap();
                sid = format!("sess-{}", st.sessions.len() + 1);
                st.sessions.push((sid.clone(), 0, false));
                extra.push(("mcp-session-id", sid.as_str()));
            }
            let answer = self.answer(&msg);
            self.reply(conn, &extra, &answer, &[]);
            return;
        }
        if !self.session_ok(req, conn) {
            return;
        }
        if msg.get("id").is_none() || method.is_none() {
            // A notification or a response to one of our requests.
            conn.empty(202);
            return;
        }
        let mut answer = self.answer(&msg);
        match method {
            Some("tools/list") if self.batch_tools_list => {
                answer = json!([answer]);
                conn.json(200, &[], &answer);
            }
            Some("tools/call") if self.resume.is_some() => {
                self.state.lock().unwrap().stash = Some(answer);
                let retry = self.resume.unwrap_or(0);
                conn.sse(&[]);
                let note = json!({"jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "data": "working"}});
                conn.write_raw(format!("retry: {retry}\n\n").as_bytes());
                conn.event(Some(RESUME_EVENT_ID), &note);
            }
            Some("tools/call") => {
                let id = msg.get("id").cloned().unwrap_or(Value::Null);
                let pre: Vec<String> = self
                    .call_preamble
                    .iter()
                    .map(|p| p.replace("{id}", &id.to_string()))
                    .collect();
                self.reply(conn, &[], &answer, &pre);
            }
            _ => self.reply(conn, &[], &answer, &[]),
        }
    }

    /// Answers with JSON or an event stream (priming event, `pre`, the
    /// server requests and their replies awaited, then the answer).
    fn reply(
        &self,
        conn: &mut Conn,
        extra: &[(&str, &str)],
        answer: &Value,
        pre: &[String],
    ) {
        let is_call = !pre.is_empty() || self.is_call_answer(answer);
        if !self.sse {
            conn.json(200, extra, answer);
            return;
        }
        conn.sse(extra);
        if self.priming {
            conn.write_raw(b"id: 1\ndata:\n\n");
        }
        for p in pre {
            conn.write_raw(p.as_bytes());
        }
        if is_call && !self.server_requests.is_empty() {
            for r in &self.server_requests {
                conn.event(None, r);
            }
            let ids: Vec<Value> =
                self.server_requests.iter().map(|r| r["id"].clone()).collect();
            conn.wait_for(Duration::from_secs(5), |log| {
                ids.iter().all(|id| {
                    log.iter().any(|r| {
                        r.method == "POST"
                            && r.is_rpc_response()
                            && r.rpc_id().as_ref() == Some(id)
                    })
                })
            });
        }
        conn.event(None, answer);
    }

    /// Whether `answer` is a `tools/call` result (it has `content`).
    fn is_call_answer(&self, answer: &Value) -> bool {
        answer.pointer("/result/content").is_some()
    }

    fn get(&self, req: &Request, conn: &mut Conn) {
        let resumable = req.header("last-event-id") == Some(RESUME_EVENT_ID)
            && self.resume.is_some();
        if !resumable {
            conn.empty(405);
            return;
        }
        if !self.session_ok(req, conn) {
            return;
        }
        let Some(answer) = self.state.lock().unwrap().stash.take() else {
            conn.empty(405);
            return;
        };
        conn.sse(&[]);
        conn.event(Some("8"), &answer);
    }
}
