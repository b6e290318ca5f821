//! The daemon process: the socket, who may connect, the pool of warm
//! servers, `status`, `stop`, retiring idle servers and ending itself.
//!
//! One thread accepts; each connection gets a thread of its own (at most
//! [`MAX_CALLERS`] at once), which checks the peer's uid before reading a
//! byte, reads one bounded request line and serves it. An `open` starts
//! the server through the same spawn path as a cold run (the stdio
//! transport: sanitised environment as the caller computed it, process
//! group, registration before exec), does the handshake once with the
//! caller's declared capabilities, and hands the connection to the warm
//! server ([`super::warm`]); an HTTP server is connected to the same way
//! (`HttpTransport::connect`), with the credential the caller settled
//! (none, a bearer token, a DPoP-bound token and its key: kept in memory
//! for the requests, part of the key through its hash, never written). The
//! daemon never reads a config file, the environment of a server or the
//! allowlist: the caller has already decided that the server may run.

use std::io::BufReader;
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::pool::{Pool, Pooled};
use super::warm::{Caller, Facts, MakeLane, Warm};
use super::wire;
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::session::{Client, ServerAsk, Session};
use crate::transport::Transport;
use crate::transport::http::{self, HttpTransport};
use crate::transport::stdio::StdioTransport;
use crate::{config, mcp, msg, sys};

/// At most this many warm servers.
pub(crate) const MAX_SERVERS: usize = 64;
/// At most this many connections at once.
pub(crate) const MAX_CALLERS: usize = 256;
/// The largest message a caller may ask the daemon to carry.
const MAX_MESSAGE_CAP: usize = 64 << 20;
/// How long a connection may take to send its request line.
const REQUEST_WAIT: Duration = Duration::from_secs(10);
/// The daemon ends itself after holding no server this long (or `--idle`,
/// when longer).
pub(crate) const EMPTY_EXIT: Duration = Duration::from_secs(600);

/// The daemon's state.
pub(crate) struct Daemon {
    pool: Pool<Warm>,
    idle: Duration,
    socket: PathBuf,
    started: SystemTime,
    callers: AtomicUsize,
    next_caller: AtomicU64,
    /// Connections refused (another uid), for a bounded log.
    refused: AtomicU64,
}

static DAEMON: OnceLock<Arc<Daemon>> = OnceLock::new();

/// Serves on `socket` until stopped. The caller holds the directory's
/// lock, so any file at `socket` is a dead daemon's and is replaced.
pub(crate) fn run(socket: &Path, idle: Duration) -> Result<()> {
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket).map_err(|e| {
        Error::refused(format!(
            "daemon: cannot listen on {}: {e}",
            socket.display()
        ))
    })?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(
            socket,
            std::fs::Permissions::from_mode(0o600),
        );
    }
    let d = Arc::new(Daemon {
        pool: Pool::new(MAX_SERVERS),
        idle,
        socket: socket.to_path_buf(),
        started: SystemTime::now(),
        callers: AtomicUsize::new(0),
        next_caller: AtomicU64::new(1),
        refused: AtomicU64::new(0),
    });
    let _ = DAEMON.set(Arc::clone(&d));
    // SIGTERM/SIGINT: the signal thread ends every server's group; the
    // socket goes first so that no caller connects to a dying daemon.
    let path = socket.to_path_buf();
    std::mem::forget(sys::on_interrupt(Arc::new(move || {
        let _ = std::fs::remove_file(&path);
    })));
    msg::line(&format!(
        "rivumi-mcp daemon {}: pid {}, listening on {}",
        wire::build(),
        std::process::id(),
        socket.display()
    ));
    let reaper = Arc::clone(&d);
    std::thread::Builder::new()
        .name("reaper".into())
        .stack_size(128 << 10)
        .spawn(move || reaper.reap())
        .map_err(|e| Error::server(format!("daemon: {e}")))?;
    for conn in listener.incoming() {
        let Ok(stream) = conn else { continue };
        if d.callers.fetch_add(1, Ordering::SeqCst) >= MAX_CALLERS {
            d.callers.fetch_sub(1, Ordering::SeqCst);
            turn_away(stream, "busy", "the daemon serves too many callers");
            continue;
        }
        let me = Arc::clone(&d);
        let spawned = std::thread::Builder::new()
            .name("caller".into())
            .stack_size(512 << 10)
            .spawn(move || {
                me.connection(stream);
                me.callers.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            d.callers.fetch_sub(1, Ordering::SeqCst);
        }
    }
    Ok(())
}

