//! The executor: the one path every tool call, resource read and prompt get
//! takes, over either transport.
//!
//! The order is fixed here and nowhere else: journal the request, run the
//! pre-tool hooks (any denial stops it), ask for approval (`read` runs
//! without asking; `execute` needs `--yes`, a yes at the terminal prompt,
//! and is always denied under `--read-only`), make the call, bound the
//! observation, journal the result. Commands hand the executor an
//! [`Action`] and never call a server's tools themselves. Nothing a server
//! returns can change the policy for a later call: the policy is built
//! from the operator's flags and environment before any server starts.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::deadline;
use crate::error::{Error, Kind, Result};
use crate::naming::Class;
use crate::session::Session;
use crate::tool::Tool;
use crate::{journal, mcp, msg, sys, term};

/// The default cap on what one observation prints.
pub(crate) const DEFAULT_MAX_OUTPUT: usize = 1 << 20;
/// The default deadline of one hook.
pub(crate) const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the approval prompt waits for an answer.
const PROMPT_TIMEOUT: Duration = Duration::from_secs(300);
/// How much of the arguments the approval prompt shows.
const PROMPT_ARGS: usize = 4000;
/// How much of a hook's stdout/stderr is read.
const HOOK_OUTPUT: u64 = 64 * 1024;

/// The operator's policy, fixed before any server starts.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    pub(crate) yes: bool,
    pub(crate) read_only: bool,
    /// Each hook is an argv.
    pub(crate) hooks: Vec<Vec<String>>,
    pub(crate) hook_timeout: Duration,
    pub(crate) max_output: usize,
}

/// What is to be done.
#[derive(Debug)]
pub(crate) enum Action<'a> {
    Tool { tool: &'a Tool, arguments: &'a Map<String, Value> },
    Read { uri: &'a str },
    Prompt { name: &'a str, arguments: &'a Map<String, Value> },
}

impl Action<'_> {
    fn class(&self) -> Class {
        match self {
            Action::Tool { tool, .. } => tool.class,
            // The bridges are read-only by construction.
            Action::Read { .. } | Action::Prompt { .. } => Class::Read,
        }
    }

    /// The name shown to hooks and in prompts and the journal.
    fn name(&self) -> String {
        match self {
            Action::Tool { tool, .. } => tool.name.clone(),
            Action::Read { .. } => mcp::method::RESOURCES_READ.to_string(),
            Action::Prompt { .. } => mcp::method::PROMPTS_GET.to_string(),
        }
    }

    fn qualified(&self, server: &str) -> String {
        match self {
            Action::Tool { tool, .. } => tool.qualified.clone(),
            _ => format!("mcp__{server}__{}", self.name().replace('/', "_")),
        }
    }

    /// The protocol call this action makes.
    fn call(&self) -> mcp::Call<'_> {
        match self {
            Action::Tool { tool, arguments } => {
                mcp::Call::Tool { name: &tool.name, arguments }
            }
            Action::Read { uri } => mcp::Call::Read { uri },
            Action::Prompt { name, arguments } => {
                mcp::Call::Prompt { name, arguments }
            }
        }
    }

    fn arguments(&self) -> Value {
        match self {
            Action::Tool { arguments, .. } => {
                Value::Object((*arguments).clone())
            }
            Action::Read { uri } => json!({"uri": uri}),
            Action::Prompt { name, arguments } => {
                json!({"name": name, "arguments": arguments})
            }
        }
    }
}

/// A result, bounded for printing.
#[derive(Debug)]
pub(crate) struct Observation {
    pub(crate) result: Value,
    pub(crate) truncated: bool,
    pub(crate) original_bytes: usize,
}

impl Observation {
    /// The result as `--json` prints it: with `truncated` and
    /// `original_bytes` when it was cut.
    pub(crate) fn json(&self) -> Value {
        let mut v = self.result.clone();
        if self.truncated
            && let Value::Object(m) = &mut v
        {
            m.insert("truncated".into(), json!(true));
            m.insert("original_bytes".into(), json!(self.original_bytes));
        }
        v
    }
}

#[derive(Debug)]
pub(crate) struct Executor {
    pub(crate) policy: Policy,
}

