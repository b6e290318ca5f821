//! Fuzzes the JSON-RPC message classification of the protocol core
//! (`mcp::classify` and `mcp::split_batch`) with any JSON a server sends.
//!
//! - A batch is accepted exactly by the revisions that allow batches; any
//!   other value is one message.
//! - Each message is classified by the JSON-RPC rules, checked here
//!   independently: a request has a string method and a string or integer
//!   id, a notification a string method and no id, a response an id and no
//!   method (its result counts only when it is an object); everything else
//!   is invalid. What a request, notification or response carries is the
//!   message's own id, method and params, untouched.
//! - A server's error object is shown as one bounded line without control
//!   characters, however long or hostile its message and data are.
//! - The memory estimate made from the bytes before parsing
//!   (`mcp::size::parsed_size`) is never below the one of the tree built
//!   (`value_size`): the budget cannot be slipped past by the shape.

#![no_main]

use rivumi_mcp_proto::mcp;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

use mcp::{Incoming, Outcome, Version};

/// Longest error line: code, 500 bytes of message and 200 of data, each
/// with its cut marker.
const MAX_DESCRIBE: usize = 1024;

fn check_message(m: Value) {
    let id = m.get("id").cloned();
    let method = m.get("method").cloned();
    let params = m.get("params").cloned().unwrap_or(Value::Null);
    let result = m.get("result").cloned();
    let valid_id = |id: &Value| id.is_string() || id.is_i64() || id.is_u64();
    match mcp::classify(m.clone()) {
        Incoming::Request { id: got, method: name, params: p } => {
            assert_eq!(Some(&got), id.as_ref());
            assert!(valid_id(&got), "request id {got}");
            assert_eq!(method, Some(Value::String(name)));
            assert_eq!(p, params);
        }
        Incoming::Notification { method: name, params: p } => {
            assert!(id.is_none(), "notification with an id");
            assert_eq!(method, Some(Value::String(name)));
            assert_eq!(p, params);
        }
        Incoming::Response { id: got, outcome } => {
            assert_eq!(Some(&got), id.as_ref());
            assert!(method.is_none(), "response with a method");
            match outcome {
                Outcome::Result(r) => {
                    assert!(r.is_object());
                    assert_eq!(Some(r), result);
                }
                Outcome::BadResult => {
                    assert!(result.is_some_and(|r| !r.is_object()));
                }
                Outcome::Error(e) => {
                    assert!(result.is_none(), "result taken as an error");
                    let line = e.describe();
                    assert!(
                        line.len() <= MAX_DESCRIBE,
                        "{} bytes",
                        line.len()
                    );
                    assert!(
                        !line.chars().any(char::is_control),
                        "control character in {line:?}"
                    );
                }
            }
        }
        Incoming::Invalid(_) => {
            let request = matches!(&method, Some(Value::String(_)))
                && id.as_ref().is_none_or(valid_id);
            let response = method.is_none() && id.is_some();
            assert!(
                !m.is_object() || !(request || response),
                "a valid message classified as invalid"
            );
        }
    }
}

fuzz_target!(|input: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(input) else {
        return;
    };
    let (before, built) =
        (mcp::size::parsed_size(input), mcp::size::value_size(&value));
    assert!(before >= built, "estimated {before} < built {built}");
    let versions = Version::ALL.map(Some);
    for version in versions.into_iter().chain([None]) {
        let batches = version.is_some_and(Version::allows_batches);
        match mcp::split_batch(value.clone(), version) {
            Ok(messages) => match &value {
                Value::Array(items) => {
                    assert!(batches, "batch accepted by {version:?}");
                    assert_eq!(&messages, items);
                }
                other => assert_eq!(messages, [other.clone()]),
            },
            Err(_) => assert!(value.is_array() && !batches),
        }
    }
    let messages = match value {
        Value::Array(items) => items,
        other => vec![other],
    };
    messages.into_iter().for_each(check_message);
});
