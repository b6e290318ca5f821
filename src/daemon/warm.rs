//! One warm server in the daemon: its transport, the callers attached to
//! it, and the mapping of their request ids onto the server's.
//!
//! The transport belongs to one pump thread. Over stdio it only receives
//! and callers send through the stdio writer queue ([`Sender`]); over
//! HTTP, whose transport reads one request's stream at a time, the pump
//! also sends what callers queue, one request after another
//! ([`Outbox`]). Every request
//! a caller sends gets a fresh id of the daemon's (its progress token is
//! replaced the same way), and the answer goes back to that caller with
//! its own id: two invocations may both use id 1. What the server asks
//! (elicitation, sampling) goes to the one caller with a request in
//! flight (`roots/list` the daemon answers with the declared roots, which
//! are part of the key); when none or several are, it is answered with an error,
//! as nothing could answer it right. Log messages reach the callers with
//! a request in flight, `list_changed` every caller attached. A caller
//! that goes away has its requests cancelled on the wire
//! (`notifications/cancelled`) and its pending answers to the server
//! refused; a server that exits fails the calls in flight, and the pool
//! starts a new one for the next caller.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use super::pool::Pooled;
use super::wire;
use crate::deadline::Deadline;
use crate::error::Kind;
use crate::mcp::{self, method};
use crate::transport::Transport;
use crate::transport::stdio::Sender;

/// A message for the server and the 2026-07-28 headers it goes with.
type Out = (Value, Option<Vec<(String, String)>>);

/// How callers' messages reach the server: the stdio writer queue, or
/// the HTTP pump's bounded channel (the pump sends them in order, one
/// request at a time, since an HTTP transport serves one request's
/// stream at once).
#[derive(Debug)]
pub(crate) enum Outbox {
    Stdio(Sender),
    Http(std::sync::mpsc::SyncSender<Out>),
}

impl Outbox {
    fn send(
        &self,
        m: &Value,
        headers: Option<Vec<(String, String)>>,
        until: Instant,
    ) -> Result<(), &'static str> {
        match self {
            Outbox::Stdio(s) => s.send(m, until),
            Outbox::Http(tx) => {
                tx.try_send((m.clone(), headers)).map_err(|e| match e {
                    std::sync::mpsc::TrySendError::Full(_) => {
                        "the server has too many messages waiting"
                    }
                    std::sync::mpsc::TrySendError::Disconnected(_) => {
                        "the server is gone"
                    }
                })
            }
        }
    }
}

/// How long a caller that does not read may hold up a message for it
/// before it is dropped.
const CALLER_WRITE: Duration = Duration::from_secs(2);
/// How long a message for the server may wait for room in its queue.
const SERVER_WRITE: Duration = Duration::from_secs(10);
/// How often the pump looks up from waiting to see whether to stop.
const PUMP_TICK: Duration = Duration::from_millis(200);
/// How often the HTTP pump, waiting for an answer, looks for messages of
/// callers to send meanwhile (answers to what the server asked).
const HTTP_TICK: Duration = Duration::from_millis(5);
/// The first id the daemon gives requests (the handshake used a few).
const FIRST_ID: u64 = 1000;
/// At most this many requests in flight on one server, and as many of
/// its own requests waiting for a caller's answer.
pub(crate) const MAX_IN_FLIGHT: usize = 4096;

/// The daemon's end of one caller's connection: writes are bounded in
/// time, and a caller that cannot take a message in that time is cut off.
pub(crate) struct Caller {
    pub(crate) id: u64,
    out: Mutex<UnixStream>,
    broken: AtomicBool,
}

impl Caller {
    pub(crate) fn new(id: u64, stream: UnixStream) -> Caller {
        let _ = stream.set_write_timeout(Some(CALLER_WRITE));
        Caller { id, out: Mutex::new(stream), broken: AtomicBool::new(false) }
    }

