//! Validation of a parsed `.mcp.json`: the document, then each server
//! through a [`Cursor`] that knows the server's name and the JSON pointer
//! of its entry, so that every diagnostic is one short call with a pointer
//! relative to the entry.
//!
//! VS Code's `.vscode/mcp.json` is read too: its servers are under
//! `"servers"` (beside `"inputs"`), and files in a `.vscode` directory (or
//! named `*.jsonc`) are JSONC, comments and trailing commas allowed. Each
//! entry is checked by the same rules, with pointers under `/servers`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::rules::{
    COMMON_KEYS, HTTP_KEYS, STDIO_KEYS, check_env_name, check_header_name,
    check_name, is_loader_var, is_token, npm_pinned, pin_example, py_pinned,
    reserved, unknown_key,
};
use super::{
    Config, Diagnostic, Entry, Http, MAX_SERVERS, Server, Severity, Stdio,
    Transport,
};
use crate::deadline;
use crate::jsonpos::{self, Doc, Duplicate, Kind as J, Member, Node, Pos};
use crate::mcp::Choice;
use crate::urlcheck::Url;
use crate::vars;

/// Validates the text of a file (`dir` resolves relative `cwd` values).
pub fn validate(
    text: &str,
    path: &Path,
    dir: &Path,
    strict: bool,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Config {
    let editor = super::editor_of(path);
    let predefined = match editor {
        Some(_) => editor_variables(dir, lookup),
        None => vec![],
    };
    let with_editor = |n: &str| {
        predefined
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.clone())
            .or_else(|| lookup(n))
    };
    let mut c = Checker {
        diags: vec![],
        strict,
        lookup: &with_editor,
        dir,
        top: "mcpServers",
        editor,
        predefined: &predefined,
    };
    let doc = if is_jsonc(path) {
        jsonpos::parse_jsonc(text)
    } else {
        jsonpos::parse(text)
    };
    let checked = match doc {
        Ok(doc) => c.document(&doc),
        Err(e) => c.reject("", e.pos, format!("invalid JSON: {}", e.msg)),
    };
    let mut diagnostics = c.diags;
    let (entries, file_ok) = match checked {
        Some(checked) => {
            diagnostics.sort_by_key(|d| (d.pos.line, d.pos.col));
            checked
        }
        // Rejected as a whole: the diagnostics stay in the order found.
        None => (vec![], false),
    };
    Config {
        path: path.to_path_buf(),
        entries,
        diagnostics,
        file_ok,
        editor,
        predefined: predefined.clone(),
    }
}

/// VS Code's and Cursor's predefined variables for a file whose project
/// root is `root`: the root, its last component, `HOME` (when set) and
/// `/`.
fn editor_variables(
    root: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut out = vec![
        ("workspaceFolder".to_string(), root.display().to_string()),
        (
            "workspaceFolderBasename".to_string(),
            root.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
        ("pathSeparator".to_string(), "/".to_string()),
    ];
    if let Some(home) = lookup("HOME").filter(|h| !h.is_empty()) {
        out.push(("userHome".to_string(), home));
    }
    out
}

/// Whether a file is JSONC: VS Code's files (in a `.vscode` directory)
/// and `*.jsonc`. Everything else, `.mcp.json` included, is strict JSON.
fn is_jsonc(path: &Path) -> bool {
    let in_vscode = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == ".vscode");
    in_vscode || path.extension().is_some_and(|e| e == "jsonc")
}

