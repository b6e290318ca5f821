//! `rivumi-mcp serve`: one MCP server in front of the allowed servers,
//! every call through the executor.
//!
//! - `gateway.rs`: what is answered to the host, in both eras (names,
//!   lists and their pages, calls through the executor, approval asked of
//!   the host);
//! - `upstream.rs`: the upstream sessions, started on first use, closed
//!   on every exit path;
//! - `parked.rs`: what an upstream asks during a 2026-07-28 host's call,
//!   as `input_required` rounds (the call parked on a worker);
//! - `pending.rs`: the questions asked of a host, matched to its answers
//!   by id (both fronts);
//! - `stdio.rs`: the front on stdin/stdout (the default);
//! - `http.rs`: the Streamable HTTP front (`--listen`), loopback only,
//!   behind a bearer token and `Host`/`Origin` checks.
//!
//! What an upstream server asks (elicitation, sampling, roots) goes to
//! the host when the host declared that capability and can be reached
//! while the call runs (the handshake era); otherwise the operator's
//! options answer it, as they do for `call` ([`ServeClient`]).

mod gateway;
mod hosts;
mod http;
mod parked;
mod pending;
mod stdio;
mod upstream;

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::ask::Operator;
use crate::error::Result;
use crate::executor::Executor;
use crate::launch::Context;
use crate::mcp::{self, Ask, Capabilities};
use crate::session::{Client, ServerAsk};
use crate::{journal, msg, out, term};

pub(crate) use gateway::{Gateway, HostLink};
pub(crate) use parked::Spawner;

/// How often a long-lived stream to a host gets a comment (and finds
/// its host gone).
pub(crate) const KEEP_ALIVE: std::time::Duration =
    std::time::Duration::from_secs(15);

/// How often idle upstreams are read for what they sent between requests.
const PUMP: std::time::Duration = std::time::Duration::from_millis(200);

/// What `serve` was given on the command line.
#[derive(Debug, Default)]
pub(crate) struct Options {
    /// `--listen ADDR:PORT`: the HTTP front instead of stdio.
    pub(crate) listen: Option<String>,
    /// `--servers a,b`: only these of the allowed servers.
    pub(crate) servers: Vec<String>,
    /// `--token-env VAR`: the HTTP front's bearer token from `VAR`.
    pub(crate) token_env: Option<String>,
    /// `--allow-origin ORIGIN` (repeatable).
    pub(crate) origins: Vec<String>,
    pub(crate) dry_run: bool,
}

/// Runs `serve` until its host goes away. `operator` answers what
/// upstream servers ask when the host cannot; `json` is `--json` (for
/// `--dry-run`).
pub(crate) fn run(
    ctx: Context,
    exec: Executor,
    operator: Operator,
    o: &Options,
    json: bool,
) -> Result<()> {
    let listen = o.listen.as_deref().map(http::parse_listen).transpose()?;
    let servers = servers(&ctx, &o.servers)?;
    let hosts = Arc::new(hosts::Hosts::default());
    let client = ServeClient { operator, hosts: hosts.clone() };
    let ctx = ctx.with_client(Arc::new(client));
    let pool = upstream::Pool::new(&ctx, &servers);
    let gw = Gateway { pool, exec, parked: parked::Parked::default(), hosts };
    if o.dry_run {
        return dry_run(&gw, json);
    }
    journal::event(
        "serve_started",
        json!({"servers": servers, "front": if listen.is_some() { "http" } else { "stdio" }}),
    );
    // What idle upstreams send between requests is read every PUMP.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let r = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(PUMP);
                gw.pump();
            }
        });
        let r = match listen {
            Some(addr) => http::run(&gw, addr, o),
            None => stdio::run(&gw),
        };
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        r
    });
    gw.pool.close_all();
    journal::event("serve_ended", json!({}));
    r
}

/// The servers `serve` exposes: the allowed ones, or those of
/// `--servers` (each must be allowed).
fn servers(ctx: &Context, wanted: &[String]) -> Result<Vec<String>> {
    if wanted.is_empty() {
        return ctx.allowed_servers();
    }
    for s in wanted {
        ctx.startable(s)?;
    }
    Ok(wanted.to_vec())
}

/// `serve --dry-run`: starts each server, prints what the host would
/// see, and closes them.
fn dry_run(gw: &Gateway<'_>, json: bool) -> Result<()> {
    let (resources, templates) = gw.resources();
    let e = Exposed {
        servers: gw.pool.names().map(String::from).collect(),
        tools: gw.tools(),
        prompts: gw.prompts(),
        resources,
        templates,
    };
    if json {
        return out::json(&e.to_json());
    }
    let mut text = format!(
        "serve would expose {} server(s): {}\n",
        e.servers.len(),
        e.servers.join(", ")
    );
    text.push_str(&e.text());
    out::print(&text)
}

