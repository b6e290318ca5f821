//! What the operator lets a server ask of this client, and the asking:
//! elicitation forms and URL consent on `/dev/tty` or from scripted
//! answers, sampling through the operator's own command after an
//! approval, and roots only when named.
//!
//! The options are fixed before any server starts ([`Operator::new`],
//! like the executor's policy) and decide the capabilities declared in
//! both eras ([`mcp::Capabilities`]). The session hands every server
//! request, 2025-era or a 2026-07-28 `inputRequests` entry, to
//! [`Operator::serve`] through the [`Client`] trait: one path, and the
//! session itself does no terminal I/O. What the schema allows is decided
//! in [`crate::elicit`]; the journal records each request's kind, the
//! fields answered and the action, never a value.

mod tty;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::elicit::{self, Form};
use crate::error::{Error, Result};
use crate::mcp::{self, Ask};
use crate::session::{Client, ServerAsk};
use crate::{msg, term, urlcheck};
use tty::{Tty, Typed};

/// Held while a server's request is answered.
static ASKING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The environment variable that names the sampling command.
pub(crate) const SAMPLING_VAR: &str = "RIVUMI_MCP_SAMPLING_COMMAND";
/// The most the sampling command may print on stdout.
const SAMPLING_STDOUT: usize = 1 << 20;
/// How long the sampling command may run; with `--timeout`, at most half
/// of it, so that the server still has time to answer the call.
const SAMPLING_TIMEOUT: Duration = Duration::from_secs(120);
/// How many lines of a form's message are shown (the rest is counted).
const FORM_MESSAGE_LINES: usize = 20;
/// How much of a sampling request's messages is shown for approval.
const SAMPLING_SHOWN: usize = 4000;

/// `--elicit`: how forms are answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elicit {
    /// Ask on the terminal (the default when there is one).
    Ask,
    Decline,
    Cancel,
    /// Every field without an answer takes its schema default (SEP-1034).
    Defaults,
}

impl Elicit {
    /// The words `--elicit` takes, in the order of [`Elicit`].
    pub(crate) const NAMES: [&str; 4] =
        ["ask", "decline", "cancel", "defaults"];
}

impl std::str::FromStr for Elicit {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Elicit, String> {
        Ok(match s {
            "ask" => Elicit::Ask,
            "decline" => Elicit::Decline,
            "cancel" => Elicit::Cancel,
            "defaults" => Elicit::Defaults,
            _ => return Err(format!("unknown mode '{s}'")),
        })
    }
}

/// `--log-level`: a level of `logging/setLevel` (RFC 5424 names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LogLevel(&'static str);

impl LogLevel {
    /// Every level, least severe first.
    pub(crate) const NAMES: [&str; 8] = [
        "debug",
        "info",
        "notice",
        "warning",
        "error",
        "critical",
        "alert",
        "emergency",
    ];
}

impl std::str::FromStr for LogLevel {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<LogLevel, String> {
        LogLevel::NAMES
            .into_iter()
            .find(|n| *n == s)
            .map(LogLevel)
            .ok_or_else(|| format!("unknown level '{s}'"))
    }
}

/// The operator's options for server requests, as the command line and
/// environment give them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Options {
    pub(crate) elicit: Option<Elicit>,
    /// `--answer NAME=VALUE` words, in order.
    pub(crate) answers: Vec<String>,
    pub(crate) roots: Vec<std::path::PathBuf>,
    pub(crate) sampling_command: Option<String>,
    pub(crate) log_level: Option<LogLevel>,
}
/// How many of a sampling request's messages are shown (the rest are
/// counted).
const SAMPLING_MESSAGES: usize = 20;
/// How many of a sampling request's other members are shown (the rest
/// are counted).
const SAMPLING_FIELDS: usize = 20;

