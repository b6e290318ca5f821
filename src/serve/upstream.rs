//! The upstream sessions of `serve`: one per allowed server, started on
//! first use through the launch path (`launch::Context::start`), kept
//! while `serve` runs, closed when the pool is dropped (every exit path:
//! end of input, a signal, an error).
//!
//! This is the one place `serve` holds sessions, behind a small
//! interface ([`Pool::with`], [`Pool::close_all`]), so that a shared pool
//! of warm sessions keyed by launch identity can replace it without
//! touching the gateway. A session whose server died, timed out or broke
//! the protocol is closed and dropped: the next use starts it again.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::catalog::Show;
use crate::error::{Kind, Result};
use crate::launch::Context;
use crate::session::Session;
use crate::{catalog, mcp, msg};

/// One upstream server: its session once started, and its lists as last
/// seen (dropped when the server says a list changed).
#[derive(Debug, Default)]
pub(crate) struct Upstream {
    session: Option<Session>,
    tools: Option<Vec<Value>>,
    resources: Option<(Vec<Value>, Vec<Value>)>,
    prompts: Option<Vec<Value>>,
    /// `*/list_changed` seen and not yet told to the host.
    pub(crate) changed: Vec<String>,
}

impl Upstream {
    /// The live session (started by [`Pool::with`]).
    pub(crate) fn session(&mut self) -> &mut Session {
        self.session.as_mut().expect("started by Pool::with")
    }

    /// The server's tools (as listed; cached).
    pub(crate) fn tools(&mut self) -> Result<Vec<Value>> {
        // Notices that came before this listing are answered by it.
        self.note_changes();
        if self.tools.is_none() {
            let show = Show { tools: true, ..Show::default() };
            let l = catalog::collect(self.session(), show)?;
            self.tools = Some(l.tools.map(|l| l.items).unwrap_or_default());
        }
        Ok(self.tools.clone().unwrap_or_default())
    }

    /// The server's resources and resource templates (cached).
    pub(crate) fn resources(&mut self) -> Result<(Vec<Value>, Vec<Value>)> {
        // Notices that came before this listing are answered by it.
        self.note_changes();
        if self.resources.is_none() {
            let show = Show { resources: true, ..Show::default() };
            let l = catalog::collect(self.session(), show)?;
            self.resources = Some((
                l.resources.map(|l| l.items).unwrap_or_default(),
                l.templates.map(|l| l.items).unwrap_or_default(),
            ));
        }
        Ok(self.resources.clone().unwrap_or_default())
    }

    /// The server's prompts (cached).
    pub(crate) fn prompts(&mut self) -> Result<Vec<Value>> {
        // Notices that came before this listing are answered by it.
        self.note_changes();
        if self.prompts.is_none() {
            let show = Show { prompts: true, ..Show::default() };
            let l = catalog::collect(self.session(), show)?;
            self.prompts =
                Some(l.prompts.map(|l| l.items).unwrap_or_default());
        }
        Ok(self.prompts.clone().unwrap_or_default())
    }

    /// Takes the session's `*/list_changed` notices: the cached list is
    /// dropped, and the notice kept for the host.
    pub(crate) fn note_changes(&mut self) {
        let Some(s) = self.session.as_mut() else { return };
        for m in s.take_list_changed() {
            match m.as_str() {
                mcp::method::TOOLS_LIST_CHANGED => self.tools = None,
                mcp::method::RESOURCES_LIST_CHANGED => self.resources = None,
                mcp::method::PROMPTS_LIST_CHANGED => self.prompts = None,
                _ => continue,
            }
            if !self.changed.contains(&m) {
                self.changed.push(m);
            }
        }
    }

    fn close(&mut self) {
        if let Some(mut s) = self.session.take() {
            s.close();
        }
        self.tools = None;
        self.resources = None;
        self.prompts = None;
    }
}

/// Whether an error means the session is unusable: a deadline, or a
/// server failure other than its own JSON-RPC error answer (which leaves
/// the session as it was).
fn broken(e: &crate::error::Error) -> bool {
    match e.kind() {
        Kind::Timeout => true,
        Kind::Server => !e.message().starts_with("server error"),
        _ => false,
    }
}

/// The sessions of the servers `serve` exposes, keyed by server name
/// (one launch identity per name: the allowlist and pins are fixed at
/// start).
#[derive(Debug)]
pub(crate) struct Pool<'a> {
    ctx: &'a Context,
    slots: BTreeMap<String, Mutex<Upstream>>,
}