/// `/mcpServers/<name>/...` (or `/servers/...`) -> `<name>`.
fn server_of_pointer(pointer: &str) -> Option<String> {
    let rest = pointer
        .strip_prefix("/mcpServers/")
        .or_else(|| pointer.strip_prefix("/servers/"))?;
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

/// The diagnostics of one file, and what checks need to produce them (the
/// `--strict` flag, the environment, the file's directory). Document-level
/// checks report through it directly; a server's through a [`Cursor`].
pub(super) struct Checker<'a> {
    diags: Vec<Diagnostic>,
    strict: bool,
    lookup: &'a dyn Fn(&str) -> Option<String>,
    dir: &'a Path,
    /// The key that holds the servers: `mcpServers`, or VS Code's
    /// `servers`.
    top: &'static str,
    /// The editor whose file this is (see [`super::editor_of`]).
    editor: Option<&'static str>,
    /// Its predefined variables (`cwd` may use them, and only them).
    predefined: &'a [(String, String)],
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

    /// A warning that `--strict` makes an error.
    fn soft(&mut self, s: Option<String>, p: &str, pos: Pos, m: String) {
        self.push(self.soft_severity(), s, p, pos, m);
    }

    /// The severity of a warning that `--strict` makes an error.
    fn soft_severity(&self) -> Severity {
        if self.strict { Severity::Error } else { Severity::Warning }
    }

    /// VS Code's `inputs`: an array of objects with an `id`. They are
    /// prompts rivumi-mcp cannot show; a reference to one is an error
    /// where it is used (see `vars`), so here only the shape is checked.
    fn inputs(&mut self, m: &Member) {
        let J::Array(items) = &m.value.kind else {
            self.error(
                None,
                "/inputs",
                m.value.pos,
                format!(
                    "\"inputs\" must be an array, not {}",
                    m.value.type_name()
                ),
            );
            return;
        };
        for (i, it) in items.iter().enumerate() {
            let has_id = it
                .get("id")
                .is_some_and(|id| matches!(id.value.kind, J::String(_)));
            if !has_id {
                self.error(
                    None,
                    &format!("/inputs/{i}"),
                    it.pos,
                    "an input must be an object with a string \"id\""
                        .to_string(),
                );
            }
        }
    }

    /// An error about the whole file that stops its check: `None`, for
    /// `?` and `return`.
    fn reject<T>(&mut self, p: &str, pos: Pos, m: String) -> Option<T> {
        self.error(None, p, pos, m);
        None
    }

    /// Checks a parsed document: its duplicate keys, its top level, then
    /// each server. `None` when the file is rejected before its servers;
    /// else its entries and whether the file as a whole is usable.
    fn document(&mut self, doc: &Doc) -> Option<(Vec<Entry>, bool)> {
        let (bad_servers, file_ok) = self.duplicates(&doc.duplicates);
        let servers = self.servers_member(&doc.root)?;
        let members = self.server_members(servers)?;
        let mut entries = self.entries(members, &bad_servers);
        if !file_ok {
            // A duplicate outside any one server (two "mcpServers"
            // objects, say): readers disagree about the whole file, so
            // nothing in it is usable.
            for e in &mut entries {
                e.server = None;
            }
        }
        Some((entries, file_ok))
    }

    /// Reports each duplicate key: the servers they are in, and whether
    /// none is outside a server (the file as a whole is usable).
    fn duplicates(&mut self, duplicates: &[Duplicate]) -> (Vec<String>, bool) {
        let mut bad_servers: Vec<String> = vec![];
        let mut file_ok = true;
        for d in duplicates {
            let server = server_of_pointer(&d.pointer);
            if server.is_none() {
                file_ok = false;
            }
            let key = d.pointer.rsplit('/').next().unwrap_or("");
            self.error(
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
        (bad_servers, file_ok)
    }

    /// The top level: an object whose servers are under "mcpServers" (or
    /// VS Code's "servers", which then sets `top`); its member that holds
    /// them.
    fn servers_member<'d>(&mut self, root: &'d Node) -> Option<&'d Member> {
        let J::Object(top) = &root.kind else {
            return self.reject(
                "",
                root.pos,
                format!(
                    "the top level must be an object with \"mcpServers\", \
                     not {}",
                    root.type_name()
                ),
            );
        };
        // Claude Code's "mcpServers", else VS Code's "servers".
        let vscode =
            root.get("mcpServers").is_none() && root.get("servers").is_some();
        if vscode {
            self.top = "servers";
        }
        let known: &[&str] =
            if vscode { &["servers", "inputs"] } else { &["mcpServers"] };
        let mut servers_node = None;
        for m in top {
            match m.key.as_str() {
                k if k == self.top => servers_node = servers_node.or(Some(m)),
                "servers" => {}
                "inputs" if vscode => self.inputs(m),
                other => self.soft(
                    None,
                    "",
                    m.key_pos,
                    unknown_key("unknown top-level key", "", other, known),
                ),
            }
        }
        let Some(servers) = servers_node else {
            return self.reject(
                "",
                root.pos,
                "missing the \"mcpServers\" object (or VS Code's \"servers\")"
                    .to_string(),
            );
        };
        if let Some(vs) = root.get("servers").filter(|_| !vscode) {
            self.soft(
                None,
                "/servers",
                vs.key_pos,
                "key \"servers\" (VS Code's format) is ignored, since \
                 \"mcpServers\" is present"
                    .to_string(),
            );
        }
        Some(servers)
    }

    /// The servers' object: its members, at most `MAX_SERVERS`.
    fn server_members<'d>(
        &mut self,
        servers: &'d Member,
    ) -> Option<&'d [Member]> {
        let top_ptr = format!("/{}", self.top);
        let J::Object(members) = &servers.value.kind else {
            return self.reject(
                &top_ptr,
                servers.value.pos,
                format!(
                    "\"{}\" must be an object, not {}",
                    self.top,
                    servers.value.type_name()
                ),
            );
        };
        if members.len() > MAX_SERVERS {
            return self.reject(
                &top_ptr,
                servers.value.pos,
                format!(
                    "{} servers configured; the limit is {MAX_SERVERS}",
                    members.len()
                ),
            );
        }
        Some(members)
    }

    /// Each server, checked through its [`Cursor`]; one with an error (or
    /// a duplicate key, in `bad_servers`) has no usable server.
    fn entries(
        &mut self,
        members: &[Member],
        bad_servers: &[String],
    ) -> Vec<Entry> {
        let mut entries: Vec<Entry> = vec![];
        for m in members {
            if entries.iter().any(|e| e.name == m.key) {
                continue; // a duplicate, reported above
            }
            let before = self.error_count();
            let server = Cursor::new(self, &m.key).entry(m);
            let bad =
                self.error_count() > before || bad_servers.contains(&m.key);
            entries.push(Entry {
                name: m.key.clone(),
                server: if bad { None } else { server },
            });
        }
        entries
    }

    fn error_count(&self) -> usize {
        self.diags.iter().filter(|d| d.severity == Severity::Error).count()
    }
}

