//! `rivumi-mcp lock`: pin what servers expose in the lock file, or check
//! (`--check`, for CI) that they still expose exactly that.
//!
//! Servers start in parallel, as for `list`; each is asked for everything
//! model-facing (see [`crate::lockfile`]). Writing replaces the named
//! servers' entries (every allowed server's when none is named, dropping
//! the others) and first prints what changed since the previous lock, so a
//! reviewer sees it before committing. `--check` prints the same report
//! and fails (exit 1) when there is anything in it. A previous lock file
//! that cannot be read stops both: it is never rewritten silently.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::{Value, json};

use crate::catalog::Show;
use crate::cli::Format;
use crate::cmd::check_config::{gh_escape, gh_escape_prop};
use crate::cmd::list;
use crate::error::{Error, Result};
use crate::launch::Context;
use crate::lockfile::{self, Finding, ItemKind, Lock, Snapshot};
use crate::{allowlist, msg, out, term};

pub(crate) fn run(
    ctx: &Context,
    names: &[String],
    check: bool,
    format: Format,
    path: &Path,
) -> Result<()> {
    let previous = lockfile::load(path)?;
    if check && previous.is_none() {
        return Err(Error::usage(format!(
            "{}: no lock file; write one with 'rivumi-mcp lock' (or name \
             it with --lock PATH)",
            path.display()
        )));
    }
    let named = !names.is_empty();
    let names = if named { names.to_vec() } else { ctx.allowed_servers()? };
    // Refuse up front, as `list` does, so nothing starts for nothing.
    for n in &names {
        ctx.startable(n)?;
    }
    let live = snapshots(ctx, &names)?;
    let had_previous = previous.is_some();
    let old = previous.unwrap_or_else(|| Lock::new(path));
    // What is compared: the named servers, or every server locked or
    // started (a locked server no longer allowed is a finding).
    let scope: BTreeSet<&String> = if named {
        names.iter().collect()
    } else {
        old.servers.keys().chain(live.keys()).collect()
    };
    let findings: Vec<Finding> = scope
        .iter()
        .flat_map(|s| lockfile::compare(s, old.servers.get(*s), live.get(*s)))
        .collect();
    let items: usize = live.values().map(Snapshot::len).sum();
    if check {
        report(&old, &findings, format, &Summary::Checked(scope.len()))?;
        if findings.is_empty() {
            return Ok(());
        }
        return Err(Error::negative(format!(
            "{}: {} finding{} (the servers drifted from the lock file)",
            path.display(),
            findings.len(),
            plural(findings.len())
        )));
    }
    let mut new = Lock::new(path);
    if named {
        new.servers = old.servers.clone();
    }
    let servers = live.len();
    new.servers.extend(live);
    lockfile::save(&new)?;
    crate::journal::event(
        "lock_written",
        json!({"file": path.display().to_string(), "servers": servers,
               "items": items, "changes": findings.len()}),
    );
    let shown: &[Finding] = if had_previous { &findings } else { &[] };
    report(&old, shown, format, &Summary::Written { servers, items })
}

/// Starts each server (in parallel) and takes its snapshot; every failure
/// is reported, the first decides the exit code.
fn snapshots(
    ctx: &Context,
    names: &[String],
) -> Result<BTreeMap<String, Snapshot>> {
    let results = list::in_parallel(names, |n| snapshot(ctx, n));
    let mut taken = BTreeMap::new();
    let mut errors = vec![];
    for (name, r) in names.iter().zip(results) {
        match r {
            Ok(s) => {
                taken.insert(name.clone(), s);
            }
            Err(e) => errors.push(e),
        }
    }
    if errors.len() > 1 {
        for e in &errors {
            msg::error(&e.to_string());
        }
        return Err(errors.swap_remove(0).reported());
    }
    match errors.pop() {
        Some(e) => Err(e),
        None => Ok(taken),
    }
}

