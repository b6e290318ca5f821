//! Incremental Server-Sent Events parsing, as the streamable HTTP
//! transport receives it. This module owns turning the raw bytes of an
//! `text/event-stream` body into events, exactly as the WHATWG HTML "event
//! stream interpretation" (§9.2.6) describes, plus the stream state that
//! resuming needs (the last event id and the `retry` delay). It is hand
//! rolled and std-only so that its behaviour on hostile input is ours to
//! define: it never panics, treats invalid UTF-8 as an error and bounds the
//! memory a server can make it hold, with identical results however the
//! body happens to be split into chunks.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::time::Duration;

/// The UTF-8 encoding of U+FEFF, which the standard drops once from the
/// very start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The largest chunk [`EventReader`] asks its reader for, so that one read
/// never makes it hold more than this on top of the parser's own buffers.
const READ_CHUNK: usize = 8 * 1024;

/// The shortest wait before reconnecting, whatever `retry` says.
pub const MIN_RETRY: Duration = Duration::from_millis(100);
/// The wait before reconnecting when the server sent no `retry`.
pub const DEFAULT_RETRY: Duration = Duration::from_millis(1000);
/// The longest wait before reconnecting, whatever `retry` says. (A wait
/// that would not end before the request's deadline is not begun at all.)
pub const MAX_RETRY: Duration = Duration::from_secs(30);

/// How long to wait before reconnecting, given a stream's `retry` value
/// ([`Parser::retry`]): bounded to [`MIN_RETRY`]..=[`MAX_RETRY`], or
/// [`DEFAULT_RETRY`] when the server sent none. The floor keeps a server
/// that sends `retry: 0` (and ends its stream at once) from making the
/// client reconnect in a tight loop.
pub fn reconnect_delay(retry: Option<u64>) -> Duration {
    retry
        .map_or(DEFAULT_RETRY, Duration::from_millis)
        .clamp(MIN_RETRY, MAX_RETRY)
}

/// Bounds on what one stream may make the parser buffer, so that a hostile
/// or broken server cannot exhaust memory with a line or an event that
/// never ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes in one line, its line end excluded (a leading BOM on the
    /// first line counts). A line is refused as soon as more than this is
    /// buffered, without waiting for its end.
    pub max_line: usize,
    /// Most bytes of data in one event, as it would be emitted (the `\n`
    /// joining its `data` lines counted, the final one not).
    pub max_event: usize,
}

impl Default for Limits {
    /// Generous for any real MCP message while still bounding memory: 1 MiB
    /// per line and 16 MiB per event.
    fn default() -> Self {
        Limits { max_line: 1024 * 1024, max_event: 16 * 1024 * 1024 }
    }
}

/// One dispatched event. Events of every type are reported, not only
/// `message`, so that the parser stays faithful to the standard and the
/// caller decides what it ignores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The event type: the last `event` field, or `message` when none was
    /// given.
    pub event: String,
    /// The `data` lines joined with `\n`.
    pub data: String,
    /// The stream's last event id at dispatch time, which is what a client
    /// sends back as `Last-Event-ID` to resume after this event.
    pub id: String,
}

/// Why a stream was refused. Once a parser has returned one, it keeps
/// returning it: the stream's framing can no longer be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A complete line was not valid UTF-8; `line` counts from 1.
    InvalidUtf8 {
        /// The number of the line.
        line: u64,
    },
    /// A line grew beyond [`Limits::max_line`].
    LineTooLong {
        /// The bound, in bytes.
        limit: usize,
    },
    /// An event's data grew beyond [`Limits::max_event`].
    EventTooLarge {
        /// The bound, in bytes.
        limit: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidUtf8 { line } => {
                write!(f, "invalid utf-8 in event stream line {line}")
            }
            Error::LineTooLong { limit } => {
                write!(f, "event stream line longer than {limit} bytes")
            }
            Error::EventTooLarge { limit } => {
                write!(f, "event stream event data larger than {limit} bytes")
            }
        }
    }
}

impl std::error::Error for Error {}

