//! One warm server in the daemon: its transport, the callers attached to
//! it, and the mapping of their request ids onto the server's.
//!
//! Over stdio one pump thread receives and callers send through the stdio
//! writer queue ([`Sender`]). Over HTTP the server's requests are carried
//! by up to [`MAX_LANES`] lanes: a lane is a thread with a transport of
//! its own in the same session (the first is the transport of the
//! opening; the others take up its session id, or speak the sessionless
//! 2026-07-28 wire), reading one request's stream at a time, so that
//! concurrent callers' requests run concurrently, as Streamable HTTP
//! allows, and a request waits only when every lane is busy (then for
//! the first lane to be free, [`Warm::waiting`]). Every request
//! a caller sends gets a fresh id of the daemon's (its progress token is
//! replaced the same way), and the answer goes back to that caller with
//! its own id: two invocations may both use id 1.
//!
//! What the server asks (elicitation, sampling) on a request's own stream
//! (HTTP: the POST's response, `Transport::on_request_stream`) goes to
//! that request's caller; otherwise to the one caller with a request in
//! flight (`roots/list` the daemon answers with the declared roots, which
//! are part of the key); when several are (stdio, whose wire does not say
//! which call a request belongs to), it is refused, as nothing could
//! answer it right; when none is, it is answered as a cold invocation
//! with default options and no terminal answers it ([`unattended`]). Log
//! messages reach the request's caller likewise, else the callers with a
//! request in flight (with none, the daemon's `-v` log), `list_changed`
//! every caller attached. A caller that goes away has its requests
//! cancelled on the wire (`notifications/cancelled`) and its pending
//! answers to the server refused; a server that exits fails the calls in
//! flight, and the pool starts a new one for the next caller.
//!
//! A task a server created (a `CreateTaskResult` passing through) is
//! held: until it is collected (`tasks/result`), cancelled, or its TTL has
//! passed (at most [`MAX_HOLD`]; [`ENDED_HOLD`] once `tasks/get` finds it
//! ended), the server is not retired for being idle, so that a detached
//! task outlives the invocation that started it.
//! The daemon keeps a task's fingerprint, never its id.

use std::collections::HashMap;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
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

/// Makes the transport of one more HTTP lane, in the session the first
/// one opened.
pub(crate) type MakeLane =
    Box<dyn Fn() -> crate::error::Result<Box<dyn Transport>> + Send + Sync>;

/// How long a caller that does not read may hold up a message for it
/// before it is dropped.
const CALLER_WRITE: Duration = Duration::from_secs(2);
/// How long a message for the server may wait for room in its queue.
const SERVER_WRITE: Duration = Duration::from_secs(10);
/// How long closing a warm HTTP server waits for its lanes to end.
const LANE_CLOSE: Duration = Duration::from_secs(2);
/// How long a caller that did not say waits for an answer (the default
/// `--timeout`).
const DEFAULT_WAIT: Duration = Duration::from_secs(300);
/// The longest a lane waits for a server to answer one POST.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);
/// How often the pump looks up from waiting to see whether to stop.
const PUMP_TICK: Duration = Duration::from_millis(200);
/// How often an HTTP lane, waiting for an answer, looks for messages of
/// callers to send meanwhile (answers to what the server asked).
const HTTP_TICK: Duration = Duration::from_millis(5);
/// The first id the daemon gives requests (the handshake used a few).
const FIRST_ID: u64 = 1000;
/// At most this many requests in flight on one server, and as many of
/// its own requests waiting for a caller's answer.
pub(crate) const MAX_IN_FLIGHT: usize = 4096;
/// At most this many requests of one HTTP server run at once (lanes).
pub(crate) const MAX_LANES: usize = 4;
/// The lane of a request that waits for a free one ([`Warm::waiting`]).
const WAITING: usize = usize::MAX;
/// At most this many lanes are made in a server's life (a lane that
/// failed is replaced, up to this).
const MAX_MADE_LANES: usize = 2 * MAX_LANES;
/// At most this many tasks held on one server (the soonest to expire
/// makes room).
const MAX_HOLDS: usize = 256;
/// How long a task holds its server when it names no TTL.
const DEFAULT_HOLD: Duration = crate::task::TTL;
/// At most this many log messages and requests of one server with no
/// caller to show them to are noted in the daemon's `-v` log.
const MAX_UNHEARD: u64 = 1000;
/// How long a task that `tasks/get` found ended still holds its server.
const ENDED_HOLD: Duration = Duration::from_secs(600);
/// The longest a task holds its server, whatever its TTL.
pub(crate) const MAX_HOLD: Duration = Duration::from_secs(24 * 3600);

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

