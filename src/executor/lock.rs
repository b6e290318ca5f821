//! The lock check: the executor's step that refuses an item whose live
//! definition differs from the lock file (or is not in it).
//!
//! It runs in [`Executor::run`] before the hooks, for every action: a
//! tool's definition is the one it was resolved from (the latest
//! `tools/list`); a prompt's and a resource's are listed here. A URI that
//! no listed resource has may come from any resource template, so then
//! every template must be as locked. Tools the lock has and the server no
//! longer lists are refused in [`Executor::resolve`] (exit 3, not "no
//! such tool"), so `call` and `batch` word it the same way. Refusals are
//! journalled. Without a lock (no file, or `--unlocked`) nothing changes.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::{Action, Executor};
use crate::catalog::Show;
use crate::error::{Error, Kind, Result};
use crate::lockfile::{ItemKind, Lock};
use crate::session::Session;
use crate::tool::{self, Tool};
use crate::{catalog, journal};

impl Executor {
    /// Finds a tool as [`tool::resolve`] does; when the server no longer
    /// lists it but the lock has it, refuses it as removed.
    pub(crate) fn resolve<'a>(
        &self,
        server: &str,
        tools: &'a [Tool],
        wanted: &str,
    ) -> Result<&'a Tool> {
        let missing = match tool::resolve(server, tools, wanted) {
            Ok(t) => return Ok(t),
            // Listed twice, differently: refused whatever the lock says.
            Err(e) if e.kind() == Kind::Refused => return Err(e),
            Err(e) => e,
        };
        let Some(lock) = &self.lock else { return Err(missing) };
        let locked = tool::tools(server, &lock.locked(server, ItemKind::Tool));
        match tool::resolve(server, &locked, wanted) {
            Ok(t) => {
                let why =
                    lock.check_item(server, ItemKind::Tool, &t.name, None);
                Err(refuse(server, &t.name, why.err().unwrap_or_default()))
            }
            Err(_) => Err(missing),
        }
    }

    /// Refuses `action` when what it uses drifted from the lock.
    pub(super) fn check_lock(
        &self,
        s: &mut Session,
        action: &Action<'_>,
    ) -> Result<()> {
        let Some(lock) = &self.lock else { return Ok(()) };
        let server = s.name().to_string();
        let verdict = match action {
            Action::Tool { tool, .. } => lock.check_item(
                &server,
                ItemKind::Tool,
                &tool.name,
                Some(&tool.def),
            ),
            Action::Prompt { name, .. } => {
                let show = Show { prompts: true, ..Show::default() };
                let l = catalog::collect(s, show)?;
                let live = find(l.prompts.map(|x| x.items), "name", name);
                lock.check_item(&server, ItemKind::Prompt, name, live.as_ref())
            }
            Action::Read { uri } => {
                let show = Show { resources: true, ..Show::default() };
                let l = catalog::collect(s, show)?;
                match find(l.resources.map(|x| x.items), "uri", uri) {
                    Some(def) => lock.check_item(
                        &server,
                        ItemKind::Resource,
                        uri,
                        Some(&def),
                    ),
                    None => templates(
                        lock,
                        &server,
                        &l.templates.map(|x| x.items).unwrap_or_default(),
                    ),
                }
            }
        };
        verdict.map_err(|why| refuse(&server, &action.name(), why))
    }
}

/// The item of `items` whose `field` is `id`.
fn find(items: Option<Vec<Value>>, field: &str, id: &str) -> Option<Value> {
    items?
        .into_iter()
        .find(|d| d.get(field).and_then(Value::as_str) == Some(id))
}

/// Every resource template, live or locked, must be as locked.
fn templates(
    lock: &Lock,
    server: &str,
    live: &[Value],
) -> std::result::Result<(), String> {
    let id = |d: &Value| {
        d.get("uriTemplate").and_then(Value::as_str).map(str::to_string)
    };
    let ids: BTreeSet<String> = live
        .iter()
        .chain(&lock.locked(server, ItemKind::Template))
        .filter_map(id)
        .collect();
    // Refuses a server the lock does not know, templates or not.
    lock.check_server(server)?;
    for t in &ids {
        let def = live.iter().find(|d| id(d).as_deref() == Some(t.as_str()));
        lock.check_item(server, ItemKind::Template, t, def)?;
    }
    Ok(())
}

/// The refusal of `name` for the reason the lock gave, journalled.
fn refuse(server: &str, name: &str, why: String) -> Error {
    journal::event(
        "lock_refused",
        json!({"server": server, "tool": name, "reason": why}),
    );
    Error::refused(why).for_server(server)
}
