//! `rivumi-mcp check-config`: validate the whole file and show every server.
//!
//! Starts nothing and connects nowhere. Reports every problem of every
//! server (allowed or not), then a table with each server's transport,
//! target, auth mode, allowlist verdict and fingerprint, and what
//! `serve` would expose (the names a host sees, from the lock file).

use serde_json::{Value, json};

use crate::allowlist::{self, Allowlist};
use crate::cli::Format;
use crate::config::{self, Config, Severity};
use crate::error::{Error, Result};
use crate::lockfile::{self, ItemKind};
use crate::out;

/// Runs the command; `Err(Negative)` when the file is invalid.
pub(crate) fn run(
    path: &std::path::Path,
    lock: &std::path::Path,
    format: Format,
    strict: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    let mut config = config::load(path, strict, env)?;
    let raw = env(allowlist::VAR);
    let (list, list_problem) = match Allowlist::parse(raw.as_deref()) {
        Ok(l) => (l, None),
        Err(msg) => (Allowlist::default(), Some(msg)),
    };
    if config.file_ok {
        unmatched_allowlist(&mut config, &list);
    }
    let rows = rows(&config, &list);
    let plan = serve_plan(&config, &list, lock);
    match format {
        Format::Json => {
            print_json(&config, &rows, list_problem.as_deref(), &plan)?
        }
        Format::Human => {
            print_diagnostics(&config)?;
            print_table(&config, &rows, list_problem.as_deref())?;
            out::print(&plan.text())?;
        }
        Format::Github => {
            print_github(&config)?;
            print_table(&config, &rows, list_problem.as_deref())?;
        }
    }
    if config.is_valid() {
        Ok(())
    } else {
        let n = count(&config, Severity::Error);
        Err(Error::negative(format!(
            "{}: invalid ({n} error{})",
            config.path.display(),
            if n == 1 { "" } else { "s" }
        )))
    }
}

/// A warning for each allowlist name that matches no server of the file
/// (a typo, or an entry meant for another project's file).
fn unmatched_allowlist(config: &mut Config, list: &Allowlist) {
    for name in list.names() {
        if config.entry(name).is_some() {
            continue;
        }
        let mut message = format!(
            "{} names '{name}', which matches no server in this file",
            allowlist::VAR
        );
        if let Some(s) =
            crate::suggest::suggest(name, config.names().into_iter())
        {
            message.push_str(&format!("; did you mean '{s}'?"));
        }
        config.diagnostics.push(config::Diagnostic {
            severity: Severity::Warning,
            server: None,
            pointer: String::new(),
            pos: crate::jsonpos::Pos { line: 1, col: 1 },
            message,
        });
    }
}

struct Row {
    name: String,
    valid: bool,
    transport: &'static str,
    target: String,
    auth: &'static str,
    allowlist: String,
    fingerprint: Option<String>,
    disabled: bool,
    /// The `sandbox` block of a stdio server that has one.
    sandbox: Option<Box<crate::config::Sandbox>>,
}

fn rows(config: &Config, list: &Allowlist) -> Vec<Row> {
    config
        .entries
        .iter()
        .map(|e| match &e.server {
            Some(s) => {
                let verdict = list.verdict(s);
                let mut label = match &verdict {
                    allowlist::Verdict::Mismatch(c) if !c.is_empty() => {
                        format!("pin mismatch ({} changed)", c.join(", "))
                    }
                    v => v.label().to_string(),
                };
                if s.disabled {
                    label.push_str(" (disabled)");
                }
                Row {
                    name: e.name.clone(),
                    valid: true,
                    transport: s.transport_name(),
                    target: s.target(),
                    auth: s.auth_mode(),
                    allowlist: label,
                    fingerprint: Some(allowlist::fingerprint(s)),
                    disabled: s.disabled,
                    sandbox: match &s.transport {
                        crate::config::Transport::Stdio(st) => {
                            st.sandbox.clone()
                        }
                        crate::config::Transport::Http(_) => None,
                    },
                }
            }
            None => Row {
                name: e.name.clone(),
                valid: false,
                transport: "?",
                target: "(invalid entry)".to_string(),
                auth: "?",
                allowlist: if list.lists(&e.name) {
                    "listed (invalid)".to_string()
                } else {
                    "not allowed".to_string()
                },
                fingerprint: None,
                disabled: false,
                sandbox: None,
            },
        })
        .collect()
}

