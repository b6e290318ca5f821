//! Diagnostics on stderr: the only place that writes there.
//!
//! The verbosity is set once at start-up from `-q`/`-v` and never changed
//! (ripgrep's `messages.rs` does the same). Everything a server said is
//! sanitised here when stderr is a terminal, so no caller has to remember.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use crate::term;

static LEVEL: AtomicU8 = AtomicU8::new(1);
static STDERR_TTY: OnceLock<bool> = OnceLock::new();

/// 0 = quiet (errors only), 1 = normal (warnings), 2+ = verbose.
pub(crate) fn set_level(level: u8) {
    LEVEL.store(level, Ordering::Relaxed);
}

pub(crate) fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
}

pub(crate) fn verbose() -> bool {
    level() >= 2
}

/// Whether stderr is a terminal (decides sanitising and progress output).
pub(crate) fn stderr_is_tty() -> bool {
    *STDERR_TTY.get_or_init(|| std::io::stderr().is_terminal())
}

/// Writes one line to stderr, sanitised when stderr is a terminal. A
/// failing stderr is ignored: there is nowhere left to report it.
pub(crate) fn line(text: &str) {
    clear_progress();
    let text = if stderr_is_tty() {
        term::sanitize(text, term::Lines::Keep)
    } else {
        text.into()
    };
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
}

/// Whether a progress line is on the terminal now.
static PROGRESS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Shows `text` as the one progress line on a terminal (stderr), in
/// place of the previous one; nothing when stderr is not a terminal.
pub(crate) fn progress(text: &str) {
    if !stderr_is_tty() {
        return;
    }
    let text = term::clip(&term::line(text), 150).into_owned();
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[K{text}");
    let _ = err.flush();
    PROGRESS.store(true, Ordering::Relaxed);
}

/// Erases the progress line, if one is shown.
pub(crate) fn clear_progress() {
    if PROGRESS.swap(false, Ordering::Relaxed) {
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K");
        let _ = err.flush();
    }
}

/// `rivumi-mcp: <error>`; always shown.
pub(crate) fn error(text: &str) {
    line(&format!("rivumi-mcp: {text}"));
}

/// `rivumi-mcp: warning: <text>`; hidden by `-q`.
pub(crate) fn warn(text: &str) {
    if level() >= 1 {
        line(&format!("rivumi-mcp: warning: {text}"));
    }
}

/// Shown only with `-v`.
pub(crate) fn debug(text: &str) {
    if verbose() {
        line(&format!("rivumi-mcp: {text}"));
    }
}

/// A line from (or about) a server, prefixed `[server]`; shown with `-v`.
pub(crate) fn server_line(server: &str, text: &str) {
    if verbose() {
        line(&format!("[{server}] {}", term::line(text)));
    }
}
