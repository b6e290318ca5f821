//! The stdio transport: a server as a subprocess, JSON-RPC lines on pipes.
//!
//! The argv runs directly (never through a shell) in its own process
//! group, with a cleared environment plus the documented base set, the
//! entry's `env_vars` and its `env`. One thread per pipe: stdout lines go
//! to a channel (each line capped, so a hostile server cannot exhaust our
//! memory), stderr is drained continuously into a bounded tail (so a noisy
//! server never blocks on a full pipe), and stdin is written by its own
//! thread (so a server that stops reading cannot block us past a
//! deadline). Closing follows the MCP shutdown order: close stdin, a short
//! grace, SIGTERM to the whole group, a grace, SIGKILL to the group, reap.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio as Pipe};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Closed, Transport, Wire};
use crate::config::Stdio;
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::{journal, msg, sys, term, vars};

/// How long a server gets to exit after its stdin closes, and again after
/// SIGTERM.
const GRACE: Duration = Duration::from_millis(500);
/// The stderr tail kept for error messages.
const TAIL_LINES: usize = 20;
const TAIL_LINE_BYTES: usize = 2048;

/// What the stdout reader thread reports.
enum Incoming {
    Line(Vec<u8>),
    TooLong(usize),
    Eof,
    Failed(String),
}

type Tail = Arc<Mutex<VecDeque<String>>>;

/// A running stdio server.
pub(crate) struct StdioTransport {
    name: String,
    child: Child,
    pgid: i32,
    stdin: Option<Sender<Vec<u8>>>,
    lines: Receiver<Incoming>,
    tail: Tail,
    closed: Option<Closed>,
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport")
            .field("server", &self.name)
            .field("pid", &self.child.id())
            .finish_non_exhaustive()
    }
}

