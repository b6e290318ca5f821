//! Setup: what a command that speaks to servers runs with, from the
//! operator's options and environment — the journal, the lock the
//! command enforces, the executor's policy, the operator's answers to
//! server requests and the launch context. Never from a project file.

use std::path::{Path, PathBuf};

use crate::cli::{self, Command};
use crate::error::{self, Result};
use crate::{ask, executor, journal, launch, lockfile, msg};

/// What [`prepare`] hands to a command.
#[derive(Debug)]
pub(crate) struct Setup {
    pub(crate) exec: executor::Executor,
    pub(crate) ctx: launch::Context,
    pub(crate) lock_path: PathBuf,
}

/// Opens the journal, loads the lock where `command` enforces one, and
/// builds the executor and the launch context (no server starts here).
pub(crate) fn prepare(
    command: &Command,
    g: &cli::Global,
    config: &Path,
) -> Result<Setup> {
    if let Some(p) = g.journal.clone().or_else(|| {
        lookup("RIVUMI_MCP_JOURNAL").filter(|v| !v.is_empty()).map(Into::into)
    }) {
        journal::open(&p)?;
    }
    let lock_path = lock_path(g, config);
    // Only where the lock applies: a broken lock file must not stop
    // `login` or `status`. An ad-hoc server is no project's: only a lock
    // named with --lock applies to it, never one that happens to lie in
    // the directory (not even to refuse a broken one).
    let adhoc_unlocked = g.adhoc.is_some() && g.lock.is_none();
    let lock = match command {
        _ if adhoc_unlocked => None,
        Command::Call { .. }
        | Command::Batch
        | Command::Read { .. }
        | Command::Prompt { .. }
        | Command::Serve(_)
        | Command::List { .. } => enforced_lock(g, &lock_path)?,
        _ => None,
    };
    let exec = executor::Executor { policy: policy(g)?, lock };
    let operator =
        ask::Operator::new(&g.client, g.yes, g.read_only, g.timeout, &lookup)?;
    let ctx = launch::Context::load(&settings(g), lookup)?
        .with_client(std::sync::Arc::new(operator));
    Ok(Setup { exec, ctx, lock_path })
}

/// What the launcher needs of the operator's options.
fn settings(g: &cli::Global) -> launch::Settings {
    launch::Settings {
        config: g.config.clone(),
        adhoc: g.adhoc.clone(),
        startup_timeout: g.startup_timeout,
        timeout: g.timeout,
        max_message: g.max_message,
        step_up: g.step_up,
        protocol: g.protocol,
        roots: g.client.roots.clone(),
        no_sandbox: g.no_sandbox.clone(),
        refresh: g.refresh,
        no_daemon: g.no_daemon,
    }
}

pub(crate) use crate::sys::lookup;

/// The executor's policy from the operator's flags and environment:
/// `--pre-tool-hook` commands first, then `RIVUMI_MCP_PRE_TOOL_HOOK`.
/// Never from a project file.
fn policy(g: &cli::Global) -> Result<executor::Policy> {
    let mut hooks = vec![];
    let env_hook =
        lookup("RIVUMI_MCP_PRE_TOOL_HOOK").filter(|v| !v.is_empty());
    for (src, cmd) in g
        .hooks
        .iter()
        .map(|h| ("--pre-tool-hook", h))
        .chain(env_hook.iter().map(|h| ("RIVUMI_MCP_PRE_TOOL_HOOK", h)))
    {
        let argv = crate::words::split_command(cmd)
            .map_err(|e| error::Error::usage(format!("{src}: {e}")))?;
        hooks.push(argv);
    }
    let mut approve = g.approve.clone();
    // RIVUMI_MCP_APPROVE: patterns separated by commas or white space,
    // read from the invoking environment only (never a project file).
    let env_approve = lookup(executor::APPROVE_VAR).unwrap_or_default();
    for p in
        env_approve.split([',', ' ', '\t', '\n']).filter(|p| !p.is_empty())
    {
        crate::tool::check_approve_pattern(p).map_err(|e| {
            error::Error::usage(format!("{}: {e}", executor::APPROVE_VAR))
        })?;
        approve.push(p.to_string());
    }
    Ok(executor::Policy {
        approve,
        yes: g.yes,
        read_only: g.read_only,
        hooks,
        hook_timeout: g.hook_timeout.unwrap_or(executor::DEFAULT_HOOK_TIMEOUT),
        max_output: g.max_output.unwrap_or(executor::DEFAULT_MAX_OUTPUT),
    })
}

/// The lock file: `--lock PATH`, else `.mcp.lock.json` beside the config.
pub(crate) fn lock_path(g: &cli::Global, config: &Path) -> PathBuf {
    if let Some(p) = &g.lock {
        return p.clone();
    }
    match config.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.join(lockfile::FILE_NAME),
        _ => lockfile::FILE_NAME.into(),
    }
}

/// The lock a command enforces: none with `--unlocked` (journalled and
/// warned about) or when there is no file beside the config; a file named
/// with `--lock` must exist; one that cannot be read stops the command.
fn enforced_lock(
    g: &cli::Global,
    path: &Path,
) -> Result<Option<lockfile::Lock>> {
    if g.unlocked {
        if path.exists() {
            msg::warn(&format!(
                "--unlocked: nothing is checked against {}",
                path.display()
            ));
        }
        journal::event(
            "lock_bypassed",
            serde_json::json!({"file": path.display().to_string()}),
        );
        return Ok(None);
    }
    let lock = lockfile::load(path)?;
    if lock.is_none() && g.lock.is_some() {
        return Err(error::Error::usage(format!(
            "--lock {}: no such file",
            path.display()
        )));
    }
    Ok(lock)
}