    /// Sends one line; false (and the connection shut) when it failed.
    pub(crate) fn send(&self, v: &Value) -> bool {
        if self.broken.load(Ordering::SeqCst) {
            return false;
        }
        let mut out = lock(&self.out);
        if wire::write_line(&mut *out, v).is_ok() {
            return true;
        }
        self.broken.store(true, Ordering::SeqCst);
        let _ = out.flush();
        let _ = out.shutdown(std::net::Shutdown::Both);
        false
    }
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A request in flight: whose it is and what it was called.
struct Pending {
    caller: Arc<Caller>,
    id: Value,
    token: Option<Value>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    pending: HashMap<u64, Pending>,
    /// The server's own requests, by id text, and who is to answer them.
    asks: HashMap<String, Arc<Caller>>,
    attached: Vec<Arc<Caller>>,
    last_used: Option<Instant>,
    used_at: Option<SystemTime>,
    calls: u64,
    dead: Option<String>,
}

/// What `status` shows of a warm server.
#[derive(Debug)]
pub(crate) struct Facts {
    pub(crate) name: String,
    pub(crate) transport: &'static str,
    pub(crate) protocol: String,
    pub(crate) pid: i32,
    pub(crate) started: SystemTime,
}

pub(crate) struct Warm {
    pub(crate) facts: Facts,
    /// What the opening found, as the wire carries it.
    pub(crate) info: Value,
    sender: Outbox,
    /// The roots the callers declared (they are part of the key), to
    /// answer `roots/list` as cold does; `None` when roots are not
    /// declared.
    roots: Option<Value>,
    state: Mutex<State>,
    stop: AtomicBool,
    pump: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for Warm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Warm")
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

impl Warm {
    /// Takes over an opened stdio server: `transport` goes to a pump
    /// thread; callers send through `sender`.
    pub(crate) fn run(
        facts: Facts,
        info: Value,
        sender: Sender,
        roots: Option<Value>,
        transport: Box<dyn Transport>,
    ) -> std::io::Result<Arc<Warm>> {
        Warm::launch(facts, info, Outbox::Stdio(sender), roots, move |w| {
            w.pump(transport);
        })
    }

    /// Takes over an opened HTTP server: its pump sends what callers
    /// queue, one request at a time, and receives the answers.
    pub(crate) fn run_http(
        facts: Facts,
        info: Value,
        roots: Option<Value>,
        transport: Box<dyn Transport>,
    ) -> std::io::Result<Arc<Warm>> {
        let (tx, rx) = std::sync::mpsc::sync_channel(MAX_IN_FLIGHT);
        Warm::launch(facts, info, Outbox::Http(tx), roots, move |w| {
            w.pump_http(transport, &rx);
        })
    }

    fn launch(
        facts: Facts,
        info: Value,
        sender: Outbox,
        roots: Option<Value>,
        pump: impl FnOnce(&Warm) + Send + 'static,
    ) -> std::io::Result<Arc<Warm>> {
        let w = Arc::new(Warm {
            facts,
            info,
            sender,
            roots,
            state: Mutex::new(State {
                next_id: FIRST_ID,
                last_used: Some(Instant::now()),
                used_at: Some(SystemTime::now()),
                ..State::default()
            }),
            stop: AtomicBool::new(false),
            pump: Mutex::new(None),
        });
        let me = Arc::clone(&w);
        let h = std::thread::Builder::new()
            .name("pump".into())
            .stack_size(256 << 10)
            .spawn(move || pump(&me))?;
        *lock(&w.pump) = Some(h);
        Ok(w)
    }

    fn is_pending(&self, id: &Value) -> bool {
        id.as_u64().is_some_and(|n| lock(&self.state).pending.contains_key(&n))
    }

