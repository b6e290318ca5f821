//! The gateway: what `serve` answers its host, for both eras and both
//! fronts. A front reads a request, hands it to [`Gateway::handle`] with
//! what it knows of the host ([`Host`]) and a way to ask the host things
//! ([`HostLink`]), and writes the reply.
//!
//! Every tool call, resource read and prompt get goes through the
//! executor with an asker that asks the host ([`HostAsker`]); a refusal
//! of a tool call is a tool result with `isError: true`, never a
//! protocol error a host might retry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::upstream::Pool;
use crate::cancel::Abort;
use crate::error::{Error, Kind};
use crate::executor::{Action, Asked, Asker, Executor};
use crate::mcp::{self, Capabilities, Version, code, host, method};
use crate::naming::Class;
use crate::{msg, term, tool};

/// How many items one page of the gateway's own lists holds.
const PAGE: usize = 100;
/// How long the host may take to answer an approval form.
pub(crate) const ASK_TIMEOUT: Duration = Duration::from_secs(300);
/// How much of the arguments an approval form shows.
const SUMMARY: usize = 1000;
/// The `inputRequests` key of the approval form (2026-07-28).
const APPROVAL_KEY: &str = "rivumi-approval";
/// The host keys of `subscriptions/listen` requests (apart from the
/// fronts' session keys, which count from 0).
static LISTENS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(1 << 48);
/// The `_meta` key recording which server an item comes from.
pub(crate) const SERVER_META: &str = "dev.rivumi-mcp/server";

/// What the gateway can ask of its host while it handles a request.
pub(crate) trait HostLink: Send + Sync {
    /// Sends a request to the host and waits for its result.
    fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> std::result::Result<Value, String>;
    /// Sends a notification, best effort.
    fn notify(&self, method: &str, params: Value);
    /// Keeps a long-lived stream open (an SSE comment; nothing elsewhere);
    /// false when the host is gone.
    fn keep_alive(&self) -> bool {
        true
    }
}

/// The params of a `notifications/cancelled` for request `id`.
pub(crate) fn cancel_params(id: &Value) -> Value {
    json!({"requestId": id, "reason": "the request it belongs to was cancelled"})
}

/// A host's requests in flight, by id, that it may cancel
/// (`notifications/cancelled`): each handled under its [`Abort`]. As
/// many as the front lets run at once.
#[derive(Debug, Default)]
pub(crate) struct Aborts(Mutex<HashMap<String, Abort>>);

impl Aborts {
    /// The abort of a request just read (`initialize` is never
    /// cancelled); a request id already in flight keeps its own.
    pub(crate) fn start(&self, id: &Value, method: &str) -> Option<Abort> {
        if method == method::INITIALIZE {
            return None;
        }
        let a = Abort::default();
        self.lock().entry(id.to_string()).or_insert_with(|| a.clone());
        Some(a)
    }

    /// A `notifications/cancelled` from the host: the request it names,
    /// if in flight, is given up (on its own thread: cancelling upstream
    /// may take a moment). Unknown ids are ignored, as races are expected.
    pub(crate) fn cancel(&self, params: &Value) {
        let Some(id) = params.get("requestId") else { return };
        let Some(a) = self.lock().get(&id.to_string()).cloned() else {
            return;
        };
        if a.fired() {
            return;
        }
        msg::debug(&format!(
            "serve: the host cancelled request {}",
            term::clip(&id.to_string(), 60)
        ));
        crate::journal::event("serve_cancelled", json!({"by": "host"}));
        std::thread::spawn(move || a.fire());
    }

    /// The request ended: forgotten. True when it was given up (it then
    /// gets no response).
    pub(crate) fn finish(&self, id: &Value, a: Option<&Abort>) -> bool {
        let key = id.to_string();
        let mut all = self.lock();
        if let (Some(mine), Some(held)) = (a, all.get(&key))
            && mine.same(held)
        {
            all.remove(&key);
        }
        a.is_some_and(Abort::fired)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Abort>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the gateway knows of a host: its era and its capabilities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Host {
    /// The handshake era's negotiated revision; `None` before
    /// `initialize` (or for a 2026-07-28 host).
    pub(crate) version: Option<Version>,
    pub(crate) caps: Capabilities,
    /// Which host session it is (stdio has one, 0), for what it is told
    /// between requests ([`super::hosts::Hosts`]).
    pub(crate) key: u64,
}

/// A JSON-RPC error reply.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RpcFail {
    pub(crate) code: i64,
    pub(crate) message: String,
    pub(crate) data: Option<Value>,
}

impl RpcFail {
    pub(crate) fn new(code: i64, message: impl Into<String>) -> RpcFail {
        RpcFail { code, message: message.into(), data: None }
    }

