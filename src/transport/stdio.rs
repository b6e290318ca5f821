//! The stdio transport: a server as a subprocess, JSON-RPC lines on pipes.
//!
//! The argv runs directly (never through a shell) in its own process
//! group, started through [`crate::spawn`] (cleared environment plus the
//! documented base set, the entry's `env_vars` and its `env`; the group is
//! registered for cleanup on a signal with no window after the spawn).
//!
//! One thread per pipe, and every queue between them and the session is
//! bounded in messages and bytes ([`Queue`]), so memory stays bounded
//! whatever the server sends and however long the session is busy
//! elsewhere (a hook, the approval prompt, `batch` reading its stdin):
//!
//! * stdout lines (each capped at `--max-message`) go to a queue of at most
//!   [`QUEUE_BYTES`]; when it is full the reader stops reading, and the
//!   server blocks on its full pipe (back-pressure);
//! * stderr is drained continuously into a bounded tail (so a noisy server
//!   never blocks on a full pipe);
//! * stdin is written by its own thread from a queue of at most
//!   [`QUEUE_BYTES`]: a server that stops reading cannot block us past a
//!   deadline, and one that floods requests (`ping` with huge ids) while
//!   never reading its stdin is failed with an error saying so once our
//!   replies cannot be queued before the deadline.
//!
//! A fourth thread waits for the server process to exit (without reaping
//! it) and reports that into the stdout queue: a server that exits is
//! noticed at once even when a process it left behind keeps its stdout
//! open, so no EOF ever comes. Closing follows the MCP shutdown order:
//! close stdin, a short grace, SIGTERM to the whole group, a grace, SIGKILL
//! to the group, reap.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsRawFd;
use std::process::{Child, ChildStdout};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Closed, Transport, Wire};
use crate::config::Stdio;
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::{journal, msg, spawn, sys, term, vars};

/// The stack of each pipe thread.
const PIPE_THREAD_STACK: usize = 256 * 1024;

/// How long a server gets to exit after its stdin closes, and again after
/// SIGTERM.
const GRACE: Duration = Duration::from_millis(500);
/// The stderr tail kept for error messages.
const TAIL_LINES: usize = 20;
const TAIL_LINE_BYTES: usize = 2048;
/// Lines on stdout that are not JSON (a start-up banner, a stray log) are
/// skipped with a warning, up to this many...
const SKIP_LINES: usize = 100;
/// ... or this many bytes of them; past either the server is broken.
const SKIP_BYTES: usize = 64 * 1024;
/// The bytes each direction may hold in its queue. A single message
/// larger than this is still accepted into an empty queue.
pub(crate) const QUEUE_BYTES: usize = 4 << 20;
/// The messages each direction may hold in its queue (bounds the
/// per-message overhead of a flood of tiny lines).
const QUEUE_ITEMS: usize = 4096;
/// How often the stdout reader, waiting for data, checks whether the
/// server has exited.
const EXIT_POLL: Duration = Duration::from_millis(50);
/// After the server exits, how long lines are still taken from its stdout
/// at most before the exit is reported (a process it left behind may keep
/// writing).
const DRAIN: Duration = Duration::from_secs(1);

/// What the stdout reader (and the exit waiter) report.
enum Incoming {
    Line(Vec<u8>),
    TooLong(usize),
    Eof,
    /// The server exited and everything it wrote has been read (its
    /// stdout may still be open in a process it left behind).
    Exited,
    Failed(String),
}

type Tail = Arc<Mutex<VecDeque<String>>>;

/// A running stdio server.
pub(crate) struct StdioTransport {
    name: String,
    child: Child,
    pgid: i32,
    stdin: Arc<Queue<Vec<u8>>>,
    lines: Arc<Queue<Incoming>>,
    tail: Tail,
    closed: Option<Closed>,
    /// Non-JSON lines skipped so far, and their bytes.
    skipped: (usize, usize),
    /// The sandbox the server runs in (its private temporary directory
    /// lives as long as the transport).
    _sandbox: Option<crate::sandbox::Plan>,
    /// What one parsed message may take ([`super::tree_budget`]).
    budget: usize,
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport")
            .field("server", &self.name)
            .field("pid", &self.child.id())
            .finish_non_exhaustive()
    }
}