/// What a caller is told when its request failed with the server's
/// transport: the error's message and kind (its exit code, as cold).
fn gone(kind: Kind, why: &str) -> Value {
    json!({"gone": why, "kind": kind.name()})
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `m` is a request (an answer is awaited).
fn is_request(m: &Value) -> bool {
    m.get("method").is_some() && m.get("id").is_some_and(|i| !i.is_null())
}

/// How the server answers what it asks when no invocation can: as a cold
/// invocation with default options and no terminal answers it (forms and
/// URLs declined, sampling refused for want of an approval, roots as
/// declared). `ask` is of a declared kind ([`mcp::ask`]).
pub(crate) fn unattended(
    ask: &mcp::Ask,
    roots: &Value,
) -> std::result::Result<Value, String> {
    match ask {
        mcp::Ask::Ping => Ok(json!({})),
        mcp::Ask::Roots => Ok(json!({"roots": roots})),
        mcp::Ask::Form | mcp::Ask::Url => Ok(json!({"action": "decline"})),
        mcp::Ask::Sampling => Err("sampling needs approval, but no \
                                   invocation is waiting on this server \
                                   to ask"
            .into()),
    }
}

/// A task request in flight: which, and the task's fingerprint.
struct TaskAsk {
    method: &'static str,
    fingerprint: String,
}

/// A request in flight: whose it is and what it was called.
struct Pending {
    caller: Arc<Caller>,
    id: Value,
    token: Option<Value>,
    /// The HTTP lane it went out on (0 over stdio; [`WAITING`] until a
    /// lane takes it).
    lane: usize,
    /// Until when the caller waits for the answer: an HTTP lane waits as
    /// long for the server to answer the POST (a server that answers
    /// with JSON holds it until the result).
    until: Instant,
    task: Option<TaskAsk>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    pending: HashMap<u64, Pending>,
    /// The server's own requests, by id text: who is to answer them, and
    /// the lane they came on.
    asks: HashMap<String, (Arc<Caller>, usize)>,
    attached: Vec<Arc<Caller>>,
    last_used: Option<Instant>,
    used_at: Option<SystemTime>,
    calls: u64,
    dead: Option<String>,
    /// Tasks the server holds for someone, by fingerprint: until when.
    holds: HashMap<String, Instant>,
}

impl State {
    /// Drops the holds whose time has passed; how many are left.
    fn live_holds(&mut self) -> usize {
        let now = Instant::now();
        self.holds.retain(|_, until| *until > now);
        self.holds.len()
    }
}

/// What `status` shows of a warm server, and what it declared.
#[derive(Debug)]
pub(crate) struct Facts {
    pub(crate) name: String,
    pub(crate) transport: &'static str,
    pub(crate) protocol: String,
    pub(crate) pid: i32,
    pub(crate) started: SystemTime,
    /// The client capabilities the callers declared (part of the key).
    pub(crate) caps: mcp::Capabilities,
}

/// An HTTP lane's transport: closed when the lane ends (or is never
/// started); only the first lane's ends the session (a DELETE), the
/// others leave it.
struct LaneTransport {
    t: Box<dyn Transport>,
    ends_session: bool,
}

impl Drop for LaneTransport {
    fn drop(&mut self) {
        if !self.ends_session {
            let _ = self.t.detach();
        }
        self.t.close();
    }
}

/// One HTTP lane: its queue and how many requests it carries or holds.
struct Lane {
    tx: std::sync::mpsc::SyncSender<Out>,
    load: Arc<AtomicUsize>,
    /// False once it failed: no request is given to it any more.
    open: AtomicBool,
}

pub(crate) struct Warm {
    pub(crate) facts: Facts,
    /// What the opening found, as the wire carries it.
    pub(crate) info: Value,
    /// stdio: the writer queue; `None` over HTTP (the lanes send).
    stdio: Option<Sender>,
    /// HTTP: the lanes, the first made from the opened transport.
    lanes: Mutex<Vec<Lane>>,
    /// HTTP: how to make another lane (`None`: one lane only).
    make: Option<MakeLane>,
    /// HTTP: requests that came while every lane was busy, taken in order
    /// by the first lane to be free (never queued behind one slow
    /// request while another lane is idle).
    waiting: Mutex<std::collections::VecDeque<Out>>,
    /// HTTP, handshake era: the session id the lanes share, as the first
    /// lane has it now (a session the server expired is started again
    /// there, and the others follow).
    session: Mutex<Option<String>>,
    /// The roots the callers declared (they are part of the key), to
    /// answer `roots/list` as cold does; `None` when roots are not
    /// declared.
    roots: Option<Value>,
    state: Mutex<State>,
    stop: AtomicBool,
    pumps: Mutex<Vec<std::thread::JoinHandle<()>>>,
    me: Weak<Warm>,
    /// Log messages and requests seen with no caller to show them to.
    unheard: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Warm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Warm")
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

fn spawn_pump(
    f: impl FnOnce() + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("pump".into())
        .stack_size(256 << 10)
        .spawn(f)
}

impl Warm {
    fn new(
        facts: Facts,
        info: Value,
        stdio: Option<Sender>,
        make: Option<MakeLane>,
        roots: Option<Value>,
    ) -> Arc<Warm> {
        Arc::new_cyclic(|me| Warm {
            facts,
            info,
            stdio,
            lanes: Mutex::new(vec![]),
            make,
            waiting: Mutex::default(),
            session: Mutex::new(None),
            roots,
            state: Mutex::new(State {
                next_id: FIRST_ID,
                last_used: Some(Instant::now()),
                used_at: Some(SystemTime::now()),
                ..State::default()
            }),
            stop: AtomicBool::new(false),
            pumps: Mutex::new(vec![]),
            me: me.clone(),
            unheard: Default::default(),
        })
    }

    /// Takes over an opened stdio server: `transport` goes to a pump
    /// thread; callers send through `sender`.
    pub(crate) fn run(
        facts: Facts,
        info: Value,
        sender: Sender,
        roots: Option<Value>,
        transport: Box<dyn Transport>,
    ) -> std::io::Result<Arc<Warm>> {
        let w = Warm::new(facts, info, Some(sender), None, roots);
        let me = Arc::clone(&w);
        let h = spawn_pump(move || me.pump(transport))?;
        lock(&w.pumps).push(h);
        Ok(w)
    }

    /// Takes over an opened HTTP server: `transport` is its first lane,
    /// in `session` (handshake era); `make` makes more (not yet in the
    /// session: a lane takes it up itself), up to [`MAX_LANES`].
    pub(crate) fn run_http(
        facts: Facts,
        info: Value,
        roots: Option<Value>,
        transport: Box<dyn Transport>,
        session: Option<String>,
        make: Option<MakeLane>,
    ) -> std::io::Result<Arc<Warm>> {
        let w = Warm::new(facts, info, None, make, roots);
        *lock(&w.session) = session;
        w.add_lane(transport, 0)?;
        Ok(w)
    }

    /// Starts a lane with `t` and `load` requests counted on it; its
    /// index. Every lane but the first leaves the session to the first
    /// when it ends, however it ends.
    fn add_lane(
        &self,
        t: Box<dyn Transport>,
        load: usize,
    ) -> std::io::Result<usize> {
        let mut lanes = lock(&self.lanes);
        let n = lanes.len();
        let t = LaneTransport { t, ends_session: n == 0 };
        let Some(me) = self.me.upgrade() else {
            return Err(std::io::Error::other("the server is closing"));
        };
        let open = lanes.iter().filter(|l| l.open.load(Ordering::SeqCst));
        if n >= MAX_MADE_LANES || open.count() >= MAX_LANES {
            return Err(std::io::Error::other("as many lanes as the bound"));
        }
        let (tx, rx) = std::sync::mpsc::sync_channel(MAX_IN_FLIGHT);
        let load = Arc::new(AtomicUsize::new(load));
        let l = Arc::clone(&load);
        let h = spawn_pump(move || me.pump_lane(n, t, &rx, &l))?;
        lanes.push(Lane { tx, load, open: AtomicBool::new(true) });
        lock(&self.pumps).push(h);
        Ok(n)
    }

    /// The lane for a new request: an idle one, else a new one while
    /// there may be more (counted as busier), else [`WAITING`].
    fn pick_lane(&self) -> usize {
        {
            let lanes = lock(&self.lanes);
            // Claimed at once (0 -> 1): two requests never pick one idle
            // lane together.
            let idle = lanes.iter().position(|l| {
                l.open.load(Ordering::SeqCst)
                    && l.load
                        .compare_exchange(
                            0,
                            1,
                            Ordering::SeqCst,
                            Ordering::SeqCst,
                        )
                        .is_ok()
            });
            if let Some(n) = idle {
                return n;
            }
        }
        // Made claimed, so that nobody else takes it first.
        self.new_lane(1).unwrap_or(WAITING)
    }

    /// Opens one more lane with `load` requests counted on it, while
    /// under the bound and the server is not closing; its index.
    fn new_lane(&self, load: usize) -> Option<usize> {
        let open = lock(&self.lanes)
            .iter()
            .filter(|l| l.open.load(Ordering::SeqCst))
            .count();
        let make = self.make.as_ref().filter(|_| {
            open < MAX_LANES && !self.stop.load(Ordering::SeqCst)
        })?;
        let made = make()
            .map_err(|e| e.message().to_string())
            .and_then(|t| self.add_lane(t, load).map_err(|e| e.to_string()));
        match made {
            Ok(n) => {
                crate::msg::debug(&format!(
                    "server '{}': lane {} opened",
                    self.facts.name,
                    n + 1
                ));
                Some(n)
            }
            Err(why) => {
                crate::msg::debug(&format!(
                    "server '{}': no other lane: {why}",
                    self.facts.name
                ));
                None
            }
        }
    }

    /// The lane a notice about a request on lane `busy` goes out on (a
    /// cancellation): an idle one, or a new one while under the bound,
    /// since `busy` may be inside a POST the server holds until its
    /// result, which would hold the notice back until it is useless;
    /// else `busy` (a server without a session id has one lane only).
    fn notice_lane(&self, busy: usize) -> usize {
        if self.stdio.is_some() {
            return busy;
        }
        let idle = {
            let lanes = lock(&self.lanes);
            (0..lanes.len()).find(|&i| {
                i != busy
                    && lanes[i].open.load(Ordering::SeqCst)
                    && lanes[i].load.load(Ordering::SeqCst) == 0
            })
        };
        idle.or_else(|| self.new_lane(0)).unwrap_or(busy)
    }

    /// Puts a request no lane could take at once in [`Warm::waiting`],
    /// and wakes a lane that has become free meanwhile.
    fn wait_for_lane(&self, o: Out) {
        lock(&self.waiting).push_back(o);
        let lanes = lock(&self.lanes);
        let free = lanes.iter().find(|l| {
            l.open.load(Ordering::SeqCst) && l.load.load(Ordering::SeqCst) == 0
        });
        if let Some(l) = free {
            // A wake-up: the lane looks at `waiting` and drops this.
            let _ = l.tx.try_send((Value::Null, None));
        }
    }

    /// The next waiting request, for lane `lane` now free (counted on
    /// `load`, its `Pending` moved to the lane).
    fn take_waiting(&self, lane: usize, load: &AtomicUsize) -> Option<Out> {
        let o = lock(&self.waiting).pop_front()?;
        load.fetch_add(1, Ordering::SeqCst);
        if let Some(n) = o.0.get("id").and_then(Value::as_u64)
            && let Some(p) = lock(&self.state).pending.get_mut(&n)
        {
            p.lane = lane;
        }
        Some(o)
    }

    /// Takes request `n` out of [`Warm::waiting`]: it never reached the
    /// server, so nothing is to be cancelled there.
    fn unwait(&self, n: u64) {
        lock(&self.waiting)
            .retain(|(m, _)| m.get("id").and_then(Value::as_u64) != Some(n));
    }

    /// Sends `m` to the server: over stdio through its writer queue, over
    /// HTTP through lane `lane`.
    fn send(
        &self,
        m: &Value,
        headers: Option<Vec<(String, String)>>,
        lane: usize,
    ) -> Result<(), &'static str> {
        if let Some(s) = &self.stdio {
            return s.send(m, Instant::now() + SERVER_WRITE);
        }
        let lanes = lock(&self.lanes);
        let open = lanes.get(lane).filter(|l| l.open.load(Ordering::SeqCst));
        if open.is_none() && lane != 0 && is_request(m) {
            // Its lane failed meanwhile: it waits for a free one.
            drop(lanes);
            if let Some(n) = m.get("id").and_then(Value::as_u64)
                && let Some(p) = lock(&self.state).pending.get_mut(&n)
            {
                p.lane = WAITING;
            }
            self.wait_for_lane((m.clone(), headers));
            return Ok(());
        }
        let l = open.or(lanes.first()).ok_or("the server is gone")?;
        l.tx.try_send((m.clone(), headers)).map_err(|e| match e {
            std::sync::mpsc::TrySendError::Full(_) => {
                "the server has too many messages waiting"
            }
            std::sync::mpsc::TrySendError::Disconnected(_) => {
                "the server is gone"
            }
        })
    }

    /// How long request `id` (a daemon id) may still take: until its
    /// caller stops waiting.
    fn wait_of(&self, id: &Value) -> Duration {
        id.as_u64()
            .and_then(|n| {
                lock(&self.state)
                    .pending
                    .get(&n)
                    .map(|p| p.until.saturating_duration_since(Instant::now()))
            })
            .unwrap_or(SERVER_WRITE)
            .max(Duration::from_millis(1))
    }

    fn is_pending(&self, id: &Value) -> bool {
        id.as_u64().is_some_and(|n| lock(&self.state).pending.contains_key(&n))
    }

    /// One HTTP lane: sends its queued messages in order, holding back a
    /// request while another is unanswered, and receives only while a
    /// request is in flight (the transport reads one request's stream).
    /// The first lane failing is the server failing; another lane failing
    /// fails the request it carried and hands what it still holds to the
    /// first.
    fn pump_lane(
        &self,
        lane: usize,
        mut lt: LaneTransport,
        rx: &std::sync::mpsc::Receiver<Out>,
        load: &AtomicUsize,
    ) {
        let t = &mut lt.t;
        let done = || {
            let _ =
                load.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    n.checked_sub(1)
                });
        };
        let mut queue: std::collections::VecDeque<Out> = Default::default();
        let mut awaiting: Option<Value> = None;
        // The session id this lane's transport carries.
        let mut mine: Option<String> = None;
        'run: while !self.stop.load(Ordering::SeqCst) {
            let free = awaiting.is_none() && queue.is_empty();
            if free && lock(&self.waiting).is_empty() {
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
            if awaiting.is_none()
                && !queue.iter().any(|(m, _)| is_request(m))
                && let Some(o) = self.take_waiting(lane, load)
            {
                queue.push_back(o);
            }
            // In order; but what is not a request (an answer to the
            // server's question, a notification) never waits behind a
            // held request: the server may need it to finish the request
            // in flight.
            let mut i = 0;
            while i < queue.len() {
                let request = is_request(&queue[i].0);
                if request && awaiting.is_some() {
                    i += 1;
                    continue;
                }
                let Some((m, h)) = queue.remove(i) else { break };
                if m.is_null() {
                    continue;
                }
                if request {
                    // Its caller may have left while it waited.
                    let id = m.get("id").cloned().unwrap_or(Value::Null);
                    if !self.is_pending(&id) {
                        done();
                        continue;
                    }
                    awaiting = Some(id);
                    if lane > 0 {
                        self.follow_session(t.as_mut(), &mut mine);
                    }
                }
                // A request's POST may be held until its result (a server
                // answering with JSON): as long as its caller waits.
                let limit = match &awaiting {
                    Some(id) if request => self.wait_of(id),
                    _ => SERVER_WRITE,
                };
                if let Err((kind, why)) =
                    self.lane_send(t.as_mut(), &m, h.as_deref(), limit)
                {
                    self.lane_broke(lane, (kind, &why), awaiting, queue, rx);
                    break 'run;
                }
            }
            let Some(want) = awaiting.clone() else { continue };
            if !self.is_pending(&want) {
                // Cancelled: no answer is expected any more, and its
                // stream is left.
                t.abandon();
                awaiting = None;
                done();
                continue;
            }
            let d = Deadline::new("the daemon's wait", HTTP_TICK);
            if let Err((kind, why)) =
                self.receive(t.as_mut(), &d, lane, want.as_u64())
            {
                self.lane_broke(lane, (kind, &why), awaiting, queue, rx);
                break;
            }
            if !self.is_pending(&want) {
                awaiting = None;
                done();
                if lane == 0 {
                    self.note_session(t.as_mut());
                }
            }
        }
        drop(lt);
    }

    /// The first lane, after a request: notes its session id now (a
    /// session the server expired was started again on its request).
    fn note_session(&self, t: &mut dyn Transport) {
        let mut shared = lock(&self.session);
        if shared.is_none() {
            return;
        }
        if let Some(id) = t.detach() {
            t.resume(&id, &self.facts.protocol);
            *shared = Some(id);
        }
    }

    /// Another lane, before a request: takes up the session the first
    /// lane has now, if it is not the one it carries.
    fn follow_session(
        &self,
        t: &mut dyn Transport,
        mine: &mut Option<String>,
    ) {
        let now = lock(&self.session).clone();
        if now != *mine {
            if let Some(id) = &now {
                t.resume(id, &self.facts.protocol);
            }
            *mine = now;
        }
    }

    /// Sends `m` (with the 2026-07-28 headers `h`) on a lane's transport
    /// within `limit`. A notification the server refuses is only noted:
    /// it is best effort, as cold sends one (a server that does not take
    /// a cancellation does not end the lane, nor, on the first, the
    /// server).
    fn lane_send(
        &self,
        t: &mut dyn Transport,
        m: &Value,
        h: Option<&[(String, String)]>,
        limit: Duration,
    ) -> Result<(), (Kind, String)> {
        let d = Deadline::new("the daemon's send", limit);
        let sent = match h {
            Some(h) => t.send_modern(m, h, &d),
            None => t.send(m, &d),
        };
        match sent {
            Err(e) if m.get("method").is_some() && m.get("id").is_none() => {
                crate::msg::debug(&format!(
                    "server '{}': a notification was not taken: {}",
                    self.facts.name,
                    e.message()
                ));
                Ok(())
            }
            Err(e) => Err((e.kind(), e.message().to_string())),
            Ok(()) => Ok(()),
        }
    }

    /// Lane `lane` failed with `why`: the first is the server failing;
    /// another is closed, the request it carried fails with `why`, and
    /// what it had not sent goes to the first lane.
    fn lane_broke(
        &self,
        lane: usize,
        (kind, why): (Kind, &str),
        awaiting: Option<Value>,
        mut queue: std::collections::VecDeque<Out>,
        rx: &std::sync::mpsc::Receiver<Out>,
    ) {
        if lane == 0 {
            self.fail(kind, why, awaiting.as_ref().and_then(Value::as_u64));
            return;
        }
        {
            // Closed and drained under the lanes' lock: `send` looks at
            // `open` under it, so nothing lands here unread afterwards.
            let lanes = lock(&self.lanes);
            if let Some(l) = lanes.get(lane) {
                l.open.store(false, Ordering::SeqCst);
            }
            while let Ok(o) = rx.try_recv() {
                queue.push_back(o);
            }
        }
        crate::msg::debug(&format!(
            "server '{}': lane {} failed ({why}); the first carries on",
            self.facts.name,
            lane + 1
        ));
        let owner = awaiting.as_ref().and_then(Value::as_u64).and_then(|n| {
            lock(&self.state).pending.remove(&n).map(|p| p.caller)
        });
        if let Some(c) = owner {
            c.send(&gone(kind, why));
        }
        // What it had not sent: requests wait for a free lane again,
        // the rest goes out on the first.
        for (m, h) in queue {
            if !is_request(&m) {
                let _ = self.send(&m, h, 0);
                continue;
            }
            if let Some(n) = m.get("id").and_then(Value::as_u64)
                && let Some(p) = lock(&self.state).pending.get_mut(&n)
            {
                p.lane = WAITING;
            }
            self.wait_for_lane((m, h));
        }
    }

    /// Receives what the server sends next on `lane` (before `d`; `Err`
    /// when the transport failed), while the request
    /// `awaited` (a daemon id) is read there: what comes on its stream is
    /// its caller's.
    fn receive(
        &self,
        t: &mut dyn Transport,
        d: &Deadline,
        lane: usize,
        awaited: Option<u64>,
    ) -> Result<(), (Kind, String)> {
        let on = |t: &dyn Transport| awaited.filter(|_| t.on_request_stream());
        match t.recv(d) {
            Ok(Value::Array(batch)) => {
                let on = on(t);
                for m in batch {
                    self.on_server(m, lane, on);
                }
            }
            Ok(m) => self.on_server(m, lane, on(t)),
            Err(e) if e.kind() == Kind::Timeout => {}
            Err(e) => return Err((e.kind(), e.message().to_string())),
        }
        Ok(())
    }

    fn pump(&self, mut t: Box<dyn Transport>) {
        while !self.stop.load(Ordering::SeqCst) {
            let d = Deadline::new("the daemon's wait", PUMP_TICK);
            if let Err((kind, why)) = self.receive(t.as_mut(), &d, 0, None) {
                self.fail(kind, &why, None);
                break;
            }
        }
        t.close();
    }

    /// Fails every call in flight with `why` and marks the server dead.
    /// The caller of `owner` (the request whose transport failed) is told
    /// the error's `kind` (a refused credential is an authentication
    /// error, as cold); the others, that the server failed.
    fn fail(&self, kind: Kind, why: &str, owner: Option<u64>) {
        lock(&self.waiting).clear();
        let callers: Vec<(Arc<Caller>, Kind)> = {
            let mut s = lock(&self.state);
            s.dead = Some(why.to_string());
            let mut seen: Vec<(Arc<Caller>, Kind)> = vec![];
            for (n, p) in s.pending.drain() {
                let k = if Some(n) == owner { kind } else { Kind::Server };
                match seen.iter_mut().find(|(c, _)| c.id == p.caller.id) {
                    Some(e) if k != Kind::Server => e.1 = k,
                    Some(_) => {}
                    None => seen.push((p.caller, k)),
                }
            }
            seen
        };
        crate::msg::debug(&format!(
            "server '{}' (pid {}): {why}",
            self.facts.name, self.facts.pid
        ));
        for (c, k) in callers {
            c.send(&gone(k, why));
        }
    }

    /// What the server sent on `lane`; `on`: the request (a daemon id)
    /// on whose stream it came, when the wire says.
    fn on_server(&self, mut m: Value, lane: usize, on: Option<u64>) {
        let method =
            m.get("method").and_then(Value::as_str).map(str::to_string);
        let has_id = m.get("id").is_some_and(|i| !i.is_null());
        match (method, has_id) {
            (Some(method), true) => self.server_asks(&method, m, lane, on),
            (Some(method), false) => self.server_notifies(&method, m, on),
            (None, true) => {
                let n = m.get("id").and_then(Value::as_u64);
                let p = n.and_then(|n| {
                    let mut s = lock(&self.state);
                    s.last_used = Some(Instant::now());
                    s.pending.remove(&n)
                });
                if let Some(p) = p {
                    self.follow_task(&p, &m);
                    m["id"] = p.id;
                    p.caller.send(&json!({"m": m}));
                }
            }
            (None, false) => {}
        }
    }

    /// Holds a task the answer created; lets go of one that a
    /// `tasks/result` or `tasks/cancel` ended (or a `tasks/get` found
    /// cancelled).
    fn follow_task(&self, p: &Pending, answer: &Value) {
        let result = answer.get("result");
        // A `tasks/*` answer describes a task; only another request's
        // answer creates one.
        let created = match &p.task {
            None => result.and_then(mcp::tasks::created),
            Some(_) => None,
        };
        if let Some(Ok(t)) = created {
            let ttl = t
                .ttl_ms
                .map_or(DEFAULT_HOLD, Duration::from_millis)
                .min(MAX_HOLD);
            let fp = crate::task::fingerprint(&t.id);
            let mut s = lock(&self.state);
            if s.live_holds() >= MAX_HOLDS {
                let soonest = s
                    .holds
                    .iter()
                    .min_by_key(|(_, until)| **until)
                    .map(|(k, _)| k.clone());
                if let Some(k) = soonest {
                    s.holds.remove(&k);
                }
            }
            s.holds.insert(fp, Instant::now() + ttl);
            return;
        }
        let Some(ask) = &p.task else { return };
        let mut s = lock(&self.state);
        match ask.method {
            method::TASKS_RESULT | method::TASKS_CANCEL => {
                s.holds.remove(&ask.fingerprint);
            }
            _ => {
                // Ended (collected with it, in the 2026-07-28 era, or not
                // at all): held a little longer for a `task result`.
                let ended = result
                    .and_then(|r| mcp::tasks::from_result(r).ok())
                    .is_some_and(|t| t.status.terminal());
                let soon = Instant::now() + ENDED_HOLD;
                if let Some(until) = s.holds.get_mut(&ask.fingerprint)
                    && ended
                {
                    *until = (*until).min(soon);
                }
            }
        }
    }

    /// Whether the server holds the task of this fingerprint.
    pub(crate) fn holds(&self, fingerprint: &str) -> bool {
        let mut s = lock(&self.state);
        s.live_holds();
        s.holds.contains_key(fingerprint)
    }

    fn server_asks(
        &self,
        method: &str,
        m: Value,
        lane: usize,
        on: Option<u64>,
    ) {
        let id = m.get("id").cloned().unwrap_or(Value::Null);
        if method == method::PING {
            let _ = self.send(&mcp::response(id, json!({})), None, lane);
            return;
        }
        if let (method::ROOTS_LIST, Some(roots)) = (method, &self.roots) {
            let r = json!({"roots": roots});
            let _ = self.send(&mcp::response(id, r), None, lane);
            return;
        }
        let (target, anyone, taken) = {
            let mut s = lock(&self.state);
            let (who, anyone) = match on {
                // On a request's stream (HTTP): that request's caller's, or
                // nobody's once it is answered or given up.
                Some(n) => {
                    let c = s.pending.get(&n).map(|p| Arc::clone(&p.caller));
                    let anyone = c.is_some();
                    (c, anyone)
                }
                // Else the one caller with requests in flight, if one.
                None => {
                    let mut owners = s.pending.values().map(|p| &p.caller);
                    let first = owners.next().cloned();
                    let anyone = first.is_some();
                    (first.filter(|f| owners.all(|c| c.id == f.id)), anyone)
                }
            };
            // Two questions with one id could not both be answered.
            let taken = s.asks.contains_key(&id.to_string());
            let unique =
                who.filter(|_| !taken && s.asks.len() < MAX_IN_FLIGHT);
            if let Some(c) = &unique {
                s.asks.insert(id.to_string(), (Arc::clone(c), lane));
            }
            (unique, anyone, taken)
        };
        let reply = match target {
            Some(c) => {
                if !c.send(&json!({"m": m})) {
                    lock(&self.state).asks.remove(&id.to_string());
                }
                return;
            }
            None if taken => mcp::error_response(
                id,
                mcp::code::INVALID_REQUEST,
                "a request with this id is already waiting for its answer",
            ),
            None if !anyone => self.answer_unattended(method, &m, id),
            None => mcp::error_response(
                id,
                mcp::code::INTERNAL_ERROR,
                "no single invocation is waiting on this server to answer \
                 this request",
            ),
        };
        let _ = self.send(&reply, None, lane);
    }

    /// The answer to a request tied to no call: as cold answers it
    /// ([`unattended`]), refused as cold refuses what was not declared.
    fn answer_unattended(&self, method: &str, m: &Value, id: Value) -> Value {
        let params = m.get("params").cloned().unwrap_or(Value::Null);
        let line = crate::term::line(method);
        let shown = crate::term::clip(&line, 100);
        let (reply, said) = match mcp::ask(method, &params, self.facts.caps) {
            Err(why) => (
                mcp::error_response(id, mcp::code::METHOD_NOT_FOUND, &why),
                "refused".to_string(),
            ),
            Ok(ask) => {
                let none = json!([]);
                let roots = self.roots.as_ref().unwrap_or(&none);
                match unattended(&ask, roots) {
                    Ok(r) => {
                        let what = r
                            .get("action")
                            .and_then(Value::as_str)
                            .unwrap_or("answered")
                            .to_string();
                        (mcp::response(id, r), what)
                    }
                    Err(why) => (
                        mcp::error_response(
                            id,
                            mcp::code::INTERNAL_ERROR,
                            &why,
                        ),
                        "refused".to_string(),
                    ),
                }
            }
        };
        if self.unheard.fetch_add(1, Ordering::SeqCst) < MAX_UNHEARD {
            crate::msg::debug(&format!(
                "server '{}': its request '{shown}' came with no call in \
                 flight: {said}",
                self.facts.name
            ));
        }
        reply
    }

    fn server_notifies(&self, method: &str, mut m: Value, on: Option<u64>) {
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
                // On a request's stream: its caller's alone (nobody's once
                // that request is answered or given up).
                let from: Vec<&Pending> = match on {
                    Some(n) => s.pending.get(&n).into_iter().collect(),
                    None => s.pending.values().collect(),
                };
                for p in from {
                    if !v.iter().any(|c| c.id == p.caller.id) {
                        v.push(Arc::clone(&p.caller));
                    }
                }
                if v.is_empty()
                    && self.unheard.fetch_add(1, Ordering::SeqCst)
                        < MAX_UNHEARD
                {
                    // Nobody to show it to: the daemon's -v log, as a
                    // cold invocation shows it with -v (bounded: a
                    // flooding server cannot fill the log).
                    let data =
                        m.pointer("/params/data").map_or(String::new(), |d| {
                            match d {
                                Value::String(s) => s.clone(),
                                v => v.to_string(),
                            }
                        });
                    crate::msg::debug(&format!(
                        "[{}] {}",
                        self.facts.name,
                        crate::term::clip(&crate::term::line(&data), 500)
                    ));
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
        wait: Option<Duration>,
    ) {
        let method =
            m.get("method").and_then(Value::as_str).map(str::to_string);
        let id = m.get("id").cloned().filter(|i| !i.is_null());
        match (method, id) {
            (Some(method), Some(id)) => {
                let lane =
                    if self.stdio.is_some() { 0 } else { self.pick_lane() };
                let task = [
                    method::TASKS_GET,
                    method::TASKS_RESULT,
                    method::TASKS_CANCEL,
                ]
                .into_iter()
                .find(|t| *t == method)
                .zip(m.pointer("/params/taskId").and_then(Value::as_str))
                .map(|(method, id)| TaskAsk {
                    method,
                    fingerprint: crate::task::fingerprint(id),
                });
                let n = {
                    let mut s = lock(&self.state);
                    if let Some(why) = &s.dead {
                        let why = why.clone();
                        drop(s);
                        self.unload(lane);
                        c.send(&json!({"gone": why}));
                        return;
                    }
                    if s.pending.len() >= MAX_IN_FLIGHT {
                        drop(s);
                        self.unload(lane);
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
                        Pending {
                            caller: Arc::clone(c),
                            id,
                            token,
                            lane,
                            until: Instant::now()
                                + wait.unwrap_or(DEFAULT_WAIT).min(MAX_WAIT),
                            task,
                        },
                    );
                    s.calls += 1;
                    s.last_used = Some(Instant::now());
                    s.used_at = Some(SystemTime::now());
                    n
                };
                m["id"] = json!(n);
                if lane == WAITING {
                    self.wait_for_lane((m, headers));
                } else if let Err(why) = self.send(&m, headers, lane) {
                    lock(&self.state).pending.remove(&n);
                    self.unload(lane);
                    c.send(&json!({"gone": why}));
                }
            }
            (None, Some(id)) => {
                let owner = lock(&self.state).asks.remove(&id.to_string());
                if let Some((o, lane)) = owner
                    && o.id == c.id
                {
                    let _ = self.send(&m, None, lane);
                }
            }
            (Some(method), None) if method == method::CANCELLED => {
                let want = m.pointer("/params/requestId").cloned();
                let found = {
                    let mut s = lock(&self.state);
                    let n = s
                        .pending
                        .iter()
                        .find(|(_, p)| {
                            p.caller.id == c.id && Some(&p.id) == want.as_ref()
                        })
                        .map(|(n, _)| *n);
                    n.and_then(|n| s.pending.remove(&n).map(|p| (n, p.lane)))
                };
                match found {
                    Some((n, WAITING)) => self.unwait(n),
                    Some((n, lane)) => {
                        m["params"]["requestId"] = json!(n);
                        let _ = self.send(&m, None, self.notice_lane(lane));
                    }
                    None => {}
                }
            }
            _ => {}
        }
        self.touch();
    }

    /// A request picked lane `lane` and did not go out on it.
    fn unload(&self, lane: usize) {
        if self.stdio.is_some() {
            return;
        }
        if let Some(l) = lock(&self.lanes).get(lane) {
            let _ =
                l.load.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    n.checked_sub(1)
                });
        }
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
            let ns: Vec<(u64, usize)> = s
                .pending
                .iter()
                .filter(|(_, p)| p.caller.id == c.id)
                .map(|(n, p)| (*n, p.lane))
                .collect();
            for (n, _) in &ns {
                s.pending.remove(n);
            }
            let asks: Vec<(String, usize)> = s
                .asks
                .iter()
                .filter(|(_, (o, _))| o.id == c.id)
                .map(|(k, (_, lane))| (k.clone(), *lane))
                .collect();
            for (k, _) in &asks {
                s.asks.remove(k);
            }
            s.attached.retain(|a| a.id != c.id);
            (ns, asks)
        };
        for (n, lane) in ns {
            if lane == WAITING {
                self.unwait(n);
                continue;
            }
            crate::msg::debug(&format!(
                "server '{}': the caller left; request {n} cancelled",
                self.facts.name
            ));
            let m = mcp::cancelled(n, "the invocation ended");
            let _ = self.send(&m, None, self.notice_lane(lane));
        }
        for (k, lane) in asks {
            let id: Value = serde_json::from_str(&k).unwrap_or(Value::Null);
            let m = mcp::error_response(
                id,
                mcp::code::INTERNAL_ERROR,
                "the invocation that was to answer has ended",
            );
            let _ = self.send(&m, None, lane);
        }
        self.touch();
    }

    /// Calls served, calls in flight, tasks held, and when it was last
    /// used.
    pub(crate) fn counts(&self) -> (u64, usize, usize, Option<SystemTime>) {
        let mut s = lock(&self.state);
        let held = s.live_holds();
        (s.calls, s.pending.len(), held, s.used_at)
    }

    /// How many HTTP lanes it has opened (0 over stdio).
    pub(crate) fn lanes(&self) -> usize {
        lock(&self.lanes).len()
    }
}