/// What `rivumi-mcp serve` would expose, without starting anything: the
/// servers it would start (allowed, valid, not disabled), and their
/// items under the names a host sees, as the lock file pinned them.
struct ServePlan {
    exposed: crate::serve::Exposed,
    /// Exposed servers the lock file has nothing of.
    unlocked: Vec<String>,
    lock: std::path::PathBuf,
    /// Why the lock file could not be read.
    lock_problem: Option<String>,
}

fn serve_plan(
    config: &Config,
    list: &Allowlist,
    lock_path: &std::path::Path,
) -> ServePlan {
    let servers: Vec<String> = config
        .entries
        .iter()
        .filter(|e| list.lists(&e.name))
        .filter(|e| e.server.as_ref().is_some_and(|s| !s.disabled))
        .map(|e| e.name.clone())
        .collect();
    let (lock, lock_problem) = match lockfile::load(lock_path) {
        Ok(l) => (l, None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mut unlocked = vec![];
    let mut each = vec![];
    for s in servers {
        match lock.as_ref().filter(|l| l.servers.contains_key(&s)) {
            Some(l) => {
                let items = ItemKind::ALL.map(|k| l.locked(&s, k));
                let [tools, prompts, resources, templates] = items;
                each.push((s, [tools, prompts, resources, templates]));
            }
            None => unlocked.push(s),
        }
    }
    let mut exposed = crate::serve::Exposed::of(each);
    exposed.servers.extend(unlocked.iter().cloned());
    ServePlan {
        exposed,
        unlocked,
        lock: lock_path.to_path_buf(),
        lock_problem,
    }
}

impl ServePlan {
    fn text(&self) -> String {
        let e = &self.exposed;
        if e.servers.is_empty() {
            return "\nserve would expose no server (none is allowed)\n"
                .into();
        }
        let mut text = format!(
            "\nserve would expose {} server{}: {} (names from {}; nothing \
             started)\n",
            e.servers.len(),
            plural(e.servers.len()),
            e.servers
                .iter()
                .map(|s| out::shown(s))
                .collect::<Vec<_>>()
                .join(", "),
            self.lock.display()
        );
        if let Some(p) = &self.lock_problem {
            text.push_str(&format!("  lock file unreadable: {p}\n"));
        }
        if !self.unlocked.is_empty() {
            text.push_str(&format!(
                "  not locked (names known once started: serve --dry-run): \
                 {}\n",
                self.unlocked
                    .iter()
                    .map(|s| out::shown(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        text.push_str(&e.text());
        text
    }

    fn to_json(&self) -> Value {
        let mut v = self.exposed.names_json();
        v["unlocked"] = json!(self.unlocked);
        v["lock"] = json!(self.lock.display().to_string());
        v["lock_error"] = json!(self.lock_problem);
        v
    }
}

fn count(config: &Config, sev: Severity) -> usize {
    config.diagnostics.iter().filter(|d| d.severity == sev).count()
}

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
    }
}

fn print_diagnostics(config: &Config) -> Result<()> {
    let mut text = String::new();
    for d in &config.diagnostics {
        let server = d
            .server
            .as_ref()
            .map(|s| format!("server '{}': ", out::shown(s)))
            .unwrap_or_default();
        let at = if d.pointer.is_empty() {
            String::new()
        } else {
            format!(" [{}]", out::shown(&d.pointer))
        };
        text.push_str(&format!(
            "{}:{}:{}: {}: {server}{}{at}\n",
            config.path.display(),
            d.pos.line,
            d.pos.col,
            severity(d.severity),
            out::shown(&d.message),
        ));
    }
    out::print(&text)
}

fn print_github(config: &Config) -> Result<()> {
    let mut text = String::new();
    for d in &config.diagnostics {
        let server = d
            .server
            .as_ref()
            .map(|s| format!("server '{s}': "))
            .unwrap_or_default();
        // A problem of the whole document has no pointer: no empty "()".
        let at = if d.pointer.is_empty() {
            String::new()
        } else {
            format!(" ({})", d.pointer)
        };
        text.push_str(&format!(
            "::{} file={},line={},col={}::{}\n",
            severity(d.severity),
            gh_escape_prop(&config.path.display().to_string()),
            d.pos.line,
            d.pos.col,
            gh_escape(&format!("{server}{}{at}", d.message)),
        ));
    }
    out::print(&text)
}

/// GitHub workflow-command escaping for the message part.
pub(crate) fn gh_escape(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// ... and for property values, which also escape `:` and `,`.
pub(crate) fn gh_escape_prop(s: &str) -> String {
    gh_escape(s).replace(':', "%3A").replace(',', "%2C")
}

fn print_table(
    config: &Config,
    rows: &[Row],
    list_problem: Option<&str>,
) -> Result<()> {
    let mut text = String::new();
    if !config.diagnostics.is_empty() {
        text.push('\n');
    }
    if !rows.is_empty() {
        let mut table = vec![vec![
            "SERVER".to_string(),
            "TRANSPORT".to_string(),
            "AUTH".to_string(),
            "ALLOWLIST".to_string(),
            "FINGERPRINT".to_string(),
            "TARGET".to_string(),
        ]];
        for r in rows {
            table.push(vec![
                out::shown(&r.name).into_owned(),
                r.transport.to_string(),
                r.auth.to_string(),
                r.allowlist.clone(),
                r.fingerprint.clone().unwrap_or_else(|| "-".to_string()),
                out::shown(&r.target).into_owned(),
            ]);
        }
        text.push_str(&out::table(&table));
        let boxed: Vec<Vec<String>> = rows
            .iter()
            .filter_map(|r| {
                let b = r.sandbox.as_ref()?;
                Some(vec![out::shown(&r.name).into_owned(), sandbox_text(b)])
            })
            .collect();
        if !boxed.is_empty() {
            let mut t =
                vec![vec!["SANDBOXED".to_string(), "CONFINED TO".to_string()]];
            t.extend(boxed);
            text.push('\n');
            text.push_str(&out::table(&t));
        }
    }
    if let Some(p) = list_problem {
        text.push_str(&format!("allowlist: {p}\n"));
    }
    let (e, w) =
        (count(config, Severity::Error), count(config, Severity::Warning));
    text.push_str(&format!(
        "{}: {} server{}, {e} error{}, {w} warning{}: {}\n",
        config.path.display(),
        rows.len(),
        plural(rows.len()),
        plural(e),
        plural(w),
        if config.is_valid() { "valid" } else { "invalid" },
    ));
    out::print(&text)
}

/// A sandbox block on one line: what the server may reach beyond what
/// every sandboxed server gets (GUIDE.md, "Sandboxed servers").
fn sandbox_text(b: &crate::config::Sandbox) -> String {
    let list = |v: &[String]| {
        if v.is_empty() { "-".to_string() } else { v.join(" ") }
    };
    let ports = |v: &[u16]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.iter().map(u16::to_string).collect::<Vec<_>>().join(" ")
        }
    };
    let mut s = format!(
        "read {}; write {}; network {}",
        list(&b.read),
        list(&b.write),
        b.network.name()
    );
    if !b.connect.is_empty() || !b.bind.is_empty() {
        s.push_str(&format!(
            "; connect {}; bind {}",
            ports(&b.connect),
            ports(&b.bind)
        ));
    }
    if b.best_effort {
        s.push_str("; best effort");
    }
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn print_json(
    config: &Config,
    rows: &[Row],
    list_problem: Option<&str>,
    plan: &ServePlan,
) -> Result<()> {
    let diagnostics: Vec<Value> = config
        .diagnostics
        .iter()
        .map(|d| {
            json!({
                "severity": severity(d.severity),
                "server": d.server,
                "pointer": d.pointer,
                "line": d.pos.line,
                "column": d.pos.col,
                "message": d.message,
            })
        })
        .collect();
    let servers: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "name": r.name,
                "valid": r.valid,
                "transport": (r.transport != "?").then_some(r.transport),
                "target": r.valid.then_some(&r.target),
                "auth": (r.auth != "?").then_some(r.auth),
                "allowlist": r.allowlist,
                "fingerprint": r.fingerprint,
                "disabled": r.disabled,
                "sandbox": r.sandbox.as_ref().map(|b| b.to_json()),
            })
        })
        .collect();
    out::json(&json!({
        "file": config.path.display().to_string(),
        "valid": config.is_valid(),
        "errors": count(config, Severity::Error),
        "warnings": count(config, Severity::Warning),
        "diagnostics": diagnostics,
        "servers": servers,
        "allowlist_error": list_problem,
        "serve": plan.to_json(),
    }))
}