/// One server's view of the [`Checker`]: its diagnostics carry the server's
/// name, and their pointers are relative to its entry ("" is the entry,
/// "/command" its command).
pub(super) struct Cursor<'c, 'a> {
    c: &'c mut Checker<'a>,
    server: String,
    base: String,
}

impl<'c, 'a> Cursor<'c, 'a> {
    pub(super) fn new(c: &'c mut Checker<'a>, name: &str) -> Self {
        let base = ptr(&["", c.top, name]);
        Cursor { c, server: name.to_string(), base }
    }

    fn push(&mut self, sev: Severity, rel: &str, pos: Pos, m: String) {
        let pointer = format!("{}{rel}", self.base);
        self.c.push(sev, Some(self.server.clone()), &pointer, pos, m);
    }

    pub(super) fn error(&mut self, rel: &str, pos: Pos, m: impl Into<String>) {
        self.push(Severity::Error, rel, pos, m.into());
    }

    pub(super) fn warn(&mut self, rel: &str, pos: Pos, m: impl Into<String>) {
        self.push(Severity::Warning, rel, pos, m.into());
    }

    /// A warning that `--strict` makes an error.
    pub(super) fn soft(&mut self, rel: &str, pos: Pos, m: impl Into<String>) {
        self.push(self.c.soft_severity(), rel, pos, m.into());
    }

    /// The config file's directory (relative paths resolve against it).
    pub(super) fn dir(&self) -> &Path {
        self.c.dir
    }

    /// A variable of the environment check-config runs in.
    pub(super) fn lookup(&self, name: &str) -> Option<String> {
        (self.c.lookup)(name)
    }

    /// Errors so far (in the whole file), to tell whether a part added any.
    pub(super) fn errors(&self) -> usize {
        self.c.error_count()
    }

    /// Validates the server's `mcpServers` member.
    pub(super) fn entry(&mut self, m: &Member) -> Option<Server> {
        let name = m.key.as_str();
        self.name(m);
        let J::Object(fields) = &m.value.kind else {
            return self.reject(
                "",
                m.value.pos,
                format!(
                    "a server entry must be an object, not {}",
                    m.value.type_name()
                ),
            );
        };
        let node = &m.value;
        let transport = self.transport(node, fields)?;
        self.keys(fields, transport);
        let startup_timeout = self.timeout(node, "startup_timeout_sec");
        let tool_timeout = self.timeout(node, "tool_timeout_sec");
        let protocol = self.protocol(node);
        let disabled = self.disabled(node);
        let tools = self.tool_filter(node);
        let transport = if transport == "stdio" {
            Transport::Stdio(self.stdio(node)?)
        } else {
            Transport::Http(Box::new(self.http(node)?))
        };
        Some(Server {
            name: name.to_string(),
            transport,
            startup_timeout: startup_timeout.ok()?,
            tool_timeout: tool_timeout.ok()?,
            protocol: protocol.ok()?,
            disabled,
            tools: tools.ok()?,
        })
    }

