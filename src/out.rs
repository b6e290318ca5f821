//! Everything printed on stdout goes through here.
//!
//! One place decides whether stdout is a terminal (and so whether server
//! text is sanitised) and turns a closed pipe into the quiet
//! [`Kind::BrokenPipe`] instead of an error message.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

use crate::error::{Error, Kind, Result};
use crate::term;

static STDOUT_TTY: OnceLock<bool> = OnceLock::new();
static RAW: OnceLock<bool> = OnceLock::new();

/// `--raw`: print what servers sent as is, even on a terminal. Set once.
pub(crate) fn set_raw(raw: bool) {
    let _ = RAW.set(raw);
}

/// Whether server text on stdout is sanitised: on a terminal, unless
/// `--raw`.
fn sanitizing() -> bool {
    stdout_is_tty() && !RAW.get().copied().unwrap_or(false)
}

pub(crate) fn stdout_is_tty() -> bool {
    *STDOUT_TTY.get_or_init(|| std::io::stdout().is_terminal())
}

/// Maps a stdout write error; a closed pipe ends the program quietly.
pub(crate) fn write_error(e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Error::new(Kind::BrokenPipe, "stdout closed")
    } else {
        Error::new(Kind::Usage, format!("cannot write to stdout: {e}"))
    }
}

/// Prints text we produced ourselves (tables, labels) as is.
pub(crate) fn print(text: &str) -> Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes()).and_then(|_| o.flush()).map_err(write_error)
}

/// Prints text that came from a server: sanitised on a terminal.
pub(crate) fn print_untrusted(text: &str) -> Result<()> {
    if sanitizing() {
        print(&term::sanitize(text, term::Lines::Keep))
    } else {
        print(text)
    }
}

/// Prints one JSON value, pretty, with a trailing newline.
pub(crate) fn json(value: &serde_json::Value) -> Result<()> {
    let mut s = serde_json::to_string_pretty(value)
        .map_err(|e| Error::server(format!("cannot encode JSON: {e}")))?;
    s.push('\n');
    if sanitizing() { print(&term::json_escape(&s)) } else { print(&s) }
}

/// For text that is shown on a terminal: sanitised one-liner there,
/// untouched in a pipe.
pub(crate) fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    if sanitizing() { term::line(text) } else { text.into() }
}

/// Formats rows as left-aligned columns separated by two spaces.
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i + 1 == r.len() {
                line.push_str(c);
            } else {
                line.push_str(c);
                let pad = widths[i] - c.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
