//! The configuration model: `.mcp.json` read, validated and resolved.
//!
//! The file is Claude Code's format (`{"mcpServers": {name: entry}}`). This
//! module is pure apart from reading the one file: it never starts, resolves
//! or connects anything, and it never decides whether a server may start
//! (that is the allowlist's job; configuration is not launch authority).
//! Validation collects every problem rather than stopping at the first, so
//! `check-config` can report them all with line, column and JSON pointer.
//! Whatever this module accepts is exactly what the transports use later.
//!
//! This file holds the model and the loading; `check` walks a parsed file
//! and reports (with a per-server cursor, so that each diagnostic is one
//! short call), `oauth` checks the `oauth` block, and `rules` holds the
//! pure rules on names and values that the checks apply.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{Error, Kind, Result};
use crate::jsonpos::Pos;
use crate::urlcheck::Url;

mod check;
mod oauth;
mod rules;
mod sandbox;

pub use check::validate;
pub use oauth::{Assertion, DpopMode, Enterprise, Grant, Machine};
pub use rules::check_name;
pub use sandbox::{Network, Sandbox, resolve as sandbox_path};

/// The largest configuration file read (a FIFO or `/dev/zero` never hangs
/// the reader either: only regular files are read).
pub const MAX_FILE: u64 = 4 << 20;
/// The most servers one file may configure.
pub const MAX_SERVERS: usize = 1000;
/// The longest server name. Qualified tool names (`mcp__<server>__<tool>`)
/// longer than 64 are shortened with a hash; a warning says when a name
/// leaves little room.
pub const MAX_NAME: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

/// One problem found in the file.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub severity: Severity,
    pub server: Option<String>,
    pub pointer: String,
    pub pos: Pos,
    pub message: String,
}

/// A validated server entry.
#[derive(Clone, Debug)]
pub struct Server {
    pub name: String,
    pub transport: Transport,
    pub startup_timeout: Option<Duration>,
    pub tool_timeout: Option<Duration>,
    /// Which protocol era to speak (`protocol`; default `auto`).
    pub protocol: crate::mcp::Choice,
    /// `"disabled": true` (Claude Code, Cursor, Cline): validated and
    /// shown, never started.
    pub disabled: bool,
    /// `"tools": {"allow": [...], "deny": [...]}`: which of the server's
    /// tools are exposed at all (it can only narrow).
    pub tools: Option<ToolFilter>,
}

/// A server's `tools` key: globs (`*`, `?`) over the names the server
/// gives its tools. A tool is exposed when `allow` is empty or one of its
/// globs matches, and no `deny` glob matches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolFilter {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

impl ToolFilter {
    /// Whether the tool named `name` is exposed.
    pub fn admits(&self, name: &str) -> bool {
        let matches = |g: &String| crate::naming::glob_match(g, name);
        (self.allow.is_empty() || self.allow.iter().any(matches))
            && !self.deny.iter().any(matches)
    }
}

#[derive(Clone, Debug)]
pub enum Transport {
    Stdio(Stdio),
    Http(Box<Http>),
}

/// A subprocess server. `command`, `args` and `env` values are templates
/// (`${VAR}` unexpanded); they are expanded at launch, so nothing secret
/// is held here.
#[derive(Clone, Debug)]
pub struct Stdio {
    pub command: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub env_vars: Vec<String>,
    /// The directory the server runs in: `cwd` resolved against the config
    /// file's directory, or that directory itself (as Claude Code does),
    /// so that `args: ["."]` means the project, not wherever rivumi-mcp
    /// was started. `None` only for an ad-hoc server (the current one).
    pub cwd_path: Option<PathBuf>,
    /// False for an ad-hoc server: what the operator typed is run as is,
    /// with no `${VAR}` expansion.
    pub expand: bool,
    /// The opt-in kernel sandbox (`sandbox`), Linux only.
    pub sandbox: Option<Box<Sandbox>>,
}

