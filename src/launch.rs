//! From a server name to a running, initialized session.
//!
//! This is where "configuration is not launch authority" is enforced: a
//! server starts only when its entry is valid, its name is in
//! `RIVUMI_MCP_ALLOWLIST`, its pin (if any) matches, and every variable it
//! needs is set. Anything else refuses before a process is spawned or a
//! connection opened.
//!
//! The one exception is a server the operator typed on the command line
//! (`--stdio`, `--http`): typing the command is the authorization, so it
//! needs no allowlist entry; every other rule (the sanitised environment,
//! the URL rules, approval, the journal, the bounds) applies unchanged.

use std::time::Duration;

use crate::allowlist::{self, Allowlist, Verdict};
use crate::auth::Authorization;
use crate::config::{self, Config, Server, Transport};
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::msg;
use crate::session::Session;
use crate::transport::http::{self, HttpTransport};
use crate::transport::stdio::{self, StdioTransport};

pub(crate) const DEFAULT_STARTUP: Duration = Duration::from_secs(30);
pub(crate) const DEFAULT_REQUEST: Duration = Duration::from_secs(300);
pub(crate) use crate::transport::DEFAULT_MAX_MESSAGE;

/// What the operator's options say about launching servers, built by
/// `setup` from the command line.
#[derive(Debug, Default)]
pub(crate) struct Settings {
    /// `-c PATH`; `None`: `./.mcp.json`.
    pub(crate) config: Option<std::path::PathBuf>,
    /// `--stdio` / `--http`: a server typed on the command line, used
    /// instead of a config file.
    pub(crate) adhoc: Option<Adhoc>,
    pub(crate) startup_timeout: Option<Duration>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_message: Option<usize>,
    /// Log in inline when a server asks for (more) authorization.
    pub(crate) step_up: bool,
    /// `--protocol`: overrides every server's `protocol` key.
    pub(crate) protocol: Option<crate::mcp::Choice>,
    /// `--root` directories (a sandboxed server may read and write them).
    pub(crate) roots: Vec<std::path::PathBuf>,
    /// `--no-sandbox SERVER`: sandboxes the operator lifts for this run.
    pub(crate) no_sandbox: Vec<String>,
    /// `--refresh`: refresh an expired or refused OAuth token.
    pub(crate) refresh: bool,
    /// `--no-daemon`: start servers here even when a daemon runs.
    pub(crate) no_daemon: bool,
}

/// A server the operator typed on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Adhoc {
    /// `--name`, default [`ADHOC_NAME`].
    pub(crate) name: String,
    pub(crate) target: AdhocTarget,
}

/// What an ad-hoc server runs or reaches, as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AdhocTarget {
    /// `--stdio 'CMD ARG…'`, split into words without a shell.
    Stdio(Vec<String>),
    /// `--http URL`, unparsed (the config rules check it at load).
    Http(String),
}

/// The name of an ad-hoc server when `--name` does not give one.
pub(crate) const ADHOC_NAME: &str = "adhoc";

/// The configuration and allowlist a run command works from.
#[derive(Debug)]
pub(crate) struct Context {
    pub(crate) config: Config,
    allow: std::result::Result<Allowlist, String>,
    startup: Option<Duration>,
    timeout: Option<Duration>,
    max_message: usize,
    pub(crate) lookup: fn(&str) -> Option<String>,
    step_up: bool,
    /// `--refresh`: refresh an expired or refused OAuth token.
    refresh: bool,
    protocol: Option<crate::mcp::Choice>,
    /// The name of the ad-hoc server, which the allowlist does not gate.
    adhoc: Option<String>,
    /// What answers the servers' requests (the operator's options).
    client: std::sync::Arc<dyn crate::session::Client>,
    /// `--root` directories: a sandboxed server may read and write them.
    roots: Vec<std::path::PathBuf>,
    /// `--no-sandbox SERVER`: the operator lifts these servers' sandboxes
    /// for this run.
    no_sandbox: Vec<String>,
    /// Whether a running daemon may lend warm servers (not with
    /// `--no-daemon` or `RIVUMI_MCP_DAEMON=off`).
    daemon: bool,
}