impl<'a> Pool<'a> {
    pub(crate) fn new(ctx: &'a Context, servers: &[String]) -> Pool<'a> {
        let slots = servers
            .iter()
            .map(|s| (s.clone(), Mutex::new(Upstream::default())))
            .collect();
        Pool { ctx, slots }
    }

    /// The servers, in name order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.slots.keys().map(String::as_str)
    }

    pub(crate) fn has(&self, server: &str) -> bool {
        self.slots.contains_key(server)
    }

    pub(crate) fn ctx(&self) -> &Context {
        self.ctx
    }

    /// Runs `f` on the server's upstream, starting it first if needed.
    /// When `f` fails because the server died, timed out or broke the
    /// protocol, the session is closed: the next use starts it again.
    pub(crate) fn with<R>(
        &self,
        server: &str,
        f: impl FnOnce(&mut Upstream) -> Result<R>,
    ) -> Result<R> {
        let slot = self.slots.get(server).ok_or_else(|| {
            crate::error::Error::usage(format!(
                "no server '{}' behind this gateway",
                crate::term::line(server)
            ))
        })?;
        let mut u = slot.lock().unwrap_or_else(|e| e.into_inner());
        if u.session.is_none() {
            u.session = Some(self.ctx.start(server)?);
        }
        let r = f(&mut u);
        if u.session.as_ref().is_some_and(Session::is_closed) {
            u.close();
        } else if let Err(e) = &r
            && broken(e)
        {
            msg::warn(&format!(
                "{e}; the server is closed and restarts on next use"
            ));
            u.close();
        }
        r
    }

    /// Runs `f` on every server's upstream at once (each starting if
    /// needed) and returns the results in name order; a server that fails
    /// is warned about and left out, the others are unaffected.
    pub(crate) fn each<R: Send>(
        &self,
        f: impl Fn(&mut Upstream) -> Result<R> + Sync,
    ) -> Vec<(&str, R)> {
        let host = super::Carried::here();
        let (f, host) = (&f, &host);
        std::thread::scope(|scope| {
            let running: Vec<_> = self
                .names()
                .map(|name| {
                    (
                        name,
                        scope.spawn(move || {
                            let _current = host.enter();
                            self.with(name, f)
                        }),
                    )
                })
                .collect();
            running
                .into_iter()
                .filter_map(|(name, t)| match t.join() {
                    Ok(Ok(r)) => Some((name, r)),
                    Ok(Err(e)) => {
                        msg::warn(&e.to_string());
                        None
                    }
                    Err(_) => None,
                })
                .collect()
        })
    }

    /// Reads what the started, idle servers sent between requests (a
    /// busy one reads it during its request; an HTTP one only when
    /// `http` says so of its name, as reading it takes a quiet spell);
    /// the list changes this found, taken. A server that fails meanwhile
    /// is closed.
    pub(crate) fn poll_idle(
        &self,
        http: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        let mut all = vec![];
        for (name, slot) in &self.slots {
            let Ok(mut u) = slot.try_lock() else { continue };
            let before = u.changed.len();
            let Some(s) = u.session.as_mut() else { continue };
            let r = s.poll(std::time::Duration::from_millis(1), http(name));
            if let Err(e) = r {
                msg::warn(&format!(
                    "{e}; the server is closed and restarts on next use"
                ));
                u.close();
                continue;
            }
            u.note_changes();
            if u.changed.len() > before {
                for m in std::mem::take(&mut u.changed) {
                    if !all.contains(&m) {
                        all.push(m);
                    }
                }
            }
        }
        all
    }

    /// The list-changed notices of every server, taken.
    pub(crate) fn take_changed(&self) -> Vec<String> {
        let mut all = vec![];
        for slot in self.slots.values() {
            let Ok(mut u) = slot.try_lock() else { continue };
            for m in std::mem::take(&mut u.changed) {
                if !all.contains(&m) {
                    all.push(m);
                }
            }
        }
        all
    }

    /// Closes every session (also done on drop).
    pub(crate) fn close_all(&self) {
        for slot in self.slots.values() {
            slot.lock().unwrap_or_else(|e| e.into_inner()).close();
        }
    }
}

impl Drop for Pool<'_> {
    fn drop(&mut self) {
        self.close_all();
    }
}
