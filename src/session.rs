//! The MCP session on top of a transport: lifecycle, requests, paging.
//!
//! `initialize` negotiates the protocol version (one of
//! [`mcp::Version::HANDSHAKE`]; anything else is refused), then every
//! request waits for its response under a named deadline while answering
//! what the server asks in the meantime, as [`mcp::answer`] decides.
//! Responses are matched by exact id (`1` is not `"1"`); late and unknown
//! ids are ignored. A request that times out is cancelled and closes the
//! server. What a message *is* comes from [`mcp::classify`]; this module
//! only decides what to do about it.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::mcp::{self, Incoming, Outcome, Version, method};
use crate::transport::{Closed, Transport};
use crate::{msg, term};

/// Paging bounds: a server cannot keep us listing forever.
pub(crate) const MAX_PAGES: usize = 100;
pub(crate) const MAX_ITEMS: usize = 10_000;

/// What a server told us about itself in `initialize`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerInfo {
    /// The negotiated revision; `None` until `initialize` answered.
    pub(crate) version: Option<Version>,
    pub(crate) protocol: String,
    pub(crate) info: Value,
    pub(crate) capabilities: Value,
    pub(crate) instructions: Option<String>,
}

/// The items of a paged list, and whether a bound cut it short.
#[derive(Debug, Clone, Default)]
pub(crate) struct Listing {
    pub(crate) items: Vec<Value>,
    pub(crate) complete: bool,
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
    closed: Option<Closed>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.name)
            .field("protocol", &self.server.protocol)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Runs `initialize` and `notifications/initialized` within `startup`.
    pub(crate) fn initialize(
        name: &str,
        transport: Box<dyn Transport>,
        startup: &Deadline,
        request_timeout: Duration,
    ) -> Result<Session> {
        let mut s = Session {
            name: name.to_string(),
            transport,
            next_id: 1,
            server: ServerInfo::default(),
            request_timeout,
            list_changed: BTreeSet::new(),
            closed: None,
        };
        let result = s
            .request_with(
                method::INITIALIZE,
                mcp::initialize_params(),
                startup,
            )
            .map_err(|e| e.for_server(name))?;
        let protocol = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let Some(version) =
            Version::parse(&protocol).filter(|v| v.negotiable())
        else {
            s.close();
            return Err(Error::server(format!(
                "server answered protocol version '{}', which rivumi-mcp \
                 does not speak (it speaks {})",
                term::line(&protocol),
                Version::negotiable_list()
            ))
            .for_server(name));
        };
        s.server = ServerInfo {
            version: Some(version),
            protocol,
            info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
            capabilities: result
                .get("capabilities")
                .cloned()
                .unwrap_or_else(|| json!({})),
            instructions: result
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        s.transport
            .send(&mcp::initialized(), startup)
            .map_err(|e| e.for_server(name))?;
        msg::debug(&format!(
            "server '{name}': initialized, protocol {}",
            s.server.protocol
        ));
        crate::journal::event(
            "initialized",
            json!({"server": name, "protocol": s.server.protocol,
                   "serverInfo": s.server.info}),
        );

        Ok(s)
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Takes the set of `*/list_changed` notifications seen so far.
    pub(crate) fn take_list_changed(&mut self) -> BTreeSet<String> {
        std::mem::take(&mut self.list_changed)
    }

    /// Sends a request and waits for its result under the per-request
    /// deadline, named after the method (or `what`).
    pub(crate) fn request(
        &mut self,
        method: &str,
        params: Value,
        what: &str,
    ) -> Result<Value> {
        let d = Deadline::new(what, self.request_timeout);
        self.request_with(method, params, &d)
            .map_err(|e| e.for_server(&self.name))
    }

    /// Makes one call ([`mcp::Call`]) under the per-request deadline.
    pub(crate) fn call(&mut self, call: &mcp::Call<'_>) -> Result<Value> {
        self.request(call.method(), call.params(), &call.what())
    }

    fn request_with(
        &mut self,
        method: &str,
        mut params: Value,
        deadline: &Deadline,
    ) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        if mcp::wants_progress(method) {
            // Ask for progress notices; shown on a terminal only.
            mcp::with_progress_token(&mut params, id);
        }
        self.transport.send(&mcp::request(id, method, params), deadline)?;
        let want = json!(id);
        loop {
            let msg = match self.transport.recv(deadline) {
                Ok(m) => m,
                Err(e) if e.kind() == Kind::Timeout => {
                    if method != method::INITIALIZE {
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
            let mut result = None;
            for m in batch {
                if let Some(r) = self.handle(m, &want, deadline)? {
                    result = Some(r);
                }
            }
            if let Some(r) = result {
                return r;
            }
        }
    }

    /// Handles one incoming message; `Some` when it answers `want`.
    fn handle(
        &mut self,
        m: Value,
        want: &Value,
        deadline: &Deadline,
    ) -> Result<Option<Result<Value>>> {
        match mcp::classify(m) {
            Incoming::Request { id, method, .. } => {
                self.answer(&method, id, deadline)?;
                Ok(None)
            }
            Incoming::Notification { method, params } => {
                self.notification(&method, &params);
                Ok(None)
            }
            Incoming::Response { id, outcome } if &id == want => {
                Ok(Some(match outcome {
                    Outcome::Result(r) => Ok(r),
                    Outcome::BadResult => Err(Error::server(
                        "response 'result' is not an object",
                    )),
                    Outcome::Error(e) => Err(Error::server(e.describe())),
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

    /// Answers a request from the server.
    fn answer(&mut self, method: &str, id: Value, d: &Deadline) -> Result<()> {
        let reply = match mcp::answer(method) {
            Ok(result) => mcp::response(id, result),
            Err(why) => {
                msg::debug(&format!(
                    "server '{}': refused its request '{}' (not supported)",
                    self.name,
                    term::line(method)
                ));
                mcp::error_response(id, mcp::code::METHOD_NOT_FOUND, &why)
            }
        };
        self.transport.send(&reply, d)
    }

    fn notification(&mut self, method: &str, p: &Value) {
        match method {
            method::MESSAGE => {
                let level =
                    p.get("level").and_then(Value::as_str).unwrap_or("?");
                let data = match p.get("data") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                msg::server_line(&self.name, &format!("log {level}: {data}"));
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
                    .map(|m| format!(" {m}"))
                    .unwrap_or_default();
                msg::line(&format!(
                    "[{}] progress {n}{total}{}",
                    self.name,
                    term::line(&text)
                ));
            }
            m if mcp::is_list_changed(m) => {
                msg::debug(&format!("server '{}': {m}", self.name));
                self.list_changed.insert(m.to_string());
            }
            _ => {}
        }
    }

    /// Follows `nextCursor` through every page of a list method.
    pub(crate) fn list_all(&mut self, list: mcp::List) -> Result<Listing> {
        let (method, key) = (list.method(), list.key());
        let mut items = vec![];
        let mut cursor: Option<String> = None;
        let mut seen = BTreeSet::new();
        for page in 1..=MAX_PAGES {
            let params = mcp::List::page_params(cursor.as_deref());
            let what = format!("{method} (page {page})");
            let r = self.request(method, params, &what)?;
            match r.get(key) {
                Some(Value::Array(a)) => {
                    let room = MAX_ITEMS - items.len();
                    items.extend(a.iter().take(room).cloned());
                    if a.len() > room {
                        self.incomplete(
                            method,
                            &format!("more than {MAX_ITEMS} items"),
                        );
                        return Ok(Listing { items, complete: false });
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
                        return Ok(Listing { items, complete: false });
                    }
                    cursor = Some(c.clone());
                }
                _ => return Ok(Listing { items, complete: true }),
            }
        }
        self.incomplete(method, &format!("more than {MAX_PAGES} pages"));
        Ok(Listing { items, complete: false })
    }

    fn incomplete(&self, method: &str, why: &str) {
        msg::warn(&format!(
            "server '{}': {method}: stopped paging ({why}); the list is \
             incomplete",
            self.name
        ));
    }

    /// Closes the transport (and so the server). Idempotent.
    pub(crate) fn close(&mut self) -> Closed {
        if let Some(c) = self.closed {
            return c;
        }
        let c = self.transport.close();
        self.closed = Some(c);
        c
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
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
    struct Wire {
        sent: Vec<Value>,
        closed: bool,
    }

    /// An in-memory transport: no process, no socket. An empty queue is
    /// a silent server, so `recv` times out at once.
    struct Fake {
        script: Script,
        queue: VecDeque<Value>,
        wire: Arc<Mutex<Wire>>,
    }

    impl Transport for Fake {
        fn send(&mut self, msg: &Value, _: &Deadline) -> Result<()> {
            self.wire.lock().unwrap().sent.push(msg.clone());
            let replies = (self.script)(msg);
            self.queue.extend(replies);
            Ok(())
        }

        fn recv(&mut self, deadline: &Deadline) -> Result<Value> {
            self.queue.pop_front().ok_or_else(|| deadline.error())
        }

        fn close(&mut self) -> Closed {
            self.wire.lock().unwrap().closed = true;
            Closed::Eof
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

    fn start(script: Script) -> (Result<Session>, Arc<Mutex<Wire>>) {
        let wire = Arc::new(Mutex::new(Wire::default()));
        let fake =
            Fake { script, queue: VecDeque::new(), wire: Arc::clone(&wire) };
        let d = Deadline::new("initialize", Duration::from_secs(5));
        let s = Session::initialize(
            "fake",
            Box::new(fake),
            &d,
            Duration::from_secs(5),
        );
        (s, wire)
    }

    fn sent(wire: &Arc<Mutex<Wire>>) -> Vec<Value> {
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
        assert!(e.to_string().contains("server error -32600: go away"), "{e}");
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
        let call = mcp::Call::Tool { name: "t", arguments: &args };
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
}
