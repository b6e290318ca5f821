//! `rivumi-mcp batch`: JSON Lines requests from stdin over reused sessions.
//!
//! Every request goes through the executor exactly like `call`, `read` and
//! `prompt`; only the session is reused. Servers start on first use. When a
//! server says `notifications/tools/list_changed`, its tools are listed
//! again before its next request. One output line per input line, in
//! order, each flushed as soon as it is known; a bad line gets an error
//! result and the batch goes on.

use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::error::{Error, Kind, Result};
use crate::executor::{Action, Executor};
use crate::launch::Context;
use crate::session::Session;
use crate::tool::{self, Tool};
use crate::{callargs, journal, mcp, out};

/// The longest input line read.
const MAX_LINE: usize = 16 << 20;

struct Server {
    session: Session,
    tools: Option<Vec<Tool>>,
    /// Until when the tool list is fresh: a 2026-07-28 server says how
    /// long (`ttlMs`); `None` is "until the server says it changed".
    fresh_until: Option<Instant>,
}

pub(crate) fn run(ctx: &Context, exec: &Executor) -> Result<()> {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut servers: HashMap<String, Server> = HashMap::new();
    let (mut total, mut failed) = (0usize, 0usize);
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        let n = (&mut input)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::usage(format!("reading stdin: {e}")))?;
        if n == 0 {
            break;
        }
        number += 1;
        if line.len() > MAX_LINE {
            return Err(Error::usage(format!(
                "stdin line {number} is longer than {MAX_LINE} bytes"
            )));
        }
        let text = String::from_utf8_lossy(&line);
        if text.trim().is_empty() {
            continue;
        }
        total += 1;
        let (id, outcome) = match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(req)) => {
                let id = req.get("id").cloned().unwrap_or(Value::Null);
                (id, handle(ctx, exec, &mut servers, &req))
            }
            Ok(_) => (
                Value::Null,
                Err(Error::usage(format!("line {number}: not a JSON object"))),
            ),
            Err(e) => (
                Value::Null,
                Err(Error::usage(format!("line {number}: not JSON: {e}"))),
            ),
        };
        let reply = match outcome {
            Ok(result) => {
                if result.get("isError") == Some(&Value::Bool(true)) {
                    failed += 1;
                }
                json!({"id": id, "ok": true, "result": result})
            }
            Err(e) => {
                failed += 1;
                json!({"id": id, "ok": false, "error": e.to_json()})
            }
        };
        let mut o = std::io::stdout().lock();
        writeln!(o, "{reply}")
            .and_then(|_| o.flush())
            .map_err(out::write_error)?;
    }
    for (_, mut s) in servers {
        s.session.close();
    }
    if failed > 0 {
        return Err(Error::negative(format!(
            "batch: {failed} of {total} requests failed"
        )));
    }
    Ok(())
}

fn str_field<'a>(
    req: &'a Map<String, Value>,
    k: &str,
) -> Result<Option<&'a str>> {
    match req.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(Error::usage(format!("'{k}' must be a string"))),
    }
}

fn object_field(
    req: &Map<String, Value>,
    k: &str,
) -> Result<Map<String, Value>> {
    match req.get(k) {
        None => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(v) => Err(Error::usage(format!(
            "'{k}' must be an object, not {}",
            callargs::type_name(v)
        ))),
    }
}

/// Runs one request; the result is what `call --json` would print.
fn handle(
    ctx: &Context,
    exec: &Executor,
    servers: &mut HashMap<String, Server>,
    req: &Map<String, Value>,
) -> Result<Value> {
    let server = str_field(req, "server")?;
    let tool = str_field(req, "tool")?;
    let read = str_field(req, "read")?;
    let prompt = str_field(req, "prompt")?;
    let (server, kind) = match (server, tool, read, prompt) {
        (s, Some(t), None, None) => match s {
            Some(s) => (s.to_string(), Ask::Tool(t.to_string())),
            None => {
                let (s, t) = tool::split_qualified(t).ok_or_else(|| {
                    Error::usage(format!(
                        "'tool' must be mcp__<server>__<tool> (or give \
                             'server'), not '{t}'"
                    ))
                })?;
                (s.to_string(), Ask::Tool(format!("mcp__{s}__{t}")))
            }
        },
        (Some(s), None, Some(uri), None) => (s.to_string(), Ask::Read(uri)),
        (Some(s), None, None, Some(p)) => (s.to_string(), Ask::Prompt(p)),
        _ => {
            return Err(Error::usage(
                "a request needs exactly one of 'tool', 'read' or 'prompt' \
                 (with 'server' for read and prompt)",
            ));
        }
    };
    let arguments = object_field(req, "arguments")?;
    // The line's own answers to the forms its request brings up (same
    // rules as --answer); without them, --answer's.
    let answers = match req.get("answers") {
        None => None,
        Some(_) => Some(object_field(req, "answers")?),
    };
    if !servers.contains_key(&server) {
        let session = ctx.start(&server)?;
        servers.insert(
            server.clone(),
            Server { session, tools: None, fresh_until: None },
        );
    }
    let transport = ctx.transport_name(&server);
    let Some(entry) = servers.get_mut(&server) else {
        unreachable!("inserted above");
    };
    entry.session.set_answers(answers);
    let outcome = run_one(entry, exec, &server, &kind, &arguments, transport);
    entry.session.set_answers(None);
    if let Err(e) = &outcome {
        // A server that timed out or died is closed; start afresh next
        // time instead of failing every later request to it.
        if matches!(e.kind(), Kind::Server | Kind::Timeout) {
            servers.remove(&server);
        }
    }
    outcome
}

/// What one request asks for.
enum Ask<'a> {
    /// The tool's original or qualified name.
    Tool(String),
    Read(&'a str),
    Prompt(&'a str),
}

fn run_one(
    entry: &mut Server,
    exec: &Executor,
    server: &str,
    kind: &Ask<'_>,
    arguments: &Map<String, Value>,
    transport: &str,
) -> Result<Value> {
    let obs = match kind {
        Ask::Tool(name) => {
            let changed = entry.session.take_list_changed();
            let stale = entry.fresh_until.is_some_and(|t| Instant::now() >= t);
            if entry.tools.is_none()
                || stale
                || changed.contains(mcp::method::TOOLS_LIST_CHANGED)
            {
                let listing = entry.session.list_all(mcp::List::Tools)?;
                entry.fresh_until = listing.ttl.map(|t| Instant::now() + t);
                journal::event(
                    "listed",
                    json!({"server": server, "tools": listing.items.len(),
                           "complete": listing.complete}),
                );
                entry.tools = Some(tool::tools(server, &listing.items));
            }
            let tools = entry.tools.as_deref().unwrap_or_default();
            let t = exec.resolve(server, tools, name)?;
            tool::check_required(server, t, arguments)?;
            let t = t.clone();
            exec.run(
                &mut entry.session,
                Action::Tool { tool: &t, arguments },
                transport,
            )?
        }
        Ask::Read(uri) => {
            exec.run(&mut entry.session, Action::Read { uri }, transport)?
        }
        Ask::Prompt(name) => {
            if let Some((k, _)) =
                arguments.iter().find(|(_, v)| !v.is_string())
            {
                return Err(Error::usage(format!(
                    "prompt argument '{k}' must be a string"
                )));
            }
            exec.run(
                &mut entry.session,
                Action::Prompt { name, arguments },
                transport,
            )?
        }
    };
    Ok(obs.json())
}
