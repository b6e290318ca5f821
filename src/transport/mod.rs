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
    /// A way to send one notification from another thread (the signal
    /// thread's cancellation on Ctrl-C), without waiting; `None` when this
    /// transport has none.
    fn canceller(&self) -> Option<Canceller> {
        None
    }
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
}