/// What `serve` exposes to a host: the servers, and their items under
/// the names the host sees (`serve --dry-run` from the live servers,
/// `check-config` from the lock file).
#[derive(Debug, Default)]
pub(crate) struct Exposed {
    pub(crate) servers: Vec<String>,
    pub(crate) tools: Vec<Value>,
    pub(crate) prompts: Vec<Value>,
    pub(crate) resources: Vec<Value>,
    pub(crate) templates: Vec<Value>,
}

impl Exposed {
    /// From each server's lists as the server gives them (tools, prompts,
    /// resources, templates).
    pub(crate) fn of(each: Vec<(String, [Vec<Value>; 4])>) -> Exposed {
        let mut e = Exposed::default();
        let mut res = vec![];
        for (server, [tools, prompts, resources, templates]) in each {
            e.tools.extend(gateway::exposed_tools(&server, &tools));
            e.prompts.extend(gateway::exposed_prompts(&server, &prompts));
            res.push((server.clone(), (resources, templates)));
            e.servers.push(server);
        }
        (e.resources, e.templates) = gateway::exposed_resources(res);
        e
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({
            "servers": self.servers,
            "tools": self.tools, "prompts": self.prompts,
            "resources": self.resources, "resourceTemplates": self.templates,
        })
    }

    /// The names only (check-config's `--json`).
    pub(crate) fn names_json(&self) -> Value {
        let names = |items: &[Value], k: &str| -> Vec<Value> {
            items.iter().filter_map(|v| v.get(k).cloned()).collect()
        };
        json!({
            "servers": self.servers,
            "tools": names(&self.tools, "name"),
            "prompts": names(&self.prompts, "name"),
            "resources": names(&self.resources, "uri"),
            "resourceTemplates": names(&self.templates, "uriTemplate"),
        })
    }

    /// The names, one a line, under a heading per kind.
    pub(crate) fn text(&self) -> String {
        let name = |v: &Value, k: &str| {
            term::line(v.get(k).and_then(Value::as_str).unwrap_or("?"))
                .into_owned()
        };
        let mut text = format!("tools ({}):\n", self.tools.len());
        for t in &self.tools {
            let class = crate::naming::classify(t).label();
            text.push_str(&format!("  {} ({class})\n", name(t, "name")));
        }
        text.push_str(&format!("prompts ({}):\n", self.prompts.len()));
        for p in &self.prompts {
            text.push_str(&format!("  {}\n", name(p, "name")));
        }
        text.push_str(&format!("resources ({}):\n", self.resources.len()));
        for r in &self.resources {
            text.push_str(&format!("  {}\n", name(r, "uri")));
        }
        text.push_str(&format!(
            "resource templates ({}):\n",
            self.templates.len()
        ));
        for t in &self.templates {
            text.push_str(&format!("  {}\n", name(t, "uriTemplate")));
        }
        text
    }
}

