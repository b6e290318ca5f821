//! Credentials from a command (`token_command`): a server's bearer token
//! is what an operator's program prints (a password manager, the OS
//! keychain), so the secret never sits in a file or a variable of ours.
//!
//! The command is an argv (no shell), run through the executor's one
//! runner of operator commands: the base environment plus the variables
//! credential helpers need ([`HELPER_ENV`]), its own process group, a
//! deadline ([`DEADLINE`]) and a bound on its stdout ([`MAX_TOKEN`]);
//! nothing on stdin. Its stdout, less one trailing line break, is the
//! token: it must be visible ASCII without spaces. Neither its stdout nor
//! its stderr is ever shown, logged or journaled: a failure names the
//! server and the exit status only. The token is kept in memory for the
//! one invocation (a `batch` that starts the server twice runs the
//! command once) and never stored.
//!
//! `headers_command` is the same for other header values (an API key
//! header): each value is what its command prints, one line of visible
//! ASCII (spaces inside allowed), never shown either.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};

use super::pkce::Secret;
use crate::error::{Error, Kind, Result};
use crate::runner::{Ended, run_bounded_with, timed_out};
use crate::{journal, term};

/// How long the command may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(30);
/// The most it may print on stdout.
pub(crate) const MAX_TOKEN: usize = 16 * 1024;
/// Variables credential helpers need besides the base set, passed when
/// set: the session bus and runtime directory (secret-tool, the OS
/// keychain), GnuPG's (pass), and 1Password's service-account and
/// Connect settings (op).
pub(crate) const HELPER_ENV: &[&str] = &[
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
    "GNUPGHOME",
    "GPG_TTY",
    "PASSWORD_STORE_DIR",
    "OP_SERVICE_ACCOUNT_TOKEN",
    "OP_CONNECT_HOST",
    "OP_CONNECT_TOKEN",
];

/// The tokens obtained in this invocation, by server and argv.
type Cache = Mutex<HashMap<(String, Vec<String>), Secret>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// What a command's output must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// A bearer token: one word.
    Token,
    /// A header value: one line (spaces and tabs inside allowed).
    Header,
}

/// The token `argv` prints for `server`: from this invocation's cache, or
/// by running it.
pub(crate) fn token(server: &str, argv: &[String]) -> Result<Secret> {
    cached(server, ("token_command", String::new()), argv, Shape::Token)
}

/// The value of header `name` of `server` that `argv` prints, likewise.
pub(crate) fn header(
    server: &str,
    name: &str,
    argv: &[String],
) -> Result<Secret> {
    let detail = format!(" (header '{}')", term::line(name));
    cached(server, ("headers_command", detail), argv, Shape::Header)
}

/// The output of `argv` (the server's `what`: the key, and what the
/// messages add after the program), from the cache or run.
fn cached(
    server: &str,
    what: (&str, String),
    argv: &[String],
    shape: Shape,
) -> Result<Secret> {
    let key = (server.to_string(), argv.to_vec());
    if let Some(t) =
        cache().lock().unwrap_or_else(|p| p.into_inner()).get(&key)
    {
        return Ok(t.clone());
    }
    let t = run(server, &what, argv, shape)?;
    cache().lock().unwrap_or_else(|p| p.into_inner()).insert(key, t.clone());
    Ok(t)
}