    /// The error response to request `id`.
    pub(crate) fn response(&self, id: Value) -> Value {
        let mut r = mcp::error_response(id, self.code, &self.message);
        if let Some(d) = &self.data {
            r["error"]["data"] = d.clone();
        }
        r
    }
}

/// The reply to one request.
pub(crate) type Reply = std::result::Result<Value, RpcFail>;

/// What the gateway answers with, fixed at start.
pub(crate) struct Gateway<'a> {
    pub(crate) pool: Pool<'a>,
    pub(crate) exec: Executor,
    /// Calls of 2026-07-28 hosts waiting for their answers.
    pub(crate) parked: super::parked::Parked,
    /// What hosts are told between their requests, and their
    /// subscriptions.
    pub(crate) hosts: Arc<super::hosts::Hosts>,
}

impl std::fmt::Debug for Gateway<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").finish_non_exhaustive()
    }
}

/// What the gateway tells hosts about itself.
fn server_info() -> Value {
    json!({"name": "rivumi-mcp-serve", "title": "rivumi-mcp serve",
           "version": env!("CARGO_PKG_VERSION")})
}

/// The gateway's capabilities: `resources.subscribe` when some upstream
/// takes subscriptions (and the host's era has them).
fn capabilities(subscribe: bool) -> Value {
    json!({
        "tools": {"listChanged": true},
        "resources": {"listChanged": true, "subscribe": subscribe},
        "prompts": {"listChanged": true},
        "completions": {},
        "logging": {},
    })
}

/// Whether a host request is of the 2026-07-28 era, and its host.
pub(crate) enum Era {
    Handshake,
    Modern(Host),
}