impl Context {
    pub(crate) fn load(
        g: &Settings,
        lookup: fn(&str) -> Option<String>,
    ) -> Result<Context> {
        if let Some(a) = &g.adhoc {
            let config = adhoc_config(a)?;
            crate::journal::event(
                "config_loaded",
                serde_json::json!({
                    "path": null,
                    "adhoc": true,
                    "servers": config.names(),
                    "valid": true,
                }),
            );
            return Ok(Context {
                config,
                allow: Ok(Allowlist::default()),
                adhoc: Some(a.name.clone()),
                ..Context::new(g, lookup)
            });
        }
        let path = g.config.clone().unwrap_or_else(config::default_path);
        let config = config::load(&path, false, &lookup)?;
        if !config.file_ok {
            let d = config.diagnostics.iter().find(|d| {
                d.severity == config::Severity::Error && d.server.is_none()
            });
            return Err(Error::refused(match d {
                Some(d) => format!(
                    "{}:{}:{}: {}",
                    path.display(),
                    d.pos.line,
                    d.pos.col,
                    d.message
                ),
                None => format!("{}: invalid", path.display()),
            }));
        }
        if msg::verbose() {
            for d in &config.diagnostics {
                msg::debug(&format!(
                    "{}:{}:{}: {}",
                    path.display(),
                    d.pos.line,
                    d.pos.col,
                    d.message
                ));
            }
        }
        crate::journal::event(
            "config_loaded",
            serde_json::json!({
                "path": path.display().to_string(),
                "servers": config.names(),
                "valid": config.is_valid(),
            }),
        );
        let allow = Allowlist::parse(lookup(allowlist::VAR).as_deref());
        Ok(Context { config, allow, ..Context::new(g, lookup) })
    }

    /// A context with no server, from the command-line settings.
    fn new(g: &Settings, lookup: fn(&str) -> Option<String>) -> Context {
        Context {
            config: Config {
                path: config::default_path(),
                entries: vec![],
                diagnostics: vec![],
                file_ok: true,
                editor: None,
                predefined: vec![],
            },
            allow: Ok(Allowlist::default()),
            startup: g.startup_timeout,
            timeout: g.timeout,
            max_message: g.max_message.unwrap_or(DEFAULT_MAX_MESSAGE),
            lookup,
            step_up: g.step_up,
            refresh: g.refresh,
            protocol: g.protocol,
            adhoc: None,
            client: std::sync::Arc::new(crate::session::Declines),
            roots: g.roots.clone(),
            no_sandbox: g.no_sandbox.clone(),
            daemon: crate::daemon::enabled(g.no_daemon, &lookup),
        }
    }

    /// Whether `name` is the ad-hoc server typed on the command line.
    /// The ad-hoc server's name, when one was typed.
    pub(crate) fn adhoc_name(&self) -> Option<&str> {
        self.adhoc.as_deref()
    }

    fn is_adhoc(&self, name: &str) -> bool {
        self.adhoc.as_deref() == Some(name)
    }

    /// The client that answers the servers' requests from now on.
    pub(crate) fn with_client(
        mut self,
        client: std::sync::Arc<dyn crate::session::Client>,
    ) -> Context {
        self.client = client;
        self
    }

    /// The allowlist, or the refusal its malformed value earns.
    fn allowlist(&self) -> Result<&Allowlist> {
        self.allow.as_ref().map_err(|m| Error::refused(m.clone()))
    }

    /// The servers `list` starts when no name is given: every allowed one,
    /// in config order. Refuses when none is.
    pub(crate) fn allowed_servers(&self) -> Result<Vec<String>> {
        let list = self.allowlist()?;
        let names: Vec<String> = self
            .config
            .entries
            .iter()
            .filter(|e| list.lists(&e.name) || self.is_adhoc(&e.name))
            .filter(|e| !e.server.as_ref().is_some_and(|s| s.disabled))
            .map(|e| e.name.clone())
            .collect();
        if names.is_empty() {
            let configured = self.config.names();
            let msg = if configured.is_empty() {
                format!(
                    "{}: no servers configured",
                    self.config.path.display()
                )
            } else {
                format!(
                    "no configured server is allowed to start; configured: \
                     {}; name the ones to start in {} (comma-separated){}",
                    configured.join(", "),
                    allowlist::VAR,
                    if list.is_empty() {
                        ", which is empty or unset"
                    } else {
                        ""
                    }
                )
            };
            return Err(Error::refused(msg));
        }
        Ok(names)
    }

