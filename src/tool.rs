//! Remote tools as the rest of rivumi-mcp sees them: a definition from a
//! server with its qualified name and its read/execute class, found by
//! either name, with one check of the arguments it requires.
//!
//! `list`, `call`, `batch` and the executor share this so that a tool is
//! resolved, and its errors are worded, the same way everywhere.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::lockfile::ItemKind;
use crate::mcp::headers::{self, ParamHeader};
use crate::naming::{self, Class};
use crate::suggest::suggest;
use crate::{callargs, msg, out, term};

/// A tool with its qualified name and classification.
#[derive(Debug, Clone)]
pub(crate) struct Tool {
    /// The name the server gave it.
    pub(crate) name: String,
    /// `mcp__<server>__<tool>`, made safe and unique.
    pub(crate) qualified: String,
    pub(crate) class: Class,
    /// The definition as the server sent it (untrusted).
    pub(crate) def: Value,
    /// The parameters it designated with `x-mcp-header`, mirrored into
    /// `Mcp-Param-*` headers on the 2026-07-28 HTTP wire.
    pub(crate) headers: Vec<ParamHeader>,
    /// The server lists this name more than once with different
    /// definitions: shown by `list`, refused by [`resolve`].
    pub(crate) listed_twice: bool,
}

impl Tool {
    /// The tool's input schema, if it declared one.
    pub(crate) fn input_schema(&self) -> Option<&Value> {
        self.def.get("inputSchema")
    }
}

/// Decorates a server's tool definitions. Items without a string name,
/// and tools whose `x-mcp-header` designations are invalid, are skipped
/// with a warning; the rest of the server's tools stay usable.
pub(crate) fn tools(server: &str, items: &[Value]) -> Vec<Tool> {
    let named: Vec<(&str, &Value, Vec<ParamHeader>)> = items
        .iter()
        .filter_map(|t| match t.get("name").and_then(Value::as_str) {
            Some(n) if !n.is_empty() => {
                match headers::declarations(t.get("inputSchema")) {
                    Ok(h) => Some((n, t, h)),
                    Err(why) => {
                        msg::warn(&format!(
                            "server '{server}': skipped tool '{}': {}",
                            out::shown(n),
                            term::line(&why)
                        ));
                        None
                    }
                }
            }
            _ => {
                msg::warn(&format!(
                    "server '{server}': skipped a tool without a name"
                ));
                None
            }
        })
        .collect();
    let names: Vec<&str> = named.iter().map(|(n, _, _)| *n).collect();
    let qualified = naming::qualify(server, &names);
    let twice = crate::lockfile::conflicts(ItemKind::Tool, items);
    named
        .into_iter()
        .zip(qualified)
        .map(|((n, def, headers), q)| Tool {
            name: n.to_string(),
            qualified: q,
            class: naming::classify(def),
            def: def.clone(),
            headers,
            listed_twice: twice.iter().any(|t| t == n),
        })
        .collect()
}

/// Splits `mcp__<server>__<rest>`; server names cannot contain `__`.
pub(crate) fn split_qualified(q: &str) -> Option<(&str, &str)> {
    q.strip_prefix("mcp__")
        .and_then(|r| r.split_once("__"))
        .filter(|(s, t)| !s.is_empty() && !t.is_empty())
}

/// Finds a tool of `server` by its own name, its qualified name, or the
/// part of the qualified name after the server (`call demo odd_name` for
/// `mcp__demo__odd_name`); the error suggests the closest name and says
/// where to look.
pub(crate) fn resolve<'a>(
    server: &str,
    tools: &'a [Tool],
    wanted: &str,
) -> Result<&'a Tool> {
    let as_qualified = format!("mcp__{server}__{wanted}");
    if let Some(t) = tools.iter().find(|t| {
        t.name == wanted
            || t.qualified == wanted
            || t.qualified == as_qualified
    }) {
        if t.listed_twice {
            return Err(Error::refused(format!(
                "tool '{}' is listed twice with different definitions, so \
                 which one a call reaches is unknown; not called (see: \
                 rivumi-mcp list {server})",
                out::shown(&t.name)
            ))
            .for_server(server));
        }
        return Ok(t);
    }
    let mut text = format!("no tool '{}'", out::shown(wanted));
    let own = split_qualified(wanted)
        .filter(|(s, _)| *s == server)
        .map_or(wanted, |(_, t)| t);
    if let Some(s) = suggest(own, tools.iter().map(|t| t.name.as_str())) {
        text.push_str(&format!("; did you mean '{}'?", out::shown(s)));
    }
    if let Some(cap) = gated_by_capability(own) {
        text.push_str(&format!(
            "; some servers show '{own}' only to clients that declare the \
             '{cap}' client capability, and hide it otherwise"
        ));
    }
    text.push_str(&format!(" (see: rivumi-mcp list {server})"));
    Err(Error::usage(text).for_server(server))
}

/// The client capability a widely used server requires before it lists a
/// tool of this name (server-everything registers these only for clients
/// that declare the capability), so that a "no tool" error can say why.
fn gated_by_capability(name: &str) -> Option<&'static str> {
    const GATED: &[(&str, &str)] = &[
        ("trigger-sampling-request", "sampling"),
        ("sampleLLM", "sampling"),
        ("trigger-elicitation-request", "elicitation"),
        ("startElicitation", "elicitation"),
        ("get-roots-list", "roots"),
    ];
    GATED.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
}

