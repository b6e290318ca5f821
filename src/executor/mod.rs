//! The executor: the one path every tool call, resource read and prompt get
//! takes, over either transport.
//!
//! The order is fixed here and nowhere else: journal the request, refuse
//! an item that drifted from the lock file (see `lock.rs`), run the
//! pre-tool hooks (any denial stops it), ask for approval (`read` runs
//! without asking; `execute` needs `--yes`, a yes at the terminal prompt,
//! and is always denied under `--read-only`), make the call, bound the
//! observation, journal the result. Commands hand the executor an
//! [`Action`] and never call a server's tools themselves. Nothing a server
//! returns can change the policy for a later call: the policy is built
//! from the operator's flags and environment before any server starts.

mod approval;
mod bound;
mod hooks;
mod lock;

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

pub(crate) use approval::{Asked, Asker};
pub(crate) use bound::{DEFAULT_MAX_OUTPUT, Observation};
pub(crate) use hooks::{
    DEFAULT_HOOK_TIMEOUT, Ended, run_bounded, run_bounded_with, timed_out,
};

use crate::error::{Error, Kind, Result};
use crate::lockfile::Lock;
use crate::naming::Class;
use crate::session::Session;
use crate::tool::Tool;
use crate::{journal, mcp, term};

/// The operator's policy, fixed before any server starts.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    pub(crate) yes: bool,
    /// `--approve PATTERN` and `RIVUMI_MCP_APPROVE`: the tools approved
    /// by qualified name (globs), beside `--yes`.
    pub(crate) approve: Vec<String>,
    pub(crate) read_only: bool,
    /// Each hook is an argv.
    pub(crate) hooks: Vec<Vec<String>>,
    pub(crate) hook_timeout: Duration,
    pub(crate) max_output: usize,
}

/// The environment variable that holds standing `--approve` patterns.
pub(crate) const APPROVE_VAR: &str = "RIVUMI_MCP_APPROVE";

impl Policy {
    /// The first `--approve` pattern that matches a qualified tool name.
    pub(crate) fn approving(&self, qualified: &str) -> Option<&str> {
        self.approve
            .iter()
            .find(|p| crate::tool::glob_match(p, qualified))
            .map(String::as_str)
    }
}

/// What is to be done.
#[derive(Debug)]
pub(crate) enum Action<'a> {
    Tool { tool: &'a Tool, arguments: &'a Map<String, Value> },
    Read { uri: &'a str },
    Prompt { name: &'a str, arguments: &'a Map<String, Value> },
}

impl Action<'_> {
    pub(crate) fn class(&self) -> Class {
        match self {
            Action::Tool { tool, .. } => tool.class,
            // The bridges are read-only by construction.
            Action::Read { .. } | Action::Prompt { .. } => Class::Read,
        }
    }

    /// The name shown to hooks and in prompts and the journal.
    pub(crate) fn name(&self) -> String {
        match self {
            Action::Tool { tool, .. } => tool.name.clone(),
            Action::Read { .. } => mcp::method::RESOURCES_READ.to_string(),
            Action::Prompt { .. } => mcp::method::PROMPTS_GET.to_string(),
        }
    }

    pub(crate) fn qualified(&self, server: &str) -> String {
        match self {
            Action::Tool { tool, .. } => tool.qualified.clone(),
            _ => format!("mcp__{server}__{}", self.name().replace('/', "_")),
        }
    }

    /// The protocol call this action makes.
    fn call(&self) -> mcp::Call<'_> {
        match self {
            Action::Tool { tool, arguments } => mcp::Call::Tool {
                name: &tool.name,
                arguments,
                headers: &tool.headers,
            },
            Action::Read { uri } => mcp::Call::Read { uri },
            Action::Prompt { name, arguments } => {
                mcp::Call::Prompt { name, arguments }
            }
        }
    }

    pub(crate) fn arguments(&self) -> Value {
        match self {
            Action::Tool { arguments, .. } => {
                Value::Object((*arguments).clone())
            }
            Action::Read { uri } => json!({"uri": uri}),
            Action::Prompt { name, arguments } => {
                json!({"name": name, "arguments": arguments})
            }
        }
    }
}

#[derive(Debug)]
pub(crate) struct Executor {
    pub(crate) policy: Policy,
    /// The lock file in force; `None` without one or with `--unlocked`.
    pub(crate) lock: Option<Lock>,
}

impl Executor {
    /// Runs one action through every step, in order, asking the operator
    /// at the terminal for approval.
    pub(crate) fn run(
        &self,
        s: &mut Session,
        action: Action<'_>,
        transport: &str,
    ) -> Result<Observation> {
        self.run_with(s, action, transport, &approval::Terminal)
    }

    /// [`Executor::run`] with another asker for approval (`serve` asks
    /// its host).
    pub(crate) fn run_with(
        &self,
        s: &mut Session,
        action: Action<'_>,
        transport: &str,
        asker: &dyn Asker,
    ) -> Result<Observation> {
        let server = s.name().to_string();
        let name = action.name();
        let class = action.class();
        journal::event(
            "call_requested",
            json!({"server": server, "tool": name,
                   "qualified_name": action.qualified(&server),
                   "classification": class.label(), "warm": s.warm}),
        );
        let _pending = journal::call_pending(&server, &name);
        self.check_lock(s, &action)?;
        let input = json!({
            "event": "pre_tool",
            "server": server,
            "tool": name,
            "qualified_name": action.qualified(&server),
            "classification": class.label(),
            "arguments": action.arguments(),
            "transport": transport,
        });
        for hook in &self.policy.hooks {
            let d = hooks::run_hook(hook, &input, self.policy.hook_timeout);
            journal::event(
                "hook_decision",
                json!({"server": server, "tool": name, "hook": hook[0],
                       "allow": d.allow, "how": d.how}),
            );
            if !d.allow {
                return Err(Error::new(
                    Kind::Denied,
                    format!(
                        "'{}' denied by pre-tool hook '{}' ({}){}",
                        term::line(&name),
                        term::line(&hook.join(" ")),
                        term::line(&d.how),
                        if d.reason.is_empty() {
                            String::new()
                        } else {
                            format!(
                                ": {}",
                                term::clip(&term::line(&d.reason), 500)
                            )
                        }
                    ),
                )
                .for_server(&server));
            }
        }
        let approval = self.approve(&server, &action, class, asker);
        let how = match &approval {
            Ok(h) | Err((h, _)) => *h,
        };
        let mut decision = json!({"server": server, "tool": name,
               "classification": class.label(),
               "approved": approval.is_ok(), "how": how});
        if how == "pattern" {
            decision["pattern"] =
                json!(self.policy.approving(&action.qualified(&server)));
        }
        journal::event("approval_decision", decision);
        if let Err((_, e)) = approval {
            return Err(e.for_server(&server));
        }
        let started = Instant::now();
        let result = s.call(&action.call());
        let ms = started.elapsed().as_millis() as u64;
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                journal::event(
                    "error",
                    json!({"server": server, "tool": name, "duration_ms": ms,
                           "code": e.kind().name(), "message": e.to_string()}),
                );
                return Err(e);
            }
        };
        let obs = bound::bound(result, self.policy.max_output);
        journal::event(
            "result",
            json!({"server": server, "tool": name, "duration_ms": ms,
                   "is_error": obs.result.get("isError") == Some(&Value::Bool(true)),
                   "bytes": obs.original_bytes, "truncated": obs.truncated}),
        );
        Ok(obs)
    }
}