    /// The allowed servers that `"disabled": true` keeps from starting
    /// (`list` says it skipped them).
    pub(crate) fn disabled_servers(&self) -> Vec<String> {
        let Ok(list) = self.allowlist() else { return vec![] };
        self.config
            .entries
            .iter()
            .filter(|e| list.lists(&e.name))
            .filter(|e| e.server.as_ref().is_some_and(|s| s.disabled))
            .map(|e| e.name.clone())
            .collect()
    }

    /// The validated entry of a server that may start now.
    pub(crate) fn startable(&self, name: &str) -> Result<&Server> {
        let Some(entry) = self.config.entry(name) else {
            let names = self.config.names();
            let mut msg = format!(
                "no server '{}' in {} (configured: {})",
                crate::term::line(name),
                self.config.path.display(),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            );
            if let Some(s) =
                crate::suggest::suggest(name, names.iter().copied())
            {
                msg.push_str(&format!("; did you mean '{s}'?"));
            }
            // A name the operator mistyped: a usage error, like an
            // unknown command.
            return Err(Error::usage(msg));
        };
        let Some(server) = &entry.server else {
            return Err(config::refuse(&self.config, name));
        };
        if server.disabled {
            return Err(Error::refused(format!(
                "disabled in {} (\"disabled\": true); it is never started",
                self.config.path.display()
            ))
            .for_server(name));
        }
        if self.is_adhoc(name) {
            return Ok(server);
        }
        match self.allowlist()?.verdict(server) {
            Verdict::Allowed | Verdict::Pinned => {}
            Verdict::NotAllowed => {
                return Err(Error::refused(format!(
                    "not allowed to start: add '{name}' to {}",
                    allowlist::VAR
                ))
                .for_server(name));
            }
            Verdict::Mismatch(changed) => {
                let what = if changed.is_empty() {
                    "its launch spec".to_string()
                } else {
                    changed.join(", ")
                };
                return Err(Error::refused(format!(
                    "pinned in {} but {what} changed since (fingerprint is \
                     now {}); review the entry, then update the pin",
                    allowlist::VAR,
                    allowlist::fingerprint(server)
                ))
                .for_server(name));
            }
        }
        Ok(server)
    }

