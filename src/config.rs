//! The configuration model: `.mcp.json` read, validated and resolved.
//!
//! The file is Claude Code's format (`{"mcpServers": {name: entry}}`). This
//! module is pure apart from reading the one file: it never starts, resolves
//! or connects anything, and it never decides whether a server may start
//! (that is the allowlist's job; configuration is not launch authority).
//! Validation collects every problem rather than stopping at the first, so
//! `check-config` can report them all with line, column and JSON pointer.
//! Whatever this module accepts is exactly what the transports use later.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::deadline;
use crate::error::{Error, Kind, Result};
use crate::jsonpos::{self, Kind as J, Member, Node, Pos};
use crate::urlcheck::Url;
use crate::vars;

/// The largest configuration file read (a FIFO or `/dev/zero` never hangs
/// the reader either: only regular files are read).
pub(crate) const MAX_FILE: u64 = 4 << 20;
/// The most servers one file may configure.
pub(crate) const MAX_SERVERS: usize = 1000;
/// The longest server name. Qualified tool names (`mcp__<server>__<tool>`)
/// longer than 64 are shortened with a hash; a warning says when a name
/// leaves little room.
pub(crate) const MAX_NAME: usize = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Severity {
    Warning,
    Error,
}

/// One problem found in the file.
#[derive(Clone, Debug)]
pub(crate) struct Diagnostic {
    pub(crate) severity: Severity,
    pub(crate) server: Option<String>,
    pub(crate) pointer: String,
    pub(crate) pos: Pos,
    pub(crate) message: String,
}

/// A validated server entry.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    pub(crate) name: String,
    pub(crate) transport: Transport,
    pub(crate) startup_timeout: Option<Duration>,
    pub(crate) tool_timeout: Option<Duration>,
}

#[derive(Clone, Debug)]
pub(crate) enum Transport {
    Stdio(Stdio),
    Http(Box<Http>),
}

/// A subprocess server. `env` values are templates (`${VAR}` unexpanded);
/// they are expanded at launch, so nothing secret is held here.
#[derive(Clone, Debug)]
pub(crate) struct Stdio {
    pub(crate) command: String,
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) env_vars: Vec<String>,
    /// As written in the file.
    pub(crate) cwd: Option<String>,
    /// `cwd` resolved against the config file's directory.
    pub(crate) cwd_path: Option<PathBuf>,
}

/// A Streamable HTTP server. Header values are templates.
#[derive(Clone, Debug)]
pub(crate) struct Http {
    pub(crate) url: Url,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) bearer_token_env_var: Option<String>,
    pub(crate) oauth: Option<OAuth>,
}

/// The operator-configured OAuth client of an HTTP server.
#[derive(Clone, Debug)]
pub(crate) struct OAuth {
    /// `None` only with `registration: "dynamic"`.
    pub(crate) client_id: Option<String>,
    pub(crate) client_secret_env_var: Option<String>,
    pub(crate) authorization_server: Option<Url>,
    pub(crate) authorization_endpoint: Option<Url>,
    pub(crate) token_endpoint: Option<Url>,
    pub(crate) scopes: Vec<String>,
    pub(crate) redirect_port: Option<u16>,
    pub(crate) redirect_path: String,
    /// `"registration": "dynamic"`: RFC 7591 registration (opt-in).
    pub(crate) dynamic_registration: bool,
    /// `"grant": "client_credentials"` (machine to machine, no browser).
    pub(crate) client_credentials: bool,
    /// Ask for `offline_access` when the authorization server lists it.
    pub(crate) offline_access: bool,
    /// Log in inline when a request gets 401 / 403 insufficient_scope.
    pub(crate) step_up: bool,
}

impl Server {
    pub(crate) fn transport_name(&self) -> &'static str {
        match self.transport {
            Transport::Stdio(_) => "stdio",
            Transport::Http(_) => "http",
        }
    }

    /// The auth mode shown in tables: `-`, `bearer` or `oauth`.
    pub(crate) fn auth_mode(&self) -> &'static str {
        match &self.transport {
            Transport::Http(h) if h.oauth.is_some() => "oauth",
            Transport::Http(h) if h.bearer_token_env_var.is_some() => "bearer",
            _ => "-",
        }
    }

    /// What the server runs or reaches, without env or header values.
    pub(crate) fn target(&self) -> String {
        match &self.transport {
            Transport::Stdio(s) => {
                let mut t = s.command.clone();
                for a in &s.args {
                    t.push(' ');
                    t.push_str(a);
                }
                t
            }
            Transport::Http(h) => h.url.to_string(),
        }
    }
}

/// One `mcpServers` member as found in the file: valid or not.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) name: String,
    /// `None` when the entry has errors.
    pub(crate) server: Option<Server>,
}

/// The result of reading and validating a file.
#[derive(Debug)]
pub(crate) struct Config {
    pub(crate) path: PathBuf,
    pub(crate) entries: Vec<Entry>,
    pub(crate) diagnostics: Vec<Diagnostic>,
    /// False when a problem outside any one server (syntax, top level)
    /// makes the whole file unusable.
    pub(crate) file_ok: bool,
}

impl Config {
    pub(crate) fn is_valid(&self) -> bool {
        self.file_ok
            && !self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }

    pub(crate) fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.name == name)
    }

    pub(crate) fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// The first error about `server`, for a refusal message.
    pub(crate) fn first_error(&self, server: &str) -> Option<&Diagnostic> {
        self.diagnostics.iter().find(|d| {
            d.severity == Severity::Error
                && d.server.as_deref() == Some(server)
        })
    }
}

/// The path used when `--config` is not given: `.mcp.json` in the current
/// directory, and only there (no parent search, no `.env`).
pub(crate) fn default_path() -> PathBuf {
    PathBuf::from(".mcp.json")
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

/// Reads and validates a file. `strict` turns unknown keys and unset
/// variables into errors; `lookup` reads the invoking environment.
pub(crate) fn load(
    path: &Path,
    strict: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Config> {
    let text = read_file(path)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let dir =
        if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
    Ok(validate(&text, path, &dir, strict, lookup))
}

/// Validates the text of a file (`dir` resolves relative `cwd` values).
pub(crate) fn validate(
    text: &str,
    path: &Path,
    dir: &Path,
    strict: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Config {
    let mut c = Checker { diags: vec![], strict, lookup, dir };
    let mut config = Config {
        path: path.to_path_buf(),
        entries: vec![],
        diagnostics: vec![],
        file_ok: true,
    };
    let doc = match jsonpos::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            c.error(None, "", e.pos, format!("invalid JSON: {}", e.msg));
            config.diagnostics = c.diags;
            config.file_ok = false;
            return config;
        }
    };
    let mut bad_servers: Vec<String> = vec![];
    for d in &doc.duplicates {
        let server = server_of_pointer(&d.pointer);
        if server.is_none() {
            config.file_ok = false;
        }
        let key = d.pointer.rsplit('/').next().unwrap_or("");
        c.error(
            server.clone(),
            &d.pointer,
            d.pos,
            format!(
                "duplicate key '{}' (first at {}:{}); JSON readers \
                 disagree on which one counts, so neither is used",
                unescape_pointer(key),
                d.first.line,
                d.first.col
            ),
        );
        bad_servers.extend(server);
    }
    let root = &doc.root;
    let J::Object(top) = &root.kind else {
        c.error(
            None,
            "",
            root.pos,
            format!(
                "the top level must be an object with \"mcpServers\", \
                 not {}",
                root.type_name()
            ),
        );
        config.diagnostics = c.diags;
        config.file_ok = false;
        return config;
    };
    let mut servers_node = None;
    for m in top {
        match m.key.as_str() {
            "mcpServers" => servers_node = servers_node.or(Some(m)),
            "servers" => {}
            other => c.soft(
                None,
                "",
                m.key_pos,
                unknown_key(
                    "unknown top-level key",
                    "",
                    other,
                    &["mcpServers"],
                ),
            ),
        }
    }
    let Some(servers) = servers_node else {
        let hint = if root.get("servers").is_some() {
            "; found \"servers\" (VS Code's format): rename it to \
             \"mcpServers\""
        } else {
            ""
        };
        c.error(
            None,
            "",
            root.pos,
            format!("missing the \"mcpServers\" object{hint}"),
        );
        config.diagnostics = c.diags;
        config.file_ok = false;
        return config;
    };
    if let Some(vs) = root.get("servers") {
        c.soft(
            None,
            "/servers",
            vs.key_pos,
            "key \"servers\" (VS Code's format) is ignored; rivumi-mcp \
             reads \"mcpServers\""
                .to_string(),
        );
    }
    let J::Object(members) = &servers.value.kind else {
        c.error(
            None,
            "/mcpServers",
            servers.value.pos,
            format!(
                "\"mcpServers\" must be an object, not {}",
                servers.value.type_name()
            ),
        );
        config.diagnostics = c.diags;
        config.file_ok = false;
        return config;
    };
    if members.len() > MAX_SERVERS {
        c.error(
            None,
            "/mcpServers",
            servers.value.pos,
            format!(
                "{} servers configured; the limit is {MAX_SERVERS}",
                members.len()
            ),
        );
        config.diagnostics = c.diags;
        config.file_ok = false;
        return config;
    }
    for m in members {
        if config.entries.iter().any(|e| e.name == m.key) {
            continue; // a duplicate, reported above
        }
        let before = c.error_count();
        let server = c.server(m);
        let bad = c.error_count() > before || bad_servers.contains(&m.key);
        config.entries.push(Entry {
            name: m.key.clone(),
            server: if bad { None } else { server },
        });
    }
    if !config.file_ok {
        // A duplicate outside any one server (two "mcpServers" objects,
        // say): readers disagree about the whole file, so nothing in it
        // is usable.
        for e in &mut config.entries {
            e.server = None;
        }
    }
    c.diags.sort_by_key(|d| (d.pos.line, d.pos.col));
    config.diagnostics = c.diags;
    config
}

/// `/mcpServers/<name>/...` -> `<name>`.
fn server_of_pointer(pointer: &str) -> Option<String> {
    let rest = pointer.strip_prefix("/mcpServers/")?;
    let seg = rest.split('/').next()?;
    Some(unescape_pointer(seg))
}

fn unescape_pointer(seg: &str) -> String {
    seg.replace("~1", "/").replace("~0", "~")
}

/// Builds a JSON pointer from raw segments (the first is usually "").
fn ptr(segs: &[&str]) -> String {
    let mut out = String::new();
    for s in segs.iter().skip(1) {
        out.push('/');
        out.push_str(&jsonpos::pointer_escape(s));
    }
    out
}

const STDIO_KEYS: &[&str] = &["command", "args", "env", "env_vars", "cwd"];
const HTTP_KEYS: &[&str] =
    &["url", "headers", "bearer_token_env_var", "oauth"];
const COMMON_KEYS: &[&str] =
    &["type", "startup_timeout_sec", "tool_timeout_sec"];
const OAUTH_KEYS: &[&str] = &[
    "client_id",
    "client_secret_env_var",
    "authorization_server",
    "authorization_endpoint",
    "token_endpoint",
    "scopes",
    "redirect_port",
    "redirect_path",
    "registration",
    "grant",
    "offline_access",
    "step_up",
];

/// Header names the transport sets itself; a config may not override them.
const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "connection",
    "content-length",
    "content-type",
    "host",
    "keep-alive",
    "last-event-id",
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

struct Checker<'a> {
    diags: Vec<Diagnostic>,
    strict: bool,
    lookup: &'a dyn Fn(&str) -> Option<String>,
    dir: &'a Path,
}