impl Stdio {
    /// The command and arguments to run: expanded (unless ad-hoc). An
    /// unset variable refuses the launch, naming the field.
    pub(crate) fn argv(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<(String, Vec<String>)> {
        if !self.expand {
            return Ok((self.command.clone(), self.args.clone()));
        }
        let one = |field: &str, t: &str| {
            crate::vars::expand(t, lookup)
                .map_err(|e| Error::refused(format!("{field}: {e}")))
        };
        let command = one("command", &self.command)?;
        let args = self
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| one(&format!("args[{i}]"), a))
            .collect::<Result<Vec<_>>>()?;
        Ok((command, args))
    }
}

/// A Streamable HTTP server. Header values are templates.
#[derive(Clone, Debug)]
pub struct Http {
    /// The URL after `${VAR}` expansion, validated.
    pub url: Url,
    /// The URL as written (before expansion): what the fingerprint covers
    /// and tables show, so a secret in a variable is never printed.
    pub url_text: String,
    pub headers: Vec<(String, String)>,
    pub bearer_token_env_var: Option<String>,
    /// `token_command`: the argv (no shell) whose stdout is the bearer
    /// token, run once per invocation.
    pub token_command: Option<Vec<String>>,
    /// `headers_command`: header names, each with the argv (no shell)
    /// whose stdout is its value, run once per invocation.
    pub headers_command: Vec<(String, Vec<String>)>,
    pub oauth: Option<OAuth>,
}

/// The operator-configured OAuth client of an HTTP server.
#[derive(Clone, Debug)]
pub struct OAuth {
    /// `None` only with `registration: "dynamic"`.
    pub client_id: Option<String>,
    pub client_secret_env_var: Option<String>,
    pub authorization_server: Option<Url>,
    pub authorization_endpoint: Option<Url>,
    pub token_endpoint: Option<Url>,
    pub scopes: Vec<String>,
    pub redirect_port: Option<u16>,
    pub redirect_path: String,
    /// `"registration": "dynamic"`: RFC 7591 registration (opt-in).
    pub dynamic_registration: bool,
    /// `grant`: how the token is obtained (the authorization code by
    /// default).
    pub grant: Grant,
    /// `"refresh": "auto"`: an expired or refused token is refreshed
    /// (once, under the credential file's lock) before the request.
    pub auto_refresh: bool,
    /// Ask for `offline_access` when the authorization server lists it.
    pub offline_access: bool,
    /// Log in inline when a request gets 401 / 403 insufficient_scope.
    pub step_up: bool,
    /// The machine grants, `private_key_jwt` and DPoP (`oauth.rs`).
    pub machine: Machine,
}

impl Server {
    pub fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Stdio(_) => "stdio",
            Transport::Http(_) => "http",
        }
    }

    /// The auth mode shown in tables: `-`, `bearer` or `oauth`.
    pub fn auth_mode(&self) -> &'static str {
        match &self.transport {
            Transport::Http(h) if h.oauth.is_some() => "oauth",
            Transport::Http(h) if h.bearer_token_env_var.is_some() => "bearer",
            Transport::Http(h) if h.token_command.is_some() => "command",
            _ => "-",
        }
    }

    /// What the server runs or reaches, without env or header values.
    pub fn target(&self) -> String {
        match &self.transport {
            Transport::Stdio(s) => {
                let mut t = s.command.clone();
                for a in &s.args {
                    t.push(' ');
                    t.push_str(a);
                }
                t
            }
            Transport::Http(h) => h.url_text.clone(),
        }
    }
}

/// One `mcpServers` member as found in the file: valid or not.
#[derive(Debug)]
pub struct Entry {
    pub name: String,
    /// `None` when the entry has errors.
    pub server: Option<Server>,
}

