//! Streamable HTTP as a value: the session rules of MCP's HTTP transport
//! (2025-03-26 and later, and the 2026-07-28 wire), without I/O.
//!
//! A caller moves the bytes (POSTs, GETs, the closing DELETE, event
//! streams read wherever it likes) and hands this module what came back
//! as values: an answer's [`Head`], how a stream ended ([`StreamEnd`]),
//! the messages. This module says what to do next. It has two parts:
//!
//! - [`Session`]: what outlives one message: the session id from the
//!   initialize answer (checked: visible ASCII, at most
//!   [`MAX_SESSION_ID`] bytes), the negotiated `MCP-Protocol-Version`,
//!   the `initialize` request and `notifications/initialized` kept to
//!   start over after a 404, the era's headers ([`Session::headers`]: the
//!   handshake era's session id and version, or a 2026-07-28 request's
//!   own headers, and a reply's own), the standalone GET stream (asked
//!   for once per session, handshake era only, after
//!   `notifications/initialized`), whether the server answered anything
//!   yet (the hints about the old transport depend on it) and what a GET
//!   said about the deprecated HTTP+SSE transport.
//! - [`Call`]: one message's trip, typed by where it is:
//!   `Call<Post>` (its POST is to be sent), `Call<ReadJson>` and
//!   `Call<ErrorBody>` (a body is to be read), `Call<Refused>` (an HTTP
//!   error, maybe after one GET that looks for the old transport),
//!   `Call<Streaming>` (its event stream is being read) and
//!   `Call<Resuming>` (the stream ended early: wait, then GET it again
//!   with `Last-Event-ID`, at most [`MAX_RESUMES`] times, after the
//!   server's `retry` bounded by [`sse::reconnect_delay`]). Each
//!   transition consumes the call and returns the next step ([`Posted`]),
//!   so that a step can be neither skipped nor taken twice.
//!
//! What goes wrong is a [`Failure`]: facts (statuses, a media type, the
//! path an old server names), which the caller words.
//!
//! ```
//! use rivumi_mcp_proto::streamable::{Head, Posted, Session};
//! use serde_json::json;
//!
//! let mut s = Session::new();
//! let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
//!     "params": {}});
//! let call = s.send(&init, None);
//! let mut head = Head::new(200, Some("application/json"));
//! head.session_id = Some(b"abc".to_vec());
//! let Posted::Json(read) = call.answered(&mut s, &head) else { panic!() };
//! let answer = read
//!     .body(br#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}"#, 1 << 20)
//!     .unwrap();
//! s.observe(&answer);
//! assert_eq!(
//!     s.headers(true),
//!     [
//!         ("mcp-protocol-version".to_string(), "2025-11-25".to_string()),
//!         ("mcp-session-id".to_string(), "abc".to_string()),
//!     ]
//! );
//! ```

use std::marker::PhantomData;
use std::time::Duration;

use serde_json::Value;

use crate::{mcp, sse, term, www_auth};

/// Resumption attempts per request.
pub const MAX_RESUMES: usize = 5;
/// The longest session id accepted.
pub const MAX_SESSION_ID: usize = 1024;

/// The head of an HTTP answer, as the caller read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Head {
    /// The status code.
    pub status: u16,
    /// The media type: lowercased, without parameters; empty when none.
    pub media_type: String,
    /// The raw `Mcp-Session-Id`, when there is one.
    pub session_id: Option<Vec<u8>>,
    /// `Location`, when there is one.
    pub location: Option<String>,
    /// `WWW-Authenticate`, when there is one.
    pub www_authenticate: Option<String>,
}

impl Head {
    /// A head with this status and `Content-Type`.
    pub fn new(status: u16, content_type: Option<&str>) -> Head {
        Head {
            status,
            media_type: media_type(content_type.unwrap_or("")),
            ..Head::default()
        }
    }

    fn success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// The media type of a `Content-Type` value: lowercased, without
/// parameters.
pub fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

/// The headers of every POST: a JSON body, and either a JSON answer or
/// an event stream accepted.
pub const POST_HEADERS: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

/// The header of every GET for an event stream (the standalone stream, a
/// resumption, the look for the old transport).
pub const STREAM_HEADERS: [(&str, &str); 1] =
    [("accept", "text/event-stream")];

/// Whether an answer is an event stream to read: a 200
/// `text/event-stream` (the standalone GET's, the old transport's).
pub fn streams(head: &Head) -> bool {
    head.status == 200 && head.media_type == "text/event-stream"
}

/// Whether an event carries a JSON-RPC message: a `message` event with
/// data (a priming event, with an id and empty data, does not; other
/// event types are ignored).
pub fn carries_message(ev: &sse::Event) -> bool {
    ev.event == "message" && !ev.data.trim().is_empty()
}

/// The event of the old HTTP+SSE transport that names its POST URL.
pub const OLD_ENDPOINT_EVENT: &str = "endpoint";

/// How an event stream ended, as its SSE parser saw it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamEnd {
    /// The last event id (empty when none or reset).
    pub last_event_id: String,
    /// Whether any event carried an id.
    pub saw_id: bool,
    /// The server's `retry` in milliseconds, when it sent one.
    pub retry: Option<u64>,
}

