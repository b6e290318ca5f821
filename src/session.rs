//! The MCP session on top of a transport: which era is spoken, requests,
//! paging.
//!
//! A session speaks one era, chosen when it opens ([`mcp::Choice`]):
//!
//! - **The handshake era**: `initialize` negotiates one of
//!   [`mcp::Version::HANDSHAKE`] (anything else is refused), then
//!   `notifications/initialized`.
//! - **2026-07-28**: no handshake. `server/discover` says what the server
//!   is; every request carries the `_meta` envelope (and, over HTTP, the
//!   standard headers); a result may be `input_required`, and the request
//!   is then retried with a new id, the answers and the server's
//!   `requestState`, for at most [`MAX_INPUT_ROUNDS`] rounds.
//!
//! With `auto`, the transport decides the opening. Over HTTP a modern
//! request goes first (`server/discover`): a DiscoverResult, or `-32022`
//! listing 2026-07-28, means modern; anything else (a 4xx that is not the
//! answer to our request, another error) falls back to `initialize`. Over
//! stdio `initialize` goes first, since a 2025 server may not survive
//! anything else: a 2025 server costs nothing extra, and a modern-only
//! server answers `-32022` listing 2026-07-28 and keeps the pipe open for
//! the modern opening. A dual-era stdio server is spoken to in the
//! handshake era unless the operator chose `modern`.
//!
//! Every request waits for its response under a named deadline while
//! answering what the server asks in the meantime. What a server asks,
//! on the stream (2025 era) or in `inputRequests` (2026-07-28), takes one
//! path: [`mcp::ask`] decides whether it is a kind the operator declared,
//! and the session's [`Client`] (the operator, [`crate::ask`]) answers it;
//! the session itself does no terminal I/O. Responses are matched by exact id (`1` is not `"1"`); late
//! and unknown ids are ignored. A request that times out is cancelled and
//! closes the server. What a message *is* comes from [`mcp::classify`];
//! this module only decides what to do about it.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::mcp::{
    self, Choice, Incoming, Outcome, ResultType, RpcError, Version, method,
};
use crate::transport::{Canceller, Closed, Transport, Wire};
use crate::{msg, term};

/// Paging bounds: a server cannot keep us listing forever.
pub(crate) const MAX_PAGES: usize = 100;
pub(crate) const MAX_ITEMS: usize = 10_000;
/// How many times one request may come back `input_required`.
pub(crate) const MAX_INPUT_ROUNDS: usize = 8;

/// What a server told us about itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerInfo {
    /// The revision spoken; `None` until the opening succeeded.
    pub(crate) version: Option<Version>,
    pub(crate) protocol: String,
    pub(crate) info: Value,
    pub(crate) capabilities: Value,
    pub(crate) instructions: Option<String>,
    /// How the era was chosen, for `-v` and the journal.
    pub(crate) chosen: String,
}

/// The items of a paged list, whether a bound cut it short, and how long
/// a 2026-07-28 server said the list stays fresh (`ttlMs`, the shortest
/// of its pages).
#[derive(Debug, Clone, Default)]
pub(crate) struct Listing {
    pub(crate) items: Vec<Value>,
    pub(crate) complete: bool,
    pub(crate) ttl: Option<Duration>,
}

/// A request's answer: its result, or the server's JSON-RPC error.
pub(crate) type Answer = std::result::Result<Value, RpcError>;

/// One thing a server asks of the client, of a kind it declared.
#[derive(Debug)]
pub(crate) struct ServerAsk<'a> {
    pub(crate) server: &'a str,
    pub(crate) ask: mcp::Ask,
    pub(crate) params: &'a Value,
    /// A `batch` line's `answers`, which replace `--answer` for its forms.
    pub(crate) answers: Option<&'a Map<String, Value>>,
    /// When the request this serves times out (`--timeout`): a question
    /// or a command waits no longer.
    pub(crate) until: std::time::Instant,
}

/// What answers a server's requests: the operator's options, fixed before
/// any server starts.
pub(crate) trait Client: Send + Sync {
    /// The capabilities declared in both eras.
    fn capabilities(&self) -> mcp::Capabilities;
    /// The level `--log-level` asks servers to log at.
    fn log_level(&self) -> Option<&str>;
    /// The result for one request of a declared kind; `Err` is sent as an
    /// error answer.
    fn serve(&self, q: &ServerAsk<'_>) -> std::result::Result<Value, String>;
    /// A new round of requests begins (a 2026-07-28 `input_required`
    /// result, or one 2025-era request): a person's Ctrl-C ends a round.
    fn begin_round(&self) {}
    /// What else of the client a server may see and keep (the roots it is
    /// given), for the daemon's launch key; `null` when nothing.
    fn identity(&self) -> Value {
        Value::Null
    }
    /// A progress or log notification the server sent, for a client that
    /// passes them on (`serve`); the default ignores it.
    fn notified(&self, _server: &str, _method: &str, _params: &Value) {}
}

impl std::fmt::Debug for dyn Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Client({:?})", self.capabilities())
    }
}

/// A client that declares nothing and answers only `ping`.
#[derive(Debug, Default)]
pub(crate) struct Declines;

impl Client for Declines {
    fn capabilities(&self) -> mcp::Capabilities {
        mcp::Capabilities::default()
    }

    fn log_level(&self) -> Option<&str> {
        None
    }

    fn serve(&self, _: &ServerAsk<'_>) -> std::result::Result<Value, String> {
        Ok(json!({}))
    }
}

pub(crate) struct Session {
    name: String,
    transport: Box<dyn Transport>,
    next_id: u64,
    pub(crate) server: ServerInfo,
    /// Per-request deadline.
    pub(crate) request_timeout: Duration,
    /// `*/list_changed` notifications seen (method names).
    list_changed: BTreeSet<String>,
    /// What the server sent while a question it asked was being answered
    /// ([`Session::serve_watching`]), read before anything else.
    held: std::collections::VecDeque<Value>,
    closed: Option<Closed>,
    client: Arc<dyn Client>,
    /// The current `batch` line's `answers`, if it has any.
    answers: Option<Map<String, Value>>,
    /// When the request in flight was sent (for the progress line).
    started: std::time::Instant,
    /// The config's `tools` filter: the tools hidden from every command.
    tool_filter: Option<crate::config::ToolFilter>,
    /// Whether the session is a warm server's, lent by the daemon.
    pub(crate) warm: bool,
    /// The extension the request in flight declares (2026-07-28), if any.
    extension: Option<&'static str>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.name)
            .field("protocol", &self.server.protocol)
            .finish_non_exhaustive()
    }
}

/// Why a session speaks 2026-07-28 when `--protocol modern` chose it.
const CONFIGURED: &str = "configured";

impl Session {
    /// Opens the session in the era `choice` allows, within `startup`.
    pub(crate) fn open(
        name: &str,
        transport: Box<dyn Transport>,
        choice: Choice,
        startup: &Deadline,
        request_timeout: Duration,
        client: Arc<dyn Client>,
    ) -> Result<Session> {
        let mut s = Session::new(
            name,
            transport,
            ServerInfo::default(),
            request_timeout,
            client,
        );
        let opened = match (choice, s.transport.wire()) {
            (Choice::Legacy, _) => s.handshake(startup, false),
            (Choice::Modern, _) => s.discover(startup, CONFIGURED),
            (Choice::Auto, Wire::Stdio) => s.handshake(startup, true),
            (Choice::Auto, Wire::Http) => s.probe(startup),
        };
        if let Err(e) = opened {
            s.close();
            return Err(e.for_server(name));
        }
        msg::debug(&format!(
            "server '{name}': {}, protocol {} ({})",
            if s.modern() { "discovered" } else { "initialized" },
            s.server.protocol,
            s.server.chosen
        ));
        crate::journal::event(
            "initialized",
            json!({"server": name, "protocol": s.server.protocol,
                   "serverInfo": mcp::bounded_server_info(&s.server.info),
                   "chosen": s.server.chosen}),
        );
        s.set_log_level(startup);
        Ok(s)
    }

    /// A session on a server that is already open (a warm server the
    /// daemon lends): no handshake, the era and what the server said of
    /// itself as the daemon's handshake found them; `sandbox`, what a
    /// sandboxed server is confined to, for the journal.
    pub(crate) fn resume(
        name: &str,
        transport: Box<dyn Transport>,
        server: ServerInfo,
        request_timeout: Duration,
        client: Arc<dyn Client>,
        sandbox: Option<Value>,
    ) -> Session {
        let mut event = json!({"server": name, "protocol": server.protocol,
                   "serverInfo": server.info, "chosen": server.chosen,
                   "warm": true});
        if let Some(s) = sandbox {
            event["sandbox"] = s;
        }
        crate::journal::event("initialized", event);
        let mut s =
            Session::new(name, transport, server, request_timeout, client);
        s.warm = true;
        s
    }

    fn new(
        name: &str,
        transport: Box<dyn Transport>,
        server: ServerInfo,
        request_timeout: Duration,
        client: Arc<dyn Client>,
    ) -> Session {
        Session {
            name: name.to_string(),
            transport,
            next_id: 1,
            server,
            request_timeout,
            list_changed: BTreeSet::new(),
            held: Default::default(),
            closed: None,
            client,
            answers: None,
            started: std::time::Instant::now(),
            tool_filter: None,
            warm: false,
            extension: None,
        }
    }

    /// The transport and what the opening found, for the daemon, which
    /// keeps the server running after the session it opened it with.
    pub(crate) fn into_parts(mut self) -> (Box<dyn Transport>, ServerInfo) {
        let t = std::mem::replace(&mut self.transport, Box::new(Detached));
        let info = std::mem::take(&mut self.server);
        self.closed = Some(Closed::Gone);
        (t, info)
    }

