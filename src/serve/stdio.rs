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

use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::gateway::{Gateway, Host, HostLink, RpcFail};
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
    pending:
        Mutex<HashMap<String, Sender<std::result::Result<Value, String>>>>,
    next: AtomicU64,
    /// Set at end of input: no answer will come.
    closed: std::sync::atomic::AtomicBool,
}

impl Link {
    fn new() -> Link {
        Link {
            out: Mutex::new(std::io::stdout()),
            pending: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Writes one message as one line.
    pub(crate) fn write(&self, m: &Value) {
        let mut line = m.to_string();
        line.push('\n');
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = out.write_all(line.as_bytes()).and_then(|_| out.flush());
    }

    fn answer(&self, id: &Value, r: std::result::Result<Value, String>) {
        let key = id.to_string();
        let tx = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        match tx {
            Some(tx) => {
                let _ = tx.send(r);
            }
            None => msg::debug(&format!(
                "serve: ignored a host response with unknown id {}",
                term::clip(&key, 60)
            )),
        }
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.pending.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl HostLink for Link {
    fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> std::result::Result<Value, String> {
        if self.closed.load(Ordering::SeqCst) {
            return Err("the host closed its input".into());
        }
        let id = json!(format!(
            "serve-{}",
            self.next.fetch_add(1, Ordering::SeqCst)
        ));
        let (tx, rx) = mpsc::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string(), tx);
        self.write(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        match rx.recv_timeout(timeout) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.pending
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id.to_string());
                Err(format!(
                    "no answer from the host within {}s",
                    timeout.as_secs()
                ))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                Err("the host closed its input".into())
            }
        }
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
    let host = Mutex::new(Host::default());
    let in_flight = AtomicUsize::new(0);
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
                    let r = match outcome {
                        mcp::Outcome::Result(v) => Ok(v),
                        mcp::Outcome::Error(e) => Err(e.describe()),
                        mcp::Outcome::BadResult => {
                            Err("result is not an object".into())
                        }
                    };
                    link.answer(&id, r);
                }
                Incoming::Notification { method, .. } => {
                    msg::debug(&format!(
                        "serve: host notification {}",
                        term::clip(&term::line(&method), 80)
                    ));
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
                    let (link, dyn_link, host, in_flight) =
                        (&link, &dyn_link, &host, &in_flight);
                    scope.spawn(move || {
                        // initialize changes the host; anything else
                        // works on a copy of it.
                        let mut h =
                            *host.lock().unwrap_or_else(|e| e.into_inner());
                        let r = gw.handle(
                            &mut h,
                            Some(dyn_link),
                            &method,
                            &params,
                        );
                        if method == mcp::method::INITIALIZE {
                            *host.lock().unwrap_or_else(|e| e.into_inner()) =
                                h;
                        }
                        link.write(&match r {
                            Ok(v) => mcp::response(id, v),
                            Err(f) => f.response(id),
                        });
                        in_flight.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            }
        }
        link.close();
        Ok(())
    })
}