    /// `stdio` or `http`, for hooks and the journal.
    pub(crate) fn transport_name(&self, name: &str) -> &'static str {
        self.config
            .entry(name)
            .and_then(|e| e.server.as_ref())
            .map_or("?", |s| s.transport_name())
    }

    /// The per-request deadline for a server.
    pub(crate) fn request_timeout(&self, s: &Server) -> Duration {
        self.timeout.or(s.tool_timeout).unwrap_or(DEFAULT_REQUEST)
    }

    /// The sandbox a stdio server starts in: its `sandbox` block unless
    /// the operator lifted it for this run (`--no-sandbox`, journaled).
    fn sandbox(
        &self,
        name: &str,
        spec: &config::Stdio,
        program: &str,
        env: &[(String, String)],
    ) -> Result<Option<crate::sandbox::Decision>> {
        let Some(block) = &spec.sandbox else { return Ok(None) };
        if self.no_sandbox.iter().any(|n| n == name) {
            msg::warn(&format!(
                "server '{name}': --no-sandbox: its sandbox is lifted for \
                 this run"
            ));
            crate::journal::event(
                "sandbox_lifted",
                serde_json::json!({"server": name, "by": "--no-sandbox"}),
            );
            return Ok(None);
        }
        let path =
            env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_str());
        crate::sandbox::Plan::decide(
            name,
            block,
            program,
            path,
            spec.cwd_path.as_deref(),
            &self.roots,
            &|n: &str| self.lookup_for_servers(n),
        )
        .map(Some)
    }

    /// How a server's templates are expanded: the editor's predefined
    /// variables of its file first (`${workspaceFolder}`), then the
    /// environment.
    fn lookup_for_servers(&self, name: &str) -> Option<String> {
        self.config.predefined(name).or_else(|| (self.lookup)(name))
    }

    /// Checks, starts and initializes a server (warm from the daemon
    /// when one runs).
    pub(crate) fn start(&self, name: &str) -> Result<Session> {
        match self.start_as(name, Want::Any)? {
            Ok(s) => Ok(s),
            Err(_) => unreachable!("any session will do"),
        }
    }

    /// The same, never warm (a session that must end with this
    /// invocation's, or one recorded for a detached task).
    pub(crate) fn start_cold(&self, name: &str) -> Result<Session> {
        match self.start_as(name, Want::Cold)? {
            Ok(s) => Ok(s),
            Err(_) => unreachable!("a cold session is always had"),
        }
    }

    /// A stdio server's warm session from the daemon, never a cold one:
    /// `Ok(Err(why))` when it cannot be had warm (no daemon runs, it is
    /// off for this invocation, this run lifts its sandbox or grants it
    /// `--root` directories). With `task`
    /// (a task's fingerprint), only the warm server that holds that task,
    /// never a new one.
    pub(crate) fn start_warm(
        &self,
        name: &str,
        task: Option<&str>,
    ) -> Result<std::result::Result<Session, &'static str>> {
        self.start_as(name, Want::Warm(task))
    }

    fn start_as(
        &self,
        name: &str,
        want: Want<'_>,
    ) -> Result<std::result::Result<Session, &'static str>> {
        let server = self.startable(name)?;
        let startup =
            self.startup.or(server.startup_timeout).unwrap_or(DEFAULT_STARTUP);
        let deadline = Deadline::new(crate::mcp::method::INITIALIZE, startup);
        let s = match self.transport(name, server, startup, want)? {
            Opened::Unwarmed(why) => return Ok(Err(why)),
            Opened::Warm(s) => *s,
            Opened::Cold(transport) => Session::open(
                name,
                transport,
                self.protocol.unwrap_or(server.protocol),
                &deadline,
                self.request_timeout(server),
                std::sync::Arc::clone(&self.client),
            )?,
        };
        Ok(Ok(filtered(s, server)))
    }

    /// Takes up the session a detached task runs in (an HTTP server's,
    /// in the handshake era), with the same checks as [`Context::start`].
    pub(crate) fn resume(
        &self,
        name: &str,
        session: &str,
        version: crate::mcp::Version,
    ) -> Result<Session> {
        let server = self.startable(name)?;
        let startup =
            self.startup.or(server.startup_timeout).unwrap_or(DEFAULT_STARTUP);
        // Never a warm server: the detached session is the server's own.
        let Opened::Cold(transport) =
            self.transport(name, server, startup, Want::Cold)?
        else {
            unreachable!("a transport asked cold is cold");
        };
        let s = Session::resumed(
            name,
            transport,
            session,
            version,
            self.request_timeout(server),
            std::sync::Arc::clone(&self.client),
        );
        Ok(filtered(s, server))
    }

    /// The canonical URL of an HTTP server (`None` for stdio).
    pub(crate) fn url(&self, name: &str) -> Option<String> {
        match &self.config.entry(name)?.server.as_ref()?.transport {
            Transport::Http(spec) => Some(spec.url.to_string()),
            Transport::Stdio(_) => None,
        }
    }

    /// The transport to a server: its process started, or its URL's
    /// client made; or, when `want` allows and a daemon runs, the warm
    /// session it lends.
    fn transport(
        &self,
        name: &str,
        server: &Server,
        startup: Duration,
        want: Want<'_>,
    ) -> Result<Opened> {
        match &server.transport {
            Transport::Stdio(spec) => {
                self.stdio_transport(name, server, spec, startup, want)
            }
            Transport::Http(spec) => {
                self.http_transport(name, server, spec, startup, want)
            }
        }
    }

    /// [`Context::transport`] for a stdio server.
    fn stdio_transport(
        &self,
        name: &str,
        server: &Server,
        spec: &config::Stdio,
        startup: Duration,
        want: Want<'_>,
    ) -> Result<Opened> {
        let lookup = |n: &str| self.lookup_for_servers(n);
        let argv = spec.argv(&lookup).map_err(|e| e.for_server(name))?;
        let env =
            stdio::child_env(spec, &lookup).map_err(|e| e.for_server(name))?;
        let sandbox = self
            .sandbox(name, spec, &argv.0, &env)
            .map_err(|e| e.for_server(name))?;
        // A sandboxed server is kept warm in the same sandbox (the
        // decision is in the key); one whose sandbox is lifted, or
        // grants --root directories, for this run only starts
        // cold: the daemon would keep it past this run.
        let lifted = spec.sandbox.is_some() && sandbox.is_none();
        let not_lendable = if lifted {
            Some(
                "its sandbox is lifted for this run (--no-sandbox), \
                 and an unconfined server is never kept warm",
            )
        } else {
            sandbox.as_ref().and_then(|d| d.not_lendable())
        };
        let task = match want {
            Want::Cold => None,
            Want::Any if !self.daemon || not_lendable.is_some() => None,
            Want::Any => Some(None),
            Want::Warm(_) if !self.daemon => {
                return Ok(Opened::Unwarmed(
                    "the daemon is off for this invocation \
                     (--no-daemon or RIVUMI_MCP_DAEMON=off)",
                ));
            }
            Want::Warm(_) if not_lendable.is_some() => {
                return Ok(Opened::Unwarmed(not_lendable.unwrap_or_default()));
            }
            Want::Warm(task) => Some(task),
        };
        if let Some(task) = task {
            let (launch, display) =
                Context::stdio_launch(spec, &argv, &env, sandbox.as_ref());
            let warm =
                self.borrow(name, server, launch, display, startup, task)?;
            match (warm, want) {
                (Some(s), _) => return Ok(Opened::Warm(Box::new(s))),
                (None, Want::Warm(_)) => {
                    return Ok(Opened::Unwarmed(
                        "no daemon runs ('rivumi-mcp daemon start' \
                         keeps servers warm)",
                    ));
                }
                (None, _) => {}
            }
        }
        let sandbox = sandbox
            .map(|d| crate::sandbox::Plan::make(name, d))
            .transpose()
            .map_err(|e| e.for_server(name))?;
        Ok(Opened::Cold(Box::new(
            StdioTransport::spawn(
                name,
                spec,
                &argv,
                env,
                self.max_message,
                sandbox,
            )
            .map_err(|e| e.for_server(name))?,
        )))
    }

    /// [`Context::transport`] for an HTTP server.
    fn http_transport(
        &self,
        name: &str,
        server: &Server,
        spec: &config::Http,
        startup: Duration,
        want: Want<'_>,
    ) -> Result<Opened> {
        let lookup = |n: &str| self.lookup_for_servers(n);
        let mut headers =
            http::headers(spec, &lookup).map_err(|e| e.for_server(name))?;
        for (k, argv) in &spec.headers_command {
            let v = crate::auth::command::header(name, k, argv)?;
            headers.push((k.to_ascii_lowercase(), v.expose().into()));
        }
        let auth = Authorization::resolve(
            name,
            spec,
            self.lookup,
            crate::auth::Inline {
                step_up: self.step_up,
                refresh: self.refresh,
            },
        )
        .map_err(|e| e.for_server(name))?;
        // The proxy is this invocation's to choose (the daemon's
        // environment is not the caller's): in the key, given.
        let proxy = crate::net::env_proxy_for(&spec.url);
        // Kept warm when the credential is settled for this
        // invocation (none, a variable's token, a command's, a
        // stored login's, DPoP-bound or not): its value is in the
        // key, so a changed token is another server. With step-up
        // or refresh in effect the renewal belongs here: cold.
        if self.daemon
            && want == Want::Any
            && let Some(lent) = auth.lend()
            && let Some(s) = self.warm_http(
                name,
                server,
                spec,
                (&headers, proxy.as_deref()),
                lent,
                startup,
            )?
        {
            return Ok(Opened::Warm(Box::new(s)));
        }
        let limits = http::Limits::new(self.max_message);
        Ok(Opened::Cold(Box::new(
            HttpTransport::connect(
                name,
                spec,
                headers,
                auth,
                limits,
                proxy.as_deref(),
            )
            .map_err(|e| e.for_server(name))?,
        )))
    }
}