    /// `--log-level` in the handshake era: `logging/setLevel`, to a
    /// server that declares logging (2026-07-28 carries it in `_meta`).
    /// A refusal is a warning, not a failure.
    fn set_log_level(&mut self, d: &Deadline) {
        let Some(level) = self.client.log_level().map(str::to_string) else {
            return;
        };
        if self.modern() {
            return;
        }
        if self.server.capabilities.get("logging").is_none() {
            msg::debug(&format!(
                "server '{}' declares no logging; --log-level not sent",
                self.name
            ));
            return;
        }
        let params = json!({"level": level});
        match self.exchange(method::LOGGING_SET_LEVEL, params, &[], d) {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => msg::warn(&format!(
                "server '{}': logging/setLevel: {}",
                self.name,
                e.describe()
            )),
            Err(e) => msg::warn(&format!(
                "server '{}': logging/setLevel: {}",
                self.name,
                e.message()
            )),
        }
    }

    /// The handshake era: `initialize`, then `notifications/initialized`.
    /// With `may_switch`, a `-32022` that lists 2026-07-28 leads to the
    /// modern opening on the same connection.
    fn handshake(&mut self, d: &Deadline, may_switch: bool) -> Result<()> {
        self.server.version = None;
        let answer = self.exchange(
            method::INITIALIZE,
            mcp::initialize_params_for(self.client.capabilities()),
            &[],
            d,
        )?;
        let result = match answer {
            Ok(r) => r,
            Err(e) => {
                let modern = lists_modern(&e);
                if modern && may_switch {
                    return self.discover(
                        d,
                        "initialize answered -32022 listing 2026-07-28",
                    );
                }
                let mut text = e.describe();
                if modern {
                    text.push_str(
                        "; the server speaks 2026-07-28 only: set \"protocol\" \
                         to \"auto\" or \"modern\" (or pass --protocol auto)",
                    );
                }
                return Err(Error::server(text));
            }
        };
        let protocol = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if may_switch && Version::parse(&protocol) == Some(Version::MODERN) {
            // A modern server that answers the handshake with its own
            // version: speak it properly, from server/discover on.
            return self.discover(d, "initialize answered 2026-07-28");
        }
        let Some(version) =
            Version::parse(&protocol).filter(|v| v.negotiable())
        else {
            return Err(Error::server(format!(
                "server answered protocol version '{}', which rivumi-mcp \
                 does not speak (it speaks {})",
                term::clip(&term::line(&protocol), 60),
                Version::negotiable_list()
            )));
        };
        self.server = ServerInfo {
            version: Some(version),
            protocol,
            info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
            capabilities: mcp::capabilities_of(&result),
            instructions: mcp::instructions_of(&result),
            chosen: std::mem::take(&mut self.server.chosen),
        };
        if self.server.chosen.is_empty() {
            self.server.chosen = method::INITIALIZE.to_string();
        }
        self.transport.send(&mcp::initialized(), d)
    }

    /// The 2026-07-28 opening: `server/discover`, retried once after a
    /// `-32022` that lists 2026-07-28 (a server may refuse the first
    /// request of a connection that way).
    fn discover(&mut self, d: &Deadline, why: &str) -> Result<()> {
        // Chosen, not found: a refusal the server answered (a JSON-RPC
        // error, an HTTP 4xx or 5xx, versions without 2026-07-28) is most
        // likely a 2025 server's, which the handshake era would reach.
        let hint = |e: Error| {
            if why != CONFIGURED {
                return e;
            }
            e.hint(
                "the server may speak only the handshake era (2025): try \
                 --protocol auto (or \"protocol\": \"auto\" in the \
                 server's entry)",
            )
        };
        let answered = |e: Error| {
            if e.http_status().is_some() {
                hint(e.context(method::SERVER_DISCOVER))
            } else {
                e
            }
        };
        self.server.version = Some(Version::MODERN);
        let mut answer = self.discover_once(d).map_err(answered)?;
        if let Err(e) = &answer
            && lists_modern(e)
        {
            answer = self.discover_once(d).map_err(answered)?;
        }
        match answer {
            Ok(r) => self.accept_discovered(&r, why).map_err(hint),
            Err(e) => Err(hint(Error::server(format!(
                "{}: {}",
                method::SERVER_DISCOVER,
                e.describe()
            )))),
        }
    }

    fn discover_once(&mut self, d: &Deadline) -> Result<Answer> {
        let mut params = json!({});
        self.modern_meta(&mut params);
        self.exchange(method::SERVER_DISCOVER, params, &[], d)
    }

    fn accept_discovered(&mut self, result: &Value, why: &str) -> Result<()> {
        let Some(found) = mcp::discovered(result) else {
            return Err(Error::server(
                "server/discover: the result has no 'supportedVersions' \
                 array",
            ));
        };
        let modern = Version::MODERN.as_str();
        if !found.supported.iter().any(|v| v == modern) {
            return Err(Error::server(format!(
                "server/discover: the server supports {}, not {modern}",
                term::clip(&term::line(&found.supported.join(", ")), 200)
            )));
        }
        self.server = ServerInfo {
            version: Some(Version::MODERN),
            protocol: modern.to_string(),
            info: found.server_info,
            capabilities: found.capabilities,
            instructions: found.instructions,
            chosen: why.to_string(),
        };
        Ok(())
    }

    /// `auto` over HTTP: a modern request first; the handshake era only
    /// when the answer is not a modern one.
    fn probe(&mut self, d: &Deadline) -> Result<()> {
        self.server.version = Some(Version::MODERN);
        let why = match self.discover_once(d) {
            Ok(Ok(r)) if mcp::discovered(&r).is_some() => {
                return self.accept_discovered(&r, "server/discover answered");
            }
            Ok(Err(e)) if lists_modern(&e) => {
                return self.discover(
                    d,
                    "server/discover answered -32022 listing 2026-07-28",
                );
            }
            Ok(Err(e))
                if matches!(
                    e.code,
                    Some(
                        mcp::code::HEADER_MISMATCH
                            | mcp::code::MISSING_CLIENT_CAPABILITY
                    )
                ) =>
            {
                // A modern server that refuses what we sent: no other
                // era would fare better.
                return Err(Error::server(e.describe()));
            }
            Ok(Ok(_)) => "server/discover answered with something else".into(),
            Ok(Err(e)) => format!(
                "server/discover refused: {}",
                term::clip(&e.describe(), 120)
            ),
            // An HTTP answer that is no MCP answer (a 4xx or 5xx, a web
            // page, a stream that ends without the response): a 2025
            // server's way of saying it does not know the request. Not
            // reaching the server, a deadline, a refused credential or a
            // redirect stay errors: no other era would fare better.
            Err(e)
                if e.kind() == Kind::Server && e.http_status().is_some() =>
            {
                let refused = e.http_status().is_some_and(|s| s >= 400);
                format!(
                    "server/discover {}: {}",
                    if refused { "refused" } else { "answered" },
                    term::clip(e.message(), 120)
                )
            }
            Err(e) => return Err(e),
        };
        msg::debug(&format!(
            "server '{}': {why}; trying initialize",
            self.name
        ));
        self.server.chosen = format!("{why}; initialize");
        self.handshake(d, true)
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Takes the set of `*/list_changed` notifications seen so far.
    pub(crate) fn take_list_changed(&mut self) -> BTreeSet<String> {
        std::mem::take(&mut self.list_changed)
    }

    /// Sends a request and waits for its result under the per-request
    /// deadline, named after the method (or `what`). (`list_all` asks
    /// through [`Self::answer_with`], to tell -32601 apart.)
    #[allow(dead_code)]
    pub(crate) fn request(
        &mut self,
        method: &str,
        params: Value,
        what: &str,
    ) -> Result<Value> {
        let d = Deadline::new(what, self.request_timeout);
        self.request_with(method, params, &[], &d)
            .map_err(|e| e.for_server(&self.name))
    }

    /// Makes one call ([`mcp::Call`]) under the per-request deadline.
    pub(crate) fn call(&mut self, call: &mcp::Call<'_>) -> Result<Value> {
        let d = Deadline::new(call.what(), self.request_timeout);
        self.request_with(
            call.method(),
            call.params(),
            &call.param_headers(),
            &d,
        )
        .map_err(|e| e.for_server(&self.name))
    }

    /// Makes one call asking for a task (`ttl_ms`: how long the server
    /// should keep it), declaring the tasks extension in 2026-07-28. The
    /// answer is either the result itself or a task ([`mcp::tasks`]).
    pub(crate) fn call_as_task(
        &mut self,
        call: &mcp::Call<'_>,
        ttl_ms: u64,
    ) -> Result<Value> {
        let d = Deadline::new(call.what(), self.request_timeout);
        let mut params = call.params();
        mcp::tasks::request_task(&mut params, ttl_ms);
        self.extension = Some(mcp::tasks::EXTENSION);
        let r = self.request_with(
            call.method(),
            params,
            &call.param_headers(),
            &d,
        );
        self.extension = None;
        r.map_err(|e| e.for_server(&self.name))
    }

    /// One request of an extension's (`id`) under the per-request
    /// deadline, declaring the extension in 2026-07-28.
    pub(crate) fn extension_request(
        &mut self,
        id: &'static str,
        method: &str,
        params: Value,
    ) -> Result<Value> {
        let modern = self.modern();
        let answer = self.extension_answer(id, method, params)?;
        answer.map_err(|e| rpc_failure(&e, modern).for_server(&self.name))
    }

    /// [`Self::extension_request`] with the server's JSON-RPC error apart,
    /// so that a caller can tell one code from another (`skills/get`
    /// answers -32602 for a skill the server does not serve).
    pub(crate) fn extension_answer(
        &mut self,
        id: &'static str,
        method: &str,
        params: Value,
    ) -> Result<Answer> {
        let d = Deadline::new(method, self.request_timeout);
        self.extension = Some(id);
        let r = self.answer_with(method, params, &[], &d);
        self.extension = None;
        r.map_err(|e| e.for_server(&self.name))
    }

    /// One request of the tasks family (`tasks/get`, …) under `d`.
    pub(crate) fn task_request(
        &mut self,
        method: &str,
        params: Value,
        d: &Deadline,
    ) -> Result<Value> {
        self.extension = Some(mcp::tasks::EXTENSION);
        let r = self.request_with(method, params, &[], d);
        self.extension = None;
        r.map_err(|e| e.for_server(&self.name))
    }

    /// Answers the `inputRequests` of a result (an `input_required`
    /// result's, or a 2026-07-28 task's) with the operator's handlers:
    /// the responses by key, and the `requestState` to echo.
    pub(crate) fn answer_inputs(
        &mut self,
        what: &str,
        result: &Value,
        d: &Deadline,
    ) -> Result<(Map<String, Value>, Option<Value>)> {
        let (requests, state) = mcp::input_requests(result)
            .map_err(|why| Error::server(format!("{what}: {why}")))?;
        let mut responses = Map::new();
        self.client.begin_round();
        for r in &requests {
            // The request's deadline holds between answers too.
            d.remaining()?;
            let answer = self.serve(&r.method, &r.params, d).map_err(
                // An answer cut short by the deadline is the deadline's.
                |why| match d.remaining() {
                    Err(late) => late,
                    Ok(_) => Error::server(term::line(&why)),
                },
            )?;
            responses.insert(r.key.clone(), answer);
        }
        Ok((responses, state))
    }

    /// A request to send from the signal thread (a task's `tasks/cancel`
    /// on Ctrl-C), made now in the session's era (with an id no other
    /// request uses, and the 2026-07-28 `_meta`), and what sends it;
    /// `None` when the transport cannot.
    pub(crate) fn signal_request(
        &mut self,
        method: &str,
        mut params: Value,
    ) -> Option<(Value, Canceller)> {
        let send = self.transport.sender()?;
        let id = self.next_id;
        self.next_id += 1;
        if self.modern() {
            self.extension = Some(mcp::tasks::EXTENSION);
            self.modern_meta(&mut params);
            self.extension = None;
        }
        Some((mcp::request(id, method, params), send))
    }

    /// Whether the session was closed (its server is gone or was ended).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_some()
    }

