//! `rivumi-mcp list`: what allowed servers offer.
//!
//! Servers start in parallel (one thread each) and are printed in config
//! order. A server that fails is reported and does not hide the others;
//! the exit code then says something failed. One malformed tool does not
//! hide the rest of a server's tools. With a lock file in force, an item
//! whose definition differs from it (or is not in it) is marked, as the
//! executor would refuse it.

use serde_json::{Value, json};

use crate::catalog::{ServerListing, Show, collect};
use crate::error::{Error, Result};
use crate::launch::Context;
use crate::lockfile::{ItemKind, Lock};
use crate::tool::{Tool, tools};
use crate::{callargs, msg, out};

/// Runs `work` for each server, one thread each; results in `names` order.
pub(crate) fn in_parallel<T: Send>(
    names: &[String],
    work: impl Fn(&str) -> Result<T> + Sync,
) -> Vec<Result<T>> {
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> =
            names.iter().map(|n| scope.spawn(move || work(n))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::server("internal error: a worker panicked"))
                })
            })
            .collect()
    })
}

/// `list SERVER TOOL`, `list mcp__SERVER__TOOL` and, with an ad-hoc
/// server, `list --stdio CMD TOOL`: the words name one tool, not servers,
/// when the second is no configured server or the first again (or the one
/// word is a qualified name that is no server, or not the ad-hoc server's
/// name).
fn one_tool(ctx: &Context, names: &[String]) -> Option<(String, String)> {
    let is_server =
        |n: &str| ctx.config.entry(n).is_some() || ctx.adhoc_name() == Some(n);
    match names {
        [one] if !is_server(one) => {
            if let Some((s, t)) = crate::tool::split_qualified(one) {
                return Some((s.to_string(), t.to_string()));
            }
            let adhoc = ctx.adhoc_name()?;
            Some((adhoc.to_string(), one.clone()))
        }
        // `list fetch fetch`: a server's tool of its own name.
        [server, tool]
            if is_server(server) && (!is_server(tool) || server == tool) =>
        {
            Some((server.clone(), tool.clone()))
        }
        _ => None,
    }
}

