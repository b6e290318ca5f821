//! The journal: an append-only JSON Lines record of what a run did.
//!
//! Enabled by `--journal PATH` or `RIVUMI_MCP_JOURNAL`. One event per line,
//! each with a UTC timestamp and the run's random id, so several runs can
//! share a file. The file is created 0600 and never followed through a
//! symlink. Events carry names, never secrets: argv and the names of
//! environment variables, URLs (which can hold no credentials, by the
//! config rules), never a token, header value, env value or credential.
//! Like `msg`, it is process-wide state set once at start-up.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

struct Journal {
    file: File,
    run: String,
}

static JOURNAL: OnceLock<Mutex<Journal>> = OnceLock::new();

/// Opens the journal for appending. Refuses a symlink and anything that is
/// not a regular file.
pub(crate) fn open(path: &Path) -> Result<()> {
    let shown = path.display();
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            let why = if e.raw_os_error() == Some(libc::ELOOP) {
                "it is a symbolic link".to_string()
            } else {
                e.to_string()
            };
            Error::usage(format!("journal {shown}: cannot open: {why}"))
        })?;
    let meta = file
        .metadata()
        .map_err(|e| Error::usage(format!("journal {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(Error::usage(format!(
            "journal {shown}: not a regular file"
        )));
    }
    let mut id = [0u8; 8];
    getrandom::fill(&mut id).map_err(|e| {
        Error::usage(format!("no randomness for the run id: {e}"))
    })?;
    let run = crate::allowlist::hex(&id);
    let _ = JOURNAL.set(Mutex::new(Journal { file, run }));
    Ok(())
}

/// Appends one event. `fields` must be a JSON object; it must not hold
/// secrets. A failing write is reported once on stderr and otherwise
/// ignored: the journal never changes what a command does.
pub(crate) fn event(kind: &str, fields: Value) {
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