/// Answers a connection it will not serve with one line, and closes it.
fn turn_away(mut s: UnixStream, why: &str, error: &str) {
    let _ = s.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = wire::write_line(
        &mut s,
        &json!({"ok": false, "why": why, "error": error}),
    );
}

impl Daemon {
    /// Retires idle servers and ends the daemon once it held none for a
    /// while.
    fn reap(&self) {
        let mut empty_since = Instant::now();
        let exit_after = EMPTY_EXIT.max(self.idle);
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let n = self.pool.retire_idle(self.idle);
            if n > 0 {
                msg::debug(&format!("retired {n} idle or dead server(s)"));
            }
            if !self.pool.is_empty() {
                empty_since = Instant::now();
            } else if empty_since.elapsed() >= exit_after {
                msg::line("no server for a while; the daemon exits");
                self.shutdown(None);
            }
        }
    }

    /// Closes every server, removes the socket and ends the process;
    /// `stopper` (who asked) is answered once everything is closed.
    pub(crate) fn shutdown(&self, stopper: Option<&Caller>) -> ! {
        let _ = std::fs::remove_file(&self.socket);
        self.pool.close_all();
        if let Some(c) = stopper {
            c.send(&json!({"ok": true, "pid": std::process::id()}));
        }
        msg::line("daemon stopped");
        std::process::exit(0)
    }

    fn connection(&self, stream: UnixStream) {
        let me = sys::euid();
        match sys::peer_uid(stream.as_raw_fd()) {
            Some(uid) if uid == me => {}
            other => {
                let who = other
                    .map_or("an unknown uid".into(), |u| format!("uid {u}"));
                // Logged, but a flood of them cannot grow the log much.
                let n = self.refused.fetch_add(1, Ordering::SeqCst);
                if n < 100 || n.is_multiple_of(1000) {
                    msg::warn(&format!(
                        "refused a connection from {who} (the daemon \
                         serves uid {me} only; {} refused so far)",
                        n + 1
                    ));
                }
                turn_away(
                    stream,
                    "refused",
                    "this daemon serves its own user only",
                );
                return;
            }
        }
        let Ok(read_half) = stream.try_clone() else { return };
        let _ = read_half.set_read_timeout(Some(REQUEST_WAIT));
        let mut reader = BufReader::new(read_half);
        let mut partial = vec![];
        let req = match wire::read_line(
            &mut reader,
            &mut partial,
            wire::MAX_CONTROL,
        ) {
            Ok(Some(v)) => v,
            _ => return,
        };
        let id = self.next_caller.fetch_add(1, Ordering::SeqCst);
        let caller = Arc::new(Caller::new(id, stream));
        if let Some(why) = wire::mismatch(&req) {
            caller.send(&json!({"ok": false, "why": "version", "error": why}));
            return;
        }
        match req.get("op").and_then(Value::as_str) {
            Some("status") => {
                caller.send(&self.status());
            }
            Some("stop") => {
                self.shutdown(Some(&caller));
            }
            Some("open") => self.open(&caller, &req, reader),
            _ => {
                caller.send(&json!({"ok": false, "why": "usage",
                                    "error": "unknown request"}));
            }
        }
    }

    fn open(
        &self,
        caller: &Arc<Caller>,
        req: &Value,
        mut reader: BufReader<UnixStream>,
    ) {
        let launch = match Launch::parse(req) {
            Ok(l) => l,
            Err(why) => {
                caller
                    .send(&json!({"ok": false, "why": "usage", "error": why}));
                return;
            }
        };
        let key = launch.key.clone();
        // `task`: the warm server that holds this task (a fingerprint),
        // never a new one (a new server cannot know the task).
        let task = req.get("task").and_then(Value::as_str);
        let gone = || {
            Error::server(
                "no warm server holds this task: the daemon retired the \
                 server or it exited (a stdio server's tasks end with it), \
                 or the task was collected or cancelled",
            )
        };
        // A server that exits between the lookup and the attach is
        // replaced once, as the next cold run would start a new one.
        let mut attempt = 0;
        let (warm, fresh) = loop {
            let got =
                self.pool.get_or_start(&key, &launch.family, || match task {
                    Some(_) => Err(gone()),
                    None => launch.start(),
                });
            let got = got.and_then(|got| match (got, task) {
                (Some((w, _)), Some(fp)) if !w.holds(fp) => Err(gone()),
                (got, _) => Ok(got),
            });
            let (warm, fresh) = match got {
                Ok(Some(w)) => w,
                Ok(None) => {
                    // No kind: the invocation runs cold, as with any
                    // daemon that cannot serve it.
                    caller.send(&json!({"ok": false, "error": format!(
                        "the daemon holds {MAX_SERVERS} servers, all in use"
                    )}));
                    return;
                }
                Err(e) => {
                    caller.send(&json!({"ok": false,
                                        "kind": e.kind().name(),
                                        "error": e.message()}));
                    return;
                }
            };
            if warm.attach(caller) {
                break (warm, fresh);
            }
            self.pool.retire(&key, &warm);
            attempt += 1;
            if attempt == 2 || task.is_some() {
                let e = if task.is_some() {
                    gone()
                } else {
                    Error::server("the server exited")
                };
                caller.send(&json!({"ok": false, "kind": "server",
                                    "error": e.message()}));
                return;
            }
        };
        caller.send(&json!({"ok": true, "fresh": fresh, "server": warm.info,
                            "pid": warm.facts.pid}));
        let _ = reader.get_ref().set_read_timeout(None);
        let max = launch.max_message + wire::FRAME_OVERHEAD;
        let mut partial = vec![];
        while let Ok(Some(mut line)) =
            wire::read_line(&mut reader, &mut partial, max)
        {
            if let Some(m) = line.get_mut("m") {
                let m = m.take();
                let wait = line
                    .get("t")
                    .and_then(Value::as_u64)
                    .map(Duration::from_millis);
                warm.on_caller(
                    caller,
                    m,
                    wire::headers_from_json(&line),
                    wait,
                );
            } else if line.get("op").and_then(Value::as_str) == Some("retire")
            {
                msg::debug(&format!(
                    "server '{}': a caller's request timed out; retired",
                    warm.facts.name
                ));
                warm.detach(caller);
                self.pool.retire(&key, &warm);
                return;
            }
        }
        warm.detach(caller);
    }

    fn status(&self) -> Value {
        let secs = |t: SystemTime| {
            t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
        };
        let mut servers: Vec<Value> = self
            .pool
            .entries()
            .into_iter()
            .map(|(key, w)| {
                let (calls, in_flight, tasks, used) = w.counts();
                json!({
                    "name": w.facts.name,
                    "fingerprint": &key[..12],
                    "transport": w.facts.transport,
                    "era": w.facts.protocol,
                    "pid": (w.facts.pid > 0).then_some(w.facts.pid),
                    "started": secs(w.facts.started),
                    "last_used": used.map(secs),
                    "calls": calls,
                    "in_flight": in_flight,
                    "tasks": tasks,
                    "lanes": (w.facts.transport == "http").then(|| w.lanes()),
                    "alive": w.alive(),
                })
            })
            .collect();
        servers.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        let (rss, peak) = sys::memory_kib();
        json!({
            "ok": true,
            "pid": std::process::id(),
            "version": wire::build(),
            "socket": self.socket.display().to_string(),
            "started": secs(self.started),
            "idle_secs": self.idle.as_secs_f64(),
            "rss_kib": rss,
            "peak_rss_kib": peak,
            "servers": servers,
        })
    }
}

