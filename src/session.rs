//! The MCP session on top of a transport: lifecycle, requests, paging.
//!
//! `initialize` negotiates the protocol version (2025-11-25, 2025-06-18 or
//! 2025-03-26; anything else is refused), then every request waits for its
//! response under a named deadline while answering what the server asks in
//! the meantime: `ping` gets `{}`; `roots/list`, `sampling/createMessage`,
//! `elicitation/create` and every other request get -32601 (this client
//! declares no capabilities). Responses are matched by exact id (`1` is
//! not `"1"`); late and unknown ids are ignored. A request that times out
//! is cancelled and closes the server.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};

use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::transport::{Closed, Transport};
use crate::{msg, term};

/// The protocol versions this client speaks, newest first.
pub(crate) const VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26"];

/// Paging bounds: a server cannot keep us listing forever.
pub(crate) const MAX_PAGES: usize = 100;
pub(crate) const MAX_ITEMS: usize = 10_000;

/// What a server told us about itself in `initialize`.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerInfo {
    pub(crate) protocol: String,
    pub(crate) info: Value,
    pub(crate) capabilities: Value,
    pub(crate) instructions: Option<String>,
}

/// What this client sends in `initialize`: the newest version it speaks,
/// no capabilities, and its name and version.
pub(crate) fn initialize_params() -> Value {
    json!({
        "protocolVersion": VERSIONS[0],
        "capabilities": {},
        "clientInfo": {"name": "rivumi-mcp", "version": env!("CARGO_PKG_VERSION")},
    })
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
            .request_with("initialize", initialize_params(), startup)
            .map_err(|e| e.for_server(name))?;
        let protocol = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !VERSIONS.contains(&protocol.as_str()) {
            s.close();
            return Err(Error::server(format!(
                "server answered protocol version '{}', which rivumi-mcp \
                 does not speak (it speaks {})",
                term::line(&protocol),
                VERSIONS.join(", ")
            ))
            .for_server(name));
        }
        s.server = ServerInfo {
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
        s.notify("notifications/initialized", None, startup)
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

    /// Sends a notification.
    pub(crate) fn notify(
        &mut self,
        method: &str,
        params: Option<Value>,
        deadline: &Deadline,
    ) -> Result<()> {
        let mut m = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            m["params"] = p;
        }
        self.transport.send(&m, deadline)
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

    fn request_with(
        &mut self,
        method: &str,
        mut params: Value,
        deadline: &Deadline,
    ) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        if method == "tools/call" {
            // Ask for progress notices; shown on a terminal only.
            params["_meta"] = json!({"progressToken": id});
        }
        let req = json!({
            "jsonrpc": "2.0", "id": id, "method": method, "params": params,
        });
        self.transport.send(&req, deadline)?;
        let want = json!(id);
        loop {
            let msg = match self.transport.recv(deadline) {
                Ok(m) => m,
                Err(e) if e.kind() == Kind::Timeout => {
                    if method != "initialize" {
                        let cancel = json!({"requestId": id,
                            "reason": "timed out"});
                        let d =
                            Deadline::new("cancel", Duration::from_secs(1));
                        let _ = self.notify(
                            "notifications/cancelled",
                            Some(cancel),
                            &d,
                        );
                    }
                    self.close();
                    return Err(e);
                }
                Err(e) => return Err(e),
            };
            let batch = match msg {
                Value::Array(items) => {
                    if self.server.protocol != "2025-03-26" {
                        self.close();
                        return Err(Error::server(
                            "server sent a JSON-RPC batch, which this \
                             protocol version does not allow",
                        ));
                    }
                    items
                }
                m => vec![m],
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
        let Value::Object(obj) = &m else {
            msg::debug(&format!(
                "server '{}': ignored a message that is not an object",
                self.name
            ));
            return Ok(None);
        };
        let method = obj.get("method").and_then(Value::as_str);
        match (method, obj.get("id")) {
            (Some(method), Some(id)) => {
                self.answer(method, id.clone(), deadline)?;
                Ok(None)
            }
            (Some(method), None) => {
                self.notification(method, obj.get("params"));
                Ok(None)
            }
            (None, Some(id)) if id == want => {
                if let Some(r) = obj.get("result") {
                    if !r.is_object() {
                        return Ok(Some(Err(Error::server(
                            "response 'result' is not an object",
                        ))));
                    }
                    return Ok(Some(Ok(r.clone())));
                }
                let err = obj.get("error").cloned().unwrap_or(Value::Null);
                Ok(Some(Err(rpc_error(&err))))
            }
            (None, Some(id)) => {
                msg::debug(&format!(
                    "server '{}': ignored a response with unknown id {id}",
                    self.name
                ));
                Ok(None)
            }
            (None, None) => {
                msg::debug(&format!(
                    "server '{}': ignored a message without method or id",
                    self.name
                ));
                Ok(None)
            }
        }
    }

    /// Answers a request from the server.
    fn answer(&mut self, method: &str, id: Value, d: &Deadline) -> Result<()> {
        let reply = if method == "ping" {
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        } else {
            msg::debug(&format!(
                "server '{}': refused its request '{}' (not supported)",
                self.name,
                term::line(method)
            ));
            json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": -32601,
                "message": format!("method not supported by this client: {method}"),
            }})
        };
        self.transport.send(&reply, d)
    }

    fn notification(&mut self, method: &str, params: Option<&Value>) {
        let p = params.cloned().unwrap_or(Value::Null);
        match method {
            "notifications/message" => {
                let level =
                    p.get("level").and_then(Value::as_str).unwrap_or("?");
                let data = match p.get("data") {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) => v.to_string(),
                    None => String::new(),
                };
                msg::server_line(&self.name, &format!("log {level}: {data}"));
            }
            "notifications/progress"
                if msg::stderr_is_tty() && msg::level() >= 1 =>
            {
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
            m if m.ends_with("/list_changed") => {
                msg::debug(&format!("server '{}': {m}", self.name));
                self.list_changed.insert(m.to_string());
            }
            _ => {}
        }
    }

    /// Follows `nextCursor` through every page of a list method.
    pub(crate) fn list_all(
        &mut self,
        method: &str,
        key: &str,
    ) -> Result<Listing> {
        let mut items = vec![];
        let mut cursor: Option<String> = None;
        let mut seen = BTreeSet::new();
        for page in 1..=MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
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

/// A JSON-RPC error object as our error. The server's message is cut at
/// 500 bytes and its data at 200 (with a marker saying how much was cut),
/// so that a hostile server cannot flood the terminal or the journal
/// through an error.
fn rpc_error(err: &Value) -> Error {
    let code = err.get("code").and_then(Value::as_i64);
    let message = err.get("message").and_then(Value::as_str).unwrap_or("");
    let mut text = match code {
        Some(c) => format!(
            "server error {c}: {}",
            term::clip(&term::line(message), 500)
        ),
        None => format!(
            "malformed error response: {}",
            term::clip(&err.to_string(), 200)
        ),
    };
    if let Some(data) = err.get("data") {
        text.push_str(&format!(
            " ({})",
            term::clip(&term::line(&data.to_string()), 200)
        ));
    }
    Error::server(text)
}