    /// Whether the session speaks 2026-07-28.
    pub(crate) fn modern(&self) -> bool {
        self.server.version.is_some_and(Version::is_modern)
    }

    /// One request in the session's era; in 2026-07-28, with the `_meta`
    /// envelope and the `input_required` rounds.
    fn request_with(
        &mut self,
        method: &str,
        params: Value,
        headers: &[(String, String)],
        d: &Deadline,
    ) -> Result<Value> {
        let modern = self.modern();
        self.answer_with(method, params, headers, d)?
            .map_err(|e| rpc_failure(&e, modern))
    }

    /// [`Self::request_with`], with the server's JSON-RPC error apart so
    /// that a caller can tell one code from another.
    fn answer_with(
        &mut self,
        method: &str,
        mut params: Value,
        headers: &[(String, String)],
        d: &Deadline,
    ) -> Result<Answer> {
        if !self.modern() {
            return self.exchange(method, params, headers, d);
        }
        self.modern_meta(&mut params);
        let original = params.clone();
        for round in 0.. {
            let result = match self.exchange(method, params, headers, d)? {
                Ok(result) => result,
                Err(e) => return Ok(Err(e)),
            };
            match mcp::result_type(&result) {
                ResultType::Complete | ResultType::Task => {
                    return Ok(Ok(result));
                }
                ResultType::Unknown(t) => {
                    return Err(Error::server(format!(
                        "{method}: unknown resultType '{}'",
                        term::clip(&term::line(&t), 60)
                    )));
                }
                ResultType::InputRequired => {}
            }
            if !mcp::may_require_input(method) {
                return Err(Error::server(format!(
                    "{method}: the server answered input_required, which \
                     this method does not allow"
                )));
            }
            if round >= MAX_INPUT_ROUNDS {
                return Err(Error::server(format!(
                    "{method}: the server still asks for input after \
                     {MAX_INPUT_ROUNDS} rounds; giving up"
                )));
            }
            let (responses, state) = self.answer_inputs(method, &result, d)?;
            drop(result);
            params = mcp::retry_params(&original, responses, state.as_ref());
        }
        unreachable!("the loop returns")
    }

    /// Sends one request with a fresh id and waits for its answer. Over
    /// the modern wire the standard headers (and `headers`) go with it.
    /// A progress line shown meanwhile is erased when it ends.
    fn exchange(
        &mut self,
        method: &str,
        params: Value,
        headers: &[(String, String)],
        deadline: &Deadline,
    ) -> Result<Answer> {
        self.started = std::time::Instant::now();
        let r = self.exchange_once(method, params, headers, deadline);
        msg::clear_progress();
        r
    }

    fn exchange_once(
        &mut self,
        method: &str,
        mut params: Value,
        headers: &[(String, String)],
        deadline: &Deadline,
    ) -> Result<Answer> {
        let id = self.next_id;
        self.next_id += 1;
        if crate::cancel::fired() {
            return Err(given_up());
        }
        if mcp::wants_progress(method) {
            // Ask for progress notices; shown on a terminal only.
            mcp::with_progress_token(&mut params, id);
        }
        // A request `serve` handles may be given up by its host from
        // another thread (crate::cancel): cancelled on the wire as for a
        // deadline, and no longer waited for. Armed before the request is
        // sent: an HTTP server that answers with one JSON body holds the
        // POST until it answers, and is told while it works.
        let _given_up = match self.transport.canceller() {
            Some(c) if method != method::INITIALIZE => {
                crate::cancel::arm(Arc::new(move || {
                    c(&mcp::cancelled(id, "cancelled by the client"));
                }))
            }
            _ => None,
        };
        if self.modern() {
            let mut all = mcp::headers::standard(
                Version::MODERN.as_str(),
                method,
                &params,
            );
            all.extend(headers.iter().cloned());
            let req = mcp::request(id, method, params);
            self.transport.send_modern(&req, &all, deadline)?;
        } else {
            self.transport
                .send(&mcp::request(id, method, params), deadline)?;
        }
        // Ctrl-C (or SIGTERM) while it waits: cancelled on the wire before
        // the server is ended (never initialize, as for a deadline).
        let _cancel = match self.transport.canceller() {
            Some(c) if method != method::INITIALIZE => {
                Some(crate::sys::on_interrupt(Arc::new(move || {
                    c(&mcp::cancelled(id, "interrupted"));
                })))
            }
            _ => None,
        };
        let want = json!(id);
        loop {
            let msg = match self.recv_unless_given_up(deadline) {
                Ok(m) => m,
                Err(e) if e.kind() == Kind::Timeout => {
                    // initialize is never cancelled; over the modern HTTP
                    // wire, closing the stream is the cancellation.
                    let by_closing =
                        self.modern() && self.transport.wire() == Wire::Http;
                    if method != method::INITIALIZE && !by_closing {
                        let d =
                            Deadline::new("cancel", Duration::from_secs(1));
                        let _ = self
                            .transport
                            .send(&mcp::cancelled(id, "timed out"), &d);
                    }
                    self.close();
                    return Err(e);
                }
                Err(e) => return Err(e),
            };
            let batch = match mcp::split_batch(msg, self.server.version) {
                Ok(b) => b,
                Err(why) => {
                    self.close();
                    return Err(Error::server(why));
                }
            };
            let mut answer = None;
            for m in batch {
                if let Some(r) = self.handle(m, &want, deadline)? {
                    answer = Some(r);
                }
            }
            if let Some(r) = answer {
                return Ok(r);
            }
        }
    }

    /// Handles what the server sent while no request of ours was in
    /// flight (its notifications, its requests), waiting at most `wait`
    /// for the first message and taking at most 64; over HTTP, what its
    /// standalone stream holds, only when `http` (reading it takes a
    /// quiet spell of 50 ms). For `serve`, which keeps sessions open
    /// between its host's requests.
    pub(crate) fn poll(&mut self, wait: Duration, http: bool) -> Result<()> {
        let d = Deadline::new("the server's notifications", wait);
        let msgs = if self.transport.wire() == Wire::Http {
            if !http {
                return Ok(());
            }
            self.transport.drain()
        } else {
            let mut all: Vec<Value> = self.held.drain(..).collect();
            while all.len() < 64 {
                match self.transport.recv(&d) {
                    Ok(m) => all.push(m),
                    Err(e) if e.kind() == Kind::Timeout => break,
                    Err(e) => return Err(e),
                }
            }
            all
        };
        let answer_by = Deadline::new("an answer to the server", SERVE_WAIT);
        for m in msgs {
            let batch = mcp::split_batch(m, self.server.version)
                .map_err(Error::server)?;
            for m in batch {
                self.handle(m, &Value::Null, &answer_by)?;
            }
        }
        Ok(())
    }

    /// The next message. On a thread whose request may be given up
    /// ([`crate::cancel`]) it is waited for by [`Transport::recv_until`],
    /// and given up once the request is: over the 2026-07-28 HTTP wire by
    /// closing (that wire's cancellation); elsewhere the transport
    /// abandons the request's answer and the session stays.
    fn recv_unless_given_up(&mut self, deadline: &Deadline) -> Result<Value> {
        if let Some(m) = self.held.pop_front() {
            return Ok(m);
        }
        if crate::cancel::current().is_none() {
            return self.transport.recv(deadline);
        }
        if let Some(m) =
            self.transport.recv_until(deadline, &crate::cancel::fired)?
        {
            return Ok(m);
        }
        // On the 2026-07-28 wire over HTTP closing the stream is the
        // cancellation; elsewhere the session stays and only the request's
        // answer is no longer waited for.
        if self.modern() && self.transport.wire() == Wire::Http {
            self.close();
        } else {
            self.transport.abandon();
        }
        Err(given_up())
    }

