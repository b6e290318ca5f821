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

/// What `call` prints of a tool result (`--output`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Output {
    /// Each content block, then the structured content unless a text
    /// block already carries it.
    #[default]
    Auto,
    /// The content blocks only.
    Text,
    /// The structured content only, as JSON (an error when there is none).
    Structured,
    /// The result object as `--json` prints it, indented.
    Json,
    /// The result object on one line (for JSON Lines), members as
    /// received, bounded by `--max-output`.
    Raw,
}

impl Output {
    pub(crate) const NAMES: [&'static str; 5] =
        ["auto", "text", "structured", "json", "raw"];
}

impl std::str::FromStr for Output {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Output, String> {
        Ok(match s {
            "auto" => Output::Auto,
            "text" => Output::Text,
            "structured" => Output::Structured,
            "json" => Output::Json,
            "raw" => Output::Raw,
            _ => return Err(format!("unknown output '{s}'")),
        })
    }
}

/// Where saved content goes, if anywhere.
#[derive(Debug)]
pub(crate) struct Saver<'a> {
    dir: Option<&'a Path>,
    /// The stem of a file without a name of its own: `PREFIX-N.ext`.
    prefix: String,
    count: usize,
}

impl<'a> Saver<'a> {
    pub(crate) fn new(dir: Option<&'a Path>, prefix: String) -> Saver<'a> {
        Saver { dir, prefix, count: 0 }
    }

    /// Whether `--save` was given.
    pub(crate) fn saves(&self) -> bool {
        self.dir.is_some()
    }

    /// Writes `data` under a name from `named` (a resource's name or URI,
    /// sanitised, its extension kept) or `PREFIX-N.ext`; a taken name gets
    /// `-2`, `-3`, … rather than being overwritten.
    fn save(
        &mut self,
        data: &[u8],
        mime: &str,
        named: Option<&str>,
    ) -> Result<Option<PathBuf>> {
        let Some(dir) = self.dir else { return Ok(None) };
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::usage(format!("--save {}: {e}", dir.display()))
        })?;
        let ext = extension(mime);
        let named =
            named.and_then(file_name).map(|n| match n.rsplit_once('.') {
                Some((s, e)) if !s.is_empty() => {
                    (s.to_string(), e.to_string())
                }
                _ => (n, ext.to_string()),
            });
        for n in 1.. {
            let name = match &named {
                Some((stem, ext)) if n == 1 => format!("{stem}.{ext}"),
                Some((stem, ext)) => format!("{stem}-{n}.{ext}"),
                None => {
                    self.count += 1;
                    format!("{}-{}.{ext}", self.prefix, self.count)
                }
            };
            let path = dir.join(name);
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
        unreachable!("one of infinitely many names is free")
    }
}

/// A safe file name from a resource's name or URI: the last path segment
/// (no query or fragment), only `A-Z a-z 0-9 . _ -`, no leading dot, at
/// most 100 bytes; `None` when nothing is left.
fn file_name(named: &str) -> Option<String> {
    let path = named.split(['?', '#']).next().unwrap_or("");
    let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let clean: String = last
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '_',
        })
        .collect();
    let clean = clean.trim_start_matches('.');
    let clean = &clean[..clean.len().min(100)];
    (!clean.is_empty() && clean.chars().any(|c| c != '_'))
        .then(|| clean.to_string())
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
        "text/markdown" => "md",
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
    named: Option<&str>,
    saver: &mut Saver<'_>,
) -> Result<String> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim());
    let Ok(bytes) = bytes else {
        return Ok(format!(
            "[{kind}: {}, invalid base64]\n",
            out::shown(mime)
        ));
    };
    Ok(match saver.save(&bytes, mime, named)? {
        Some(p) => saved(kind, mime, bytes.len(), &p),
        None => format!(
            "[{kind}: {}, {} bytes; use --save DIR to keep it]\n",
            out::shown(mime),
            bytes.len()
        ),
    })
}

fn saved(kind: &str, mime: &str, len: usize, p: &Path) -> String {
    format!(
        "[{kind}: {}, {len} bytes, saved to {}]\n",
        out::shown(mime),
        out::shown(&p.display().to_string())
    )
}

