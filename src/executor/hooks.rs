//! Running the pre-tool hooks: each is an argv run without a shell, in
//! the sanitised base environment and its own process group, with the
//! request as JSON on stdin; its exit status and stdout decide.
//!
//! Hooks fail closed. Exactly two outcomes allow a call: exit 0 with
//! nothing but whitespace on stdout, and exit 0 with stdout holding exactly
//! one JSON object `{"decision": "allow"}` (optionally with a string
//! `"reason"`), surrounded only by whitespace. Everything else denies, and
//! says why: `{"decision": "deny"}`, exit 2 (stderr is the reason), any
//! other exit, a crash, a program that cannot start, stdout that is not
//! UTF-8 or not exactly one such object (a log line before it, a second
//! object, trailing text, a repeated or unknown field, an unknown
//! decision), stdout past [`HOOK_STDOUT`], and the deadline.
//!
//! The deadline covers everything: running, writing the request and reading
//! the output. When the hook exits, or the deadline or the stdout cap is
//! reached, its whole process group is killed; a process that still holds
//! one of its pipes after that (one that left the group) cannot hold us:
//! the readers are threads that are never waited for past the deadline,
//! and at the deadline such holders are found (Linux `/proc`) and killed.
//! A descendant that leaves the group and closes its pipes is beyond reach,
//! as it is for a server.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::Value;

use crate::jsonpos::{self, Kind};
use crate::runner::{Ended, run_bounded, timed_out};
use crate::term;

/// The default deadline of one hook.
pub(crate) const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a hook may print on stdout; more denies, whatever it says.
const HOOK_STDOUT: usize = 64 * 1024;
/// A hook's verdict.
#[derive(Debug)]
pub(super) struct Decision {
    pub(super) allow: bool,
    pub(super) how: String,
    pub(super) reason: String,
}

fn deny(how: impl Into<String>, reason: impl Into<String>) -> Decision {
    Decision { allow: false, how: how.into(), reason: reason.into() }
}

/// Runs one hook with the request `input` on stdin and judges it; see the
/// module docs for the contract.
pub(super) fn run_hook(
    argv: &[String],
    input: &Value,
    timeout: Duration,
) -> Decision {
    match run_bounded(argv, input, timeout, HOOK_STDOUT) {
        Ended::Done { status, stdout, stderr } => {
            verdict(status, &stdout, &String::from_utf8_lossy(&stderr))
        }
        Ended::NotStarted(e) => deny("could not start", e),
        Ended::TooMuch => deny(
            format!(
                "printed more than {} KiB on stdout, failing closed",
                HOOK_STDOUT / 1024
            ),
            "",
        ),
        Ended::TimedOut { exited } => deny(timed_out(timeout, exited), ""),
    }
}

/// Judges a hook that ran to the end: its exit status, its stdout and its
/// stderr (the reason for exit 2 and other failures).
fn verdict(status: ExitStatus, stdout: &[u8], stderr: &str) -> Decision {
    let stderr = stderr.trim();
    match status.code() {
        Some(0) => {}
        Some(2) => return deny("exit 2", stderr),
        Some(c) => return deny(format!("exit {c}, failing closed"), stderr),
        None => {
            let how = match status.signal() {
                Some(sig) => format!("killed by signal {sig}, failing closed"),
                None => "killed by a signal, failing closed".to_string(),
            };
            return deny(how, stderr);
        }
    }
    let Ok(text) = std::str::from_utf8(stdout) else {
        return deny("exit 0 but stdout is not UTF-8, failing closed", stderr);
    };
    if text.trim_matches(json_space).is_empty() {
        return Decision {
            allow: true,
            how: "exit 0".into(),
            reason: String::new(),
        };
    }
    match decision(text) {
        Ok((true, _)) => Decision {
            allow: true,
            how: "decision allow".into(),
            reason: String::new(),
        },
        Ok((false, reason)) => deny("decision deny", reason),
        Err(why) => deny(format!("exit 0 but {why}, failing closed"), stderr),
    }
}

fn json_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// Reads a decision object: `Ok((allow, reason))`, or why `text` is not
/// exactly one well-formed `{"decision": "allow"|"deny", "reason": "..."}`.
fn decision(text: &str) -> Result<(bool, String), String> {
    let doc = jsonpos::parse(text).map_err(|e| {
        format!(
            "stdout is not exactly one JSON object ({})",
            term::clip(&term::line(&e.to_string()), 200)
        )
    })?;
    if let Some(d) = doc.duplicates.first() {
        return Err(format!("its JSON repeats {}", term::line(&d.pointer)));
    }
    let Kind::Object(members) = &doc.root.kind else {
        return Err(format!(
            "stdout is a JSON {}, not an object",
            doc.root.type_name()
        ));
    };
    let mut verdict = None;
    let mut reason = String::new();
    for m in members {
        match (m.key.as_str(), &m.value.kind) {
            ("decision", Kind::String(s)) if s == "allow" => {
                verdict = Some(true)
            }
            ("decision", Kind::String(s)) if s == "deny" => {
                verdict = Some(false)
            }
            ("decision", Kind::String(s)) => {
                return Err(format!(
                    "its decision '{}' is neither allow nor deny",
                    term::clip(&term::line(s), 100)
                ));
            }
            ("reason", Kind::String(s)) => reason = s.clone(),
            ("decision" | "reason", _) => {
                return Err(format!(
                    "its \"{}\" is a {}, not a string",
                    m.key,
                    m.value.type_name()
                ));
            }
            (k, _) => {
                return Err(format!(
                    "its JSON has an unknown field '{}'",
                    term::clip(&term::line(k), 100)
                ));
            }
        }
    }
    match verdict {
        Some(allow) => Ok((allow, reason)),
        None => Err("its JSON has no \"decision\"".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exit(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    #[test]
    fn only_empty_or_one_allow_object_allows() {
        for out in [
            "",
            " \n\t",
            r#"{"decision":"allow"}"#,
            "\n {\"reason\":\"ok\",\"decision\":\"allow\"}\n",
        ] {
            assert!(verdict(exit(0), out.as_bytes(), "").allow, "{out:?}");
        }
        for out in [
            "log\n{\"decision\":\"allow\"}",
            r#"{"decision":"allow"}{"decision":"allow"}"#,
            r#"{"decision":"allow"} x"#,
            r#"{"decision":"deny","decision":"allow"}"#,
            r#"{"decision":"allow","x":1}"#,
            r#"{"decision":"Allow"}"#,
            r#"{"decision":"deny"}"#,
            r#"{"decision":"allow","reason":1}"#,
            r#"["allow"]"#,
            "{}",
        ] {
            assert!(!verdict(exit(0), out.as_bytes(), "").allow, "{out:?}");
        }
        assert!(!verdict(exit(0), b"{\"decision\":\"allow\"}\xff", "").allow);
        let allow = br#"{"decision":"allow"}"#;
        for st in [exit(1), exit(2), ExitStatus::from_raw(9)] {
            assert!(!verdict(st, allow, "").allow);
        }
    }

    #[test]
    fn a_deny_carries_its_reason() {
        let d = verdict(exit(0), br#"{"decision":"deny","reason":"no"}"#, "e");
        assert_eq!(
            (d.allow, d.how.as_str(), d.reason.as_str()),
            (false, "decision deny", "no")
        );
        let d = verdict(exit(2), b"", " why \n");
        assert_eq!((d.how.as_str(), d.reason.as_str()), ("exit 2", "why"));
    }
}
