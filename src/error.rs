//! The one error type of rivumi-mcp and the exit-code table.
//!
//! Every failure is an [`Error`] with a [`Kind`]; the kind alone decides the
//! exit code, so the table in GUIDE.md and [`Kind::exit_code`] are the whole
//! policy. Context (which server, which file) is added where it is known,
//! and the message reads as one chain:
//! `server 'foo': tools/call 'bar': timed out waiting for tool call (30s)`.

use std::fmt;

/// What kind of failure this is; decides the exit code and the `code` of
/// the JSON error object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The command finished with a negative result (an invalid config in
    /// `check-config`, a tool result with `isError: true`). Exit 1.
    Negative,
    /// Bad command line or an unreadable input file. Exit 2.
    Usage,
    /// A server may not start: not in the allowlist, its pin does not
    /// match, its entry is invalid, or a variable it needs is unset. Exit 3.
    Refused,
    /// The server could not be started or reached, died, or broke the
    /// protocol. Exit 4.
    Server,
    /// A named deadline fired. Exit 5.
    Timeout,
    /// The server wants (other) credentials. Exit 6.
    Auth,
    /// A pre-tool hook or the approval step said no. Exit 7.
    Denied,
    /// The result was printed cut to `--max-output`: what stdout holds is
    /// not the whole. Exit 8.
    Truncated,
    /// What a server sent failed its own integrity check (a skill file
    /// whose size, digest or frontmatter differs from its entry): nothing
    /// of it was used. Exit 9.
    Integrity,
    /// Ended by SIGINT (130) or SIGTERM (143).
    Signal(i32),
    /// stdout was closed by its reader (`rivumi-mcp list | head -1`): the
    /// program ends quietly with 0, as a C program killed by SIGPIPE would
    /// from the shell's point of view.
    BrokenPipe,
}

impl Kind {
    /// The process exit code for this kind (see GUIDE.md, "Exit codes").
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Kind::Negative => 1,
            Kind::Usage => 2,
            Kind::Refused => 3,
            Kind::Server => 4,
            Kind::Timeout => 5,
            Kind::Auth => 6,
            Kind::Denied => 7,
            Kind::Truncated => 8,
            Kind::Integrity => 9,
            Kind::Signal(sig) => (128 + sig).clamp(0, 255) as u8,
            Kind::BrokenPipe => 0,
        }
    }

    /// The kinds a failure reported by another process (the daemon) can
    /// have: all but a signal's and a closed pipe's.
    pub(crate) const REPORTABLE: [Kind; 9] = [
        Kind::Negative,
        Kind::Usage,
        Kind::Refused,
        Kind::Server,
        Kind::Timeout,
        Kind::Auth,
        Kind::Denied,
        Kind::Truncated,
        Kind::Integrity,
    ];

    /// The reportable kind of this [`Kind::name`].
    pub(crate) fn named(name: &str) -> Option<Kind> {
        Kind::REPORTABLE.into_iter().find(|k| k.name() == name)
    }

    /// The stable name used as `code` in `--json` error objects.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Negative => "failed",
            Kind::Usage => "usage",
            Kind::Refused => "refused",
            Kind::Server => "server",
            Kind::Timeout => "timeout",
            Kind::Auth => "auth_required",
            Kind::Denied => "denied",
            Kind::Truncated => "truncated",
            Kind::Integrity => "integrity",
            Kind::Signal(_) => "interrupted",
            Kind::BrokenPipe => "broken_pipe",
        }
    }
}

/// A failure with its kind, the server it concerns (if any) and a message
/// that already carries its context.
#[derive(Debug)]
pub(crate) struct Error {
    kind: Kind,
    server: Option<String>,
    msg: String,
    /// Already printed where it happened (e.g. one of several servers
    /// of `list`); `main` only uses its kind for the exit code.
    reported: bool,
    /// The HTTP status that caused it, when a server answered with one
    /// that is not an MCP answer (the era probe falls back on a 4xx).
    http_status: Option<u16>,
}

pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn new(kind: Kind, msg: impl Into<String>) -> Error {
        Error {
            kind,
            server: None,
            msg: msg.into(),
            reported: false,
            http_status: None,
        }
    }

    pub(crate) fn usage(msg: impl Into<String>) -> Error {
        Error::new(Kind::Usage, msg)
    }

    pub(crate) fn refused(msg: impl Into<String>) -> Error {
        Error::new(Kind::Refused, msg)
    }

    pub(crate) fn server(msg: impl Into<String>) -> Error {
        Error::new(Kind::Server, msg)
    }

    pub(crate) fn negative(msg: impl Into<String>) -> Error {
        Error::new(Kind::Negative, msg)
    }

    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    pub(crate) fn server_name(&self) -> Option<&str> {
        self.server.as_deref()
    }

    pub(crate) fn message(&self) -> &str {
        &self.msg
    }

    /// The error as `--json` output shows it, the same shape everywhere
    /// (the top-level error, `batch` replies, `list` servers): the
    /// code's name, the exit code it maps to, the whole message as the
    /// stderr line says it, and the server it is about (or null).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "code": self.kind.name(),
            "exit_code": self.kind.exit_code(),
            "message": self.to_string(),
            "server": self.server_name(),
        })
    }

    /// Notes the HTTP status that caused the error.
    pub(crate) fn with_http_status(mut self, status: u16) -> Error {
        self.http_status = Some(status);
        self
    }

    pub(crate) fn http_status(&self) -> Option<u16> {
        self.http_status
    }

    /// Marks the error as printed already.
    pub(crate) fn reported(mut self) -> Error {
        self.reported = true;
        self
    }

    pub(crate) fn is_reported(&self) -> bool {
        self.reported
    }

    /// Names the server this error concerns; the first name given wins,
    /// since it is the innermost and most precise.
    pub(crate) fn for_server(mut self, server: &str) -> Error {
        if self.server.is_none() {
            self.server = Some(server.to_string());
        }
        self
    }

    /// Appends what the user can do about it (`; ...`).
    pub(crate) fn hint(mut self, what: impl fmt::Display) -> Error {
        self.msg = format!("{}; {what}", self.msg);
        self
    }

    /// Prefixes the message with what was being done, ripgrep-style.
    pub(crate) fn context(mut self, what: impl fmt::Display) -> Error {
        self.msg = format!("{what}: {}", self.msg);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.server {
            Some(s) => write!(f, "server '{s}': {}", self.msg),
            None => f.write_str(&self.msg),
        }
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_distinct() {
        let mut kinds = Kind::REPORTABLE.to_vec();
        kinds.extend([Kind::Signal(2), Kind::Signal(15)]);
        let mut codes: Vec<u8> = kinds.iter().map(|k| k.exit_code()).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), kinds.len());
        assert_eq!(Kind::Signal(2).exit_code(), 130);
        assert_eq!(Kind::Signal(15).exit_code(), 143);
    }

    #[test]
    fn server_context_reads_as_a_chain() {
        let e = Error::new(Kind::Timeout, "timed out")
            .context("tools/call 'x'")
            .for_server("a")
            .for_server("outer");
        assert_eq!(e.to_string(), "server 'a': tools/call 'x': timed out");
    }

    #[test]
    fn error_stays_small() {
        assert!(std::mem::size_of::<Error>() <= 64);
    }
}