/// The result of reading and validating a file.
#[derive(Debug)]
pub struct Config {
    pub path: PathBuf,
    pub entries: Vec<Entry>,
    pub diagnostics: Vec<Diagnostic>,
    /// False when a problem outside any one server (syntax, top level)
    /// makes the whole file unusable.
    pub file_ok: bool,
    /// The editor whose file this is (`.vscode/mcp.json`: VS Code,
    /// `.cursor/mcp.json`: Cursor), which decides the project root and
    /// the editor variables below.
    pub editor: Option<&'static str>,
    /// The editor's predefined variables (`${workspaceFolder}`, …), looked
    /// up before the environment; empty outside an editor's file.
    pub predefined: Vec<(String, String)>,
}

impl Config {
    pub fn is_valid(&self) -> bool {
        self.file_ok
            && !self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }

    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// The value of an editor's predefined variable, if this file has it.
    pub fn predefined(&self, name: &str) -> Option<String> {
        self.predefined.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
    }

    /// The first error about `server`, for a refusal message.
    pub fn first_error(&self, server: &str) -> Option<&Diagnostic> {
        self.diagnostics.iter().find(|d| {
            d.severity == Severity::Error
                && d.server.as_deref() == Some(server)
        })
    }
}

/// The path used when `--config` is not given: `.mcp.json` in the current
/// directory, and only there (no parent search, no `.env`).
pub fn default_path() -> PathBuf {
    PathBuf::from(".mcp.json")
}

/// The text of `key=@file` and `key:=@file`: a regular file, bounded.
pub(crate) fn read_value(path: &str) -> std::result::Result<String, String> {
    read_file(Path::new(path)).map_err(|e| e.message().to_string())
}