impl Executor {
    /// Runs one action through every step, in order.
    pub(crate) fn run(
        &self,
        s: &mut Session,
        action: Action<'_>,
        transport: &str,
    ) -> Result<Observation> {
        let server = s.name().to_string();
        let name = action.name();
        let class = action.class();
        journal::event(
            "call_requested",
            json!({"server": server, "tool": name,
                   "qualified_name": action.qualified(&server),
                   "classification": class.label()}),
        );
        let input = json!({
            "event": "pre_tool",
            "server": server,
            "tool": name,
            "qualified_name": action.qualified(&server),
            "classification": class.label(),
            "arguments": action.arguments(),
            "transport": transport,
        });
        for hook in &self.policy.hooks {
            let d = run_hook(hook, &input, self.policy.hook_timeout);
            journal::event(
                "hook_decision",
                json!({"server": server, "tool": name, "hook": hook[0],
                       "allow": d.allow, "how": d.how}),
            );
            if !d.allow {
                return Err(Error::new(
                    Kind::Denied,
                    format!(
                        "'{}' denied by pre-tool hook '{}' ({}){}",
                        term::line(&name),
                        term::line(&hook.join(" ")),
                        d.how,
                        if d.reason.is_empty() {
                            String::new()
                        } else {
                            format!(
                                ": {}",
                                term::clip(&term::line(&d.reason), 500)
                            )
                        }
                    ),
                )
                .for_server(&server));
            }
        }
        let approval = self.approve(&server, &action, class);
        journal::event(
            "approval_decision",
            json!({"server": server, "tool": name,
                   "classification": class.label(),
                   "approved": approval.is_ok(),
                   "how": match &approval { Ok(h) | Err((h, _)) => *h }}),
        );
        if let Err((_, e)) = approval {
            return Err(e.for_server(&server));
        }
        let started = Instant::now();
        let result = s.call(&action.call());
        let ms = started.elapsed().as_millis() as u64;
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                journal::event(
                    "error",
                    json!({"server": server, "tool": name, "duration_ms": ms,
                           "code": e.kind().name(), "message": e.to_string()}),
                );
                return Err(e);
            }
        };
        let obs = bound(result, self.policy.max_output);
        journal::event(
            "result",
            json!({"server": server, "tool": name, "duration_ms": ms,
                   "is_error": obs.result.get("isError") == Some(&Value::Bool(true)),
                   "bytes": obs.original_bytes, "truncated": obs.truncated}),
        );
        Ok(obs)
    }

    /// The approval step: `Ok(how)` or `Err((how, denial))`.
    fn approve(
        &self,
        server: &str,
        action: &Action<'_>,
        class: Class,
    ) -> std::result::Result<&'static str, (&'static str, Error)> {
        if class == Class::Read {
            return Ok("read");
        }
        let name = term::line(&action.name()).into_owned();
        if self.policy.read_only {
            return Err((
                "read-only",
                Error::new(
                    Kind::Denied,
                    format!(
                        "'{name}' is classified execute and --read-only \
                         denies every execute call"
                    ),
                ),
            ));
        }
        if self.policy.yes {
            return Ok("flag");
        }
        match prompt(server, action, class) {
            Prompted::Yes => Ok("prompt"),
            Prompted::No => Err((
                "prompt",
                Error::new(Kind::Denied, format!("'{name}' was not approved")),
            )),
            Prompted::NoTerminal => Err((
                "no-terminal",
                Error::new(
                    Kind::Denied,
                    format!(
                        "'{name}' is classified execute and needs approval, \
                         but there is no terminal to ask; pass --yes (or \
                         --approve execute) to approve it"
                    ),
                ),
            )),
        }
    }
}

enum Prompted {
    Yes,
    No,
    NoTerminal,
}

