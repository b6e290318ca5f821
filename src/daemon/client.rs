//! The invocation's side: asking the daemon for a warm session, and the
//! transport that carries the session's messages over the daemon's
//! socket.
//!
//! Nothing here is ever fatal to the command: no daemon (no socket) is
//! the ordinary case and says nothing; a daemon that cannot be reached,
//! refuses us or is of another build is said once on stderr (`-v` says
//! why) and the command runs cold. Only what the daemon reports of the
//! server itself (it could not be started, its handshake failed) is the
//! command's error, worded as cold.

use std::io::BufReader;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::wire;
use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::session::{Client, Session};
use crate::transport::{Canceller, Closed, Transport, Wire};
use crate::{journal, msg};

/// Said once per invocation.
static WARNED: AtomicBool = AtomicBool::new(false);

fn cold(why: &str) {
    if !WARNED.swap(true, Ordering::SeqCst) {
        msg::warn("the daemon is not usable; running cold (-v says why)");
    }
    msg::debug(&format!("daemon: {why}"));
}

/// Connects to the daemon at the socket of this user; `None` when there
/// is none (silently) or it cannot be used (said once).
pub(crate) fn connect(
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Option<UnixStream> {
    let dir = super::dir(lookup);
    let socket = dir.join(super::SOCKET);
    if std::fs::symlink_metadata(&socket).is_err() {
        return None;
    }
    if let Err(why) = super::check_dir(&dir, false)
        .and_then(|()| super::check_socket(&socket))
    {
        cold(&why);
        return None;
    }
    match UnixStream::connect(&socket) {
        Ok(s) => Some(s),
        Err(e) => {
            cold(&format!("{}: {e} (a stale socket?)", socket.display()));
            None
        }
    }
}

/// Sends one request line and reads the one reply line, within `wait`.
pub(crate) fn ask(
    stream: &UnixStream,
    req: &Value,
    wait: Duration,
) -> std::io::Result<(Value, BufReader<UnixStream>)> {
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    stream.set_read_timeout(Some(wait))?;
    let mut w = stream.try_clone()?;
    wire::write_line(&mut w, req)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    match wire::read_line(&mut reader, &mut vec![], wire::MAX_CONTROL)? {
        Some(v) => Ok((v, reader)),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the daemon closed the connection without answering",
        )),
    }
}

/// What the invocation computed of one server's launch.
pub(crate) struct Plan<'a> {
    pub(crate) name: &'a str,
    /// Which wire the server is on (the session decides some things by it).
    pub(crate) wire: Wire,
    /// The launch identity (the key is its hash); holds values.
    pub(crate) launch: Value,
    /// The unexpanded command line, for the daemon's log.
    pub(crate) display: Vec<String>,
    pub(crate) startup: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) max_message: usize,
    /// The fingerprint of a task the warm server must hold (`task`
    /// from another invocation); then no server is started.
    pub(crate) task: Option<String>,
}

impl std::fmt::Debug for Plan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the launch: it holds the environment's values.
        f.debug_struct("Plan")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A warm session from the daemon, `Ok(None)` to run cold.
