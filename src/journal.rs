//! The journal: an append-only JSON Lines record of what a run did.
//!
//! Enabled by `--journal PATH` or `RIVUMI_MCP_JOURNAL`. One event per line,
//! each with a UTC timestamp and the run's random id, so several runs can
//! share a file. The file is created 0600; an existing one is used only
//! when it is the user's own, 0600 and singly linked, and no symlink is
//! followed, neither the file nor a directory on its path. Events carry names, never secrets: argv and the names of
//! environment variables, URLs (which can hold no credentials, by the
//! config rules), never a token, header value, env value or credential.
//! Like `msg`, it is process-wide state set once at start-up.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

struct Journal {
    file: File,
    run: String,
}

static JOURNAL: OnceLock<Mutex<Journal>> = OnceLock::new();

/// Opens the journal for appending. A new file is created 0600; an
/// existing one must be a regular file of the user's own, mode 0600, with
/// one link; no component of the path may be a symbolic link. Anything
/// else is refused with the file named, so that a journal cannot be turned
/// into a write to someone else's file (a symlink or hard link planted in
/// a shared directory) or be read by others.
pub(crate) fn open(path: &Path) -> Result<()> {
    let shown = path.display();
    let refuse = |why: String| Error::usage(format!("journal {shown}: {why}"));
    check_directories(path).map_err(refuse)?;
    let file = open_file(path).map_err(refuse)?;
    // The walk again: a directory swapped for a link while the file was
    // opened is noticed too.
    check_directories(path).map_err(refuse)?;
    let mut id = [0u8; 8];
    getrandom::fill(&mut id).map_err(|e| {
        Error::usage(format!("no randomness for the run id: {e}"))
    })?;
    let run = crate::files::hex(&id);
    let _ = JOURNAL.set(Mutex::new(Journal { file, run }));
    Ok(())
}

/// Refuses a symbolic link among the directories of `path`, as written
/// (a relative path starts at the working directory, which is not
/// checked).
fn check_directories(path: &Path) -> std::result::Result<(), String> {
    let Some(parent) = path.parent() else { return Ok(()) };
    let mut walked = PathBuf::new();
    for part in parent.components() {
        walked.push(part);
        if !matches!(part, Component::Normal(_)) {
            continue;
        }
        // A missing directory fails at the open, with its own error.
        let meta = std::fs::symlink_metadata(&walked);
        if meta.is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(format!(
                "refused: directory {} is a symbolic link (give the \
                 journal a path without links)",
                walked.display()
            ));
        }
    }
    Ok(())
}

/// Creates the file, or opens the existing one and checks it.
fn open_file(path: &Path) -> std::result::Result<File, String> {
    let opts = |create: bool| {
        let mut o = std::fs::OpenOptions::new();
        o.append(true)
            .create_new(create)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        o
    };
    let cannot = |e: std::io::Error| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            "cannot open: it is a symbolic link".to_string()
        } else {
            format!("cannot open: {e}")
        }
    };
    match opts(true).open(path) {
        Ok(file) => return Ok(file),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(cannot(e)),
    }
    let file = opts(false).open(path).map_err(cannot)?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".to_string());
    }
    if meta.nlink() > 1 {
        return Err(format!(
            "refused: the file has {} hard links (a journal must be a file \
             of its own)",
            meta.nlink()
        ));
    }
    if meta.uid() != crate::sys::euid() {
        return Err("refused: the file belongs to another user".to_string());
    }
    let mode = meta.mode() & 0o7777;
    if mode != 0o600 {
        return Err(format!(
            "refused: the file's mode is {mode:04o}, not 0600 (others could \
             read or change it; chmod 600 it or give a new path)"
        ));
    }
    Ok(file)
}

/// What the journal must still close if a signal ends the run: the calls
/// requested and not yet ended, and the servers started (or connected)
/// and not yet closed. Kept whether or not a journal is open (it is
/// small), so that the record never depends on the order of start-up.
#[derive(Default)]
struct Open {
    next: u64,
    calls: Vec<(u64, String, String, Instant)>,
    servers: Vec<String>,
    /// Set once a signal is being handled: the signal thread writes the
    /// last events; the others' are dropped, so each call ends once.
    stopped: bool,
}

static OPEN: Mutex<Open> = Mutex::new(Open {
    next: 0,
    calls: vec![],
    servers: vec![],
    stopped: false,
});