/// What [`Context::transport`] opened: a warm session the daemon lends,
/// or a transport to open a session on; or why the warm session asked
/// for cannot be had.
enum Opened {
    Warm(Box<Session>),
    Cold(Box<dyn crate::transport::Transport>),
    Unwarmed(&'static str),
}

/// What session a command wants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want<'a> {
    /// Warm when a daemon runs, else cold.
    Any,
    /// Cold.
    Cold,
    /// Warm only (a stdio server that must outlive this invocation); with
    /// a task's fingerprint, the warm server that holds it.
    Warm(Option<&'a str>),
}

/// A session with the config's `tools` filter applied, warm or cold.
fn filtered(mut s: Session, server: &config::Server) -> Session {
    s.filter_tools(server.tools.clone());
    s
}

impl Context {
    /// The launch of a stdio server as the daemon keys it, and its
    /// command line as shown: everything that decides what runs and how,
    /// after expansion; the daemon keys by its hash.
    fn stdio_launch(
        spec: &config::Stdio,
        argv: &(String, Vec<String>),
        env: &[(String, String)],
        sandbox: Option<&crate::sandbox::Decision>,
    ) -> (serde_json::Value, Vec<String>) {
        let mut env_sorted = env.to_vec();
        env_sorted.sort();
        let launch = serde_json::json!({
            "transport": "stdio",
            "argv": std::iter::once(&argv.0).chain(&argv.1).collect::<Vec<_>>(),
            "cwd": spec.cwd_path.as_ref().map(|p| p.display().to_string()),
            "env": env_sorted,
            "sandbox": sandbox.map(crate::sandbox::Decision::to_json),
        });
        let display = std::iter::once(&spec.command)
            .chain(&spec.args)
            .cloned()
            .collect();
        (launch, display)
    }

