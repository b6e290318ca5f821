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
pub(crate) use hooks::DEFAULT_HOOK_TIMEOUT;

use crate::error::{Error, Kind, Result};
use crate::lockfile::Lock;
use crate::naming::Class;
use crate::session::Session;
use crate::tool::Tool;
use crate::{journal, mcp, task, term};

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
            .find(|p| crate::naming::glob_match(p, qualified))
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

/// Whether a call asks for a task, and what then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AsTask {
    No,
    /// Ask for a task and wait for its result.
    Wait,
    /// Ask for a task and return it at once (`call --detach`).
    Detach,
}

/// How an action ended.
#[derive(Debug)]
pub(crate) enum Ran {
    /// The result, bounded.
    Observed(Observation),
    /// The task that runs on (`--detach`).
    Detached(mcp::tasks::Task),
}

/// What the server answered: a result, or a task left running.
enum Got {
    Result(Value),
    Detached(mcp::tasks::Task),
}

#[derive(Debug)]
pub(crate) struct Executor {
    pub(crate) policy: Policy,
    /// The lock file in force; `None` without one or with `--unlocked`.
    pub(crate) lock: Option<Lock>,
}

impl Executor {
    /// Runs one action through every step, in order, asking the operator
    /// at the terminal for approval, as a task when `as_task` says so.
    pub(crate) fn run_as(
        &self,
        s: &mut Session,
        action: Action<'_>,
        transport: &str,
        as_task: AsTask,
    ) -> Result<Ran> {
        self.run_full(s, action, transport, &approval::Terminal, as_task)
    }

    /// [`Executor::run`] with another asker for approval (`serve` asks
    /// its host); never as a task (one the server makes anyway is waited
    /// for).
    pub(crate) fn run_with(
        &self,
        s: &mut Session,
        action: Action<'_>,
        transport: &str,
        asker: &dyn Asker,
    ) -> Result<Observation> {
        match self.run_full(s, action, transport, asker, AsTask::No)? {
            Ran::Observed(o) => Ok(o),
            Ran::Detached(_) => {
                unreachable!("only a detached call ends without a result")
            }
        }
    }

    /// Every step, in order: journal, lock, hooks, approval (through
    /// `asker`), the call (as a task when asked or required), the bound,
    /// the journal.
    fn run_full(
        &self,
        s: &mut Session,
        action: Action<'_>,
        transport: &str,
        asker: &dyn Asker,
        as_task: AsTask,
    ) -> Result<Ran> {
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
        self.pre_tool_hooks(&server, &action, transport)?;
        self.approved(&server, &action, asker)?;
        let started = Instant::now();
        let result = call(s, &action, as_task);
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
        let result = match result {
            Got::Result(r) => r,
            Got::Detached(t) => return Ok(Ran::Detached(t)),
        };
        Ok(Ran::Observed(self.observe(&server, &name, result, ms)))
    }

    /// The operator's pre-tool hooks, in order, each decision journaled;
    /// the first that denies stops the call.
    fn pre_tool_hooks(
        &self,
        server: &str,
        action: &Action<'_>,
        transport: &str,
    ) -> Result<()> {
        let name = action.name();
        let input = json!({
            "event": "pre_tool",
            "server": server,
            "tool": name,
            "qualified_name": action.qualified(server),
            "classification": action.class().label(),
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
                .for_server(server));
            }
        }
        Ok(())
    }

    /// Approval (through `asker`), its decision journaled.
    fn approved(
        &self,
        server: &str,
        action: &Action<'_>,
        asker: &dyn Asker,
    ) -> Result<()> {
        let class = action.class();
        let approval = self.approve(server, action, class, asker);
        let how = match &approval {
            Ok(h) | Err((h, _)) => *h,
        };
        let mut decision = json!({"server": server, "tool": action.name(),
               "classification": class.label(),
               "approved": approval.is_ok(), "how": how});
        if how == "pattern" {
            decision["pattern"] =
                json!(self.policy.approving(&action.qualified(server)));
        }
        journal::event("approval_decision", decision);
        approval.map(|_| ()).map_err(|(_, e)| e.for_server(server))
    }

    /// Bounds a result and journals it (also a task's, collected later).
    pub(crate) fn observe(
        &self,
        server: &str,
        name: &str,
        result: Value,
        ms: u64,
    ) -> Observation {
        let obs = bound::bound(result, self.policy.max_output);
        journal::event(
            "result",
            json!({"server": server, "tool": name, "duration_ms": ms,
                   "is_error": obs.result.get("isError") == Some(&Value::Bool(true)),
                   "bytes": obs.original_bytes, "truncated": obs.truncated}),
        );
        obs
    }

    /// Runs one action through every step, in order, never as a task
    /// (a task the server makes anyway is waited for).
    pub(crate) fn run(
        &self,
        s: &mut Session,
        action: Action<'_>,
        transport: &str,
    ) -> Result<Observation> {
        self.run_with(s, action, transport, &approval::Terminal)
    }
}

/// The call itself: as a task when asked, or when the tool says it must
/// be (in `batch` too); a task is waited for unless detached.
fn call(s: &mut Session, action: &Action<'_>, as_task: AsTask) -> Result<Got> {
    let server = s.name().to_string();
    let as_task = match action {
        Action::Tool { tool, .. }
            if as_task == AsTask::No && mcp::tasks::required_by(&tool.def) =>
        {
            AsTask::Wait
        }
        _ => as_task,
    };
    let result = match as_task {
        AsTask::No => s.call(&action.call()),
        AsTask::Wait | AsTask::Detach => {
            s.call_as_task(&action.call(), task::TTL.as_millis() as u64)
        }
    };
    result.and_then(|r| match mcp::tasks::created(&r) {
        None => Ok(Got::Result(r)),
        Some(Err(why)) => {
            Err(Error::server(format!("{}: {why}", mcp::method::TOOLS_CALL))
                .for_server(&server))
        }
        Some(Ok(t)) => {
            journal::event(
                "task_created",
                json!({"server": server, "tool": action.name(),
                       "task": task::fingerprint(&t.id),
                       "status": t.status.as_str(),
                       "detached": as_task == AsTask::Detach}),
            );
            if as_task == AsTask::Detach {
                return Ok(Got::Detached(t));
            }
            let limit = s.request_timeout;
            task::wait(s, t, limit).map(Got::Result)
        }
    })
}