/// Asks on the controlling terminal (never stdin, which may carry data or
/// a hostile echo). Everything shown is sanitised.
fn prompt(server: &str, action: &Action<'_>, class: Class) -> Prompted {
    use std::io::IsTerminal;
    let interactive =
        std::io::stdin().is_terminal() || std::io::stderr().is_terminal();
    let tty =
        std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty");
    let (true, Ok(mut tty)) = (interactive, tty) else {
        return Prompted::NoTerminal;
    };
    let args =
        serde_json::to_string_pretty(&action.arguments()).unwrap_or_default();
    let args = term::sanitize(&args, term::Lines::Keep);
    let (shown, cut) = if args.len() > PROMPT_ARGS {
        let mut end = PROMPT_ARGS;
        while !args.is_char_boundary(end) {
            end -= 1;
        }
        (&args[..end], args.len() - end)
    } else {
        (&args[..], 0)
    };
    let mut text = format!(
        "rivumi-mcp: approve this call?\n  server:         {}\n  tool:           \
         {} ({})\n  classification: {}\n  arguments:\n",
        term::line(server),
        term::line(&action.name()),
        term::line(&action.qualified(server)),
        class.label()
    );
    for l in shown.lines() {
        text.push_str("    ");
        text.push_str(l);
        text.push('\n');
    }
    if cut > 0 {
        text.push_str(&format!(
            "  [arguments shortened for display: {cut} more bytes not shown]\n"
        ));
    }
    text.push_str("Run it? [y/N] ");
    if tty.write_all(text.as_bytes()).and_then(|_| tty.flush()).is_err() {
        return Prompted::NoTerminal;
    }
    use std::os::fd::AsRawFd;
    if !sys::wait_readable(tty.as_raw_fd(), PROMPT_TIMEOUT) {
        let _ = tty.write_all(b"\n(no answer; not approved)\n");
        return Prompted::No;
    }
    let mut buf = [0u8; 64];
    let n = tty.read(&mut buf).unwrap_or(0);
    let answer =
        String::from_utf8_lossy(&buf[..n]).trim().to_ascii_lowercase();
    if answer == "y" || answer == "yes" { Prompted::Yes } else { Prompted::No }
}

/// A hook's verdict.
#[derive(Debug)]
struct Decision {
    allow: bool,
    how: String,
    reason: String,
}