/// What went wrong, as facts for the caller to word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A 3xx: redirects are never followed.
    Redirect {
        /// The HTTP status of the answer.
        status: u16,
        /// The `Location` header, as sent.
        location: String,
    },
    /// A 401, or a 403 with `error="insufficient_scope"`: `challenge` is
    /// the `WWW-Authenticate` header.
    Unauthorized {
        /// The HTTP status of the answer.
        status: u16,
        /// The `WWW-Authenticate` header.
        challenge: String,
    },
    /// An HTML 404 before anything answered: a web server, no MCP
    /// endpoint at this path.
    NoEndpoint,
    /// A 400, 404 or 405 to `initialize` before anything answered (and no
    /// GET streams): the server may only speak the old transport.
    MaybeOldTransport {
        /// The HTTP status of the answer.
        status: u16,
    },
    /// A 404 or 405 to a POST before anything answered, at a URL whose
    /// GET streams: the deprecated HTTP+SSE transport, which names
    /// `endpoint` (a path, without its query) for its POSTs.
    OldTransport {
        /// The HTTP status of the answer.
        status: u16,
        /// The path the `endpoint` event named, without its query.
        endpoint: Option<String>,
    },
    /// Any other HTTP error.
    Status {
        /// The HTTP status of the answer.
        status: u16,
    },
    /// A 404 again, to the request sent again in a new session.
    NotFoundAgain,
    /// A 404 to a session's request before any `initialize` was sent.
    NotFoundBeforeInitialize,
    /// The initialize answer's `Mcp-Session-Id` is empty, too long or not
    /// visible ASCII.
    InvalidSessionId,
    /// A 2xx answer to a request that is neither JSON, an event stream
    /// nor empty.
    UnexpectedType {
        /// The HTTP status of the answer.
        status: u16,
        /// The answer's media type.
        media_type: String,
    },
    /// A JSON answer that is no JSON-RPC message.
    InvalidJson {
        /// The HTTP status of the answer.
        status: u16,
        /// Why the body is not a message.
        why: String,
    },
    /// The server accepted the request (a 202, an empty body) and no
    /// response will come.
    NoResponse {
        /// The HTTP status of the answer.
        status: u16,
    },
    /// A request's stream ended when no response was awaited.
    StreamEnded {
        /// The HTTP status of the answer.
        status: u16,
    },
    /// A request's stream ended before its response and cannot be
    /// resumed: 2026-07-28 has no resumption (`modern`), or no event had
    /// an id.
    EndedBeforeResponse {
        /// The HTTP status of the answer.
        status: u16,
        /// Whether the session speaks 2026-07-28 (no resumption).
        modern: bool,
    },
    /// The stream ended [`MAX_RESUMES`] times before the response.
    TooManyResumes,
    /// The GET that resumes a stream failed so.
    Resuming(Box<Failure>),
    /// The GET that resumes a stream answered something else than an
    /// event stream.
    ResumeNotStream,
}

impl Failure {
    /// The HTTP status of an answer that is no MCP answer, for the
    /// caller's era probe: a server that answers a 2026-07-28 request so
    /// does not speak that era. `None` for what no other era would fare
    /// better with (redirects, credentials).
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Failure::Redirect { .. } | Failure::Unauthorized { .. } => None,
            Failure::NoEndpoint => Some(404),
            Failure::MaybeOldTransport { status }
            | Failure::OldTransport { status, .. }
            | Failure::Status { status }
            | Failure::UnexpectedType { status, .. }
            | Failure::InvalidJson { status, .. }
            | Failure::NoResponse { status }
            | Failure::StreamEnded { status }
            | Failure::EndedBeforeResponse { status, .. } => Some(*status),
            Failure::NotFoundAgain
            | Failure::NotFoundBeforeInitialize
            | Failure::InvalidSessionId
            | Failure::TooManyResumes
            | Failure::Resuming(_)
            | Failure::ResumeNotStream => None,
        }
    }

    /// Whether the wording shows the start of the answer's body.
    pub fn shows_body(&self) -> bool {
        match self {
            Failure::MaybeOldTransport { .. }
            | Failure::Status { .. }
            | Failure::UnexpectedType { .. } => true,
            Failure::Resuming(inner) => inner.shows_body(),
            _ => false,
        }
    }
}

/// The standalone GET stream of a handshake-era session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Standalone {
    /// Not asked for yet in this session.
    #[default]
    NotAsked,
    /// Asked for; refused, or not (yet) open.
    Asked,
    /// Open and being read.
    Open,
    /// It was open and has ended.
    Ended,
}

/// What one GET said about the deprecated HTTP+SSE transport.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OldTransport {
    /// Not looked (a GET is asked for only after a refused POST).
    #[default]
    NotLooked,
    /// The GET does not stream.
    No,
    /// The GET streams; its `endpoint` event named this path.
    Yes(Option<String>),
}

/// The path the old transport's `endpoint` event names, for messages:
/// without query and fragment (the query holds the stream's session
/// id), on one line, at most 100 characters; `None` when empty.
pub fn old_endpoint(data: &str) -> Option<String> {
    let path = data.trim().split(['?', '#']).next().unwrap_or("");
    (!path.is_empty()).then(|| term::clip(&term::line(path), 100).to_string())
}

/// What outlives one message of a Streamable HTTP connection.
#[derive(Default)]
pub struct Session {
    /// The session id; a secret (never printed, not even by `Debug`).
    id: Option<String>,
    protocol: Option<String>,
    init: Option<Value>,
    initialized: Option<Value>,
    /// The 2026-07-28 headers of the latest POST (a request's, or a
    /// reply's own); `None` in the handshake era.
    modern: Option<Vec<(String, String)>>,
    standalone: Standalone,
    /// The id of the request whose response has not arrived yet.
    awaiting: Option<Value>,
    /// Whether the server has answered any request, in either era.
    answered: bool,
    /// The status of the latest request's answer.
    status: u16,
    old: OldTransport,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("session", &self.id.as_ref().map(|_| "(set)"))
            .field("protocol", &self.protocol)
            .field("modern", &self.modern.is_some())
            .field("standalone", &self.standalone)
            .field("answered", &self.answered)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A connection before its first message.
    pub fn new() -> Session {
        Session::default()
    }

    /// A message to send: a request (its response is then awaited), a
    /// notification or a reply. `modern`: the 2026-07-28 headers of a
    /// request, when the caller speaks that era; a reply or notification
    /// then carries its own version and method, never the name or
    /// mirrored parameters of the request in flight. `initialize` is kept
    /// (and leaves the 2026-07-28 wire), `notifications/initialized` too.
    pub fn send(
        &mut self,
        msg: &Value,
        modern: Option<&[(String, String)]>,
    ) -> Call<Post> {
        if let Some(h) = modern {
            self.modern = Some(h.to_vec());
        }
        if mcp::is_initialize(msg) {
            self.init = Some(msg.clone());
            self.modern = None;
        } else if mcp::is_initialized(msg) {
            self.initialized = Some(msg.clone());
        }
        let is_request =
            msg.get("method").is_some() && msg.get("id").is_some();
        if is_request {
            self.awaiting = msg.get("id").cloned();
            return Call::new(Kind::Request {
                initialize: mcp::is_initialize(msg),
            });
        }
        if let Some(request) = &self.modern {
            let mut own: Vec<(String, String)> = request
                .iter()
                .filter(|(k, _)| {
                    k.eq_ignore_ascii_case("mcp-protocol-version")
                })
                .cloned()
                .collect();
            own.extend(
                mcp::method_of(msg)
                    .map(|m| ("Mcp-Method".to_string(), m.to_string())),
            );
            self.modern = Some(own);
        }
        let initialized = mcp::is_initialized(msg);
        Call::new(Kind::Other {
            restartable: !initialized,
            standalone_after: initialized,
        })
    }