/// The operator: the options, checked, and the approvals that go with
/// them.
#[derive(Debug, Default)]
pub(crate) struct Operator {
    caps: mcp::Capabilities,
    elicit: Option<Elicit>,
    answers: Vec<String>,
    roots: Vec<Value>,
    sampling: Option<Vec<String>>,
    sampling_timeout: Duration,
    yes: bool,
    read_only: bool,
    log_level: Option<LogLevel>,
    /// A person pressed Ctrl-C at a question of this round: the rest of
    /// the round is not asked.
    round_cancelled: std::sync::atomic::AtomicBool,
}

impl Operator {
    /// Checks the options: every root a directory, the sampling command
    /// an argv (`--sampling-command`, else [`SAMPLING_VAR`]).
    pub(crate) fn new(
        o: &Options,
        yes: bool,
        read_only: bool,
        timeout: Option<Duration>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Operator> {
        let mut roots = vec![];
        for dir in &o.roots {
            roots.push(root(dir)?);
        }
        let command = o
            .sampling_command
            .clone()
            .map(|c| ("--sampling-command", c))
            .or_else(|| {
                lookup(SAMPLING_VAR)
                    .filter(|v| !v.is_empty())
                    .map(|c| (SAMPLING_VAR, c))
            });
        let sampling = match command {
            Some((src, c)) => Some(
                crate::words::split_command(&c)
                    .map_err(|e| Error::usage(format!("{src}: {e}")))?,
            ),
            None => None,
        };
        Ok(Operator {
            caps: mcp::Capabilities {
                elicitation_form: true,
                elicitation_url: true,
                sampling: sampling.is_some(),
                roots: !roots.is_empty(),
            },
            elicit: o.elicit,
            answers: o.answers.clone(),
            roots,
            sampling,
            sampling_timeout: timeout
                .map_or(SAMPLING_TIMEOUT, |t| (t / 2).min(SAMPLING_TIMEOUT)),
            yes,
            read_only,
            log_level: o.log_level,
            round_cancelled: Default::default(),
        })
    }

    /// A form: scripted answers and defaults first, then the terminal for
    /// the rest when asking is allowed.
    fn form(&self, q: &ServerAsk<'_>, note: &mut Note) -> Value {
        let form = match Form::parse(q.params) {
            Ok(f) => f,
            Err(why) => {
                msg::warn(&format!(
                    "server '{}' asked for a form that cannot be asked ({}); \
                     declined",
                    q.server,
                    term::line(&why)
                ));
                return note.decline();
            }
        };
        let words = match q.answers {
            Some(a) => elicit::words_of(a),
            None => self.answers.clone(),
        };
        match self.elicit {
            Some(Elicit::Decline) => return note.decline(),
            Some(Elicit::Cancel) => return note.cancel(),
            _ => {}
        }
        let given = match form.typed(&words, &read_answer_file) {
            Ok(g) => g,
            Err(why) => {
                msg::error(&format!(
                    "server '{}': elicitation: {}; declined (a value that \
                     fails the schema is never sent)",
                    q.server,
                    term::line(&why)
                ));
                return note.decline();
            }
        };
        let defaults = self.elicit == Some(Elicit::Defaults);
        let (content, missing) = form.fill(&given, defaults);
        let asking = matches!(self.elicit, None | Some(Elicit::Ask))
            || !missing.is_empty();
        let tty = if asking { Tty::open(q.until) } else { None };
        if let Some(mut tty) = tty {
            return match ask_form(&mut tty, q.server, &form, content) {
                Asked::Accept(content) => note.accept(content),
                Asked::Decline => note.decline(),
                Asked::Cancel(by_person) => {
                    self.cancelled_by(by_person);
                    note.cancel()
                }
            };
        }
        if !missing.is_empty() {
            msg::warn(&format!(
                "server '{}' asked for a form; declined: no terminal to ask \
                 and no answer for required field(s) {} (pass --answer \
                 NAME=VALUE)",
                q.server,
                missing
                    .iter()
                    .map(|m| format!("'{}'", elicit::shown(m, 80)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            return note.decline();
        }
        if given.is_empty() && !defaults {
            msg::warn(&format!(
                "server '{}' asked for a form{}; declined: no terminal to \
                 ask (pass --answer NAME=VALUE or --elicit defaults)",
                q.server,
                message_note(&form.message)
            ));
            return note.decline();
        }
        note.accept(content)
    }

    /// A URL to open: checked, then consent on a terminal.
    fn url(&self, q: &ServerAsk<'_>, note: &mut Note) -> Value {
        let raw = q.params.get("url").and_then(Value::as_str).unwrap_or("");
        let message =
            q.params.get("message").and_then(Value::as_str).unwrap_or("");
        let host = match check_url(raw) {
            Ok(h) => h,
            Err(why) => {
                msg::warn(&format!(
                    "server '{}' asked to open '{}': refused ({why}); \
                     nothing was opened",
                    q.server,
                    elicit::shown(raw, 300)
                ));
                return note.decline();
            }
        };
        match self.elicit {
            Some(Elicit::Decline) => return note.decline(),
            Some(Elicit::Cancel) => return note.cancel(),
            _ => {}
        }
        let Some(mut tty) = Tty::open(q.until) else {
            msg::line(&format!(
                "rivumi-mcp: server '{}' asks you to open {} ({}); declined: \
                 no terminal to ask",
                q.server,
                elicit::shown(raw, 2000),
                elicit::shown(message, 300)
            ));
            return note.decline();
        };
        let text = format!(
            "rivumi-mcp: server '{}' asks you to open a web page\n  {}\n  \
             url:  {}\n  host: \x1b[1m{}\x1b[0m\nOpen it in the browser? \
             [y/N] ",
            elicit::shown(q.server, 100),
            elicit::shown(message, elicit::SHOWN_TEXT),
            elicit::shown(raw, 2000),
            elicit::shown(&host, 200)
        );
        if !tty.write(&text) {
            return note.decline();
        }
        match tty.read_line() {
            Typed::Line(l) if yes(&l) => {}
            Typed::Cancel => {
                self.cancelled_by(true);
                return note.cancel();
            }
            _ => return note.decline(),
        }
        drop(tty);
        match crate::auth::open_browser(raw, &|k| std::env::var(k).ok()) {
            Ok(()) => {
                note.action = "accept";
                json!({"action": "accept"})
            }
            Err(e) => {
                msg::warn(&format!("{e}"));
                note.decline()
            }
        }
    }

    /// A sampling request: shown, approved like an execute call, then the
    /// operator's command answers it.
    fn sample(&self, q: &ServerAsk<'_>) -> std::result::Result<Value, String> {
        let Some(argv) = &self.sampling else {
            return Err("sampling is not enabled".into());
        };
        if self.read_only {
            return Err("sampling denied: --read-only denies every sampling \
                        request"
                .into());
        }
        if !self.yes {
            let Some(mut tty) = Tty::open(q.until) else {
                return Err("sampling needs approval, but there is no \
                            terminal to ask; pass --yes to approve it"
                    .into());
            };
            let text = format!(
                "rivumi-mcp: server '{}' asks for a model completion\n{}\
                 Run the sampling command '{}'? [y/N] ",
                elicit::shown(q.server, 100),
                sampling_text(q.params),
                elicit::shown(&argv.join(" "), 200)
            );
            if !tty.write(&text) {
                return Err("sampling was not approved".into());
            }
            match tty.read_line() {
                Typed::Line(l) if yes(&l) => {}
                Typed::Cancel => {
                    self.cancelled_by(true);
                    return Err("sampling was not approved".into());
                }
                _ => return Err("sampling was not approved".into()),
            }
        }
        // Never past the request's own deadline.
        let left = q.until.saturating_duration_since(Instant::now());
        let timeout = self.sampling_timeout.min(left);
        if timeout.is_zero() {
            return Err("the request's deadline has passed".into());
        }
        match crate::runner::run_bounded(
            argv,
            q.params,
            timeout,
            SAMPLING_STDOUT,
        ) {
            crate::runner::Ended::Done { status, stdout, stderr } => {
                if !status.success() {
                    let why = String::from_utf8_lossy(&stderr);
                    return Err(format!(
                        "the sampling command failed ({status}){}",
                        match why.trim() {
                            "" => String::new(),
                            w => format!(": {}", elicit::shown(w, 300)),
                        }
                    ));
                }
                create_message_result(&stdout)
            }
            crate::runner::Ended::NotStarted(e) => Err(format!(
                "the sampling command could not start: {}",
                term::line(&e)
            )),
            crate::runner::Ended::TooMuch => Err(format!(
                "the sampling command printed more than {} KiB",
                SAMPLING_STDOUT / 1024
            )),
            crate::runner::Ended::TimedOut { exited } => Err(format!(
                "the sampling command {}",
                crate::runner::timed_out(timeout, exited)
            )),
        }
    }
}

impl Client for Operator {
    fn capabilities(&self) -> mcp::Capabilities {
        self.caps
    }

    fn begin_round(&self) {
        self.round_cancelled.store(false, Ordering::SeqCst);
    }

    fn identity(&self) -> Value {
        json!({"roots": self.roots})
    }

    fn log_level(&self) -> Option<&str> {
        self.log_level.map(|l| l.0)
    }

    fn serve(&self, q: &ServerAsk<'_>) -> std::result::Result<Value, String> {
        let mut note = Note::default();
        // One question on the terminal at a time, even when several
        // servers (list) ask at once.
        let _turn = ASKING.lock().unwrap_or_else(|e| e.into_inner());
        let cancelled = self.round_cancelled.load(Ordering::SeqCst);
        let answer = match q.ask {
            Ask::Ping => return Ok(json!({})),
            // Ctrl-C at an earlier question of this round: nothing more is
            // asked or run in it.
            Ask::Form | Ask::Url if cancelled => Ok(note.cancel()),
            Ask::Sampling if cancelled => {
                note.action = "refused";
                Err("cancelled at the terminal".into())
            }
            Ask::Form => Ok(self.form(q, &mut note)),
            Ask::Url => Ok(self.url(q, &mut note)),
            Ask::Roots => {
                note.action = "answered";
                Ok(json!({"roots": self.roots}))
            }
            Ask::Sampling => {
                let r = self.sample(q);
                note.action = if r.is_ok() { "answered" } else { "refused" };
                r
            }
        };
        crate::journal::event(
            "server_request",
            json!({"server": q.server, "kind": q.ask.kind(),
                   "action": note.action, "fields": note.fields}),
        );
        answer
    }
}

impl Operator {
    /// Notes a cancel; one a person typed (Ctrl-C) ends the round.
    fn cancelled_by(&self, person: bool) {
        if person {
            self.round_cancelled.store(true, Ordering::SeqCst);
        }
    }
}

/// What the journal records of an answer: the action and the names of
/// the fields answered, never their values.
#[derive(Default)]
struct Note {
    action: &'static str,
    fields: Vec<String>,
}

impl Note {
    fn accept(&mut self, content: Map<String, Value>) -> Value {
        self.action = "accept";
        self.fields = content.keys().cloned().collect();
        json!({"action": "accept", "content": content})
    }

    fn decline(&mut self) -> Value {
        self.action = "decline";
        json!({"action": "decline"})
    }

    fn cancel(&mut self) -> Value {
        self.action = "cancel";
        json!({"action": "cancel"})
    }
}

enum Asked {
    Accept(Map<String, Value>),
    Decline,
    /// Cancelled; `true` when a person typed Ctrl-C (or Ctrl-D).
    Cancel(bool),
}

/// Asks a form on the terminal: each field not answered yet, in order,
/// then a summary and a final yes/no.
fn ask_form(
    tty: &mut Tty,
    server: &str,
    form: &Form,
    mut content: Map<String, Value>,
) -> Asked {
    let mut text =
        format!("rivumi-mcp: server '{}' asks:\n", elicit::shown(server, 100));
    // Never cut silently: what is not shown is counted.
    let lines: Vec<&str> = form.message.lines().collect();
    for l in lines.iter().take(FORM_MESSAGE_LINES) {
        text.push_str(&format!("  {}\n", elicit::shown(l, 300)));
    }
    let more = lines.len().saturating_sub(FORM_MESSAGE_LINES);
    if more > 0 {
        text.push_str(&format!("  {}\n", crate::render::more_lines(more)));
    }
    text.push_str("(Enter takes the default; Ctrl-C cancels)\n");
    if !tty.write(&text) {
        return Asked::Cancel(false);
    }
    for f in &form.fields {
        if content.contains_key(&f.name) {
            continue;
        }
        let mut q = format!("\n{} ({}{})", f.label(), f.describe(), {
            if f.required { ", required" } else { "" }
        });
        if let Some(d) = &f.description {
            q.push_str(&format!("\n  {}", elicit::shown(d, 300)));
        }
        if let elicit::FieldKind::Choice { values, labels }
        | elicit::FieldKind::Choices { values, labels, .. } = &f.kind
        {
            for (i, (v, l)) in values.iter().zip(labels).enumerate().take(50) {
                let shown = if v == l {
                    elicit::shown(v, 100)
                } else {
                    format!(
                        "{} ({})",
                        elicit::shown(l, 100),
                        elicit::shown(v, 100)
                    )
                };
                q.push_str(&format!("\n  {}. {shown}", i + 1));
            }
            if values.len() > 50 {
                q.push_str(&format!(
                    "\n  ({} more; type one by value)",
                    values.len() - 50
                ));
            }
        }
        let default = f.default.as_ref().filter(|d| f.check(d).is_ok());
        if let Some(d) = default {
            q.push_str(&format!(
                "\n  [default: {}]",
                elicit::shown(&shown_value(d), 200)
            ));
        }
        q.push_str("\n> ");
        loop {
            if !tty.write(&q) {
                return Asked::Cancel(false);
            }
            let line = match tty.read_line() {
                Typed::Line(l) => l,
                Typed::Cancel => return Asked::Cancel(true),
                Typed::Timeout => return Asked::Cancel(false),
            };
            if line.trim().is_empty() {
                match default {
                    Some(d) => {
                        content.insert(f.name.clone(), d.clone());
                        break;
                    }
                    None if !f.required => break,
                    None => {
                        tty.write("  (required)");
                        continue;
                    }
                }
            }
            match f.typed_text(&line) {
                Ok(v) => {
                    content.insert(f.name.clone(), v);
                    break;
                }
                Err(why) => {
                    tty.write(&format!("  {}", term::line(&why)));
                }
            }
        }
    }
    let mut summary = "\nSend these answers?\n".to_string();
    // In the order the fields were asked (the map is sorted by name);
    // answers given beforehand for fields not in the form come last.
    let asked =
        form.fields.iter().filter_map(|f| content.get_key_value(&f.name));
    let others = content
        .iter()
        .filter(|(k, _)| form.fields.iter().all(|f| f.name != **k));
    for (k, v) in asked.chain(others) {
        summary.push_str(&format!(
            "  {}: {}\n",
            elicit::shown(k, 80),
            elicit::shown(&shown_value(v), 200)
        ));
    }
    summary.push_str("[y/N] ");
    if !tty.write(&summary) {
        return Asked::Cancel(false);
    }
    match tty.read_line() {
        Typed::Line(l) if yes(&l) => Asked::Accept(content),
        Typed::Line(_) => Asked::Decline,
        Typed::Cancel => Asked::Cancel(true),
        Typed::Timeout => Asked::Cancel(false),
    }
}

fn yes(line: &str) -> bool {
    matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// A value as a person reads it: strings without quotes.
fn shown_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// " (message)" for a one-line note, bounded.
fn message_note(m: &str) -> String {
    if m.is_empty() {
        String::new()
    } else {
        format!(" ({})", elicit::shown(m, 200))
    }
}

/// `--answer NAME=@FILE`: the file's text, by the rule of a tool
/// argument's `key=@file` (a regular file, bounded, opened without
/// blocking, so `/dev/zero` or a FIFO is refused at once).
fn read_answer_file(path: &str) -> std::result::Result<String, String> {
    crate::config::read_value(path)
}

/// Checks a URL a server wants opened: https, or http to a loopback
/// address, without credentials. Returns its host.
pub(crate) fn check_url(raw: &str) -> std::result::Result<String, String> {
    if raw.is_empty() {
        return Err("no URL".into());
    }
    if raw.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the URL holds spaces or control characters".into());
    }
    // Refused before anyone is asked: the browser would not be started
    // for it after consent either.
    if raw.contains('#') {
        return Err("the URL has a fragment ('#…'), which a page a server \
                    asks to open may not have"
            .into());
    }
    let base = raw.split('?').next().unwrap_or(raw);
    let url = urlcheck::Url::parse(base).map_err(|e| e.to_string())?;
    Ok(url.host_str())
}

/// A sampling request as the approval shows it, sanitised and bounded:
/// the system prompt, at most [`SAMPLING_MESSAGES`] messages (the rest
/// counted), then every other member of the request — each one reaches
/// the sampling command — at most [`SAMPLING_FIELDS`] of them (the rest
/// counted), each clipped.
fn sampling_text(params: &Value) -> String {
    let mut text = String::new();
    if let Some(s) = params.get("systemPrompt") {
        let s = s.as_str().map_or_else(|| s.to_string(), str::to_string);
        text.push_str(&format!("  system: {}\n", elicit::shown(&s, 500)));
    }
    let messages = params.get("messages").and_then(Value::as_array);
    let all = messages.map_or(0, Vec::len);
    let mut shown = 0;
    for m in messages.into_iter().flatten().take(SAMPLING_MESSAGES) {
        if text.len() > SAMPLING_SHOWN {
            break;
        }
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        let content = match m.get("content") {
            Some(c) if c.get("type") == Some(&json!("text")) => {
                c.get("text").and_then(Value::as_str).unwrap_or("").to_string()
            }
            Some(c) => c.to_string(),
            None => String::new(),
        };
        text.push_str(&format!(
            "  {}: {}\n",
            elicit::shown(role, 20),
            elicit::shown(&content, 500)
        ));
        shown += 1;
    }
    match all - shown {
        0 => {}
        1 => text.push_str("  (1 more message)\n"),
        n => text.push_str(&format!("  ({n} more messages)\n")),
    }
    let others: Vec<(&String, &Value)> = params
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !matches!(k.as_str(), "messages" | "systemPrompt"))
        .collect();
    for (k, v) in others.iter().take(SAMPLING_FIELDS) {
        let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
        text.push_str(&format!(
            "  {}: {}\n",
            elicit::shown(k, 40),
            elicit::shown(&v, 300)
        ));
    }
    match others.len().saturating_sub(SAMPLING_FIELDS) {
        0 => {}
        1 => text.push_str("  (1 more field)\n"),
        n => text.push_str(&format!("  ({n} more fields)\n")),
    }
    text
}

/// The sampling command's stdout as a CreateMessageResult: one JSON
/// object with `role`, `content` and `model`.
fn create_message_result(stdout: &[u8]) -> std::result::Result<Value, String> {
    let text = std::str::from_utf8(stdout)
        .map_err(|_| "the sampling command printed something not UTF-8")?;
    let v: Value = serde_json::from_str(text.trim()).map_err(|e| {
        format!(
            "the sampling command did not print a JSON object ({e}): {}",
            elicit::shown(text.trim(), 100)
        )
    })?;
    let ok = v.is_object()
        && v.get("role").is_some_and(Value::is_string)
        && v.get("content").is_some_and(Value::is_object)
        && v.get("model").is_some_and(Value::is_string);
    if !ok {
        return Err("the sampling command printed JSON that is not a \
                    CreateMessageResult (it needs 'role', 'content' and \
                    'model')"
            .into());
    }
    Ok(v)
}

/// A `--root DIR` as a root: the canonical directory's `file://` URI
/// (percent-encoded) and its name.
fn root(dir: &Path) -> Result<Value> {
    let canon = std::fs::canonicalize(dir).map_err(|e| {
        Error::usage(format!(
            "--root {}: {e}",
            term::line(&dir.to_string_lossy())
        ))
    })?;
    if !canon.is_dir() {
        return Err(Error::usage(format!(
            "--root {}: not a directory",
            term::line(&dir.to_string_lossy())
        )));
    }
    let name = canon
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "/".into());
    Ok(json!({"uri": file_uri(&canon), "name": name}))
}

/// `file://` and the path, percent-encoded except unreserved bytes and
/// `/`.
fn file_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = "file://".to_string();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_percent_encoded_file_uris() {
        assert_eq!(
            file_uri(Path::new("/tmp/a b/ü%")),
            "file:///tmp/a%20b/%C3%BC%25"
        );
    }

    #[test]
    fn only_https_or_loopback_urls_without_credentials_pass() {
        assert_eq!(
            check_url("https://example.com/x?y=1").as_deref(),
            Ok("example.com")
        );
        assert!(check_url("http://127.0.0.1:8/cb").is_ok());
        assert!(check_url("http://example.com/").is_err());
        assert!(check_url("https://u:p@example.com/").is_err());
        assert!(check_url("javascript:alert(1)").is_err());
        assert!(check_url("https://example.com/\u{1b}[2J").is_err());
        assert!(check_url("").is_err());
        let e = check_url("https://example.com/x#frag").unwrap_err();
        assert!(e.contains("fragment"), "{e}");
    }

    #[test]
    fn sampling_output_must_be_a_create_message_result() {
        let good = br#" {"role":"assistant","model":"m",
                         "content":{"type":"text","text":"hi"}} "#;
        assert_eq!(create_message_result(good).unwrap()["model"], "m");
        assert!(create_message_result(b"hello").is_err());
        assert!(create_message_result(b"{\"role\":\"x\"}").is_err());
        assert!(create_message_result(&[0xff, 0xfe]).is_err());
    }

    #[test]
    fn sampling_requests_are_shown_sanitised_and_bounded() {
        let long = "x".repeat(100_000);
        let p = json!({"systemPrompt": "\u{1b}[31mred",
            "messages": [{"role": "user",
                          "content": {"type": "text", "text": long}}],
            "maxTokens": 5});
        let t = sampling_text(&p);
        assert!(!t.contains('\u{1b}'), "{t}");
        assert!(t.len() < 2000, "{}", t.len());
        assert!(t.contains("maxTokens: 5"));
    }

    #[test]
    fn every_member_of_a_sampling_request_is_shown_or_counted() {
        let msg = json!({"role": "user",
            "content": {"type": "text", "text": "x".repeat(400)}});
        let mut p = json!({"messages": vec![msg; 25],
            "includeContext": "allServers", "temperature": 2,
            "metadata": {"k": "\u{1b}]0;title\u{7}"}, "stopSequences": ["a"],
            "modelPreferences": {"hints": [{"name": "big"}]},
            "tools": [{"name": "t".repeat(10_000)}], "maxTokens": 5});
        let t = sampling_text(&p);
        assert!(t.contains("  (15 more messages)\n"), "{t}");
        for k in [
            "includeContext: allServers",
            "temperature: 2",
            "metadata: ",
            "stopSequences: [\"a\"]",
            "modelPreferences: ",
            "tools: ",
            "maxTokens: 5",
        ] {
            assert!(t.contains(k), "{k}: {t}");
        }
        assert!(!t.contains('\u{1b}') && !t.contains('\u{7}'), "{t}");
        assert!(t.len() < 10_000, "{}", t.len());
        for i in 0..30 {
            p[format!("x{i:02}")] = json!(i);
        }
        assert!(sampling_text(&p).contains("(17 more fields)"));
    }
}