/// Runs one hook: its argv, no shell, the sanitised environment, the
/// request as JSON on stdin. Exit 0 allows unless it prints
/// `{"decision":"deny"}`; exit 2 denies with its stderr as the reason;
/// anything else (another exit, a crash, the deadline) denies.
fn run_hook(argv: &[String], input: &Value, timeout: Duration) -> Decision {
    let deny =
        |how: String, reason: String| Decision { allow: false, how, reason };
    let env: Vec<(String, String)> = crate::sys::BASE_ENV
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v)))
        .collect();
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    sys::unblock_signals_in_child(&mut cmd);
    let child = cmd.spawn();

    let mut child = match child {
        Ok(c) => c,
        Err(e) => return deny("could not start".into(), e.to_string()),
    };
    let pgid = child.id() as i32;
    sys::register_group(pgid);
    let bytes = input.to_string().into_bytes();
    let stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(mut s) = stdin {
            let _ = s.write_all(&bytes);
        }
    });
    let read = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut out = String::new();
            if let Some(r) = r {
                let _ = r.take(HOOK_OUTPUT).read_to_string(&mut out);
            }
            out
        })
    };
    let out =
        read(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err =
        read(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if start.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(2));
            }
            _ => break None,
        }
    };
    let Some(status) = status else {
        sys::kill_group(pgid, sys::SIGKILL);
        let _ = child.wait();
        sys::wait_group_gone(pgid, Duration::from_millis(500));
        sys::unregister_group(pgid);
        return deny(
            format!("timed out after {}", deadline::seconds(timeout)),
            String::new(),
        );
    };
    // The hook is done; whatever it left in its group goes too.
    sys::kill_group(pgid, sys::SIGKILL);
    sys::wait_group_gone(pgid, Duration::from_millis(500));
    sys::unregister_group(pgid);
    let _ = writer.join();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    match status.code() {
        Some(0) => {
            let v: Option<Value> = serde_json::from_str(stdout.trim()).ok();
            let decision = v
                .as_ref()
                .and_then(|v| v.get("decision"))
                .and_then(Value::as_str);
            if decision == Some("deny") {
                let reason = v
                    .as_ref()
                    .and_then(|v| v.get("reason"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                deny("decision deny".into(), reason)
            } else {
                Decision {
                    allow: true,
                    how: "exit 0".into(),
                    reason: String::new(),
                }
            }
        }
        Some(2) => deny("exit 2".into(), stderr.trim().to_string()),
        Some(c) => deny(
            format!("exit {c}, failing closed"),
            stderr.trim().to_string(),
        ),
        None => {
            deny("killed by a signal, failing closed".into(), String::new())
        }
    }
}

/// Cuts a result to about `max` bytes of JSON: text is clipped in order,
/// binary payloads and structured content that no longer fit are dropped.
pub(crate) fn bound(result: Value, max: usize) -> Observation {
    let original_bytes =
        serde_json::to_vec(&result).map(|v| v.len()).unwrap_or(0);
    if original_bytes <= max {
        return Observation { result, truncated: false, original_bytes };
    }
    let mut result = result;
    let mut budget = max;
    let clip_str = |s: &mut String, budget: &mut usize| {
        if s.len() > *budget {
            let mut end = *budget;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.truncate(end);
        }
        *budget -= s.len();
    };
    for key in ["content", "contents", "messages"] {
        let Some(Value::Array(items)) = result.get_mut(key) else { continue };
        for item in items.iter_mut() {
            let target = match key {
                "messages" => item.get_mut("content"),
                _ => Some(item),
            };
            let Some(Value::Object(block)) = target else { continue };
            for field in ["text", "data", "blob"] {
                if let Some(Value::String(s)) = block.get_mut(field) {
                    if field == "text" {
                        clip_str(s, &mut budget);
                    } else if s.len() <= budget {
                        budget -= s.len();
                    } else {
                        s.clear();
                        block.insert("truncated".into(), json!(true));
                        break;
                    }
                }
            }
            if let Some(Value::Object(res)) = block.get_mut("resource") {
                for field in ["text", "blob"] {
                    if let Some(Value::String(s)) = res.get_mut(field) {
                        clip_str(s, &mut budget);
                    }
                }
            }
        }
    }
    if let Some(sc) = result.get("structuredContent") {
        let n = sc.to_string().len();
        if n > budget
            && let Value::Object(m) = &mut result
        {
            m.remove("structuredContent");
        }
    }
    msg::debug(&format!("output cut to {max} of {original_bytes} bytes"));
    Observation { result, truncated: true, original_bytes }
}

/// Splits a hook command line into an argv: whitespace separates words,
/// single and double quotes group them, backslash escapes the next
/// character. Nothing is expanded; no shell is involved.
pub(crate) fn split_command(
    s: &str,
) -> std::result::Result<Vec<String>, String> {
    let mut out = vec![];
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                cur.push(chars.next().ok_or("trailing backslash")?);
                in_word = true;
            }
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err("unterminated quote".to_string());
    }
    if in_word {
        out.push(cur);
    }
    if out.is_empty() {
        return Err("empty command".to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_commands_without_a_shell() {
        assert_eq!(split_command("a b  c").unwrap(), ["a", "b", "c"]);
        assert_eq!(
            split_command(r#"sh -c 'echo $HOME; exit 2' "x y" z\ w"#).unwrap(),
            ["sh", "-c", "echo $HOME; exit 2", "x y", "z w"]
        );
        assert!(split_command("'open").is_err());
        assert!(split_command("  ").is_err());
    }

    #[test]
    fn bounds_text_and_drops_what_does_not_fit() {
        let r = json!({"content": [
            {"type": "text", "text": "x".repeat(100)},
            {"type": "image", "data": "A".repeat(100), "mimeType": "image/png"},
        ], "structuredContent": {"k": "v".repeat(100)}});
        let o = bound(r.clone(), 50);
        assert!(o.truncated);
        assert_eq!(o.result["content"][0]["text"].as_str().unwrap().len(), 50);
        assert_eq!(o.result["content"][1]["data"], "");
        assert_eq!(o.result["content"][1]["truncated"], true);
        assert!(o.result.get("structuredContent").is_none());
        assert_eq!(o.json()["original_bytes"], json!(o.original_bytes));
        let small = bound(r, 1 << 20);
        assert!(!small.truncated);
    }
}