    /// The era's headers for a request: the 2026-07-28 headers, or the
    /// negotiated `mcp-protocol-version` and (`with_session`) the
    /// `mcp-session-id`.
    pub fn headers(&self, with_session: bool) -> Vec<(String, String)> {
        if let Some(h) = &self.modern {
            return h.clone();
        }
        let mut out = vec![];
        if let Some(p) = &self.protocol {
            out.push(("mcp-protocol-version".to_string(), p.clone()));
        }
        if with_session && let Some(s) = &self.id {
            out.push(("mcp-session-id".to_string(), s.clone()));
        }
        out
    }

    /// Whether a request in flight is cancelled with a notification POST
    /// (`notifications/cancelled`); on the 2026-07-28 wire closing its
    /// stream is the cancellation.
    pub fn cancels_by_notification(&self) -> bool {
        self.modern.is_none()
    }

    /// Whether the latest message went out on the 2026-07-28 wire.
    pub fn modern(&self) -> bool {
        self.modern.is_some()
    }

    /// Whether the server gave a session id.
    pub fn has_session(&self) -> bool {
        self.id.is_some()
    }

    /// Whether the server has answered any request yet.
    pub fn answered(&self) -> bool {
        self.answered
    }

    /// The standalone stream's state.
    pub fn standalone(&self) -> Standalone {
        self.standalone
    }

    /// Whether to ask for the standalone stream now: once per session, in
    /// the handshake era, when the server gave a session id.
    pub fn wants_standalone(&self) -> bool {
        self.standalone == Standalone::NotAsked
            && self.id.is_some()
            && self.modern.is_none()
    }

    /// The standalone stream was asked for; `open` when the server
    /// answered it with an event stream.
    pub fn standalone_asked(&mut self, open: bool) {
        self.standalone =
            if open { Standalone::Open } else { Standalone::Asked };
    }

    /// The standalone stream's GET was answered with `head` (`None`: not
    /// at all, within the caller's bound): whether it is open, which only
    /// a 200 event stream is. A refusal (a 405) is no error.
    pub fn standalone_answered(&mut self, head: Option<&Head>) -> bool {
        let open = head.is_some_and(streams);
        self.standalone_asked(open);
        open
    }

    /// The standalone stream ended (or broke).
    pub fn standalone_ended(&mut self) {
        if self.standalone == Standalone::Open {
            self.standalone = Standalone::Ended;
        }
    }

    /// Whether to read what the standalone stream still delivers before
    /// closing: while it is open.
    pub fn drains(&self) -> bool {
        self.standalone == Standalone::Open
    }

    /// Notes what a server message says: the arrival of the awaited
    /// response, and the version the initialize response negotiated.
    pub fn observe(&mut self, m: &Value) {
        let items: Vec<&Value> = match m {
            Value::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        for it in items {
            if it.get("method").is_some() {
                continue;
            }
            let id = it.get("id");
            if id.is_some() && id == self.awaiting.as_ref() {
                self.awaiting = None;
                let init_id = self.init.as_ref().and_then(|i| i.get("id"));
                if id == init_id {
                    self.protocol = it
                        .pointer("/result/protocolVersion")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
            }
        }
    }

    /// Starting over after a 404: forgets the session and its version
    /// and gives the kept `initialize` to POST again (its answer goes to
    /// [`Session::restart_answer`]). The request in flight stays awaited.
    pub fn restart(&mut self) -> Result<(Value, Call<Post>), Failure> {
        let Some(init) = self.init.clone() else {
            return Err(Failure::NotFoundBeforeInitialize);
        };
        self.id = None;
        self.protocol = None;
        Ok((init, Call::new(Kind::Request { initialize: true })))
    }

    /// Whether `m` answers the `initialize` of a restart (then its
    /// version is the session's).
    pub fn restart_answer(&mut self, m: &Value) -> bool {
        let want = self.init.as_ref().and_then(|i| i.get("id"));
        if m.get("method").is_some() || m.get("id") != want || want.is_none() {
            return false;
        }
        if let Some(v) = m.pointer("/result/protocolVersion") {
            self.protocol = v.as_str().map(str::to_string);
        }
        true
    }

    /// After a restart's initialize: the `notifications/initialized` to
    /// send again, when one was sent before; the new session gets a
    /// standalone stream of its own.
    pub fn initialized_again(&mut self) -> Option<Value> {
        let n = self.initialized.clone()?;
        self.standalone = Standalone::NotAsked;
        Some(n)
    }

    /// Whether to GET the URL once to look for the old transport before
    /// wording `call`'s refusal.
    pub fn looks_for_old_transport(&self, call: &Call<Refused>) -> bool {
        matches!(call.status, 404 | 405)
            && !self.answered
            && self.old == OldTransport::NotLooked
    }

    /// What that GET found: `None` when it did not answer an event
    /// stream; else the data of its `endpoint` event, if one came first.
    pub fn looked_for_old_transport(&mut self, found: Option<Option<&str>>) {
        self.old = match found {
            None => OldTransport::No,
            Some(endpoint) => {
                OldTransport::Yes(endpoint.and_then(old_endpoint))
            }
        };
    }

    /// Leaves the session to the server (a detached task runs in it):
    /// its id, for a later connection to [`Session::resume`], and no
    /// DELETE at close. `None` when there is no session (2026-07-28).
    pub fn detach(&mut self) -> Option<String> {
        self.id.take()
    }

    /// Takes up a session an earlier connection left, in the
    /// handshake-era revision it negotiated, without a handshake.
    pub fn resume(&mut self, id: &str, protocol: &str) {
        self.id = Some(id.to_string());
        self.protocol = Some(protocol.to_string());
        self.answered = true;
    }

    /// The 2026-07-28 protocol version of the latest request, when this
    /// connection speaks that era.
    pub fn modern_version(&self) -> Option<&str> {
        self.modern.as_ref()?.iter().find_map(|(k, v)| {
            k.eq_ignore_ascii_case("mcp-protocol-version")
                .then_some(v.as_str())
        })
    }

    /// Whether a DELETE ends the session when the caller closes.
    pub fn close(&mut self) -> bool {
        self.standalone = Standalone::Ended;
        self.id.is_some()
    }

    /// The failure of a request whose answer held no response and left
    /// no stream to wait on.
    pub fn no_response(&self) -> Failure {
        Failure::NoResponse { status: self.status }
    }

    /// The failure that an HTTP error status is (for any request, reply
    /// or GET); `initialize` when it answered that request.
    fn refusal(&self, head: &Head, initialize: bool) -> Failure {
        let status = head.status;
        if (300..400).contains(&status) {
            let location = head.location.clone().unwrap_or_default();
            return Failure::Redirect { status, location };
        }
        let challenge = head.www_authenticate.clone().unwrap_or_default();
        let scope_error = www_auth::parse(&challenge)
            .iter()
            .any(|c| c.param("error") == Some("insufficient_scope"));
        if status == 401 || (status == 403 && scope_error) {
            return Failure::Unauthorized { status, challenge };
        }
        if matches!(status, 404 | 405)
            && !self.answered
            && let OldTransport::Yes(endpoint) = &self.old
        {
            return Failure::OldTransport {
                status,
                endpoint: endpoint.clone(),
            };
        }
        if status == 404 && !self.answered && head.media_type == "text/html" {
            return Failure::NoEndpoint;
        }
        if initialize && !self.answered && matches!(status, 400 | 404 | 405) {
            return Failure::MaybeOldTransport { status };
        }
        Failure::Status { status }
    }

    /// Takes the initialize answer's session id, checked.
    fn take_session_id(&mut self, head: &Head) -> Result<(), Failure> {
        let Some(bytes) = &head.session_id else { return Ok(()) };
        let ok = !bytes.is_empty()
            && bytes.len() <= MAX_SESSION_ID
            && bytes.iter().all(|b| (0x21..=0x7e).contains(b));
        if !ok {
            return Err(Failure::InvalidSessionId);
        }
        self.id = Some(String::from_utf8_lossy(bytes).into_owned());
        Ok(())
    }
}

/// Where a [`Call`] is.
pub mod state {
    /// Its POST is to be sent.
    #[derive(Debug)]
    pub struct Post;
    /// Its JSON answer is to be read.
    #[derive(Debug)]
    pub struct ReadJson;
    /// The JSON body of its HTTP error is to be read: it may be the
    /// server's JSON-RPC answer.
    #[derive(Debug)]
    pub struct ErrorBody;
    /// It was refused with an HTTP error.
    #[derive(Debug)]
    pub struct Refused;
    /// Its event stream is being read.
    #[derive(Debug)]
    pub struct Streaming;
    /// Its stream ended early and is to be resumed.
    #[derive(Debug)]
    pub struct Resuming;
}
use state::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Request { initialize: bool },
    Other { restartable: bool, standalone_after: bool },
}

/// One message's trip; `S` says where it is (see [`state`]).
#[derive(Debug)]
pub struct Call<S> {
    kind: Kind,
    /// The status of its latest answer.
    status: u16,
    restarted: bool,
    resumes: usize,
    last_event_id: String,
    wait: Duration,
    _state: PhantomData<S>,
}

impl Call<Post> {
    fn new(kind: Kind) -> Call<Post> {
        Call {
            kind,
            status: 0,
            restarted: false,
            resumes: 0,
            last_event_id: String::new(),
            wait: Duration::ZERO,
            _state: PhantomData,
        }
    }

