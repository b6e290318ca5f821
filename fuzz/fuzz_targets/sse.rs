//! Fuzzes the Server-Sent Events parser: it must never panic, and where a
//! body is split into chunks must not change what it yields. The first
//! input byte picks the split point; the rest is the body.

#![no_main]

use rivumi_mcp_proto::sse;
use libfuzzer_sys::fuzz_target;

/// Small limits, so that the limit checks are reached too.
const LIMITS: sse::Limits = sse::Limits { max_line: 256, max_event: 1024 };

/// Everything observable after feeding a body.
#[derive(Debug, PartialEq)]
struct Outcome {
    events: Vec<sse::Event>,
    error: Option<sse::Error>,
    last_event_id: String,
    retry: Option<u64>,
    saw_id: bool,
}

fn feed<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Outcome {
    let mut parser = sse::Parser::new(LIMITS);
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

fuzz_target!(|input: &[u8]| {
    let Some((&first, body)) = input.split_first() else {
        return;
    };
    let at = body.len() * usize::from(first) / 255;
    let (a, b) = body.split_at(at);
    let whole = feed([body]);
    assert_eq!(feed([a, b]), whole);
    assert_eq!(feed(body.chunks(1)), whole);
});