pub(crate) fn run(
    ctx: &Context,
    names: &[String],
    show: Show,
    json: bool,
    lock: Option<&Lock>,
    grep: Option<&str>,
) -> Result<()> {
    if let Some((server, tool)) = one_tool(ctx, names) {
        return crate::cmd::detail::run(ctx, &server, &tool, json);
    }
    let names: Vec<String> = if names.is_empty() {
        for n in ctx.disabled_servers() {
            msg::warn(&format!(
                "server '{n}': disabled (\"disabled\": true); not started"
            ));
        }
        ctx.allowed_servers()?
    } else {
        names.to_vec()
    };
    // Refuse everything up front when a named server may not start, so
    // nothing is spawned on behalf of a command that cannot succeed.
    for n in &names {
        ctx.startable(n)?;
    }
    let results = in_parallel(&names, |n| {
        let mut s = ctx.start(n)?;
        let l = collect(&mut s, show);
        s.close();
        let mut l = l?;
        if let Some(p) = grep {
            keep_matching(&mut l, p);
        }
        Ok(l)
    });
    let mut first_err: Option<Error> = None;
    let mut json_servers = vec![];
    let mut text = String::new();
    for (name, r) in names.iter().zip(results) {
        match r {
            Ok(l) if json => json_servers.push(to_json(&l, lock)),
            Ok(l) => text.push_str(&human(&l, show, lock, grep)),
            Err(e) => {
                if json {
                    json_servers.push(json!({
                        "server": name, "ok": false,
                        "error": e.to_json(),
                    }));
                }
                // Every failure is reported, in config order (with
                // --json, in the servers array: the one line on stderr is
                // the first error's object); the first decides the exit
                // code.
                if !json {
                    msg::error(&e.to_string());
                }
                first_err.get_or_insert(e.reported());
            }
        }
    }
    if json {
        out::json(&json!({"servers": json_servers}))?;
    } else {
        // On a terminal: its width, else $COLUMNS; a terminal that says
        // neither is not cut.
        let width = out::stdout_is_tty()
            .then(|| {
                crate::sys::stdout_columns().or_else(|| {
                    crate::sys::lookup("COLUMNS")?.trim().parse().ok()
                })
            })
            .flatten();
        match width {
            Some(w) => out::print(&fit(&text, w))?,
            None => out::print(&text)?,
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Each line cut to `width` characters, a cut one ending in `…`, so that
/// a long description does not wrap a terminal's table (the whole text is
/// in `--json` and in the one-tool view).
fn fit(text: &str, width: usize) -> String {
    let width = width.max(20);
    let mut out = String::new();
    for line in text.lines() {
        if line.chars().count() > width {
            out.extend(line.chars().take(width - 1));
            out.push('…');
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// `--grep`: keeps the items whose name (qualified too, for tools),
/// title, description, URI or URI template contains `pattern`, in any
/// case; with `*` or `?` in it, the pattern is a glob that may match
/// anywhere in one of them.
fn keep_matching(l: &mut ServerListing, pattern: &str) {
    let glob = format!("*{}*", pattern.to_lowercase());
    let hit = |s: &str| {
        let s = s.to_lowercase();
        crate::naming::glob_match(&glob, &s)
    };
    let server = l.name.clone();
    let keep = |item: &Value| {
        let mut fields: Vec<String> =
            ["name", "title", "description", "uri", "uriTemplate"]
                .iter()
                .filter_map(|k| item.get(*k)?.as_str().map(str::to_string))
                .collect();
        if let Some(n) = item.get("name").and_then(Value::as_str) {
            fields.push(format!("mcp__{server}__{n}"));
        }
        fields.iter().any(|f| hit(f))
    };
    for x in [&mut l.tools, &mut l.resources, &mut l.templates, &mut l.prompts]
        .into_iter()
        .flatten()
    {
        x.items.retain(|i| keep(i));
    }
}

/// A resource's (or template's) `name`, shown beside its URI.
fn name_of(item: &Value) -> String {
    let n = item.get("name").and_then(Value::as_str).unwrap_or("");
    out::shown(n).into_owned()
}

fn describe(v: &Value) -> String {
    let d = v.get("description").and_then(Value::as_str).unwrap_or("");
    crate::render::description_line(d)
}

/// Under a tool whose `_meta.ui.visibility` is the app's alone.
pub(crate) const APP_ONLY: &str =
    "app only: for the server's MCP App to call, not for a model";

/// The widest a parameter line of `list` gets, in characters.
const SIGNATURE_WIDTH: usize = 100;

/// The lines under a tool in `list`: `(name: type, opt?: type, ...)`,
/// whole parameters only, at most [`SIGNATURE_WIDTH`] characters (`...`
/// for the rest), and `name: ORIGINAL` when the qualified name is not
/// `mcp__SERVER__ORIGINAL`.
fn details(server: &str, tool: &Tool) -> String {
    let mut text = String::new();
    let params = callargs::signature(tool.input_schema());
    if !params.is_empty() {
        let mut shown: Vec<String> = vec![];
        for (i, p) in params.iter().enumerate() {
            let p = out::shown(p).into_owned();
            let tail = if i + 1 < params.len() { ", ...)" } else { ")" };
            let len = |v: &[String]| v.join(", ").chars().count();
            if 7 + len(&shown) + 2 + p.chars().count() + tail.len()
                > SIGNATURE_WIDTH
            {
                shown.push("...".to_string());
                break;
            }
            shown.push(p);
        }
        text.push_str(&format!("      ({})\n", shown.join(", ")));
    }
    if let Some(ui) = crate::mcp::ui_resource(&tool.def) {
        // MCP Apps: shown, never rendered; `read --save` writes it.
        text.push_str(&format!("      ui: {} (MCP App)\n", out::shown(ui)));
    }
    if crate::mcp::app_only(&tool.def) {
        text.push_str(&format!("      {APP_ONLY}\n"));
    }
    if tool.qualified != format!("mcp__{server}__{}", tool.name) {
        text.push_str(&format!("      name: {}\n", out::shown(&tool.name)));
    }
    text
}

/// `[drift: changed] ` before an item the lock would refuse.
fn mark(
    lock: Option<&Lock>,
    server: &str,
    kind: ItemKind,
    def: &Value,
) -> String {
    lock.and_then(|k| k.drift(server, kind, def))
        .map(|d| format!("[drift: {d}] "))
        .unwrap_or_default()
}

/// Before a tool the server lists twice with different definitions
/// (calls to it are refused).
const TWICE: &str = "[listed twice, differently: not callable] ";

fn human(
    l: &ServerListing,
    show: Show,
    lock: Option<&Lock>,
    grep: Option<&str>,
) -> String {
    // Under --grep, an empty kind says that nothing matched, not that the
    // server has none.
    let none = |what: &str| match grep {
        Some(p) => format!("  (no {what} match '{}')\n", out::shown(p)),
        None => format!("  (no {what})\n"),
    };
    let mut text = heading(l);
    if let (true, Some(t)) = (show.tools, &l.tools) {
        text.push_str(&tool_lines(l, &t.items, lock));
        if t.items.is_empty() {
            text.push_str(&none("tools"));
        }
    }
    if let (true, Some(_)) = (show.resources, &l.resources) {
        let rows = resource_rows(l, lock);
        let empty = |x: &Option<crate::session::Listing>| {
            x.as_ref().is_none_or(|x| x.items.is_empty())
        };
        if empty(&l.resources) && empty(&l.templates) {
            text.push_str(&none("resources"));
        }
        text.push_str(&out::table(&rows));
    }
    if let (true, Some(p)) = (show.prompts, &l.prompts) {
        let rows = prompt_rows(l, &p.items, lock);
        if p.items.is_empty() {
            text.push_str(&none("prompts"));
        }
        text.push_str(&out::table(&rows));
    }
    for (what, listing) in [
        ("tools", &l.tools),
        ("resources", &l.resources),
        ("resource templates", &l.templates),
        ("prompts", &l.prompts),
    ] {
        if listing.as_ref().is_some_and(|x| !x.complete) {
            text.push_str(&format!("  ({what}: incomplete, see stderr)\n"));
        }
    }
    text
}

/// The first line of a server in `list`: its name, what it calls itself
/// and the protocol spoken.
fn heading(l: &ServerListing) -> String {
    let info = crate::mcp::bounded_server_info(&l.info);
    let sname = info.get("name").and_then(Value::as_str).unwrap_or("?");
    let sver = info.get("version").and_then(Value::as_str).unwrap_or("?");
    // An empty version is left out, not shown as a double space.
    let sver = match sver.trim() {
        "" => String::new(),
        v => format!(" {}", out::shown(v)),
    };
    format!(
        "{}: {}{sver} (protocol {})\n",
        l.name,
        out::shown(sname),
        l.protocol
    )
}

/// An item's description, after its drift mark.
fn marked(
    l: &ServerListing,
    lock: Option<&Lock>,
    kind: ItemKind,
    def: &Value,
) -> String {
    format!("{}{}", mark(lock, &l.name, kind, def), describe(def))
}

/// An item's string field `k`, shown (`?` when absent).
fn field(v: &Value, k: &str) -> String {
    out::shown(v.get(k).and_then(Value::as_str).unwrap_or("?")).into_owned()
}

/// The tools in `list`: a table row each, with its parameters (and the
/// name the server gave it, when the qualified name had to be rewritten)
/// under it, outside the table so that they do not widen its columns.
fn tool_lines(
    l: &ServerListing,
    items: &[Value],
    lock: Option<&Lock>,
) -> String {
    let tools = tools(&l.name, items);
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|tool| {
            let twice = if tool.listed_twice { TWICE } else { "" };
            vec![
                format!("  {}", tool.qualified),
                tool.class.label().to_string(),
                out::shown(&format!(
                    "{twice}{}",
                    marked(l, lock, ItemKind::Tool, &tool.def)
                ))
                .into_owned(),
            ]
        })
        .collect();
    let mut text = String::new();
    for (line, tool) in out::table(&rows).lines().zip(&tools) {
        text.push_str(line);
        text.push('\n');
        text.push_str(&details(&l.name, tool));
    }
    text
}

/// The rows of the resources and resource templates in `list`.
fn resource_rows(l: &ServerListing, lock: Option<&Lock>) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = vec![];
    for item in l.resources.iter().flat_map(|r| &r.items) {
        rows.push(vec![
            format!("  resource {}", field(item, "uri")),
            item.get("mimeType")
                .and_then(Value::as_str)
                .map(|m| out::shown(m).into_owned())
                .unwrap_or_default(),
            name_of(item),
            out::shown(&marked(l, lock, ItemKind::Resource, item))
                .into_owned(),
        ]);
    }
    for item in l.templates.iter().flat_map(|t| &t.items) {
        rows.push(vec![
            format!("  template {}", field(item, "uriTemplate")),
            String::new(),
            name_of(item),
            out::shown(&marked(l, lock, ItemKind::Template, item))
                .into_owned(),
        ]);
    }
    rows
}

/// The rows of the prompts in `list`: name, arguments (`[optional]`),
/// description.
fn prompt_rows(
    l: &ServerListing,
    items: &[Value],
    lock: Option<&Lock>,
) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = vec![];
    for item in items {
        let args: Vec<String> = item
            .get("arguments")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| {
                        let n = x.get("name")?.as_str()?;
                        let req =
                            x.get("required") == Some(&Value::Bool(true));
                        Some(if req {
                            n.to_string()
                        } else {
                            format!("[{n}]")
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        rows.push(vec![
            format!("  prompt {}", field(item, "name")),
            out::shown(&args.join(" ")).into_owned(),
            out::shown(&marked(l, lock, ItemKind::Prompt, item)).into_owned(),
        ]);
    }
    rows
}

fn to_json(l: &ServerListing, lock: Option<&Lock>) -> Value {
    let mut o = json!({
        "server": l.name, "ok": true, "protocol": l.protocol,
        "serverInfo": crate::mcp::bounded_server_info(&l.info),
        "instructions": l.instructions,
    });
    // With a lock in force, each item says how it stands against it.
    let drift = |m: &mut serde_json::Map<String, Value>, kind, def: &Value| {
        if let Some(k) = lock {
            m.insert("drift".into(), json!(k.drift(&l.name, kind, def)));
        }
    };
    let mut complete = true;
    if let Some(t) = &l.tools {
        let items: Vec<Value> = tools(&l.name, &t.items)
            .into_iter()
            .map(|t| {
                let mut d = t.def.clone();
                if let Value::Object(m) = &mut d {
                    m.insert("qualified_name".into(), json!(t.qualified));
                    m.insert("classification".into(), json!(t.class.label()));
                    if let Some(ui) = crate::mcp::ui_resource(&t.def) {
                        m.insert("ui_resource".into(), json!(ui));
                    }
                    if crate::mcp::app_only(&t.def) {
                        m.insert("app_only".into(), json!(true));
                    }
                    m.insert("server".into(), json!(l.name));
                    if t.listed_twice {
                        m.insert("listed_twice".into(), json!(true));
                    }
                    drift(m, ItemKind::Tool, &t.def);
                }
                d
            })
            .collect();
        o["tools"] = json!(items);
        complete &= t.complete;
    }
    for (key, kind, listing) in [
        ("resources", ItemKind::Resource, &l.resources),
        ("resourceTemplates", ItemKind::Template, &l.templates),
        ("prompts", ItemKind::Prompt, &l.prompts),
    ] {
        if let Some(x) = listing {
            let items: Vec<Value> = x
                .items
                .iter()
                .map(|def| {
                    let mut d = def.clone();
                    if let Value::Object(m) = &mut d {
                        drift(m, kind, def);
                    }
                    d
                })
                .collect();
            o[key] = json!(items);
            complete &= x.complete;
        }
    }
    o["complete"] = json!(complete);
    o
}

#[cfg(test)]
mod tests {
    use super::{fit, human};
    use crate::catalog::ServerListing;
    use crate::catalog::Show;
    use serde_json::json;

    #[test]
    fn an_empty_version_leaves_no_double_space() {
        let l = ServerListing {
            name: "s".into(),
            protocol: "2025-11-25".into(),
            info: json!({"name": "srv", "version": ""}),
            instructions: None,
            tools: None,
            resources: None,
            templates: None,
            prompts: None,
        };
        let show = Show { tools: false, resources: false, prompts: false };
        assert_eq!(
            human(&l, show, None, None),
            "s: srv (protocol 2025-11-25)\n"
        );
    }

    #[test]
    fn long_lines_are_cut_with_a_marker() {
        let long = format!("  mcp__a__b  read  {}", "d".repeat(100));
        let got = fit(&format!("short\n{long}\n"), 40);
        let lines: Vec<&str> = got.lines().collect();
        assert_eq!(lines[0], "short");
        assert_eq!(lines[1].chars().count(), 40);
        assert!(lines[1].ends_with("dd…"), "{}", lines[1]);
    }
}