    /// Whether it is a request (a response is awaited).
    pub fn is_request(&self) -> bool {
        matches!(self.kind, Kind::Request { .. })
    }

    /// Whether the standalone stream is due once it went out
    /// (`notifications/initialized`; see [`Session::wants_standalone`]).
    pub fn opens_standalone(&self) -> bool {
        matches!(self.kind, Kind::Other { standalone_after: true, .. })
    }

    /// Its POST was answered with `head`: what to do next.
    pub fn answered(mut self, s: &mut Session, head: &Head) -> Posted {
        self.status = head.status;
        let restartable = match self.kind {
            Kind::Request { initialize } => !initialize,
            Kind::Other { restartable, .. } => restartable,
        };
        if head.status == 404
            && s.id.is_some()
            && restartable
            && !self.restarted
        {
            // The session ended under us: start a new one, then POST
            // again, once.
            self.restarted = true;
            return Posted::Restart(self);
        }
        let Kind::Request { initialize } = self.kind else {
            if head.success() {
                return Posted::Done;
            }
            return Posted::Failed(s.refusal(head, false));
        };
        s.status = head.status;
        if head.status == 404 && self.restarted {
            return Posted::Failed(Failure::NotFoundAgain);
        }
        if !head.success() {
            let refused = matches!(head.status, 401 | 403)
                || (300..400).contains(&head.status);
            if refused || head.media_type != "application/json" {
                return Posted::Refused(self.to());
            }
            return Posted::ErrorBody(self.to());
        }
        s.answered = true;
        if initialize && let Err(f) = s.take_session_id(head) {
            return Posted::Failed(f);
        }
        match head.media_type.as_str() {
            "application/json" => Posted::Json(self.to()),
            "text/event-stream" => Posted::Stream(self.to()),
            _ if head.status == 202 || head.status == 204 => Posted::Nothing,
            "" => Posted::Nothing,
            other => Posted::Failed(Failure::UnexpectedType {
                status: head.status,
                media_type: other.to_string(),
            }),
        }
    }
}

/// What to do after a POST was answered.
#[derive(Debug)]
pub enum Posted {
    /// The session is gone (404): [`Session::restart`], then POST the
    /// same message again with this call.
    Restart(Call<Post>),
    /// Read the JSON body (bounded) and give it to [`Call::body`].
    Json(Call<ReadJson>),
    /// Read the event stream; its end goes to [`Call::ended`].
    Stream(Call<Streaming>),
    /// Read the error's body (bounded) and give it to
    /// [`Call<ErrorBody>::body`].
    ErrorBody(Call<ErrorBody>),
    /// An HTTP error: maybe look for the old transport
    /// ([`Session::looks_for_old_transport`]), then [`Call::failure`].
    Refused(Call<Refused>),
    /// A request answered without a body: its response, if any, comes
    /// on no stream of ours.
    Nothing,
    /// A notification or reply was accepted (read and drop the body).
    Done,
    /// It failed.
    Failed(Failure),
}

impl<S> Call<S> {
    fn to<T>(self) -> Call<T> {
        Call {
            kind: self.kind,
            status: self.status,
            restarted: self.restarted,
            resumes: self.resumes,
            last_event_id: self.last_event_id,
            wait: self.wait,
            _state: PhantomData,
        }
    }