/// What an `open` asks the daemon to run, as the caller computed it.
struct Launch {
    key: String,
    /// The key without the values (`super::family_of`).
    family: String,
    /// HTTP: the proxy the caller's environment routes the URL through
    /// (never the daemon's own environment's).
    proxy: Option<String>,
    name: String,
    /// An HTTP server's URL; `None` for stdio.
    url: Option<String>,
    /// stdio: the command and arguments, expanded.
    argv: Vec<String>,
    display: Vec<String>,
    cwd: Option<PathBuf>,
    /// stdio: the environment; HTTP: the headers (values are secret).
    env: Vec<(String, String)>,
    /// stdio: the sandbox the caller decided (`Null`: none).
    sandbox: Option<crate::sandbox::Decision>,
    /// HTTP: the credential the caller settled (`Authorization::lend`:
    /// a header value, a DPoP key; secret: in memory only, for the
    /// requests), `Null` for none.
    auth: Value,
    choice: mcp::Choice,
    caps: mcp::Capabilities,
    /// The declared roots (part of the key), answered as cold does.
    roots: Value,
    log_level: Option<String>,
    startup: Duration,
    max_message: usize,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the argv or the environment's values: they may hold
        // secrets.
        f.debug_struct("Launch")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Launch {
    fn parse(req: &Value) -> std::result::Result<Launch, String> {
        let l = req.get("launch").ok_or("no launch")?;
        let key = req.get("key").and_then(Value::as_str).ok_or("no key")?;
        if super::key_of(l) != key {
            return Err("the key is not the launch's hash".into());
        }
        let strings = |v: Option<&Value>| -> Option<Vec<String>> {
            v?.as_array()?
                .iter()
                .map(|s| s.as_str().map(str::to_string))
                .collect()
        };
        let name = req.get("name").and_then(Value::as_str).ok_or("no name")?;
        let url = match l.get("transport").and_then(Value::as_str) {
            Some("stdio") => None,
            Some("http") => Some(
                l.get("url")
                    .and_then(Value::as_str)
                    .ok_or("no url")?
                    .to_string(),
            ),
            _ => return Err("an unknown transport".into()),
        };
        let argv = match &url {
            Some(_) => vec![],
            None => strings(l.get("argv"))
                .filter(|a| !a.is_empty())
                .ok_or("no argv")?,
        };
        let display = strings(req.get("display"))
            .filter(|a| !a.is_empty())
            .ok_or("no display")?;
        let env = l
            .get(if url.is_some() { "headers" } else { "env" })
            .and_then(Value::as_array)
            .ok_or("no env")?
            .iter()
            .map(|p| {
                let k = p.get(0)?.as_str()?.to_string();
                let v = p.get(1)?.as_str()?.to_string();
                Some((k, v))
            })
            .collect::<Option<Vec<_>>>()
            .ok_or("a bad env pair")?;
        let sandbox = match l.get("sandbox") {
            None | Some(Value::Null) => None,
            Some(v) => Some(crate::sandbox::Decision::from_json(v)?),
        };
        // Rebuilt (and a malformed one refused) when the server is
        // connected to (`authorization`), not on every open.
        let auth = l.get("auth").cloned().unwrap_or(Value::Null);
        let choice = l
            .get("choice")
            .and_then(Value::as_str)
            .and_then(mcp::Choice::parse)
            .ok_or("no protocol choice")?;
        let ms =
            |k: &str| req.get(k).and_then(Value::as_u64).unwrap_or(30_000);
        Ok(Launch {
            key: key.to_string(),
            family: super::family_of(l),
            proxy: l.get("proxy").and_then(Value::as_str).map(str::to_string),
            url,
            name: crate::term::clip(&crate::term::line(name), 200)
                .into_owned(),
            argv,
            display,
            cwd: l.get("cwd").and_then(Value::as_str).map(PathBuf::from),
            env,
            sandbox,
            auth,
            choice,
            caps: wire::caps_from_json(l.get("caps").unwrap_or(&Value::Null)),
            roots: l.pointer("/client/roots").cloned().unwrap_or(json!([])),
            log_level: l
                .get("log_level")
                .and_then(Value::as_str)
                .map(str::to_string),
            startup: Duration::from_millis(
                ms("startup_ms").clamp(1, 3_600_000),
            ),
            max_message: l
                .get("max_message")
                .and_then(Value::as_u64)
                .map_or(crate::transport::DEFAULT_MAX_MESSAGE, |m| m as usize)
                .clamp(1024, MAX_MESSAGE_CAP),
        })
    }

    /// Starts and opens the server, through the cold path's transport.
    fn start(&self) -> Result<Arc<Warm>> {
        if self.url.is_some() {
            return self.connect();
        }
        let spec = config::Stdio {
            command: self.display[0].clone(),
            args: self.display[1..].to_vec(),
            env: vec![],
            env_vars: vec![],
            cwd_path: self.cwd.clone(),
            expand: false,
            // The block was the caller's to decide: `self.sandbox`.
            sandbox: None,
        };
        let argv = (self.argv[0].clone(), self.argv[1..].to_vec());
        let sandbox = self
            .sandbox
            .clone()
            .map(|d| crate::sandbox::Plan::make(&self.name, d))
            .transpose()
            .map_err(|e| e.for_server(&self.name))?;
        let t = StdioTransport::spawn(
            &self.name,
            &spec,
            &argv,
            self.env.clone(),
            self.max_message,
            sandbox,
        )
        .map_err(|e| e.for_server(&self.name))?;
        let sender = t.sender();
        let pid = t.pid();
        let d = Deadline::new(mcp::method::INITIALIZE, self.startup);
        let client = self.opener();
        let s = Session::open(
            &self.name,
            Box::new(t),
            self.choice,
            &d,
            self.startup,
            client,
        )?;
        self.keep(s, pid, |facts, info, roots, transport| {
            Warm::run(
                facts,
                wire::info_to_json(info),
                sender,
                roots,
                transport,
            )
        })
    }
}

impl Launch {
    /// The `Authorization` of an HTTP server's requests: the credential
    /// the caller settled, presented as it would present it.
    fn authorization(&self) -> Result<crate::auth::Authorization> {
        crate::auth::Authorization::lent(&self.name, &self.auth).map_err(|e| {
            Error::refused(format!("the daemon: {e}")).for_server(&self.name)
        })
    }

