//! The daemon: warm servers between invocations, and no check weakened.
//!
//! `rivumi-mcp daemon start` runs a per-user process that keeps
//! servers running after the invocation that needed them ends. While it
//! runs, every command that speaks to servers asks it for a session in
//! the one place where a launch obtains its transport
//! ([`crate::launch::Context::start`]): everything before that (config,
//! allowlist, pins, expansion) and after it (the lock, hooks, approval,
//! the call, the output bound, the journal) runs in the invocation, as
//! cold. The daemon holds transports only.
//!
//! - [`wire`]: the versioned, bounded line protocol on the socket.
//! - [`pool`]: live sessions keyed by launch identity (reusable).
//! - [`warm`]: one warm server: the pump, the id mapping, the callers.
//! - [`serve`]: the daemon process (socket, peer check, status, stop).
//! - [`client`]: the invocation's side and its transport.
//!
//! The key is the SHA-256 of the complete launch identity as the
//! invocation computed it after expansion ([`key_of`]): argv, directory,
//! the whole environment handed to the server and its sandbox, or an
//! HTTP server's URL, headers and credential (values included), the
//! protocol choice, the client capabilities and roots declared, the log
//! level, the message bound and the build. The daemon receives the values
//! it needs to spawn or connect, recomputes the key to check it, keeps
//! them in memory only for the server's use, and prints or logs names,
//! never values.

pub(crate) mod client;
pub(crate) mod pool;
pub(crate) mod serve;
pub(crate) mod warm;
pub(crate) mod wire;

use std::ffi::OsString;
use std::os::unix::fs::{
    DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::{msg, out, sys};

/// The socket's file name in the daemon's directory.
pub(crate) const SOCKET: &str = "daemon.sock";
/// The lock file that keeps a second daemon from starting.
const LOCK: &str = "daemon.lock";
/// Where a detached daemon writes what it says.
const LOG: &str = "daemon.log";
/// The variable that turns the daemon off for an invocation.
pub(crate) const VAR: &str = "RIVUMI_MCP_DAEMON";
/// `--idle`'s default: a server nobody used this long is retired.
pub(crate) const DEFAULT_IDLE: Duration = Duration::from_secs(300);

/// Whether this invocation may use a running daemon: not with
/// `--no-daemon`, nor with `RIVUMI_MCP_DAEMON=off` (or `0`, `no`,
/// `false`).
pub(crate) fn enabled(
    no_daemon: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> bool {
    let off = lookup(VAR).is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "off" | "0" | "no" | "false"
        )
    });
    !no_daemon && !off
}

/// The daemon's directory: `$XDG_RUNTIME_DIR/rivumi-mcp` when that is
/// set to an absolute path, else `/tmp/rivumi-mcp-UID`.
pub(crate) fn dir(lookup: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    match lookup("XDG_RUNTIME_DIR") {
        Some(d) if Path::new(&d).is_absolute() => {
            Path::new(&d).join("rivumi-mcp")
        }
        _ => PathBuf::from(format!("/tmp/rivumi-mcp-{}", sys::euid())),
    }
}

/// Checks the daemon's directory: a directory (not a symbolic link),
/// owned by this user and closed to everyone else (`strict`, the
/// daemon's own check); or, for a caller, owned by this user or root and
/// writable by nobody else.
pub(crate) fn check_dir(
    dir: &Path,
    strict: bool,
) -> std::result::Result<(), String> {
    let shown = dir.display();
    let m =
        std::fs::symlink_metadata(dir).map_err(|e| format!("{shown}: {e}"))?;
    if m.file_type().is_symlink() {
        return Err(format!("{shown} is a symbolic link"));
    }
    if !m.is_dir() {
        return Err(format!("{shown} is not a directory"));
    }
    let me = sys::euid();
    let owner_ok = m.uid() == me || (!strict && m.uid() == 0);
    if !owner_ok {
        return Err(format!(
            "{shown} belongs to uid {}, not to uid {me}",
            m.uid()
        ));
    }
    let open = if strict { 0o077 } else { 0o022 };
    if m.mode() & open != 0 {
        return Err(format!(
            "{shown} has mode {:o}; it must be 0700",
            m.mode() & 0o7777
        ));
    }
    Ok(())
}

