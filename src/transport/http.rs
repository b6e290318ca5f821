//! The Streamable HTTP transport (MCP 2025-03-26 and later) over ureq.
//!
//! One POST per JSON-RPC message. A request's answer is either one JSON
//! body or a `text/event-stream`, read incrementally by our own SSE parser
//! so that server requests arriving before the response can be answered
//! (by POSTing the reply) while the stream stays open. The session id from
//! the initialize response is echoed on every later request, with the
//! negotiated `MCP-Protocol-Version`; a 404 on a request that carried a
//! session id re-initializes once and retries. A stream that ends after
//! events with ids but before the response is resumed with a GET and
//! `Last-Event-ID` after the server's `retry` delay.
//!
//! In the handshake era a standalone GET stream is opened once the
//! session is initialized: servers send requests that belong to no
//! request of ours there (an SDK server's `elicitation/create` from a
//! tool, for one). It is opened before the next request goes out, so
//! nothing sent there is missed. Every stream is read by a thread of its
//! own into one channel ([`pump`]), so a request waiting on its quiet POST
//! stream still sees what arrives on the GET stream; the waiting itself is
//! bounded by the request's deadline. A GET the server refuses (405) is no
//! error.
//!
//! Strictness: redirects are never followed (a 3xx is an error and no
//! second request is made); `http` connects only to loopback addresses;
//! proxies from the environment never carry loopback traffic; every body,
//! line and event is capped; every request runs under its deadline.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use serde_json::Value;
use ureq::http::Response;
use ureq::{Agent, Body};

use super::{Closed, Transport, Wire};
use crate::auth::Authorization;
use crate::config::Http;
use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::{journal, mcp, msg, sse, term, vars, www_auth};

/// Caps on what a server may send.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    /// One JSON body, or one SSE event's data.
    pub(crate) message: usize,
    /// One SSE line.
    pub(crate) line: usize,
    /// Everything read from one response.
    pub(crate) total: u64,
}

impl Limits {
    pub(crate) fn new(max_message: usize) -> Limits {
        Limits {
            message: max_message,
            line: max_message.saturating_add(1024),
            total: (max_message as u64).saturating_mul(16).max(64 << 20),
        }
    }
}

/// Resumption attempts per request (the wait between them is bounded by
/// [`sse::reconnect_delay`]).
const MAX_RESUMES: usize = 5;
/// The longest session id accepted.
const MAX_SESSION_ID: usize = 1024;
/// How long the standalone GET stream's answer is waited for.
const GET_STREAM_WAIT: Duration = Duration::from_secs(2);
/// How many items of streams that are not current are kept.
const MAX_HELD: usize = 1000;
/// How long the closing DELETE may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);

type Reader = sse::EventReader<ureq::BodyReader<'static>>;

/// Which stream a pumped item came from: a request's POST stream (by its
/// number) or the standalone GET stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Post(u64),
    Get,
}

/// What a stream's thread passes on.
enum Pumped {
    /// One `message` event's data.
    Data(String),
    /// The stream ended: what resuming it needs.
    End {
        last: String,
        retry: Duration,
        resumable: bool,
    },
    Failed(std::io::Error),
}

/// The bytes of message data read by the stream threads and not yet
/// taken (or dropped) by the transport; shared by every stream of one
/// server.
type Inflight = Arc<AtomicUsize>;

/// Reads `r` to its end on this thread, passing on each message event,
/// then how it ended. Stops early when nobody listens any more, and when
/// passing an event on would put more than `budget` bytes in flight: a
/// server that floods a stream nobody reads (a request's stream after its
/// response, the standalone stream while the operator is being asked)
/// cannot make us buffer without limit; that stream fails instead.
fn pump(
    mut r: Reader,
    source: Source,
    tx: Sender<(Source, Pumped)>,
    inflight: Inflight,
    budget: usize,
) {
    loop {
        let item = match r.next_event() {
            Ok(Some(ev)) => {
                if ev.event != "message" || ev.data.trim().is_empty() {
                    continue;
                }
                let n = ev.data.len();
                let before = inflight.fetch_add(n, Ordering::SeqCst);
                if before > 0 && before + n > budget {
                    inflight.fetch_sub(n, Ordering::SeqCst);
                    let e = std::io::Error::other(format!(
                        "more than {budget} bytes of messages unread on \
                         this stream; the stream is dropped"
                    ));
                    let _ = tx.send((source, Pumped::Failed(e)));
                    return;
                }
                Pumped::Data(ev.data)
            }
            Ok(None) => {
                let p = r.parser();
                let last = p.last_event_id().to_string();
                let resumable = p.saw_id() && !last.is_empty();
                let retry = sse::reconnect_delay(p.retry());
                let _ =
                    tx.send((source, Pumped::End { last, retry, resumable }));
                return;
            }
            Err(e) => {
                let _ = tx.send((source, Pumped::Failed(e)));
                return;
            }
        };
        if tx.send((source, item)).is_err() {
            return;
        }
    }
}