    /// The entry an HTTP transport is made from.
    fn http_spec(&self) -> Result<config::Http> {
        let text = self.url.clone().unwrap_or_default();
        let url = crate::urlcheck::Url::parse(&text).map_err(|e| {
            Error::refused(format!("url: {e}")).for_server(&self.name)
        })?;
        Ok(config::Http {
            url,
            url_text: text,
            headers: vec![],
            // The credential is the caller's, settled (`authorization`).
            bearer_token_env_var: None,
            oauth: None,
            token_command: None,
            headers_command: vec![],
        })
    }

    /// A transport to the HTTP server, not yet in a session.
    fn http_transport(&self) -> Result<HttpTransport> {
        HttpTransport::connect(
            &self.name,
            &self.http_spec()?,
            self.env.clone(),
            self.authorization()?,
            http::Limits::new(self.max_message),
            self.proxy.as_deref(),
        )
        .map_err(|e| e.for_server(&self.name))
    }

    /// Connects to an HTTP server and opens the session; more lanes join
    /// the session later, for concurrent callers.
    fn connect(&self) -> Result<Arc<Warm>> {
        let t = self.http_transport()?;
        let d = Deadline::new(mcp::method::INITIALIZE, self.startup);
        let s = Session::open(
            &self.name,
            Box::new(t),
            self.choice,
            &d,
            self.startup,
            self.opener(),
        )?;
        let me = Launch { key: self.key.clone(), ..self.clone_spec() };
        self.keep(s, 0, move |facts, info, roots, mut transport| {
            // The other lanes take up this session (its id, in the
            // handshake era) or speak the sessionless 2026-07-28 wire; a
            // handshake-era server without a session id gets one lane.
            let modern = info.version.is_some_and(|v| v.is_modern());
            let session = transport.detach();
            if let Some(id) = &session {
                transport.resume(id, &info.protocol);
            }
            let make: Option<MakeLane> =
                (modern || session.is_some()).then(|| {
                    Box::new(move || {
                        Ok(Box::new(me.http_transport()?)
                            as Box<dyn Transport>)
                    }) as MakeLane
                });
            Warm::run_http(
                facts,
                wire::info_to_json(info),
                roots,
                transport,
                session,
                make,
            )
        })
    }