pub(crate) fn session(
    plan: Plan<'_>,
    client: Arc<dyn Client>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<Session>> {
    let Some(stream) = connect(lookup) else { return Ok(None) };
    let key = super::key_of(&plan.launch);
    let mut req = wire::request("open");
    req.insert("name".into(), json!(plan.name));
    req.insert("key".into(), json!(key));
    // A sandboxed server's confinement, for -v and the journal (the
    // daemon spawns it as the invocation decided).
    let sandbox = plan
        .launch
        .get("sandbox")
        .and_then(|v| crate::sandbox::Decision::from_json(v).ok())
        .map(|d| d.summary());
    req.insert("launch".into(), plan.launch);
    req.insert("display".into(), json!(plan.display));
    req.insert("startup_ms".into(), json!(plan.startup.as_millis() as u64));
    if let Some(t) = &plan.task {
        req.insert("task".into(), json!(t));
    }
    let wait = plan.startup + Duration::from_secs(5);
    let (reply, reader) = match ask(&stream, &Value::Object(req), wait) {
        Ok(r) => r,
        Err(e) => {
            cold(&e.to_string());
            return Ok(None);
        }
    };
    if reply.get("ok") != Some(&Value::Bool(true)) {
        let text =
            reply.get("error").and_then(Value::as_str).unwrap_or("refused");
        let Some(kind) = reply.get("kind").and_then(Value::as_str) else {
            cold(text);
            return Ok(None);
        };
        return Err(Error::new(
            Kind::named(kind).unwrap_or(Kind::Server),
            text,
        )
        .for_server(plan.name));
    }
    let Some(info) = reply.get("server").and_then(wire::info_from_json) else {
        cold("the daemon's answer has no server");
        return Ok(None);
    };
    msg::debug(&format!(
        "server '{}': warm from the daemon (pid {}, key {}{})",
        plan.name,
        reply.get("pid").and_then(Value::as_i64).unwrap_or(0),
        &key[..12],
        if reply.get("fresh") == Some(&Value::Bool(true)) {
            ", started now"
        } else {
            ""
        }
    ));
    if let Some(s) = &sandbox {
        msg::debug(&format!("server '{}': sandbox {s}", plan.name));
    }
    let _ = stream.set_read_timeout(None);
    let t = DaemonTransport {
        name: plan.name.to_string(),
        wire: plan.wire,
        reader,
        writer: Arc::new(Mutex::new(stream)),
        partial: vec![],
        max: plan.max_message + wire::FRAME_OVERHEAD,
        timed_out: false,
        closed: None,
    };
    Ok(Some(Session::resume(
        plan.name,
        Box::new(t),
        info,
        plan.request_timeout,
        client,
        sandbox,
    )))
}

/// A session's messages over the daemon's socket.
struct DaemonTransport {
    name: String,
    wire: Wire,
    reader: BufReader<UnixStream>,
    writer: Arc<Mutex<UnixStream>>,
    partial: Vec<u8>,
    max: usize,
    /// A request timed out: closing retires the server, as cold closes it.
    timed_out: bool,
    closed: Option<Closed>,
}

/// How long the request may take, for the daemon (which waits as long
/// for the server as this invocation waits for the answer).
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn write(
    w: &Mutex<UnixStream>,
    v: &Value,
    limit: Duration,
) -> std::io::Result<()> {
    let mut s = w.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    s.set_write_timeout(Some(limit.max(Duration::from_millis(1))))?;
    wire::write_line(&mut *s, v)
}

impl Transport for DaemonTransport {
    fn wire(&self) -> Wire {
        self.wire
    }

    fn send_modern(
        &mut self,
        m: &Value,
        headers: &[(String, String)],
        deadline: &Deadline,
    ) -> Result<()> {
        let left = deadline.remaining()?;
        write(
            &self.writer,
            &json!({"m": m, "h": headers, "t": millis(left)}),
            left,
        )
        .map_err(|e| {
            Error::server(format!("the daemon's connection failed: {e}"))
        })
    }

    fn send(&mut self, m: &Value, deadline: &Deadline) -> Result<()> {
        let left = deadline.remaining()?;
        write(&self.writer, &json!({"m": m, "t": millis(left)}), left).map_err(
            |e| Error::server(format!("the daemon's connection failed: {e}")),
        )
    }

    fn recv(&mut self, deadline: &Deadline) -> Result<Value> {
        loop {
            let left = match deadline.remaining() {
                Ok(l) => l,
                Err(e) => {
                    self.timed_out = true;
                    return Err(e);
                }
            };
            let _ = self
                .reader
                .get_ref()
                .set_read_timeout(Some(left.max(Duration::from_millis(1))));
            match wire::read_line(
                &mut self.reader,
                &mut self.partial,
                self.max,
            ) {
                Ok(Some(mut v)) => {
                    if let Some(m) = v.get_mut("m") {
                        return Ok(m.take());
                    }
                    if let Some(why) = v.get("gone").and_then(Value::as_str) {
                        let kind = v
                            .get("kind")
                            .and_then(Value::as_str)
                            .and_then(Kind::named)
                            .unwrap_or(Kind::Server);
                        return Err(Error::new(kind, crate::term::line(why)));
                    }
                }
                Ok(None) => {
                    return Err(Error::server(
                        "the daemon closed the connection",
                    ));
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    self.timed_out = true;
                    return Err(deadline.error());
                }
                Err(e) => {
                    return Err(Error::server(format!(
                        "the daemon's connection failed: {e}"
                    )));
                }
            }
        }
    }

    fn canceller(&self) -> Option<Canceller> {
        let w = Arc::clone(&self.writer);
        Some(Arc::new(move |m: &Value| {
            let _ = write(&w, &json!({"m": m}), Duration::from_millis(200));
        }))
    }

    fn close(&mut self) -> Closed {
        if let Some(c) = self.closed {
            return c;
        }
        if self.timed_out {
            let _ = write(
                &self.writer,
                &json!({"op": "retire"}),
                Duration::from_secs(1),
            );
        }
        if let Ok(s) = self.writer.lock() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        journal::event(
            "server_closed",
            json!({"server": self.name, "how": "released", "warm": true,
                   "retired": self.timed_out}),
        );
        self.closed = Some(Closed::Eof);
        Closed::Eof
    }
}