impl Gateway<'_> {
    /// Answers one request. `host` is the connection's handshake state
    /// (updated by `initialize`); `link` reaches the host, when it can
    /// be reached while the request runs.
    pub(crate) fn handle<'s>(
        &'s self,
        host: &mut Host,
        link: Option<&Arc<dyn HostLink>>,
        spawn: Option<&dyn super::Spawner<'s>>,
        (id, name): (&Value, &str),
        params: &Value,
    ) -> Reply {
        let era = match host::modern_version(params) {
            Some(Ok(())) => Era::Modern(Host {
                version: None,
                caps: host::modern_capabilities(params),
                key: host.key,
            }),
            Some(Err(v)) => {
                return Err(RpcFail {
                    code: code::UNSUPPORTED_PROTOCOL_VERSION,
                    message: format!("unsupported protocol version '{v}'"),
                    data: Some(host::unsupported_data()),
                });
            }
            None => Era::Handshake,
        };
        if name == method::INITIALIZE {
            let v = host::negotiate(params);
            *host = Host {
                version: Some(v),
                caps: host::host_capabilities(params.get("capabilities")),
                key: host.key,
            };
            let instructions = self.instructions();
            return Ok(host::initialize_result(
                v,
                capabilities(self.subscribable()),
                server_info(),
                Some(&instructions),
            ));
        }
        if name == method::SERVER_DISCOVER {
            let instructions = self.instructions();
            // Subscriptions go through subscriptions/listen there.
            return Ok(host::discover_result(
                capabilities(self.subscribable()),
                &server_info(),
                Some(&instructions),
            ));
        }
        let h = match era {
            Era::Modern(h) => h,
            Era::Handshake if host.version.is_some() => *host,
            Era::Handshake if name == method::PING => *host,
            Era::Handshake => {
                return Err(RpcFail::new(
                    code::INVALID_REQUEST,
                    "send initialize first (or 2026-07-28 requests with \
                     their _meta)",
                ));
            }
        };
        let modern = h.version.is_none();
        if modern && name == method::SUBSCRIPTIONS_LISTEN {
            let mut r = self.listen(link, id, params);
            if let Ok(v) = &mut r {
                host::modern_result(v, &server_info(), name);
            }
            return r;
        }
        // 2026-07-28 hosts are told things about their request (progress,
        // log messages) but never asked anything on its stream.
        let notify = link;
        let link = if modern { None } else { link };
        let current = super::Current {
            link: link.cloned(),
            notify: notify.cloned(),
            caps: h.caps,
            progress: progress_token(params),
            // A 2026-07-28 request without a log level wants none.
            level: modern.then(|| {
                params
                    .get("_meta")
                    .and_then(|m| m.get(mcp::meta::LOG_LEVEL))
                    .and_then(Value::as_str)
                    .and_then(super::level_rank)
                    .unwrap_or(usize::MAX)
            }),
        };
        let mut r = if modern && asks(name) {
            self.modern_call(h, spawn, current, name, params)
        } else {
            let _current = super::CurrentHost::set(current);
            self.dispatch(&h, link, modern, name, params)
        };
        if modern && let Ok(v) = &mut r {
            host::modern_result(v, &server_info(), name);
        }
        if let Some(l) = link {
            for m in self.pool.take_changed() {
                l.notify(&m, json!({}));
            }
        }
        r
    }

    /// A 2026-07-28 call that may need input: a retry of a parked call
    /// resumes it; otherwise, when the host declared something it could
    /// be asked, the call runs on a worker that may park on a question.
    fn modern_call<'s>(
        &'s self,
        h: Host,
        spawn: Option<&dyn super::Spawner<'s>>,
        current: super::Current,
        name: &str,
        params: &Value,
    ) -> Reply {
        let (responses, state) = host::input_responses(params);
        let here = (current.notify.clone(), current.progress.clone());
        if let Some(state) =
            state.filter(|s| s.starts_with(super::parked::PREFIX))
        {
            return self.parked.resume(state, responses, here).unwrap_or_else(
                || {
                    Err(RpcFail::new(
                        code::INVALID_PARAMS,
                        "requestState names no call waiting here (expired or \
                     already answered)",
                    ))
                },
            );
        }
        let c = h.caps;
        let askable =
            c.elicitation_form || c.elicitation_url || c.sampling || c.roots;
        let Some(spawn) = spawn.filter(|_| askable) else {
            let _current = super::CurrentHost::set(current);
            return self.dispatch(&h, None, true, name, params);
        };
        let (name, params) = (name.to_string(), params.clone());
        let abort = crate::cancel::current();
        self.parked.start(
            spawn,
            here,
            Box::new(move |link| {
                let _entered = abort.as_ref().map(Abort::enter);
                // What the worker tells the host goes through the request
                // that waits on it at the time.
                let _current = super::CurrentHost::set(super::Current {
                    link: Some(link.clone()),
                    notify: Some(link),
                    ..current
                });
                self.dispatch(&h, None, true, &name, &params)
            }),
        )
    }

    fn dispatch(
        &self,
        h: &Host,
        link: Option<&Arc<dyn HostLink>>,
        modern: bool,
        name: &str,
        params: &Value,
    ) -> Reply {
        let cursor = params.get("cursor").and_then(Value::as_str);
        match name {
            method::PING | method::LOGGING_SET_LEVEL => Ok(json!({})),
            method::TOOLS_LIST => page("tools", &self.tools(), cursor),
            method::PROMPTS_LIST => page("prompts", &self.prompts(), cursor),
            method::RESOURCES_LIST => {
                page("resources", &self.resources().0, cursor)
            }
            method::RESOURCE_TEMPLATES_LIST => {
                page("resourceTemplates", &self.resources().1, cursor)
            }
            method::TOOLS_CALL => Ok(self.call(h, link, modern, params)),
            method::PROMPTS_GET => self.prompt(h, link, params),
            method::RESOURCES_READ => self.read(h, link, params),
            method::COMPLETION_COMPLETE => self.complete(params),
            method::RESOURCES_SUBSCRIBE if !modern => {
                self.subscribe(h.key, params, true)
            }
            method::RESOURCES_UNSUBSCRIBE if !modern => {
                self.subscribe(h.key, params, false)
            }
            other => Err(RpcFail::new(
                code::METHOD_NOT_FOUND,
                format!(
                    "method not found: {}",
                    term::clip(&term::line(other), 80)
                ),
            )),
        }
    }

    /// The servers' instructions, each under its server's name; the
    /// servers start here so that hosts see them.
    pub(crate) fn instructions(&self) -> String {
        let mut text = String::from(
            "rivumi-mcp serve: the tools and prompts of several MCP servers, \
             named SERVER__NAME. Calls are checked by the operator's policy; \
             a refused call says why.",
        );
        let all =
            self.pool.each(|u| Ok(u.session().server.instructions.clone()));
        for (server, i) in all {
            if let Some(i) = i.filter(|i| !i.trim().is_empty()) {
                text.push_str(&format!("\n\n## {server}\n{}", i.trim()));
            }
        }
        text
    }

    /// Every server's tools as the host sees them. A server that fails
    /// is left out (and warned about): the others stay usable.
    pub(crate) fn tools(&self) -> Vec<Value> {
        let all = self.pool.each(|u| u.tools());
        all.iter().flat_map(|(s, items)| exposed_tools(s, items)).collect()
    }

    pub(crate) fn prompts(&self) -> Vec<Value> {
        let all = self.pool.each(|u| u.prompts());
        all.iter().flat_map(|(s, items)| exposed_prompts(s, items)).collect()
    }

    /// Resources and templates, each recording its server in `_meta`
    /// ([`exposed_resources`]).
    pub(crate) fn resources(&self) -> (Vec<Value>, Vec<Value>) {
        exposed_resources(self.pool.each(|u| u.resources()))
    }

    /// The server of a resource URI and the URI as it knows it: the
    /// prefix names it; else the one server listing the URI; else the
    /// one whose template's fixed start the URI begins with.
    fn resource_server(&self, uri: &str) -> Option<(String, String)> {
        if let Some((s, u)) = host::split_prefixed_uri(uri)
            && self.pool.has(s)
        {
            return Some((s.to_string(), u.to_string()));
        }
        let (resources, templates) = self.resources();
        let owner = |v: &Value| {
            v.get("_meta")
                .and_then(|m| m.get(SERVER_META))
                .and_then(Value::as_str)
                .map(String::from)
        };
        if let Some(r) = resources
            .iter()
            .find(|r| r.get("uri").and_then(Value::as_str) == Some(uri))
        {
            return owner(r).map(|s| (s, uri.to_string()));
        }
        templates
            .iter()
            .filter(|t| {
                t.get("uriTemplate").and_then(Value::as_str).is_some_and(|t| {
                    let fixed = t.split('{').next().unwrap_or("");
                    !fixed.is_empty() && uri.starts_with(fixed)
                })
            })
            .find_map(owner)
            .map(|s| (s, uri.to_string()))
    }

    /// [`Self::resource_server`], or the error that no server has `uri`.
    fn owner(
        &self,
        uri: &str,
    ) -> std::result::Result<(String, String), RpcFail> {
        self.resource_server(uri).ok_or_else(|| {
            RpcFail::new(
                code::INVALID_PARAMS,
                format!(
                    "resource not found: no server behind this gateway has \
                     '{}'",
                    term::clip(&term::line(uri), 200)
                ),
            )
        })
    }

    /// `tools/call`: always a tool result; a refusal is `isError`.
    fn call(
        &self,
        h: &Host,
        link: Option<&Arc<dyn HostLink>>,
        modern: bool,
        params: &Value,
    ) -> Value {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return refusal("the arguments must be an object"),
        };
        let Some((server, _)) = host::split_exposed(name) else {
            return refusal(&format!(
                "no tool '{}': tools here are named SERVER__TOOL",
                term::clip(&term::line(name), 100)
            ));
        };
        if !self.pool.has(server) {
            return refusal(&format!(
                "no server '{}' behind this gateway",
                term::clip(&term::line(server), 60)
            ));
        }
        let wanted = format!("mcp__{}", host::exposed(name));
        let (responses, state) = host::input_responses(params);
        let r = self.pool.with(server, |u| {
            let items = u.tools()?;
            let tools = tool::tools(server, &items);
            let t = self.exec.resolve(server, &tools, &wanted)?;
            let action = Action::Tool { tool: t, arguments: &arguments };
            let state_now = request_state(&t.qualified, &arguments);
            // A 2026-07-28 host is asked with input_required, before
            // anything runs; its answer comes with the retry.
            let answer = match (modern, responses, state) {
                (true, Some(r), Some(s)) if s == state_now => {
                    Some(r.get(APPROVAL_KEY).is_some_and(host::approved))
                }
                (true, Some(_), _) => Some(false),
                _ => None,
            };
            if modern
                && answer.is_none()
                && self.needs_asking(server, &action)
                && h.caps.elicitation_form
            {
                let form = approval_params(server, &action);
                let mut q = Map::new();
                q.insert(
                    APPROVAL_KEY.into(),
                    json!({"method": method::ELICITATION_CREATE, "params": form}),
                );
                return Ok(Err(host::input_required(q, &state_now)));
            }
            let asker = HostAsker { link, caps: h.caps, answer };
            let transport = self.pool.ctx().transport_name(server);
            let obs = self.exec.run_with(u.session(), action, transport, &asker)?;
            u.note_changes();
            Ok(Ok(obs.result))
        });
        match r {
            Ok(Ok(result)) => result,
            Ok(Err(input_required)) => input_required,
            Err(e) => refusal(&e.to_string()),
        }
    }

    /// Whether approval of `action` is a question (no flag decides it).
    fn needs_asking(&self, server: &str, action: &Action<'_>) -> bool {
        action.class() == Class::Execute
            && !self.exec.policy.read_only
            && !self.exec.policy.yes
            && self.exec.policy.approving(&action.qualified(server)).is_none()
    }

    fn prompt(
        &self,
        h: &Host,
        link: Option<&Arc<dyn HostLink>>,
        params: &Value,
    ) -> Reply {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let Some((server, prompt)) =
            host::split_exposed(name).filter(|(s, _)| self.pool.has(s))
        else {
            return Err(RpcFail::new(
                code::INVALID_PARAMS,
                format!("no prompt '{}'", term::clip(&term::line(name), 100)),
            ));
        };
        let arguments = params
            .get("arguments")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let asker = HostAsker { link, caps: h.caps, answer: None };
        let r = self.pool.with(server, |u| {
            let action =
                Action::Prompt { name: prompt, arguments: &arguments };
            let transport = self.pool.ctx().transport_name(server);
            let obs =
                self.exec.run_with(u.session(), action, transport, &asker)?;
            u.note_changes();
            Ok(obs.result)
        });
        r.map_err(fail)
    }

    fn read(
        &self,
        h: &Host,
        link: Option<&Arc<dyn HostLink>>,
        params: &Value,
    ) -> Reply {
        let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
        let (server, uri) = self.owner(uri)?;
        let asker = HostAsker { link, caps: h.caps, answer: None };
        let r = self.pool.with(&server, |u| {
            let transport = self.pool.ctx().transport_name(&server);
            let action = Action::Read { uri: &uri };
            let obs =
                self.exec.run_with(u.session(), action, transport, &asker)?;
            u.note_changes();
            Ok(obs.result)
        });
        r.map_err(fail)
    }

    /// Whether some upstream takes resource subscriptions.
    fn subscribable(&self) -> bool {
        let each = self.pool.each(|u| {
            let c = &u.session().server.capabilities;
            Ok(c.pointer("/resources/subscribe") == Some(&json!(true)))
        });
        each.into_iter().any(|(_, yes)| yes)
    }

    /// `resources/subscribe` (`on`) and `resources/unsubscribe`: forwarded
    /// to the server of the URI (with the URI as it knows it), recorded
    /// for this host session; the server is unsubscribed once no host
    /// holds the URI.
    fn subscribe(&self, key: u64, params: &Value, on: bool) -> Reply {
        let shown = params.get("uri").and_then(Value::as_str).unwrap_or("");
        let (server, uri) = self.owner(shown)?;
        let m = if on {
            method::RESOURCES_SUBSCRIBE
        } else {
            if !self.hosts.unsubscribe(key, &server, &uri) {
                return Ok(json!({}));
            }
            method::RESOURCES_UNSUBSCRIBE
        };
        let r = self.pool.with(&server, |u| {
            let c = &u.session().server.capabilities;
            if c.pointer("/resources/subscribe") != Some(&json!(true)) {
                return Err(Error::usage(format!(
                    "server '{server}' takes no resource subscriptions"
                )));
            }
            u.session().request(m, json!({"uri": uri}), m)
        });
        r.map_err(fail)?;
        if on {
            self.hosts
                .subscribe(key, &server, &uri, shown)
                .map_err(|m| RpcFail::new(code::INVALID_PARAMS, m))?;
        }
        Ok(json!({}))
    }

    /// `subscriptions/listen` (2026-07-28): acknowledges what it honours
    /// (the list changes asked for; the resources asked for whose server
    /// takes subscriptions, each subscribed there), then tells the host
    /// those until it gives the request up (stdio: `notifications/
    /// cancelled`; HTTP: closing the stream); then its subscriptions go.
    /// When nothing is honoured it is answered at once.
    fn listen(
        &self,
        link: Option<&Arc<dyn HostLink>>,
        id: &Value,
        params: &Value,
    ) -> Reply {
        let Some(want) =
            params.get("notifications").and_then(Value::as_object)
        else {
            return Err(RpcFail::new(
                code::INVALID_PARAMS,
                "subscriptions/listen: 'notifications' must be an object",
            ));
        };
        let (Some(link), Some(abort)) = (link, crate::cancel::current())
        else {
            return Err(RpcFail::new(
                code::INVALID_PARAMS,
                "subscriptions/listen needs a stream: send it with Accept: \
                 text/event-stream",
            ));
        };
        let key = LISTENS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut honoured = Map::new();
        let mut lists = vec![];
        for (k, m) in [
            ("toolsListChanged", method::TOOLS_LIST_CHANGED),
            ("promptsListChanged", method::PROMPTS_LIST_CHANGED),
            ("resourcesListChanged", method::RESOURCES_LIST_CHANGED),
        ] {
            if want.get(k) == Some(&json!(true)) {
                honoured.insert(k.into(), json!(true));
                lists.push(m);
            }
        }
        let mut uris = vec![];
        let asked =
            want.get("resourceSubscriptions").and_then(Value::as_array);
        for u in asked.into_iter().flatten().filter_map(Value::as_str) {
            let p = json!({"uri": u});
            if self.subscribe(key, &p, true).is_ok() {
                uris.push(json!(u));
            }
        }
        if !uris.is_empty() {
            honoured.insert("resourceSubscriptions".into(), json!(uris));
        }
        let sub = json!({mcp::meta::SUBSCRIPTION_ID: id});
        link.notify(
            method::SUBSCRIPTIONS_ACKNOWLEDGED,
            json!({"notifications": honoured, "_meta": sub}),
        );
        if honoured.is_empty() {
            return Ok(json!({"_meta": sub}));
        }
        let listen = super::hosts::Listen {
            inner: link.clone(),
            id: id.clone(),
            lists,
        };
        self.hosts.attach(key, Arc::new(listen));
        let mut quiet = std::time::Duration::ZERO;
        while !abort.fired() && !self.hosts.closing() {
            std::thread::sleep(crate::cancel::POLL);
            quiet += crate::cancel::POLL;
            if quiet >= super::KEEP_ALIVE {
                quiet = std::time::Duration::ZERO;
                let _ = link.keep_alive();
            }
        }
        // Not under the request's abort, which has fired.
        let _clean = Abort::default().enter();
        self.forget_host(key);
        Ok(json!({"_meta": sub}))
    }

    /// A host session ended: its subscriptions go, and the servers are
    /// unsubscribed from what nobody else holds.
    pub(crate) fn forget_host(&self, key: u64) {
        for (server, uri) in self.hosts.forget(key) {
            let _ = self.pool.with(&server, |u| {
                let m = method::RESOURCES_UNSUBSCRIBE;
                u.session().request(m, json!({"uri": uri}), m)
            });
        }
    }

    /// Reads what idle upstreams sent between requests (a resource
    /// update goes to its subscribers as it is read; an HTTP upstream is
    /// read only while some host subscribes to it); list changes found so
    /// are told to every host that can be told.
    pub(crate) fn pump(&self) {
        for m in self.pool.poll_idle(|s| self.hosts.subscribed(s)) {
            self.hosts.broadcast(&m);
        }
    }

    /// `completion/complete`, forwarded to the server the reference
    /// names, with the name or URI as that server knows it.
    fn complete(&self, params: &Value) -> Reply {
        let mut p = params.clone();
        if let Some(m) = p.as_object_mut() {
            m.remove("_meta");
        }
        let r = &params["ref"];
        let server = match r.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = r.get("name").and_then(Value::as_str).unwrap_or("");
                host::split_exposed(name)
                    .filter(|(s, _)| self.pool.has(s))
                    .map(|(s, n)| {
                        p["ref"]["name"] = json!(n);
                        s.to_string()
                    })
            }
            Some("ref/resource") => {
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                self.resource_server(uri).map(|(s, u)| {
                    p["ref"]["uri"] = json!(u);
                    s
                })
            }
            _ => None,
        };
        let Some(server) = server else {
            return Err(RpcFail::new(
                code::INVALID_PARAMS,
                "completion/complete: the reference names no prompt or \
                 resource behind this gateway",
            ));
        };
        let r = self.pool.with(&server, |u| {
            let has =
                u.session().server.capabilities.get("completions").is_some();
            if !has {
                return Ok(json!({"completion": {"values": []}}));
            }
            u.session().request(
                method::COMPLETION_COMPLETE,
                p,
                method::COMPLETION_COMPLETE,
            )
        });
        r.map_err(fail)
    }
}