/// The incremental parser: it is fed the body chunk by chunk, as it
/// arrives, and keeps just enough state between chunks (an unfinished line,
/// a CR whose LF may come next, the event being built) for the result not
/// to depend on where the chunks were split.
#[derive(Debug)]
pub struct Parser {
    limits: Limits,
    /// Bytes of the line not yet ended.
    line: Vec<u8>,
    /// Lines completed so far, to name the bad one in errors.
    lines: u64,
    /// The previous chunk ended with a CR, so an LF opening the next one
    /// belongs to that same line end.
    pending_cr: bool,
    /// The data buffer of the event being built.
    data: String,
    /// The event type buffer.
    event_type: String,
    /// The last-event-id buffer, kept across events as the standard says.
    id_buffer: String,
    /// The stream's last event id, set from the buffer on every dispatch.
    last_event_id: String,
    retry: Option<u64>,
    saw_id: bool,
    /// The error that stopped the stream, returned again on later feeds.
    failed: Option<Error>,
}

impl Parser {
    /// A parser at the start of a stream, so a leading BOM is still
    /// expected.
    pub fn new(limits: Limits) -> Parser {
        Parser {
            limits,
            line: Vec::new(),
            lines: 0,
            pending_cr: false,
            data: String::new(),
            event_type: String::new(),
            id_buffer: String::new(),
            last_event_id: String::new(),
            retry: None,
            saw_id: false,
            failed: None,
        }
    }