    /// What a lane needs of the launch to connect again.
    fn clone_spec(&self) -> Launch {
        Launch {
            key: String::new(),
            family: String::new(),
            proxy: self.proxy.clone(),
            name: self.name.clone(),
            url: self.url.clone(),
            argv: vec![],
            display: vec![],
            cwd: None,
            env: self.env.clone(),
            sandbox: None,
            auth: self.auth.clone(),
            choice: self.choice,
            caps: self.caps,
            roots: Value::Null,
            log_level: None,
            startup: self.startup,
            max_message: self.max_message,
        }
    }

    /// Hands an opened session's transport to a warm server (`run`
    /// starts its pump); `pid` is 0 over HTTP.
    fn keep(
        &self,
        s: Session,
        pid: i32,
        run: impl FnOnce(
            Facts,
            &crate::session::ServerInfo,
            Option<Value>,
            Box<dyn Transport>,
        ) -> std::io::Result<Arc<Warm>>,
    ) -> Result<Arc<Warm>> {
        let (transport, info) = s.into_parts();
        let facts = Facts {
            name: self.name.clone(),
            transport: if pid > 0 { "stdio" } else { "http" },
            protocol: info.protocol.clone(),
            pid,
            started: SystemTime::now(),
            caps: self.caps,
        };
        msg::line(&format!(
            "started server '{}' ({} pid {pid}, {}, key {})",
            self.name,
            facts.transport,
            info.protocol,
            &self.key[..12]
        ));
        let roots = self.caps.roots.then(|| self.roots.clone());
        run(facts, &info, roots, transport)
            .map_err(|e| Error::server(format!("daemon: {e}")))
    }

    fn opener(&self) -> Arc<Opener> {
        Arc::new(Opener {
            caps: self.caps,
            roots: self.roots.clone(),
            log_level: self.log_level.clone(),
        })
    }
}

/// The client of the daemon's own handshake: the caller's declared
/// capabilities, roots and log level; what the server asks meanwhile is
/// answered as when no call is in flight ([`super::warm::unattended`]).
struct Opener {
    caps: mcp::Capabilities,
    roots: Value,
    log_level: Option<String>,
}

impl Client for Opener {
    fn capabilities(&self) -> mcp::Capabilities {
        self.caps
    }
    fn log_level(&self) -> Option<&str> {
        self.log_level.as_deref()
    }
    fn serve(&self, q: &ServerAsk<'_>) -> std::result::Result<Value, String> {
        super::warm::unattended(&q.ask, &self.roots)
    }
}
