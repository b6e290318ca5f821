//! The event streams of one HTTP server, each read by a thread of its own
//! into one channel: a request's POST stream (the current one, with the
//! [`Call`] that is waiting on it) and the standalone GET stream.
//!
//! A request waiting on its quiet POST stream still sees what arrives on
//! the GET stream; items of a POST stream that is not the current one
//! (while a new session is started) are held, bounded, until it is
//! current again. Every byte of message data the threads pass on counts
//! against one budget until it is taken, so that a server flooding a
//! stream nobody reads cannot make us buffer without limit.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crate::deadline::Deadline;
use crate::error::Result;
use crate::sse;
use crate::streamable::{self, Call, StreamEnd, state::Streaming};

/// How many items of streams that are not current are kept.
const MAX_HELD: usize = 1000;

pub(super) type Reader = sse::EventReader<ureq::BodyReader<'static>>;

/// Which stream a pumped item came from: a request's POST stream (by its
/// number) or the standalone GET stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Post(u64),
    Get,
}

/// What a stream's thread passes on.
enum Pumped {
    /// One `message` event's data.
    Data(String),
    /// The stream ended: what resuming it needs.
    End(StreamEnd),
    Failed(std::io::Error),
}

/// The bytes of message data read by the stream threads and not yet
/// taken (or dropped); shared by every stream of one server.
type Inflight = Arc<AtomicUsize>;

/// Reads `r` to its end on this thread, passing on each message event,
/// then how it ended. Stops early when nobody listens any more, and when
/// passing an event on would put more than `budget` bytes in flight: a
/// server that floods a stream nobody reads (a request's stream after its
/// response, the standalone stream while the operator is being asked)
/// cannot make us buffer without limit; that stream fails instead.
fn pump(
    mut r: Reader,
    source: Source,
    tx: Sender<(Source, Pumped)>,
    inflight: Inflight,
    budget: usize,
) {
    loop {
        let item = match r.next_event() {
            Ok(Some(ev)) => {
                if !streamable::carries_message(&ev) {
                    continue;
                }
                let n = ev.data.len();
                let before = inflight.fetch_add(n, Ordering::SeqCst);
                if before > 0 && before + n > budget {
                    inflight.fetch_sub(n, Ordering::SeqCst);
                    let e = std::io::Error::other(format!(
                        "more than {budget} bytes of messages unread on \
                         this stream; the stream is dropped"
                    ));
                    let _ = tx.send((source, Pumped::Failed(e)));
                    return;
                }
                Pumped::Data(ev.data)
            }
            Ok(None) => {
                let p = r.parser();
                let end = StreamEnd {
                    last_event_id: p.last_event_id().to_string(),
                    saw_id: p.saw_id(),
                    retry: p.retry(),
                };
                let _ = tx.send((source, Pumped::End(end)));
                return;
            }
            Err(e) => {
                let _ = tx.send((source, Pumped::Failed(e)));
                return;
            }
        };
        if tx.send((source, item)).is_err() {
            return;
        }
    }
}

/// What [`Streams::next`] found.
pub(super) enum Next {
    /// No request stream to wait on.
    NoStream,
    /// One message's data, and whether it came on the standalone stream
    /// (else the request's).
    Message(String, bool),
    /// The standalone stream ended.
    StandaloneEnded,
    /// The request's stream broke; its call.
    Broke(std::io::Error, Call<Streaming>),
    /// The request's stream ended; its call, to ask what next.
    Ended(StreamEnd, Call<Streaming>),
    /// Nothing came within the slice asked for (the deadline has not
    /// passed).
    Quiet,
}

pub(super) struct Streams {
    rx: Receiver<(Source, Pumped)>,
    tx: Sender<(Source, Pumped)>,
    inflight: Inflight,
    /// The most bytes of unread message data the threads may hold.
    budget: usize,
    /// Items of a stream that is not the current one.
    held: VecDeque<(Source, Pumped)>,
    /// Numbers the POST streams.
    count: u64,
    /// The POST stream of the request in flight, and its call.
    current: Option<(u64, Call<Streaming>)>,
}

impl Streams {
    /// `max_message`: the largest message allowed; the threads may hold a
    /// few of them.
    pub(super) fn new(max_message: usize) -> Streams {
        let (tx, rx) = mpsc::channel();
        Streams {
            rx,
            tx,
            inflight: Arc::new(AtomicUsize::new(0)),
            budget: max_message.saturating_mul(4).max(32 << 20),
            held: VecDeque::new(),
            count: 0,
            current: None,
        }
    }

