//! Turning results (tool content, resource contents, prompt messages) into
//! terminal text.
//!
//! Text is printed as sent (sanitised on a terminal); binary content is
//! never dumped: images, audio and blobs are summarised by type and size,
//! or written to files under `--save DIR`.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::out;

/// Where binary content goes, if anywhere.
#[derive(Debug)]
pub(crate) struct Saver<'a> {
    pub(crate) dir: Option<&'a Path>,
    pub(crate) prefix: String,
    pub(crate) count: usize,
}

impl Saver<'_> {
    fn save(&mut self, data: &[u8], mime: &str) -> Result<Option<PathBuf>> {
        let Some(dir) = self.dir else { return Ok(None) };
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::usage(format!("--save {}: {e}", dir.display()))
        })?;
        let ext = extension(mime);
        loop {
            self.count += 1;
            let path =
                dir.join(format!("{}-{}.{ext}", self.prefix, self.count));
            let file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o644)
                .open(&path);
            match file {
                Ok(mut f) => {
                    f.write_all(data).map_err(|e| {
                        Error::usage(format!("{}: {e}", path.display()))
                    })?;
                    return Ok(Some(path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => {
                    return Err(Error::usage(format!(
                        "{}: {e}",
                        path.display()
                    )));
                }
            }
        }
    }
}

fn extension(mime: &str) -> &'static str {
    match mime.split(';').next().unwrap_or("").trim() {
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "audio/wav" | "audio/x-wav" => "wav",
        "audio/mpeg" => "mp3",
        "audio/ogg" => "ogg",
        "application/pdf" => "pdf",
        "application/json" => "json",
        m if m.starts_with("text/") => "txt",
        _ => "bin",
    }
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// A base64 payload: summarised, or saved with `--save`.
fn binary(
    kind: &str,
    data: &str,
    mime: &str,
    saver: &mut Saver<'_>,
) -> Result<String> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim());
    let Ok(bytes) = bytes else {
        return Ok(format!(
            "[{kind}: {}, invalid base64]\n",
            out::shown(mime)
        ));
    };
    match saver.save(&bytes, mime)? {
        Some(p) => Ok(format!(
            "[{kind}: {}, {} bytes, saved to {}]\n",
            out::shown(mime),
            bytes.len(),
            p.display()
        )),
        None => Ok(format!(
            "[{kind}: {}, {} bytes; use --save DIR to keep it]\n",
            out::shown(mime),
            bytes.len()
        )),
    }
}

fn with_newline(mut s: String) -> String {
    if !s.is_empty() && !s.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// One content block of a tool result or prompt message.
pub(crate) fn block(b: &Value, saver: &mut Saver<'_>) -> Result<String> {
    match str_of(b, "type") {
        "text" => Ok(with_newline(str_of(b, "text").to_string())),
        t @ ("image" | "audio") => {
            binary(t, str_of(b, "data"), str_of(b, "mimeType"), saver)
        }
        "resource_link" => Ok(format!(
            "[resource link: {}{}]\n",
            out::shown(str_of(b, "uri")),
            match b.get("mimeType").and_then(Value::as_str) {
                Some(m) => format!(" ({})", out::shown(m)),
                None => String::new(),
            }
        )),
        "resource" => {
            resource_contents(b.get("resource").unwrap_or(&Value::Null), saver)
        }
        other => {
            Ok(format!("[content of unknown type '{}']\n", out::shown(other)))
        }
    }
}

/// One item of `resources/read` contents (text or blob).
pub(crate) fn resource_contents(
    c: &Value,
    saver: &mut Saver<'_>,
) -> Result<String> {
    if let Some(t) = c.get("text").and_then(Value::as_str) {
        return Ok(with_newline(t.to_string()));
    }
    if let Some(b) = c.get("blob").and_then(Value::as_str) {
        let mime = c
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or("application/octet-stream");
        return binary("blob", b, mime, saver);
    }
    Ok(format!(
        "[resource {} without text or blob]\n",
        out::shown(str_of(c, "uri"))
    ))
}

/// Prints text from a server on stdout (sanitised on a terminal).
pub(crate) fn print(text: &str) -> Result<()> {
    out::print_untrusted(text)
}

/// The first `max` non-blank lines of a description, trimmed, and how many
/// non-blank lines follow them: a description is never cut silently, the
/// caller shows [`more_lines`] of the rest.
pub(crate) fn description_lines(d: &str, max: usize) -> (Vec<&str>, usize) {
    let mut lines = d.lines().map(str::trim).filter(|l| !l.is_empty());
    let shown: Vec<&str> = lines.by_ref().take(max).collect();
    (shown, lines.count())
}

/// The marker for `n` description lines not shown: `(N more lines)`.
pub(crate) fn more_lines(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => "(1 more line)".to_string(),
        n => format!("({n} more lines)"),
    }
}

/// A description on one line: its first line, then the marker for the
/// lines not shown (`list` shows this; `list --json` has them all).
pub(crate) fn description_line(d: &str) -> String {
    let (first, more) = description_lines(d, 1);
    let first = first.first().copied().unwrap_or("");
    match more {
        0 => first.to_string(),
        n => format!("{first} {}", more_lines(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_description_says_how_much_is_left() {
        assert_eq!(description_line("One line."), "One line.");
        assert_eq!(description_line("Two.\nLines."), "Two. (1 more line)");
        assert_eq!(
            description_line("\n  First.  \n\nsecond\r\nthird\n\n"),
            "First. (2 more lines)"
        );
        assert_eq!(description_line(""), "");
        let (shown, more) = description_lines("a\nb\nc\nd", 2);
        assert_eq!((shown, more), (vec!["a", "b"], 2));
        assert_eq!(more_lines(0), "");
    }
}