thread_local! {
    /// The host of the request this thread is handling, for what an
    /// upstream server asks meanwhile (the session answers on the thread
    /// that made the request).
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// The host of the request a thread handles: how to ask it things (the
/// handshake era, while the request runs), how to tell it things (both
/// eras: on the request's stream, or on stdout), what it declared, the
/// progress token its request carries, and the least severe log level it
/// wants (`None`: every message, as the handshake era has it;
/// `usize::MAX`: none).
#[derive(Clone)]
pub(crate) struct Current {
    pub(crate) link: Option<Arc<dyn HostLink>>,
    pub(crate) notify: Option<Arc<dyn HostLink>>,
    pub(crate) caps: Capabilities,
    pub(crate) progress: Option<Value>,
    pub(crate) level: Option<usize>,
}

/// Sets the current host for the life of the guard.
pub(crate) struct CurrentHost;

impl CurrentHost {
    pub(crate) fn set(current: Current) -> CurrentHost {
        let some = current.link.is_some() || current.notify.is_some();
        CURRENT.with(|c| *c.borrow_mut() = some.then_some(current));
        CurrentHost
    }
}

/// The rank of a log level (RFC 5424 names, least severe first).
pub(crate) fn level_rank(level: &str) -> Option<usize> {
    crate::ask::LogLevel::NAMES.iter().position(|n| *n == level)
}

/// The current host of one thread, carried into another (the listing of
/// several servers runs side by side).
pub(crate) struct Carried(Option<Current>);

impl Carried {
    pub(crate) fn here() -> Carried {
        Carried(CURRENT.with(|c| c.borrow().clone()))
    }

    /// Makes it the current host of this thread for the guard's life.
    pub(crate) fn enter(&self) -> CurrentHost {
        CURRENT.with(|c| *c.borrow_mut() = self.0.clone());
        CurrentHost
    }
}

impl Drop for CurrentHost {
    fn drop(&mut self) {
        CURRENT.with(|c| *c.borrow_mut() = None);
    }
}

/// What answers the upstream servers: the host when it declared the
/// kind and can be reached, else the operator's options.
struct ServeClient {
    operator: Operator,
    hosts: Arc<hosts::Hosts>,
}

impl Client for ServeClient {
    /// Everything the host may answer is declared upstream; what the
    /// host cannot answer, the operator's options do (or refuse).
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            elicitation_form: true,
            elicitation_url: true,
            sampling: true,
            roots: true,
        }
    }

    fn log_level(&self) -> Option<&str> {
        self.operator.log_level()
    }

    fn serve(&self, q: &ServerAsk<'_>) -> std::result::Result<Value, String> {
        if q.ask == Ask::Ping {
            return Ok(json!({}));
        }
        let host = CURRENT.with(|c| c.borrow().clone());
        if let Some(Current { link: Some(link), caps, .. }) = host {
            let (declared, method) = match q.ask {
                Ask::Form => {
                    (caps.elicitation_form, mcp::method::ELICITATION_CREATE)
                }
                Ask::Url => {
                    (caps.elicitation_url, mcp::method::ELICITATION_CREATE)
                }
                Ask::Sampling => {
                    (caps.sampling, mcp::method::SAMPLING_CREATE_MESSAGE)
                }
                Ask::Roots => (caps.roots, mcp::method::ROOTS_LIST),
                Ask::Ping => (false, mcp::method::PING),
            };
            if declared {
                let mut params = q.params.clone();
                if let Some(m) = params.get("message").and_then(Value::as_str)
                {
                    params["message"] = json!(format!("[{}] {m}", q.server));
                }
                if let Some(p) = params.as_object_mut() {
                    p.remove(mcp::FIELD_ORDER);
                    if let Some(Value::Object(s)) =
                        p.get_mut("requestedSchema")
                    {
                        s.remove(mcp::FIELD_ORDER);
                    }
                }
                let r = link.request(method, params, gateway::ASK_TIMEOUT);
                journal::event(
                    "server_request",
                    json!({"server": q.server, "kind": q.ask.kind(),
                           "action": if r.is_ok() { "forwarded" } else { "failed" }}),
                );
                return r;
            }
        }
        let op = self.operator.capabilities();
        let can = match q.ask {
            Ask::Form | Ask::Url | Ask::Ping => true,
            Ask::Sampling => op.sampling,
            Ask::Roots => op.roots,
        };
        if !can {
            msg::debug(&format!(
                "server '{}': {} refused: neither the host nor serve's options answer it",
                q.server,
                q.ask.kind()
            ));
            return Err(format!(
                "{} is not available: the host did not declare it and serve \
                 was not given an option that answers it",
                q.ask.kind()
            ));
        }
        self.operator.serve(q)
    }

    /// Progress goes to the host under the token of its own request (when
    /// it asked for progress); log messages go with the server as logger.
    fn notified(&self, server: &str, method: &str, params: &Value) {
        if method == mcp::method::RESOURCES_UPDATED {
            if let Some(uri) = params.get("uri").and_then(Value::as_str) {
                self.hosts.updated(server, uri);
            }
            return;
        }
        let Some(host) = CURRENT.with(|c| c.borrow().clone()) else {
            return;
        };
        let Some(link) = host.notify else { return };
        match method {
            mcp::method::PROGRESS => {
                let Some(token) = host.progress else { return };
                let mut p = json!({"progressToken": token});
                for k in ["progress", "total", "message"] {
                    if let Some(v) = params.get(k) {
                        p[k] = v.clone();
                    }
                }
                link.notify(method, p);
            }
            mcp::method::MESSAGE => {
                let level = params.get("level").and_then(Value::as_str);
                if let Some(least) = host.level
                    && level.and_then(level_rank).is_none_or(|r| r < least)
                {
                    return;
                }
                let mut p = json!({"logger": server});
                for k in ["level", "data"] {
                    if let Some(v) = params.get(k) {
                        p[k] = v.clone();
                    }
                }
                link.notify(method, p);
            }
            _ => {}
        }
    }
}