pub(crate) struct HttpTransport {
    name: String,
    target: String,
    agent: Agent,
    /// Configured headers; values are secret.
    headers: Vec<(String, String)>,
    /// What goes in `Authorization`, and step-up.
    auth: Authorization,
    session: Option<String>,
    protocol: Option<String>,
    /// The initialize request, kept to start over on a 404.
    init: Option<Value>,
    initialized: Option<Value>,
    pending: VecDeque<Value>,
    /// The POST stream of the request in flight (its number), read by a
    /// [`pump`] thread.
    stream: Option<u64>,
    /// Numbers the POST streams.
    streams: u64,
    /// What the pump threads send, and a sender to give new ones.
    rx: Receiver<(Source, Pumped)>,
    tx: Sender<(Source, Pumped)>,
    /// Bytes the stream threads passed on and nobody took yet.
    inflight: Inflight,
    /// Items of a stream that is not the current one (during a restart).
    held: VecDeque<(Source, Pumped)>,
    /// Whether the standalone GET stream was asked for.
    get_stream: bool,
    /// Id of the request whose response has not arrived yet.
    awaiting: Option<Value>,
    resumes: usize,
    /// Whether the server has answered any request of ours, in either
    /// era: the legacy-transport hint is given only when nothing did.
    answered: bool,
    /// The 2026-07-28 headers of the latest POST (a request's, or a
    /// reply's own); `None` in the handshake era (then the session id and
    /// negotiated version go out instead).
    modern: Option<Vec<(String, String)>>,
    limits: Limits,
    closed: bool,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values and the session id are secrets: never printed.
        f.debug_struct("HttpTransport")
            .field("server", &self.name)
            .field("url", &self.target)
            .field("headers", &self.headers.len())
            .finish_non_exhaustive()
    }
}