/// Builds the child's environment: base set, then `env_vars` (those set;
/// an unset one is skipped, as check-config warns), then `env` expanded.
/// An unset variable an `env` value needs refuses the launch.
pub(crate) fn child_env(
    spec: &Stdio,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>> {
    let mut env = spawn::base_env(lookup, &[]);
    let mut set = |k: &str, v: String| {
        env.retain(|(n, _)| n != k);
        env.push((k.to_string(), v));
    };
    for k in &spec.env_vars {
        match lookup(k) {
            Some(v) => set(k, v),
            None => msg::debug(&format!(
                "env_vars: '{k}' is not set; not passed to the server"
            )),
        }
    }
    for (k, template) in &spec.env {
        let v = vars::expand(template, lookup)
            .map_err(|e| Error::refused(format!("env '{k}': {e}")))?;
        set(k, v);
    }
    Ok(env)
}

impl StdioTransport {
    /// Starts the server. `argv` is the command and arguments expanded
    /// ([`Stdio::argv`]), `env` the complete environment of the child;
    /// logs and the journal show `spec`'s unexpanded text instead, since
    /// an expanded argument may hold a secret.
    pub(crate) fn spawn(
        name: &str,
        spec: &Stdio,
        argv: &(String, Vec<String>),
        env: Vec<(String, String)>,
        max_line: usize,
        sandbox: Option<crate::sandbox::Plan>,
    ) -> Result<StdioTransport> {
        if let Some(dir) = &spec.cwd_path
            && !dir.is_dir()
        {
            return Err(Error::refused(format!(
                "cwd '{}' is not a directory",
                dir.display()
            )));
        }
        let mut cmd = spawn::command(&argv.0, &argv.1, &env);
        if let Some(dir) = &spec.cwd_path {
            cmd.current_dir(dir);
        }
        if let Some(plan) = &sandbox {
            plan.install(&mut cmd);
            msg::debug(&format!(
                "server '{name}': sandbox {}",
                plan.summary()
            ));
        }

        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        msg::debug(&format!(
            "server '{name}': starting {:?} with environment {}",
            std::iter::once(&spec.command)
                .chain(&spec.args)
                .collect::<Vec<_>>(),
            names.join(",")
        ));
        let (mut child, pgid) =
            spawn::start_session(&mut cmd).map_err(|e| {
                let hint = if e.kind() == std::io::ErrorKind::NotFound {
                    " (not found; the command runs without a shell, on PATH)"
                } else {
                    ""
                };
                let how = if sandbox.is_some() && hint.is_empty() {
                    " (while applying its sandbox)"
                } else {
                    hint
                };
                Error::server(format!(
                    "cannot start '{}': {e}{how}",
                    term::line(&argv.0)
                ))
            })?;
        journal::event(
            "server_spawned",
            serde_json::json!({
                "server": name,
                "argv": std::iter::once(&spec.command)
                    .chain(&spec.args)
                    .collect::<Vec<_>>(),
                "env_names": names,
                "pid": pgid,
                "sandbox": sandbox.as_ref().map(crate::sandbox::Plan::summary),
            }),
        );
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            unreachable!("all three pipes were requested");
        };
        let lines = Arc::new(Queue::new());
        let to_server = Arc::new(Queue::new());
        let to_session = Arc::clone(&lines);
        let started = thread(name, "stdout", move || {
            read_lines(stdout, max_line, &to_session)
        });
        let (exits, exits_in) = (Arc::clone(&lines), Arc::clone(&to_server));
        let started = started.and_then(|_| {
            thread(name, "wait", move || {
                sys::wait_exited_nowait(pgid);
                exits.mark_exited();
                exits_in.mark_exited();
            })
        });
        let tail: Tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail2 = Arc::clone(&tail);
        let server = name.to_string();
        let started = started.and_then(|_| {
            thread(name, "stderr", move || {
                drain_stderr(stderr, &tail2, &server)
            })
        });
        let from_session = Arc::clone(&to_server);
        let started = started.and_then(|_| {
            thread(name, "stdin", move || write_lines(stdin, &from_session))
        });
        let mut t = StdioTransport {
            name: name.to_string(),
            child,
            pgid,
            stdin: to_server,
            lines,
            tail,
            closed: None,
            skipped: (0, 0),
            _sandbox: sandbox,
            budget: super::tree_budget(max_line),
        };
        if let Err(e) = started {
            t.close();
            return Err(e);
        }
        Ok(t)
    }

    /// Skips a line that is not JSON: warns at the first (with the count
    /// under `-v` after that); past [`SKIP_LINES`] or [`SKIP_BYTES`] the
    /// server is broken and the session ends.
    fn skip(&mut self, line: &[u8]) -> Result<()> {
        self.skipped.0 += 1;
        self.skipped.1 += line.len();
        let (n, bytes) = self.skipped;
        let text = term::line(&String::from_utf8_lossy(line)).into_owned();
        let shown = term::clip(&text, 120);
        const WHY: &str =
            "stdout is reserved for JSON-RPC; logs belong on stderr";
        if n > SKIP_LINES || bytes > SKIP_BYTES {
            let e = Error::server(if n == 1 {
                format!(
                    "server wrote a line that is not JSON on stdout: \
                     '{shown}' ({WHY})"
                )
            } else {
                format!(
                    "server wrote {n} lines that are not JSON on stdout \
                     ({bytes} bytes; the limit is {SKIP_LINES} lines or \
                     {SKIP_BYTES} bytes), the last: '{shown}' ({WHY})"
                )
            });
            self.close();
            return Err(e);
        }
        if n == 1 {
            msg::warn(&format!(
                "server '{}': skipped a line that is not JSON on stdout: \
                 '{shown}' ({WHY})",
                self.name
            ));
        } else {
            msg::debug(&format!(
                "server '{}': {n} lines that are not JSON skipped on stdout",
                self.name
            ));
        }
        Ok(())
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
        // Killed by our own signal thread? It ends the process with the
        // signal's exit code; this error must not win the race.
        sys::wait_if_closing();
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
            let left = grace.saturating_sub(start.elapsed());
            if left.is_zero() {
                return false;
            }
            sys::await_exit(self.pgid, left);
        }
    }
}

