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

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::jsonpos::{self, Kind};
use crate::{deadline, spawn, sys, term};

/// The default deadline of one hook.
pub(crate) const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a hook may print on stdout; more denies, whatever it says.
const HOOK_STDOUT: usize = 64 * 1024;
/// How much of a hook's stderr is kept for the reason; the rest is read
/// and dropped, so a chatty hook is not stalled on a full pipe.
const HOOK_STDERR: usize = 64 * 1024;
/// How often the hook's exit is polled while its output is awaited.
const POLL: Duration = Duration::from_millis(5);

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

/// Starts one hook: its argv, no shell, the base environment only, its
/// own process group (registered for cleanup with no window), pipes for
/// all three streams. The one place a hook process is created.
fn start(argv: &[String], extra: &[&str]) -> std::io::Result<(Child, i32)> {
    let env = spawn::base_env(&|k| std::env::var(k).ok(), extra);
    spawn::start_group(&mut spawn::command(&argv[0], &argv[1..], &env))
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

/// "timed out after 10s", and why when the process itself had exited.
pub(crate) fn timed_out(timeout: Duration, exited: bool) -> String {
    format!(
        "timed out after {}{}",
        deadline::seconds(timeout),
        if exited { "; it exited but its output stayed open" } else { "" }
    )
}

/// Runs `argv` (no shell, base environment, own process group) with
/// `input` as JSON on stdin (nothing for `Value::Null`), by `timeout`,
/// keeping at most `cap` bytes of its stdout; whatever happens, nothing of
/// its group outlives it. The one runner of the operator's commands:
/// hooks, the sampling command and credential commands.
pub(crate) fn run_bounded(
    argv: &[String],
    input: &Value,
    timeout: Duration,
    cap: usize,
) -> Ended {
    run_bounded_with(argv, &[], input, timeout, cap)
}

/// [`run_bounded`] with the variables `extra` passed besides the base
/// set, when they are set.
pub(crate) fn run_bounded_with(
    argv: &[String],
    extra: &[&str],
    input: &Value,
    timeout: Duration,
    cap: usize,
) -> Ended {
    let deadline = Instant::now() + timeout;
    let (mut child, pgid) = match start(argv, extra) {
        Ok(c) => c,
        Err(e) => return Ended::NotStarted(e.to_string()),
    };
    let pipes = pipes_of(&child);
    let ended = supervise(&mut child, pgid, input, deadline, cap);
    sys::kill_group(pgid, sys::SIGKILL);
    let _ = child.wait();
    sys::wait_group_gone(pgid, Duration::from_millis(500));
    sys::unregister_group(pgid);
    // Killed by our own signal handling: that exit (130/143) is the answer.
    sys::wait_if_closing();
    if let Ended::TimedOut { .. } = ended {
        // What holds its pipes open now has left its group: it goes too.
        for pid in holders(&pipes) {
            sys::kill_and_reap(pid, Duration::from_millis(500));
        }
    }
    ended
}

/// The identities of the hook's three pipes (`pipe:[INODE]`, as Linux
/// shows them under `/proc/PID/fd`); empty where there is no `/proc`.
fn pipes_of(child: &Child) -> Vec<PathBuf> {
    let fds = [
        child.stdin.as_ref().map(AsRawFd::as_raw_fd),
        child.stdout.as_ref().map(AsRawFd::as_raw_fd),
        child.stderr.as_ref().map(AsRawFd::as_raw_fd),
    ];
    fds.into_iter()
        .flatten()
        .filter_map(|fd| {
            std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()
        })
        .collect()
}

/// The processes other than this one that hold one of `pipes` open. Only
/// the hook and its descendants can (our ends are close-on-exec), so after
/// its group is gone these are descendants that left the group (a new
/// session, say) and would otherwise live on.
fn holders(pipes: &[PathBuf]) -> Vec<i32> {
    if pipes.is_empty() {
        return vec![];
    }
    sys::other_processes()
        .into_iter()
        .filter_map(|(pid, dir)| {
            let fds = std::fs::read_dir(dir.join("fd")).ok()?;
            let holds = fds.flatten().any(|fd| {
                std::fs::read_link(fd.path()).is_ok_and(|l| pipes.contains(&l))
            });
            holds.then_some(pid)
        })
        .collect()
}

/// How running a command ended.
pub(crate) enum Ended {
    /// It exited and both its stdout and stderr reached end of file.
    Done { status: ExitStatus, stdout: Vec<u8>, stderr: Vec<u8> },
    /// It printed more than its cap on stdout.
    TooMuch,
    /// It could not be started (why).
    NotStarted(String),
    /// The deadline passed first (`exited`: the process itself had ended).
    TimedOut { exited: bool },
}

/// What one reader thread read before end of file (or before the cap).
struct Captured {
    stderr: bool,
    bytes: Vec<u8>,
    over: bool,
}

/// Feeds `input` to the hook and collects its output and exit, all by
/// `deadline`. The writer and readers are detached threads: they end when
/// the pipes close, and nothing here waits for them past the deadline.
fn supervise(
    child: &mut Child,
    pgid: i32,
    input: &Value,
    deadline: Instant,
    cap: usize,
) -> Ended {
    let bytes = match input {
        Value::Null => vec![],
        v => v.to_string().into_bytes(),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A hook that never reads its stdin must not hold us; the write
        // fails (EPIPE) once the group is killed.
        std::thread::spawn(move || stdin.write_all(&bytes));
    }
    let (tx, rx) = mpsc::channel();
    if let Some(out) = child.stdout.take() {
        read_capped(out, false, cap, tx.clone());
    }
    if let Some(err) = child.stderr.take() {
        read_capped(err, true, HOOK_STDERR, tx);
    }
    let (mut status, mut stdout, mut stderr) = (None, None, None);
    loop {
        if status.is_none()
            && let Ok(Some(st)) = child.try_wait()
        {
            status = Some(st);
            // Leftovers in its group die now, so its pipes can close.
            sys::kill_group(pgid, sys::SIGKILL);
        }
        if let (Some(status), Some(stdout), Some(stderr)) =
            (status, &mut stdout, &mut stderr)
        {
            return Ended::Done {
                status,
                stdout: std::mem::take(stdout),
                stderr: std::mem::take(stderr),
            };
        }
        let now = Instant::now();
        if now >= deadline {
            return Ended::TimedOut { exited: status.is_some() };
        }
        if let Ok(c) = rx.recv_timeout(POLL.min(deadline - now)) {
            if c.over && !c.stderr {
                return Ended::TooMuch;
            }
            *(if c.stderr { &mut stderr } else { &mut stdout }) =
                Some(c.bytes);
        }
    }
}

/// Reads `r` on a thread of its own until end of file, keeping at most
/// `cap` bytes, and sends what it kept. stdout stops at the cap (what
/// follows cannot matter: it denies); stderr is drained past it.
fn read_capped(
    r: impl Read + Send + 'static,
    stderr: bool,
    cap: usize,
    tx: mpsc::Sender<Captured>,
) {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut r = r;
        let mut buf = [0u8; 8192];
        let mut over = false;
        loop {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let room = cap - kept.len();
                    kept.extend_from_slice(&buf[..n.min(room)]);
                    if n > room {
                        over = true;
                        if !stderr {
                            break;
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = tx.send(Captured { stderr, bytes: kept, over });
    });
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
