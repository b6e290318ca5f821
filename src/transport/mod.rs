//! Transports move JSON-RPC messages; the session gives them meaning.
//!
//! Both transports have the same shape: `send` one message, `recv` the next
//! message from the server before a deadline, `close` for good. A
//! transport frames, bounds and times out; what messages mean is the
//! session's. The HTTP transport keeps the handshake era's session (it
//! remembers `initialize` to start over after a 404) and sends the
//! 2026-07-28 headers the session hands it with [`Transport::send_modern`];
//! both ask [`crate::mcp`] what a message is rather than spelling methods.

pub(crate) mod http;
pub(crate) mod stdio;

use serde_json::Value;

use crate::deadline::Deadline;
use crate::error::Result;

/// How a server ended, for messages and the journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Closed {
    /// It exited by itself after its stdin closed (or the HTTP session
    /// was deleted).
    Eof,
    /// It needed SIGTERM.
    Sigterm,
    /// It needed SIGKILL.
    Sigkill,
    /// It was already gone.
    Gone,
}

impl Closed {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Closed::Eof => "eof",
            Closed::Sigterm => "sigterm",
            Closed::Sigkill => "sigkill",
            Closed::Gone => "gone",
        }
    }
}

/// Which wire a transport is: decides how `auto` finds a server's era
/// and how a request is cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wire {
    Stdio,
    Http,
}

/// How many times `--max-message` one message may take in memory once
/// parsed ([`crate::mcp::size`]); the same bound holds what a list keeps
/// across its pages. The tree, its copy bounded for `--max-output` and
/// the raw line can be alive at once (2 + 2 + 1), which keeps the
/// documented ceiling (64 MiB + 6 × `--max-message` per running server)
/// whatever the shape.
pub(crate) const TREE_PER_MESSAGE: usize = 2;

/// The largest message accepted from a server by default (`--max-message`).
pub(crate) const DEFAULT_MAX_MESSAGE: usize = 16 << 20;

/// How often [`Transport::recv_until`] looks at its `stop` while nothing
/// arrives.
pub(crate) const STOP_POLL: std::time::Duration =
    std::time::Duration::from_millis(50);

/// The memory one parsed message (or a list's pages) may take.
pub(crate) fn tree_budget(max_message: usize) -> usize {
    max_message.saturating_mul(TREE_PER_MESSAGE)
}

/// Parses a server's message within `budget`: `Ok(None)` for text that is
/// not JSON (the caller decides), an error naming the bound for JSON
/// whose tree would pass it.
pub(crate) fn parse(bytes: &[u8], budget: usize) -> Result<Option<Value>> {
    match crate::mcp::parse_message(bytes, budget) {
        Ok(v) => Ok(Some(v)),
        Err(crate::mcp::Unparsed::Json(_)) => Ok(None),
        Err(_) => Err(too_large(bytes, budget)),
    }
}

/// The error for a message whose tree would pass `budget`.
pub(crate) fn too_large(bytes: &[u8], budget: usize) -> crate::error::Error {
    let e = crate::mcp::Unparsed::TooLarge {
        estimate: crate::mcp::size::parsed_size(bytes),
        budget,
    };
    crate::error::Error::server(format!(
        "refused {e} ({TREE_PER_MESSAGE} × --max-message; raise \
         --max-message if this is expected)"
    ))
}

/// Sends one notification from any thread, best effort, without waiting
/// long.
pub(crate) type Canceller = std::sync::Arc<dyn Fn(&Value) + Send + Sync>;

pub(crate) trait Transport: Send {
    fn wire(&self) -> Wire;
    /// Sends one message (request, response or notification).
    fn send(&mut self, msg: &Value, deadline: &Deadline) -> Result<()>;
    /// Sends a request of the 2026-07-28 era with its per-request headers
    /// (`MCP-Protocol-Version`, `Mcp-Method`, …); only HTTP has headers.
    fn send_modern(
        &mut self,
        msg: &Value,
        headers: &[(String, String)],
        deadline: &Deadline,
    ) -> Result<()> {
        let _ = headers;
        self.send(msg, deadline)
    }
    /// The next message from the server.
    fn recv(&mut self, deadline: &Deadline) -> Result<Value>;
    /// The next message from the server, or `None` as soon as `stop`
    /// holds (looked at every [`STOP_POLL`] while nothing arrives): a wait
    /// another thread may end (`serve`'s host cancelling a request). Here
    /// by waits of [`STOP_POLL`] each; HTTP waits on its streams alone, so
    /// that a stream's resumption keeps the whole deadline.
    fn recv_until(
        &mut self,
        deadline: &Deadline,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<Value>> {
        loop {
            if stop() {
                return Ok(None);
            }
            let slice = deadline.remaining()?.min(STOP_POLL);
            match self.recv(&Deadline::new("a cancellable wait", slice)) {
                Err(e) if e.kind() == crate::error::Kind::Timeout => {
                    deadline.remaining()?;
                }
                r => return r.map(Some),
            }
        }
    }
    /// A way to send one notification from another thread (the signal
    /// thread's cancellation on Ctrl-C), without waiting; `None` when this
    /// transport has none.
    fn canceller(&self) -> Option<Canceller> {
        None
    }
    /// Whether the message [`recv`] returned last came on the stream of
    /// the request in flight (HTTP: that POST's response), so belongs to
    /// that request; `false` where the wire does not say (stdio, HTTP's
    /// standalone stream).
    ///
    /// [`recv`]: Transport::recv
    fn on_request_stream(&self) -> bool {
        false
    }
    /// Before closing: the messages the server already sent on a stream
    /// that belongs to no request (HTTP's standalone stream), read within
    /// a small bound, so that a log line sent just before the last result
    /// is not lost. Only HTTP has such a stream.
    fn drain(&mut self) -> Vec<Value> {
        vec![]
    }
    /// Stops waiting for the answer to the request in flight, which was
    /// given up (`serve`'s host cancelled it); what the server still
    /// sends for it is dropped. Over HTTP, its response stream is left;
    /// elsewhere answers come on one channel and nothing is to be done.
    fn abandon(&mut self) {}
    /// Like [`canceller`], for a whole request sent from the signal
    /// thread without waiting for its answer (a task's `tasks/cancel` on
    /// Ctrl-C), also where closing the stream is how a request is
    /// cancelled (2026-07-28 over HTTP).
    ///
    /// [`canceller`]: Transport::canceller
    fn sender(&self) -> Option<Canceller> {
        self.canceller()
    }
    /// Leaves the session to the server, which keeps a task running in
    /// it: the session id a later invocation resumes it with (`None`
    /// when the transport has no session), and `close` then ends nothing
    /// on the server.
    fn detach(&mut self) -> Option<String> {
        None
    }
    /// Takes up a session that an earlier invocation left ([`detach`]),
    /// in the handshake-era revision it negotiated.
    ///
    /// [`detach`]: Transport::detach
    fn resume(&mut self, session: &str, protocol: &str) {
        let _ = (session, protocol);
    }
    /// Ends the connection and everything it started. Idempotent.
    fn close(&mut self) -> Closed;
    /// The memory a parsed message may take ([`tree_budget`]); what a
    /// session keeps across messages (a list's pages) is held to it too.
    fn tree_budget(&self) -> usize {
        usize::MAX
    }
}
