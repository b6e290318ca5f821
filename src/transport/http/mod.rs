//! The Streamable HTTP transport (MCP 2025-03-26 and later) over ureq: the
//! I/O loop that carries out what [`streamable`] decides.
//!
//! One POST per JSON-RPC message. [`streamable::Session`] and
//! [`streamable::Call`] hold every session rule (the session id, the
//! era's headers, starting over after a 404, the standalone GET stream,
//! resuming a stream with `Last-Event-ID` after the server's bounded
//! `retry`, what an answer means); this module sends, reads and waits, and
//! hands them what came back. A request's answer is either one JSON body
//! or a `text/event-stream`, read incrementally by our own SSE parser so
//! that server requests arriving before the response can be answered
//! while the stream stays open. Every stream is read by a thread of its
//! own into one channel ([`streams`]), so a request waiting on its quiet
//! POST stream still sees what arrives on the GET stream; the waiting is
//! bounded by the request's deadline. The words for what went wrong are
//! [`status`]'s; credentials are composed around each request by
//! [`auth::authorized`].
//!
//! Strictness: redirects are never followed (a 3xx is an error and no
//! second request is made); `http` connects only to loopback addresses;
//! proxies from the environment never carry loopback traffic; every body,
//! line and event is capped; every request runs under its deadline.

mod auth;
mod status;
mod streams;

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::Value;
use ureq::http::Response;
use ureq::{Agent, Body, RequestBuilder};

use self::streams::{Next, Reader, Streams};
use super::{Closed, Transport, Wire};
use crate::auth::Authorization;
use crate::config::Http;
use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::streamable::{self, Call, Failure, Head, Posted, Session, state};
use crate::{journal, mcp, msg, sse, term, vars};

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

/// How long the standalone GET stream's answer is waited for.
const GET_STREAM_WAIT: Duration = Duration::from_secs(2);
/// How long the closing DELETE may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(2);
/// Before closing, what the standalone stream delivers is still read
/// until it has been quiet this long ([`HttpTransport::drain`]) ...
const DRAIN_QUIET: Duration = Duration::from_millis(50);
/// ... but no longer than this in all, and at most this many messages.
const DRAIN_MAX: Duration = Duration::from_millis(250);
const DRAIN_MESSAGES: usize = 100;
/// The most of the old transport's first events read when telling it
/// apart, and the longest line or event.
const OLD_EVENTS: usize = 4;
const OLD_LIMIT: usize = 4096;

/// Where requests go and what every one of them carries.
struct Endpoint {
    name: String,
    target: String,
    agent: Agent,
    /// Configured headers; values are secret.
    headers: Vec<(String, String)>,
    limits: Limits,
}