/// Checks the socket a caller is about to connect to: a socket, not a
/// link, this user's (or root's).
pub(crate) fn check_socket(p: &Path) -> std::result::Result<(), String> {
    let m = std::fs::symlink_metadata(p)
        .map_err(|e| format!("{}: {e}", p.display()))?;
    if !m.file_type().is_socket() {
        return Err(format!("{} is not a socket", p.display()));
    }
    if m.uid() != sys::euid() && m.uid() != 0 {
        return Err(format!("{} belongs to uid {}", p.display(), m.uid()));
    }
    Ok(())
}

/// The key of a launch identity: the SHA-256 of its canonical JSON (keys
/// sorted) and the build, in hex.
pub(crate) fn key_of(launch: &Value) -> String {
    let text = format!("{}\n{}", wire::build(), launch);
    crate::files::hex(&Sha256::digest(text.as_bytes()))
}

/// The family of a launch identity: its key with the values left out
/// (the environment's and the headers' values, the credential's): the
/// same server, started for a value that has since changed (a rotated
/// token, a new variable), is of the same family, and its unused warm
/// server is retired when the new one starts (see `pool`). Another
/// option (the protocol, the roots, a sandbox) is another family.
pub(crate) fn family_of(launch: &Value) -> String {
    let mut l = launch.clone();
    for k in ["env", "headers"] {
        if let Some(pairs) = l.get_mut(k).and_then(Value::as_array_mut) {
            for p in pairs.iter_mut() {
                if let Some(v) = p.get_mut(1) {
                    *v = Value::Null;
                }
            }
        }
    }
    if let Some(a) = l.get_mut("auth").filter(|a| a.is_object()) {
        *a = serde_json::json!({"source": a.get("source"),
                                "label": a.get("label")});
    }
    key_of(&l)
}

/// `rivumi-mcp daemon ...` (dispatched before the other commands);
/// `help` is its help text (from the command line's tables).
pub(crate) fn command(args: &[OsString], help: &str) -> Result<()> {
    let mut words = args.iter().map(|a| a.to_string_lossy().into_owned());
    let mut sub = None;
    let (mut foreground, mut json_out, mut idle) =
        (false, false, DEFAULT_IDLE);
    let mut verbose = 0;
    while let Some(w) = words.next() {
        match w.as_str() {
            "-h" | "--help" => return out::print(help),
            "--foreground" => foreground = true,
            "--json" => json_out = true,
            "-v" | "--verbose" => verbose += 1,
            "-q" | "--quiet" => verbose = -1,
            "--idle" => {
                let v = words
                    .next()
                    .ok_or_else(|| Error::usage("--idle: needs a duration"))?;
                idle = parse_duration(&v)
                    .map_err(|e| Error::usage(format!("--idle: {e}")))?;
            }
            s if s.starts_with("--idle=") => {
                idle = parse_duration(&s["--idle=".len()..])
                    .map_err(|e| Error::usage(format!("--idle: {e}")))?;
            }
            "start" | "stop" | "status" if sub.is_none() => sub = Some(w),
            other => {
                return Err(Error::usage(format!(
                    "daemon: unexpected '{}' (see rivumi-mcp daemon --help)",
                    crate::term::clip(&crate::term::line(other), 60)
                )));
            }
        }
    }
    msg::set_level((1 + verbose).max(0) as u8);
    let lookup = crate::sys::lookup;
    match sub.as_deref() {
        Some("start") if foreground => start_foreground(idle, &lookup),
        Some("start") => start_detached(idle, verbose, &lookup),
        Some("stop") => stop(&lookup),
        Some("status") => status(json_out, &lookup),
        _ => Err(Error::usage(
            "daemon: say start, stop or status (see rivumi-mcp daemon --help)",
        )),
    }
}

fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    let v: f64 =
        num.parse().map_err(|_| format!("'{s}' is not a duration"))?;
    crate::deadline::to_duration(v * mult)
        .ok_or_else(|| format!("'{s}' is out of range"))
}

/// Creates (or checks) the daemon's directory.
fn make_dir(dir: &Path) -> Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(Error::refused(format!(
                "daemon: {}: {e}",
                dir.display()
            )));
        }
    }
    check_dir(dir, true)
        .map_err(|why| Error::refused(format!("daemon: {why}")))
}