/// Runs `argv` (the server's `what`) once and judges its output.
fn run(
    server: &str,
    what: &(&str, String),
    argv: &[String],
    shape: Shape,
) -> Result<Secret> {
    let program = argv.first().map(|p| term::line(p).into_owned());
    let program = program.unwrap_or_default();
    let missing = match shape {
        Shape::Token => "no token",
        Shape::Header => "no header",
    };
    let fail = |why: String| {
        Error::new(
            Kind::Auth,
            format!("the {} '{program}'{} {why}; {missing}", what.0, what.1),
        )
        .for_server(server)
    };
    let ended =
        run_bounded_with(argv, HELPER_ENV, &Value::Null, DEADLINE, MAX_TOKEN);
    let outcome = match &ended {
        Ended::Done { status, .. } if status.success() => "ok".to_string(),
        Ended::Done { status, .. } => exit_text(status),
        Ended::TooMuch => "too_much".into(),
        Ended::NotStarted(_) => "not_started".into(),
        Ended::TimedOut { .. } => "timed_out".into(),
    };
    journal::event(
        what.0,
        json!({"server": server, "program": program, "outcome": outcome}),
    );
    let stdout = match ended {
        Ended::Done { status, stdout, .. } if status.success() => stdout,
        Ended::Done { status, .. } => {
            return Err(fail(format!("failed ({})", exit_text(&status))));
        }
        Ended::TooMuch => {
            return Err(fail(format!(
                "printed more than {} KiB",
                MAX_TOKEN / 1024
            )));
        }
        Ended::NotStarted(e) => {
            return Err(fail(format!("could not start: {}", term::line(&e))));
        }
        Ended::TimedOut { exited } => {
            return Err(fail(timed_out(DEADLINE, exited)));
        }
    };
    judge(stdout, shape).map_err(fail)
}

/// "exit status 3", or "killed by signal 9".
fn exit_text(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        (None, None) => "no exit status".into(),
    }
}

/// The token of a successful command's stdout, or why there is none
/// (which never quotes the output).
fn judge(
    stdout: Vec<u8>,
    shape: Shape,
) -> std::result::Result<Secret, String> {
    let mut out = stdout;
    if out.ends_with(b"\n") {
        out.pop();
        if out.ends_with(b"\r") {
            out.pop();
        }
    }
    if out.is_empty() {
        return Err("printed nothing".into());
    }
    let fits = |b: &u8| match shape {
        Shape::Token => (0x21..0x7f).contains(b),
        Shape::Header => (0x20..0x7f).contains(b) || *b == b'\t',
    };
    if !out.iter().all(fits) {
        return Err(match shape {
            Shape::Token => {
                "printed more than one token (spaces, line breaks or \
                 control characters)"
            }
            Shape::Header => {
                "printed more than one line (or control characters)"
            }
        }
        .into());
    }
    // Visible ASCII is UTF-8.
    Ok(Secret::new(String::from_utf8(out).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_one_word_of_visible_ascii() {
        let ok = |b: &[u8]| {
            judge(b.to_vec(), Shape::Token).map(|s| s.expose().to_string())
        };
        assert_eq!(ok(b"abc\n").unwrap(), "abc");
        assert_eq!(ok(b"abc\r\n").unwrap(), "abc");
        assert_eq!(ok(b"abc").unwrap(), "abc");
        for bad in [&b""[..], b"\n", b"a b\n", b"a\nb\n", b"a\x1b[2J", b"\xff"]
        {
            assert!(ok(bad).is_err(), "{bad:?}");
        }
        let header = |b: &[u8]| judge(b.to_vec(), Shape::Header);
        assert_eq!(header(b"Token a b\n").unwrap().expose(), "Token a b");
        assert!(header(b"a\nb\n").is_err());
        assert!(header(b"a\x1b[2J").is_err());
    }

    #[test]
    fn a_failure_names_the_exit_status_never_the_output() {
        let argv: Vec<String> =
            ["sh", "-c", "echo SECRET-OUT; echo SECRET-ERR >&2; exit 3"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let what = ("token_command", String::new());
        let e = run("web", &what, &argv, Shape::Token).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("exit status 3"), "{text}");
        assert!(!text.contains("SECRET"), "{text}");
        assert_eq!(e.kind(), Kind::Auth);
    }

    #[test]
    fn the_output_is_the_token_and_is_cached() {
        let dir = std::env::temp_dir()
            .join(format!("rivumi-token-cmd-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let count = dir.join("count");
        let script =
            format!("echo x >> '{}'; printf 'tok-1\\n'", count.display());
        let argv: Vec<String> =
            ["sh", "-c", &script].iter().map(|s| s.to_string()).collect();
        assert_eq!(token("cached", &argv).unwrap().expose(), "tok-1");
        assert_eq!(token("cached", &argv).unwrap().expose(), "tok-1");
        let runs = std::fs::read_to_string(&count).unwrap();
        assert_eq!(runs.lines().count(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
