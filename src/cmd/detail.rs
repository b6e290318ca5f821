//! `rivumi-mcp list SERVER TOOL` (or `list mcp__SERVER__TOOL`): one tool
//! whole. Its title and whole description, each parameter with its type,
//! whether it is required, its description, default and allowed values,
//! the annotations, the output schema, and one call line that would work
//! (required arguments filled with their default, first allowed value or
//! a value of their type; `--approve` for a tool classified execute).
//! Everything the server wrote is shown through `out::shown` (sanitised
//! on a terminal). With `--json`, the definition as `list --json` gives it.

use serde_json::{Value, json};

use crate::callargs;
use crate::catalog::Show;
use crate::catalog::collect;
use crate::error::Result;
use crate::launch::Context;
use crate::naming::Class;
use crate::out;
use crate::tool::{Tool, tools};

/// Starts `server`, finds `tool` (by either name) and prints it.
pub(crate) fn run(
    ctx: &Context,
    server: &str,
    tool: &str,
    json: bool,
) -> Result<()> {
    let mut s = ctx.start(server)?;
    let only_tools = Show { tools: true, resources: false, prompts: false };
    let l = collect(&mut s, only_tools);
    s.close();
    let l = l?;
    let items = l.tools.map(|t| t.items).unwrap_or_default();
    let all = tools(server, &items);
    let t = crate::tool::resolve(server, &all, tool)?;
    if json {
        let mut d = t.def.clone();
        if let Value::Object(m) = &mut d {
            m.insert("qualified_name".into(), json!(t.qualified));
            m.insert("classification".into(), json!(t.class.label()));
            m.insert("server".into(), json!(server));
        }
        return out::json(&d);
    }
    // The ad-hoc server is typed again in the example, not named.
    let adhoc = ctx
        .adhoc_name()
        .filter(|n| *n == server)
        .and_then(|n| ctx.config.entry(n)?.server.as_ref())
        .map(|srv| {
            let flag = match srv.transport_name() {
                "http" => "--http",
                _ => "--stdio",
            };
            format!("{flag} {}", shell_word(&srv.target()))
        });
    out::print(&text(server, t, adhoc.as_deref()))
}

/// Indents each line of server text by `pad`, sanitised.
fn block(text: &str, pad: &str) -> String {
    text.lines()
        .map(|l| match l.trim_end() {
            "" => "\n".to_string(),
            l => format!("{pad}{}\n", out::shown(l)),
        })
        .collect()
}

/// A JSON value on one line, for defaults and allowed values.
fn one_line(v: &Value) -> String {
    out::shown(&v.to_string()).into_owned()
}

/// The detail view's text; `adhoc`: how the ad-hoc server was typed.
fn text(server: &str, t: &Tool, adhoc: Option<&str>) -> String {
    let def = &t.def;
    let field = |k: &str| def.get(k).and_then(Value::as_str);
    let mut s = format!("{}  {}\n", t.qualified, t.class.label());
    if t.qualified != format!("mcp__{server}__{}", t.name) {
        s.push_str(&format!("  name: {}\n", out::shown(&t.name)));
    }
    if let Some(title) = field("title") {
        s.push_str(&format!("  title: {}\n", out::shown(title)));
    }
    if let Some(ui) = crate::mcp::ui_resource(def) {
        s.push_str(&format!("  ui: {} (MCP App)\n", out::shown(ui)));
    }
    if crate::mcp::app_only(def) {
        s.push_str(&format!("  {}\n", super::list::APP_ONLY));
    }
    if let Some(d) = field("description").filter(|d| !d.trim().is_empty()) {
        s.push('\n');
        s.push_str(&block(d.trim(), "  "));
    }
    let params = callargs::parameters(t.input_schema());
    s.push_str("\nparameters:\n");
    if params.is_empty() {
        s.push_str("  (none)\n");
    }
    for p in &params {
        let req = if p.required { "required" } else { "optional" };
        s.push_str(&format!("  {}  ({req})\n", out::shown(&p.signature)));
        if let Some(d) = &p.description {
            s.push_str(&block(d, "      "));
        }
        if let Some(v) = &p.default {
            s.push_str(&format!("      default: {}\n", one_line(v)));
        }
        if !p.choices.is_empty() {
            let c: Vec<String> = p.choices.iter().map(one_line).collect();
            s.push_str(&format!("      one of: {}\n", c.join(", ")));
        }
    }
    if let Some(Value::Object(a)) = def.get("annotations")
        && !a.is_empty()
    {
        s.push_str("\nannotations:\n");
        for (k, v) in a {
            let v = match v {
                Value::String(x) => x.clone(),
                other => other.to_string(),
            };
            s.push_str(&format!("  {}: {}\n", out::shown(k), out::shown(&v)));
        }
    }
    if let Some(o) = def.get("outputSchema") {
        s.push_str("\noutput schema:\n");
        let pretty = serde_json::to_string_pretty(o).unwrap_or_default();
        s.push_str(&block(&pretty, "  "));
    }
    s.push_str("\nexample:\n  ");
    s.push_str(&example(server, t, &params, adhoc));
    s.push('\n');
    s
}

/// Quotes a word for a POSIX shell when it needs it.
fn shell_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@,+%".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// One call line that would work: the required arguments (`k=v` for a
/// string, number or boolean, `k:=json` otherwise) and, for a tool
/// classified execute, the `--approve` that approves it.
fn example(
    server: &str,
    t: &Tool,
    params: &[callargs::Param],
    adhoc: Option<&str>,
) -> String {
    let mut words = vec!["rivumi-mcp".to_string(), "call".to_string()];
    if let Some(typed) = adhoc {
        words.push(typed.to_string());
        words.push(shell_word(&t.name));
    } else if t.qualified == format!("mcp__{server}__{}", t.name) {
        words.push(shell_word(server));
        words.push(shell_word(&t.name));
    } else {
        words.push(shell_word(&t.qualified));
    }
    for p in params.iter().filter(|p| p.required) {
        let word = match &p.example {
            Value::String(v) => format!("{}={v}", p.name),
            v @ (Value::Number(_) | Value::Bool(_)) => {
                format!("{}={v}", p.name)
            }
            v => format!("{}:={v}", p.name),
        };
        words.push(shell_word(&word));
    }
    if t.class == Class::Execute {
        words.push("--approve".to_string());
        words.push(shell_word(&t.qualified));
    }
    out::shown(&words.join(" ")).into_owned()
}
