//! The stdio front: the host writes requests to our stdin, one JSON-RPC
//! message a line, and reads our answers on stdout. Nothing else is ever
//! written to stdout.
//!
//! The main thread reads; each request is answered on its own thread (at
//! most [`MAX_IN_FLIGHT`] at once), so that the host's answers to what
//! the gateway asks meanwhile (an approval form, a forwarded elicitation)
//! are read while a call waits for them. At end of input every pending
//! question fails, the requests in flight finish, and every upstream
//! session is closed.

use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::gateway::{Aborts, Gateway, Host, HostLink, RpcFail};
use super::pending::Pending;
use crate::cancel::Abort;
use crate::error::{Error, Result};
use crate::mcp::{self, Incoming, code};
use crate::{msg, term};

/// The most requests handled at once.
const MAX_IN_FLIGHT: usize = 32;
/// The longest line read from the host.
const MAX_LINE: usize = 16 << 20;

/// The host's side of the pipe: our stdout and the questions we asked it.
pub(crate) struct Link {
    out: Mutex<std::io::Stdout>,
    pending: Pending,
    next: AtomicU64,
}

impl Link {
    fn new() -> Link {
        Link {
            out: Mutex::new(std::io::stdout()),
            pending: Pending::default(),
            next: AtomicU64::new(1),
        }
    }

    /// Writes one message as one line.
    pub(crate) fn write(&self, m: &Value) {
        let mut line = m.to_string();
        line.push('\n');
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = out.write_all(line.as_bytes()).and_then(|_| out.flush());
    }

    fn answer(&self, id: &Value, outcome: mcp::Outcome) {
        if !self.pending.answer(id, outcome) {
            msg::debug(&format!(
                "serve: ignored a host response with unknown id {}",
                term::clip(&id.to_string(), 60)
            ));
        }
    }

    fn close(&self) {
        self.pending.clear();
    }
}

impl HostLink for Link {
    fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> std::result::Result<Value, String> {
        let id = json!(format!(
            "serve-{}",
            self.next.fetch_add(1, Ordering::SeqCst)
        ));
        let question = (&id, method, params);
        self.pending.ask_host(question, timeout, |m| {
            self.write(m);
            true
        })
    }

    fn notify(&self, method: &str, params: Value) {
        self.write(
            &json!({"jsonrpc": "2.0", "method": method, "params": params}),
        );
    }
}

/// Serves the host on stdin/stdout until end of input.
pub(crate) fn run(gw: &Gateway<'_>) -> Result<()> {
    let link = Arc::new(Link::new());
    let dyn_link: Arc<dyn HostLink> = link.clone();
    // The one host is told on stdout between its requests too.
    gw.hosts.attach(0, dyn_link.clone());
    let host = Mutex::new(Host::default());
    let in_flight = AtomicUsize::new(0);
    let aborts = Aborts::default();
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    std::thread::scope(|scope| -> Result<()> {
        let mut buf = Vec::new();
        loop {
            buf.clear();
            let n = (&mut input)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| {
                    Error::server(format!("serve: reading stdin: {e}"))
                })?;
            if n == 0 {
                break;
            }
            if buf.len() > MAX_LINE {
                msg::warn(
                    "serve: a line from the host is longer than 16 MiB; ending",
                );
                break;
            }
            let text = String::from_utf8_lossy(&buf);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let m: Value = match serde_json::from_str(text) {
                Ok(m) => m,
                Err(e) => {
                    let f = RpcFail::new(
                        code::PARSE_ERROR,
                        format!("parse error: {e}"),
                    );
                    link.write(&f.response(Value::Null));
                    continue;
                }
            };
            match mcp::classify(m) {
                Incoming::Response { id, outcome } => {
                    link.answer(&id, outcome)
                }
                Incoming::Notification { method, params } => {
                    msg::debug(&format!(
                        "serve: host notification {}",
                        term::clip(&term::line(&method), 80)
                    ));
                    if method == mcp::method::CANCELLED {
                        aborts.cancel(&params);
                    }
                }
                Incoming::Invalid(why) => {
                    let f = RpcFail::new(code::INVALID_REQUEST, why);
                    link.write(&f.response(Value::Null));
                }
                Incoming::Request { id, method, params } => {
                    if in_flight.load(Ordering::SeqCst) >= MAX_IN_FLIGHT {
                        let f = RpcFail::new(
                            code::INTERNAL_ERROR,
                            "too many requests in flight; retry later",
                        );
                        link.write(&f.response(id));
                        continue;
                    }
                    in_flight.fetch_add(1, Ordering::SeqCst);
                    let abort = aborts.start(&id, &method);
                    let (link, dyn_link, host, in_flight, aborts) =
                        (&link, &dyn_link, &host, &in_flight, &aborts);
                    scope.spawn(move || {
                        let _entered = abort.as_ref().map(Abort::enter);
                        // initialize changes the host; anything else
                        // works on a copy of it.
                        let mut h =
                            *host.lock().unwrap_or_else(|e| e.into_inner());
                        let r = gw.handle(
                            &mut h,
                            Some(dyn_link),
                            Some(&scope),
                            (&id, &method),
                            &params,
                        );
                        if method == mcp::method::INITIALIZE {
                            *host.lock().unwrap_or_else(|e| e.into_inner()) =
                                h;
                        }
                        // A request the host cancelled gets no response.
                        if !aborts.finish(&id, abort.as_ref()) {
                            link.write(&match r {
                                Ok(v) => mcp::response(id, v),
                                Err(f) => f.response(id),
                            });
                        }
                        in_flight.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            }
        }
        link.close();
        gw.hosts.close();
        Ok(())
    })
}