impl Endpoint {
    /// `req` with the configured headers, then the credentials' `auth`
    /// and the era's `era` headers.
    fn with<B>(
        &self,
        mut req: RequestBuilder<B>,
        auth: Vec<(&'static str, String)>,
        era: &[(String, String)],
    ) -> RequestBuilder<B> {
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        for (k, v) in auth {
            req = req.header(k, v);
        }
        for (k, v) in era {
            req = req.header(k.as_str(), v.as_str());
        }
        req
    }

    /// One POST of `body`, within the deadline.
    fn post(
        &self,
        body: &[u8],
        auth: Vec<(&'static str, String)>,
        era: &[(String, String)],
        deadline: &Deadline,
    ) -> Result<Response<Body>> {
        let left = deadline.remaining()?;
        self.post_request(auth, era)
            .config()
            .timeout_global(Some(left))
            .build()
            .send(body)
            .map_err(|e| self.ureq_error(e, deadline))
    }

    /// A POST with its own headers, the credentials' and the era's.
    fn post_request(
        &self,
        auth: Vec<(&'static str, String)>,
        era: &[(String, String)],
    ) -> RequestBuilder<ureq::typestate::WithBody> {
        let mut req = self.agent.post(&self.target);
        for (k, v) in streamable::POST_HEADERS {
            req = req.header(k, v);
        }
        self.with(req, auth, era)
    }

    fn ureq_error(&self, e: ureq::Error, deadline: &Deadline) -> Error {
        status::ureq_error(e, &self.target, deadline)
    }

    /// An event-stream reader over `resp`'s body, within the limits.
    fn reader(&self, resp: Response<Body>, limits: sse::Limits) -> Reader {
        let body = resp
            .into_body()
            .into_with_config()
            .limit(self.limits.total)
            .reader();
        sse::EventReader::new(body, limits)
    }

    fn message_reader(&self, resp: Response<Body>) -> Reader {
        let limits = sse::Limits {
            max_line: self.limits.line,
            max_event: self.limits.message,
        };
        self.reader(resp, limits)
    }
}

pub(crate) struct HttpTransport {
    endpoint: Endpoint,
    /// What goes in `Authorization`, and step-up: composed around each
    /// request ([`auth::authorized`]).
    auth: Authorization,
    /// The session rules' state.
    session: Session,
    streams: Streams,
    /// Messages read and not yet taken.
    pending: VecDeque<Value>,
    /// Whether the message last returned came on the stream (or in the
    /// JSON answer) of the request in flight, not the standalone stream.
    last_on_request: bool,
    closed: bool,
}

impl std::fmt::Debug for HttpTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values and the session id are secrets: never printed.
        f.debug_struct("HttpTransport")
            .field("server", &self.endpoint.name)
            .field("url", &self.endpoint.target)
            .field("headers", &self.endpoint.headers.len())
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

/// How long a GET's answer is waited for: [`GET_STREAM_WAIT`], within
/// the deadline.
fn get_wait(deadline: &Deadline) -> Duration {
    deadline.remaining().unwrap_or_default().min(GET_STREAM_WAIT)
}

fn encode(m: &Value) -> Result<Vec<u8>> {
    serde_json::to_vec(m)
        .map_err(|e| Error::server(format!("cannot encode: {e}")))
}

impl HttpTransport {
    /// Connects to `spec`'s URL with `headers` and `auth`, within
    /// `limits`, through `proxy` (`net::env_proxy_for`, decided by the
    /// invocation) or directly.
    pub(crate) fn connect(
        name: &str,
        spec: &Http,
        headers: Vec<(String, String)>,
        auth: Authorization,
        limits: Limits,
        proxy: Option<&str>,
    ) -> Result<HttpTransport> {
        let url = spec.url.clone();
        let agent = crate::net::agent_via(&url, proxy)?;
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
        Ok(HttpTransport {
            endpoint: Endpoint {
                name: name.to_string(),
                target: url.to_string(),
                agent,
                headers,
                limits,
            },
            auth,
            session: Session::new(),
            streams: Streams::new(limits.message),
            pending: VecDeque::new(),
            last_on_request: false,
            closed: false,
        })
    }

    /// The error a failure is.
    fn failed(&self, f: Failure, body: &[u8]) -> Error {
        status::error(f, body, &|| self.auth.refused_hint())
    }

    /// The error a failure read from `resp` is (its body read when the
    /// failure shows it).
    fn failed_with(&self, f: Failure, resp: &mut Response<Body>) -> Error {
        let body =
            if f.shows_body() { status::error_body(resp) } else { vec![] };
        self.failed(f, &body)
    }

    /// A GET asking for an event stream, with the credentials and the
    /// era's headers (`with_session`: the session id too).
    fn get_stream(
        &self,
        with_session: bool,
    ) -> RequestBuilder<ureq::typestate::WithoutBody> {
        let target = &self.endpoint.target;
        let mut req = self.endpoint.agent.get(target);
        for (k, v) in streamable::STREAM_HEADERS {
            req = req.header(k, v);
        }
        let auth = self.auth.headers("GET", target);
        self.endpoint.with(req, auth, &self.session.headers(with_session))
    }

    /// POSTs `body` with the session's headers, credentials composed
    /// around it.
    fn post(
        &mut self,
        body: &[u8],
        deadline: &Deadline,
    ) -> Result<Response<Body>> {
        let (endpoint, session) = (&self.endpoint, &self.session);
        let target = endpoint.target.clone();
        auth::authorized(&mut self.auth, "POST", &target, |auth| {
            endpoint.post(body, auth, &session.headers(true), deadline)
        })
    }

    /// Sends a message, as `session` said, and carries out what its
    /// answers mean: the loop of one message.
    fn send_with(
        &mut self,
        msg: &Value,
        modern: Option<&[(String, String)]>,
        deadline: &Deadline,
    ) -> Result<()> {
        let call = self.session.send(msg, modern);
        if call.is_request() {
            self.streams.clear();
            self.pending.clear();
        }
        let opens = call.opens_standalone();
        self.carry(call, &encode(msg)?, deadline)?;
        if opens {
            self.open_standalone(deadline);
        }
        Ok(())
    }

    fn carry(
        &mut self,
        mut call: Call<state::Post>,
        body: &[u8],
        deadline: &Deadline,
    ) -> Result<()> {
        loop {
            let mut resp = self.post(body, deadline)?;
            let head = status::head(&resp);
            match call.answered(&mut self.session, &head) {
                Posted::Restart(again) => {
                    if again.is_request() {
                        msg::debug(&format!(
                            "server '{}': session expired (404); starting \
                             a new one",
                            self.endpoint.name
                        ));
                    }
                    self.restart(deadline)?;
                    call = again;
                }
                Posted::Json(read) => {
                    let limit = self.endpoint.limits.message as u64;
                    let bytes = resp
                        .body_mut()
                        .with_config()
                        .limit(limit)
                        .read_to_vec()
                        .map_err(|e| self.endpoint.ureq_error(e, deadline))?;
                    let budget = super::tree_budget(limit as usize);
                    if mcp::size::parsed_size(&bytes) > budget {
                        return Err(super::too_large(&bytes, budget));
                    }
                    let v = read
                        .body(&bytes, budget)
                        .map_err(|f| self.failed(f, &[]))?;
                    self.pending.push_back(v);
                    return Ok(());
                }
                Posted::Stream(streaming) => {
                    let reader = self.endpoint.message_reader(resp);
                    self.streams.follow(reader, streaming);
                    return Ok(());
                }
                Posted::ErrorBody(answer) => {
                    let bytes = status::error_body(&mut resp);
                    return match answer.body(&mut self.session, &bytes) {
                        Ok(v) => {
                            self.pending.push_back(v);
                            Ok(())
                        }
                        Err(refused) => {
                            let f = self.refusal(refused, &head, deadline);
                            Err(self.failed(f, &bytes))
                        }
                    };
                }
                Posted::Refused(refused) => {
                    let f = self.refusal(refused, &head, deadline);
                    return Err(self.failed_with(f, &mut resp));
                }
                Posted::Nothing => return Ok(()),
                Posted::Done => {
                    status::discard(&mut resp);
                    return Ok(());
                }
                Posted::Failed(f) => {
                    return Err(self.failed_with(f, &mut resp));
                }
            }
        }
    }

    /// What a refused POST is, once the URL was looked at for the old
    /// HTTP+SSE transport when the session wants that.
    fn refusal(
        &mut self,
        refused: Call<state::Refused>,
        head: &Head,
        deadline: &Deadline,
    ) -> Failure {
        if self.session.looks_for_old_transport(&refused) {
            let found = self.look_for_old_transport(deadline);
            self.session.looked_for_old_transport(
                found.as_ref().map(|endpoint| endpoint.as_deref()),
            );
        }
        refused.failure(&self.session, head)
    }

    /// GETs the URL as the old HTTP+SSE transport's client would, within
    /// [`GET_STREAM_WAIT`]: `None` when it does not answer an event
    /// stream; else the data of its `endpoint` event, when one of the
    /// first few events is.
    fn look_for_old_transport(
        &self,
        deadline: &Deadline,
    ) -> Option<Option<String>> {
        let resp = self
            .get_stream(false)
            .config()
            .timeout_global(Some(get_wait(deadline)))
            .build()
            .call()
            .ok()?;
        if !streamable::streams(&status::head(&resp)) {
            return None;
        }
        let limits = sse::Limits { max_line: OLD_LIMIT, max_event: OLD_LIMIT };
        let mut r = self.endpoint.reader(resp, limits);
        for _ in 0..OLD_EVENTS {
            match r.next_event() {
                Ok(Some(ev)) if ev.event == streamable::OLD_ENDPOINT_EVENT => {
                    return Some(Some(ev.data));
                }
                Ok(Some(_)) => {}
                _ => break,
            }
        }
        Some(None)
    }

    /// Opens the standalone GET stream when the session wants it (once
    /// per session, handshake era), before the next request goes out, so
    /// that nothing the server sends there is missed; waits for the
    /// answer's head at most [`GET_STREAM_WAIT`], then a thread reads it.
    /// Refused or too slow: no standalone stream, which is no error.
    fn open_standalone(&mut self, deadline: &Deadline) {
        if !self.session.wants_standalone() {
            return;
        }
        let resp = self
            .get_stream(true)
            .config()
            .timeout_global(None)
            .timeout_recv_response(Some(get_wait(deadline)))
            .build()
            .call();
        let why = match resp {
            Ok(r) => {
                let head = status::head(&r);
                if self.session.standalone_answered(Some(&head)) {
                    let reader = self.endpoint.message_reader(r);
                    self.streams.standalone(reader);
                    return;
                }
                format!("HTTP {}", head.status)
            }
            Err(e) => {
                self.session.standalone_answered(None);
                e.to_string()
            }
        };
        msg::debug(&format!(
            "server '{}': no standalone stream ({})",
            self.endpoint.name,
            term::clip(&term::line(&why), 120)
        ));
    }

    /// Starts over after a 404: initialize without the session id, then
    /// `notifications/initialized`; the request's stream and the messages
    /// read are set aside meanwhile.
    fn restart(&mut self, deadline: &Deadline) -> Result<()> {
        let (init, call) =
            self.session.restart().map_err(|f| self.failed(f, &[]))?;
        let aside = self.streams.set_aside();
        let saved = std::mem::take(&mut self.pending);
        self.carry(call, &encode(&init)?, deadline)?;
        loop {
            let m = self.next_message(deadline)?;
            if self.session.restart_answer(&m) {
                break;
            }
        }
        self.streams.restore(aside);
        self.pending = saved;
        if let Some(n) = self.session.initialized_again() {
            let call = self.session.send(&n, None);
            self.carry(call, &encode(&n)?, deadline)?;
            self.open_standalone(deadline);
        }
        Ok(())
    }

    /// The next message: read already, or from the current POST stream
    /// or the standalone GET stream, resuming the POST stream when the
    /// session says so.
    fn next_message(&mut self, deadline: &Deadline) -> Result<Value> {
        self.next_message_until(deadline, None)
            .map(|m| m.expect("no stop, no None"))
    }

    /// [`next_message`](Self::next_message), or `None` once `stop` holds
    /// (looked at every [`STOP_POLL`](super::STOP_POLL) while the streams
    /// are quiet).
    fn next_message_until(
        &mut self,
        deadline: &Deadline,
        stop: Option<&dyn Fn() -> bool>,
    ) -> Result<Option<Value>> {
        let slice = stop.map(|_| super::STOP_POLL);
        loop {
            if let Some(v) = self.pending.pop_front() {
                self.last_on_request = true;
                return Ok(Some(v));
            }
            if stop.is_some_and(|f| f()) {
                return Ok(None);
            }
            match self.streams.next(deadline, slice)? {
                Next::Quiet => {}
                Next::NoStream => {
                    return Err(self.failed(self.session.no_response(), &[]));
                }
                Next::Message(data, standalone) => {
                    self.last_on_request = !standalone;
                    let budget =
                        super::tree_budget(self.endpoint.limits.message);
                    return match mcp::parse_message(data.as_bytes(), budget) {
                        Ok(v) => Ok(Some(v)),
                        Err(mcp::Unparsed::Json(e)) => Err(Error::server(
                            format!("an SSE event holds invalid JSON: {e}"),
                        )),
                        Err(_) => {
                            Err(super::too_large(data.as_bytes(), budget))
                        }
                    };
                }
                Next::StandaloneEnded => {
                    self.session.standalone_ended();
                    msg::debug(&format!(
                        "server '{}': the standalone stream ended",
                        self.endpoint.name
                    ));
                }
                // A given-up request's stream may end (or break) without
                // its answer: that is the server honouring the
                // cancellation, not a failure of the session.
                Next::Broke(..) | Next::Ended(..)
                    if stop.is_some_and(|f| f()) =>
                {
                    return Ok(None);
                }
                Next::Broke(e, call) => {
                    let e =
                        status::read_error(e, &self.endpoint.target, deadline);
                    return Err(if e.kind() == Kind::Server {
                        e.with_http_status(call.status())
                    } else {
                        e
                    });
                }
                Next::Ended(end, call) => {
                    match call.ended(&self.session, end) {
                        Ok(resuming) => self.resume(resuming, deadline)?,
                        Err(f) => return Err(self.failed(f, &[])),
                    }
                }
            }
        }
    }

    /// Waits the call's `retry` (already bounded), then GETs the stream
    /// with `Last-Event-ID`.
    fn resume(
        &mut self,
        call: Call<state::Resuming>,
        deadline: &Deadline,
    ) -> Result<()> {
        let wait = call.wait();
        if wait >= deadline.remaining()? {
            return Err(deadline.error());
        }
        std::thread::sleep(wait);
        msg::debug(&format!(
            "server '{}': resuming the event stream after {}ms",
            self.endpoint.name,
            wait.as_millis()
        ));
        let left = deadline.remaining()?;
        let mut req = self.get_stream(true);
        for (k, v) in call.headers() {
            req = req.header(k, v);
        }
        let mut resp = req
            .config()
            .timeout_global(Some(left))
            .build()
            .call()
            .map_err(|e| self.endpoint.ureq_error(e, deadline))?;
        let head = status::head(&resp);
        match call.answered(&self.session, &head) {
            Ok(streaming) => {
                let reader = self.endpoint.message_reader(resp);
                self.streams.follow(reader, streaming);
                Ok(())
            }
            Err(f) => Err(self.failed_with(f, &mut resp)),
        }
    }
}

impl Transport for HttpTransport {
    fn wire(&self) -> Wire {
        Wire::Http
    }

    fn send(&mut self, msg: &Value, deadline: &Deadline) -> Result<()> {
        self.send_with(msg, None, deadline)
    }

    fn send_modern(
        &mut self,
        msg: &Value,
        headers: &[(String, String)],
        deadline: &Deadline,
    ) -> Result<()> {
        self.send_with(msg, Some(headers), deadline)
    }

    fn abandon(&mut self) {
        self.streams.drop_current();
    }

    fn canceller(&self) -> Option<super::Canceller> {
        if !self.session.cancels_by_notification() {
            return None;
        }
        let endpoint = &self.endpoint;
        let auth = self.auth.headers("POST", &endpoint.target);
        let req = endpoint
            .post_request(auth, &self.session.headers(true))
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

    /// A whole request sent from the signal thread (a task's
    /// `tasks/cancel` on Ctrl-C): in the handshake era as a cancellation
    /// is; on the 2026-07-28 wire with the request's own standard headers,
    /// computed from it when it is sent.
    fn sender(&self) -> Option<super::Canceller> {
        let Some(version) = self.session.modern_version().map(str::to_string)
        else {
            return self.canceller();
        };
        let endpoint = &self.endpoint;
        let auth = self.auth.headers("POST", &endpoint.target);
        let req = endpoint.post_request(auth, &[]);
        let req = std::sync::Mutex::new(Some(req));
        Some(std::sync::Arc::new(move |msg: &Value| {
            let Some(mut r) = req.lock().ok().and_then(|mut r| r.take())
            else {
                return;
            };
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            if let Some(m) = msg.get("method").and_then(Value::as_str) {
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
        self.session.detach()
    }

    fn resume(&mut self, session: &str, protocol: &str) {
        self.session.resume(session, protocol);
    }

    fn recv(&mut self, deadline: &Deadline) -> Result<Value> {
        deadline.remaining()?;
        let m = self.next_message(deadline)?;
        self.session.observe(&m);
        Ok(m)
    }

    fn on_request_stream(&self) -> bool {
        self.last_on_request
    }

    fn recv_until(
        &mut self,
        deadline: &Deadline,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Value>> {
        deadline.remaining()?;
        let m = self.next_message_until(deadline, Some(stop))?;
        if let Some(m) = &m {
            self.session.observe(m);
        }
        Ok(m)
    }

    /// What the standalone stream delivers until it has been quiet for
    /// [`DRAIN_QUIET`], within [`DRAIN_MAX`]: a server's log line sent
    /// just before the result races it on another connection, and would
    /// be lost to the closing DELETE.
    fn drain(&mut self) -> Vec<Value> {
        if self.closed || !self.session.drains() {
            return vec![];
        }
        let (data, ended) = self.streams.drain_standalone(
            DRAIN_QUIET,
            DRAIN_MAX,
            DRAIN_MESSAGES,
        );
        if ended {
            self.session.standalone_ended();
        }
        data.iter()
            .filter_map(|d| {
                let budget = super::tree_budget(self.endpoint.limits.message);
                mcp::parse_message(d.as_bytes(), budget).ok()
            })
            .collect()
    }

    fn tree_budget(&self) -> usize {
        super::tree_budget(self.endpoint.limits.message)
    }

    fn close(&mut self) -> Closed {
        if self.closed {
            return Closed::Gone;
        }
        self.closed = true;
        self.streams.drop_current();
        journal::event(
            "server_closed",
            serde_json::json!({"server": self.endpoint.name, "how": "delete"}),
        );
        if !self.session.close() {
            return Closed::Eof;
        }
        let endpoint = &self.endpoint;
        let req = endpoint.agent.delete(&endpoint.target);
        let auth = self.auth.headers("DELETE", &endpoint.target);
        let r = endpoint
            .with(req, auth, &self.session.headers(true))
            .config()
            .timeout_global(Some(CLOSE_TIMEOUT))
            .build()
            .call();
        match r {
            Ok(resp) => msg::debug(&format!(
                "server '{}': DELETE session: HTTP {}",
                endpoint.name,
                resp.status().as_u16()
            )),
            Err(e) => msg::debug(&format!(
                "server '{}': DELETE session failed: {e}",
                endpoint.name
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