fn open_state() -> std::sync::MutexGuard<'static, Open> {
    OPEN.lock().unwrap_or_else(|p| p.into_inner())
}

/// A call between `call_requested` and its outcome; dropping it ends
/// that span (the executor journals the outcome itself).
pub(crate) struct PendingCall(u64);

/// Notes a requested call until the guard is dropped; a signal in the
/// meantime journals it as `interrupted` ([`interrupted`]).
pub(crate) fn call_pending(server: &str, tool: &str) -> PendingCall {
    let mut o = open_state();
    o.next += 1;
    let key = o.next;
    o.calls.push((key, server.to_string(), tool.to_string(), Instant::now()));
    PendingCall(key)
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        open_state().calls.retain(|c| c.0 != self.0);
    }
}

/// What the signal thread tells the journal (`sys::observe_signals`):
/// the calls in progress before the servers are closed, the servers
/// after.
pub(crate) fn on_signal(signal: &'static str, closed: bool) {
    match closed {
        false => interrupted(signal),
        true => closed_by_signal(signal),
    }
}

/// Called by the signal thread as soon as a termination signal arrives:
/// every pending call ends with an `error` event of code `interrupted`
/// naming the signal, and no other thread writes after that.
pub(crate) fn interrupted(signal: &str) {
    let calls = {
        let mut o = open_state();
        o.stopped = true;
        std::mem::take(&mut o.calls)
    };
    for (_, server, tool, started) in calls {
        write(
            "error",
            json!({"server": server, "tool": tool,
                   "duration_ms": started.elapsed().as_millis() as u64,
                   "code": crate::error::Kind::Signal(0).name(),
                   "signal": signal}),
        );
    }
}

/// Called by the signal thread once it has ended the servers: a
/// `server_closed` event (how: `signal`) for each server still open.
pub(crate) fn closed_by_signal(signal: &str) {
    let servers = std::mem::take(&mut open_state().servers);
    for server in servers {
        write(
            "server_closed",
            json!({"server": server, "how": "signal", "signal": signal}),
        );
    }
}

/// Appends one event. `fields` must be a JSON object; it must not hold
/// secrets. A failing write is reported once on stderr and otherwise
/// ignored: the journal never changes what a command does. A started or
/// connected server is noted as open until its `server_closed`.
pub(crate) fn event(kind: &str, fields: Value) {
    {
        let mut o = open_state();
        if o.stopped {
            return;
        }
        let server = fields.get("server").and_then(Value::as_str);
        match (kind, server) {
            ("server_spawned" | "server_connected", Some(s)) => {
                o.servers.push(s.to_string());
            }
            ("server_closed", Some(s)) => {
                if let Some(i) = o.servers.iter().position(|x| x == s) {
                    o.servers.remove(i);
                }
            }
            _ => {}
        }
    }
    write(kind, fields);
}

fn write(kind: &str, fields: Value) {
    let Some(j) = JOURNAL.get() else { return };
    let Ok(mut j) = j.lock() else { return };
    let mut line = Map::new();
    line.insert("ts".into(), json!(timestamp(SystemTime::now())));
    line.insert("run".into(), json!(j.run));
    line.insert("event".into(), json!(kind));
    if let Value::Object(m) = fields {
        line.extend(m);
    }
    let mut bytes = Value::Object(line).to_string().into_bytes();
    bytes.push(b'\n');
    // One write call per line: O_APPEND keeps lines of concurrent runs
    // whole.
    if let Err(e) = j.file.write_all(&bytes) {
        static WARNED: OnceLock<()> = OnceLock::new();
        if WARNED.set(()).is_ok() {
            crate::msg::warn(&format!("journal: cannot write: {e}"));
        }
    }
}

/// RFC 3339 UTC with milliseconds, from the civil-from-days algorithm
/// (no time crate needed for this one format).
pub(crate) fn timestamp(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{:03}Z",
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps() {
        let t = |s: u64| timestamp(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(t(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(t(951_782_400), "2000-02-29T00:00:00.000Z");
        assert_eq!(t(1_798_675_200), "2026-12-31T00:00:00.000Z");
        assert_eq!(
            timestamp(UNIX_EPOCH + Duration::from_millis(1_500)),
            "1970-01-01T00:00:01.500Z"
        );
    }
}