    /// Handles one incoming message; `Some` when it answers `want`.
    fn handle(
        &mut self,
        m: Value,
        want: &Value,
        deadline: &Deadline,
    ) -> Result<Option<Answer>> {
        match mcp::classify(m) {
            Incoming::Request { id, method, params } => {
                self.answer(&method, &params, id, deadline)?;
                Ok(None)
            }
            Incoming::Notification { method, params } => {
                self.notification(&method, &params);
                Ok(None)
            }
            Incoming::Response { id, outcome } if &id == want => {
                Ok(Some(match outcome {
                    Outcome::Result(r) => Ok(r),
                    Outcome::BadResult => {
                        return Err(Error::server(
                            "response 'result' is not an object",
                        ));
                    }
                    Outcome::Error(e) => Err(e),
                }))
            }
            Incoming::Response { id, .. } => {
                msg::debug(&format!(
                    "server '{}': ignored a response with unknown id {}",
                    self.name,
                    term::clip(&id.to_string(), 100)
                ));
                Ok(None)
            }
            Incoming::Invalid(what) => {
                msg::debug(&format!("server '{}': ignored {what}", self.name));
                Ok(None)
            }
        }
    }

    /// Answers a request from the server on the stream (2025 era).
    fn answer(
        &mut self,
        method: &str,
        params: &Value,
        id: Value,
        d: &Deadline,
    ) -> Result<()> {
        self.client.begin_round();
        let served = if crate::cancel::current().is_some() {
            match self.serve_watching(method, params, &id, d)? {
                Some(r) => r,
                // The server cancelled it: no answer is sent.
                None => return Ok(()),
            }
        } else {
            self.serve(method, params, d)
        };
        let reply = match served {
            Ok(result) => mcp::response(id, result),
            Err(why) => {
                let code = if mcp::ask(method, params, self.caps()).is_ok() {
                    mcp::code::INTERNAL_ERROR
                } else {
                    mcp::code::METHOD_NOT_FOUND
                };
                mcp::error_response(id, code, &why)
            }
        };
        self.transport.send(&reply, d)
    }

    /// [`Self::serve`] for `serve`, whose answer may come from its host
    /// and take long: meanwhile another thread reads the server, and a
    /// `notifications/cancelled` of the request `id` gives the question
    /// up ([`crate::cancel`]: the host is told); what else the server sent
    /// waits in `held` for the request in flight. `None` when the server
    /// cancelled it (it then gets no answer). Over HTTP the server's
    /// cancellation comes on the stream of the request it belongs to,
    /// which is read the same way.
    fn serve_watching(
        &mut self,
        method: &str,
        params: &Value,
        id: &Value,
        d: &Deadline,
    ) -> Result<Option<std::result::Result<Value, String>>> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let abort = crate::cancel::Abort::default();
        // The host giving up the whole request gives this up too.
        let inner = abort.clone();
        let _chain = crate::cancel::arm(Arc::new(move || inner.fire()));
        let done = AtomicBool::new(false);
        let version = self.server.version;
        let Session { name, client, answers, transport, held, .. } = self;
        let (served, broke) = std::thread::scope(|scope| {
            let (abort, done) = (&abort, &done);
            let watcher = scope.spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    if held.len() >= MAX_HELD {
                        std::thread::sleep(crate::cancel::POLL);
                        continue;
                    }
                    let stop = || done.load(Ordering::SeqCst);
                    let m = match transport.recv_until(d, &stop) {
                        Ok(Some(m)) => m,
                        Ok(None) => break,
                        // The question's own wait ends it as well.
                        Err(e) if e.kind() == Kind::Timeout => break,
                        Err(e) => return Some(e),
                    };
                    for m in mcp::split_batch(m, version).unwrap_or_default() {
                        let mine = mcp::method_of(&m)
                            == Some(method::CANCELLED)
                            && m.pointer("/params/requestId") == Some(id);
                        if mine {
                            abort.fire();
                        } else {
                            held.push_back(m);
                        }
                    }
                }
                None
            });
            let served = {
                let _entered = abort.enter();
                serve_as(name, &**client, answers.as_ref(), method, params, d)
            };
            done.store(true, Ordering::SeqCst);
            (served, watcher.join().unwrap_or(None))
        });
        if let Some(e) = broke {
            return Err(e);
        }
        if abort.fired() && !crate::cancel::fired() {
            crate::journal::event(
                "serve_cancelled",
                json!({"by": "server", "server": self.name}),
            );
            msg::debug(&format!(
                "server '{}': it cancelled its request; the question was \
                 given up",
                self.name
            ));
            return Ok(None);
        }
        Ok(Some(served))
    }

    /// The one path of what a server asks ([`serve_as`]).
    fn serve(
        &mut self,
        method: &str,
        params: &Value,
        d: &Deadline,
    ) -> std::result::Result<Value, String> {
        serve_as(
            &self.name,
            &*self.client,
            self.answers.as_ref(),
            method,
            params,
            d,
        )
    }

    fn caps(&self) -> mcp::Capabilities {
        self.client.capabilities()
    }

    /// The 2026-07-28 `_meta`: version, capabilities, who we are, and the
    /// log level the operator asked for.
    fn modern_meta(&self, params: &mut Value) {
        mcp::with_modern_meta(params, Version::MODERN, self.caps());
        if let Some(id) = self.extension {
            mcp::declare_extension(params, id);
        }
        if let (Some(level), Some(m)) =
            (self.client.log_level(), params.get_mut("_meta"))
        {
            m[mcp::meta::LOG_LEVEL] = json!(level);
        }
    }

    /// Sets the `answers` of the next requests' forms (a `batch` line's),
    /// or `None` for `--answer`'s.
    pub(crate) fn set_answers(&mut self, answers: Option<Map<String, Value>>) {
        self.answers = answers;
    }

    fn notification(&mut self, method: &str, p: &Value) {
        if matches!(
            method,
            method::PROGRESS | method::MESSAGE | method::RESOURCES_UPDATED
        ) {
            self.client.notified(&self.name, method, p);
        }
        match method {
            method::MESSAGE => {
                let level =
                    p.get("level").and_then(Value::as_str).unwrap_or("?");
                let data = match p.get("data") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                if self.client.log_level().is_some() || msg::verbose() {
                    msg::line(&format!(
                        "[{}] {}: {}",
                        self.name,
                        term::clip(&term::line(level), 20),
                        term::clip(&term::line(&data), 2000)
                    ));
                }
            }
            method::PROGRESS if msg::stderr_is_tty() && msg::level() >= 1 => {
                let n = p.get("progress").cloned().unwrap_or(Value::Null);
                let total = p
                    .get("total")
                    .map(|t| format!("/{t}"))
                    .unwrap_or_default();
                let text = p
                    .get("message")
                    .and_then(Value::as_str)
                    .map(|m| format!("{} ", term::clip(&term::line(m), 60)))
                    .unwrap_or_default();
                msg::progress(&format!(
                    "[{}] {text}{}{total} ({}s)",
                    self.name,
                    term::clip(&term::line(&n.to_string()), 20),
                    self.started.elapsed().as_secs()
                ));
            }
            m if mcp::is_list_changed(m) => {
                msg::debug(&format!("server '{}': {m}", self.name));
                self.list_changed.insert(m.to_string());
            }
            _ => {}
        }
    }

    /// Narrows the tools this session exposes to what `filter` admits
    /// (the config's `tools`); `list_all(Tools)` applies it, so no
    /// command sees, calls or locks a hidden tool.
    pub(crate) fn filter_tools(
        &mut self,
        filter: Option<crate::config::ToolFilter>,
    ) {
        self.tool_filter = filter;
    }

    /// [`Self::list_pages`], with the config's `tools` filter applied to
    /// the tools.
    pub(crate) fn list_all(&mut self, list: mcp::List) -> Result<Listing> {
        let mut l = self.list_pages(list)?;
        if let (mcp::List::Tools, Some(f)) = (list, &self.tool_filter) {
            let before = l.items.len();
            l.items.retain(|t| {
                t.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| f.admits(n))
            });
            msg::debug(&format!(
                "server '{}': the config's \"tools\" hides {} of {} tools",
                self.name,
                before - l.items.len(),
                before
            ));
        }
        Ok(l)
    }

    /// Follows `nextCursor` through every page of a list method. A
    /// server that answers the first page with -32601 (method not found)
    /// offers no such list: that is an empty list (said with `-v`), since
    /// every list but `tools` is optional (the reference
    /// `mcp-server-sqlite` declares `resources` and has no
    /// `resources/templates/list`). Any other error names the request.
    fn list_pages(&mut self, list: mcp::List) -> Result<Listing> {
        let (method, key) = (list.method(), list.key());
        let mut l = Listing::default();
        let mut cursor: Option<String> = None;
        let mut seen = BTreeSet::new();
        // What the items kept so far take, held to one message's bound.
        let (mut kept, budget) = (0usize, self.transport.tree_budget());
        for page in 1..=MAX_PAGES {
            let params = mcp::List::page_params(cursor.as_deref());
            let what = format!("{method} (page {page})");
            let d = Deadline::new(&what, self.request_timeout);
            let r = match self.answer_with(method, params, &[], &d) {
                Ok(Ok(r)) => r,
                Ok(Err(e))
                    if page == 1
                        && e.code == Some(mcp::code::METHOD_NOT_FOUND) =>
                {
                    msg::debug(&format!(
                        "server '{}': {method}: not offered (-32601); \
                         taken as an empty list",
                        self.name
                    ));
                    l.complete = true;
                    return Ok(l);
                }
                Ok(Err(e)) => {
                    return Err(Error::server(format!(
                        "{method}: {}",
                        e.describe()
                    ))
                    .for_server(&self.name));
                }
                Err(e) => return Err(e.for_server(&self.name)),
            };
            if let Some(ms) = r.get("ttlMs").and_then(Value::as_u64) {
                let ttl = Duration::from_millis(ms);
                l.ttl = Some(l.ttl.map_or(ttl, |t| t.min(ttl)));
            }
            match r.get(key) {
                Some(Value::Array(a)) => {
                    let room = MAX_ITEMS - l.items.len();
                    for item in a.iter().take(room) {
                        kept =
                            kept.saturating_add(mcp::size::value_size(item));
                        if kept > budget {
                            self.incomplete(
                                method,
                                &format!(
                                    "its pages would take more than {} MiB \
                                     of memory ({} × --max-message)",
                                    budget.div_ceil(1 << 20),
                                    crate::transport::TREE_PER_MESSAGE
                                ),
                            );
                            return Ok(l);
                        }
                        l.items.push(item.clone());
                    }
                    if a.len() > room {
                        self.incomplete(
                            method,
                            &format!("more than {MAX_ITEMS} items"),
                        );
                        return Ok(l);
                    }
                }
                _ => {
                    return Err(Error::server(format!(
                        "{method}: the result has no '{key}' array"
                    ))
                    .for_server(&self.name));
                }
            }
            match r.get("nextCursor") {
                Some(Value::String(c)) if !c.is_empty() => {
                    if !seen.insert(c.clone()) {
                        self.incomplete(
                            method,
                            "the server repeated a cursor",
                        );
                        return Ok(l);
                    }
                    cursor = Some(c.clone());
                }
                _ => {
                    l.complete = true;
                    return Ok(l);
                }
            }
        }
        self.incomplete(method, &format!("more than {MAX_PAGES} pages"));
        Ok(l)
    }

    fn incomplete(&self, method: &str, why: &str) {
        msg::warn(&format!(
            "server '{}': {method}: stopped paging ({why}); the list is \
             incomplete",
            self.name
        ));
    }

    /// Leaves the session to the server (a detached task runs in it):
    /// the session id to resume it with, if the transport has one.
    pub(crate) fn detach(&mut self) -> Option<String> {
        let id = self.transport.detach();
        self.close();
        id
    }

    /// A session that an earlier invocation opened and left ([`detach`]),
    /// taken up without a handshake in the revision it negotiated.
    ///
    /// [`detach`]: Session::detach
    pub(crate) fn resumed(
        name: &str,
        mut transport: Box<dyn Transport>,
        session: &str,
        version: Version,
        request_timeout: Duration,
        client: Arc<dyn Client>,
    ) -> Session {
        transport.resume(session, version.as_str());
        let server = ServerInfo {
            version: Some(version),
            protocol: version.as_str().to_string(),
            chosen: "resumed".to_string(),
            ..ServerInfo::default()
        };
        Session::new(name, transport, server, request_timeout, client)
    }

    /// Closes the transport (and so the server). Idempotent.
    pub(crate) fn close(&mut self) -> Closed {
        if let Some(c) = self.closed {
            return c;
        }
        for m in self.transport.drain() {
            if let Incoming::Notification { method, params } = mcp::classify(m)
            {
                self.notification(&method, &params);
            }
        }
        let c = self.transport.close();
        self.closed = Some(c);
        c
    }
}

