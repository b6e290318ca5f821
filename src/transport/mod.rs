//! Transports move JSON-RPC messages; the session gives them meaning.
//!
//! Both transports have the same shape: `send` one message, `recv` the next
//! message from the server before a deadline, `close` for good. A transport
//! knows nothing of MCP methods; it frames, bounds and times out.

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

pub(crate) trait Transport: Send {
    /// Sends one message (request, response or notification).
    fn send(&mut self, msg: &Value, deadline: &Deadline) -> Result<()>;
    /// The next message from the server.
    fn recv(&mut self, deadline: &Deadline) -> Result<Value>;
    /// Ends the connection and everything it started. Idempotent.
    fn close(&mut self) -> Closed;
}