/// The configured headers of a server, expanded. An unset variable
/// refuses the launch; nothing is sent empty. (`Authorization` is
/// [`Authorization`]'s.)
pub(crate) fn headers(
    spec: &Http,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>> {
    let mut out = vec![];
    for (k, template) in &spec.headers {
        let v = vars::expand(template, lookup)
            .map_err(|e| Error::refused(format!("header '{k}': {e}")))?;
        if v.contains(['\r', '\n', '\0']) {
            return Err(Error::refused(format!(
                "header '{k}': the expanded value contains a line break"
            )));
        }
        out.push((k.to_ascii_lowercase(), v));
    }
    Ok(out)
}

impl HttpTransport {
    pub(crate) fn connect(
        name: &str,
        spec: &Http,
        headers: Vec<(String, String)>,
        auth: Authorization,
        limits: Limits,
    ) -> Result<HttpTransport> {
        let url = spec.url.clone();
        let agent = crate::net::agent_for(&url)?;
        let names: Vec<&str> = headers
            .iter()
            .map(|(k, _)| k.as_str())
            .chain(auth.header_name())
            .collect();
        journal::event(
            "server_connected",
            serde_json::json!({
                "server": name,
                "url": url.to_string(),
                "header_names": names,
            }),
        );
        msg::debug(&format!(
            "server '{name}': connecting to {url} with headers [{}]",
            names.join(", ")
        ));
        let (tx, rx) = mpsc::channel();
        Ok(HttpTransport {
            name: name.to_string(),
            target: url.to_string(),
            agent,
            headers,
            auth,
            session: None,
            protocol: None,
            init: None,
            initialized: None,
            pending: VecDeque::new(),
            stream: None,
            streams: 0,
            rx,
            tx,
            held: VecDeque::new(),
            inflight: Arc::new(AtomicUsize::new(0)),
            get_stream: false,
            awaiting: None,
            resumes: 0,
            answered: false,
            modern: None,
            limits,
            closed: false,
        })
    }

    /// The common headers of every request after initialize.
    fn add_headers<B>(
        &self,
        mut req: ureq::RequestBuilder<B>,
        method: &str,
        with_session: bool,
    ) -> ureq::RequestBuilder<B> {
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        for (k, v) in self.auth.headers(method, &self.target) {
            req = req.header(k, v);
        }
        if let Some(h) = &self.modern {
            for (k, v) in h {
                req = req.header(k.as_str(), v.as_str());
            }
            return req;
        }
        if let Some(p) = &self.protocol {
            req = req.header("mcp-protocol-version", p.as_str());
        }
        if with_session && let Some(s) = &self.session {
            req = req.header("mcp-session-id", s.as_str());
        }
        req
    }

    /// POSTs `body`. A 401 (or a 403 with `insufficient_scope`) asks the
    /// server's [`Authorization`] to renew (step-up, when enabled) and
    /// POSTs again.
    fn post(
        &mut self,
        body: &[u8],
        deadline: &Deadline,
    ) -> Result<Response<Body>> {
        let mut nonce_retried = false;
        loop {
            let resp = self.post_once(body, deadline)?;
            let status = resp.status().as_u16();
            let header =
                |n: &str| resp.headers().get(n).and_then(|v| v.to_str().ok());
            // A DPoP nonce the server asks for: once per request.
            if !nonce_retried
                && let Some(retry) = self.auth.dpop_nonce(
                    status,
                    header("www-authenticate").unwrap_or(""),
                    header("dpop-nonce"),
                    &self.target,
                )
            {
                retry?;
                nonce_retried = true;
                continue;
            }
            let header = header("www-authenticate").unwrap_or("");
            let ch = www_auth::Bearer::from_header(header);
            let scope_error =
                ch.error.as_deref() == Some("insufficient_scope");
            if !(status == 401 || (status == 403 && scope_error)) {
                return Ok(resp);
            }
            match self.auth.renew(status, ch) {
                None => return Ok(resp),
                Some(renewed) => renewed?,
            }
        }
    }

    fn post_once(
        &self,
        body: &[u8],
        deadline: &Deadline,
    ) -> Result<Response<Body>> {
        let left = deadline.remaining()?;
        let req = self
            .agent
            .post(&self.target)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        self.add_headers(req, "POST", true)
            .config()
            .timeout_global(Some(left))
            .build()
            .send(body)
            .map_err(|e| self.ureq_error(e, deadline))
    }

    fn ureq_error(&self, e: ureq::Error, deadline: &Deadline) -> Error {
        if let ureq::Error::BodyExceedsLimit(n) = e {
            return Error::server(format!(
                "the response is larger than {n} bytes (raise --max-message \
                 if this is expected)"
            ));
        }
        crate::net::error(e, &self.target, deadline)
    }

    /// Reads an error body, bounded.
    fn error_body(resp: &mut Response<Body>) -> Vec<u8> {
        resp.body_mut()
            .with_config()
            .limit(64 * 1024)
            .read_to_vec()
            .unwrap_or_default()
    }

    /// Reads a small error body for messages: at most 200 bytes, one line.
    fn snippet(resp: &mut Response<Body>) -> String {
        Self::snippet_of(&Self::error_body(resp))
    }

    fn snippet_of(body: &[u8]) -> String {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        if text.is_empty() {
            String::new()
        } else {
            format!(": {}", term::clip(&term::line(text), 200))
        }
    }

    fn media_type(resp: &Response<Body>) -> String {
        resp.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    }

    /// Turns a non-2xx status into the matching error; `body` when it was
    /// read already.
    fn status_error(
        &self,
        resp: &mut Response<Body>,
        initialize: bool,
        body: Option<&[u8]>,
    ) -> Error {
        let status = resp.status().as_u16();
        let header = |n: &str| {
            resp.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        if (300..400).contains(&status) {
            let to = header("location");
            return Error::server(format!(
                "HTTP {status} redirect to '{}' refused: rivumi-mcp never \
                 follows redirects; configure the final URL",
                term::clip(&term::line(&to), 200)
            ));
        }
        let challenges = www_auth::parse(&header("www-authenticate"));
        let scope_error = challenges
            .iter()
            .any(|c| c.param("error") == Some("insufficient_scope"));
        if status == 401 || (status == 403 && scope_error) {
            let what = if status == 401 {
                "authentication required"
            } else {
                "insufficient scope"
            };
            let detail = if challenges.is_empty() {
                String::new()
            } else {
                format!("; challenge: {}", www_auth::describe(&challenges))
            };
            let hint = self.auth.refused_hint();
            return Error::new(
                Kind::Auth,
                format!("{what} (HTTP {status}){detail}; {hint}"),
            );
        }
        // A web page, not an MCP endpoint: say so, without the page.
        if status == 404
            && !self.answered
            && Self::media_type(resp) == "text/html"
        {
            return Error::server(
                "HTTP 404: no MCP endpoint at this URL (check the path, \
                 often /mcp)",
            )
            .with_http_status(status);
        }
        let body = match body {
            Some(b) => Self::snippet_of(b),
            None => Self::snippet(resp),
        };
        if initialize && !self.answered && matches!(status, 400 | 404 | 405) {
            return Error::server(format!(
                "HTTP {status} to initialize{body}; the server may only speak \
                 the deprecated HTTP+SSE transport (2024-11-05), which \
                 rivumi-mcp does not support"
            ))
            .with_http_status(status);
        }
        Error::server(format!("HTTP {status}{body}")).with_http_status(status)
    }

    /// Keeps the session id from the initialize response.
    fn take_session(&mut self, resp: &Response<Body>) -> Result<()> {
        let Some(v) = resp.headers().get("mcp-session-id") else {
            return Ok(());
        };
        let bytes = v.as_bytes();
        let ok = !bytes.is_empty()
            && bytes.len() <= MAX_SESSION_ID
            && bytes.iter().all(|b| (0x21..=0x7e).contains(b));
        if !ok {
            return Err(Error::server(
                "the server sent an invalid Mcp-Session-Id (visible ASCII \
                 only, at most 1024 bytes)",
            ));
        }
        self.session = Some(String::from_utf8_lossy(bytes).into_owned());
        Ok(())
    }

    /// POSTs a request and sets up where its answer will be read from.
    fn send_request(
        &mut self,
        msg: &Value,
        deadline: &Deadline,
    ) -> Result<()> {
        let body = encode(msg)?;
        let initialize = mcp::is_initialize(msg);
        let mut resp = self.post(&body, deadline)?;
        let status = resp.status().as_u16();
        if status == 404 && self.session.is_some() && !initialize {
            msg::debug(&format!(
                "server '{}': session expired (404); starting a new one",
                self.name
            ));
            self.reinitialize(deadline)?;
            resp = self.post(&body, deadline)?;
            if resp.status().as_u16() == 404 {
                return Err(Error::server(
                    "HTTP 404 again after starting a new session",
                ));
            }
        }
        self.accept_answer(resp, initialize, deadline)
    }

    /// Reads a request's HTTP answer: JSON now, or an SSE stream to read
    /// from in `recv`.
    fn accept_answer(
        &mut self,
        mut resp: Response<Body>,
        initialize: bool,
        deadline: &Deadline,
    ) -> Result<()> {
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            return self.error_answer(resp, initialize);
        }
        self.answered = true;
        if initialize {
            self.take_session(&resp)?;
        }
        let media = Self::media_type(&resp);
        match media.as_str() {
            "application/json" => {
                let bytes = resp
                    .body_mut()
                    .with_config()
                    .limit(self.limits.message as u64)
                    .read_to_vec()
                    .map_err(|e| self.ureq_error(e, deadline))?;
                let v: Value = mcp::parse_message(&bytes).map_err(|e| {
                    Error::server(format!("the JSON response is invalid: {e}"))
                })?;
                self.pending.push_back(v);
                Ok(())
            }
            "text/event-stream" => {
                self.follow(resp);
                Ok(())
            }
            _ if status == 202 || status == 204 => Ok(()),
            "" => Ok(()),
            other => {
                let body = Self::snippet(&mut resp);
                Err(Error::server(format!(
                    "unexpected content type '{}' (HTTP {status}){body}",
                    term::clip(&term::line(other), 100)
                )))
            }
        }
    }

    /// A non-2xx answer to a request. A JSON-RPC error that answers the
    /// request (its id) is the server's answer whatever the status (a
    /// 2026-07-28 server says `-32022` with a 400, an unknown method with a
    /// 404) and goes to the session; anything else is an HTTP error.
    fn error_answer(
        &mut self,
        mut resp: Response<Body>,
        initialize: bool,
    ) -> Result<()> {
        let status = resp.status().as_u16();
        let refused =
            matches!(status, 401 | 403) || (300..400).contains(&status);
        if refused || Self::media_type(&resp) != "application/json" {
            return Err(self.status_error(&mut resp, initialize, None));
        }
        let body = Self::error_body(&mut resp);
        if let Ok(v) = serde_json::from_slice::<Value>(&body)
            && v.get("error").is_some_and(Value::is_object)
            && v.get("result").is_none()
            && v.get("id").is_some()
            && v.get("id") == self.awaiting.as_ref()
        {
            self.answered = true;
            self.pending.push_back(v);
            return Ok(());
        }
        Err(self.status_error(&mut resp, initialize, Some(&body)))
    }

    /// The most bytes of unread message data the stream threads may hold:
    /// a few of the largest messages allowed.
    fn budget(&self) -> usize {
        self.limits.message.saturating_mul(4).max(32 << 20)
    }

    /// Gives back the in-flight bytes of an item that is dropped unread.
    fn release(&self, item: &Pumped) {
        if let Pumped::Data(d) = item {
            self.inflight.fetch_sub(d.len(), Ordering::SeqCst);
        }
    }

    /// Makes `resp`'s event stream the current POST stream, read by a
    /// thread of its own.
    fn follow(&mut self, resp: Response<Body>) {
        self.streams += 1;
        let source = Source::Post(self.streams);
        self.stream = Some(self.streams);
        let reader = self.reader(resp);
        let (tx, inflight, budget) =
            (self.tx.clone(), Arc::clone(&self.inflight), self.budget());
        std::thread::spawn(move || pump(reader, source, tx, inflight, budget));
    }

    /// Opens the standalone GET stream (once per session, handshake era)
    /// before the next request goes out, so that nothing the server sends
    /// there is missed; waits for the answer's head at most
    /// [`GET_STREAM_WAIT`], then a thread reads it. Refused or too slow:
    /// no standalone stream, which is no error.
    fn open_get_stream(&mut self, deadline: &Deadline) {
        if self.get_stream || self.session.is_none() || self.modern.is_some() {
            return;
        }
        self.get_stream = true;
        let wait =
            deadline.remaining().unwrap_or_default().min(GET_STREAM_WAIT);
        let req =
            self.agent.get(&self.target).header("accept", "text/event-stream");
        let resp = self
            .add_headers(req, "GET", true)
            .config()
            .timeout_global(None)
            .timeout_recv_response(Some(wait))
            .build()
            .call();
        let why = match resp {
            Ok(r)
                if r.status().as_u16() == 200
                    && Self::media_type(&r) == "text/event-stream" =>
            {
                let (reader, tx) = (self.reader(r), self.tx.clone());
                let (inflight, budget) =
                    (Arc::clone(&self.inflight), self.budget());
                std::thread::spawn(move || {
                    pump(reader, Source::Get, tx, inflight, budget)
                });
                return;
            }
            Ok(r) => format!("HTTP {}", r.status().as_u16()),
            Err(e) => e.to_string(),
        };
        msg::debug(&format!(
            "server '{}': no standalone stream ({})",
            self.name,
            term::clip(&term::line(&why), 120)
        ));
    }

    fn reader(&self, resp: Response<Body>) -> Reader {
        let body = resp
            .into_body()
            .into_with_config()
            .limit(self.limits.total)
            .reader();
        sse::EventReader::new(
            body,
            sse::Limits {
                max_line: self.limits.line,
                max_event: self.limits.message,
            },
        )
    }

    /// Starts over after a 404: initialize without the session id, then
    /// `notifications/initialized`.
    fn reinitialize(&mut self, deadline: &Deadline) -> Result<()> {
        let Some(init) = self.init.clone() else {
            return Err(Error::server("HTTP 404 before initialize"));
        };
        self.session = None;
        self.protocol = None;
        let saved_stream = self.stream.take();
        let saved_pending = std::mem::take(&mut self.pending);
        let body = encode(&init)?;
        let resp = self.post(&body, deadline)?;
        self.accept_answer(resp, true, deadline)?;
        let want = init.get("id").cloned().unwrap_or(Value::Null);
        loop {
            let m = self.next_message(deadline)?;
            if m.get("id") == Some(&want) && m.get("method").is_none() {
                if let Some(v) = m.pointer("/result/protocolVersion") {
                    self.protocol = v.as_str().map(str::to_string);
                }
                break;
            }
        }
        self.stream = saved_stream;
        self.pending = saved_pending;
        if let Some(n) = self.initialized.clone() {
            self.send_other(&n, deadline)?;
            // The new session gets a standalone stream of its own.
            self.get_stream = false;
            self.open_get_stream(deadline);
        }
        Ok(())
    }

    /// POSTs a notification or response; expects 202 (any 2xx is fine).
    fn send_other(&mut self, msg: &Value, deadline: &Deadline) -> Result<()> {
        let body = encode(msg)?;
        let mut resp = self.post(&body, deadline)?;
        let mut status = resp.status().as_u16();
        let restartable = !mcp::is_initialized(msg);
        if status == 404 && self.session.is_some() && restartable {
            // The session ended under us: start a new one and send the
            // message again, as for a request.
            self.reinitialize(deadline)?;
            resp = self.post(&body, deadline)?;
            status = resp.status().as_u16();
        }

        if !(200..300).contains(&status) {
            return Err(self.status_error(&mut resp, false, None));
        }
        let _ = resp.body_mut().with_config().limit(64 * 1024).read_to_vec();
        Ok(())
    }

    /// The next message from the pending queue, the current POST stream
    /// or the standalone GET stream, resuming the POST stream when it ends
    /// early.
    fn next_message(&mut self, deadline: &Deadline) -> Result<Value> {
        loop {
            if let Some(v) = self.pending.pop_front() {
                return Ok(v);
            }
            let Some(current) = self.stream else {
                return Err(Error::server(
                    "the server accepted the request but sent no response",
                ));
            };
            let mine =
                |s: &Source| *s == Source::Get || *s == Source::Post(current);
            let held = self.held.iter().position(|(s, _)| mine(s));
            let (source, item) = match held {
                Some(i) => self.held.remove(i).expect("found above"),
                None => match self.rx.recv_timeout(deadline.remaining()?) {
                    Ok(got) => got,
                    Err(RecvTimeoutError::Timeout) => {
                        return Err(deadline.error());
                    }
                    Err(RecvTimeoutError::Disconnected) => {
                        unreachable!("the transport holds a sender")
                    }
                },
            };
            if !mine(&source) {
                // Another POST stream's: kept for when it is current again
                // (a restart sets the request's stream aside), bounded.
                if self.held.len() >= MAX_HELD
                    && let Some((_, old)) = self.held.pop_front()
                {
                    self.release(&old);
                }
                self.held.push_back((source, item));
                continue;
            }
            match (source, item) {
                (_, Pumped::Data(data)) => {
                    self.inflight.fetch_sub(data.len(), Ordering::SeqCst);
                    return mcp::parse_message(data.as_bytes()).map_err(|e| {
                        Error::server(format!(
                            "an SSE event holds invalid JSON: {e}"
                        ))
                    });
                }
                (Source::Get, Pumped::End { .. } | Pumped::Failed(_)) => {
                    msg::debug(&format!(
                        "server '{}': the standalone stream ended",
                        self.name
                    ));
                }
                (Source::Post(_), Pumped::Failed(e)) => {
                    self.stream = None;
                    return Err(self.read_error(e, deadline));
                }
                (Source::Post(_), Pumped::End { last, retry, resumable }) => {
                    self.stream = None;
                    if self.awaiting.is_none() {
                        return Err(Error::server("the stream ended"));
                    }
                    if self.modern.is_some() {
                        // 2026-07-28 has no resumption: a broken stream
                        // is a failed request.
                        return Err(Error::server(
                            "the event stream ended before the response",
                        ));
                    }
                    if !resumable {
                        return Err(Error::server(
                            "the event stream ended before the response (and \
                             cannot be resumed: no event ids)",
                        ));
                    }
                    self.resume(&last, retry, deadline)?;
                }
            }
        }
    }

    fn read_error(&self, e: std::io::Error, deadline: &Deadline) -> Error {
        if let Some(s) =
            e.get_ref().and_then(|x| x.downcast_ref::<sse::Error>())
        {
            return Error::server(format!("event stream: {s}"));
        }
        self.ureq_error(ureq::Error::from(e), deadline)
    }

    /// Waits `retry` (already bounded), then GETs the stream with
    /// `Last-Event-ID`.
    fn resume(
        &mut self,
        last: &str,
        retry: Duration,
        deadline: &Deadline,
    ) -> Result<()> {
        if self.resumes >= MAX_RESUMES {
            return Err(Error::server(format!(
                "the event stream ended {MAX_RESUMES} times before the \
                 response"
            )));
        }
        self.resumes += 1;
        let wait = retry;
        if wait >= deadline.remaining()? {
            return Err(deadline.error());
        }
        std::thread::sleep(wait);
        msg::debug(&format!(
            "server '{}': resuming the event stream after {}ms",
            self.name,
            wait.as_millis()
        ));
        let left = deadline.remaining()?;
        let req = self
            .agent
            .get(&self.target)
            .header("accept", "text/event-stream")
            .header("last-event-id", last);
        let mut resp = self
            .add_headers(req, "GET", true)
            .config()
            .timeout_global(Some(left))
            .build()
            .call()
            .map_err(|e| self.ureq_error(e, deadline))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(self.status_error(&mut resp, false, None).context(
                "resuming the event stream (GET with Last-Event-ID)",
            ));
        }
        if Self::media_type(&resp) != "text/event-stream" {
            return Err(Error::server(
                "resuming the event stream: the answer is not \
                 text/event-stream",
            ));
        }
        self.follow(resp);
        Ok(())
    }

    /// Notes the protocol version and the arrival of the awaited response.
    fn observe(&mut self, m: &Value) {
        let items: Vec<&Value> = match m {
            Value::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        for it in items {
            if it.get("method").is_some() {
                continue;
            }
            let id = it.get("id");
            if id.is_some() && id == self.awaiting.as_ref() {
                self.awaiting = None;
                let init_id = self.init.as_ref().and_then(|i| i.get("id"));
                if id == init_id {
                    self.protocol = it
                        .pointer("/result/protocolVersion")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
            }
        }
    }
}

fn encode(m: &Value) -> Result<Vec<u8>> {
    serde_json::to_vec(m)
        .map_err(|e| Error::server(format!("cannot encode: {e}")))
}

impl HttpTransport {
    /// Sends a request, or a notification or reply.
    fn send_message(
        &mut self,
        msg: &Value,
        deadline: &Deadline,
    ) -> Result<()> {
        let is_request =
            msg.get("method").is_some() && msg.get("id").is_some();
        if is_request {
            self.stream = None;
            for (_, old) in std::mem::take(&mut self.held) {
                self.release(&old);
            }
            self.pending.clear();
            self.resumes = 0;
            self.awaiting = msg.get("id").cloned();
            self.send_request(msg, deadline)
        } else if let Some(request) = &self.modern {
            // A reply or notification in the 2026-07-28 era: its own
            // version and method, never the name or mirrored parameters of
            // the request in flight (whose POST has gone out already).
            let mut own: Vec<(String, String)> = request
                .iter()
                .filter(|(k, _)| {
                    k.eq_ignore_ascii_case("mcp-protocol-version")
                })
                .cloned()
                .collect();
            own.extend(
                mcp::method_of(msg)
                    .map(|m| ("Mcp-Method".to_string(), m.to_string())),
            );
            self.modern = Some(own);
            self.send_other(msg, deadline)
        } else {
            self.send_other(msg, deadline)
        }
    }
}

impl Transport for HttpTransport {
    fn wire(&self) -> Wire {
        Wire::Http
    }

    fn send(&mut self, msg: &Value, deadline: &Deadline) -> Result<()> {
        if mcp::is_initialize(msg) {
            self.init = Some(msg.clone());
            self.modern = None;
        } else if mcp::is_initialized(msg) {
            self.initialized = Some(msg.clone());
            self.send_message(msg, deadline)?;
            self.open_get_stream(deadline);
            return Ok(());
        }
        self.send_message(msg, deadline)
    }

    fn send_modern(
        &mut self,
        msg: &Value,
        headers: &[(String, String)],
        deadline: &Deadline,
    ) -> Result<()> {
        self.modern = Some(headers.to_vec());
        self.send_message(msg, deadline)
    }

    fn canceller(&self) -> Option<super::Canceller> {
        // 2026-07-28 over HTTP: closing the stream is the cancellation.
        if self.modern.is_some() {
            return None;
        }
        let req = self
            .agent
            .post(&self.target)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        let req = self
            .add_headers(req, "POST", true)
            .config()
            .timeout_global(Some(CLOSE_TIMEOUT))
            .build();
        let req = std::sync::Mutex::new(Some(req));
        Some(std::sync::Arc::new(move |msg: &Value| {
            let taken = req.lock().ok().and_then(|mut r| r.take());
            if let (Some(r), Ok(body)) = (taken, encode(msg)) {
                let _ = r.send(&body[..]);
            }
        }))
    }

    fn recv(&mut self, deadline: &Deadline) -> Result<Value> {
        deadline.remaining()?;
        let m = self.next_message(deadline)?;
        self.observe(&m);
        Ok(m)
    }

    fn sender(&self) -> Option<super::Canceller> {
        let Some(modern) = &self.modern else {
            return self.canceller();
        };
        // 2026-07-28: the request's own standard headers, computed from
        // it when it is sent, beside the configured ones and the
        // credential.
        let version = modern
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("MCP-Protocol-Version"))
            .map(|(_, v)| v.clone())?;
        let mut req = self
            .agent
            .post(&self.target)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        for (k, v) in self.auth.headers("POST", &self.target) {
            req = req.header(k, v);
        }
        let req = std::sync::Mutex::new(Some(req));
        Some(std::sync::Arc::new(move |msg: &Value| {
            let Some(mut r) = req.lock().ok().and_then(|mut r| r.take())
            else {
                return;
            };
            let method = msg.get("method").and_then(Value::as_str);
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            if let Some(m) = method {
                for (k, v) in mcp::headers::standard(&version, m, &params) {
                    r = r.header(k, v);
                }
            }
            if let Ok(body) = encode(msg) {
                let _ = r
                    .config()
                    .timeout_global(Some(CLOSE_TIMEOUT))
                    .build()
                    .send(&body[..]);
            }
        }))
    }

    fn detach(&mut self) -> Option<String> {
        // Without its id, close sends no DELETE: the session lives on.
        self.session.take()
    }

    fn resume(&mut self, session: &str, protocol: &str) {
        self.session = Some(session.to_string());
        self.protocol = Some(protocol.to_string());
    }

    fn close(&mut self) -> Closed {
        if self.closed {
            return Closed::Gone;
        }
        self.closed = true;
        self.stream = None;
        journal::event(
            "server_closed",
            serde_json::json!({"server": self.name, "how": "delete"}),
        );
        let Some(_) = &self.session else { return Closed::Eof };

        let req = self.agent.delete(&self.target);
        let r = self
            .add_headers(req, "DELETE", true)
            .config()
            .timeout_global(Some(CLOSE_TIMEOUT))
            .build()
            .call();
        match r {
            Ok(resp) => msg::debug(&format!(
                "server '{}': DELETE session: HTTP {}",
                self.name,
                resp.status().as_u16()
            )),
            Err(e) => msg::debug(&format!(
                "server '{}': DELETE session failed: {e}",
                self.name
            )),
        }
        Closed::Eof
    }
}

impl Drop for HttpTransport {
    fn drop(&mut self) {
        self.close();
    }
}
