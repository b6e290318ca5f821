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
pub(crate) const DEFAULT_MAX_MESSAGE: usize = 16 << 20;

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
    lookup: fn(&str) -> Option<String>,
    step_up: bool,
    protocol: Option<crate::mcp::Choice>,
    /// The name of the ad-hoc server, which the allowlist does not gate.
    adhoc: Option<String>,
    /// What answers the servers' requests (the operator's options).
    client: std::sync::Arc<dyn crate::session::Client>,
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
            },
            allow: Ok(Allowlist::default()),
            startup: g.startup_timeout,
            timeout: g.timeout,
            max_message: g.max_message.unwrap_or(DEFAULT_MAX_MESSAGE),
            lookup,
            step_up: g.step_up,
            protocol: g.protocol,
            adhoc: None,
            client: std::sync::Arc::new(crate::session::Declines),
        }
    }

    /// Whether `name` is the ad-hoc server typed on the command line.
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

    /// Checks, starts and initializes a server.
    pub(crate) fn start(&self, name: &str) -> Result<Session> {
        let server = self.startable(name)?;
        let startup =
            self.startup.or(server.startup_timeout).unwrap_or(DEFAULT_STARTUP);
        let deadline = Deadline::new(crate::mcp::method::INITIALIZE, startup);
        let transport = self.transport(name, server)?;
        Session::open(
            name,
            transport,
            self.protocol.unwrap_or(server.protocol),
            &deadline,
            self.request_timeout(server),
            std::sync::Arc::clone(&self.client),
        )
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
        let transport = self.transport(name, server)?;
        Ok(Session::resumed(
            name,
            transport,
            session,
            version,
            self.request_timeout(server),
            std::sync::Arc::clone(&self.client),
        ))
    }

    /// The canonical URL of an HTTP server (`None` for stdio).
    pub(crate) fn url(&self, name: &str) -> Option<String> {
        match &self.config.entry(name)?.server.as_ref()?.transport {
            Transport::Http(spec) => Some(spec.url.to_string()),
            Transport::Stdio(_) => None,
        }
    }

    /// The transport to a server: its process started, or its URL's
    /// client made.
    fn transport(
        &self,
        name: &str,
        server: &Server,
    ) -> Result<Box<dyn crate::transport::Transport>> {
        Ok(match &server.transport {
            Transport::Stdio(spec) => {
                let argv =
                    spec.argv(&self.lookup).map_err(|e| e.for_server(name))?;
                let env = stdio::child_env(spec, &self.lookup)
                    .map_err(|e| e.for_server(name))?;
                Box::new(
                    StdioTransport::spawn(
                        name,
                        spec,
                        &argv,
                        env,
                        self.max_message,
                    )
                    .map_err(|e| e.for_server(name))?,
                )
            }
            Transport::Http(spec) => {
                let headers = http::headers(spec, &self.lookup)
                    .map_err(|e| e.for_server(name))?;
                let auth = Authorization::resolve(
                    name,
                    spec,
                    self.lookup,
                    self.step_up,
                )
                .map_err(|e| e.for_server(name))?;
                let limits = http::Limits::new(self.max_message);
                Box::new(
                    HttpTransport::connect(name, spec, headers, auth, limits)
                        .map_err(|e| e.for_server(name))?,
                )
            }
        })
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
    };
    Ok(Config {
        path: std::path::PathBuf::from("(command line)"),
        entries: vec![config::Entry {
            name: a.name.clone(),
            server: Some(server),
        }],
        diagnostics: vec![],
        file_ok: true,
    })
}