    /// The same for an HTTP server: the URL, the headers, the proxy and
    /// the credential [`Authorization::lend`] gave (values included) are
    /// its launch.
    fn warm_http(
        &self,
        name: &str,
        server: &Server,
        spec: &config::Http,
        (headers, proxy): (&[(String, String)], Option<&str>),
        auth: serde_json::Value,
        startup: Duration,
    ) -> Result<Option<Session>> {
        let mut sorted = headers.to_vec();
        sorted.sort();
        let launch = serde_json::json!({
            "transport": "http",
            "url": spec.url_text,
            "headers": sorted,
            "auth": auth,
            "proxy": proxy,
        });
        let display = vec![spec.url_text.clone()];
        self.borrow(name, server, launch, display, startup, None)
    }

    /// Completes a launch with what every transport shares (era choice,
    /// what the client declares, bounds) and asks the daemon for it.
    fn borrow(
        &self,
        name: &str,
        server: &Server,
        mut launch: serde_json::Value,
        display: Vec<String>,
        startup: Duration,
        task: Option<&str>,
    ) -> Result<Option<Session>> {
        let choice = self.protocol.unwrap_or(server.protocol);
        let http = launch["transport"] == "http";
        launch["choice"] = crate::mcp::Choice::NAMES[match choice {
            crate::mcp::Choice::Auto => 0,
            crate::mcp::Choice::Modern => 1,
            crate::mcp::Choice::Legacy => 2,
        }]
        .into();
        launch["caps"] =
            crate::daemon::wire::caps_to_json(self.client.capabilities());
        launch["client"] = self.client.identity();
        launch["log_level"] = self.client.log_level().into();
        launch["max_message"] = self.max_message.into();
        let plan = crate::daemon::client::Plan {
            name,
            wire: if http {
                crate::transport::Wire::Http
            } else {
                crate::transport::Wire::Stdio
            },
            launch,
            display,
            startup,
            request_timeout: self.request_timeout(server),
            max_message: self.max_message,
            task: task.map(str::to_string),
        };
        crate::daemon::client::session(
            plan,
            std::sync::Arc::clone(&self.client),
            &self.lookup,
        )
    }
}

/// The one-entry configuration of an ad-hoc server: built as the config
/// rules would build it, with no expansion (nothing is read from a file)
/// and the URL checked by the same rules.
fn adhoc_config(a: &Adhoc) -> Result<Config> {
    let transport = match &a.target {
        AdhocTarget::Stdio(argv) => {
            let (command, args) = argv
                .split_first()
                .ok_or_else(|| Error::usage("--stdio: empty command"))?;
            Transport::Stdio(config::Stdio {
                command: command.clone(),
                args: args.to_vec(),
                env: vec![],
                env_vars: vec![],
                cwd_path: None,
                expand: false,
                sandbox: None,
            })
        }
        AdhocTarget::Http(raw) => {
            let url = crate::urlcheck::Url::parse(raw)
                .map_err(|e| Error::usage(format!("--http: {e}")))?;
            Transport::Http(Box::new(config::Http {
                url,
                url_text: raw.clone(),
                headers: vec![],
                bearer_token_env_var: None,
                token_command: None,
                headers_command: vec![],
                oauth: None,
            }))
        }
    };
    let server = Server {
        name: a.name.clone(),
        transport,
        startup_timeout: None,
        tool_timeout: None,
        protocol: crate::mcp::Choice::Auto,
        disabled: false,
        tools: None,
    };
    Ok(Config {
        path: std::path::PathBuf::from("(command line)"),
        entries: vec![config::Entry {
            name: a.name.clone(),
            server: Some(server),
        }],
        diagnostics: vec![],
        file_ok: true,
        editor: None,
        predefined: vec![],
    })
}