/// A server's JSON-RPC error as ours (`Kind::Server`); in 2026-07-28, with
/// the hint when the handshake era would serve the request.
fn rpc_failure(e: &RpcError, modern: bool) -> Error {
    let mut text = e.describe();
    if modern && e.wants_handshake_era() {
        text.push_str(
            "; in the handshake era the server can ask this while the call \
             runs: try --protocol legacy (or \"protocol\": \"legacy\" in the \
             server's entry)",
        );
    }
    Error::server(text)
}

/// Whether a `-32022` lists 2026-07-28 among the server's versions.
fn lists_modern(e: &RpcError) -> bool {
    e.supported_versions()
        .is_some_and(|v| v.iter().any(|v| v == Version::MODERN.as_str()))
}

/// What is left in a session whose transport [`Session::into_parts`]
/// took away: nothing to send to or close.
struct Detached;

impl Transport for Detached {
    fn wire(&self) -> Wire {
        Wire::Stdio
    }
    fn send(&mut self, _: &Value, _: &Deadline) -> Result<()> {
        Err(Error::server("the session was handed over"))
    }
    fn recv(&mut self, _: &Deadline) -> Result<Value> {
        Err(Error::server("the session was handed over"))
    }
    fn close(&mut self) -> Closed {
        Closed::Gone
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

/// The one path of what a server asks, in either era: refused unless of
/// a declared kind, else the client's answer.
fn serve_as(
    name: &str,
    client: &dyn Client,
    answers: Option<&Map<String, Value>>,
    method: &str,
    params: &Value,
    d: &Deadline,
) -> std::result::Result<Value, String> {
    let ask = match mcp::ask(method, params, client.capabilities()) {
        Ok(a) => a,
        Err(why) => {
            // The method is the server's text: bounded wherever it goes.
            let shown = term::clip(&term::line(method), 100).into_owned();
            msg::debug(&format!(
                "server '{}': refused its request '{shown}': {}",
                name,
                term::clip(&why, 300)
            ));
            crate::journal::event(
                "server_request",
                json!({"server": name, "method": shown,
                       "action": "refused"}),
            );
            return Err(why);
        }
    };
    let q = ServerAsk {
        server: name,
        ask,
        params,
        answers,
        until: std::time::Instant::now()
            + d.remaining().unwrap_or(Duration::ZERO),
    };
    let r = client.serve(&q);
    if let Err(why) = &r {
        msg::warn(&format!(
            "server '{}': {}: {}",
            name,
            q.ask.kind(),
            term::line(why)
        ));
    }
    r
}

/// How long an answer to what a server asks between requests may take.
const SERVE_WAIT: Duration = Duration::from_secs(30);
/// The most messages held while a question is answered; the server then
/// waits.
const MAX_HELD: usize = 1024;

/// The error of a request its client gave up ([`crate::cancel`]); not a
/// failure of the server, whose session stays usable.
fn given_up() -> Error {
    Error::negative("the request was cancelled by the client")
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// The scripted server: given each message the client sends, the
    /// messages it answers with.
    type Script = Box<dyn FnMut(&Value) -> Vec<Value> + Send>;

    /// What the test can inspect after the session is done with it.
    #[derive(Default)]
    struct Seen {
        sent: Vec<Value>,
        /// The headers of each request sent with `send_modern`.
        headers: Vec<Vec<(String, String)>>,
        closed: bool,
    }

    /// An in-memory transport: no process, no socket. An empty queue is
    /// a silent server, so `recv` times out at once.
    struct Fake {
        script: Script,
        queue: VecDeque<Value>,
        seen: Arc<Mutex<Seen>>,
        wire: crate::transport::Wire,
        budget: usize,
    }

    impl Transport for Fake {
        fn wire(&self) -> crate::transport::Wire {
            self.wire
        }

        fn send(&mut self, msg: &Value, _: &Deadline) -> Result<()> {
            self.seen.lock().unwrap().sent.push(msg.clone());
            let replies = (self.script)(msg);
            // What a transport reports as its own error, scripted:
            // `{"__http": 400}` is a refusal that is no MCP answer,
            // `{"__auth": true}` an authentication failure.
            if let Some(status) = replies
                .first()
                .and_then(|r| r.get("__http"))
                .and_then(Value::as_u64)
            {
                return Err(Error::server(format!("HTTP {status}"))
                    .with_http_status(status as u16));
            }
            if replies.first().is_some_and(|r| r.get("__auth").is_some()) {
                return Err(Error::new(Kind::Auth, "HTTP 401"));
            }
            self.queue.extend(replies);
            Ok(())
        }

        fn send_modern(
            &mut self,
            msg: &Value,
            headers: &[(String, String)],
            d: &Deadline,
        ) -> Result<()> {
            self.seen.lock().unwrap().headers.push(headers.to_vec());
            self.send(msg, d)
        }

        fn recv(&mut self, deadline: &Deadline) -> Result<Value> {
            self.queue.pop_front().ok_or_else(|| deadline.error())
        }

        fn close(&mut self) -> Closed {
            self.seen.lock().unwrap().closed = true;
            Closed::Eof
        }

        fn tree_budget(&self) -> usize {
            self.budget
        }
    }

    fn ok(id: &Value, result: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "result": result})
    }

    /// A server that speaks `version` and hands everything after the
    /// handshake to `rest`.
    fn server(
        version: &'static str,
        mut rest: impl FnMut(&str, &Value, &Value) -> Vec<Value> + Send + 'static,
    ) -> Script {
        Box::new(move |m| {
            let id = m.get("id").cloned().unwrap_or(Value::Null);
            match mcp::method_of(m) {
                Some(method::INITIALIZE) => vec![ok(
                    &id,
                    json!({"protocolVersion": version,
                           "serverInfo": {"name": "fake", "version": "1"},
                           "capabilities": {"tools": {}},
                           "instructions": "be nice"}),
                )],
                Some(method::INITIALIZED) | None => vec![],
                Some(other) => rest(other, &id, &m["params"]),
            }
        })
    }

    fn start(script: Script) -> (Result<Session>, Arc<Mutex<Seen>>) {
        start_on(crate::transport::Wire::Stdio, Choice::Auto, script)
    }

    fn start_on(
        wire: crate::transport::Wire,
        choice: Choice,
        script: Script,
    ) -> (Result<Session>, Arc<Mutex<Seen>>) {
        start_with(wire, choice, script, Arc::new(Declines))
    }

    fn start_with(
        wire: crate::transport::Wire,
        choice: Choice,
        script: Script,
        client: Arc<dyn Client>,
    ) -> (Result<Session>, Arc<Mutex<Seen>>) {
        start_budget(wire, choice, script, client, usize::MAX)
    }

