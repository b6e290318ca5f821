//! `${VAR}` and `${VAR:-default}` in configuration values.
//!
//! Pure: the caller hands in how to look a variable up. A `$` that does not
//! start `${` is literal; an unterminated `${` or an invalid name is an
//! error, so a typo never reaches a server as a literal `${TOKEN}` header.
//!
//! Cursor's `${env:NAME}` is the same as `${NAME}`. VS Code's
//! `${input:ID}` asks the editor to prompt for a value; there is no prompt
//! here, so it is an error that names the input.
//!
//! The editors' own variables are not environment variables: VS Code's and
//! Cursor's `${workspaceFolder}`, `${workspaceFolderBasename}`,
//! `${userHome}` and `${pathSeparator}` (also `${/}`) are looked up like any
//! other name, and the configuration provides them for the editors' files
//! (see [`EDITOR_PROVIDED`]); `${/}` is read as `${pathSeparator}`. VS
//! Code's other predefined names ([`is_editor_variable`]) and its
//! `${config:…}`, `${command:…}` and `${workspaceFolder:…}` forms are
//! errors that name the editor.
//!
//! A default may itself hold references, as in a shell:
//! `${A:-${B:-none}}` is A, else B, else `none`. The nesting is parsed, not
//! found by the first `}` (which would send `${B` and a stray `}` as literal
//! text), and is bounded at [`MAX_DEPTH`] levels so that a hostile config
//! cannot exhaust the stack.

/// How deep `${...}` may nest inside defaults: `${A:-${B}}` is depth 2.
pub const MAX_DEPTH: usize = 4;

/// A piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    /// `${name}` or `${name:-default}`; the default is a template itself.
    Var {
        name: String,
        default: Option<Vec<Piece>>,
    },
}

/// The editors' predefined variables a configuration provides in a VS
/// Code or Cursor file.
pub const EDITOR_PROVIDED: [&str; 4] = [
    "workspaceFolder",
    "workspaceFolderBasename",
    "userHome",
    "pathSeparator",
];

/// VS Code's predefined variables that rivumi-mcp does not provide: they
/// describe an editor's state (the open file, the selection), which a
/// command line has not.
const EDITOR_ONLY: [&str; 17] = [
    "file",
    "fileWorkspaceFolder",
    "relativeFile",
    "relativeFileDirname",
    "fileBasename",
    "fileBasenameNoExtension",
    "fileExtname",
    "fileDirname",
    "fileDirnameBasename",
    "cwd",
    "lineNumber",
    "columnNumber",
    "selectedText",
    "execPath",
    "defaultBuildTask",
    "workspaceRoot",
    "workspaceRootFolderName",
];

/// Whether `name` is one of VS Code's predefined variables, provided here
/// or not.
pub fn is_editor_variable(name: &str) -> bool {
    EDITOR_PROVIDED.contains(&name) || EDITOR_ONLY.contains(&name)
}

/// Whether `name` is a valid environment variable name.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// A syntax error: what is wrong, and the byte length of the template
/// after the `${` it concerns (which gives its position).
type Bad = (String, usize);

/// Parses a template. Errors name the rule and the position of the `${`,
/// never the text: a malformed value may be a secret typed into the wrong
/// place.
fn parse(template: &str) -> Result<Vec<Piece>, String> {
    match parse_seq(template, 1, false) {
        Ok((pieces, _)) => Ok(pieces),
        Err((what, left)) => {
            let at = template.len().saturating_sub(left).saturating_sub(2);
            let chars = template.get(..at).map_or(0, |t| t.chars().count());
            Err(what.replace("{at}", &(chars + 1).to_string()))
        }
    }
}

