//! Waiting for a task (`mcp::tasks`): poll `tasks/get` at the server's
//! interval (with a floor and a ceiling) under one overall deadline, show
//! each status message, answer `input_required` with the operator's
//! handlers (the same as elicitation's), collect the result, and cancel
//! the task with `tasks/cancel` on Ctrl-C or when the deadline fires.
//!
//! A task id is a capability: whoever holds it may collect or cancel the
//! work. It is printed only to the operator who asked for it; the journal
//! gets [`fingerprint`], never the id.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::deadline::Deadline;
use crate::error::{Error, Kind, Result};
use crate::mcp::tasks::{self, Status, Task};
use crate::mcp::{self, method};
use crate::session::Session;
use crate::{journal, msg, term};

/// The shortest interval between two polls, whatever the server asks.
pub(crate) const POLL_FLOOR: Duration = Duration::from_millis(200);
/// The longest interval between two polls.
pub(crate) const POLL_CEILING: Duration = Duration::from_secs(30);
/// The interval when the server names none.
const POLL_DEFAULT: Duration = Duration::from_secs(1);
/// How long a task is asked to be kept (the request's `ttl`).
pub(crate) const TTL: Duration = Duration::from_secs(3600);
/// The most `tasks/get` polls of one wait (a server that never ends).
const MAX_POLLS: u32 = 100_000;

/// What the journal keeps of a task id: the first 16 hex digits of its
/// SHA-256, so that events about one task can be matched without the
/// capability itself.
pub(crate) fn fingerprint(id: &str) -> String {
    use sha2::{Digest, Sha256};
    crate::files::hex(&Sha256::digest(id.as_bytes()))[..16].to_string()
}

/// The interval before the next poll: the server's, within the bounds.
pub(crate) fn interval(task: &Task) -> Duration {
    task.poll_ms
        .map(Duration::from_millis)
        .unwrap_or(POLL_DEFAULT)
        .clamp(POLL_FLOOR, POLL_CEILING)
}

/// Shows a task's status (and message) on stderr when it changed; hidden
/// by `-q`.
struct Shown(Option<(Status, Option<String>)>);

impl Shown {
    fn show(&mut self, server: &str, t: &Task) {
        let now = Some((t.status, t.message.clone()));
        if self.0 == now {
            return;
        }
        self.0 = now;
        journal::event(
            "task_status",
            json!({"server": server, "task": fingerprint(&t.id),
                   "status": t.status.as_str()}),
        );
        if msg::level() >= 1 {
            let m = match &t.message {
                Some(m) => format!(": {m}"),
                None => String::new(),
            };
            msg::line(&format!(
                "rivumi-mcp: server '{server}': task {}{}",
                t.status.as_str(),
                term::line(&m)
            ));
        }
    }
}

/// The task `tasks/get` describes now.
pub(crate) fn get(s: &mut Session, id: &str, d: &Deadline) -> Result<Task> {
    let r = s.task_request(method::TASKS_GET, tasks::params(id), d)?;
    read(s, &r)
}

fn read(s: &Session, r: &Value) -> Result<Task> {
    tasks::from_result(r).map_err(|why| {
        Error::server(format!("{}: {why}", method::TASKS_GET))
            .for_server(s.name())
    })
}

/// Asks the server to cancel the task; what it says is shown, a failure
/// is a warning (the caller is already ending with an error).
pub(crate) fn cancel(s: &mut Session, id: &str) -> Result<Task> {
    let d = Deadline::new(method::TASKS_CANCEL, Duration::from_secs(5));
    let r = s.task_request(method::TASKS_CANCEL, tasks::params(id), &d)?;
    journal::event(
        "task_cancel",
        json!({"server": s.name(), "task": fingerprint(id)}),
    );
    match tasks::from_result(&r) {
        Ok(t) => Ok(t),
        // Some servers answer an empty result.
        Err(_) => Ok(Task {
            id: id.to_string(),
            status: Status::Cancelled,
            message: None,
            ttl_ms: None,
            poll_ms: None,
        }),
    }
}

/// The result of a task that ended (or, in the handshake era, of one that
/// waits for input: `tasks/result` waits, and what the server asks
/// arrives meanwhile and is answered as any server request).
pub(crate) fn result(
    s: &mut Session,
    id: &str,
    d: &Deadline,
) -> Result<Value> {
    s.task_request(method::TASKS_RESULT, tasks::params(id), d)
}

/// Waits for `task` until it ends, within `limit`, and returns its
/// result. Ctrl-C and the deadline cancel it on the server first.
pub(crate) fn wait(
    s: &mut Session,
    task: Task,
    limit: Duration,
) -> Result<Value> {
    let server = s.name().to_string();
    let d = Deadline::new(format!("task of server '{server}'"), limit);
    // Ctrl-C: `tasks/cancel` on the wire before the server is ended.
    let _on_interrupt = s
        .signal_request(method::TASKS_CANCEL, tasks::params(&task.id))
        .map(|(req, send)| {
            crate::sys::on_interrupt(Arc::new(move || send(&req)))
        });
    let id = task.id.clone();
    match poll(s, task, &d) {
        Err(e) if e.kind() == Kind::Timeout => {
            if let Err(c) = cancel(s, &id) {
                msg::warn(&format!(
                    "server '{server}': the task could not be cancelled: {}",
                    c.message()
                ));
            }
            Err(d.error().for_server(&server))
        }
        r => r,
    }
}

