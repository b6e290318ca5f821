//! The fixed read-only bridges: `resources`, `read`, `prompts`, `prompt`.

use std::path::Path;

use serde_json::{Map, Value, json};

use crate::cli::Show;
use crate::error::{Error, Result};
use crate::executor::{Action, Executor};
use crate::launch::Context;
use crate::render::{self, Saver};
use crate::{cmd::list, out};

/// `resources SERVER` and `prompts SERVER`: `list` for one server.
pub(crate) fn list_one(
    ctx: &Context,
    server: &str,
    show: Show,
    json: bool,
) -> Result<()> {
    list::run(ctx, &[server.to_string()], show, json, None)
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
        return out::json(&obs.json());
    }
    let contents = obs
        .result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            Error::server("resources/read: the result has no 'contents' array")
                .for_server(server)
        })?;
    let mut saver =
        Saver { dir: save, prefix: format!("{server}-resource"), count: 0 };
    let mut text = String::new();
    for c in contents {
        text.push_str(&render::resource_contents(c, &mut saver)?);
    }
    text.push_str(&obs.truncation_note());
    render::print(&text)
}

/// Prompt arguments from `k=v` words: strings only, by protocol.
pub(crate) fn prompt_args(pairs: &[String]) -> Result<Map<String, Value>> {
    let mut args = Map::new();
    for p in pairs {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        if args.insert(k.to_string(), json!(v)).is_some() {
            return Err(Error::usage(format!(
                "argument '{k}' is given twice"
            )));
        }
    }
    Ok(args)
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
    let arguments = prompt_args(pairs)?;
    let mut s = ctx.start(server)?;
    let obs = exec.run(
        &mut s,
        Action::Prompt { name, arguments: &arguments },
        ctx.transport_name(server),
    )?;
    s.close();
    if json {
        return out::json(&obs.json());
    }
    let r = &obs.result;
    let mut saver = Saver { dir: None, prefix: String::new(), count: 0 };
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
    text.push_str(&obs.truncation_note());
    render::print(&text)
}