/// Parses text and references up to the end of `s` or, inside a default
/// (`nested`), up to the `}` that closes it. Returns the pieces and what
/// follows them (starting with that `}`).
fn parse_seq(
    mut s: &str,
    depth: usize,
    nested: bool,
) -> Result<(Vec<Piece>, &str), Bad> {
    let mut pieces = vec![];
    let mut text = String::new();
    loop {
        let stop = if nested { s.find(['$', '}']) } else { s.find('$') };
        let Some(at) = stop else {
            text.push_str(s);
            s = "";
            break;
        };
        text.push_str(&s[..at]);
        s = &s[at..];
        if s.starts_with('}') {
            break;
        }
        let Some(after) = s.strip_prefix("${") else {
            text.push('$');
            s = &s[1..];
            continue;
        };
        if depth > MAX_DEPTH {
            return Err((TOO_DEEP.to_string(), after.len()));
        }
        let (piece, rest) = parse_ref(after, depth)?;
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(piece);
        s = rest;
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok((pieces, s))
}

const UNTERMINATED: &str = "unterminated '${' at character {at} (missing '}')";
const BAD_NAME: &str = "'${' at character {at} does not start a variable name \
     (use ${NAME} or ${NAME:-default})";
const TOO_DEEP: &str = "'${' at character {at} is nested more than 4 deep \
     in a default";

/// Parses one reference; `s` follows its `${`. Returns the piece and the
/// text after its closing `}`.
fn parse_ref(s: &str, depth: usize) -> Result<(Piece, &str), Bad> {
    if let Some(input) = s.strip_prefix("input:") {
        return Err((input_error(input), s.len()));
    }
    for form in ["config:", "command:", "workspaceFolder:"] {
        if s.starts_with(form) {
            let msg = format!(
                "'${{{form}…}}' at character {{at}} is VS Code's; \
                 rivumi-mcp does not expand it (write the value, or \
                 ${{NAME}} for an environment variable)"
            );
            return Err((msg, s.len()));
        }
    }
    if let Some(after) = s.strip_prefix("/}") {
        let piece = Piece::Var { name: "pathSeparator".into(), default: None };
        return Ok((piece, after));
    }
    // Cursor's spelling; the remaining length still locates the `${`.
    let s = s.strip_prefix("env:").unwrap_or(s);
    let unterminated = || (UNTERMINATED.to_string(), s.len());
    let end = s
        .find(|c: char| c != '_' && !c.is_ascii_alphanumeric())
        .ok_or_else(unterminated)?;
    let (name, rest) = s.split_at(end);
    let name_ok = valid_name(name);
    if let Some(after) = rest.strip_prefix('}').filter(|_| name_ok) {
        let piece = Piece::Var { name: name.to_string(), default: None };
        return Ok((piece, after));
    }
    if let Some(after) = rest.strip_prefix(":-").filter(|_| name_ok) {
        let (default, rest) = parse_seq(after, depth + 1, true)?;
        let rest = rest.strip_prefix('}').ok_or_else(unterminated)?;
        let default = Some(default);
        return Ok((Piece::Var { name: name.to_string(), default }, rest));
    }
    if s.contains('}') {
        Err((BAD_NAME.to_string(), s.len()))
    } else {
        Err(unterminated())
    }
}

/// The error for VS Code's `${input:ID}` (`input` follows `input:`). The
/// id is named when it looks like one (ids are not secrets, but a
/// malformed value may be a secret typed into the wrong place).
fn input_error(input: &str) -> String {
    let id = input.split('}').next().unwrap_or("");
    let shown = if !id.is_empty()
        && input.contains('}')
        && id.len() <= 64
        && id.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        format!("'${{input:{id}}}'")
    } else {
        "'${input:…}'".to_string()
    };
    format!(
        "{shown} at character {{at}} asks VS Code to prompt for an input, \
         and rivumi-mcp has no prompt; set an environment variable and \
         write ${{NAME}} instead"
    )
}

/// Every variable a template refers to, defaults included, or why it is
/// malformed.
pub fn refs(template: &str) -> Result<Vec<String>, String> {
    fn walk(pieces: &[Piece], out: &mut Vec<String>) {
        for p in pieces {
            if let Piece::Var { name, default } = p {
                out.push(name.clone());
                if let Some(d) = default {
                    walk(d, out);
                }
            }
        }
    }
    let mut out = vec![];
    walk(&parse(template)?, &mut out);
    Ok(out)
}

/// The variables whose absence makes `template` fail to expand under
/// `lookup`, in order (empty for a malformed template: see [`refs`]).
pub fn missing(
    template: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Vec<String> {
    let mut out = vec![];
    if let Ok(pieces) = parse(template) {
        let _ = expand_pieces(&pieces, lookup, &mut out);
    }
    out
}

/// Appends the expansion of `pieces` to a string; unset variables without
/// a default go to `unset` instead.
fn expand_pieces(
    pieces: &[Piece],
    lookup: &dyn Fn(&str) -> Option<String>,
    unset: &mut Vec<String>,
) -> String {
    let mut out = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Var { name, default } => match (lookup(name), default) {
                (Some(val), Some(d)) if val.is_empty() => {
                    out.push_str(&expand_pieces(d, lookup, unset));
                }
                (Some(val), _) => out.push_str(&val),
                (None, Some(d)) => {
                    out.push_str(&expand_pieces(d, lookup, unset));
                }
                (None, None) => unset.push(name.clone()),
            },
        }
    }
    out
}