/// Reads the file: regular files only, at most [`MAX_FILE`] bytes, UTF-8.
/// Errors are `Kind::Usage` (exit 2): the file could not be read at all.
pub(crate) fn read_file(path: &Path) -> Result<String> {
    let shown = path.display();
    // O_NONBLOCK so that opening a FIFO returns at once instead of waiting
    // for a writer; the regular-file check below then refuses it.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::NotFound
                && path == default_path()
            {
                " (rivumi-mcp reads ./.mcp.json only; use -c PATH)"
            } else {
                ""
            };
            Error::usage(format!("{shown}: cannot open: {e}{hint}"))
        })?;
    let meta = file
        .metadata()
        .map_err(|e| Error::usage(format!("{shown}: cannot stat: {e}")))?;
    if !meta.is_file() {
        return Err(Error::usage(format!("{shown}: not a regular file")));
    }
    if meta.len() > MAX_FILE {
        return Err(Error::usage(format!(
            "{shown}: file is {} bytes; the limit is {MAX_FILE}",
            meta.len()
        )));
    }
    let mut bytes = vec![];
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::usage(format!("{shown}: cannot read: {e}")))?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(Error::usage(format!(
            "{shown}: file grew past the limit of {MAX_FILE} bytes"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::usage(format!(
            "{shown}: not UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// The editor whose configuration `path` is: `VS Code` for a file in a
/// `.vscode` directory, `Cursor` for one in `.cursor`.
pub fn editor_of(path: &Path) -> Option<&'static str> {
    let dir = path.parent()?.file_name()?;
    if dir == ".vscode" {
        Some("VS Code")
    } else if dir == ".cursor" {
        Some("Cursor")
    } else {
        None
    }
}

/// Reads and validates a file. `strict` turns unknown keys and unset
/// variables into errors; `lookup` reads the invoking environment.
/// Servers run in the file's directory, or for an editor's file
/// (`.vscode/mcp.json`, `.cursor/mcp.json`) in the project root, the
/// directory that holds `.vscode` or `.cursor`, as the editors do.
pub(crate) fn load(
    path: &Path,
    strict: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Config> {
    let text = read_file(path)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir =
        if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
    // Absolute, so that the directory a server runs in (and so its
    // fingerprint) does not depend on where rivumi-mcp was started.
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let dir = match (editor_of(path), dir.parent()) {
        (Some(_), Some(root)) => root.to_path_buf(),
        _ => dir,
    };
    Ok(validate(&text, path, &dir, strict, lookup))
}

/// Turns the config-level refusal into the error for a run command.
pub(crate) fn refuse(config: &Config, name: &str) -> Error {
    match config.first_error(name) {
        Some(d) => Error::new(
            Kind::Refused,
            format!(
                "invalid entry in {} at {}:{}: {}",
                config.path.display(),
                d.pos.line,
                d.pos.col,
                d.message
            ),
        )
        .for_server(name),
        None => Error::refused("invalid entry").for_server(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Config {
        let env = |n: &str| (n == "SET").then(|| "v".to_string());
        validate(text, Path::new("t.json"), Path::new("/cfg"), false, &env)
    }

    fn messages(c: &Config) -> Vec<String> {
        c.diagnostics.iter().map(|d| d.message.clone()).collect()
    }

    #[test]
    fn minimal_stdio_and_http() {
        let c = check(
            r#"{"mcpServers": {
                "a": {"command": "srv", "args": ["-x"], "cwd": "sub"},
                "b": {"url": "https://example.com/mcp", "type": "http"}
            }}"#,
        );
        assert!(c.is_valid(), "{:?}", c.diagnostics);
        let a = c.entry("a").unwrap().server.as_ref().unwrap();
        assert_eq!(a.target(), "srv -x");
        match &a.transport {
            Transport::Stdio(s) => {
                assert_eq!(s.cwd_path.as_deref(), Some(Path::new("/cfg/sub")))
            }
            _ => panic!(),
        }
        assert_eq!(c.names(), ["a", "b"]);
    }

    #[test]
    fn duplicate_server_is_refused() {
        let c = check(
            r#"{"mcpServers": {"a": {"command": "good"},
                "a": {"command": "evil"}}}"#,
        );
        assert!(!c.is_valid());
        assert!(c.entry("a").unwrap().server.is_none());
        assert!(messages(&c)[0].contains("duplicate key 'a'"));
    }

    #[test]
    fn transports_exclusive() {
        let c = check(
            r#"{"mcpServers": {"a": {"command": "x", "url": "https://e/"}}}"#,
        );
        assert!(messages(&c)[0].contains("both"));
        let c = check(r#"{"mcpServers": {"a": {}}}"#);
        assert!(messages(&c)[0].contains("neither"));
        let c = check(
            r#"{"mcpServers": {"a": {"type": "sse", "url": "https://e/"}}}"#,
        );
        assert!(messages(&c)[0].contains("legacy"));
        let c = check(
            r#"{"mcpServers": {"a": {"type": "http", "command": "x"}}}"#,
        );
        assert!(messages(&c)[0].contains("contradicts"));
    }

    #[test]
    fn vscode_servers_are_read() {
        let c = check(
            r#"{"inputs": [{"id": "key", "type": "promptString"}],
                "servers": {"a": {"type": "stdio", "command": "srv"},
                            "b": {"type": "http", "url": "https://e/mcp",
                                  "headers": {"K": "${input:key}"}}}}"#,
        );
        assert!(c.entry("a").unwrap().server.is_some());
        assert!(c.entry("b").unwrap().server.is_none());
        let d = &c.diagnostics[0];
        assert_eq!(d.pointer, "/servers/b/headers/K");
        assert!(d.message.starts_with("'${input:key}' at character 1"));
        let c = check(r#"{"servers": {}, "mcpServers": {}}"#);
        assert!(messages(&c)[0].contains("is ignored"));
    }

    #[test]
    fn names() {
        assert!(check_name("a-b_1").is_ok());
        assert!(check_name("a__b").is_err());
        assert!(check_name("a.b").is_err());
        assert!(check_name("1a").is_ok());
        for bad in ["--config", "-e", "--help", "_x", "-"] {
            let e = check_name(bad).unwrap_err();
            assert!(e.contains("start with a letter or a digit"), "{e}");
        }
        assert!(check_name(&"x".repeat(65)).is_err());
    }
}
