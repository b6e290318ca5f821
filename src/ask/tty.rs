//! The controlling terminal for questions a server asks: `/dev/tty`,
//! never stdin (which may carry data), as the approval prompt does.
//!
//! A line is read with echo and signals off and edited here (backspace,
//! Ctrl-U), so that Ctrl-C and Ctrl-D at a question answer "cancel"
//! instead of killing the run mid-form; the terminal's settings are
//! restored when the [`Tty`] is dropped. Everything written is the
//! caller's, already sanitised.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::sys;

/// How long one question waits for an answer.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);
/// The longest line a person may type.
const MAX_LINE: usize = 4096;

/// What a person did at a question.
#[derive(Debug, PartialEq)]
pub(crate) enum Typed {
    Line(String),
    /// Ctrl-C or Ctrl-D.
    Cancel,
    /// No answer within [`ANSWER_TIMEOUT`] or before the request's
    /// deadline, or the terminal went away.
    Timeout,
}

pub(crate) struct Tty {
    file: File,
    saved: Option<libc::termios>,
    /// No question waits past this (the request's deadline).
    until: Instant,
}

impl Tty {
    /// The controlling terminal, when this run has one and a person is
    /// likely at it (stdin or stderr is a terminal); no question waits
    /// past `until`.
    pub(crate) fn open(until: Instant) -> Option<Tty> {
        use std::io::IsTerminal;
        if !(std::io::stdin().is_terminal() || std::io::stderr().is_terminal())
        {
            return None;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .ok()?;
        Some(Tty { file, saved: None, until })
    }

    pub(crate) fn write(&mut self, text: &str) -> bool {
        self.file
            .write_all(text.as_bytes())
            .and_then(|_| self.file.flush())
            .is_ok()
    }

    /// Echo, canonical mode and signals off; restored on drop.
    fn raw(&mut self) {
        if self.saved.is_some() {
            return;
        }
        self.saved = sys::tty_raw(self.file.as_raw_fd());
    }

    /// Reads one line, echoing what is typed.
    pub(crate) fn read_line(&mut self) -> Typed {
        self.raw();
        let fd = self.file.as_raw_fd();
        let end = (Instant::now() + ANSWER_TIMEOUT).min(self.until);
        let mut line: Vec<u8> = vec![];
        loop {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() || !sys::wait_readable(fd, left) {
                self.write("\n");
                return Typed::Timeout;
            }
            let mut b = [0u8; 1];
            match self.file.read(&mut b) {
                Ok(1) => {}
                _ => return Typed::Timeout,
            }
            match b[0] {
                b'\r' | b'\n' => {
                    self.write("\n");
                    return Typed::Line(
                        String::from_utf8_lossy(&line).into_owned(),
                    );
                }
                0x03 | 0x04 => {
                    self.write("\n");
                    return Typed::Cancel;
                }
                0x7f | 0x08 => {
                    // One character back (a whole UTF-8 sequence).
                    while let Some(c) = line.pop() {
                        if c & 0xc0 != 0x80 {
                            break;
                        }
                    }
                    self.write("\x08 \x08");
                }
                0x15 => {
                    line.clear();
                    self.write("\r\x1b[K");
                }
                c if c < 0x20 => {}
                c if line.len() < MAX_LINE => {
                    line.push(c);
                    if c < 0x80 {
                        self.write(&(c as char).to_string());
                    } else if let Some(s) = complete_char(&line) {
                        self.write(&s);
                    }
                }
                _ => {}
            }
        }
    }
}

/// The last character of `line` when its UTF-8 sequence is complete.
fn complete_char(line: &[u8]) -> Option<String> {
    let start = line.iter().rposition(|b| b & 0xc0 != 0x80)?;
    std::str::from_utf8(&line[start..]).ok().map(str::to_string)
}

impl Drop for Tty {
    fn drop(&mut self) {
        if let Some(t) = self.saved.take() {
            sys::tty_restore(self.file.as_raw_fd(), &t);
        }
    }
}