/// Everything model-facing one server exposes now.
fn snapshot(ctx: &Context, name: &str) -> Result<Snapshot> {
    let launch = allowlist::fingerprint(ctx.startable(name)?);
    let mut s = ctx.start(name)?;
    let all = Show { tools: true, resources: true, prompts: true };
    let l = crate::catalog::collect(&mut s, all);
    let skills = match &l {
        Ok(_) => super::skills::list_all(&mut s),
        Err(_) => Ok(None),
    };
    s.close();
    let l = l?;
    let skills: Vec<serde_json::Value> =
        skills?.unwrap_or_default().into_iter().map(|k| k.entry).collect();
    let mut snap = Snapshot {
        launch,
        protocol: l.protocol,
        server_info: l.info,
        instructions: l.instructions,
        items: BTreeMap::new(),
    };
    for (kind, listing) in [
        (ItemKind::Tool, l.tools),
        (ItemKind::Prompt, l.prompts),
        (ItemKind::Resource, l.resources),
        (ItemKind::Template, l.templates),
    ] {
        let listing = listing.unwrap_or_default();
        if !listing.complete {
            // A partial list would lock (or report as removed) only what
            // happened to fit.
            return Err(Error::server(format!(
                "{}: the list is incomplete (see above), so it cannot be \
                 locked or checked",
                kind.key()
            ))
            .for_server(name));
        }
        // Which of two definitions of one name would be pinned, and
        // which would a call reach? Neither is guessed.
        let twice = lockfile::conflicts(kind, &listing.items);
        if let Some(id) = twice.first() {
            return Err(Error::server(format!(
                "{}: '{}' is listed twice with different definitions{}, so \
                 it cannot be locked or checked",
                kind.key(),
                term::line(id),
                match twice.len() {
                    1 => String::new(),
                    n => format!(" (and {} more)", n - 1),
                }
            ))
            .for_server(name));
        }
        snap.add_items(kind, &listing.items);
    }
    snap.add_items(ItemKind::Skill, &skills);
    Ok(snap)
}

/// The last line of a report.
enum Summary {
    /// `--check` over this many servers.
    Checked(usize),
    Written {
        servers: usize,
        items: usize,
    },
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn report(
    lock: &Lock,
    findings: &[Finding],
    format: Format,
    summary: &Summary,
) -> Result<()> {
    let path = lock.path.display().to_string();
    if format == Format::Json {
        return out::json(&to_json(lock, findings, summary));
    }
    let mut text = String::new();
    for f in findings {
        let pos = lock.position(&f.pointer());
        let diffs = diff_lines(f);
        if format == Format::Github {
            let mut message = f.summary();
            for l in &diffs {
                message.push('\n');
                message.push_str(l);
            }
            text.push_str(&format!(
                "::error file={},line={},col={},title=MCP lock drift::{}\n",
                gh_escape_prop(&path),
                pos.line,
                pos.col,
                gh_escape(&message)
            ));
        } else {
            text.push_str(&format!(
                "{path}:{}:{}: {}\n",
                pos.line,
                pos.col,
                term::line(&f.summary())
            ));
            for l in diffs {
                text.push_str(&format!("    {l}\n"));
            }
        }
    }
    text.push_str(&match summary {
        Summary::Checked(n) if findings.is_empty() => {
            format!("{path}: {n} server{} checked: unchanged\n", plural(*n))
        }
        Summary::Checked(n) => format!(
            "{path}: {n} server{} checked: {} finding{}: drift\n",
            plural(*n),
            findings.len(),
            plural(findings.len())
        ),
        Summary::Written { servers, items } => format!(
            "wrote {path}: {servers} server{}, {items} item{}{}\n",
            plural(*servers),
            plural(*items),
            match findings.len() {
                0 => String::new(),
                n => format!(" ({n} change{} since the last lock)", plural(n)),
            }
        ),
    });
    out::print(&text)
}

/// `field: - old` / `field: + new`, one line each, made safe to print.
fn diff_lines(f: &Finding) -> Vec<String> {
    let side = |v: &Option<String>| match v {
        Some(s) => term::line(s).into_owned(),
        None => "(absent)".to_string(),
    };
    f.diffs
        .iter()
        .flat_map(|d| {
            let pad = " ".repeat(d.field.chars().count());
            [
                format!("{}: - {}", term::line(&d.field), side(&d.old)),
                format!("{pad}  + {}", side(&d.new)),
            ]
        })
        .collect()
}

fn to_json(lock: &Lock, findings: &[Finding], summary: &Summary) -> Value {
    let items: Vec<Value> = findings
        .iter()
        .map(|f| {
            let pos = lock.position(&f.pointer());
            let (kind, name) = match &f.item {
                Some((k, id)) => (Some(k.label()), Some(id.as_str())),
                None => (None, None),
            };
            let diffs: Vec<Value> = f
                .diffs
                .iter()
                .map(|d| json!({"field": d.field, "old": d.old, "new": d.new}))
                .collect();
            json!({
                "server": f.server,
                "kind": kind,
                "name": name,
                "change": f.change.label(),
                "fields": f.fields,
                "diffs": diffs,
                "message": f.summary(),
                "pointer": f.pointer(),
                "line": pos.line,
                "column": pos.col,
            })
        })
        .collect();
    let mut o = json!({
        "file": lock.path.display().to_string(),
        "ok": findings.is_empty(),
        "findings": items,
    });
    match summary {
        Summary::Checked(n) => {
            o["checked"] = json!(n);
        }
        Summary::Written { servers, items } => {
            o["written"] = json!({"servers": servers, "items": items});
        }
    }
    o
}