fn thread(
    server: &str,
    pipe: &str,
    f: impl FnOnce() + Send + 'static,
) -> Result<()> {
    // The pipe threads only copy bytes: a small stack keeps each one's
    // memory small (what they touch of it counts, not what is reserved).
    std::thread::Builder::new()
        .name(format!("{server}-{pipe}"))
        .stack_size(PIPE_THREAD_STACK)
        .spawn(f)
        .map(drop)
        .map_err(|e| Error::server(format!("cannot start a thread: {e}")))
}

/// Reads newline-terminated lines of at most `max` bytes into `tx`,
/// waiting (and so not reading the pipe) while the queue is full. Ends when
/// the session closes the queue, at EOF, or once the server has exited and
/// its pipe is empty: what it wrote before exiting is in the pipe, so an
/// empty pipe after the exit means all of it was read (no race with the
/// exit waiter), even when a process it left behind keeps the pipe open.
fn read_lines(stdout: ChildStdout, max: usize, tx: &Queue<Incoming>) {
    let fd = stdout.as_raw_fd();
    let mut r = BufReader::with_capacity(64 * 1024, stdout);
    let mut line: Vec<u8> = vec![];
    loop {
        if r.buffer().is_empty() && !sys::wait_readable(fd, EXIT_POLL) {
            if tx.exited() {
                tx.push(Incoming::Exited, 0, None);
                return;
            }
            continue;
        }
        let buf = match r.fill_buf() {
            Ok([]) => {
                tx.push(Incoming::Eof, 0, None);
                return;
            }
            Ok(buf) => buf,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tx.push(Incoming::Failed(e.to_string()), 0, None);
                return;
            }
        };
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if line.len() + chunk.len() > max {
            tx.push(Incoming::TooLong(max), 0, None);
            return;
        }
        line.extend_from_slice(chunk);
        let used = done.unwrap_or(buf.len());
        r.consume(used);
        if done.is_some() {
            let l = std::mem::take(&mut line);
            let size = l.len();
            if tx.push(Incoming::Line(l), size, None) != Push::Queued {
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

/// Writes queued messages to the server until the session closes the
/// queue (then stdin closes) or the server stops taking them (then the
/// queue is closed, so the session's next send fails).
fn write_lines(mut stdin: impl Write, rx: &Queue<Vec<u8>>) {
    while let Pop::Item(bytes, size) = rx.pop(None) {
        let ok = stdin.write_all(&bytes).and_then(|_| stdin.flush()).is_ok();
        // Counted until written: a server that stops reading holds up the
        // whole budget, not the budget plus the message being written.
        rx.release(size);
        if !ok {
            rx.close();
            return;
        }
    }
}

/// Whether [`Queue::push`] queued the item.
#[derive(Debug, PartialEq, Eq)]
enum Push {
    Queued,
    /// The queue is closed: the other side is gone.
    Closed,
    /// Still no room when the deadline came.
    Full,
}

/// What [`Queue::pop`] found.
enum Pop<T> {
    Item(T, usize),
    /// Closed and empty.
    Closed,
    /// The process behind the queue exited [`DRAIN`] ago.
    Exited,
    TimedOut,
}

/// A queue between one producer thread and one consumer, bounded in items
/// and bytes. The producer waits for room (back-pressure, or a deadline);
/// an item's bytes stay counted until the consumer calls
/// [`Queue::release`]. Zero-size items (end markers) always fit, and one
/// item of any size fits into an empty queue.
struct Queue<T> {
    state: Mutex<QueueState<T>>,
    changed: Condvar,
}

struct QueueState<T> {
    items: VecDeque<(T, usize)>,
    bytes: usize,
    closed: bool,
    exited: Option<Instant>,
}

impl<T> Queue<T> {
    fn new() -> Queue<T> {
        Queue {
            state: Mutex::new(QueueState {
                items: VecDeque::new(),
                bytes: 0,
                closed: false,
                exited: None,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState<T>> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits on the condition until `until` (forever when `None`); false
    /// when the time is up.
    fn wait<'a>(
        &self,
        g: MutexGuard<'a, QueueState<T>>,
        until: Option<Instant>,
    ) -> (MutexGuard<'a, QueueState<T>>, bool) {
        match until {
            None => {
                (self.changed.wait(g).unwrap_or_else(|p| p.into_inner()), true)
            }
            Some(t) => {
                let left = t.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return (g, false);
                }
                let (g, _) = self
                    .changed
                    .wait_timeout(g, left)
                    .unwrap_or_else(|p| p.into_inner());
                (g, true)
            }
        }
    }

    /// Adds an item of `size` bytes, waiting for room until `until`.
    fn push(&self, item: T, size: usize, until: Option<Instant>) -> Push {
        let mut g = self.lock();
        loop {
            if g.closed {
                return Push::Closed;
            }
            let fits = size == 0
                || g.bytes == 0
                || (g.bytes.saturating_add(size) <= QUEUE_BYTES
                    && g.items.len() < QUEUE_ITEMS);
            if fits {
                g.bytes = g.bytes.saturating_add(size);
                g.items.push_back((item, size));
                self.changed.notify_all();
                return Push::Queued;
            }
            if g.exited.is_some() {
                return Push::Closed;
            }
            let (next, more) = self.wait(g, until);
            g = next;
            if !more {
                return Push::Full;
            }
        }
    }

    /// Takes the next item, waiting until `until` (forever when `None`).
    /// Once the process exited, items are taken for [`DRAIN`] more at
    /// most, then the exit is reported whatever is left.
    fn pop(&self, until: Option<Instant>) -> Pop<T> {
        let mut g = self.lock();
        loop {
            let drained = g.exited.map(|t| t + DRAIN);
            if drained.is_some_and(|t| Instant::now() >= t) {
                return Pop::Exited;
            }
            if let Some((item, size)) = g.items.pop_front() {
                return Pop::Item(item, size);
            }
            if g.closed {
                return Pop::Closed;
            }
            if until.is_some_and(|t| Instant::now() >= t) {
                return Pop::TimedOut;
            }
            let wake = match (until, drained) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            g = self.wait(g, wake).0;
        }
    }

    /// The consumer is done with an item of `size` bytes.
    fn release(&self, size: usize) {
        let mut g = self.lock();
        g.bytes = g.bytes.saturating_sub(size);
        self.changed.notify_all();
    }

    /// No more items will be taken (consumer) or added (producer).
    fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }

    /// Whether the process behind the queue has exited.
    fn exited(&self) -> bool {
        self.lock().exited.is_some()
    }

    /// The process behind the queue has exited: wakes the consumer, and
    /// a producer waiting for room gives up ([`Push::Closed`]).
    fn mark_exited(&self) {
        let mut g = self.lock();
        g.exited.get_or_insert_with(Instant::now);
        self.changed.notify_all();
    }

    /// The bytes queued now.
    fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

/// A handle that queues messages for the server's stdin from any
/// thread, through the same bounded writer queue as [`Transport::send`]
/// (the daemon's callers send while its pump thread receives).
#[derive(Clone)]
pub(crate) struct Sender(Arc<Queue<Vec<u8>>>);

impl std::fmt::Debug for Sender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sender")
    }
}

impl Sender {
    /// Queues one message, waiting for room until `until`; an error when
    /// the queue is closed (the server is gone) or stays full.
    pub(crate) fn send(
        &self,
        msg: &Value,
        until: Instant,
    ) -> std::result::Result<(), &'static str> {
        let mut bytes =
            serde_json::to_vec(msg).map_err(|_| "cannot encode")?;
        bytes.push(b'\n');
        let size = bytes.len();
        match self.0.push(bytes, size, Some(until)) {
            Push::Queued => Ok(()),
            Push::Closed => Err("the server closed its stdin"),
            Push::Full => Err("the server is not reading its stdin"),
        }
    }
}

impl StdioTransport {
    /// A [`Sender`] to this server's stdin.
    pub(crate) fn sender(&self) -> Sender {
        Sender(Arc::clone(&self.stdin))
    }

    /// The server's process id (its group's id too).
    pub(crate) fn pid(&self) -> i32 {
        self.pgid
    }
}

impl Transport for StdioTransport {
    fn wire(&self) -> Wire {
        Wire::Stdio
    }

    fn canceller(&self) -> Option<super::Canceller> {
        // Through the writer's queue, so it never lands inside another
        // message; a full or closed queue drops it.
        let queue = Arc::clone(&self.stdin);
        Some(Arc::new(move |msg: &Value| {
            if let Ok(mut bytes) = serde_json::to_vec(msg) {
                bytes.push(b'\n');
                let size = bytes.len();
                queue.push(bytes, size, Some(Instant::now()));
            }
        }))
    }

    fn send(&mut self, msg: &Value, deadline: &Deadline) -> Result<()> {
        let mut bytes = serde_json::to_vec(msg)
            .map_err(|e| Error::server(format!("cannot encode: {e}")))?;
        bytes.push(b'\n');
        let size = bytes.len();
        let until = Instant::now() + deadline.remaining()?;
        match self.stdin.push(bytes, size, Some(until)) {
            Push::Queued => Ok(()),
            Push::Closed => Err(self.died("server closed its stdin")),
            Push::Full => {
                let e = Error::server(format!(
                    "server is not reading its stdin: {} bytes of messages \
                     for it were still unwritten at the deadline",
                    self.stdin.bytes(),
                ));
                self.close();
                Err(e)
            }
        }
    }

    fn recv(&mut self, deadline: &Deadline) -> Result<Value> {
        loop {
            let until = Instant::now() + deadline.remaining()?;
            let line = match self.lines.pop(Some(until)) {
                Pop::Item(Incoming::Line(l), size) => {
                    self.lines.release(size);
                    l
                }
                Pop::Item(Incoming::TooLong(max), _) => {
                    let e = Error::server(format!(
                        "server wrote a line longer than {max} bytes on \
                         stdout (raise --max-message if this is expected)"
                    ));
                    self.close();
                    return Err(e);
                }
                Pop::Item(Incoming::Eof | Incoming::Exited, _)
                | Pop::Closed
                | Pop::Exited => {
                    return Err(self.died("server exited"));
                }
                Pop::Item(Incoming::Failed(e), _) => {
                    return Err(self.died(&format!("reading stdout: {e}")));
                }
                Pop::TimedOut => return Err(deadline.error()),
            };
            let line = line.strip_suffix(b"\r").unwrap_or(&line);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match super::parse(line, self.budget) {
                Ok(Some(v)) => return Ok(v),
                Ok(None) => self.skip(line)?,
                Err(e) => {
                    self.close();
                    return Err(e);
                }
            }
        }
    }

    fn tree_budget(&self) -> usize {
        self.budget
    }

    fn close(&mut self) -> Closed {
        if let Some(how) = self.closed {
            return how;
        }
        // Already gone (checked before stdin closes, so that a server
        // exiting on EOF is not mistaken for one that was gone)?
        let gone = matches!(self.child.try_wait(), Ok(Some(_)));
        // 1. Close stdin (once what is queued is written); a well-behaved
        // server exits on EOF. Stop reading stdout: the reader thread ends
        // at its next line instead of waiting for room.
        self.stdin.close();
        self.lines.close();
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
        // 4. And what left the group but not the server's session (its
        // id is the group's): found on Linux, ended the same way.
        let strays = sys::end_session(self.pgid, GRACE);
        if strays > 0 {
            msg::debug(&format!(
                "server '{}': ended {strays} process(es) of its session \
                 outside its group",
                self.name
            ));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn soon(ms: u64) -> Option<Instant> {
        Some(Instant::now() + Duration::from_millis(ms))
    }

    #[test]
    fn queue_is_bounded_in_bytes_and_waits_for_room() {
        let q = Queue::new();
        assert_eq!(q.push(1, QUEUE_BYTES - 10, None), Push::Queued);
        assert_eq!(q.push(2, 10, None), Push::Queued);
        // Full: the producer waits, then gives up at its deadline.
        let start = Instant::now();
        assert_eq!(q.push(3, 1, soon(50)), Push::Full);
        assert!(start.elapsed() >= Duration::from_millis(50));
        // An end marker always fits.
        assert_eq!(q.push(4, 0, soon(0)), Push::Queued);
        // Taking an item frees nothing until it is released.
        assert!(matches!(q.pop(None), Pop::Item(1, _)));
        assert_eq!(q.push(5, 1, soon(10)), Push::Full);
        q.release(QUEUE_BYTES - 10);
        assert_eq!(q.push(5, 1, soon(10)), Push::Queued);
        assert_eq!(q.bytes(), 11);
    }

    #[test]
    fn queue_is_bounded_in_items() {
        let q = Queue::new();
        for i in 0..QUEUE_ITEMS {
            assert_eq!(q.push(i, 1, None), Push::Queued);
        }
        assert_eq!(q.push(0, 1, soon(10)), Push::Full);
    }

    #[test]
    fn one_oversized_item_fits_an_empty_queue_only() {
        let q = Queue::new();
        assert_eq!(q.push("big", QUEUE_BYTES * 4, None), Push::Queued);
        assert_eq!(q.push("more", 1, soon(10)), Push::Full);
    }

    #[test]
    fn waiting_producer_is_woken_by_release_and_by_close() {
        let q = Arc::new(Queue::new());
        assert_eq!(q.push(0, QUEUE_BYTES, None), Push::Queued);
        let q2 = Arc::clone(&q);
        let producer = std::thread::spawn(move || q2.push(1, 1, None));
        std::thread::sleep(Duration::from_millis(20));
        assert!(matches!(q.pop(None), Pop::Item(0, _)));
        q.release(QUEUE_BYTES);
        assert_eq!(producer.join().unwrap(), Push::Queued);

        assert!(matches!(q.pop(None), Pop::Item(1, 1)));
        q.release(1);
        assert_eq!(q.push(2, QUEUE_BYTES, None), Push::Queued);
        let q3 = Arc::clone(&q);
        let producer = std::thread::spawn(move || q3.push(3, 1, None));
        std::thread::sleep(Duration::from_millis(20));
        q.close();
        assert_eq!(producer.join().unwrap(), Push::Closed);
    }

    #[test]
    fn exit_stops_a_waiting_producer_and_is_reported_after_the_drain() {
        let q = Arc::new(Queue::new());
        assert_eq!(q.push(0, QUEUE_BYTES, None), Push::Queued);
        q.mark_exited();
        assert!(q.exited());
        // No room and nobody to take it: give up instead of waiting.
        assert_eq!(q.push(1, 1, None), Push::Closed);
        // What was queued is still delivered, for DRAIN at most.
        assert!(matches!(q.pop(soon(0)), Pop::Item(0, _)));
        let start = Instant::now();
        assert!(matches!(q.pop(None), Pop::Exited));
        assert!(start.elapsed() <= DRAIN + Duration::from_millis(200));
    }

    #[test]
    fn pop_times_out_on_an_empty_queue() {
        let q: Queue<u8> = Queue::new();
        assert!(matches!(q.pop(soon(20)), Pop::TimedOut));
        q.close();
        assert!(matches!(q.pop(soon(20)), Pop::Closed));
    }
}