/// Refuses a call that lacks an argument the tool's schema requires.
pub(crate) fn check_required(
    server: &str,
    tool: &Tool,
    arguments: &Map<String, Value>,
) -> Result<()> {
    require(server, "tool", &tool.name, tool.input_schema(), arguments)
}

/// Refuses arguments that lack one `schema` requires, for a tool or a
/// prompt (`what`), in one wording.
pub(crate) fn require(
    server: &str,
    what: &str,
    name: &str,
    schema: Option<&Value>,
    arguments: &Map<String, Value>,
) -> Result<()> {
    let missing = callargs::missing_required(schema, arguments);
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::usage(format!(
        "{what} '{}' needs {}: missing {}",
        out::shown(name),
        if missing.len() == 1 { "an argument" } else { "arguments" },
        missing.join(", ")
    ))
    .for_server(server))
}

/// Checks an `--approve` pattern: a qualified tool name
/// (`mcp__SERVER__TOOL`) in which `*` and `?` may stand for characters.
/// Anything else would never match a qualified name, and an approval that
/// silently approves nothing is a trap.
pub(crate) fn check_approve_pattern(
    p: &str,
) -> std::result::Result<(), String> {
    if p.starts_with("mcp__")
        && p.len() > 5
        && !p.chars().any(char::is_whitespace)
    {
        return Ok(());
    }
    Err(format!(
        "'{}' is not a qualified tool name pattern (mcp__SERVER__TOOL, with \
         * and ? as wildcards, e.g. mcp__sqlite__read_query or mcp__fs__*)",
        term::clip(&term::line(p), 80)
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sample() -> Vec<Tool> {
        tools(
            "srv",
            &[
                json!({"name": "add", "inputSchema": {"type": "object",
                    "required": ["a", "b"]}}),
                json!({"name": "echo", "annotations": {"readOnlyHint": true}}),
                json!({"title": "no name"}),
            ],
        )
    }

    #[test]
    fn decorates_and_skips_nameless_tools() {
        let t = sample();
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].qualified, "mcp__srv__add");
        assert_eq!(t[0].class, Class::Execute);
        assert_eq!(t[1].class, Class::Read);
    }

    #[test]
    fn resolves_either_name_and_suggests() {
        let t = sample();
        assert_eq!(resolve("srv", &t, "add").unwrap().name, "add");
        assert_eq!(resolve("srv", &t, "mcp__srv__echo").unwrap().name, "echo");
        let odd = tools("srv", &[json!({"name": "odd name"})]);
        assert_eq!(resolve("srv", &odd, "odd_name").unwrap().name, "odd name");
        let e = resolve("srv", &t, "ad").unwrap_err().to_string();
        assert!(e.contains("no tool 'ad'; did you mean 'add'?"), "{e}");
        assert!(e.contains("(see: rivumi-mcp list srv)"), "{e}");
        let e = resolve("srv", &t, "mcp__srv__ech").unwrap_err().to_string();
        assert!(e.contains("did you mean 'echo'?"), "{e}");
    }

    #[test]
    fn splits_qualified_names() {
        assert_eq!(split_qualified("mcp__s__t__u"), Some(("s", "t__u")));
        assert_eq!(split_qualified("mcp____t"), None);
        assert_eq!(split_qualified("mcp__s__"), None);
        assert_eq!(split_qualified("s__t"), None);
    }

    #[test]
    fn names_every_missing_argument() {
        let t = sample();
        let mut args = Map::new();
        let e = check_required("srv", &t[0], &args).unwrap_err().to_string();
        assert!(e.contains("tool 'add' needs arguments: missing a, b"), "{e}");
        args.insert("a".into(), json!(1));
        let e = check_required("srv", &t[0], &args).unwrap_err().to_string();
        assert!(e.contains("needs an argument: missing b"), "{e}");
        args.insert("b".into(), json!(2));
        assert!(check_required("srv", &t[0], &args).is_ok());
    }

    #[test]
    fn globs() {
        assert!(crate::naming::glob_match("mcp__fs__*", "mcp__fs__read_file"));
        assert!(crate::naming::glob_match("mcp__fs__*", "mcp__fs__"));
        assert!(!crate::naming::glob_match("mcp__fs__*", "mcp__fsx__read"));
        assert!(crate::naming::glob_match("mcp__*__read_*", "mcp__a__read_x"));
        assert!(crate::naming::glob_match("mcp__a__?", "mcp__a__b"));
        assert!(!crate::naming::glob_match("mcp__a__?", "mcp__a__bc"));
        assert!(crate::naming::glob_match("exact", "exact"));
        assert!(!crate::naming::glob_match("exact", "exactly"));
        assert!(crate::naming::glob_match(
            "*a*a*a*b",
            &format!("{}b", "a".repeat(50))
        ));
        assert!(!crate::naming::glob_match("*a*a*a*b", &"a".repeat(5000)));
        assert!(check_approve_pattern("mcp__sqlite__read_query").is_ok());
        assert!(check_approve_pattern("read_query").is_err());
        assert!(check_approve_pattern("mcp__").is_err());
    }
}