/// A payload `--max-output` dropped (the bound marks it `truncated`).
fn cut(v: &Value) -> bool {
    v.get("truncated") == Some(&Value::Bool(true))
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
        t @ ("image" | "audio") if cut(b) => Ok(format!(
            "[{t}: {}, cut by --max-output]\n",
            out::shown(str_of(b, "mimeType"))
        )),
        t @ ("image" | "audio") => {
            binary(t, str_of(b, "data"), str_of(b, "mimeType"), None, saver)
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
            let r = b.get("resource").unwrap_or(&Value::Null);
            resource_contents(r, saver, false)
        }
        other => {
            Ok(format!("[content of unknown type '{}']\n", out::shown(other)))
        }
    }
}

/// A tool result as `call` prints it: each block once, from the bounded
/// result `kept`, except that `--save` writes binary content whole (from
/// `whole`, the result before it was bounded). Structured
/// content follows only when no text block already carries it: as its
/// JSON text, or as the text that `{"result": …}` wraps (the Python SDK
/// and fastmcp wrap a non-object return value so).
/// With `--output text`, the blocks only.
pub(crate) fn tool_result(
    kept: &Value,
    whole: &Value,
    saver: &mut Saver<'_>,
    output: Output,
) -> Result<String> {
    // Borrowed, never copied: a result may be as large as a message.
    fn blocks(r: &Value) -> &[Value] {
        r.get("content").and_then(Value::as_array).map_or(&[], Vec::as_slice)
    }
    let result = kept;
    let (kept, whole) = (blocks(kept), blocks(whole));
    let mut text = String::new();
    for (i, b) in kept.iter().enumerate() {
        let binary = !matches!(str_of(b, "type"), "text" | "resource_link");
        let b = match whole.get(i) {
            Some(w) if binary && saver.saves() => w,
            _ => b,
        };
        text.push_str(&block(b, saver)?);
    }
    let texts: Vec<&str> =
        whole.iter().filter_map(|b| b.get("text")?.as_str()).collect();
    let repeated = |sc: &Value| {
        let sc_bare = without_nulls(sc);
        texts.iter().any(|t| {
            let parsed = serde_json::from_str::<Value>(t).ok();
            parsed.as_ref().map(without_nulls).as_ref() == Some(&sc_bare)
                || sc.as_object().is_some_and(|m| {
                    m.len() == 1
                        && m.get("result").is_some_and(|r| {
                            r.as_str() == Some(t) || Some(r) == parsed.as_ref()
                        })
                })
        })
    };
    if let Some(sc) = result.get("structuredContent")
        && output != Output::Text
        && !repeated(sc)
    {
        text.push_str(&serde_json::to_string_pretty(sc).unwrap_or_default());
        text.push('\n');
    }
    Ok(text)
}

/// `v` without the object members whose value is `null`, at any depth:
/// a server may write the same object as text and as structured content
/// with its unset fields present in one and absent from the other
/// (git-mcp-server's `git_commit`). Key order never matters: objects are
/// compared as maps.
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

/// One item of `resources/read` contents (text or blob). `save_text`:
/// `read --save` saves text too, named after the resource.
pub(crate) fn resource_contents(
    c: &Value,
    saver: &mut Saver<'_>,
    save_text: bool,
) -> Result<String> {
    let named = c
        .get("name")
        .and_then(Value::as_str)
        .or_else(|| c.get("uri").and_then(Value::as_str));
    if let Some(t) = c.get("text").and_then(Value::as_str) {
        let mime =
            c.get("mimeType").and_then(Value::as_str).unwrap_or("text/plain");
        if save_text && let Some(p) = saver.save(t.as_bytes(), mime, named)? {
            return Ok(saved("text", mime, t.len(), &p));
        }
        return Ok(with_newline(t.to_string()));
    }
    if let Some(b) = c.get("blob").and_then(Value::as_str) {
        let mime = c
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or("application/octet-stream");
        if cut(c) {
            return Ok(format!(
                "[blob: {}, cut by --max-output]\n",
                out::shown(mime)
            ));
        }
        return binary("blob", b, mime, named, saver);
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

    #[test]
    fn saved_names_are_safe() {
        assert_eq!(
            file_name("fixture://docs/readme").as_deref(),
            Some("readme")
        );
        assert_eq!(
            file_name("file:///a/b/c.tar.gz?x=1#f").as_deref(),
            Some("c.tar.gz")
        );
        assert_eq!(file_name("../../.bashrc").as_deref(), Some("bashrc"));
        assert_eq!(file_name("a b/é\u{1b}[x").as_deref(), Some("___x"));
        assert_eq!(file_name("dir/"), Some("dir".to_string()));
        assert_eq!(file_name("/"), None);
        assert_eq!(file_name("..."), None);
        assert_eq!(file_name(&"x".repeat(300)).map(|n| n.len()), Some(100));
    }
}