    fn start_budget(
        wire: crate::transport::Wire,
        choice: Choice,
        script: Script,
        client: Arc<dyn Client>,
        budget: usize,
    ) -> (Result<Session>, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let fake = Fake {
            script,
            queue: VecDeque::new(),
            seen: Arc::clone(&seen),
            wire,
            budget,
        };
        let d = Deadline::new("initialize", Duration::from_secs(5));
        let s = Session::open(
            "fake",
            Box::new(fake),
            choice,
            &d,
            Duration::from_secs(5),
            client,
        );
        (s, seen)
    }

    fn sent(wire: &Arc<Mutex<Seen>>) -> Vec<Value> {
        wire.lock().unwrap().sent.clone()
    }

    fn tools_server(
        pages: Vec<(Vec<&'static str>, Option<&'static str>)>,
    ) -> Script {
        let mut pages = pages.into_iter();
        server("2025-11-25", move |m, id, _| {
            assert_eq!(m, method::TOOLS_LIST);
            let (names, next) = pages.next().unwrap_or((vec![], None));
            let tools: Vec<Value> =
                names.iter().map(|n| json!({"name": n})).collect();
            let mut r = json!({"tools": tools});
            if let Some(c) = next {
                r["nextCursor"] = json!(c);
            }
            vec![ok(id, r)]
        })
    }

    #[test]
    fn handshake_negotiates_and_sends_initialized() {
        let (s, wire) = start(server("2025-06-18", |_, _, _| vec![]));
        let s = s.unwrap();
        assert_eq!(s.server.version, Some(Version::V2025_06_18));
        assert_eq!(s.server.protocol, "2025-06-18");
        assert_eq!(s.server.info["name"], "fake");
        assert_eq!(s.server.instructions.as_deref(), Some("be nice"));
        let sent = sent(&wire);
        assert_eq!(sent.len(), 2);
        assert!(mcp::is_initialize(&sent[0]));
        assert_eq!(sent[0]["params"]["protocolVersion"], "2025-11-25");
        assert!(mcp::is_initialized(&sent[1]));
    }

    #[test]
    fn an_unknown_version_is_refused_and_closes() {
        let (s, wire) = start(server("2099-01-01", |_, _, _| vec![]));
        let e = s.unwrap_err();
        assert!(e.to_string().contains("'2099-01-01'"), "{e}");
        assert!(e.to_string().contains("2025-11-25, 2025-06-18"), "{e}");
        assert!(wire.lock().unwrap().closed);
        // No initialized notification after a refusal.
        assert_eq!(sent(&wire).len(), 1);
    }

    #[test]
    fn an_old_but_known_version_is_refused() {
        let (s, _) = start(server("2024-11-05", |_, _, _| vec![]));
        assert!(s.unwrap_err().to_string().contains("'2024-11-05'"));
    }

    #[test]
    fn an_error_to_initialize_names_the_server() {
        let (s, _) = start(Box::new(|m| {
            vec![json!({"jsonrpc": "2.0", "id": m["id"],
                "error": {"code": -32600, "message": "go away"}})]
        }));
        let e = s.unwrap_err();
        assert_eq!(e.server_name(), Some("fake"));
        assert!(
            e.to_string()
                .contains("server error -32600 (InvalidRequest): go away"),
            "{e}"
        );
    }

    #[test]
    fn a_silent_server_times_out_initialize_without_a_cancel() {
        let (s, wire) = start(Box::new(|_| vec![]));
        let e = s.unwrap_err();
        assert_eq!(e.kind(), Kind::Timeout);
        assert!(e.to_string().contains("initialize"), "{e}");
        // initialize is never cancelled (the spec forbids it).
        assert_eq!(sent(&wire).len(), 1);
        assert!(wire.lock().unwrap().closed);
    }

    #[test]
    fn a_timed_out_request_is_cancelled_and_closes() {
        let (s, wire) = start(server("2025-11-25", |_, _, _| vec![]));
        let mut s = s.unwrap();
        let e = s.request(method::TOOLS_LIST, json!({}), "tools/list");
        let e = e.unwrap_err();
        assert_eq!(e.kind(), Kind::Timeout);
        let sent = sent(&wire);
        let cancel = sent.last().unwrap();
        assert_eq!(mcp::method_of(cancel), Some(method::CANCELLED));
        assert_eq!(cancel["params"]["requestId"], sent[2]["id"]);
        assert!(wire.lock().unwrap().closed);
    }

    #[test]
    fn paging_follows_cursors() {
        let (s, wire) = start(tools_server(vec![
            (vec!["a", "b"], Some("p2")),
            (vec!["c"], Some("p3")),
            (vec!["d"], None),
        ]));
        let l = s.unwrap().list_all(mcp::List::Tools).unwrap();
        assert!(l.complete);
        let names: Vec<&str> =
            l.items.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a", "b", "c", "d"]);
        let sent = sent(&wire);
        assert_eq!(sent[2]["params"], json!({}));
        assert_eq!(sent[3]["params"], json!({"cursor": "p2"}));
        assert_eq!(sent[4]["params"], json!({"cursor": "p3"}));
    }

    #[test]
    fn a_repeated_cursor_stops_paging() {
        let (s, _) = start(tools_server(vec![
            (vec!["a"], Some("same")),
            (vec!["b"], Some("same")),
            (vec!["never"], None),
        ]));
        let l = s.unwrap().list_all(mcp::List::Tools).unwrap();
        assert!(!l.complete);
        assert_eq!(l.items.len(), 2);
    }

    #[test]
    fn paging_is_bounded_in_pages() {
        let mut n = 0;
        let script = server("2025-11-25", move |_, id, _| {
            n += 1;
            vec![ok(id, json!({"tools": [], "nextCursor": format!("c{n}")}))]
        });
        let (s, wire) = start(script);
        let l = s.unwrap().list_all(mcp::List::Tools).unwrap();
        assert!(!l.complete);
        assert_eq!(sent(&wire).len(), 2 + MAX_PAGES);
    }

    #[test]
    fn paging_is_bounded_in_items() {
        let script = server("2025-11-25", move |_, id, _| {
            let tools = vec![json!({"name": "t"}); MAX_ITEMS / 2 + 1];
            vec![ok(id, json!({"tools": tools, "nextCursor": "x"}))]
        });
        let (s, _) = start(script);
        let l = s.unwrap().list_all(mcp::List::Tools).unwrap();
        assert!(!l.complete);
        assert_eq!(l.items.len(), MAX_ITEMS);
    }

    #[test]
    fn paging_is_bounded_in_memory_kept() {
        // Each page is small; what the list keeps of them is held to the
        // transport's budget for one message.
        let script = server("2025-11-25", move |_, id, _| {
            let tools = vec![json!({"name": "t"}); 100];
            vec![ok(id, json!({"tools": tools, "nextCursor": id.to_string()}))]
        });
        let one = mcp::size::value_size(&json!({"name": "t"}));
        let (s, _) = start_budget(
            crate::transport::Wire::Stdio,
            Choice::Auto,
            script,
            Arc::new(Declines),
            one * 250,
        );
        let l = s.unwrap().list_all(mcp::List::Tools).unwrap();
        assert!(!l.complete);
        assert_eq!(l.items.len(), 250);
    }

    #[test]
    fn a_page_without_its_array_is_an_error() {
        let script = server("2025-11-25", |_, id, _| {
            vec![ok(id, json!({"items": []}))]
        });
        let (s, _) = start(script);
        let e = s.unwrap().list_all(mcp::List::Prompts).unwrap_err();
        assert!(e.to_string().contains("no 'prompts' array"), "{e}");
    }

    #[test]
    fn responses_match_by_exact_id() {
        let script = server("2025-11-25", |_, id, _| {
            let n = id.as_u64().unwrap();
            vec![
                ok(&json!(n.to_string()), json!({"wrong": "string id"})),
                ok(&json!(n + 100), json!({"wrong": "other id"})),
                ok(id, json!({"right": true})),
            ]
        });
        let (s, _) = start(script);
        let r = s.unwrap().request("x/y", json!({}), "x/y").unwrap();
        assert_eq!(r, json!({"right": true}));
    }