    /// A new request: no current stream, nothing held.
    pub(super) fn clear(&mut self) {
        self.current = None;
        for (_, old) in std::mem::take(&mut self.held) {
            self.release(&old);
        }
    }

    /// Stops waiting on the current stream.
    pub(super) fn drop_current(&mut self) {
        self.current = None;
    }

    /// Sets the current stream aside (while a new session is started).
    pub(super) fn set_aside(&mut self) -> Option<(u64, Call<Streaming>)> {
        self.current.take()
    }

    /// Makes a stream set aside current again.
    pub(super) fn restore(&mut self, aside: Option<(u64, Call<Streaming>)>) {
        self.current = aside;
    }

    /// Makes `reader`'s stream the current one, read by a thread of its
    /// own, for `call`.
    pub(super) fn follow(&mut self, reader: Reader, call: Call<Streaming>) {
        self.count += 1;
        self.current = Some((self.count, call));
        self.spawn(reader, Source::Post(self.count));
    }

    /// Reads the standalone stream on a thread of its own.
    pub(super) fn standalone(&mut self, reader: Reader) {
        self.spawn(reader, Source::Get);
    }

    fn spawn(&self, reader: Reader, source: Source) {
        let (tx, inflight, budget) =
            (self.tx.clone(), Arc::clone(&self.inflight), self.budget);
        std::thread::spawn(move || pump(reader, source, tx, inflight, budget));
    }

    /// Gives back the in-flight bytes of an item that is dropped unread.
    fn release(&self, item: &Pumped) {
        if let Pumped::Data(d) = item {
            self.inflight.fetch_sub(d.len(), Ordering::SeqCst);
        }
    }

    /// The next item of the current stream or the standalone one, within
    /// the deadline.
    pub(super) fn next(
        &mut self,
        deadline: &Deadline,
        slice: Option<Duration>,
    ) -> Result<Next> {
        loop {
            let Some((current, _)) = &self.current else {
                return Ok(Next::NoStream);
            };
            let current = *current;
            let mine =
                |s: &Source| *s == Source::Get || *s == Source::Post(current);
            let held = self.held.iter().position(|(s, _)| mine(s));
            let (source, item) = match held {
                Some(i) => self.held.remove(i).expect("found above"),
                None => {
                    let left = deadline.remaining()?;
                    let wait = slice.map_or(left, |s| s.min(left));
                    match self.rx.recv_timeout(wait) {
                        Ok(got) => got,
                        Err(RecvTimeoutError::Timeout) if wait < left => {
                            return Ok(Next::Quiet);
                        }
                        Err(RecvTimeoutError::Timeout) => {
                            return Err(deadline.error());
                        }
                        Err(RecvTimeoutError::Disconnected) => {
                            unreachable!("the streams hold a sender")
                        }
                    }
                }
            };
            if !mine(&source) {
                // Another POST stream's: kept for when it is current again
                // (a restart sets the request's stream aside), bounded.
                if self.held.len() >= MAX_HELD
                    && let Some((_, old)) = self.held.pop_front()
                {
                    self.release(&old);
                }
                self.held.push_back((source, item));
                continue;
            }
            return Ok(match (source, item) {
                (source, Pumped::Data(data)) => {
                    self.inflight.fetch_sub(data.len(), Ordering::SeqCst);
                    Next::Message(data, source == Source::Get)
                }
                (Source::Get, Pumped::End(_) | Pumped::Failed(_)) => {
                    Next::StandaloneEnded
                }
                (Source::Post(_), Pumped::Failed(e)) => {
                    let (_, call) = self.current.take().expect("current");
                    Next::Broke(e, call)
                }
                (Source::Post(_), Pumped::End(end)) => {
                    let (_, call) = self.current.take().expect("current");
                    Next::Ended(end, call)
                }
            });
        }
    }

    /// The data the standalone stream delivers until it has been quiet
    /// for `quiet`, within `max` and at most `most` messages; and whether
    /// it ended. Items of other streams are dropped.
    pub(super) fn drain_standalone(
        &mut self,
        quiet: Duration,
        max: Duration,
        most: usize,
    ) -> (Vec<String>, bool) {
        let mut out = vec![];
        let end = Instant::now() + max;
        while out.len() < most {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            let Ok((source, item)) = self.rx.recv_timeout(left.min(quiet))
            else {
                break;
            };
            match (source, item) {
                (Source::Get, Pumped::Data(data)) => {
                    self.inflight.fetch_sub(data.len(), Ordering::SeqCst);
                    out.push(data);
                }
                (Source::Get, _) => return (out, true),
                (_, other) => self.release(&other),
            }
        }
        (out, false)
    }
}