    /// An error that stops the check of this server (or of one of its
    /// parts): `None`, for `?` and `return`.
    pub(super) fn reject<T>(
        &mut self,
        rel: &str,
        pos: Pos,
        m: impl Into<String>,
    ) -> Option<T> {
        self.error(rel, pos, m);
        None
    }

    /// The server's name: valid, and short enough to leave room for tool
    /// names in `mcp__<server>__<tool>`.
    fn name(&mut self, m: &Member) {
        let name = m.key.as_str();
        if let Err(msg) = check_name(name) {
            self.error("", m.key_pos, msg);
        } else if name.len() + "mcp____".len() > 48 {
            self.warn(
                "",
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
    }

    /// The transport, `"stdio"` or `"http"`: from `command` or `url`
    /// (exactly one), agreeing with `type` when it is given.
    fn transport(
        &mut self,
        node: &Node,
        fields: &[Member],
    ) -> Option<&'static str> {
        let ty = self.declared_type(node)?;
        let has_cmd = node.get("command").is_some();
        let has_url = node.get("url").is_some();
        match (has_cmd, has_url, ty) {
            (true, true, _) => self.reject(
                "",
                node.pos,
                "both 'command' and 'url' are set; a server has exactly \
                 one transport"
                    .to_string(),
            ),
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
                        crate::suggest::suggest(&f.key, all.clone().copied())
                    {
                        msg.push_str(&format!(
                            "; unknown key '{}': did you mean '{sug}'?",
                            f.key
                        ));
                        break;
                    }
                }
                self.reject("", node.pos, msg)
            }
            (true, false, Some("http")) | (false, true, Some("stdio")) => {
                let (want, have) = if has_cmd {
                    ("http", "command")
                } else {
                    ("stdio", "url")
                };
                self.reject(
                    "/type",
                    node.get("type").map_or(node.pos, |t| t.value.pos),
                    format!(
                        "type \"{want}\" contradicts '{have}' (a \"{want}\" \
                         server needs '{}')",
                        if want == "http" { "url" } else { "command" }
                    ),
                )
            }
            (true, false, _) => Some("stdio"),
            (false, true, _) => Some("http"),
        }
    }

    /// `type`, when given: `Some(None)` when absent, `None` when wrong.
    fn declared_type(&mut self, node: &Node) -> Option<Option<&'static str>> {
        let Some(t) = node.get("type") else { return Some(None) };
        let J::String(v) = &t.value.kind else {
            return self.reject(
                "/type",
                t.value.pos,
                format!(
                    "'type' must be a string, not {}",
                    t.value.type_name()
                ),
            );
        };
        match v.as_str() {
            "stdio" => Some(Some("stdio")),
            "http" | "streamable-http" => Some(Some("http")),
            "sse" => self.reject(
                "/type",
                t.value.pos,
                "type \"sse\" is the legacy HTTP+SSE transport, which \
                 rivumi-mcp does not support; use a Streamable HTTP \
                 endpoint with type \"http\"",
            ),
            _ => self.reject(
                "/type",
                t.value.pos,
                "'type' must be one of: stdio, http, streamable-http"
                    .to_string(),
            ),
        }
    }

    /// Each key: known for this transport, misplaced (an error), or
    /// unknown (a warning `--strict` makes an error).
    fn keys(&mut self, fields: &[Member], transport: &str) {
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
                    &format!("/{}", jsonpos::pointer_escape(k)),
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
            self.soft("", f.key_pos, msg);
        }
    }

    /// `tools`: `{"allow": [GLOB, ...], "deny": [GLOB, ...]}`, both
    /// optional, each glob a non-empty string.
    fn tool_filter(
        &mut self,
        node: &Node,
    ) -> std::result::Result<Option<super::ToolFilter>, ()> {
        let Some(m) = node.get("tools") else { return Ok(None) };
        let J::Object(members) = &m.value.kind else {
            self.error(
                "/tools",
                m.value.pos,
                format!(
                    "'tools' must be an object with \"allow\" and/or \
                     \"deny\" arrays of globs, not {}",
                    m.value.type_name()
                ),
            );
            return Err(());
        };
        let mut f = super::ToolFilter::default();
        let mut ok = true;
        for member in members {
            let list = match member.key.as_str() {
                "allow" => &mut f.allow,
                "deny" => &mut f.deny,
                other => {
                    let msg = unknown_key(
                        "unknown key",
                        " in 'tools'",
                        other,
                        &["allow", "deny"],
                    );
                    self.error("/tools", member.key_pos, msg);
                    ok = false;
                    continue;
                }
            };
            let p = format!("/tools/{}", member.key);
            let items = match &member.value.kind {
                J::Array(items) => items,
                _ => {
                    self.error(
                        &p,
                        member.value.pos,
                        "must be an array of globs (strings)",
                    );
                    ok = false;
                    continue;
                }
            };
            for (i, it) in items.iter().enumerate() {
                match &it.kind {
                    J::String(g) if !g.is_empty() => list.push(g.clone()),
                    _ => {
                        self.error(
                            &format!("{p}/{i}"),
                            it.pos,
                            "a glob must be a non-empty string",
                        );
                        ok = false;
                    }
                }
            }
        }
        if ok { Ok(Some(f)) } else { Err(()) }
    }

    /// `disabled`: a boolean; a disabled server is checked like any other
    /// and never started.
    fn disabled(&mut self, node: &Node) -> bool {
        let Some(m) = node.get("disabled") else { return false };
        match m.value.kind {
            J::Bool(b) => b,
            _ => {
                self.error(
                    "/disabled",
                    m.value.pos,
                    format!(
                        "'disabled' must be true or false, not {}",
                        m.value.type_name()
                    ),
                );
                false
            }
        }
    }

    /// `protocol`: `auto` (the default), `modern` or `legacy`.
    fn protocol(&mut self, node: &Node) -> std::result::Result<Choice, ()> {
        let Some(m) = node.get("protocol") else { return Ok(Choice::Auto) };
        if let J::String(s) = &m.value.kind
            && let Some(c) = Choice::parse(s)
        {
            return Ok(c);
        }
        self.error(
            "/protocol",
            m.value.pos,
            format!(
                "'protocol' must be one of {}",
                Choice::NAMES.map(|n| format!("\"{n}\"")).join(", ")
            ),
        );
        Err(())
    }

    fn timeout(
        &mut self,
        node: &Node,
        key: &str,
    ) -> std::result::Result<Option<Duration>, ()> {
        let Some(m) = node.get(key) else { return Ok(None) };
        let p = format!("/{key}");
        let value = match &m.value.kind {
            J::Number(n) => n.as_f64().and_then(deadline::to_duration),
            _ => None,
        };
        match value {
            Some(d) => Ok(Some(d)),
            None => {
                self.error(
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

    fn stdio(&mut self, node: &Node) -> Option<Stdio> {
        let errors = self.errors();
        let cmd_m = node.get("command")?;
        let command = self.command(&cmd_m.value);
        if command.contains("${") {
            self.template("/command", cmd_m.value.pos, &command);
        }
        let args = self.string_array(node, "args", "");
        if let Some(m) = node.get("args") {
            for (i, a) in args.iter().enumerate() {
                self.template(&format!("/args/{i}"), item_pos(&m.value, i), a);
            }
        }
        let env = self.string_map(node, "env", "", MapKind::Env);
        let env_vars = self.string_array(node, "env_vars", "");
        if let Some(m) = node.get("env_vars") {
            self.env_vars(&m.value, &env_vars);
        }
        let cwd_path = Some(self.cwd(node));
        if !command.is_empty() && !command.contains('\0') {
            let pos =
                node.get("args").map_or(cmd_m.value.pos, |m| m.value.pos);
            self.unpinned_launcher(&command, &args, pos);
        }
        let sandbox = self.sandbox(node).map(Box::new);
        (self.errors() == errors).then_some(Stdio {
            command,
            args,
            env,
            env_vars,
            cwd_path,
            expand: true,
            sandbox,
        })
    }

    /// `command`: a program name (empty when it is not a string).
    fn command(&mut self, value: &Node) -> String {
        match &value.kind {
            J::String(c) if c.is_empty() => {
                self.error("/command", value.pos, "'command' is empty");
                String::new()
            }
            J::String(c) => {
                if c.contains('\0') {
                    self.error(
                        "/command",
                        value.pos,
                        "'command' contains a NUL byte",
                    );
                } else if c.trim() != c || c.contains(' ') {
                    self.warn(
                        "/command",
                        value.pos,
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
                    "/command",
                    value.pos,
                    format!(
                        "'command' must be a string, not {}",
                        value.type_name()
                    ),
                );
                String::new()
            }
        }
    }

    /// `env_vars` (whose array is `value`): valid names, each once, and
    /// set where check-config runs.
    fn env_vars(&mut self, value: &Node, env_vars: &[String]) {
        let mut seen: Vec<&str> = vec![];
        for (i, n) in env_vars.iter().enumerate() {
            let p = format!("/env_vars/{i}");
            let pos = item_pos(value, i);
            if let Err(msg) = check_env_name(n) {
                self.error(&p, pos, msg);
            } else if seen.contains(&n.as_str()) {
                self.warn(&p, pos, format!("'{n}' is listed twice"));
            } else {
                if (self.c.lookup)(n).is_none() {
                    self.warn(
                        &p,
                        pos,
                        format!(
                            "environment variable '{n}' is not set; it \
                             is skipped (not passed to the server)"
                        ),
                    );
                }
                self.loader_warning(&p, pos, n);
            }
            seen.push(n);
        }
    }

    /// `cwd`, resolved against the file's directory (which it is when
    /// absent or wrong).
    fn cwd(&mut self, node: &Node) -> PathBuf {
        let dir = self.c.dir.to_path_buf();
        let Some(m) = node.get("cwd") else { return dir };
        let p = "/cwd";
        match &m.value.kind {
            J::String(c) if !c.is_empty() && !c.contains('\0') => {
                // Only the editor's variables: where a server runs (and so
                // its fingerprint) never depends on the environment.
                let fixed = self.c.predefined;
                let only = |n: &str| {
                    fixed.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone())
                };
                match vars::expand(c, &only) {
                    Ok(c) => return dir.join(c),
                    Err(e) => self.error(
                        p,
                        m.value.pos,
                        format!(
                            "cwd: {e} (cwd may use only the editors' \
                             ${{workspaceFolder}}, \
                             ${{workspaceFolderBasename}}, ${{userHome}} \
                             and ${{pathSeparator}}, in their files)"
                        ),
                    ),
                }
            }
            _ => self.error(
                p,
                m.value.pos,
                "'cwd' must be a non-empty path string",
            ),
        }
        dir
    }

    fn http(&mut self, node: &Node) -> Option<Http> {
        let errors = self.errors();
        let url_m = node.get("url")?;
        let url = self.url_template(&url_m.value);
        let headers = self.string_map(node, "headers", "", MapKind::Header);
        let mut bearer = None;
        if let Some(m) = node.get("bearer_token_env_var") {
            let p = "/bearer_token_env_var".to_string();
            match &m.value.kind {
                J::String(n) => match check_env_name(n) {
                    Ok(()) => {
                        self.check_set(&p, m.value.pos, n);
                        bearer = Some(n.clone());
                    }
                    Err(msg) => self.error(&p, m.value.pos, msg),
                },
                _ => self.error(
                    &p,
                    m.value.pos,
                    "'bearer_token_env_var' must be the name of an \
                     environment variable"
                        .to_string(),
                ),
            }
        }
        let oauth = node.get("oauth").and_then(|m| self.oauth(m));
        let token_command = self.token_command(node, bearer.is_some());
        let headers_command = self.headers_command(node, &headers);
        let auth_header = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        if node.get("oauth").is_some() && bearer.is_some() {
            self.error(
                "/oauth",
                node.pos,
                "both 'oauth' and 'bearer_token_env_var' are set; choose \
                 one way to authenticate"
                    .to_string(),
            );
        }
        if let Some((k, v)) = auth_header {
            let p = format!("/headers/{}", jsonpos::pointer_escape(k));
            let pos = node.get("headers").map_or(node.pos, |m| m.value.pos);
            if node.get("token_command").is_some() {
                self.error(
                    &p,
                    pos,
                    "an 'Authorization' header conflicts with \
                     'token_command'",
                );
            } else if bearer.is_some() || node.get("oauth").is_some() {
                self.error(
                    &p,
                    pos,
                    "an 'Authorization' header conflicts with \
                     'bearer_token_env_var'/'oauth'"
                        .to_string(),
                );
            } else if !v.contains("${") {
                self.warn(
                    &p,
                    pos,
                    "the 'Authorization' header holds a literal value: a \
                     secret in the config file; use \
                     bearer_token_env_var or ${VAR}"
                        .to_string(),
                );
            }
        }
        let (url, url_text) = url?;
        (self.errors() == errors).then_some(Http {
            url,
            url_text,
            headers,
            bearer_token_env_var: bearer,
            token_command,
            headers_command,
            oauth,
        })
    }

    /// `headers_command`: header names, each with a non-empty argv;
    /// neither `Authorization` (that is `token_command`) nor a header
    /// `headers` sets too.
    fn headers_command(
        &mut self,
        node: &Node,
        headers: &[(String, String)],
    ) -> Vec<(String, Vec<String>)> {
        let Some(m) = node.get("headers_command") else { return vec![] };
        let p = "/headers_command";
        let J::Object(fields) = &m.value.kind else {
            self.error(
                p,
                m.value.pos,
                "'headers_command' must be an object of header names to \
                 argv arrays",
            );
            return vec![];
        };
        let mut out: Vec<(String, Vec<String>)> = vec![];
        for f in fields {
            let fp = format!("{p}/{}", jsonpos::pointer_escape(&f.key));
            let taken = |k: &String| k.eq_ignore_ascii_case(&f.key);
            let problem = match check_header_name(&f.key) {
                Err(msg) => Some(msg),
                Ok(()) if f.key.eq_ignore_ascii_case("authorization") => Some(
                    "an 'Authorization' value from a command is \
                     'token_command'"
                        .to_string(),
                ),
                Ok(()) if headers.iter().map(|(k, _)| k).any(taken) => {
                    Some(format!("header '{}' is also in 'headers'", f.key))
                }
                Ok(()) if out.iter().map(|(k, _)| k).any(taken) => {
                    Some(format!("header '{}' is given twice", f.key))
                }
                Ok(()) => None,
            };
            if let Some(msg) = problem {
                self.error(&fp, f.key_pos, msg);
                continue;
            }
            let argv: Option<Vec<String>> = match &f.value.kind {
                J::Array(items) => items
                    .iter()
                    .map(|it| match &it.kind {
                        J::String(v) if !v.contains('\0') => Some(v.clone()),
                        _ => None,
                    })
                    .collect(),
                _ => None,
            };
            match argv {
                Some(a) if a.first().is_some_and(|c| !c.is_empty()) => {
                    out.push((f.key.clone(), a));
                }
                _ => self.error(
                    &fp,
                    f.value.pos,
                    format!(
                        "the command of '{}' must be a non-empty argv array \
                         of strings (no shell)",
                        f.key
                    ),
                ),
            }
        }
        out
    }

    /// `token_command`: a non-empty argv whose program is named, the one
    /// way the server authenticates (`bearer` says whether
    /// `bearer_token_env_var` is set).
    fn token_command(
        &mut self,
        node: &Node,
        bearer: bool,
    ) -> Option<Vec<String>> {
        let m = node.get("token_command")?;
        let p = "/token_command";
        let argv = self.string_array(node, "token_command", "");
        if !matches!(m.value.kind, J::Array(_)) {
            return None;
        }
        if argv.first().is_none_or(|c| c.is_empty()) {
            self.error(
                p,
                m.value.pos,
                "'token_command' must be a non-empty argv array (no shell): \
                 [\"program\", \"arg\", ...]",
            );
            return None;
        }
        if bearer || node.get("oauth").is_some() {
            self.error(
                p,
                m.value.pos,
                "'token_command' conflicts with \
                 'bearer_token_env_var'/'oauth'; choose one way to \
                 authenticate",
            );
            return None;
        }
        Some(argv)
    }

    /// `url`: a template, checked like the others, then expanded and
    /// validated (the rules apply to the URL actually used).
    fn url_template(&mut self, v: &Node) -> Option<(Url, String)> {
        let J::String(raw) = &v.kind else {
            self.url(v, "/url")?;
            return None;
        };
        if !raw.contains("${") {
            return Some((self.url(v, "/url")?, raw.clone()));
        }
        let errors = self.errors();
        self.template_refs("/url", v.pos, raw);
        if self.errors() > errors {
            return None;
        }
        match vars::expand(raw, self.c.lookup) {
            Ok(expanded) => match Url::parse(&expanded) {
                Ok(u) => Some((u, raw.clone())),
                Err(e) => {
                    self.error("/url", v.pos, format!("url (expanded): {e}"));
                    None
                }
            },
            Err(e) => {
                self.error(
                    "/url",
                    v.pos,
                    format!("url: {e} (the URL is checked after expansion)"),
                );
                None
            }
        }
    }

    pub(super) fn url(&mut self, v: &Node, p: &str) -> Option<Url> {
        match &v.kind {
            J::String(raw) => match Url::parse(raw) {
                Ok(u) => Some(u),
                Err(e) => {
                    self.error(p, v.pos, format!("url: {e}"));
                    None
                }
            },
            _ => {
                self.error(
                    p,
                    v.pos,
                    format!("must be a URL string, not {}", v.type_name()),
                );
                None
            }
        }
    }
    /// An optional array of strings; errors for anything else.
    pub(super) fn string_array(
        &mut self,
        node: &Node,
        key: &str,
        base: &str,
    ) -> Vec<String> {
        let Some(m) = node.get(key) else { return vec![] };
        let p = format!("{base}/{key}");
        let J::Array(items) = &m.value.kind else {
            self.error(
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
                    &format!("{p}/{i}"),
                    it.pos,
                    format!("'{key}' item contains a NUL byte"),
                ),
                J::String(v) => out.push(v.clone()),
                _ => self.error(
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
        base: &str,
        kind: MapKind,
    ) -> Vec<(String, String)> {
        let Some(m) = node.get(key) else { return vec![] };
        let p = format!("{base}/{key}");
        let J::Object(fields) = &m.value.kind else {
            self.error(
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
                self.error(at, f.key_pos, msg);
                continue;
            }
            if kind == MapKind::Header
                && out.iter().any(|(k, _)| k.eq_ignore_ascii_case(&f.key))
            {
                self.error(
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
                    &fp,
                    f.value.pos,
                    format!(
                        "value of '{}' contains a NUL or line break",
                        f.key
                    ),
                );
                continue;
            }
            if !self.template(&fp, f.value.pos, v) {
                continue;
            }
            if kind == MapKind::Env {
                self.loader_warning(&fp, f.key_pos, &f.key);
            }
            out.push((f.key.clone(), v.clone()));
        }
        out
    }

    /// Checks a `${VAR}` template: malformed or naming a reserved variable
    /// is an error, an unset variable a warning ([`Self::check_set`]).
    /// False when the template is malformed.
    fn template(&mut self, p: &str, pos: Pos, t: &str) -> bool {
        if !self.template_refs(p, pos, t) {
            return false;
        }
        for name in vars::missing(t, self.c.lookup) {
            if let Some(editor) = self.c.editor
                && vars::is_editor_variable(&name)
            {
                self.error(
                    p,
                    pos,
                    format!(
                        "'${{{name}}}' is {editor}'s variable, which \
                         rivumi-mcp does not provide (it provides \
                         ${{workspaceFolder}}, ${{workspaceFolderBasename}}, \
                         ${{userHome}} and ${{pathSeparator}})"
                    ),
                );
            } else if !reserved(&name) {
                self.check_set(p, pos, &name);
            }
        }
        true
    }

    /// The syntax and reserved-name part of [`Self::template`].
    fn template_refs(&mut self, p: &str, pos: Pos, t: &str) -> bool {
        match vars::refs(t) {
            Err(msg) => {
                self.error(p, pos, msg);
                false
            }
            Ok(names) => {
                for name in names.iter().filter(|n| reserved(n)) {
                    self.error(
                        p,
                        pos,
                        format!(
                            "'{name}' is rivumi-mcp's own setting and is \
                             never passed to servers"
                        ),
                    );
                }
                true
            }
        }
    }

    /// Warns (errs under `--strict`) when a needed variable is unset.
    pub(super) fn check_set(&mut self, p: &str, pos: Pos, name: &str) {
        if (self.c.lookup)(name).is_none() {
            self.soft(
                p,
                pos,
                format!(
                    "environment variable '{name}' is not set (starting \
                     this server will fail until it is)"
                ),
            );
        }
    }

    fn loader_warning(&mut self, p: &str, pos: Pos, n: &str) {
        if is_loader_var(n) {
            self.warn(
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
    fn unpinned_launcher(&mut self, command: &str, args: &[String], pos: Pos) {
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
                "/args",
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

pub(super) fn item_pos(node: &Node, i: usize) -> Pos {
    match &node.kind {
        J::Array(items) => items.get(i).map_or(node.pos, |n| n.pos),
        _ => node.pos,
    }
}
