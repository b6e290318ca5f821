//! `${VAR}` and `${VAR:-default}` in configuration values.
//!
//! Pure: the caller hands in how to look a variable up. A `$` that does not
//! start `${` is literal; an unterminated `${` or an invalid name is an
//! error, so a typo never reaches a server as a literal `${TOKEN}` header.

/// One `${...}` reference in a template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VarRef {
    pub(crate) name: String,
    /// The text after `:-`, used when the variable is unset or empty.
    pub(crate) default: Option<String>,
}

/// A piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Var(VarRef),
}

/// Whether `name` is a valid environment variable name.
pub(crate) fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn parse(template: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = vec![];
    let mut text = String::new();
    let mut rest = template;
    while let Some(at) = rest.find("${") {
        text.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find('}') else {
            return Err("unterminated '${' (missing '}')".to_string());
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d.to_string())),
            None => (inner, None),
        };
        if !valid_name(name) {
            return Err(format!(
                "'${{{inner}}}' does not name a variable \
                 (use ${{NAME}} or ${{NAME:-default}})"
            ));
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(Piece::Var(VarRef { name: name.to_string(), default }));
        rest = &after[end + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// The variables a template refers to, or why it is malformed.
pub(crate) fn refs(template: &str) -> Result<Vec<VarRef>, String> {
    Ok(parse(template)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var(v) => Some(v),
            Piece::Text(_) => None,
        })
        .collect())
}

/// Expands a template. `Err` carries the name of the first variable that
/// is unset and has no default (or a syntax message, for a template that
/// was not validated first).
pub(crate) fn expand(
    template: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, Unset> {
    let mut out = String::new();
    for piece in parse(template).map_err(Unset::Malformed)? {
        match piece {
            Piece::Text(t) => out.push_str(&t),
            Piece::Var(v) => match (lookup(&v.name), v.default) {
                (Some(val), Some(d)) if val.is_empty() => out.push_str(&d),
                (Some(val), _) => out.push_str(&val),
                (None, Some(d)) => out.push_str(&d),
                (None, None) => return Err(Unset::Var(v.name)),
            },
        }
    }
    Ok(out)
}

/// Why a template could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unset {
    Var(String),
    Malformed(String),
}

impl std::fmt::Display for Unset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unset::Var(name) => {
                write!(f, "environment variable '{name}' is not set")
            }
            Unset::Malformed(msg) => f.write_str(msg),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_plain_and_default() {
        assert_eq!(expand("a${HOME}b", &env).unwrap(), "a/home/ub");
        assert_eq!(expand("${NOPE:-x y}", &env).unwrap(), "x y");
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
        assert_eq!(expand("$HOME $", &env).unwrap(), "$HOME $");
    }

    #[test]
    fn unset_and_malformed() {
        assert_eq!(expand("${NOPE}", &env), Err(Unset::Var("NOPE".into())));
        assert!(refs("${OPEN").is_err());
        assert!(refs("${1X}").is_err());
        assert!(refs("${}").is_err());
        assert_eq!(
            refs("${A}${B:-c}").unwrap(),
            vec![
                VarRef { name: "A".into(), default: None },
                VarRef { name: "B".into(), default: Some("c".into()) }
            ]
        );
    }

    #[test]
    fn names() {
        assert!(valid_name("_A1"));
        assert!(!valid_name("1A"));
        assert!(!valid_name("A-B"));
        assert!(!valid_name(""));
        assert!(!valid_name("A=B"));
    }
}
