//! The fixed read-only bridges: `resources`, `read`, `prompts`, `prompt`.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::catalog::Show;
use crate::cmd::{call, list};
use crate::error::{Error, Result};
use crate::executor::{Action, Executor};
use crate::launch::Context;
use crate::render::{self, Saver};
use crate::{callargs, mcp, out, tool};

/// `resources SERVER` and `prompts SERVER`: `list` for one server.
pub(crate) fn list_one(
    ctx: &Context,
    server: &str,
    show: Show,
    json: bool,
) -> Result<()> {
    list::run(ctx, &[server.to_string()], show, json, None, None)
}

/// `read SERVER URI`.
pub(crate) fn read(
    ctx: &Context,
    exec: &Executor,
    server: &str,
    uri: &str,
    save: Option<&Path>,
    json: bool,
) -> Result<()> {
    let mut s = ctx.start(server)?;
    let obs =
        exec.run(&mut s, Action::Read { uri }, ctx.transport_name(server))?;
    s.close();
    if json {
        out::json(&obs.json())?;
        return obs.check_whole(false).map_err(|e| e.for_server(server));
    }
    let saved = save.is_some();
    let contents = obs
        .result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            Error::server("resources/read: the result has no 'contents' array")
                .for_server(server)
        })?;
    let mut saver = Saver::new(save, format!("{server}-resource"));
    // --save writes whole contents, whatever --max-output cut; stdout
    // then holds only the lines naming the files, and nothing is missing.
    let whole = obs.whole().get("contents").and_then(Value::as_array);
    let all_saved =
        saver.saves() && whole.is_some_and(|w| w.len() == contents.len());
    let mut text = String::new();
    for (i, c) in contents.iter().enumerate() {
        let c = match whole.and_then(|w| w.get(i)) {
            Some(w) if saver.saves() => w,
            _ => c,
        };
        text.push_str(&render::resource_contents(c, &mut saver, true)?);
    }
    render::print(&text)?;
    if all_saved {
        return Ok(());
    }
    obs.check_whole(saved).map_err(|e| e.for_server(server))
}

/// Prompt arguments from `k=v` and `k:=json` words, checked against the
/// prompt's declared arguments (when the server lists the prompt): an
/// undeclared name is refused, a missing required one too. Values end up
/// strings, as the protocol wants: JSON that is not a string is sent as
/// its text (`n:=5` is `"5"`).
pub(crate) fn prompt_args(
    server: &str,
    declared: Option<&Value>,
    pairs: &[String],
) -> Result<Map<String, Value>> {
    let args =
        declared.and_then(|p| p.get("arguments")).and_then(Value::as_array);
    let mut props = Map::new();
    let mut required = vec![];
    for a in args.into_iter().flatten() {
        let Some(n) = a.get("name").and_then(Value::as_str) else { continue };
        props.insert(n.to_string(), json!({"type": "string"}));
        if a.get("required") == Some(&Value::Bool(true)) {
            required.push(n);
        }
    }
    let schema = declared.map(|_| {
        json!({"type": "object", "properties": props, "required": required})
    });
    let built =
        callargs::build(schema.as_ref(), None, pairs, &call::read_value)
            .map_err(|m| Error::usage(m).for_server(server))?;
    let out: Map<String, Value> = built
        .args
        .into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => (k, Value::String(s)),
            other => (k, Value::String(other.to_string())),
        })
        .collect();
    let name = declared.and_then(|p| p.get("name")).and_then(Value::as_str);
    tool::require(
        server,
        "prompt",
        name.unwrap_or("?"),
        schema.as_ref(),
        &out,
    )?;
    Ok(out)
}

/// `prompt SERVER NAME [k=v...]`.
pub(crate) fn prompt(
    ctx: &Context,
    exec: &Executor,
    server: &str,
    name: &str,
    pairs: &[String],
    json: bool,
) -> Result<()> {
    let mut s = ctx.start(server)?;
    // The prompt as listed, to check the words against; a server that
    // does not list it gets the call as typed and answers for itself.
    let listing = match s.server.capabilities.get("prompts") {
        Some(_) => s.list_all(mcp::List::Prompts)?.items,
        None => vec![],
    };
    let declared = listing
        .iter()
        .find(|p| p.get("name").and_then(Value::as_str) == Some(name));
    let arguments = prompt_args(server, declared, pairs)?;
    let obs = exec.run(
        &mut s,
        Action::Prompt { name, arguments: &arguments },
        ctx.transport_name(server),
    )?;
    s.close();
    let saved = false;
    if json {
        out::json(&obs.json())?;
        return obs.check_whole(saved).map_err(|e| e.for_server(server));
    }
    let r = &obs.result;
    let mut saver = Saver::new(None, String::new());
    let mut text = String::new();
    if let Some(d) = r.get("description").and_then(Value::as_str) {
        text.push_str(&format!("# {d}\n"));
    }
    for m in r.get("messages").and_then(Value::as_array).into_iter().flatten()
    {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        text.push_str(&format!("[{role}]\n"));
        if let Some(c) = m.get("content") {
            text.push_str(&render::block(c, &mut saver)?);
        }
    }
    render::print(&text)?;
    obs.check_whole(saved).map_err(|e| e.for_server(server))
}