    #[test]
    fn server_requests_are_answered_or_refused_in_between() {
        let script = server("2025-11-25", |m, id, _| {
            if m != method::TOOLS_CALL {
                return vec![];
            }
            vec![
                json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}),
                json!({"jsonrpc": "2.0", "id": 77,
                       "method": "sampling/createMessage", "params": {}}),
                ok(id, json!({"content": []})),
            ]
        });
        let (s, wire) = start(script);
        let mut s = s.unwrap();
        let args = serde_json::Map::new();
        let call =
            mcp::Call::Tool { name: "t", arguments: &args, headers: &[] };
        s.call(&call).unwrap();
        let sent = sent(&wire);
        let pong = sent.iter().find(|m| m["id"] == "p1").unwrap();
        assert_eq!(pong["result"], json!({}));
        let refusal = sent.iter().find(|m| m["id"] == 77).unwrap();
        assert_eq!(refusal["error"]["code"], mcp::code::METHOD_NOT_FOUND);
        // A tool call asks for progress under its own id.
        let req = sent.iter().find(|m| m["method"] == "tools/call").unwrap();
        assert_eq!(req["params"]["_meta"]["progressToken"], req["id"]);
    }

    /// A client that accepts every form with `{"n": 1}` and says what it
    /// was asked, with the batch answers it saw.
    #[derive(Default)]
    struct Accepts(Mutex<Vec<String>>);

    impl Client for Accepts {
        fn capabilities(&self) -> mcp::Capabilities {
            mcp::Capabilities { elicitation_form: true, ..Default::default() }
        }

        fn log_level(&self) -> Option<&str> {
            Some("debug")
        }

        fn serve(
            &self,
            q: &ServerAsk<'_>,
        ) -> std::result::Result<Value, String> {
            self.0.lock().unwrap().push(format!(
                "{} {} {}",
                q.server,
                q.ask.kind(),
                q.answers
                    .map(|a| Value::Object(a.clone()))
                    .unwrap_or_default()
            ));
            Ok(json!({"action": "accept", "content": {"n": 1}}))
        }
    }

    fn form() -> Value {
        json!({"message": "n?", "requestedSchema": {"type": "object",
               "properties": {"n": {"type": "integer"}}}})
    }

    #[test]
    fn both_eras_take_one_path_to_the_client() {
        // 2025: elicitation/create on the stream, answered in between.
        let script = server("2025-11-25", |m, id, _| {
            if m != method::TOOLS_CALL {
                return vec![];
            }
            vec![
                json!({"jsonrpc": "2.0", "id": "e1",
                       "method": "elicitation/create", "params": form()}),
                json!({"jsonrpc": "2.0", "id": "r1", "method": "roots/list"}),
                ok(id, json!({"content": []})),
            ]
        });
        let client = Arc::new(Accepts::default());
        let (s, wire) = start_with(
            crate::transport::Wire::Stdio,
            Choice::Legacy,
            script,
            client.clone(),
        );
        let mut s = s.unwrap();
        let args = Map::new();
        let call =
            mcp::Call::Tool { name: "t", arguments: &args, headers: &[] };
        let mut answers = Map::new();
        answers.insert("n".into(), json!("1"));
        s.set_answers(Some(answers));
        s.call(&call).unwrap();
        let out = sent(&wire);
        assert_eq!(
            out[0]["params"]["capabilities"],
            json!({"elicitation": {"form": {}}})
        );
        let e1 = out.iter().find(|m| m["id"] == "e1").unwrap();
        assert_eq!(e1["result"]["action"], "accept");
        // roots were not declared: refused without reaching the client.
        let r1 = out.iter().find(|m| m["id"] == "r1").unwrap();
        assert_eq!(r1["error"]["code"], mcp::code::METHOD_NOT_FOUND);
        assert_eq!(
            *client.0.lock().unwrap(),
            [r#"fake elicitation/form {"n":"1"}"#]
        );

        // 2026-07-28: the same request as an inputRequests entry.
        let script: Script = Box::new(|m| {
            let id = m.get("id").cloned().unwrap_or(Value::Null);
            match mcp::method_of(m) {
                Some(method::SERVER_DISCOVER) => vec![ok(
                    &id,
                    json!({"supportedVersions": ["2026-07-28"],
                           "capabilities": {"tools": {}}}),
                )],
                Some(method::TOOLS_CALL) => {
                    match m["params"].get("inputResponses") {
                        None => vec![ok(
                            &id,
                            json!({"resultType": "input_required",
                                   "inputRequests": {"k": {
                                       "method": "elicitation/create",
                                       "params": form()}}}),
                        )],
                        Some(r) => {
                            vec![ok(&id, json!({"content": [], "echo": r}))]
                        }
                    }
                }
                _ => vec![],
            }
        });
        let client = Arc::new(Accepts::default());
        let (s, wire) = start_with(
            crate::transport::Wire::Stdio,
            Choice::Modern,
            script,
            client.clone(),
        );
        let mut s = s.unwrap();
        let r = s.call(&call).unwrap();
        assert_eq!(r["echo"]["k"]["content"], json!({"n": 1}));
        let out = sent(&wire);
        let meta = &out[0]["params"]["_meta"];
        assert_eq!(
            meta[mcp::meta::CLIENT_CAPABILITIES],
            json!({"elicitation": {"form": {}}})
        );
        assert_eq!(meta[mcp::meta::LOG_LEVEL], "debug");
        assert_eq!(*client.0.lock().unwrap(), ["fake elicitation/form null"]);
    }

    #[test]
    fn list_changed_notifications_are_collected() {
        let script = server("2025-11-25", |_, id, _| {
            vec![
                json!({"jsonrpc": "2.0", "method": method::TOOLS_LIST_CHANGED}),
                json!({"jsonrpc": "2.0",
                       "method": "notifications/prompts/list_changed"}),
                json!({"jsonrpc": "2.0", "method": method::MESSAGE,
                       "params": {"level": "info", "data": "hi"}}),
                ok(id, json!({})),
            ]
        });
        let (s, _) = start(script);
        let mut s = s.unwrap();
        s.request("x/y", json!({}), "x/y").unwrap();
        let changed = s.take_list_changed();
        assert!(changed.contains(method::TOOLS_LIST_CHANGED));
        assert_eq!(changed.len(), 2);
        assert!(s.take_list_changed().is_empty());
    }

    #[test]
    fn batches_are_refused_unless_the_version_allows_them() {
        let batch = |id: &Value| {
            vec![json!([{"jsonrpc": "2.0", "method": method::PROGRESS},
                        {"jsonrpc": "2.0", "id": id, "result": {"ok": 1}}])]
        };
        let (s, wire) = start(server("2025-11-25", move |_, id, _| batch(id)));
        let e = s.unwrap().request("x/y", json!({}), "x/y").unwrap_err();
        assert!(e.to_string().contains("batch"), "{e}");
        assert!(wire.lock().unwrap().closed);
        let (s, _) = start(server("2025-03-26", move |_, id, _| batch(id)));
        let r = s.unwrap().request("x/y", json!({}), "x/y").unwrap();
        assert_eq!(r, json!({"ok": 1}));
    }

    #[test]
    fn a_result_that_is_not_an_object_is_an_error() {
        let script = server("2025-11-25", |_, id, _| {
            vec![json!({"jsonrpc": "2.0", "id": id, "result": [1]})]
        });
        let (s, _) = start(script);
        let e = s.unwrap().request("x/y", json!({}), "x/y").unwrap_err();
        assert!(e.to_string().contains("not an object"), "{e}");
    }

    #[test]
    fn invalid_messages_are_ignored() {
        let script = server("2025-11-25", |_, id, _| {
            vec![json!(42), json!({"jsonrpc": "2.0"}), ok(id, json!({"x": 1}))]
        });
        let (s, _) = start(script);
        let r = s.unwrap().request("x/y", json!({}), "x/y").unwrap();
        assert_eq!(r, json!({"x": 1}));
    }

    #[test]
    fn close_is_idempotent() {
        let (s, wire) = start(server("2025-11-25", |_, _, _| vec![]));
        let mut s = s.unwrap();
        assert_eq!(s.close(), Closed::Eof);
        assert_eq!(s.close(), Closed::Eof);
        assert!(wire.lock().unwrap().closed);
    }

    // ---- 2026-07-28 ------------------------------------------------------

    use crate::transport::Wire;

    fn discover_result(id: &Value) -> Value {
        ok(
            id,
            json!({"supportedVersions": ["2026-07-28"],
                   "capabilities": {"tools": {}}, "instructions": "hi",
                   "resultType": "complete",
                   "_meta": {"io.modelcontextprotocol/serverInfo":
                       {"name": "modern", "version": "2"}}}),
        )
    }

    /// A 2026-07-28 server: discover answers, `rest` gets the rest.
    fn modern(
        mut rest: impl FnMut(&str, &Value, &Value) -> Vec<Value> + Send + 'static,
    ) -> Script {
        Box::new(move |m| {
            let id = m.get("id").cloned().unwrap_or(Value::Null);
            match mcp::method_of(m) {
                Some(method::SERVER_DISCOVER) => vec![discover_result(&id)],
                Some(method::INITIALIZE) => vec![json!({"jsonrpc": "2.0",
                    "id": id, "error": {"code": -32022, "message": "no",
                    "data": {"supported": ["2026-07-28"]}}})],
                Some(other) => rest(other, &id, &m["params"]),
                None => vec![],
            }
        })
    }

    fn error(id: &Value, code: i64) -> Value {
        json!({"jsonrpc": "2.0", "id": id,
               "error": {"code": code, "message": "no"}})
    }

    #[test]
    fn over_http_auto_discovers_first_and_speaks_modern() {
        let (s, seen) =
            start_on(Wire::Http, Choice::Auto, modern(|_, _, _| vec![]));
        let s = s.unwrap();
        assert_eq!(s.server.version, Some(Version::V2026_07_28));
        assert_eq!(s.server.protocol, "2026-07-28");
        assert_eq!(s.server.info["name"], "modern");
        assert_eq!(s.server.instructions.as_deref(), Some("hi"));
        assert_eq!(s.server.chosen, "server/discover answered");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.sent.len(), 1, "nothing but discover");
        let meta = &seen.sent[0]["params"]["_meta"];
        assert_eq!(meta[mcp::meta::PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(meta[mcp::meta::CLIENT_CAPABILITIES], json!({}));
        let h = &seen.headers[0];
        assert!(h.contains(&("Mcp-Method".into(), "server/discover".into())));
        assert!(
            h.contains(&("MCP-Protocol-Version".into(), "2026-07-28".into()))
        );
    }

    #[test]
    fn over_http_auto_falls_back_to_initialize_on_a_4xx() {
        let script = server("2025-11-25", |_, _, _| vec![]);
        let mut script = script;
        let wrapped: Script = Box::new(move |m| {
            if mcp::method_of(m) == Some(method::SERVER_DISCOVER) {
                return vec![json!({"__http": 400})];
            }
            script(m)
        });
        let (s, seen) = start_on(Wire::Http, Choice::Auto, wrapped);
        let s = s.unwrap();
        assert_eq!(s.server.version, Some(Version::V2025_11_25));
        assert!(
            s.server.chosen.contains("server/discover refused"),
            "{}",
            s.server.chosen
        );
        assert!(s.server.chosen.ends_with("; initialize"));
        let sent = sent(&seen);
        assert!(mcp::is_initialize(&sent[1]));
        // The handshake carries no 2026-07-28 envelope.
        assert!(sent[1]["params"].get("_meta").is_none());
    }

    #[test]
    fn over_http_auto_falls_back_on_an_error_that_is_not_modern() {
        // A 2025 server that answers server/discover as an unknown method.
        let mut legacy = server("2025-06-18", |_, _, _| vec![]);
        let script: Script = Box::new(move |m| {
            if mcp::method_of(m) == Some(method::SERVER_DISCOVER) {
                return vec![error(&m["id"], -32601)];
            }
            legacy(m)
        });
        let (s, _) = start_on(Wire::Http, Choice::Auto, script);
        assert_eq!(s.unwrap().server.version, Some(Version::V2025_06_18));
    }

    #[test]
    fn over_http_an_authentication_failure_is_not_a_fallback() {
        let script: Script = Box::new(|_| vec![json!({"__auth": true})]);
        let (s, seen) = start_on(Wire::Http, Choice::Auto, script);
        assert_eq!(s.unwrap_err().kind(), Kind::Auth);
        assert_eq!(sent(&seen).len(), 1, "no initialize after a 401");
    }

    #[test]
    fn a_minus_32022_listing_modern_is_retried_once() {
        let mut first = true;
        let script: Script = Box::new(move |m| {
            let id = m["id"].clone();
            if std::mem::take(&mut first) {
                return vec![json!({"jsonrpc": "2.0", "id": id, "error":
                    {"code": -32022, "message": "first",
                     "data": {"supported": ["2026-07-28"]}}})];
            }
            vec![discover_result(&id)]
        });
        let (s, seen) = start_on(Wire::Http, Choice::Auto, script);
        assert_eq!(s.unwrap().server.protocol, "2026-07-28");
        let sent = sent(&seen);
        assert_eq!(sent.len(), 2);
        assert_ne!(sent[0]["id"], sent[1]["id"]);
    }

    #[test]
    fn over_stdio_auto_opens_with_initialize_then_switches_on_minus_32022() {
        let (s, seen) = start(modern(|_, _, _| vec![]));
        let s = s.unwrap();
        assert_eq!(s.server.protocol, "2026-07-28");
        assert_eq!(
            s.server.chosen,
            "initialize answered -32022 listing 2026-07-28"
        );
        let sent = sent(&seen);
        assert!(mcp::is_initialize(&sent[0]));
        assert_eq!(mcp::method_of(&sent[1]), Some(method::SERVER_DISCOVER));
        // No notifications/initialized to a modern server.
        assert_eq!(sent.len(), 2);
    }

    #[test]
    fn legacy_by_choice_names_a_modern_only_server() {
        let (s, seen) =
            start_on(Wire::Stdio, Choice::Legacy, modern(|_, _, _| vec![]));
        let e = s.unwrap_err().to_string();
        assert!(e.contains("-32022 (UnsupportedProtocolVersion)"), "{e}");
        assert!(e.contains("speaks 2026-07-28 only"), "{e}");
        assert_eq!(sent(&seen).len(), 1);
    }

    #[test]
    fn modern_by_choice_never_sends_initialize() {
        let (s, seen) =
            start_on(Wire::Stdio, Choice::Modern, modern(|_, _, _| vec![]));
        assert_eq!(s.unwrap().server.chosen, "configured");
        let sent = sent(&seen);
        assert_eq!(sent.len(), 1);
        assert_eq!(mcp::method_of(&sent[0]), Some(method::SERVER_DISCOVER));
    }

    #[test]
    fn modern_by_choice_to_a_2025_server_names_the_request_and_auto() {
        // server-pdf (TS SDK v2 2.0.0) answers server/discover -32601.
        let script = server("2025-11-25", |_, id, _| vec![error(id, -32601)]);
        let (s, seen) = start_on(Wire::Stdio, Choice::Modern, script);
        let e = s.unwrap_err().to_string();
        assert!(e.contains("server/discover: server error -32601"), "{e}");
        assert!(e.contains("try --protocol auto"), "{e}");
        assert_eq!(sent(&seen).len(), 1);
    }

    #[test]
    fn input_required_is_retried_with_the_state_and_a_new_id() {
        let script = modern(|m, id, params| {
            assert_eq!(m, method::TOOLS_CALL);
            if params.get("requestState") == Some(&json!("s1")) {
                return vec![ok(
                    id,
                    json!({"resultType": "complete",
                    "content": [], "echo": params.clone()}),
                )];
            }
            vec![ok(
                id,
                json!({"resultType": "input_required",
                "requestState": "s1", "inputRequests": {"q": {
                    "method": "elicitation/create",
                    "params": {"message": "sure?"}}}}),
            )]
        });
        let client = Arc::new(Accepts::default());
        let (s, seen) =
            start_with(Wire::Stdio, Choice::Modern, script, client.clone());
        let mut s = s.unwrap();
        let args = serde_json::Map::new();
        let r = s
            .call(&mcp::Call::Tool {
                name: "t",
                arguments: &args,
                headers: &[],
            })
            .unwrap();
        assert_eq!(
            r["echo"]["inputResponses"],
            json!({"q": {"action": "accept", "content": {"n": 1}}})
        );
        let sent = sent(&seen);
        let calls: Vec<&Value> =
            sent.iter().filter(|m| m["method"] == "tools/call").collect();
        assert_eq!(calls.len(), 2);
        assert_ne!(calls[0]["id"], calls[1]["id"]);
        assert!(calls[0]["params"].get("requestState").is_none());
        // Every round carries the envelope.
        assert_eq!(
            calls[1]["params"]["_meta"][mcp::meta::PROTOCOL_VERSION],
            "2026-07-28"
        );
    }

    #[test]
    fn input_required_without_state_sends_none_and_rounds_are_bounded() {
        let script = modern(|_, id, params| {
            assert!(params.get("requestState").is_none(), "{params}");
            vec![ok(id, json!({"resultType": "input_required"}))]
        });
        let (s, seen) = start_on(Wire::Stdio, Choice::Modern, script);
        let mut s = s.unwrap();
        let args = serde_json::Map::new();
        let e = s
            .call(&mcp::Call::Prompt { name: "p", arguments: &args })
            .unwrap_err();
        assert!(e.to_string().contains("after 8 rounds"), "{e}");
        let gets = sent(&seen)
            .iter()
            .filter(|m| m["method"] == "prompts/get")
            .count();
        assert_eq!(gets, MAX_INPUT_ROUNDS + 1);
    }

    #[test]
    fn what_this_client_cannot_answer_is_refused() {
        let script = modern(|_, id, _| {
            vec![ok(
                id,
                json!({"resultType": "input_required",
                "inputRequests": {"s": {"method": "sampling/createMessage"}}}),
            )]
        });
        let (s, _) = start_on(Wire::Stdio, Choice::Modern, script);
        let e = s.unwrap().request("tools/call", json!({}), "x").unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("did not declare the capability for sampling"),
            "{e}"
        );
    }

    #[test]
    fn input_required_outside_the_three_methods_and_unknown_types_fail() {
        let script = modern(|m, id, _| match m {
            "tools/list" => {
                vec![ok(id, json!({"resultType": "input_required"}))]
            }
            _ => vec![ok(id, json!({"resultType": "later"}))],
        });
        let (s, _) = start_on(Wire::Stdio, Choice::Modern, script);
        let mut s = s.unwrap();
        let e = s.list_all(mcp::List::Tools).unwrap_err().to_string();
        assert!(e.contains("does not allow"), "{e}");
        let e = s.request("prompts/list", json!({}), "x").unwrap_err();
        assert!(e.to_string().contains("unknown resultType 'later'"), "{e}");
    }

    #[test]
    fn ttl_is_the_shortest_of_the_pages() {
        let mut page = 0;
        let script = modern(move |_, id, _| {
            page += 1;
            let (ttl, next) = if page == 1 {
                (5000, json!("p2"))
            } else {
                (300, Value::Null)
            };
            let mut r = json!({"tools": [], "ttlMs": ttl});
            if !next.is_null() {
                r["nextCursor"] = next;
            }
            vec![ok(id, r)]
        });
        let (s, _) = start_on(Wire::Stdio, Choice::Modern, script);
        let l = s.unwrap().list_all(mcp::List::Tools).unwrap();
        assert_eq!(l.ttl, Some(Duration::from_millis(300)));
    }

    #[test]
    fn over_stdio_an_initialize_answered_2026_switches_to_discover() {
        // A modern server that answers initialize with a result naming
        // 2026-07-28 (as the conformance mocks do) instead of -32022.
        let script: Script = Box::new(|m| {
            let id = m.get("id").cloned().unwrap_or(Value::Null);
            match mcp::method_of(m) {
                Some(method::INITIALIZE) => vec![ok(
                    &id,
                    json!({
                    "protocolVersion": "2026-07-28",
                    "capabilities": {}, "serverInfo": {"name": "m", "version": "1"}}),
                )],
                Some(method::SERVER_DISCOVER) => vec![ok(
                    &id,
                    json!({
                    "supportedVersions": ["2026-07-28"], "capabilities": {},
                    "resultType": "complete"}),
                )],
                _ => vec![],
            }
        });
        let (s, _) = start(script);
        let s = s.map_err(|e| e.to_string()).unwrap();
        assert_eq!(s.server.protocol, "2026-07-28");
    }

    #[test]
    fn a_hostile_protocol_version_is_clipped() {
        let long = "x".repeat(100_000);
        let script: Script = Box::new(move |m| {
            let id = m.get("id").cloned().unwrap_or(Value::Null);
            vec![ok(&id, json!({"protocolVersion": long.clone()}))]
        });
        let (s, _) = start(script);
        let e = s.unwrap_err().to_string();
        assert!(e.len() < 2000, "error is {} bytes", e.len());
    }
}
