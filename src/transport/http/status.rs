//! HTTP answers as [`crate::streamable`] reads them, and the words for what
//! went wrong: every [`Failure`] becomes one error line (with the HTTP
//! status that caused it, when the era probe should know), a body shown
//! only as a bounded one-line snippet, transport errors named.

use ureq::Body;
use ureq::http::Response;

use crate::deadline::Deadline;
use crate::error::{Error, Kind};
use crate::streamable::{Failure, Head, MAX_RESUMES};
use crate::{sse, term, www_auth};

/// The most of an error body read, for its snippet or to see whether it
/// is a JSON-RPC answer.
const ERROR_BODY: u64 = 64 * 1024;

/// What the session rules need of an answer's head.
pub(super) fn head(resp: &Response<Body>) -> Head {
    let header = |n: &str| {
        resp.headers().get(n).and_then(|v| v.to_str().ok()).map(str::to_string)
    };
    let mut head =
        Head::new(resp.status().as_u16(), header("content-type").as_deref());
    head.session_id =
        resp.headers().get("mcp-session-id").map(|v| v.as_bytes().to_vec());
    head.location = header("location");
    head.www_authenticate = header("www-authenticate");
    head
}

/// Reads an error body, bounded.
pub(super) fn error_body(resp: &mut Response<Body>) -> Vec<u8> {
    resp.body_mut()
        .with_config()
        .limit(ERROR_BODY)
        .read_to_vec()
        .unwrap_or_default()
}

/// Reads and drops what is left of a body (a notification's answer).
pub(super) fn discard(resp: &mut Response<Body>) {
    let _ = resp.body_mut().with_config().limit(ERROR_BODY).read_to_vec();
}

/// A small error body for messages: at most 200 bytes, one line.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        String::new()
    } else {
        format!(": {}", term::clip(&term::line(text), 200))
    }
}

/// The error a [`Failure`] is; `body` is the answer's body when the
/// failure shows it ([`Failure::shows_body`]); `auth_hint` says what to
/// do about refused credentials.
pub(super) fn error(
    f: Failure,
    body: &[u8],
    auth_hint: &dyn Fn() -> String,
) -> Error {
    let status = f.http_status();
    let e = match f {
        Failure::Redirect { status, location } => Error::server(format!(
            "HTTP {status} redirect to '{}' refused: rivumi-mcp never \
             follows redirects; configure the final URL",
            term::clip(&term::line(&location), 200)
        )),
        Failure::Unauthorized { status, challenge } => {
            let what = if status == 401 {
                "authentication required"
            } else {
                "insufficient scope"
            };
            let challenges = www_auth::parse(&challenge);
            let detail = if challenges.is_empty() {
                String::new()
            } else {
                format!("; challenge: {}", www_auth::describe(&challenges))
            };
            return Error::new(
                Kind::Auth,
                format!("{what} (HTTP {status}){detail}; {}", auth_hint()),
            );
        }
        Failure::NoEndpoint => Error::server(
            "HTTP 404: no MCP endpoint at this URL (check the path, often \
             /mcp)",
        ),
        Failure::MaybeOldTransport { status } => Error::server(format!(
            "HTTP {status} to initialize{}; the server may only speak the \
             deprecated HTTP+SSE transport (2024-11-05), which rivumi-mcp \
             does not support",
            snippet(body)
        )),
        Failure::OldTransport { status, endpoint } => {
            let names = endpoint
                .map(|p| format!(", which names '{p}' for its POSTs"))
                .unwrap_or_default();
            Error::server(format!(
                "HTTP {status} to POST, and a GET at this URL opens an event \
                 stream{names}: the server speaks the deprecated HTTP+SSE \
                 transport (2024-11-05), which is not supported; use its \
                 Streamable HTTP endpoint if it has one (MCP 2025-03-26 and \
                 later), or run it over stdio"
            ))
        }
        Failure::Status { status } => {
            Error::server(format!("HTTP {status}{}", snippet(body)))
        }
        Failure::NotFoundAgain => {
            Error::server("HTTP 404 again after starting a new session")
        }
        Failure::NotFoundBeforeInitialize => {
            Error::server("HTTP 404 before initialize")
        }
        Failure::InvalidSessionId => Error::server(
            "the server sent an invalid Mcp-Session-Id (visible ASCII only, \
             at most 1024 bytes)",
        ),
        Failure::UnexpectedType { status, media_type } => {
            Error::server(format!(
                "unexpected content type '{}' (HTTP {status}){}",
                term::clip(&term::line(&media_type), 100),
                snippet(body)
            ))
        }
        Failure::InvalidJson { why, .. } => {
            Error::server(format!("the JSON response is invalid: {why}"))
        }
        Failure::NoResponse { .. } => Error::server(
            "the server accepted the request but sent no response",
        ),
        Failure::StreamEnded { .. } => Error::server("the stream ended"),
        Failure::EndedBeforeResponse { modern: true, .. } => {
            Error::server("the event stream ended before the response")
        }
        Failure::EndedBeforeResponse { modern: false, .. } => Error::server(
            "the event stream ended before the response (and cannot be \
             resumed: no event ids)",
        ),
        Failure::TooManyResumes => Error::server(format!(
            "the event stream ended {MAX_RESUMES} times before the response"
        )),
        Failure::Resuming(inner) => {
            return error(*inner, body, auth_hint).context(
                "resuming the event stream (GET with Last-Event-ID)",
            );
        }
        Failure::ResumeNotStream => Error::server(
            "resuming the event stream: the answer is not text/event-stream",
        ),
    };
    match status {
        Some(s) => e.with_http_status(s),
        None => e,
    }
}

/// A ureq error, worded.
pub(super) fn ureq_error(
    e: ureq::Error,
    target: &str,
    deadline: &Deadline,
) -> Error {
    if let ureq::Error::BodyExceedsLimit(n) = e {
        return Error::server(format!(
            "the response is larger than {n} bytes (raise --max-message if \
             this is expected)"
        ));
    }
    crate::net::error(e, target, deadline)
}

/// An error reading an event stream, worded.
pub(super) fn read_error(
    e: std::io::Error,
    target: &str,
    deadline: &Deadline,
) -> Error {
    if let Some(s) = e.get_ref().and_then(|x| x.downcast_ref::<sse::Error>()) {
        return Error::server(format!("event stream: {s}"));
    }
    ureq_error(ureq::Error::from(e), target, deadline)
}
