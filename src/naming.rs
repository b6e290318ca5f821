//! Qualified tool names and the read/execute classification.
//!
//! A remote tool is shown and called as `mcp__<server>__<tool>`. Characters
//! outside `[A-Za-z0-9_-]` become `_`; when that makes two tools collide,
//! or the name is longer than 64 characters, each affected tool gets a
//! short hash of its original name instead, so the result does not depend
//! on the order the server lists them in. Pure; no I/O.

use serde_json::Value;
use sha2::{Digest, Sha256};

pub(crate) const MAX_QUALIFIED: usize = 64;

/// `read` or `execute`. Conservative: a tool is `read` only when the
/// server says `readOnlyHint: true` (a boolean) and not
/// `destructiveHint: true`. Annotations are untrusted hints, so anything
/// else, including a string "true", is `execute`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Read,
    Execute,
}

impl Class {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::Execute => "execute",
        }
    }
}

pub(crate) fn classify(tool: &Value) -> Class {
    let a = tool.get("annotations");
    let ro = a.and_then(|a| a.get("readOnlyHint")) == Some(&Value::Bool(true));
    let destructive =
        a.and_then(|a| a.get("destructiveHint")) == Some(&Value::Bool(true));
    if ro && !destructive { Class::Read } else { Class::Execute }
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .collect()
}

fn hashed(server: &str, tool: &str) -> String {
    let h = crate::files::hex(&Sha256::digest(tool.as_bytes()));
    let prefix = format!("mcp__{server}__");
    let room = MAX_QUALIFIED.saturating_sub(prefix.len() + 7);
    let base: String = sanitize(tool).chars().take(room).collect();
    format!("{prefix}{base}_{}", &h[..6])
}

/// The qualified names of a server's tools, in the same order.
pub(crate) fn qualify(server: &str, tools: &[&str]) -> Vec<String> {
    let plain: Vec<String> = tools
        .iter()
        .map(|t| format!("mcp__{server}__{}", sanitize(t)))
        .collect();
    plain
        .iter()
        .zip(tools)
        .map(|(p, t)| {
            let collides = plain.iter().filter(|q| *q == p).count() > 1;
            if collides || p.len() > MAX_QUALIFIED {
                hashed(server, t)
            } else {
                p.clone()
            }
        })
        .collect()
}

/// Whether `name` matches the glob `pattern`: `*` is any run of
/// characters (none included), `?` one character, everything else itself,
/// case-sensitively. Iterative, with one backtrack point, so a hostile
/// pattern costs O(pattern × name) at worst.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) =
        (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(c) if *c == '?' || *c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classification_edge_cases() {
        let c = |a: Value| classify(&json!({"name": "t", "annotations": a}));
        assert_eq!(classify(&json!({"name": "t"})), Class::Execute);
        assert_eq!(c(json!({"readOnlyHint": true})), Class::Read);
        assert_eq!(c(json!({"readOnlyHint": "true"})), Class::Execute);
        assert_eq!(
            c(json!({"readOnlyHint": true, "destructiveHint": true})),
            Class::Execute
        );
        assert_eq!(
            c(json!({"readOnlyHint": true, "destructiveHint": false})),
            Class::Read
        );
        assert_eq!(c(json!({"readOnlyHint": false})), Class::Execute);
    }

    #[test]
    fn names_are_sanitised_and_collisions_hashed() {
        let q = qualify("s", &["echo", "a.b", "a_b", "odd name!"]);
        assert_eq!(q[0], "mcp__s__echo");
        assert!(q[1].starts_with("mcp__s__a_b_") && q[1].len() == 18);
        assert!(q[2].starts_with("mcp__s__a_b_"));
        assert_ne!(q[1], q[2]);
        assert_eq!(q[3], "mcp__s__odd_name_");
        // Order does not matter.
        let r = qualify("s", &["a_b", "a.b"]);
        assert_eq!(r[0], q[2]);
        assert_eq!(r[1], q[1]);
    }

    #[test]
    fn long_names_fit_in_64() {
        let long = "x".repeat(70);
        let q = qualify("server", &[&long]);
        assert!(q[0].len() <= MAX_QUALIFIED, "{}", q[0]);
        assert_eq!(q, qualify("server", &[&long]));
    }
}