/// Expands a template. `Err` carries the name of the first variable that
/// is unset and has no default (or a syntax message, for a template that
/// was not validated first).
pub fn expand(
    template: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, Unset> {
    let pieces = parse(template).map_err(Unset::Malformed)?;
    let mut unset = vec![];
    let out = expand_pieces(&pieces, lookup, &mut unset);
    match unset.into_iter().next() {
        Some(name) => Err(Unset::Var(name)),
        None => Ok(out),
    }
}

/// Why a template could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unset {
    /// A variable that is not set (its name).
    Var(String),
    /// A template that does not parse (why).
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
        assert_eq!(
            refs("ab${OPEN").unwrap_err(),
            "unterminated '${' at character 3 (missing '}')"
        );
        assert_eq!(
            refs("é ${sk-live-1}").unwrap_err(),
            "'${' at character 3 does not start a variable name \
             (use ${NAME} or ${NAME:-default})"
        );
        assert!(refs("${1X}").is_err());
        assert!(refs("${}").is_err());
        assert_eq!(refs("${A}${B:-c}").unwrap(), ["A", "B"]);
    }

    #[test]
    fn cursor_env_and_vscode_input() {
        assert_eq!(expand("a${env:HOME}", &env).unwrap(), "a/home/u");
        assert_eq!(expand("${env:NOPE:-d}", &env).unwrap(), "d");
        assert_eq!(refs("${env:A}").unwrap(), ["A"]);
        assert_eq!(
            refs("x ${input:api-key}").unwrap_err(),
            "'${input:api-key}' at character 3 asks VS Code to prompt for \
             an input, and rivumi-mcp has no prompt; set an environment \
             variable and write ${NAME} instead"
        );
        assert!(
            refs("${input:sk live}")
                .unwrap_err()
                .starts_with("'${input:…}' at character 1")
        );
    }

    #[test]
    fn nested_defaults_expand() {
        let t = "${NOPE:-${HOME}}";
        assert_eq!(expand(t, &env).unwrap(), "/home/u");
        let t = "${NOPE:-${ALSO:-${EMPTY:-deep}}}!";
        assert_eq!(expand(t, &env).unwrap(), "deep!");
        let t = "<${NOPE:-a${HOME}b}>";
        assert_eq!(expand(t, &env).unwrap(), "<a/home/ub>");
        // The outer variable wins when set; the default is not needed.
        assert_eq!(expand("${HOME:-${NOPE}}", &env).unwrap(), "/home/u");
        assert!(missing("${HOME:-${NOPE}}", &env).is_empty());
        // A `}` after a closed reference is literal, as before.
        assert_eq!(expand("${NOPE:-x}y}", &env).unwrap(), "xy}");
        assert_eq!(expand("${NOPE:-$}", &env).unwrap(), "$");
        assert_eq!(refs("${A:-${B:-${C}}}").unwrap(), ["A", "B", "C"]);
    }

    #[test]
    fn nested_unset_names_the_innermost() {
        let t = "${NOPE:-${ALSO}}";
        assert_eq!(expand(t, &env), Err(Unset::Var("ALSO".into())));
        assert_eq!(missing(t, &env), ["ALSO"]);
        assert_eq!(missing("${A}-${B:-x}-${C}", &env), ["A", "C"]);
    }

    #[test]
    fn nesting_is_bounded_and_checked() {
        let ok = "${A:-${B:-${C:-${D:-x}}}}";
        assert_eq!(expand(ok, &env).unwrap(), "x");
        let deep = "${A:-${B:-${C:-${D:-${E}}}}}";
        assert_eq!(
            refs(deep).unwrap_err(),
            "'${' at character 21 is nested more than 4 deep in a default"
        );
        // A very deep template fails cleanly, without recursing far.
        let huge = "${A:-".repeat(100_000);
        assert!(refs(&huge).is_err());
        for bad in ["${A:-${B}", "${A:-${B", "${A:-${1}}", "${A:-${B-C}}"] {
            assert!(refs(bad).is_err(), "{bad}");
            assert!(matches!(expand(bad, &env), Err(Unset::Malformed(_))));
        }
    }

    #[test]
    fn names() {
        assert!(valid_name("_A1"));
        assert!(!valid_name("1A"));
        assert!(!valid_name("A-B"));
        assert!(!valid_name(""));
        assert!(!valid_name("A=B"));
    }

    #[test]
    fn editor_forms() {
        assert_eq!(refs("a${/}b").unwrap(), ["pathSeparator"]);
        let sep = |n: &str| (n == "pathSeparator").then(|| "/".to_string());
        assert_eq!(expand("a${/}b", &sep).unwrap(), "a/b");
        assert_eq!(
            refs("x ${config:python.path}").unwrap_err(),
            "'${config:…}' at character 3 is VS Code's; rivumi-mcp does not \
             expand it (write the value, or ${NAME} for an environment \
             variable)"
        );
        assert!(refs("${command:pick}").is_err());
        assert!(refs("${workspaceFolder:api}").is_err());
        assert!(is_editor_variable("workspaceFolder"));
        assert!(is_editor_variable("selectedText"));
        assert!(!is_editor_variable("HOME"));
    }
}