    /// The HTTP pump: sends the queued messages in order, holding back a
    /// request while another is unanswered, and receives only while a
    /// request is in flight (the transport reads one request's stream).
    fn pump_http(
        &self,
        mut t: Box<dyn Transport>,
        rx: &std::sync::mpsc::Receiver<Out>,
    ) {
        let mut queue: std::collections::VecDeque<Out> = Default::default();
        let mut awaiting: Option<Value> = None;
        'run: while !self.stop.load(Ordering::SeqCst) {
            if awaiting.is_none() && queue.is_empty() {
                match rx.recv_timeout(PUMP_TICK) {
                    Ok(o) => queue.push_back(o),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        continue;
                    }
                    Err(_) => break,
                }
            }
            while let Ok(o) = rx.try_recv() {
                queue.push_back(o);
            }
            while let Some((m, _)) = queue.front() {
                let request = m.get("method").is_some()
                    && m.get("id").is_some_and(|i| !i.is_null());
                if request && awaiting.is_some() {
                    break;
                }
                let Some((m, h)) = queue.pop_front() else { break };
                if request {
                    // Its caller may have left while it waited.
                    let id = m.get("id").cloned().unwrap_or(Value::Null);
                    if !self.is_pending(&id) {
                        continue;
                    }
                    awaiting = Some(id);
                }
                let d = Deadline::new("the daemon's send", SERVER_WRITE);
                let sent = match &h {
                    Some(h) => t.send_modern(&m, h, &d),
                    None => t.send(&m, &d),
                };
                if let Err(e) = sent {
                    self.fail(e.message());
                    break 'run;
                }
            }
            let Some(want) = awaiting.clone() else { continue };
            if !self.is_pending(&want) {
                // Cancelled: no answer is expected any more.
                awaiting = None;
                continue;
            }
            let d = Deadline::new("the daemon's wait", HTTP_TICK);
            if !self.receive(t.as_mut(), &d) {
                break;
            }
            if !self.is_pending(&want) {
                awaiting = None;
            }
        }
        t.close();
    }

    /// Receives what the server sends before `d` and routes it; false
    /// when the server failed (the calls in flight are failed too).
    fn receive(&self, t: &mut dyn Transport, d: &Deadline) -> bool {
        match t.recv(d) {
            Ok(Value::Array(batch)) => {
                for m in batch {
                    self.on_server(m);
                }
            }
            Ok(m) => self.on_server(m),
            Err(e) if e.kind() == Kind::Timeout => {}
            Err(e) => {
                self.fail(e.message());
                return false;
            }
        }
        true
    }

    fn pump(&self, mut t: Box<dyn Transport>) {
        while !self.stop.load(Ordering::SeqCst) {
            let d = Deadline::new("the daemon's wait", PUMP_TICK);
            if !self.receive(t.as_mut(), &d) {
                break;
            }
        }
        t.close();
    }

    /// Fails every call in flight with `why` and marks the server dead.
    fn fail(&self, why: &str) {
        let callers: Vec<Arc<Caller>> = {
            let mut s = lock(&self.state);
            s.dead = Some(why.to_string());
            let mut seen: Vec<Arc<Caller>> = vec![];
            for p in s.pending.drain().map(|(_, p)| p) {
                if !seen.iter().any(|c| c.id == p.caller.id) {
                    seen.push(p.caller);
                }
            }
            seen
        };
        crate::msg::debug(&format!(
            "server '{}' (pid {}): {why}",
            self.facts.name, self.facts.pid
        ));
        for c in callers {
            c.send(&json!({"gone": why}));
        }
    }