/// The progress token a host's request carries (a string or an
/// integer), if any.
fn progress_token(params: &Value) -> Option<Value> {
    params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
        .cloned()
}

/// Resources and resource templates.
pub(crate) type Resources = (Vec<Value>, Vec<Value>);

/// One server's tools as a host sees them: named `SERVER__TOOL`, with
/// the annotations hosts would reject dropped.
pub(crate) fn exposed_tools(server: &str, items: &[Value]) -> Vec<Value> {
    tool::tools(server, items)
        .into_iter()
        .map(|t| {
            let mut def = t.def.clone();
            def["name"] = json!(host::exposed(&t.qualified));
            clean_annotations(&mut def);
            def
        })
        .collect()
}

/// One server's prompts as a host sees them: named `SERVER__PROMPT`.
pub(crate) fn exposed_prompts(server: &str, items: &[Value]) -> Vec<Value> {
    let mut out = vec![];
    for p in items {
        let Some(n) = p.get("name").and_then(Value::as_str) else {
            continue;
        };
        let mut def = p.clone();
        def["name"] = json!(format!("{server}{}{n}", host::SEP));
        out.push(def);
    }
    out
}

/// Several servers' resources and templates as a host sees them, each
/// recording its server in `_meta`; a URI that more than one server lists
/// is prefixed with its server.
pub(crate) fn exposed_resources<S: AsRef<str>>(
    each: Vec<(S, Resources)>,
) -> Resources {
    let mut all: Vec<(String, Value)> = vec![];
    let mut templates = vec![];
    for (server, (r, t)) in each {
        let server = server.as_ref();
        all.extend(r.into_iter().map(|r| (server.to_string(), r)));
        for mut t in t {
            record(&mut t, server);
            templates.push(t);
        }
    }
    let uri =
        |r: &Value| r.get("uri").and_then(Value::as_str).map(String::from);
    let uris: Vec<Option<String>> = all.iter().map(|(_, r)| uri(r)).collect();
    let resources = all
        .into_iter()
        .map(|(server, mut r)| {
            if let Some(u) = uri(&r)
                && uris.iter().filter(|x| x.as_deref() == Some(&u)).count() > 1
            {
                r["uri"] = json!(host::prefixed_uri(&server, &u));
            }
            record(&mut r, &server);
            r
        })
        .collect();
    (resources, templates)
}

