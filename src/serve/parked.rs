//! What an upstream server asks during a 2026-07-28 host's call. That
//! era has no requests from server to client: a call that needs input is
//! answered `input_required`, and the host retries it with the answers.
//! So the call runs on a worker thread; when an upstream asks something,
//! the host's request is answered `input_required` (the question under
//! [`KEY`], the parked call under an opaque `requestState`), and the
//! retry hands the answer to the waiting worker and waits for what comes
//! next: another question, or the result.
//!
//! Bounded: at most [`MAX_PARKED`] calls wait at once, a question waits
//! at most the gateway's ask timeout (the upstream then gets an error),
//! and a call nobody came back for is dropped after that.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::gateway::{ASK_TIMEOUT, HostLink, Reply, RpcFail};
use super::pending::Answer;
use crate::mcp::{code, host};

/// The `inputRequests` key of a forwarded question.
pub(crate) const KEY: &str = "rivumi-upstream";
/// How a parked call's `requestState` starts.
pub(crate) const PREFIX: &str = "rivumi-parked-";
/// Calls waiting for a host's answer at once.
const MAX_PARKED: usize = 64;
/// How long a request waits for its call's next step (the call's own
/// deadlines end it sooner).
const STEP: Duration = Duration::from_secs(3600);

/// Runs work on a thread that may outlive the request that started it
/// (a `std::thread::Scope` of the front).
pub(crate) trait Spawner<'s> {
    fn spawn_boxed(&self, f: Box<dyn FnOnce() + Send + 's>);
}

impl<'s> Spawner<'s> for &'s std::thread::Scope<'s, '_> {
    fn spawn_boxed(&self, f: Box<dyn FnOnce() + Send + 's>) {
        (*self).spawn(f);
    }
}

/// What the worker tells the request that waits on it.
enum Event {
    Ask {
        request: Value,
        reply: Sender<Answer>,
    },
    /// A notification for the host (progress, a log message).
    Notify {
        method: String,
        params: Value,
    },
    Done(Reply),
}

/// Tells the host what the worker said, through the request that waits:
/// progress under that request's own token (none when it has none).
fn tell(here: &Here, method: &str, mut params: Value) {
    let (Some(link), Some(p)) = (&here.0, params.as_object_mut()) else {
        return;
    };
    if p.contains_key("progressToken") {
        let Some(t) = &here.1 else { return };
        p.insert("progressToken".into(), t.clone());
    }
    link.notify(method, params);
}

/// How the request that waits on a call tells its host things: its
/// stream (or stdout), and its own progress token.
pub(crate) type Here = (Option<Arc<dyn HostLink>>, Option<Value>);

struct Call {
    events: Receiver<Event>,
    reply: Sender<Answer>,
    since: Instant,
}

/// The calls parked on a host's answer, by `requestState`.
#[derive(Default)]
pub(crate) struct Parked {
    calls: Mutex<HashMap<String, Call>>,
}

impl std::fmt::Debug for Parked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Parked").finish_non_exhaustive()
    }
}

/// The worker's way to ask the host: an event to the waiting request.
struct ParkLink {
    events: Sender<Event>,
}

impl HostLink for ParkLink {
    fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Answer {
        let (tx, rx) = mpsc::channel();
        // The upstream may cancel its question meanwhile: the call then
        // goes on, and the host's retry gets what comes next.
        let given_up = tx.clone();
        let _armed = crate::cancel::arm(Arc::new(move || {
            let _ = given_up.send(Err(super::pending::GIVEN_UP.into()));
        }));
        let request = json!({"method": method, "params": params});
        if self.events.send(Event::Ask { request, reply: tx }).is_err() {
            return Err("the host went away".into());
        }
        rx.recv_timeout(timeout).unwrap_or_else(|_| {
            Err(format!(
                "the host did not come back within {}s",
                timeout.as_secs()
            ))
        })
    }

    /// Told to the host by the request that waits on the call.
    fn notify(&self, method: &str, params: Value) {
        let method = method.to_string();
        let _ = self.events.send(Event::Notify { method, params });
    }
}

impl Parked {
    /// Runs `work` on a worker and answers with its result, or with an
    /// `input_required` round when it asks the host something first.
    pub(crate) fn start<'s>(
        &'s self,
        spawn: &dyn Spawner<'s>,
        here: Here,
        work: Box<dyn FnOnce(Arc<dyn HostLink>) -> Reply + Send + 's>,
    ) -> Reply {
        let (tx, rx) = mpsc::channel();
        let link: Arc<dyn HostLink> =
            Arc::new(ParkLink { events: tx.clone() });
        spawn.spawn_boxed(Box::new(move || {
            let r = work(link);
            let _ = tx.send(Event::Done(r));
        }));
        self.next(rx, &here)
    }

    /// A retry of a parked call: hands over the answer and waits for
    /// the next step. `None` when no call is parked under `state`.
    pub(crate) fn resume(
        &self,
        state: &str,
        responses: Option<&Map<String, Value>>,
        here: Here,
    ) -> Option<Reply> {
        let call = self.lock().remove(state)?;
        let answer = responses
            .and_then(|r| r.get(KEY))
            .cloned()
            .ok_or_else(|| format!("the retry carries no '{KEY}' answer"));
        let _ = call.reply.send(answer);
        Some(self.next(call.events, &here))
    }

    fn next(&self, events: Receiver<Event>, here: &Here) -> Reply {
        loop {
            let (request, reply) = match events.recv_timeout(STEP) {
                Ok(Event::Done(r)) => return r,
                Ok(Event::Notify { method, params }) => {
                    tell(here, &method, params);
                    continue;
                }
                Ok(Event::Ask { request, reply }) => (request, reply),
                Err(_) => {
                    return Err(RpcFail::new(
                        code::INTERNAL_ERROR,
                        "the call did not finish in time",
                    ));
                }
            };
            let mut calls = self.lock();
            calls.retain(|_, c| c.since.elapsed() < ASK_TIMEOUT);
            if calls.len() >= MAX_PARKED {
                let _ =
                    reply.send(Err("too many calls wait for the host".into()));
                continue;
            }
            let mut id = [0u8; 16];
            if getrandom::fill(&mut id).is_err() {
                let _ = reply.send(Err("no randomness".into()));
                continue;
            }
            let state = format!("{PREFIX}{}", crate::files::hex(&id));
            calls.insert(
                state.clone(),
                Call { events, reply, since: Instant::now() },
            );
            let mut q = Map::new();
            q.insert(KEY.into(), request);
            return Ok(host::input_required(q, &state));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Call>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }
}