fn open_private(p: &Path, truncate: bool) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(truncate)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(p)
}

fn start_foreground(
    idle: Duration,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    let dir = dir(lookup);
    make_dir(&dir)?;
    let lock = open_private(&dir.join(LOCK), false).map_err(|e| {
        Error::refused(format!("daemon: {}: {e}", dir.join(LOCK).display()))
    })?;
    if sys::lock_exclusive(&lock, Duration::ZERO).is_err() {
        return Err(Error::refused(format!(
            "daemon: another daemon already runs for this user ({})",
            dir.join(SOCKET).display()
        )));
    }
    let r = serve::run(&dir.join(SOCKET), idle);
    drop(lock);
    r
}

fn start_detached(
    idle: Duration,
    verbose: i32,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    if let Some(s) = query(lookup) {
        out::print(&format!(
            "a daemon already runs (pid {})\n",
            s.get("pid").and_then(Value::as_u64).unwrap_or(0)
        ))?;
        return Ok(());
    }
    let dir = dir(lookup);
    make_dir(&dir)?;
    let log = open_private(&dir.join(LOG), true).map_err(|e| {
        Error::refused(format!("daemon: {}: {e}", dir.join(LOG).display()))
    })?;
    let exe = std::env::current_exe().map_err(|e| {
        Error::server(format!("daemon: cannot find myself: {e}"))
    })?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["daemon", "start", "--foreground", "--idle"])
        .arg(format!("{}", idle.as_secs_f64()))
        .env_clear()
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone().map_err(|e| Error::server(e.to_string()))?)
        .stderr(log);
    if verbose > 0 {
        cmd.arg("-v");
    }
    // The daemon's own environment: what it needs to find its directory;
    // servers get the environment each caller computed, not this one.
    for k in ["XDG_RUNTIME_DIR", "HOME", "PATH", "LANG", "TMPDIR"] {
        if let Some(v) = lookup(k) {
            cmd.env(k, v);
        }
    }
    sys::unblock_signals_in_child(&mut cmd);
    sys::new_session_in_child(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::server(format!("daemon: cannot start: {e}")))?;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if let Some(s) = query(lookup) {
            // Reaped by whoever adopts it (it is in a session of its own).
            std::mem::forget(child);
            return out::print(&format!(
                "daemon started: pid {}, socket {}\n",
                s.get("pid").and_then(Value::as_u64).unwrap_or(0),
                dir.join(SOCKET).display()
            ));
        }
        if let Ok(Some(st)) = child.try_wait() {
            return Err(Error::server(format!(
                "daemon: exited at start ({st}); see {}",
                dir.join(LOG).display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(Error::server(format!(
        "daemon: did not answer within 10 s; see {}",
        dir.join(LOG).display()
    )))
}

/// The running daemon's status, `None` when none answers.
fn query(lookup: &dyn Fn(&str) -> Option<String>) -> Option<Value> {
    let s = client::connect(lookup)?;
    let (v, _) = client::ask(
        &s,
        &Value::Object(wire::request("status")),
        Duration::from_secs(5),
    )
    .ok()?;
    (v.get("ok") == Some(&Value::Bool(true))).then_some(v)
}

fn none_running() -> Error {
    Error::negative("no daemon is running")
}

fn stop(lookup: &dyn Fn(&str) -> Option<String>) -> Result<()> {
    let Some(s) = client::connect(lookup) else { return Err(none_running()) };
    let (v, _) = client::ask(
        &s,
        &Value::Object(wire::request("stop")),
        Duration::from_secs(60),
    )
    .map_err(|e| Error::server(format!("daemon: {e}")))?;
    if v.get("ok") != Some(&Value::Bool(true)) {
        return Err(Error::server(format!(
            "daemon: {}",
            v.get("error").and_then(Value::as_str).unwrap_or("refused")
        )));
    }
    // It answers once every server is closed and its socket removed.
    let pid = v.get("pid").and_then(Value::as_u64).unwrap_or(0);
    out::print(&format!("daemon stopped (pid {pid})\n"))
}

fn status(
    json_out: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    let Some(mut s) = query(lookup) else { return Err(none_running()) };
    if let Some(o) = s.as_object_mut() {
        o.remove("ok");
    }
    if json_out {
        return out::print(&format!("{s}\n"));
    }
    out::print(&render_status(&s))
}

fn render_status(s: &Value) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let ago = |v: &Value| match v.as_u64() {
        Some(t) => format!("{}s ago", now.saturating_sub(t)),
        None => "-".into(),
    };
    let mib = |v: &Value| {
        v.as_u64()
            .map_or("?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
    };
    let mut text = format!(
        "daemon pid {}, rivumi-mcp {}, started {}, memory {} (peak {}), idle {}s\nsocket {}\n",
        s["pid"],
        s["version"].as_str().unwrap_or("?"),
        ago(&s["started"]),
        mib(&s["rss_kib"]),
        mib(&s["peak_rss_kib"]),
        s["idle_secs"].as_f64().unwrap_or(0.0),
        s["socket"].as_str().unwrap_or("?"),
    );
    let servers = s["servers"].as_array().cloned().unwrap_or_default();
    if servers.is_empty() {
        text.push_str("no warm server\n");
        return text;
    }
    let mut rows = vec![
        [
            "NAME",
            "FINGERPRINT",
            "TRANSPORT",
            "ERA",
            "PID",
            "STARTED",
            "LAST USED",
            "CALLS",
            "IN FLIGHT",
            "TASKS",
        ]
        .map(str::to_string),
    ];
    for v in &servers {
        rows.push([
            crate::term::line(v["name"].as_str().unwrap_or("?")).into_owned(),
            v["fingerprint"].as_str().unwrap_or("?").to_string(),
            v["transport"].as_str().unwrap_or("?").to_string(),
            v["era"].as_str().unwrap_or("?").to_string(),
            v["pid"].as_u64().map_or("-".into(), |p| p.to_string()),
            ago(&v["started"]),
            ago(&v["last_used"]),
            v["calls"].to_string(),
            v["in_flight"].to_string(),
            v["tasks"].as_u64().unwrap_or(0).to_string(),
        ]);
    }
    let widths: Vec<usize> = (0..10)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for r in rows {
        let cells: Vec<String> =
            r.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    text
}

/// What `--json` status holds, for the tests of its shape.
#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn durations_take_units() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(
            parse_duration("0.5s").unwrap(),
            Duration::from_millis(500)
        );
        assert!(parse_duration("-1").is_err() && parse_duration("x").is_err());
    }

    #[test]
    fn the_key_changes_with_any_value() {
        let a = json!({"argv": ["srv"], "env": [["TOKEN", "one"]]});
        let b = json!({"argv": ["srv"], "env": [["TOKEN", "two"]]});
        assert_ne!(key_of(&a), key_of(&b));
        assert_eq!(key_of(&a), key_of(&a.clone()));
        assert_eq!(key_of(&a).len(), 64);
    }

    #[test]
    fn the_family_leaves_out_values_and_only_values() {
        let a = json!({"argv": ["srv"], "env": [["TOKEN", "one"]],
                       "choice": "auto"});
        let b = json!({"argv": ["srv"], "env": [["TOKEN", "two"]],
                       "choice": "auto"});
        assert_eq!(family_of(&a), family_of(&b));
        let legacy = json!({"argv": ["srv"], "env": [["TOKEN", "one"]],
                            "choice": "legacy"});
        assert_ne!(family_of(&a), family_of(&legacy));
        let renamed = json!({"argv": ["srv"], "env": [["OTHER", "one"]],
                             "choice": "auto"});
        assert_ne!(family_of(&a), family_of(&renamed));
        let h = |v: &str, src: &str| {
            json!({"url": "https://x/mcp", "headers": [["x-key", v]],
                   "auth": {"source": src, "label": "VAR", "value": v}})
        };
        assert_eq!(family_of(&h("k1", "env")), family_of(&h("k2", "env")));
        assert_ne!(family_of(&h("k1", "env")), family_of(&h("k1", "login")));
    }

    #[test]
    fn off_switches() {
        assert!(enabled(false, &|_| None));
        assert!(!enabled(true, &|_| None));
        assert!(!enabled(false, &|_| Some("off".into())));
        assert!(enabled(false, &|_| Some("on".into())));
    }
}