    /// Feeds one chunk; pushes every event completed by it onto `out`.
    ///
    /// Events completed before an error are still pushed, and after an
    /// error every later call returns that same error.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        out: &mut Vec<Event>,
    ) -> Result<(), Error> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        let result = self.feed_inner(chunk, out);
        if let Err(err) = &result {
            self.failed = Some(err.clone());
        }
        result
    }

    /// The stream's last event id ("" when none), updated on every
    /// dispatch.
    pub fn last_event_id(&self) -> &str {
        &self.last_event_id
    }

    /// The last valid `retry` value in milliseconds, if any was seen.
    pub fn retry(&self) -> Option<u64> {
        self.retry
    }

    /// True once any dispatch has set a non-empty last event id, that is
    /// once the server has made the stream resumable.
    pub fn saw_id(&self) -> bool {
        self.saw_id
    }

    fn feed_inner(
        &mut self,
        chunk: &[u8],
        out: &mut Vec<Event>,
    ) -> Result<(), Error> {
        let mut rest = chunk;
        if self.pending_cr
            && let Some((&first, tail)) = rest.split_first()
        {
            self.pending_cr = false;
            if first == b'\n' {
                rest = tail;
            }
        }
        while !rest.is_empty() {
            let Some(end) =
                rest.iter().position(|&b| b == b'\r' || b == b'\n')
            else {
                return self.append(rest);
            };
            let (part, from_end) = rest.split_at(end);
            self.append(part)?;
            let Some((&terminator, tail)) = from_end.split_first() else {
                break;
            };
            rest = tail;
            if terminator == b'\r' {
                match rest.split_first() {
                    Some((&b'\n', tail)) => rest = tail,
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
            self.finish_line(out)?;
        }
        Ok(())
    }

    /// Adds bytes to the unfinished line, refusing them before they are
    /// stored if they would make it too long.
    fn append(&mut self, bytes: &[u8]) -> Result<(), Error> {
        let len = self.line.len().saturating_add(bytes.len());
        if len > self.limits.max_line {
            return Err(Error::LineTooLong { limit: self.limits.max_line });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    /// Interprets the line just ended. Only whole lines are decoded, which
    /// is what lets a character be split across chunks.
    fn finish_line(&mut self, out: &mut Vec<Event>) -> Result<(), Error> {
        let mut line = std::mem::take(&mut self.line);
        let result = self.process_line(&line, out);
        line.clear();
        self.line = line;
        result
    }

    fn process_line(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<Event>,
    ) -> Result<(), Error> {
        let first = self.lines == 0;
        self.lines = self.lines.saturating_add(1);
        let bytes = match bytes.strip_prefix(BOM) {
            Some(rest) if first => rest,
            _ => bytes,
        };
        let line = std::str::from_utf8(bytes)
            .map_err(|_| Error::InvalidUtf8 { line: self.lines })?;
        if line.is_empty() {
            self.dispatch(out);
        } else if line.starts_with(':') {
            // A comment, which servers send as a keep-alive.
        } else if let Some((name, value)) = line.split_once(':') {
            let value = value.strip_prefix(' ').unwrap_or(value);
            self.field(name, value)?;
        } else {
            self.field(line, "")?;
        }
        Ok(())
    }

    fn field(&mut self, name: &str, value: &str) -> Result<(), Error> {
        match name {
            "event" => {
                self.event_type.clear();
                self.event_type.push_str(value);
            }
            "data" => {
                let len = self.data.len().saturating_add(value.len());
                if len > self.limits.max_event {
                    return Err(Error::EventTooLarge {
                        limit: self.limits.max_event,
                    });
                }
                self.data.push_str(value);
                self.data.push('\n');
            }
            "id" if !value.contains('\0') => {
                self.id_buffer.clear();
                self.id_buffer.push_str(value);
            }
            "retry" if is_digits(value) => {
                // Too large for u64: ignored like any other bad value.
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Ends the event on a blank line. The last event id is updated even
    /// when nothing is emitted, which is how an MCP priming event (an `id`
    /// with no `data` line) makes a stream resumable. A priming event that
    /// does carry an empty `data:` line is, per the standard, emitted with
    /// empty data, which callers skip.
    fn dispatch(&mut self, out: &mut Vec<Event>) {
        self.last_event_id.clone_from(&self.id_buffer);
        if !self.last_event_id.is_empty() {
            self.saw_id = true;
        }
        if self.data.is_empty() {
            self.event_type.clear();
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        if data.ends_with('\n') {
            data.pop();
        }
        let event = if self.event_type.is_empty() {
            String::from("message")
        } else {
            std::mem::take(&mut self.event_type)
        };
        out.push(Event { event, data, id: self.last_event_id.clone() });
    }
}

/// Whether a `retry` value is one the standard accepts: ASCII digits
/// only, at least one (`u64::from_str` alone would also take a `+`).
fn is_digits(value: &str) -> bool {
    !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit())
}

/// Pulls events from a reader (e.g. an HTTP body), reading in chunks of at
/// most 8 KiB, for callers that want one event at a time rather than
/// feeding chunks themselves.
#[derive(Debug)]
pub struct EventReader<R> {
    reader: R,
    parser: Parser,
    buf: Vec<u8>,
    /// Events parsed but not yet handed out.
    ready: VecDeque<Event>,
    scratch: Vec<Event>,
    /// The parser refused the stream; reported once `ready` is drained.
    error: Option<Error>,
    eof: bool,
}

impl<R: io::Read> EventReader<R> {
    /// Reads `reader` from the start of its event stream.
    pub fn new(reader: R, limits: Limits) -> Self {
        EventReader {
            reader,
            parser: Parser::new(limits),
            buf: vec![0; READ_CHUNK],
            ready: VecDeque::new(),
            scratch: Vec::new(),
            error: None,
            eof: false,
        }
    }

    /// Next event, Ok(None) at EOF (partial event discarded). Parser errors
    /// come back as io::Error of kind InvalidData wrapping the sse::Error,
    /// after the events completed before the bad input, and again on every
    /// later call.
    pub fn next_event(&mut self) -> io::Result<Option<Event>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Ok(Some(event));
            }
            if let Some(err) = &self.error {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    err.clone(),
                ));
            }
            if self.eof {
                return Ok(None);
            }
            let n = match self.reader.read(&mut self.buf) {
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {
                    continue;
                }
                Err(err) => return Err(err),
            };
            if n == 0 {
                self.eof = true;
                continue;
            }
            let Some(chunk) = self.buf.get(..n) else {
                return Err(io::Error::other(
                    "reader reported more bytes than it was given room for",
                ));
            };
            let result = self.parser.feed(chunk, &mut self.scratch);
            self.ready.extend(self.scratch.drain(..));
            if let Err(err) = result {
                self.error = Some(err);
            }
        }
    }

    /// The parser, for the stream state (last event id, `retry`) a caller
    /// needs to reconnect.
    pub fn parser(&self) -> &Parser {
        &self.parser
    }
}

/// One `message` event carrying `data` (what a server writes; `serve`'s
/// HTTP front): each line of the data on its own `data:` line, so that
/// [`Parser`] gives back exactly `data`. CR and CRLF in the data are
/// written as LF, as the parser would read them.
pub fn encode(data: &str) -> String {
    let data = data.replace("\r\n", "\n").replace('\r', "\n");
    let mut out = String::with_capacity(data.len() + 16);
    out.push_str("event: message\n");
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything observable after feeding a stream.
    #[derive(Debug, PartialEq)]
    struct Outcome {
        events: Vec<Event>,
        error: Option<Error>,
        last_event_id: String,
        retry: Option<u64>,
        saw_id: bool,
    }

    fn feed_chunks(chunks: &[&[u8]], limits: Limits) -> Outcome {
        let mut parser = Parser::new(limits);
        let mut events = Vec::new();
        let mut error = None;
        for chunk in chunks {
            if let Err(err) = parser.feed(chunk, &mut events) {
                error = Some(err);
                break;
            }
        }
        Outcome {
            events,
            error,
            last_event_id: parser.last_event_id().to_owned(),
            retry: parser.retry(),
            saw_id: parser.saw_id(),
        }
    }

    fn parse(input: &[u8]) -> Outcome {
        feed_chunks(&[input], Limits::default())
    }

    fn events(input: &str) -> Vec<Event> {
        let outcome = parse(input.as_bytes());
        assert_eq!(outcome.error, None);
        outcome.events
    }

    fn ev(event: &str, data: &str, id: &str) -> Event {
        Event { event: event.into(), data: data.into(), id: id.into() }
    }

    #[test]
    fn default_limits() {
        let limits = Limits::default();
        assert_eq!(limits.max_line, 1 << 20);
        assert_eq!(limits.max_event, 16 << 20);
    }

    #[test]
    fn blank_line_dispatches_message() {
        assert_eq!(events("data: hi\n\n"), [ev("message", "hi", "")]);
        assert_eq!(
            events("data: a\n\ndata: b\n\n"),
            [ev("message", "a", ""), ev("message", "b", "")]
        );
    }

    #[test]
    fn leading_bom_dropped_once() {
        assert_eq!(events("\u{feff}data: x\n\n"), [ev("message", "x", "")]);
        // A second BOM is part of the field name, which is then unknown.
        assert_eq!(events("\u{feff}\u{feff}data: x\n\n"), []);
        // Only at the very start of the stream.
        assert_eq!(events("\n\u{feff}data: x\n\n"), []);
        let split = feed_chunks(
            &[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"],
            Limits::default(),
        );
        assert_eq!(split.events, [ev("message", "x", "")]);
    }

    #[test]
    fn line_ends_cr_lf_crlf() {
        let want = [ev("message", "a\nb\nc", "")];
        assert_eq!(events("data: a\ndata: b\ndata: c\n\n"), want);
        assert_eq!(events("data: a\rdata: b\rdata: c\r\r"), want);
        assert_eq!(events("data: a\r\ndata: b\r\ndata: c\r\n\r\n"), want);
        assert_eq!(events("data: a\rdata: b\r\ndata: c\n\r"), want);
        // CRLF split across chunks is one line end, not a blank line.
        let split = feed_chunks(
            &[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"],
            Limits::default(),
        );
        assert_eq!(split.events, [ev("message", "a\nb", "")]);
        // An empty chunk between CR and LF keeps the CR pending.
        let split =
            feed_chunks(&[b"data: a\r", b"", b"\n", b"\n"], Limits::default());
        assert_eq!(split.events, [ev("message", "a", "")]);
    }

    #[test]
    fn comments_ignored() {
        assert_eq!(
            events(": keep-alive\ndata: x\n:\n: data: y\n\n"),
            [ev("message", "x", "")]
        );
        assert_eq!(events(": only a comment\n\n"), []);
    }

    #[test]
    fn colon_split_removes_one_space() {
        assert_eq!(events("data:x\n\n"), [ev("message", "x", "")]);
        assert_eq!(events("data: x\n\n"), [ev("message", "x", "")]);
        assert_eq!(events("data:  x\n\n"), [ev("message", " x", "")]);
        assert_eq!(events("data: a:b: c\n\n"), [ev("message", "a:b: c", "")]);
        assert_eq!(events("data:\tx\n\n"), [ev("message", "\tx", "")]);
    }

    #[test]
    fn field_without_colon_has_empty_value() {
        // `data` alone appends an empty line.
        assert_eq!(events("data\ndata\n\n"), [ev("message", "\n", "")]);
        assert_eq!(events("data: a\ndata\n\n"), [ev("message", "a\n", "")]);
        // `data` alone once gives an empty data buffer plus "\n", which
        // is dispatched as an empty message.
        assert_eq!(events("data\n\n"), [ev("message", "", "")]);
        // `event` alone resets the type.
        assert_eq!(
            events("event: ping\nevent\ndata: x\n\n"),
            [ev("message", "x", "")]
        );
    }

    #[test]
    fn multi_line_data_joined() {
        assert_eq!(
            events("data: {\ndata:   \"a\": 1\ndata: }\n\n"),
            [ev("message", "{\n  \"a\": 1\n}", "")]
        );
    }

    #[test]
    fn event_type() {
        assert_eq!(
            events("event: ping\ndata: 1\n\ndata: 2\n\n"),
            [ev("ping", "1", ""), ev("message", "2", "")]
        );
        assert_eq!(
            events("event: a\nevent: b\ndata: x\n\n"),
            [ev("b", "x", "")]
        );
        // An empty type means the default.
        assert_eq!(events("event:\ndata: x\n\n"), [ev("message", "x", "")]);
        // A type without data is forgotten at the blank line.
        assert_eq!(
            events("event: ping\n\ndata: x\n\n"),
            [ev("message", "x", "")]
        );
    }

    #[test]
    fn id_kept_across_events() {
        let outcome = parse(b"id: 1\ndata: a\n\ndata: b\n\n");
        assert_eq!(
            outcome.events,
            [ev("message", "a", "1"), ev("message", "b", "1")]
        );
        assert_eq!(outcome.last_event_id, "1");
        assert!(outcome.saw_id);
    }

    #[test]
    fn id_with_nul_ignored() {
        let outcome = parse(b"id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n");
        assert_eq!(
            outcome.events,
            [ev("message", "a", "1"), ev("message", "b", "1")]
        );
        assert_eq!(outcome.last_event_id, "1");
    }

    #[test]
    fn empty_id_resets() {
        let outcome = parse(b"id: 7\ndata: a\n\nid\ndata: b\n\n");
        assert_eq!(
            outcome.events,
            [ev("message", "a", "7"), ev("message", "b", "")]
        );
        assert_eq!(outcome.last_event_id, "");
        // saw_id stays true: the stream was made resumable once.
        assert!(outcome.saw_id);
        let outcome = parse(b"id: 7\ndata: a\n\nid:\n\n");
        assert_eq!(outcome.last_event_id, "");
    }

    #[test]
    fn id_only_applies_at_dispatch() {
        let outcome = parse(b"data: a\n\nid: 3\n");
        assert_eq!(outcome.last_event_id, "");
        assert!(!outcome.saw_id);
    }

    #[test]
    fn reconnect_delay_is_bounded() {
        let delay = |text: &[u8]| reconnect_delay(parse(text).retry);
        assert_eq!(delay(b""), DEFAULT_RETRY);
        assert_eq!(delay(b"retry: 0\n"), MIN_RETRY);
        assert_eq!(delay(b"retry: 99\n"), MIN_RETRY);
        assert_eq!(delay(b"retry: 100\n"), Duration::from_millis(100));
        assert_eq!(delay(b"retry: 2500\n"), Duration::from_millis(2500));
        assert_eq!(delay(b"retry: 30001\n"), MAX_RETRY);
        assert_eq!(delay(b"retry: 18446744073709551615\n"), MAX_RETRY);
    }

    #[test]
    fn retry_digits_only() {
        assert_eq!(parse(b"retry: 1500\n").retry, Some(1500));
        assert_eq!(parse(b"retry: 0\n").retry, Some(0));
        for bad in [
            "retry: 1a\n",
            "retry: -1\n",
            "retry: +1\n",
            "retry:\n",
            "retry\n",
            "retry:  1\n",
            "retry: 1.5\n",
            "retry: 99999999999999999999999\n",
        ] {
            assert_eq!(parse(bad.as_bytes()).retry, None, "{bad:?}");
        }
        // An invalid value leaves the last valid one in place.
        assert_eq!(parse(b"retry: 10\nretry: x\n").retry, Some(10));
        assert_eq!(parse(b"retry: 10\nretry: 20\n").retry, Some(20));
        assert_eq!(
            parse(b"retry: 18446744073709551615\n").retry,
            Some(u64::MAX)
        );
    }

    #[test]
    fn empty_data_dispatches_nothing_but_sets_id() {
        // An MCP priming event.
        let outcome = parse(b"id: prime-1\ndata:\n\n");
        assert_eq!(outcome.events, [ev("message", "", "prime-1")]);
        let outcome = parse(b"id: prime-1\n\n");
        assert_eq!(outcome.events, []);
        assert_eq!(outcome.last_event_id, "prime-1");
        assert!(outcome.saw_id);
        // The type buffer is cleared with it.
        let outcome = parse(b"event: x\nid: 1\n\ndata: y\n\n");
        assert_eq!(outcome.events, [ev("message", "y", "1")]);
    }

    #[test]
    fn partial_event_at_eof_discarded() {
        let outcome = parse(b"data: a\n\ndata: b\n");
        assert_eq!(outcome.events, [ev("message", "a", "")]);
        let outcome = parse(b"data: a\n\ndata: b");
        assert_eq!(outcome.events, [ev("message", "a", "")]);
        let outcome = parse(b"data: a\n\nid: 9\ndata: b\n");
        assert_eq!(outcome.last_event_id, "");
        // A final lone CR ends the line but no blank line follows.
        let outcome = parse(b"data: a\r");
        assert_eq!(outcome.events, []);
    }

    #[test]
    fn unknown_field_ignored() {
        assert_eq!(
            events("foo: bar\nData: x\ndata: y\nDATA\n\n"),
            [ev("message", "y", "")]
        );
        assert_eq!(events("foo: bar\n\n"), []);
    }

    #[test]
    fn invalid_utf8_is_error() {
        let outcome = parse(b"data: a\n\ndata: \xFF\n\ndata: c\n\n");
        assert_eq!(outcome.events, [ev("message", "a", "")]);
        assert_eq!(outcome.error, Some(Error::InvalidUtf8 { line: 3 }));
        // A truncated character at the end of a line is invalid too.
        let outcome = parse(b"data: \xC3\n\n");
        assert_eq!(outcome.error, Some(Error::InvalidUtf8 { line: 1 }));
        // A lone BOM prefix is not a BOM.
        let outcome = parse(b"\xEF\xBB\n");
        assert_eq!(outcome.error, Some(Error::InvalidUtf8 { line: 1 }));
        // An incomplete line is never decoded.
        assert_eq!(parse(b"data: \xFF").error, None);
    }

    #[test]
    fn error_is_sticky() {
        let mut parser = Parser::new(Limits::default());
        let mut out = Vec::new();
        let err = parser.feed(b"\xFF\n", &mut out).unwrap_err();
        assert_eq!(parser.feed(b"data: x\n\n", &mut out), Err(err));
        assert_eq!(out, []);
    }

    #[test]
    fn split_multibyte_character() {
        let bytes = "data: é😀\n\n".as_bytes();
        for at in 0..=bytes.len() {
            let (a, b) = bytes.split_at(at);
            let outcome = feed_chunks(&[a, b], Limits::default());
            assert_eq!(outcome.events, [ev("message", "é😀", "")]);
        }
    }

    #[test]
    fn line_limit() {
        let limits = Limits { max_line: 8, max_event: 1024 };
        // Exactly at the limit is fine.
        let outcome = feed_chunks(&[b"data: ab\n\n"], limits);
        assert_eq!(outcome.events, [ev("message", "ab", "")]);
        let outcome = feed_chunks(&[b"data: abc\n\n"], limits);
        assert_eq!(outcome.error, Some(Error::LineTooLong { limit: 8 }));
        // Refused without waiting for the line end.
        let mut parser = Parser::new(limits);
        let mut out = Vec::new();
        assert_eq!(parser.feed(b"data: ab", &mut out), Ok(()));
        assert_eq!(
            parser.feed(b"c", &mut out),
            Err(Error::LineTooLong { limit: 8 })
        );
        assert_eq!(
            Error::LineTooLong { limit: 8 }.to_string(),
            "event stream line longer than 8 bytes"
        );
    }

    #[test]
    fn event_limit() {
        let limits = Limits { max_line: 64, max_event: 5 };
        // "ab\ncd" is exactly 5 bytes.
        let outcome = feed_chunks(&[b"data: ab\ndata: cd\n\n"], limits);
        assert_eq!(outcome.events, [ev("message", "ab\ncd", "")]);
        let outcome = feed_chunks(&[b"data: ab\ndata: cde\n\n"], limits);
        assert_eq!(outcome.events, []);
        assert_eq!(outcome.error, Some(Error::EventTooLarge { limit: 5 }));
        // The limit is per event.
        let outcome = feed_chunks(
            &[b"data: abcd\n\ndata: abcd\n\ndata: abcd\n\n"],
            limits,
        );
        assert_eq!(outcome.events.len(), 3);
        assert_eq!(outcome.error, None);
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            Error::InvalidUtf8 { line: 4 }.to_string(),
            "invalid utf-8 in event stream line 4"
        );
        assert_eq!(
            Error::EventTooLarge { limit: 5 }.to_string(),
            "event stream event data larger than 5 bytes"
        );
    }

    /// Streams that between them use every rule the chunking could
    /// disturb.
    const STREAMS: &[&str] = &[
        "\u{feff}data: é\r\n\r\n",
        "\u{feff}\u{feff}data: x\n\ndata: y\n\n",
        "id: prime\r\n\r\nevent: message\rdata: {\"a\":\"😀\"}\r\r",
        ": keep-alive\r\nretry: 3000\nid: 1\ndata: a\r\ndata:  b\n\n\
         event: ping\r\n:\rid: 2\0\ndata\rretry: 1a\n\r\n\
         id\ndata: é😀é\r\rdata: tail",
        "data: one\r\rdata: two\r\n\rdata: three\n\r\n\r\r",
        "\r\n\r\n\u{feff}data: late bom\n\ndata: x\r\n",
        "retry: 7\rid: 😀\r\r\rdata:é\r\r",
    ];

    #[test]
    fn every_split_gives_same_result() {
        let limits = Limits::default();
        for stream in STREAMS {
            let bytes = stream.as_bytes();
            let whole = feed_chunks(&[bytes], limits);
            assert_eq!(whole.error, None, "{stream:?}");
            let n = bytes.len();
            for i in 0..=n {
                let (a, b) = bytes.split_at(i);
                assert_eq!(feed_chunks(&[a, b], limits), whole, "{i}");
                for j in i..=n {
                    let chunks = [&bytes[..i], &bytes[i..j], &bytes[j..]];
                    assert_eq!(
                        feed_chunks(&chunks, limits),
                        whole,
                        "{stream:?} split at {i}, {j}"
                    );
                }
            }
            let bytewise: Vec<&[u8]> = bytes.chunks(1).collect();
            assert_eq!(feed_chunks(&bytewise, limits), whole, "{stream:?}");
        }
    }

    #[test]
    fn every_split_gives_same_error() {
        let limits = Limits { max_line: 12, max_event: 10 };
        for stream in [
            &b"data: ok\n\ndata: \xC3\xA9\xFF\r\n\r\n"[..],
            b"data: ok\r\n\r\ndata: 0123456789\n\n",
            b"data: ok\r\rdata: 012345\rdata: 6789\r\r",
        ] {
            let whole = feed_chunks(&[stream], limits);
            assert!(whole.error.is_some());
            for i in 0..=stream.len() {
                for j in i..=stream.len() {
                    let chunks = [&stream[..i], &stream[i..j], &stream[j..]];
                    assert_eq!(feed_chunks(&chunks, limits), whole);
                }
            }
        }
    }

    /// A reader that hands out one byte per read, the worst case for
    /// chunking.
    struct Trickle<'a>(&'a [u8]);

    impl io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match (self.0.split_first(), buf.first_mut()) {
                (Some((&byte, rest)), Some(slot)) => {
                    *slot = byte;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    fn read_all<R: io::Read>(
        reader: &mut EventReader<R>,
    ) -> (Vec<Event>, Option<io::Error>) {
        let mut events = Vec::new();
        loop {
            match reader.next_event() {
                Ok(Some(event)) => events.push(event),
                Ok(None) => return (events, None),
                Err(err) => return (events, Some(err)),
            }
        }
    }

    #[test]
    fn event_reader_one_byte_reads() {
        for stream in STREAMS {
            let whole = feed_chunks(&[stream.as_bytes()], Limits::default());
            let mut reader = EventReader::new(
                Trickle(stream.as_bytes()),
                Limits::default(),
            );
            let (events, err) = read_all(&mut reader);
            assert!(err.is_none());
            assert_eq!(events, whole.events);
            assert_eq!(reader.parser().last_event_id(), whole.last_event_id);
            assert_eq!(reader.parser().retry(), whole.retry);
            assert_eq!(reader.parser().saw_id(), whole.saw_id);
            // EOF is sticky.
            assert!(matches!(reader.next_event(), Ok(None)));
        }
    }

    #[test]
    fn event_reader_large_body() {
        let mut body = Vec::new();
        for i in 0..2000 {
            body.extend_from_slice(
                format!("id: {i}\r\ndata: {i}\r\n\r\n").as_bytes(),
            );
        }
        let mut reader = EventReader::new(&body[..], Limits::default());
        let (events, err) = read_all(&mut reader);
        assert!(err.is_none());
        assert_eq!(events.len(), 2000);
        assert_eq!(events.last(), Some(&ev("message", "1999", "1999")));
    }

    #[test]
    fn event_reader_error_after_good_events() {
        let body = b"data: a\n\ndata: b\n\n\xFF\n\ndata: c\n\n";
        let mut reader = EventReader::new(&body[..], Limits::default());
        let (events, err) = read_all(&mut reader);
        assert_eq!(events, [ev("message", "a", ""), ev("message", "b", "")]);
        let err = err.expect("an error");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        let inner = err.get_ref().and_then(|e| e.downcast_ref::<Error>());
        assert_eq!(inner, Some(&Error::InvalidUtf8 { line: 5 }));
        // And again on the next call.
        assert!(reader.next_event().is_err());
    }

    #[test]
    fn event_reader_passes_io_errors() {
        struct Failing;
        impl io::Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
            }
        }
        let mut reader = EventReader::new(Failing, Limits::default());
        let err = reader.next_event().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
    }

    #[test]
    fn event_reader_reads_at_most_8k() {
        struct Sizes<'a>(&'a [u8], usize);
        impl io::Read for Sizes<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.1 = self.1.max(buf.len());
                io::Read::read(&mut self.0, buf)
            }
        }
        let body = vec![b'x'; 100_000];
        let mut reader = EventReader::new(Sizes(&body, 0), Limits::default());
        assert!(matches!(reader.next_event(), Ok(None)));
        assert_eq!(reader.reader.1, 8 * 1024);
    }

    #[test]
    fn encoded_events_parse_back() {
        for data in ["{\"a\":1}", "two\nlines", "", "cr\rlf\r\nend"] {
            let mut p = Parser::new(Limits::default());
            let mut out = vec![];
            p.feed(encode(data).as_bytes(), &mut out).unwrap();
            assert_eq!(out.len(), 1, "{data:?}");
            let want = data.replace("\r\n", "\n").replace('\r', "\n");
            assert_eq!(out[0].data, want);
            assert_eq!(out[0].event, "message");
        }
    }
}