/// Whether a method may ask the host for input (2026-07-28 allows
/// `input_required` on these only).
pub(crate) fn asks(m: &str) -> bool {
    matches!(
        m,
        method::TOOLS_CALL | method::PROMPTS_GET | method::RESOURCES_READ
    )
}

/// One page of a list the gateway answers.
fn page(key: &str, items: &[Value], cursor: Option<&str>) -> Reply {
    let (items, next) = host::page(items, cursor, PAGE)
        .map_err(|m| RpcFail::new(code::INVALID_PARAMS, m))?;
    let mut r = json!({key: items});
    if let Some(n) = next {
        r["nextCursor"] = json!(n);
    }
    Ok(r)
}

/// Drops annotations hosts would reject the whole list for: hints that
/// are not booleans, a title that is not a string, annotations that are
/// not an object. The tool's class was decided before, from the original
/// (anything but a boolean `readOnlyHint: true` is execute).
fn clean_annotations(def: &mut Value) {
    let Some(Value::Object(a)) = def.get_mut("annotations") else {
        if let Some(d) = def.as_object_mut() {
            d.remove("annotations");
        }
        return;
    };
    a.retain(|k, v| match k.as_str() {
        "title" => v.is_string(),
        k if k.ends_with("Hint") => v.is_boolean(),
        _ => true,
    });
}