fn poll(s: &mut Session, mut t: Task, d: &Deadline) -> Result<Value> {
    let server = s.name().to_string();
    let mut shown = Shown(None);
    for _ in 0..MAX_POLLS {
        shown.show(&server, &t);
        match t.status {
            Status::Completed | Status::Failed => {
                return result(s, &t.id, d);
            }
            Status::Cancelled => {
                return Err(Error::server(
                    "the task was cancelled on the server",
                )
                .for_server(&server));
            }
            Status::InputRequired if !s.modern() => {
                // tasks/result delivers the questions and returns when
                // the task has ended.
                return result(s, &t.id, d);
            }
            Status::InputRequired | Status::Working => {}
        }
        let pause = interval(&t).min(d.remaining()?);
        let until = Instant::now() + pause;
        while Instant::now() < until {
            std::thread::sleep(
                until
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(100)),
            );
        }
        d.remaining()?;
        let r = s.task_request(method::TASKS_GET, tasks::params(&t.id), d)?;
        t = read(s, &r)?;
        if t.status == Status::InputRequired && s.modern() {
            shown.show(&server, &t);
            let (responses, _) = s.answer_inputs(method::TASKS_GET, &r, d)?;
            if !responses.is_empty() {
                s.task_request(
                    method::TASKS_UPDATE,
                    tasks::update_params(&t.id, responses),
                    d,
                )?;
            }
        }
        if s.modern() && t.status == Status::Completed {
            // 2026-07-28 may carry the result in the task itself.
            if let Some(inner) = r.get("result").filter(|v| v.is_object()) {
                shown.show(&server, &t);
                return Ok(inner.clone());
            }
        }
    }
    Err(Error::server(format!("the task did not end after {MAX_POLLS} polls"))
        .for_server(&server))
}

/// The most bytes of one detached task's record.
const MAX_RECORD: u64 = 16 << 10;

/// Where the sessions of detached tasks are kept: `tasks/` beside the
/// credential file (a session id is a secret, as a token is).
fn store_dir(lookup: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf> {
    let cred = crate::auth::store::path(lookup)?;
    let dir = cred
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Ok(dir.join("tasks"))
}

/// A record's file name: a hash of the server, its URL and the task id,
/// so that the directory names no task.
fn record_name(server: &str, url: &str, id: &str) -> String {
    use sha2::{Digest, Sha256};
    let all = format!("{server}\0{url}\0{id}");
    format!("{}.json", &crate::files::hex(&Sha256::digest(all))[..32])
}

/// Keeps the session a detached task runs in (handshake era over HTTP),
/// so that `task` can take it up from another invocation. Mode 0600 in
/// a 0700 directory that is ours.
pub(crate) fn remember(
    lookup: &dyn Fn(&str) -> Option<String>,
    server: &str,
    url: &str,
    id: &str,
    session: &str,
    version: mcp::Version,
) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = store_dir(lookup)?;
    let fail = |e: std::io::Error| {
        Error::refused(format!("task store {}: {e}", dir.display()))
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(fail)?;
    crate::auth::store::check_dir(&dir)?;
    let path = dir.join(record_name(server, url, id));
    let body = json!({"server": server, "url": url, "session": session,
                      "protocol": version.as_str()});
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(fail)?;
    f.write_all(body.to_string().as_bytes()).map_err(fail)
}

/// The session a detached task of `server` runs in, if this user's store
/// has one for it (and for the server's URL now).
pub(crate) fn recall(
    lookup: &dyn Fn(&str) -> Option<String>,
    server: &str,
    url: &str,
    id: &str,
) -> Result<Option<(String, mcp::Version)>> {
    let dir = store_dir(lookup)?;
    crate::auth::store::check_dir(&dir)?;
    let path = dir.join(record_name(server, url, id));
    let mode = |m: u32| {
        (m != 0o600).then(|| format!("has mode {m:03o}; it must be 0600"))
    };
    let Some(bytes) = crate::auth::store::read_private(
        &path,
        "task record",
        MAX_RECORD,
        &mode,
    )?
    else {
        return Ok(None);
    };
    let bad = || {
        Error::refused(format!("task record {} is malformed", path.display()))
    };
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    if v["server"] != json!(server) || v["url"] != json!(url) {
        return Ok(None);
    }
    let session = v["session"].as_str().ok_or_else(bad)?.to_string();
    let version = v["protocol"]
        .as_str()
        .and_then(mcp::Version::parse)
        .filter(|v| !v.is_modern())
        .ok_or_else(bad)?;
    Ok(Some((session, version)))
}

/// Forgets a detached task's session once the task is collected or
/// cancelled (a missing record is fine).
pub(crate) fn forget(
    lookup: &dyn Fn(&str) -> Option<String>,
    server: &str,
    url: &str,
    id: &str,
) {
    if let Ok(dir) = store_dir(lookup) {
        let _ = std::fs::remove_file(dir.join(record_name(server, url, id)));
    }
}

/// What `task` does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sub {
    Get,
    Wait,
    Result,
    Cancel,
    List,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(poll_ms: Option<u64>) -> Task {
        Task {
            id: "t".into(),
            status: Status::Working,
            message: None,
            ttl_ms: None,
            poll_ms,
        }
    }

    #[test]
    fn the_interval_is_the_servers_within_bounds() {
        assert_eq!(interval(&task(Some(1000))), Duration::from_secs(1));
        assert_eq!(interval(&task(Some(0))), POLL_FLOOR);
        assert_eq!(interval(&task(Some(u64::MAX / 2))), POLL_CEILING);
        assert_eq!(interval(&task(None)), POLL_DEFAULT);
    }

    #[test]
    fn the_fingerprint_hides_the_id() {
        let f = fingerprint("secret-task-id");
        assert_eq!(f.len(), 16);
        assert!(!f.contains("secret"));
        assert_eq!(f, fingerprint("secret-task-id"));
        assert_ne!(f, fingerprint("secret-task-id2"));
    }
}