impl Pooled for Warm {
    fn alive(&self) -> bool {
        !self.stop.load(Ordering::SeqCst) && lock(&self.state).dead.is_none()
    }

    fn idle_since(&self) -> Option<Instant> {
        // In use while an invocation holds it, even between its requests
        // (a hook or an approval prompt may take long), and while it
        // holds a task someone may still collect.
        let mut s = lock(&self.state);
        let held = s.live_holds();
        if s.pending.is_empty() && s.attached.is_empty() && held == 0 {
            s.last_used
        } else {
            None
        }
    }

    fn close(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if lock(&self.state).dead.is_none() {
            self.fail(Kind::Server, "the daemon retired the server", None);
        }
        let hs: Vec<_> = lock(&self.pumps).drain(..).collect();
        if self.stdio.is_some() {
            // The pump closes the process (its group, no orphan) as it
            // ends: waited for.
            for h in hs {
                let _ = h.join();
            }
            return;
        }
        // An HTTP lane may be inside a POST the server holds until its
        // result (as long as its caller waited): nothing interrupts it,
        // so a lane still there after LANE_CLOSE is left to end on its
        // own when the POST returns (it sees `stop` and drops its
        // transport), rather than holding up whoever closes.
        let until = Instant::now() + LANE_CLOSE;
        for h in hs {
            while !h.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }

    /// Marks the server closing if nobody uses it (no caller attached, no
    /// request in flight, no task held), atomically with `attach`: then
    /// no caller can take it up any more and it may be closed.
    fn claim_if_unused(&self) -> bool {
        let mut s = lock(&self.state);
        let held = s.live_holds();
        if s.dead.is_some()
            || !s.pending.is_empty()
            || !s.attached.is_empty()
            || held > 0
        {
            return false;
        }
        s.dead = Some("the daemon retired the server".into());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warm() -> Arc<Warm> {
        let facts = Facts {
            name: "t".into(),
            transport: "http",
            protocol: "2025-11-25".into(),
            pid: 0,
            started: SystemTime::now(),
            caps: mcp::Capabilities::default(),
        };
        Warm::new(facts, json!({}), None, None, None)
    }

    fn pending(task: Option<(&'static str, &str)>) -> Pending {
        let (a, _) = UnixStream::pair().unwrap();
        Pending {
            caller: Arc::new(Caller::new(1, a)),
            id: json!(1),
            token: None,
            lane: 0,
            until: Instant::now(),
            task: task.map(|(method, fp)| TaskAsk {
                method,
                fingerprint: fp.to_string(),
            }),
        }
    }

    #[test]
    fn a_created_task_holds_its_server_until_it_is_collected() {
        let w = warm();
        assert!(w.idle_since().is_some());
        let fp = crate::task::fingerprint("t-1");
        let created = json!({"result": {"task": {"taskId": "t-1",
                             "status": "working", "ttl": 3_600_000}}});
        w.follow_task(&pending(None), &created);
        assert!(w.holds(&fp) && w.idle_since().is_none());
        assert_eq!(w.counts().2, 1);
        // A tasks/get answer describes the task: it creates nothing, and
        // one that finds it ended shortens the hold.
        let get = pending(Some((method::TASKS_GET, &fp)));
        let ended = json!({"result": {"task": {"taskId": "t-1",
                           "status": "completed"}}});
        w.follow_task(&get, &ended);
        let until = lock(&w.state).holds[&fp];
        assert!(until <= Instant::now() + ENDED_HOLD);
        assert!(w.holds(&fp));
        let collected = pending(Some((method::TASKS_RESULT, &fp)));
        w.follow_task(&collected, &json!({"result": {"content": []}}));
        assert!(!w.holds(&fp) && w.idle_since().is_some());
    }

    #[test]
    fn unattended_answers_decline_and_refuse_as_cold_without_a_terminal() {
        let roots = json!([{"uri": "file:///r"}]);
        assert_eq!(unattended(&mcp::Ask::Ping, &roots).unwrap(), json!({}));
        assert_eq!(
            unattended(&mcp::Ask::Form, &roots).unwrap(),
            json!({"action": "decline"})
        );
        assert_eq!(
            unattended(&mcp::Ask::Url, &roots).unwrap(),
            json!({"action": "decline"})
        );
        assert_eq!(
            unattended(&mcp::Ask::Roots, &roots).unwrap()["roots"],
            roots
        );
        assert!(unattended(&mcp::Ask::Sampling, &roots).is_err());
    }
}