/// Records the server of a listed item in its `_meta`.
fn record(item: &mut Value, server: &str) {
    let Value::Object(m) = item else { return };
    let meta = m.entry("_meta").or_insert_with(|| json!({}));
    if let Value::Object(meta) = meta {
        meta.insert(SERVER_META.into(), json!(server));
    }
}

/// A refused or failed call, as the host sees it: one sentence.
fn refusal(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": true})
}

/// An error of a read or a prompt, as a JSON-RPC error.
fn fail(e: Error) -> RpcFail {
    let c = match e.kind() {
        Kind::Usage | Kind::Refused | Kind::Denied => code::INVALID_PARAMS,
        _ => code::INTERNAL_ERROR,
    };
    RpcFail::new(c, e.to_string())
}

/// The opaque state of an approval round: the tool and its arguments, so
/// that an answer approves the call it was asked about and no other.
fn request_state(qualified: &str, arguments: &Map<String, Value>) -> String {
    let text = format!("{qualified}\n{}", Value::Object(arguments.clone()));
    crate::files::hex(&Sha256::digest(text.as_bytes()))
}

fn approval_params(server: &str, action: &Action<'_>) -> Value {
    host::approval_form(
        server,
        host::exposed(&action.qualified(server)),
        action.class().label(),
        &host::summary(&action.arguments(), SUMMARY),
    )
}