/// Builds the child's environment: base set, then `env_vars`, then `env`
/// expanded. An unset variable the entry needs refuses the launch.
pub(crate) fn child_env(
    spec: &Stdio,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>> {
    let mut env: Vec<(String, String)> = vec![];
    let mut set = |k: &str, v: String| {
        env.retain(|(n, _)| n != k);
        env.push((k.to_string(), v));
    };
    for &k in sys::BASE_ENV {
        if let Some(v) = lookup(k) {
            set(k, v);
        }
    }
    for k in &spec.env_vars {
        let v = lookup(k).ok_or_else(|| {
            Error::refused(format!(
                "environment variable '{k}' (listed in env_vars) is not set"
            ))
        })?;
        set(k, v);
    }
    for (k, template) in &spec.env {
        let v = vars::expand(template, lookup)
            .map_err(|e| Error::refused(format!("env '{k}': {e}")))?;
        set(k, v);
    }
    Ok(env)
}

impl StdioTransport {
    /// Starts the server. `env` is the complete environment of the child.
    pub(crate) fn spawn(
        name: &str,
        spec: &Stdio,
        env: Vec<(String, String)>,
        max_line: usize,
    ) -> Result<StdioTransport> {
        if let Some(dir) = &spec.cwd_path
            && !dir.is_dir()
        {
            return Err(Error::refused(format!(
                "cwd '{}' is not a directory",
                dir.display()
            )));
        }
        let mut cmd = Command::new(&spec.command);
        cmd.args(&spec.args)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Pipe::piped())
            .stdout(Pipe::piped())
            .stderr(Pipe::piped())
            .process_group(0);
        if let Some(dir) = &spec.cwd_path {
            cmd.current_dir(dir);
        }
        sys::unblock_signals_in_child(&mut cmd);

        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        msg::debug(&format!(
            "server '{name}': starting {:?} with environment {}",
            std::iter::once(&spec.command)
                .chain(&spec.args)
                .collect::<Vec<_>>(),
            names.join(",")
        ));
        let mut child = cmd.spawn().map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::NotFound {
                " (not found; the command runs without a shell, on PATH)"
            } else {
                ""
            };
            Error::server(format!(
                "cannot start '{}': {e}{hint}",
                term::line(&spec.command)
            ))
        })?;
        let pgid = child.id() as i32;
        sys::register_group(pgid);
        journal::event(
            "server_spawned",
            serde_json::json!({
                "server": name,
                "argv": std::iter::once(&spec.command)
                    .chain(&spec.args)
                    .collect::<Vec<_>>(),
                "env_names": names,
                "pid": pgid,
            }),
        );
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            unreachable!("all three pipes were requested");
        };
        let (line_tx, lines) = mpsc::channel();
        let started = thread(name, "stdout", move || {
            read_lines(stdout, max_line, &line_tx)
        });
        let tail: Tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail2 = Arc::clone(&tail);
        let server = name.to_string();
        let started = started.and_then(|_| {
            thread(name, "stderr", move || {
                drain_stderr(stderr, &tail2, &server)
            })
        });
        let (in_tx, in_rx) = mpsc::channel::<Vec<u8>>();
        let started = started.and_then(|_| {
            thread(name, "stdin", move || write_lines(stdin, &in_rx))
        });
        let mut t = StdioTransport {
            name: name.to_string(),
            child,
            pgid,
            stdin: Some(in_tx),
            lines,
            tail,
            closed: None,
        };
        if let Err(e) = started {
            t.close();
            return Err(e);
        }
        Ok(t)
    }

    /// The last lines the server wrote on stderr, sanitised, for errors.
    fn stderr_tail(&self) -> String {
        // Give the stderr thread a moment to catch up with a dying server.
        std::thread::sleep(Duration::from_millis(20));
        let tail = self.tail.lock().map(|t| t.clone()).unwrap_or_default();
        if tail.is_empty() {
            return "; its stderr was empty".to_string();
        }
        let mut s = String::from("; last lines of its stderr:");
        for l in tail {
            s.push_str("\n    ");
            s.push_str(&term::line(&l));
        }
        s
    }

    /// An error about the server dying: exit status plus stderr tail.
    fn died(&mut self, what: &str) -> Error {
        let start = Instant::now();
        let mut status = None;
        while start.elapsed() < Duration::from_millis(200) {
            if let Ok(Some(s)) = self.child.try_wait() {
                status = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let how = match status {
            Some(s) => format!(" ({s})"),
            None => String::new(),
        };
        let msg = format!("{what}{how}{}", self.stderr_tail());
        self.close();
        Error::server(msg)
    }

    fn wait_exit(&mut self, grace: Duration) -> bool {
        let start = Instant::now();
        loop {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            if start.elapsed() >= grace {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

fn thread(
    server: &str,
    pipe: &str,
    f: impl FnOnce() + Send + 'static,
) -> Result<()> {
    std::thread::Builder::new()
        .name(format!("{server}-{pipe}"))
        .spawn(f)
        .map(drop)
        .map_err(|e| Error::server(format!("cannot start a thread: {e}")))
}

/// Reads newline-terminated lines of at most `max` bytes.
fn read_lines(stdout: impl Read, max: usize, tx: &Sender<Incoming>) {
    let mut r = BufReader::with_capacity(64 * 1024, stdout);
    let mut line: Vec<u8> = vec![];
    loop {
        let buf = match r.fill_buf() {
            Ok([]) => {
                let _ = tx.send(Incoming::Eof);
                return;
            }
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = tx.send(Incoming::Failed(e.to_string()));
                return;
            }
        };
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if line.len() + chunk.len() > max {
            let _ = tx.send(Incoming::TooLong(max));
            return;
        }
        line.extend_from_slice(chunk);
        let used = done.unwrap_or(buf.len());
        r.consume(used);
        if done.is_some() {
            let l = std::mem::take(&mut line);
            if tx.send(Incoming::Line(l)).is_err() {
                return;
            }
        }
    }
}

/// Drains stderr into the bounded tail; echoes lines under `-v`.
fn drain_stderr(stderr: impl Read, tail: &Tail, server: &str) {
    let mut r = BufReader::with_capacity(16 * 1024, stderr);
    let mut line = vec![];
    loop {
        line.clear();
        // Bounded: at most TAIL_LINE_BYTES kept per line; the rest of an
        // overlong line is read and dropped.
        let mut kept = 0usize;
        let mut eof = false;
        loop {
            let buf = match r.fill_buf() {
                Ok([]) => {
                    eof = true;
                    break;
                }
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                    continue;
                }
                Err(_) => {
                    eof = true;
                    break;
                }
            };
            let (chunk, used, end) = match buf.iter().position(|&b| b == b'\n')
            {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            let room = TAIL_LINE_BYTES.saturating_sub(kept);
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            kept += chunk.len().min(room);
            r.consume(used);
            if end {
                break;
            }
        }
        if !line.is_empty() || !eof {
            let text = String::from_utf8_lossy(&line).trim_end().to_string();
            msg::server_line(server, &text);
            if let Ok(mut t) = tail.lock() {
                if t.len() == TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(text);
            }
        }
        if eof {
            return;
        }
    }
}

fn write_lines(mut stdin: impl Write, rx: &Receiver<Vec<u8>>) {
    for bytes in rx {
        if stdin.write_all(&bytes).and_then(|_| stdin.flush()).is_err() {
            return;
        }
    }
}

impl Transport for StdioTransport {
    fn wire(&self) -> Wire {
        Wire::Stdio
    }

    fn send(&mut self, msg: &Value, _deadline: &Deadline) -> Result<()> {
        let mut bytes = serde_json::to_vec(msg)
            .map_err(|e| Error::server(format!("cannot encode: {e}")))?;
        bytes.push(b'\n');
        let sent = self.stdin.as_ref().map(|tx| tx.send(bytes).is_ok());
        if sent != Some(true) {
            return Err(self.died("server closed its stdin"));
        }
        Ok(())
    }

    fn recv(&mut self, deadline: &Deadline) -> Result<Value> {
        loop {
            let wait = deadline.remaining()?;
            let line = match self.lines.recv_timeout(wait) {
                Ok(Incoming::Line(l)) => l,
                Ok(Incoming::TooLong(max)) => {
                    let e = Error::server(format!(
                        "server wrote a line longer than {max} bytes on \
                         stdout (raise --max-message if this is expected)"
                    ));
                    self.close();
                    return Err(e);
                }
                Ok(Incoming::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.died("server exited"));
                }
                Ok(Incoming::Failed(e)) => {
                    return Err(self.died(&format!("reading stdout: {e}")));
                }
                Err(RecvTimeoutError::Timeout) => return Err(deadline.error()),
            };
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return serde_json::from_slice(line).map_err(|_| {
                let text = String::from_utf8_lossy(line);
                let e = Error::server(format!(
                    "server wrote a line that is not JSON on stdout: '{}' \
                     (stdout is reserved for JSON-RPC; logs belong on \
                     stderr)",
                    term::clip(&term::line(&text), 120)
                ));
                self.close();
                e
            });
        }
    }

    fn close(&mut self) -> Closed {
        if let Some(how) = self.closed {
            return how;
        }
        // Already gone (checked before stdin closes, so that a server
        // exiting on EOF is not mistaken for one that was gone)?
        let gone = matches!(self.child.try_wait(), Ok(Some(_)));
        // 1. Close stdin; a well-behaved server exits on EOF.
        self.stdin = None;
        let how = if gone {
            Closed::Gone
        } else if self.wait_exit(GRACE) {
            Closed::Eof
        } else {
            // 2. SIGTERM to the group, then SIGKILL.
            sys::kill_group(self.pgid, sys::SIGTERM);
            if self.wait_exit(GRACE) {
                Closed::Sigterm
            } else {
                sys::kill_group(self.pgid, sys::SIGKILL);
                let _ = self.child.wait();
                Closed::Sigkill
            }
        };
        // 3. Whatever is left of the group (grandchildren that outlived
        // the leader, or kept our pipes open) goes the same way.
        if !sys::wait_group_gone(self.pgid, Duration::ZERO) {
            sys::kill_group(self.pgid, sys::SIGTERM);
            if !sys::wait_group_gone(self.pgid, GRACE) {
                sys::kill_group(self.pgid, sys::SIGKILL);
                sys::wait_group_gone(self.pgid, GRACE);
            }
        }
        sys::unregister_group(self.pgid);
        msg::debug(&format!(
            "server '{}': closed ({})",
            self.name,
            how.label()
        ));
        journal::event(
            "server_closed",
            serde_json::json!({"server": self.name, "how": how.label()}),
        );
        self.closed = Some(how);
        how
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.close();
    }
}