    /// The status of its latest answer.
    pub fn status(&self) -> u16 {
        self.status
    }
}

impl Call<ReadJson> {
    /// The JSON body read: the message it holds, parsed only when its tree
    /// stays within `budget` bytes (see `mcp::parse_message`); the caller
    /// words a refusal for size (the body is valid JSON, just too large).
    pub fn body(self, bytes: &[u8], budget: usize) -> Result<Value, Failure> {
        mcp::parse_message(bytes, budget).map_err(|e| Failure::InvalidJson {
            status: self.status,
            why: e.to_string(),
        })
    }
}

impl Call<ErrorBody> {
    /// The error's body read: a JSON-RPC error that answers the awaited
    /// request is the server's answer whatever the status (a 2026-07-28
    /// server says `-32022` with a 400, an unknown method with a 404);
    /// anything else is the refusal it seemed.
    pub fn body(
        self,
        s: &mut Session,
        bytes: &[u8],
    ) -> Result<Value, Call<Refused>> {
        if let Ok(v) = serde_json::from_slice::<Value>(bytes)
            && v.get("error").is_some_and(Value::is_object)
            && v.get("result").is_none()
            && v.get("id").is_some()
            && v.get("id") == s.awaiting.as_ref()
        {
            s.answered = true;
            return Ok(v);
        }
        Err(self.to())
    }
}

impl Call<Refused> {
    /// What the refusal is, once the old transport was looked for (when
    /// the session wanted that).
    pub fn failure(self, s: &Session, head: &Head) -> Failure {
        let initialize =
            matches!(self.kind, Kind::Request { initialize: true });
        s.refusal(head, initialize)
    }
}

impl Call<Streaming> {
    /// The stream ended, or broke (`end` is `None`), without the
    /// response having arrived yet, or before it did: what next.
    pub fn ended(
        mut self,
        s: &Session,
        end: StreamEnd,
    ) -> Result<Call<Resuming>, Failure> {
        let status = self.status;
        if s.awaiting.is_none() {
            return Err(Failure::StreamEnded { status });
        }
        if s.modern.is_some() {
            // 2026-07-28 has no resumption: a broken stream is a failed
            // request.
            return Err(Failure::EndedBeforeResponse { status, modern: true });
        }
        if !end.saw_id || end.last_event_id.is_empty() {
            return Err(Failure::EndedBeforeResponse {
                status,
                modern: false,
            });
        }
        if self.resumes >= MAX_RESUMES {
            return Err(Failure::TooManyResumes);
        }
        self.resumes += 1;
        self.wait = sse::reconnect_delay(end.retry);
        self.last_event_id = end.last_event_id;
        Ok(self.to())
    }
}

impl Call<Resuming> {
    /// How long to wait before the GET (the server's `retry`, bounded).
    pub fn wait(&self) -> Duration {
        self.wait
    }

