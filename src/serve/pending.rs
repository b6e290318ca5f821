//! The questions `serve` asked a host and is waiting on, by request id:
//! both fronts register a question, write it their way, and route the
//! host's response back here.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::time::Duration;

use serde_json::Value;

use crate::mcp;

/// Why a question has no answer when its request was given up.
pub(crate) const GIVEN_UP: &str = "the request was cancelled";

/// A host's answer: its result, or why there is none.
pub(crate) type Answer = std::result::Result<Value, String>;

#[derive(Debug, Default)]
pub(crate) struct Pending {
    waiting: Mutex<HashMap<String, Sender<Answer>>>,
    /// Set by [`Pending::clear`]: no answer will ever come.
    closed: AtomicBool,
}

impl Pending {
    /// Registers `id`, runs `send` (which writes the request and says
    /// whether it could), and waits for the answer up to `timeout`.
    pub(crate) fn ask(
        &self,
        id: &Value,
        timeout: Duration,
        send: impl FnOnce() -> bool,
    ) -> Answer {
        let key = id.to_string();
        let (tx, rx) = mpsc::channel();
        self.lock().insert(key.clone(), tx.clone());
        // The request this question belongs to may be given up meanwhile
        // (by the host, or by the upstream that asked it).
        let _armed = crate::cancel::arm(std::sync::Arc::new(move || {
            let _ = tx.send(Err(GIVEN_UP.into()));
        }));
        // After the insert: a clear() that raced it is seen here.
        let r = if self.closed.load(Ordering::SeqCst) {
            Err("the host went away".into())
        } else if crate::cancel::fired() {
            Err(GIVEN_UP.into())
        } else if !send() {
            Err("the host cannot be reached".into())
        } else {
            match rx.recv_timeout(timeout) {
                Ok(r) => r,
                Err(mpsc::RecvTimeoutError::Timeout) => Err(format!(
                    "no answer from the host within {}s",
                    timeout.as_secs()
                )),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    Err("the host went away".into())
                }
            }
        };
        self.lock().remove(&key);
        r
    }

    /// Asks the host `method` with `params` under request `id`: written
    /// by `write` (which says whether it could), waited for as
    /// [`Pending::ask`] does; a question whose request was given up after
    /// it was written is cancelled at the host (`notifications/cancelled`,
    /// written the same way).
    pub(crate) fn ask_host(
        &self,
        (id, method, params): (&Value, &str, Value),
        timeout: Duration,
        write: impl Fn(&Value) -> bool,
    ) -> Answer {
        let request = serde_json::json!({"jsonrpc": "2.0", "id": id,
                                         "method": method, "params": params});
        let mut sent = false;
        let r = self.ask(id, timeout, || {
            sent = write(&request);
            sent
        });
        if sent && crate::cancel::fired() {
            write(&serde_json::json!({"jsonrpc": "2.0",
                "method": mcp::method::CANCELLED,
                "params": super::gateway::cancel_params(id)}));
        }
        r
    }

    /// Hands a response to whoever waits for `id`; false when nobody does.
    pub(crate) fn answer(&self, id: &Value, outcome: mcp::Outcome) -> bool {
        let r = match outcome {
            mcp::Outcome::Result(v) => Ok(v),
            mcp::Outcome::Error(e) => Err(e.describe()),
            mcp::Outcome::BadResult => Err("result is not an object".into()),
        };
        match self.lock().remove(&id.to_string()) {
            Some(tx) => tx.send(r).is_ok(),
            None => false,
        }
    }

    /// Fails every question still waiting (the host went away).
    pub(crate) fn clear(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.lock().clear();
    }

    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Sender<Answer>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn answers_reach_the_question_and_unknown_ids_are_dropped() {
        let p = std::sync::Arc::new(Pending::default());
        let q = p.clone();
        let t = std::thread::spawn(move || {
            q.ask(&json!("a"), Duration::from_secs(5), || true)
        });
        while !p.lock().contains_key("\"a\"") {
            std::thread::yield_now();
        }
        assert!(!p.answer(&json!("b"), mcp::Outcome::BadResult));
        assert!(p.answer(&json!("a"), mcp::Outcome::Result(json!({"x": 1}))));
        assert_eq!(t.join().unwrap(), Ok(json!({"x": 1})));
        let r = p.ask(&json!(1), Duration::from_millis(10), || true);
        assert!(r.unwrap_err().contains("no answer"));
        let r = p.ask(&json!(2), Duration::from_secs(5), || false);
        assert!(r.is_err());
        assert!(p.lock().is_empty());
        p.clear();
        let r = p.ask(&json!(3), Duration::from_secs(60), || true);
        assert_eq!(r.unwrap_err(), "the host went away");
    }
}