impl Checker<'_> {
    fn push(
        &mut self,
        severity: Severity,
        server: Option<String>,
        pointer: &str,
        pos: Pos,
        message: String,
    ) {
        self.diags.push(Diagnostic {
            severity,
            server,
            pointer: pointer.to_string(),
            pos,
            message,
        });
    }

    fn error(&mut self, s: Option<String>, p: &str, pos: Pos, m: String) {
        self.push(Severity::Error, s, p, pos, m);
    }

    fn warn(&mut self, s: Option<String>, p: &str, pos: Pos, m: String) {
        self.push(Severity::Warning, s, p, pos, m);
    }

    /// A warning that `--strict` makes an error.
    fn soft(&mut self, s: Option<String>, p: &str, pos: Pos, m: String) {
        let sev =
            if self.strict { Severity::Error } else { Severity::Warning };
        self.push(sev, s, p, pos, m);
    }

    fn error_count(&self) -> usize {
        self.diags.iter().filter(|d| d.severity == Severity::Error).count()
    }

    /// Validates one `mcpServers` member.
    fn server(&mut self, m: &Member) -> Option<Server> {
        let name = m.key.as_str();
        let s = Some(name.to_string());
        let base = ptr(&["", "mcpServers", name]);
        let at = |k: &str| format!("{base}/{}", jsonpos::pointer_escape(k));
        if let Err(msg) = check_name(name) {
            self.error(s.clone(), &base, m.key_pos, msg);
        } else if name.len() + "mcp____".len() > 48 {
            self.warn(
                s.clone(),
                &base,
                m.key_pos,
                format!(
                    "server name is {} characters: mcp__{name}__<tool> \
                     leaves {} characters for tool names under the \
                     64-character limit",
                    name.len(),
                    64usize.saturating_sub(name.len() + 7)
                ),
            );
        }
        let J::Object(fields) = &m.value.kind else {
            self.error(
                s,
                &base,
                m.value.pos,
                format!(
                    "a server entry must be an object, not {}",
                    m.value.type_name()
                ),
            );
            return None;
        };
        let node = &m.value;
        let ty = match node.get("type") {
            None => None,
            Some(t) => match &t.value.kind {
                J::String(v) => match v.as_str() {
                    "stdio" => Some("stdio"),
                    "http" | "streamable-http" => Some("http"),
                    "sse" => {
                        self.error(
                            s.clone(),
                            &at("type"),
                            t.value.pos,
                            "type \"sse\" is the legacy HTTP+SSE transport, \
                             which rivumi-mcp does not support; use a \
                             Streamable HTTP endpoint with type \"http\""
                                .to_string(),
                        );
                        return None;
                    }
                    _ => {
                        self.error(
                            s.clone(),
                            &at("type"),
                            t.value.pos,
                            "'type' must be one of: stdio, http, \
                             streamable-http"
                                .to_string(),
                        );
                        return None;
                    }
                },
                _ => {
                    self.error(
                        s.clone(),
                        &at("type"),
                        t.value.pos,
                        format!(
                            "'type' must be a string, not {}",
                            t.value.type_name()
                        ),
                    );
                    return None;
                }
            },
        };
        let has_cmd = node.get("command").is_some();
        let has_url = node.get("url").is_some();
        let transport = match (has_cmd, has_url, ty) {
            (true, true, _) => {
                self.error(
                    s,
                    &base,
                    node.pos,
                    "both 'command' and 'url' are set; a server has exactly \
                     one transport"
                        .to_string(),
                );
                return None;
            }
            (false, false, _) => {
                let all =
                    STDIO_KEYS.iter().chain(HTTP_KEYS).chain(COMMON_KEYS);
                let mut msg =
                    "neither 'command' (stdio) nor 'url' (http) is set"
                        .to_string();
                for f in fields {
                    if all.clone().any(|k| *k == f.key) {
                        continue;
                    }
                    if let Some(sug) =
                        crate::cli::suggest(&f.key, all.clone().copied())
                    {
                        msg.push_str(&format!(
                            "; unknown key '{}': did you mean '{sug}'?",
                            f.key
                        ));
                        break;
                    }
                }
                self.error(s, &base, node.pos, msg);
                return None;
            }
            (true, false, Some("http")) | (false, true, Some("stdio")) => {
                let (want, have) = if has_cmd {
                    ("http", "command")
                } else {
                    ("stdio", "url")
                };
                self.error(
                    s,
                    &at("type"),
                    node.get("type").map_or(node.pos, |t| t.value.pos),
                    format!(
                        "type \"{want}\" contradicts '{have}' (a \"{want}\" \
                         server needs '{}')",
                        if want == "http" { "url" } else { "command" }
                    ),
                );
                return None;
            }
            (true, false, _) => "stdio",
            (false, true, _) => "http",
        };
        // Keys: known for this transport, misplaced, or unknown.
        let (own, other) = if transport == "stdio" {
            (STDIO_KEYS, HTTP_KEYS)
        } else {
            (HTTP_KEYS, STDIO_KEYS)
        };
        for f in fields {
            let k = f.key.as_str();
            if own.contains(&k) || COMMON_KEYS.contains(&k) {
                continue;
            }
            if other.contains(&k) {
                self.error(
                    s.clone(),
                    &at(k),
                    f.key_pos,
                    format!(
                        "'{k}' does not apply to a {transport} server \
                         (it belongs to {} servers)",
                        if transport == "stdio" { "http" } else { "stdio" }
                    ),
                );
                continue;
            }
            let known: Vec<&str> =
                own.iter().chain(COMMON_KEYS).copied().collect();
            let msg = unknown_key("unknown key", "", k, &known);
            self.soft(s.clone(), &base, f.key_pos, msg);
        }
        let startup_timeout = self.timeout(node, "startup_timeout_sec", &s);
        let tool_timeout = self.timeout(node, "tool_timeout_sec", &s);
        let transport = if transport == "stdio" {
            Transport::Stdio(self.stdio(node, &s, &base)?)
        } else {
            Transport::Http(Box::new(self.http(node, &s, &base)?))
        };
        Some(Server {
            name: name.to_string(),
            transport,
            startup_timeout: startup_timeout.ok()?,
            tool_timeout: tool_timeout.ok()?,
        })
    }

    fn timeout(
        &mut self,
        node: &Node,
        key: &str,
        s: &Option<String>,
    ) -> std::result::Result<Option<Duration>, ()> {
        let Some(m) = node.get(key) else { return Ok(None) };
        let p = format!("{}/{key}", base_of(s));
        let value = match &m.value.kind {
            J::Number(n) => n.as_f64().and_then(deadline::to_duration),
            _ => None,
        };
        match value {
            Some(d) => Ok(Some(d)),
            None => {
                self.error(
                    s.clone(),
                    &p,
                    m.value.pos,
                    format!(
                        "'{key}' must be a positive number of seconds \
                         (at most 1000000)"
                    ),
                );
                Err(())
            }
        }
    }

    fn stdio(
        &mut self,
        node: &Node,
        s: &Option<String>,
        base: &str,
    ) -> Option<Stdio> {
        let errors = self.error_count();
        let cmd_m = node.get("command")?;
        let command = match &cmd_m.value.kind {
            J::String(c) if c.is_empty() => {
                self.error(
                    s.clone(),
                    &format!("{base}/command"),
                    cmd_m.value.pos,
                    "'command' is empty".to_string(),
                );
                String::new()
            }
            J::String(c) => {
                if c.contains('\0') {
                    self.error(
                        s.clone(),
                        &format!("{base}/command"),
                        cmd_m.value.pos,
                        "'command' contains a NUL byte".to_string(),
                    );
                } else if c.trim() != c || c.contains(' ') {
                    self.warn(
                        s.clone(),
                        &format!("{base}/command"),
                        cmd_m.value.pos,
                        format!(
                            "'command' contains spaces; it is run as one \
                             program name '{c}', never through a shell \
                             (put arguments in 'args')"
                        ),
                    );
                }
                c.clone()
            }
            _ => {
                self.error(
                    s.clone(),
                    &format!("{base}/command"),
                    cmd_m.value.pos,
                    format!(
                        "'command' must be a string, not {}",
                        cmd_m.value.type_name()
                    ),
                );
                String::new()
            }
        };
        let args = self.string_array(node, "args", s, base);
        for (i, a) in args.iter().enumerate() {
            if a.contains("${") {
                let m = node.get("args").map_or(node.pos, |m| m.value.pos);
                self.warn(
                    s.clone(),
                    &format!("{base}/args/{i}"),
                    m,
                    "'${' in args is passed literally: variables are \
                     expanded only in 'env' values (and http 'headers')"
                        .to_string(),
                );
            }
        }
        let env = self.string_map(node, "env", s, base, MapKind::Env);
        let env_vars = self.string_array(node, "env_vars", s, base);
        if let Some(m) = node.get("env_vars") {
            let mut seen: Vec<&str> = vec![];
            for (i, n) in env_vars.iter().enumerate() {
                let p = format!("{base}/env_vars/{i}");
                let pos = item_pos(&m.value, i);
                if let Err(msg) = check_env_name(n) {
                    self.error(s.clone(), &p, pos, msg);
                } else if seen.contains(&n.as_str()) {
                    self.warn(
                        s.clone(),
                        &p,
                        pos,
                        format!("'{n}' is listed twice"),
                    );
                } else {
                    self.check_set(s, &p, pos, n);
                    self.loader_warning(s, &p, pos, n);
                }
                seen.push(n);
            }
        }
        let mut cwd = None;
        let mut cwd_path = None;
        if let Some(m) = node.get("cwd") {
            let p = format!("{base}/cwd");
            match &m.value.kind {
                J::String(c) if !c.is_empty() && !c.contains('\0') => {
                    cwd_path = Some(self.dir.join(c));
                    cwd = Some(c.clone());
                }
                _ => self.error(
                    s.clone(),
                    &p,
                    m.value.pos,
                    "'cwd' must be a non-empty path string".to_string(),
                ),
            }
        }
        if !command.is_empty() && !command.contains('\0') {
            let pos =
                node.get("args").map_or(cmd_m.value.pos, |m| m.value.pos);
            self.unpinned_launcher(&command, &args, s, base, pos);
        }
        (self.error_count() == errors).then_some(Stdio {
            command,
            args,
            env,
            env_vars,
            cwd,
            cwd_path,
        })
    }

    fn http(
        &mut self,
        node: &Node,
        s: &Option<String>,
        base: &str,
    ) -> Option<Http> {
        let errors = self.error_count();
        let url_m = node.get("url")?;
        let url = self.url(&url_m.value, s, &format!("{base}/url"));
        let headers =
            self.string_map(node, "headers", s, base, MapKind::Header);
        let mut bearer = None;
        if let Some(m) = node.get("bearer_token_env_var") {
            let p = format!("{base}/bearer_token_env_var");
            match &m.value.kind {
                J::String(n) => match check_env_name(n) {
                    Ok(()) => {
                        self.check_set(s, &p, m.value.pos, n);
                        bearer = Some(n.clone());
                    }
                    Err(msg) => self.error(s.clone(), &p, m.value.pos, msg),
                },
                _ => self.error(
                    s.clone(),
                    &p,
                    m.value.pos,
                    "'bearer_token_env_var' must be the name of an \
                     environment variable"
                        .to_string(),
                ),
            }
        }
        let oauth = node.get("oauth").and_then(|m| self.oauth(m, s, base));
        let auth_header = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        if node.get("oauth").is_some() && bearer.is_some() {
            self.error(
                s.clone(),
                &format!("{base}/oauth"),
                node.pos,
                "both 'oauth' and 'bearer_token_env_var' are set; choose \
                 one way to authenticate"
                    .to_string(),
            );
        }
        if let Some((k, v)) = auth_header {
            let p = format!("{base}/headers/{}", jsonpos::pointer_escape(k));
            let pos = node.get("headers").map_or(node.pos, |m| m.value.pos);
            if bearer.is_some() || node.get("oauth").is_some() {
                self.error(
                    s.clone(),
                    &p,
                    pos,
                    "an 'Authorization' header conflicts with \
                     'bearer_token_env_var'/'oauth'"
                        .to_string(),
                );
            } else if !v.contains("${") {
                self.warn(
                    s.clone(),
                    &p,
                    pos,
                    "the 'Authorization' header holds a literal value: a \
                     secret in the config file; use \
                     bearer_token_env_var or ${VAR}"
                        .to_string(),
                );
            }
        }
        let url = url?;
        (self.error_count() == errors).then_some(Http {
            url,
            headers,
            bearer_token_env_var: bearer,
            oauth,
        })
    }

    fn url(&mut self, v: &Node, s: &Option<String>, p: &str) -> Option<Url> {
        match &v.kind {
            J::String(raw) => match Url::parse(raw) {
                Ok(u) => Some(u),
                Err(e) => {
                    self.error(s.clone(), p, v.pos, format!("url: {e}"));
                    None
                }
            },
            _ => {
                self.error(
                    s.clone(),
                    p,
                    v.pos,
                    format!("must be a URL string, not {}", v.type_name()),
                );
                None
            }
        }
    }

    fn oauth(
        &mut self,
        m: &Member,
        s: &Option<String>,
        base: &str,
    ) -> Option<OAuth> {
        let errors = self.error_count();
        let base = format!("{base}/oauth");
        let J::Object(fields) = &m.value.kind else {
            self.error(
                s.clone(),
                &base,
                m.value.pos,
                "'oauth' must be an object".to_string(),
            );
            return None;
        };
        for f in fields {
            if !OAUTH_KEYS.contains(&f.key.as_str()) {
                let (noun, place) = ("unknown key", " in 'oauth'");
                let msg = unknown_key(noun, place, &f.key, OAUTH_KEYS);
                self.soft(s.clone(), &base, f.key_pos, msg);
            }
        }
        let node = &m.value;
        let string = |c: &mut Self, key: &str| -> Option<String> {
            let f = node.get(key)?;
            match &f.value.kind {
                J::String(v) if !v.is_empty() && !v.contains('\0') => {
                    Some(v.clone())
                }
                _ => {
                    c.error(
                        s.clone(),
                        &format!("{base}/{key}"),
                        f.value.pos,
                        format!("'{key}' must be a non-empty string"),
                    );
                    None
                }
            }
        };
        let client_id = string(self, "client_id");
        // A string from a fixed set: `string`'s check, then membership.
        let choice = |c: &mut Self, key: &str, allowed: &[&str]| {
            let v = string(c, key)?;
            if allowed.contains(&v.as_str()) {
                return Some(v);
            }
            let pos = node.get(key).map_or(node.pos, |f| f.value.pos);
            c.error(
                s.clone(),
                &format!("{base}/{key}"),
                pos,
                format!("'{key}' must be one of: {}", allowed.join(", ")),
            );
            None
        };
        let dynamic = choice(self, "registration", &["dynamic", "none"])
            .is_some_and(|v| v == "dynamic");
        let client_credentials = choice(
            self,
            "grant",
            &["authorization_code", "client_credentials"],
        )
        .is_some_and(|v| v == "client_credentials");
        let flag = |c: &mut Self, key: &str| match node.get(key) {
            None => false,
            Some(f) => match f.value.kind {
                J::Bool(b) => b,
                _ => {
                    c.error(
                        s.clone(),
                        &format!("{base}/{key}"),
                        f.value.pos,
                        format!("'{key}' must be true or false"),
                    );
                    false
                }
            },
        };
        let offline_access = flag(self, "offline_access");
        let step_up = flag(self, "step_up");
        if node.get("client_id").is_none() && !dynamic {
            self.error(
                s.clone(),
                &base,
                node.pos,
                "'oauth' needs 'client_id' (or the opt-in \"registration\": \
                 \"dynamic\")"
                    .to_string(),
            );
        }
        if client_credentials
            && (node.get("client_id").is_none()
                || node.get("client_secret_env_var").is_none())
        {
            self.error(
                s.clone(),
                &base,
                node.pos,
                "\"grant\": \"client_credentials\" needs 'client_id' and \
                 'client_secret_env_var'"
                    .to_string(),
            );
        }
        let secret_var = string(self, "client_secret_env_var");
        if let Some(n) = &secret_var {
            let p = format!("{base}/client_secret_env_var");
            let pos = node
                .get("client_secret_env_var")
                .map_or(node.pos, |f| f.value.pos);
            match check_env_name(n) {
                Ok(()) => self.check_set(s, &p, pos, n),
                Err(msg) => self.error(s.clone(), &p, pos, msg),
            }
        }
        let endpoint = |c: &mut Self, key: &str| {
            node.get(key)
                .and_then(|f| c.url(&f.value, s, &format!("{base}/{key}")))
        };
        let authorization_server = endpoint(self, "authorization_server");
        let authorization_endpoint = endpoint(self, "authorization_endpoint");
        let token_endpoint = endpoint(self, "token_endpoint");
        let has = |k: &str| node.get(k).is_some();
        if has("authorization_server")
            && (has("authorization_endpoint") || has("token_endpoint"))
        {
            self.error(
                s.clone(),
                &base,
                node.pos,
                "give either 'authorization_server' (discovered) or \
                 'authorization_endpoint' and 'token_endpoint', not both"
                    .to_string(),
            );
        } else if has("authorization_endpoint") != has("token_endpoint") {
            self.error(
                s.clone(),
                &base,
                node.pos,
                "'authorization_endpoint' and 'token_endpoint' go together"
                    .to_string(),
            );
        }
        let scopes = self.string_array(node, "scopes", s, &base);
        for (i, sc) in scopes.iter().enumerate() {
            let ok = !sc.is_empty()
                && sc.bytes().all(|b| b > 0x20 && b < 0x7f && b != b'"')
                && sc != "\\";
            if !ok {
                let pos = node
                    .get("scopes")
                    .map_or(node.pos, |f| item_pos(&f.value, i));
                self.error(
                    s.clone(),
                    &format!("{base}/scopes/{i}"),
                    pos,
                    "not a valid scope token (no spaces or quotes)"
                        .to_string(),
                );
            }
        }
        let mut redirect_port = None;
        if let Some(f) = node.get("redirect_port") {
            if let J::Number(ref n) = f.value.kind {
                redirect_port = n
                    .as_u64()
                    .filter(|p| (1..=65535).contains(p))
                    .map(|p| p as u16)
            }
            if redirect_port.is_none() {
                self.error(
                    s.clone(),
                    &format!("{base}/redirect_port"),
                    f.value.pos,
                    "'redirect_port' must be an integer from 1 to 65535"
                        .to_string(),
                );
            }
        }
        let redirect_path = string(self, "redirect_path")
            .unwrap_or_else(|| "/callback".to_string());
        if !redirect_path.starts_with('/')
            || redirect_path.contains(['?', '#', ' '])
        {
            let pos =
                node.get("redirect_path").map_or(node.pos, |f| f.value.pos);
            self.error(
                s.clone(),
                &format!("{base}/redirect_path"),
                pos,
                "'redirect_path' must be a path starting with '/', without \
                 query or fragment"
                    .to_string(),
            );
        }
        if self.error_count() != errors {
            return None;
        }
        Some(OAuth {
            client_id,
            client_secret_env_var: secret_var,
            authorization_server,
            authorization_endpoint,
            token_endpoint,
            scopes,
            redirect_port,
            redirect_path,
            dynamic_registration: dynamic,
            client_credentials,
            offline_access,
            step_up,
        })
    }

    /// An optional array of strings; errors for anything else.
    fn string_array(
        &mut self,
        node: &Node,
        key: &str,
        s: &Option<String>,
        base: &str,
    ) -> Vec<String> {
        let Some(m) = node.get(key) else { return vec![] };
        let p = format!("{base}/{key}");
        let J::Array(items) = &m.value.kind else {
            self.error(
                s.clone(),
                &p,
                m.value.pos,
                format!(
                    "'{key}' must be an array of strings, not {}",
                    m.value.type_name()
                ),
            );
            return vec![];
        };
        let mut out = vec![];
        for (i, it) in items.iter().enumerate() {
            match &it.kind {
                J::String(v) if v.contains('\0') => self.error(
                    s.clone(),
                    &format!("{p}/{i}"),
                    it.pos,
                    format!("'{key}' item contains a NUL byte"),
                ),
                J::String(v) => out.push(v.clone()),
                _ => self.error(
                    s.clone(),
                    &format!("{p}/{i}"),
                    it.pos,
                    format!(
                        "'{key}' items must be strings, not {}",
                        it.type_name()
                    ),
                ),
            }
        }
        out
    }

    /// `env` or `headers`: an object of name -> template string.
    fn string_map(
        &mut self,
        node: &Node,
        key: &str,
        s: &Option<String>,
        base: &str,
        kind: MapKind,
    ) -> Vec<(String, String)> {
        let Some(m) = node.get(key) else { return vec![] };
        let p = format!("{base}/{key}");
        let J::Object(fields) = &m.value.kind else {
            self.error(
                s.clone(),
                &p,
                m.value.pos,
                format!(
                    "'{key}' must be an object of names to strings, not {}",
                    m.value.type_name()
                ),
            );
            return vec![];
        };
        let mut out: Vec<(String, String)> = vec![];
        for f in fields {
            let fp = format!("{p}/{}", jsonpos::pointer_escape(&f.key));
            let name_ok = match kind {
                MapKind::Env => check_env_name(&f.key),
                MapKind::Header => check_header_name(&f.key),
            };
            if let Err(msg) = name_ok {
                // A key that is not even a name is not repeated: the
                // pointer stops at the map (see `unknown_key`).
                let is_name = match kind {
                    MapKind::Env => vars::valid_name(&f.key),
                    MapKind::Header => is_token(&f.key),
                };
                let at = if is_name { &fp } else { &p };
                self.error(s.clone(), at, f.key_pos, msg);
                continue;
            }
            if kind == MapKind::Header
                && out.iter().any(|(k, _)| k.eq_ignore_ascii_case(&f.key))
            {
                self.error(
                    s.clone(),
                    &fp,
                    f.key_pos,
                    format!(
                        "header '{}' is given twice (names are \
                         case-insensitive)",
                        f.key
                    ),
                );
                continue;
            }
            let J::String(v) = &f.value.kind else {
                self.error(
                    s.clone(),
                    &fp,
                    f.value.pos,
                    format!(
                        "value of '{}' must be a string, not {}",
                        f.key,
                        f.value.type_name()
                    ),
                );
                continue;
            };
            if v.contains(['\0', '\r', '\n']) {
                self.error(
                    s.clone(),
                    &fp,
                    f.value.pos,
                    format!(
                        "value of '{}' contains a NUL or line break",
                        f.key
                    ),
                );
                continue;
            }
            match vars::refs(v) {
                Err(msg) => {
                    self.error(s.clone(), &fp, f.value.pos, msg);
                    continue;
                }
                Ok(names) => {
                    for name in names.iter().filter(|n| reserved(n)) {
                        self.error(
                            s.clone(),
                            &fp,
                            f.value.pos,
                            format!(
                                "'{name}' is rivumi-mcp's own setting and is \
                                 never passed to servers"
                            ),
                        );
                    }
                    for name in vars::missing(v, self.lookup) {
                        if !reserved(&name) {
                            self.check_set(s, &fp, f.value.pos, &name);
                        }
                    }
                }
            }
            if kind == MapKind::Env {
                self.loader_warning(s, &fp, f.key_pos, &f.key);
            }
            out.push((f.key.clone(), v.clone()));
        }
        out
    }

    /// Warns (errs under `--strict`) when a needed variable is unset.
    fn check_set(
        &mut self,
        s: &Option<String>,
        p: &str,
        pos: Pos,
        name: &str,
    ) {
        if (self.lookup)(name).is_none() {
            self.soft(
                s.clone(),
                p,
                pos,
                format!(
                    "environment variable '{name}' is not set (starting \
                     this server will fail until it is)"
                ),
            );
        }
    }

    fn loader_warning(
        &mut self,
        s: &Option<String>,
        p: &str,
        pos: Pos,
        n: &str,
    ) {
        if LOADER_VARS.contains(&n) || n.starts_with("DYLD_") {
            self.warn(
                s.clone(),
                p,
                pos,
                format!(
                    "'{n}' changes which code the server loads; make sure \
                     that is intended"
                ),
            );
        }
    }

    /// `npx pkg` without a version runs whatever was published last.
    fn unpinned_launcher(
        &mut self,
        command: &str,
        args: &[String],
        s: &Option<String>,
        base: &str,
        pos: Pos,
    ) {
        let prog = command.rsplit('/').next().unwrap_or(command);
        let (takes_value, pinned): (&[&str], fn(&str) -> bool) = match prog {
            "npx" | "bunx" | "pnpx" => (&["-p", "--package"], npm_pinned),
            "uvx" | "pipx" => (&["--from", "--python", "--with"], py_pinned),
            _ => return,
        };
        let mut it = args.iter();
        let mut package = None;
        while let Some(a) = it.next() {
            if prog == "pipx" && a == "run" {
                continue;
            }
            if takes_value.contains(&a.as_str()) {
                it.next();
            } else if !a.starts_with('-') {
                package = Some(a);
                break;
            }
        }
        if let Some(p) = package
            && !pinned(p)
        {
            self.warn(
                s.clone(),
                &format!("{base}/args"),
                pos,
                format!(
                    "'{prog} {p}' runs whatever version was published \
                         last; pin it (e.g. {})",
                    pin_example(prog, p)
                ),
            );
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MapKind {
    Env,
    Header,
}

fn base_of(s: &Option<String>) -> String {
    ptr(&["", "mcpServers", s.as_deref().unwrap_or("")])
}

fn item_pos(node: &Node, i: usize) -> Pos {
    match &node.kind {
        J::Array(items) => items.get(i).map_or(node.pos, |n| n.pos),
        _ => node.pos,
    }
}

/// How a pinned package looks for this launcher: `pkg@1.2.3` for the npm
/// family, `pkg==1.2.3` for the Python ones (an existing tag or range is
/// replaced, not appended to).
fn pin_example(prog: &str, p: &str) -> String {
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
fn npm_pinned(p: &str) -> bool {
    let body = p.strip_prefix('@').unwrap_or(p);
    match body.rsplit_once('@') {
        Some((_, v)) => v.starts_with(|c: char| c.is_ascii_digit()),
        None => false,
    }
}

/// `pkg==1.2.3` or `pkg@1.2.3`.
fn py_pinned(p: &str) -> bool {
    p.split_once("==")
        .or_else(|| p.split_once('@'))
        .is_some_and(|(_, v)| v.starts_with(|c: char| c.is_ascii_digit()))
}

/// A server name: 1–64 of `[A-Za-z0-9_-]`, without `__`.
pub(crate) fn check_name(name: &str) -> std::result::Result<(), String> {
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
    if name.contains("__") {
        return Err(format!(
            "server name '{name}' contains '__', the separator of \
             mcp__<server>__<tool>"
        ));
    }
    Ok(())
}

/// The message for a key that is not one of `known`. The key is named
/// only when it is a near miss of a known key (then it is a typo, not a
/// secret pasted in the wrong place); otherwise the diagnostic says where
/// it is, not what it is, and its pointer stops at the enclosing object.
fn unknown_key(noun: &str, place: &str, key: &str, known: &[&str]) -> String {
    match crate::cli::suggest(key, known.iter().copied()) {
        Some(sug) => format!(
            "{noun} '{}'{place}; did you mean '{sug}'?",
            crate::term::line(key)
        ),
        None => format!("{noun}{place}"),
    }
}

/// Whether `n` is one of rivumi-mcp's own variables, never passed on.
fn reserved(n: &str) -> bool {
    n.starts_with("RIVUMI_MCP_")
}

fn check_env_name(n: &str) -> std::result::Result<(), String> {
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
fn is_token(n: &str) -> bool {
    let tchar =
        |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    !n.is_empty() && n.chars().all(tchar)
}

fn check_header_name(n: &str) -> std::result::Result<(), String> {
    if !is_token(n) {
        return Err("not a valid header name (letters, digits and \
             !#$%&'*+-.^_`|~ only)"
            .to_string());
    }
    if RESERVED_HEADERS.contains(&n.to_ascii_lowercase().as_str()) {
        return Err(format!(
            "header '{n}' is set by rivumi-mcp itself and cannot be \
             configured"
        ));
    }
    Ok(())
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
    fn vscode_servers_gets_a_hint() {
        let c = check(r#"{"servers": {}}"#);
        assert!(messages(&c)[0].contains("VS Code"));
        assert!(!c.file_ok);
    }

    #[test]
    fn npm_and_py_pins() {
        assert!(npm_pinned("@scope/pkg@1.2.3"));
        assert!(npm_pinned("pkg@0.1"));
        assert!(!npm_pinned("@scope/pkg"));
        assert!(!npm_pinned("pkg@latest"));
        assert!(py_pinned("mcp-server==1.0"));
        assert!(!py_pinned("mcp-server"));
    }

    #[test]
    fn names() {
        assert!(check_name("a-b_1").is_ok());
        assert!(check_name("a__b").is_err());
        assert!(check_name("a.b").is_err());
        assert!(check_name(&"x".repeat(65)).is_err());
    }
}