    /// The `Last-Event-ID` of the GET.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The GET's own headers, besides [`STREAM_HEADERS`] and the
    /// session's.
    pub fn headers(&self) -> [(&'static str, &str); 1] {
        [("last-event-id", &self.last_event_id)]
    }

    /// The resuming GET was answered with `head`: its stream, or what
    /// failed.
    pub fn answered(
        self,
        s: &Session,
        head: &Head,
    ) -> Result<Call<Streaming>, Failure> {
        if !head.success() {
            return Err(Failure::Resuming(Box::new(s.refusal(head, false))));
        }
        if head.media_type != "text/event-stream" {
            return Err(Failure::ResumeNotStream);
        }
        Ok(self.to())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn a_detached_session_is_not_deleted_and_resumes() {
        let mut s = Session::new();
        s.resume("abc", "2025-11-25");
        let h = s.headers(true);
        assert!(h.contains(&("mcp-session-id".into(), "abc".into())));
        assert!(
            h.contains(&("mcp-protocol-version".into(), "2025-11-25".into()))
        );
        assert_eq!(s.detach().as_deref(), Some("abc"));
        assert!(!s.close(), "a detached session is not deleted");
        assert_eq!(s.detach(), None);
        assert_eq!(s.modern_version(), None);
    }

    use super::*;

    fn init() -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25"}})
    }

    fn initialized() -> Value {
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    }

    fn request(id: i64) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})
    }

    fn json_head(status: u16) -> Head {
        Head::new(status, Some("application/json"))
    }

    fn sse_head() -> Head {
        Head::new(200, Some("text/event-stream; charset=utf-8"))
    }

    fn init_answer() -> Value {
        json!({"jsonrpc": "2.0", "id": 1,
            "result": {"protocolVersion": "2025-06-18"}})
    }

    /// A session initialized with session id `sess-1`, version
    /// 2025-06-18, and `notifications/initialized` sent.
    fn open() -> Session {
        let mut s = Session::new();
        let call = s.send(&init(), None);
        let mut head = json_head(200);
        head.session_id = Some(b"sess-1".to_vec());
        let Posted::Json(read) = call.answered(&mut s, &head) else {
            panic!("json")
        };
        let v = read
            .body(init_answer().to_string().as_bytes(), usize::MAX)
            .unwrap();
        s.observe(&v);
        let n = s.send(&initialized(), None);
        assert!(n.opens_standalone());
        assert!(matches!(
            n.answered(&mut s, &Head::new(202, None)),
            Posted::Done
        ));
        s
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    // ---- Session: headers and the era --------------------------------

    #[test]
    fn a_new_session_sends_no_era_headers() {
        let s = Session::new();
        assert!(s.headers(true).is_empty());
        assert!(!s.has_session() && !s.answered() && !s.modern());
    }

    #[test]
    fn after_initialize_the_session_id_and_version_go_on_every_request() {
        let s = open();
        assert_eq!(
            s.headers(true),
            pairs(&[
                ("mcp-protocol-version", "2025-06-18"),
                ("mcp-session-id", "sess-1")
            ])
        );
        // The closing DELETE's and the GETs' headers alike; without the
        // session only the version.
        assert_eq!(
            s.headers(false),
            pairs(&[("mcp-protocol-version", "2025-06-18")])
        );
    }

    #[test]
    fn an_invalid_session_id_fails_initialize() {
        for bad in
            [&b""[..], b"has space", b"tab\t", &[b'a'; MAX_SESSION_ID + 1]]
        {
            let mut s = Session::new();
            let call = s.send(&init(), None);
            let mut head = json_head(200);
            head.session_id = Some(bad.to_vec());
            assert!(matches!(
                call.answered(&mut s, &head),
                Posted::Failed(Failure::InvalidSessionId)
            ));
            assert!(!s.has_session());
        }
        let mut s = Session::new();
        let call = s.send(&init(), None);
        let mut head = json_head(200);
        head.session_id = Some(vec![b'a'; MAX_SESSION_ID]);
        assert!(matches!(call.answered(&mut s, &head), Posted::Json(_)));
        assert!(s.has_session());
    }

    #[test]
    fn a_session_id_on_another_answer_is_ignored() {
        let mut s = Session::new();
        let call = s.send(&request(3), None);
        let mut head = json_head(200);
        head.session_id = Some(b"late".to_vec());
        assert!(matches!(call.answered(&mut s, &head), Posted::Json(_)));
        assert!(!s.has_session());
    }

    #[test]
    fn modern_requests_carry_their_own_headers_and_no_session() {
        let mut s = open();
        let h = pairs(&[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
        ]);
        let call = s.send(&request(5), Some(&h));
        assert!(call.is_request());
        assert!(s.modern());
        assert_eq!(s.headers(true), h);
    }

    #[test]
    fn a_modern_reply_carries_its_own_version_and_method_only() {
        let mut s = Session::new();
        let h = pairs(&[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
        ]);
        let _ = s.send(&request(5), Some(&h));
        let reply = json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}});
        let call = s.send(&reply, None);
        assert!(!call.is_request());
        assert_eq!(
            s.headers(true),
            pairs(&[("MCP-Protocol-Version", "2026-07-28")])
        );
        let note = json!({"jsonrpc": "2.0",
            "method": "notifications/cancelled", "params": {}});
        let _ = s.send(&note, None);
        assert_eq!(
            s.headers(true),
            pairs(&[
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "notifications/cancelled")
            ])
        );
    }

    #[test]
    fn initialize_leaves_the_modern_wire() {
        let mut s = Session::new();
        let h = pairs(&[("MCP-Protocol-Version", "2026-07-28")]);
        let _ = s.send(&request(1), Some(&h));
        assert!(s.modern());
        let _ = s.send(&init(), None);
        assert!(!s.modern());
        assert!(s.headers(true).is_empty());
    }

    // ---- Call<Post>: what an answer means -----------------------------

    #[test]
    fn a_request_answered_with_json_an_stream_or_nothing() {
        let mut s = open();
        assert!(matches!(
            s.send(&request(2), None).answered(&mut s, &json_head(200)),
            Posted::Json(_)
        ));
        assert!(matches!(
            s.send(&request(3), None).answered(&mut s, &sse_head()),
            Posted::Stream(_)
        ));
        for head in [Head::new(202, Some("text/plain")), Head::new(200, None)]
        {
            assert!(matches!(
                s.send(&request(4), None).answered(&mut s, &head),
                Posted::Nothing
            ));
        }
        assert_eq!(s.no_response(), Failure::NoResponse { status: 200 });
        let html = Head::new(200, Some("text/html"));
        assert_eq!(
            failed(s.send(&request(5), None).answered(&mut s, &html)),
            Failure::UnexpectedType {
                status: 200,
                media_type: "text/html".into()
            }
        );
    }

    fn failed(p: Posted) -> Failure {
        match p {
            Posted::Failed(f) => f,
            other => panic!("not failed: {other:?}"),
        }
    }

    #[test]
    fn invalid_json_keeps_the_status() {
        let mut s = Session::new();
        let Posted::Json(read) =
            s.send(&request(1), None).answered(&mut s, &json_head(200))
        else {
            panic!()
        };
        let f = read.body(b"<html>", usize::MAX).unwrap_err();
        assert!(matches!(f, Failure::InvalidJson { status: 200, .. }));
        assert_eq!(f.http_status(), Some(200));
    }

    #[test]
    fn a_404_in_a_session_restarts_once_then_fails() {
        let mut s = open();
        let call = s.send(&request(2), None);
        let Posted::Restart(again) = call.answered(&mut s, &json_head(404))
        else {
            panic!("restart")
        };
        let (init_msg, init_call) = s.restart().unwrap();
        assert_eq!(init_msg, init());
        assert!(!s.has_session());
        // Nothing stale while starting over.
        assert!(s.headers(true).is_empty());
        let mut head = json_head(200);
        head.session_id = Some(b"sess-2".to_vec());
        assert!(matches!(init_call.answered(&mut s, &head), Posted::Json(_)));
        assert!(s.restart_answer(&init_answer()));
        assert!(!s.restart_answer(&json!({"jsonrpc": "2.0", "id": 2})));
        assert_eq!(s.initialized_again(), Some(initialized()));
        assert!(s.wants_standalone());
        assert_eq!(
            s.headers(true),
            pairs(&[
                ("mcp-protocol-version", "2025-06-18"),
                ("mcp-session-id", "sess-2")
            ])
        );
        assert_eq!(
            failed(again.answered(&mut s, &json_head(404))),
            Failure::NotFoundAgain
        );
    }

    #[test]
    fn a_404_without_a_session_or_to_initialize_is_no_restart() {
        let mut s = Session::new();
        let f = failed_or_refused(
            &mut s,
            request(1),
            Head::new(404, Some("text/plain")),
        );
        assert_eq!(f, Failure::Status { status: 404 });
        let mut s = open();
        let call = s.send(&init(), None);
        assert!(matches!(
            call.answered(&mut s, &json_head(404)),
            Posted::ErrorBody(_)
        ));
    }

    /// A refused POST of `m`'s failure, without looking for the old
    /// transport.
    fn failed_or_refused(s: &mut Session, m: Value, head: Head) -> Failure {
        let call = s.send(&m, None);
        match call.answered(s, &head) {
            Posted::Refused(r) => r.failure(s, &head),
            Posted::Failed(f) => f,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_restart_before_initialize_fails() {
        let mut s = Session::new();
        assert_eq!(
            s.restart().unwrap_err(),
            Failure::NotFoundBeforeInitialize
        );
    }

    #[test]
    fn a_notification_is_sent_again_after_a_restart_but_initialized_is_not() {
        let mut s = open();
        let note = json!({"jsonrpc": "2.0",
            "method": "notifications/cancelled", "params": {}});
        assert!(matches!(
            s.send(&note, None).answered(&mut s, &Head::new(404, None)),
            Posted::Restart(_)
        ));
        let mut s = open();
        let f = failed(
            s.send(&initialized(), None)
                .answered(&mut s, &Head::new(404, None)),
        );
        assert_eq!(f, Failure::Status { status: 404 });
        // A notification refused otherwise: the status.
        let f = failed(
            s.send(&note, None).answered(&mut s, &Head::new(500, None)),
        );
        assert_eq!(f, Failure::Status { status: 500 });
    }

    // ---- Call<ErrorBody> and Call<Refused> ---------------------------------

    #[test]
    fn a_json_rpc_error_answering_the_request_is_the_answer_whatever_the_status()
     {
        let mut s = Session::new();
        let Posted::ErrorBody(c) =
            s.send(&request(7), None).answered(&mut s, &json_head(400))
        else {
            panic!()
        };
        let body = json!({"jsonrpc": "2.0", "id": 7,
            "error": {"code": -32022, "message": "no"}});
        let v = c.body(&mut s, body.to_string().as_bytes()).unwrap();
        assert_eq!(v, body);
        assert!(s.answered());
    }

    #[test]
    fn an_error_body_for_no_request_of_ours_is_a_refusal() {
        let mut s = Session::new();
        let head = json_head(500);
        let Posted::ErrorBody(c) =
            s.send(&request(7), None).answered(&mut s, &head)
        else {
            panic!()
        };
        // git-mcp-server's answer to a 2026-07-28 probe.
        let body = br#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"x"},"id":null}"#;
        let refused = c.body(&mut s, body).unwrap_err();
        assert!(!s.looks_for_old_transport(&refused));
        let f = refused.failure(&s, &head);
        assert_eq!(f, Failure::Status { status: 500 });
        assert_eq!(f.http_status(), Some(500));
        assert!(!s.answered());
    }

    #[test]
    fn redirects_and_credentials_are_refusals_no_era_avoids() {
        let mut s = Session::new();
        let mut head = Head::new(307, Some("text/plain"));
        head.location = Some("/elsewhere".into());
        let f = failed_or_refused(&mut s, request(1), head);
        assert_eq!(
            f,
            Failure::Redirect { status: 307, location: "/elsewhere".into() }
        );
        assert_eq!(f.http_status(), None);
        let mut head = json_head(401);
        head.www_authenticate = Some("Bearer realm=\"x\"".into());
        let f = failed_or_refused(&mut s, request(1), head);
        assert!(matches!(f, Failure::Unauthorized { status: 401, .. }));
        assert_eq!(f.http_status(), None);
        // A 403 is a credential matter only with insufficient_scope.
        let mut head = Head::new(403, Some("text/plain"));
        head.www_authenticate =
            Some("Bearer error=\"insufficient_scope\"".into());
        let f = failed_or_refused(&mut s, request(1), head);
        assert!(matches!(f, Failure::Unauthorized { status: 403, .. }));
        let head = Head::new(403, Some("text/plain"));
        let f = failed_or_refused(&mut s, request(1), head);
        assert_eq!(f, Failure::Status { status: 403 });
    }

    #[test]
    fn an_html_404_before_any_answer_is_no_endpoint() {
        let mut s = Session::new();
        let head = Head::new(404, Some("text/html; charset=utf-8"));
        let Posted::Refused(r) =
            s.send(&request(1), None).answered(&mut s, &head)
        else {
            panic!()
        };
        assert!(s.looks_for_old_transport(&r));
        s.looked_for_old_transport(None);
        assert_eq!(r.failure(&s, &head), Failure::NoEndpoint);
        // Once something answered, a 404 page is only a status.
        let mut s = open();
        let head = Head::new(404, Some("text/html"));
        let Posted::Refused(r) = s.send(&init(), None).answered(&mut s, &head)
        else {
            panic!()
        };
        assert!(!s.looks_for_old_transport(&r));
        assert_eq!(r.failure(&s, &head), Failure::Status { status: 404 });
    }

    #[test]
    fn initialize_refused_before_any_answer_may_be_the_old_transport() {
        for status in [400, 404, 405] {
            let mut s = Session::new();
            let head = Head::new(status, Some("text/plain"));
            let Posted::Refused(r) =
                s.send(&init(), None).answered(&mut s, &head)
            else {
                panic!()
            };
            if s.looks_for_old_transport(&r) {
                s.looked_for_old_transport(None);
            }
            let f = r.failure(&s, &head);
            assert_eq!(f, Failure::MaybeOldTransport { status });
            assert!(f.shows_body());
        }
    }

    #[test]
    fn a_get_that_streams_names_the_old_transport_once() {
        let mut s = Session::new();
        let head = Head::new(405, Some("text/plain"));
        let Posted::Refused(r) =
            s.send(&request(1), None).answered(&mut s, &head)
        else {
            panic!()
        };
        assert!(s.looks_for_old_transport(&r));
        s.looked_for_old_transport(Some(Some("/messages?sessionId=secret")));
        assert_eq!(
            r.failure(&s, &head),
            Failure::OldTransport {
                status: 405,
                endpoint: Some("/messages".into())
            }
        );
        // One look per connection.
        let Posted::Refused(r) = s.send(&init(), None).answered(&mut s, &head)
        else {
            panic!()
        };
        assert!(!s.looks_for_old_transport(&r));
        assert!(matches!(r.failure(&s, &head), Failure::OldTransport { .. }));
        // A 400 is no sign of it.
        let head = Head::new(400, Some("text/plain"));
        let Posted::Refused(r) = s.send(&init(), None).answered(&mut s, &head)
        else {
            panic!()
        };
        assert!(!s.looks_for_old_transport(&r));
    }

    #[test]
    fn the_old_endpoint_is_a_path_without_its_query() {
        assert_eq!(
            old_endpoint("/messages?sessionId=abc"),
            Some("/messages".into())
        );
        assert_eq!(old_endpoint(" /m#x "), Some("/m".into()));
        assert_eq!(old_endpoint("?sessionId=abc"), None);
        let p = old_endpoint("/a\u{1b}[31m").unwrap();
        assert!(!p.contains('\u{1b}'), "{p}");
        let long = "/x".repeat(200);
        assert!(old_endpoint(&long).unwrap().len() < long.len());
        let mut s = Session::new();
        s.looked_for_old_transport(Some(None));
        assert_eq!(s.old, OldTransport::Yes(None));
    }

    // ---- the standalone stream --------------------------------------------

    #[test]
    fn the_standalone_stream_is_asked_once_per_session_in_the_handshake_era() {
        let mut s = open();
        assert!(s.wants_standalone());
        s.standalone_asked(false);
        assert!(!s.wants_standalone());
        assert!(!s.drains());
        let mut s = open();
        s.standalone_asked(true);
        assert!(s.drains());
        s.standalone_ended();
        assert!(!s.drains());
        assert_eq!(s.standalone(), Standalone::Ended);
        assert!(!s.wants_standalone());
    }

    #[test]
    fn only_a_200_event_stream_opens_the_standalone_stream() {
        for (head, open) in [
            (Some(sse_head()), true),
            (Some(Head::new(405, None)), false),
            (Some(json_head(200)), false),
            (Some(Head::new(201, Some("text/event-stream"))), false),
            (None, false),
        ] {
            let mut s = super::tests::open();
            assert_eq!(s.standalone_answered(head.as_ref()), open);
            assert_eq!(s.drains(), open);
            assert!(!s.wants_standalone());
        }
    }

    #[test]
    fn no_standalone_stream_without_a_session_or_on_the_modern_wire() {
        let s = Session::new();
        assert!(!s.wants_standalone());
        let mut s = open();
        let h = pairs(&[("MCP-Protocol-Version", "2026-07-28")]);
        let _ = s.send(&request(9), Some(&h));
        assert!(!s.wants_standalone());
    }

    #[test]
    fn closing_deletes_a_session_and_stops_draining() {
        let mut s = open();
        s.standalone_asked(true);
        assert!(s.close());
        assert!(!s.drains());
        assert!(!Session::new().close());
    }

    // ---- Call<Streaming> and Call<Resuming> ------------------------------

    fn streaming(s: &mut Session, id: i64) -> Call<Streaming> {
        match s.send(&request(id), None).answered(s, &sse_head()) {
            Posted::Stream(c) => c,
            other => panic!("{other:?}"),
        }
    }

    fn end(id: &str, retry: Option<u64>) -> StreamEnd {
        StreamEnd { last_event_id: id.into(), saw_id: !id.is_empty(), retry }
    }

    #[test]
    fn a_stream_ending_early_is_resumed_after_the_bounded_retry() {
        let mut s = open();
        let c = streaming(&mut s, 2);
        let r = c.ended(&s, end("7", Some(0))).unwrap();
        assert_eq!(r.last_event_id(), "7");
        assert_eq!(r.headers(), [("last-event-id", "7")]);
        // retry: 0 cannot make the client spin.
        assert_eq!(r.wait(), sse::reconnect_delay(Some(0)));
        assert!(r.wait() > Duration::ZERO);
        let r2 = streaming(&mut s, 3).ended(&s, end("7", None)).unwrap();
        assert_eq!(r2.wait(), sse::reconnect_delay(None));
        let c = r.answered(&s, &sse_head()).unwrap();
        assert_eq!(c.status(), 200);
    }

    #[test]
    fn resumption_stops_after_max_resumes() {
        let mut s = open();
        let mut c = streaming(&mut s, 2);
        for _ in 0..MAX_RESUMES {
            let r = c.ended(&s, end("7", Some(100))).unwrap();
            c = r.answered(&s, &sse_head()).unwrap();
        }
        assert_eq!(
            c.ended(&s, end("7", Some(100))).unwrap_err(),
            Failure::TooManyResumes
        );
    }

    #[test]
    fn a_stream_without_ids_or_on_the_modern_wire_is_not_resumed() {
        let mut s = open();
        let f = streaming(&mut s, 2).ended(&s, end("", None)).unwrap_err();
        assert_eq!(
            f,
            Failure::EndedBeforeResponse { status: 200, modern: false }
        );
        assert_eq!(f.http_status(), Some(200));
        // An id reset to empty by the last event: nothing to resume from.
        let e = StreamEnd {
            last_event_id: String::new(),
            saw_id: true,
            retry: None,
        };
        assert!(streaming(&mut s, 3).ended(&s, e).is_err());
        let h = pairs(&[("MCP-Protocol-Version", "2026-07-28")]);
        let c = match s
            .send(&request(4), Some(&h))
            .answered(&mut s, &sse_head())
        {
            Posted::Stream(c) => c,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            c.ended(&s, end("7", None)).unwrap_err(),
            Failure::EndedBeforeResponse { status: 200, modern: true }
        );
    }

    #[test]
    fn a_stream_ending_after_its_response_is_no_resumption() {
        let mut s = open();
        let c = streaming(&mut s, 2);
        s.observe(&json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
        assert_eq!(
            c.ended(&s, end("7", None)).unwrap_err(),
            Failure::StreamEnded { status: 200 }
        );
    }

    #[test]
    fn a_refused_or_odd_resumption_fails() {
        let mut s = open();
        let r = streaming(&mut s, 2).ended(&s, end("7", None)).unwrap();
        assert_eq!(
            r.answered(&s, &Head::new(500, Some("text/plain"))).unwrap_err(),
            Failure::Resuming(Box::new(Failure::Status { status: 500 }))
        );
        let r = streaming(&mut s, 3).ended(&s, end("7", None)).unwrap();
        assert_eq!(
            r.answered(&s, &json_head(200)).unwrap_err(),
            Failure::ResumeNotStream
        );
    }

    // ---- observing responses ------------------------------------------------

    #[test]
    fn only_the_awaited_initialize_response_sets_the_version() {
        let mut s = Session::new();
        let _ = s.send(&init(), None);
        // A server request with the same id is not the response.
        s.observe(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        assert!(s.headers(true).is_empty());
        // A batch holding it is.
        s.observe(&json!([init_answer()]));
        assert_eq!(
            s.headers(true),
            pairs(&[("mcp-protocol-version", "2025-06-18")])
        );
        // A later response to another request changes nothing.
        let _ = s.send(&request(2), None);
        s.observe(&json!({"jsonrpc": "2.0", "id": 2,
            "result": {"protocolVersion": "1999-01-01"}}));
        assert_eq!(
            s.headers(true),
            pairs(&[("mcp-protocol-version", "2025-06-18")])
        );
    }

    #[test]
    fn debug_never_shows_the_session_id() {
        let s = open();
        let d = format!("{s:?}");
        assert!(!d.contains("sess-1"), "{d}");
        assert!(d.contains("(set)"), "{d}");
    }

    #[test]
    fn only_message_events_with_data_carry_messages() {
        let ev = |event: &str, data: &str| sse::Event {
            event: event.into(),
            data: data.into(),
            id: String::new(),
        };
        assert!(carries_message(&ev("message", "{}")));
        assert!(!carries_message(&ev("message", " \n")));
        assert!(!carries_message(&ev("ping", "{}")));
        assert!(!carries_message(&ev(OLD_ENDPOINT_EVENT, "/messages")));
    }

    #[test]
    fn cancellation_is_a_notification_only_in_the_handshake_era() {
        let mut s = open();
        assert!(s.cancels_by_notification());
        let h = pairs(&[("MCP-Protocol-Version", "2026-07-28")]);
        let _ = s.send(&request(4), Some(&h));
        assert!(!s.cancels_by_notification());
    }

    #[test]
    fn media_types_are_compared_without_parameters_or_case() {
        assert_eq!(
            media_type("Text/Event-Stream; charset=utf-8"),
            "text/event-stream"
        );
        assert_eq!(media_type(""), "");
        assert_eq!(Head::new(200, None).media_type, "");
    }
}