/// Approval in `serve`, after `--yes` and the `--approve` patterns (the
/// executor's): the host (an elicitation form), else denied.
pub(crate) struct HostAsker<'a> {
    link: Option<&'a Arc<dyn HostLink>>,
    caps: Capabilities,
    /// A 2026-07-28 host's answer, from the retried request.
    answer: Option<bool>,
}

impl Asker for HostAsker<'_> {
    fn ask(&self, server: &str, action: &Action<'_>, _class: Class) -> Asked {
        let shown = host::exposed(&action.qualified(server)).to_string();
        let shown = term::line(&shown).into_owned();
        let declined = || Asked::No {
            how: "host",
            why: format!("'{shown}' was not approved by the host"),
        };
        if let Some(a) = self.answer {
            return if a { Asked::Yes { how: "host" } } else { declined() };
        }
        let Some(link) = self.link.filter(|_| self.caps.elicitation_form)
        else {
            return Asked::No {
                how: "no-host-approval",
                why: format!(
                    "'{shown}' is classified execute and needs approval, but \
                     the host cannot be asked (it declared no elicitation); \
                     the operator may start serve with --yes or --approve \
                     {}",
                    term::line(&action.qualified(server))
                ),
            };
        };
        let params = approval_params(server, action);
        match link.request(method::ELICITATION_CREATE, params, ASK_TIMEOUT) {
            Ok(r) if host::approved(&r) => Asked::Yes { how: "host" },
            Ok(_) => declined(),
            Err(why) => Asked::No {
                how: "host",
                why: format!(
                    "'{shown}' was not approved: asking the host failed ({})",
                    term::clip(&term::line(&why), 200)
                ),
            },
        }
    }
}
