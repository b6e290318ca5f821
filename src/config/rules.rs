//! The pure rules of the configuration format: which keys exist, what a
//! server, variable or header name may be, which launchers need a pinned
//! package, and how an unknown key is reported. No diagnostics here: the
//! checks in `check` and `oauth` apply these.

use super::MAX_NAME;
use crate::vars;

pub(super) const STDIO_KEYS: &[&str] =
    &["command", "args", "env", "env_vars", "cwd", "sandbox"];
pub(super) const HTTP_KEYS: &[&str] = &[
    "url",
    "headers",
    "headers_command",
    "bearer_token_env_var",
    "token_command",
    "oauth",
];
pub(super) const COMMON_KEYS: &[&str] = &[
    "type",
    "startup_timeout_sec",
    "tool_timeout_sec",
    "protocol",
    "disabled",
    "tools",
];

/// Header names the transport sets itself; a config may not override them.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "connection",
    "content-length",
    "content-type",
    "dpop",
    "host",
    "keep-alive",
    "last-event-id",
    "mcp-method",
    "mcp-name",
    "mcp-protocol-version",
    "mcp-session-id",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Variables that change how a program loads code: allowed, but flagged.
const LOADER_VARS: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "NODE_OPTIONS",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "BASH_ENV",
    "ENV",
    "PERL5OPT",
    "RUBYOPT",
];

/// How a pinned package looks for this launcher: `pkg@1.2.3` for the npm
/// family, `pkg==1.2.3` for the Python ones (an existing tag or range is
/// replaced, not appended to).
pub(super) fn pin_example(prog: &str, p: &str) -> String {
    if prog == "uvx" || prog == "pipx" {
        let name = p.split(['=', '@', '<', '>', '~', '!']).next().unwrap_or(p);
        format!("{name}==1.2.3")
    } else {
        let (scope, rest) = match p.strip_prefix('@') {
            Some(r) => ("@", r),
            None => ("", p),
        };
        let name = rest.split('@').next().unwrap_or(rest);
        format!("{scope}{name}@1.2.3")
    }
}

/// `pkg@1.2.3` or `@scope/pkg@1.2.3`, not `@latest` or a range.
pub(super) fn npm_pinned(p: &str) -> bool {
    let body = p.strip_prefix('@').unwrap_or(p);
    match body.rsplit_once('@') {
        Some((_, v)) => v.starts_with(|c: char| c.is_ascii_digit()),
        None => false,
    }
}

/// `pkg==1.2.3` or `pkg@1.2.3`.
pub(super) fn py_pinned(p: &str) -> bool {
    p.split_once("==")
        .or_else(|| p.split_once('@'))
        .is_some_and(|(_, v)| v.starts_with(|c: char| c.is_ascii_digit()))
}

/// A server name: 1–64 of `[A-Za-z0-9_-]`, without `__`.
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    if name.is_empty() {
        return Err("server name is empty".to_string());
    }
    if name.len() > MAX_NAME {
        return Err(format!(
            "server name is {} characters; at most {MAX_NAME} are allowed",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_".contains(*c)))
    {
        return Err(format!(
            "server name '{}' contains {c:?}; use only letters, digits, \
             '_' and '-'",
            crate::term::line(name)
        ));
    }
    // A name that starts with '-' reads as an option when typed
    // (`--config`, `-e`), and completion would offer it as one.
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        return Err(format!(
            "server name '{}' must start with a letter or a digit",
            crate::term::line(name)
        ));
    }
    if name.contains("__") {
        return Err(format!(
            "server name '{name}' contains '__', the separator of \
             mcp__<server>__<tool>"
        ));
    }
    Ok(())
}

/// Keys of other MCP clients' formats (and JSON Schema's `$schema`), which
/// rivumi-mcp ignores: named in the warning (they are format, not
/// content), so that a hook or an auto-approval written for another client
/// is seen not to apply here.
const FOREIGN_KEYS: &[&str] = &[
    "$schema",
    "alwaysAllow",
    "autoApprove",
    "description",
    "enabled",
    "envFile",
    "hooks",
    "inputs",
    "preToolHook",
    "pre_tool_hook",
    "timeout",
    "transportType",
    "trust",
];

/// The message for a key that is not one of `known`. The key is named
/// only when it is a near miss of a known key (a typo) or a key of another
/// client's format; anything else may be a secret pasted in the wrong
/// place, so the diagnostic says where it is, not what it is, and its
/// pointer stops at the enclosing object.
pub(super) fn unknown_key(
    noun: &str,
    place: &str,
    key: &str,
    known: &[&str],
) -> String {
    match crate::suggest::suggest(key, known.iter().copied()) {
        Some(sug) => format!(
            "{noun} '{}'{place}; did you mean '{sug}'?",
            crate::term::line(key)
        ),
        None if FOREIGN_KEYS.contains(&key) => {
            format!("{noun} '{key}'{place}")
        }
        None => format!("{noun}{place}"),
    }
}

/// Whether `n` is one of rivumi-mcp's own variables, never passed on.
pub(super) fn reserved(n: &str) -> bool {
    n.starts_with("RIVUMI_MCP_")
}

pub(super) fn check_env_name(n: &str) -> std::result::Result<(), String> {
    if !vars::valid_name(n) {
        return Err("not a valid environment variable name \
             ([A-Za-z_][A-Za-z0-9_]*)"
            .to_string());
    }
    if reserved(n) {
        return Err(format!(
            "'{n}' is rivumi-mcp's own setting and is never passed to \
             servers"
        ));
    }
    Ok(())
}

/// Whether `n` is an HTTP token (RFC 9110), the grammar of header names.
pub(super) fn is_token(n: &str) -> bool {
    let tchar =
        |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    !n.is_empty() && n.chars().all(tchar)
}

pub(super) fn check_header_name(n: &str) -> std::result::Result<(), String> {
    if !is_token(n) {
        return Err("not a valid header name (letters, digits and \
             !#$%&'*+-.^_`|~ only)"
            .to_string());
    }
    let lower = n.to_ascii_lowercase();
    if RESERVED_HEADERS.contains(&lower.as_str())
        || lower.starts_with("mcp-param-")
    {
        return Err(format!(
            "header '{n}' is set by rivumi-mcp itself and cannot be \
             configured"
        ));
    }
    Ok(())
}

/// Whether setting `n` changes which code a program loads.
pub(super) fn is_loader_var(n: &str) -> bool {
    LOADER_VARS.contains(&n) || n.starts_with("DYLD_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_and_py_pins() {
        assert!(npm_pinned("@scope/pkg@1.2.3"));
        assert!(npm_pinned("pkg@0.1"));
        assert!(!npm_pinned("@scope/pkg"));
        assert!(!npm_pinned("pkg@latest"));
        assert!(py_pinned("mcp-server==1.0"));
        assert!(!py_pinned("mcp-server"));
    }
}