    fn to_server(&self, m: &Value) -> Result<(), &'static str> {
        self.sender.send(m, None, Instant::now() + SERVER_WRITE)
    }

    fn on_server(&self, mut m: Value) {
        let method =
            m.get("method").and_then(Value::as_str).map(str::to_string);
        let has_id = m.get("id").is_some_and(|i| !i.is_null());
        match (method, has_id) {
            (Some(method), true) => self.server_asks(&method, m),
            (Some(method), false) => self.server_notifies(&method, m),
            (None, true) => {
                let n = m.get("id").and_then(Value::as_u64);
                let p = n.and_then(|n| {
                    let mut s = lock(&self.state);
                    s.last_used = Some(Instant::now());
                    s.pending.remove(&n)
                });
                if let Some(p) = p {
                    m["id"] = p.id;
                    p.caller.send(&json!({"m": m}));
                }
            }
            (None, false) => {}
        }
    }

    fn server_asks(&self, method: &str, m: Value) {
        let id = m.get("id").cloned().unwrap_or(Value::Null);
        if method == method::PING {
            let _ = self.to_server(&mcp::response(id, json!({})));
            return;
        }
        if let (method::ROOTS_LIST, Some(roots)) = (method, &self.roots) {
            let r = json!({"roots": roots});
            let _ = self.to_server(&mcp::response(id, r));
            return;
        }
        let target = {
            let mut s = lock(&self.state);
            let mut owners = s.pending.values().map(|p| &p.caller);
            let first = owners.next().cloned();
            let unique = first
                .filter(|f| owners.all(|c| c.id == f.id))
                .filter(|_| s.asks.len() < MAX_IN_FLIGHT);
            if let Some(c) = &unique {
                s.asks.insert(id.to_string(), Arc::clone(c));
            }
            unique
        };
        match target {
            Some(c) => {
                if !c.send(&json!({"m": m})) {
                    lock(&self.state).asks.remove(&id.to_string());
                }
            }
            None => {
                let _ = self.to_server(&mcp::error_response(
                    id,
                    mcp::code::INTERNAL_ERROR,
                    "no single invocation is waiting on this server to \
                     answer this request",
                ));
            }
        }
    }

    fn server_notifies(&self, method: &str, mut m: Value) {
        let targets: Vec<Arc<Caller>> = {
            let s = lock(&self.state);
            if method == method::PROGRESS {
                let token =
                    m.pointer("/params/progressToken").and_then(Value::as_u64);
                match token.and_then(|t| s.pending.get(&t)) {
                    Some(p) => {
                        if let Some(orig) = &p.token {
                            m["params"]["progressToken"] = orig.clone();
                        }
                        vec![Arc::clone(&p.caller)]
                    }
                    None => vec![],
                }
            } else if method == method::MESSAGE {
                let mut v: Vec<Arc<Caller>> = vec![];
                for p in s.pending.values() {
                    if !v.iter().any(|c| c.id == p.caller.id) {
                        v.push(Arc::clone(&p.caller));
                    }
                }
                v
            } else if mcp::is_list_changed(method) {
                s.attached.clone()
            } else {
                vec![]
            }
        };
        let line = json!({"m": m});
        for c in targets {
            c.send(&line);
        }
    }

    /// Attaches a caller; false when the server is already dead.
    pub(crate) fn attach(&self, c: &Arc<Caller>) -> bool {
        let mut s = lock(&self.state);
        if s.dead.is_some() {
            return false;
        }
        s.attached.push(Arc::clone(c));
        true
    }

    /// One message from caller `c`.
    pub(crate) fn on_caller(
        &self,
        c: &Arc<Caller>,
        mut m: Value,
        headers: Option<Vec<(String, String)>>,
    ) {
        let method =
            m.get("method").and_then(Value::as_str).map(str::to_string);
        let id = m.get("id").cloned().filter(|i| !i.is_null());
        match (method, id) {
            (Some(_), Some(id)) => {
                let n = {
                    let mut s = lock(&self.state);
                    if let Some(why) = &s.dead {
                        let why = why.clone();
                        drop(s);
                        c.send(&json!({"gone": why}));
                        return;
                    }
                    if s.pending.len() >= MAX_IN_FLIGHT {
                        drop(s);
                        c.send(&json!({"m": mcp::error_response(
                            id,
                            mcp::code::INTERNAL_ERROR,
                            "the daemon has too many requests in flight \
                             on this server",
                        )}));
                        return;
                    }
                    let n = s.next_id;
                    s.next_id += 1;
                    let token =
                        m.pointer("/params/_meta/progressToken").cloned();
                    if token.is_some() {
                        m["params"]["_meta"]["progressToken"] = json!(n);
                    }
                    s.pending.insert(
                        n,
                        Pending { caller: Arc::clone(c), id, token },
                    );
                    s.calls += 1;
                    s.last_used = Some(Instant::now());
                    s.used_at = Some(SystemTime::now());
                    n
                };
                m["id"] = json!(n);
                let until = Instant::now() + SERVER_WRITE;
                if let Err(why) = self.sender.send(&m, headers, until) {
                    lock(&self.state).pending.remove(&n);
                    c.send(&json!({"gone": why}));
                }
            }
            (None, Some(id)) => {
                let owner = lock(&self.state).asks.remove(&id.to_string());
                if owner.is_some_and(|o| o.id == c.id) {
                    let _ = self.to_server(&m);
                }
            }
            (Some(method), None) if method == method::CANCELLED => {
                let want = m.pointer("/params/requestId").cloned();
                let n = {
                    let mut s = lock(&self.state);
                    let n = s
                        .pending
                        .iter()
                        .find(|(_, p)| {
                            p.caller.id == c.id && Some(&p.id) == want.as_ref()
                        })
                        .map(|(n, _)| *n);
                    if let Some(n) = n {
                        s.pending.remove(&n);
                    }
                    n
                };
                if let Some(n) = n {
                    m["params"]["requestId"] = json!(n);
                    let _ = self.to_server(&m);
                }
            }
            _ => {}
        }
        self.touch();
    }

    /// Marks the server used now.
    fn touch(&self) {
        lock(&self.state).last_used = Some(Instant::now());
    }

    /// Detaches caller `c`: its requests still in flight are cancelled on
    /// the wire, the server's questions to it refused.
    pub(crate) fn detach(&self, c: &Arc<Caller>) {
        let (ns, asks) = {
            let mut s = lock(&self.state);
            let ns: Vec<u64> = s
                .pending
                .iter()
                .filter(|(_, p)| p.caller.id == c.id)
                .map(|(n, _)| *n)
                .collect();
            for n in &ns {
                s.pending.remove(n);
            }
            let asks: Vec<String> = s
                .asks
                .iter()
                .filter(|(_, o)| o.id == c.id)
                .map(|(k, _)| k.clone())
                .collect();
            for k in &asks {
                s.asks.remove(k);
            }
            s.attached.retain(|a| a.id != c.id);
            (ns, asks)
        };
        for n in ns {
            crate::msg::debug(&format!(
                "server '{}': the caller left; request {n} cancelled",
                self.facts.name
            ));
            let _ = self.to_server(&mcp::cancelled(n, "the invocation ended"));
        }
        for k in asks {
            let id: Value = serde_json::from_str(&k).unwrap_or(Value::Null);
            let _ = self.to_server(&mcp::error_response(
                id,
                mcp::code::INTERNAL_ERROR,
                "the invocation that was to answer has ended",
            ));
        }
        self.touch();
    }

    /// Calls served, calls in flight, and when it was last used.
    pub(crate) fn counts(&self) -> (u64, usize, Option<SystemTime>) {
        let s = lock(&self.state);
        (s.calls, s.pending.len(), s.used_at)
    }
}

impl Pooled for Warm {
    fn alive(&self) -> bool {
        !self.stop.load(Ordering::SeqCst) && lock(&self.state).dead.is_none()
    }

    fn idle_since(&self) -> Option<Instant> {
        // In use while an invocation holds it, even between its requests
        // (a hook or an approval prompt may take long).
        let s = lock(&self.state);
        if s.pending.is_empty() && s.attached.is_empty() {
            s.last_used
        } else {
            None
        }
    }

    fn close(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if lock(&self.state).dead.is_none() {
            self.fail("the daemon retired the server");
        }
        let h = lock(&self.pump).take();
        if let Some(h) = h {
            let _ = h.join();
        }
    }
}
