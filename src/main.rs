//! rivumi-mcp: a small, fast, trustworthy command-line client for the
//! Model Context Protocol.
//!
//! `main` is a switchboard: it parses the command line, dispatches to one
//! command, prints the one error line and picks the exit code. Nothing
//! below it calls `process::exit` (the signal handler excepted, which must
//! end the process after closing every server).

mod allowlist;
mod ask;
mod auth;

mod callargs;
mod catalog;
mod cli;
mod cmd;
mod config;
mod deadline;
mod elicit;
mod error;
mod executor;
mod journal;
mod lockfile;

mod jsonpos;
mod launch;
mod mcp;
mod msg;
mod naming;
mod net;

mod out;
mod render;
mod session;
mod spawn;
mod sse;
mod suggest;
mod sys;
mod term;
mod tool;
mod transport;
mod urlcheck;
mod vars;
mod www_auth;

use std::process::ExitCode;

use crate::cli::{Command, Parsed};
use crate::error::{Kind, Result};

fn main() -> ExitCode {
    // First, before any thread exists: see sys.rs.
    sys::one_malloc_arena();
    sys::install_signal_thread();
    sys::become_subreaper();
    let argv: Vec<_> = std::env::args_os().skip(1).collect();
    let json_errors = cli::wants_json_errors(&argv);
    let result = match cli::parse(argv) {
        Ok(Parsed::Help(text)) => out::print(&text),
        Ok(Parsed::Version) => {
            out::print(&format!("rivumi-mcp {}\n", env!("CARGO_PKG_VERSION")))
        }
        Ok(Parsed::Run(args)) => run(*args),
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == Kind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            // A server or hook the signal thread just killed must not be
            // reported as a failure of its own: the signal's exit wins.
            sys::wait_if_closing();
            report(&e, json_errors);
            ExitCode::from(e.kind().exit_code())
        }
    }
}

/// Prints the error once: a line on stderr, plus a JSON object with
/// `--json` so scripts need not parse prose.
fn report(e: &error::Error, json: bool) {
    if !e.is_reported() {
        msg::error(&e.to_string());
    }

    if json {
        let obj = serde_json::json!({"error": e.to_json()});
        msg::line(&obj.to_string());
    }
}

fn lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

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
        let argv = cli::split_command(cmd)
            .map_err(|e| error::Error::usage(format!("{src}: {e}")))?;
        hooks.push(argv);
    }
    Ok(executor::Policy {
        yes: g.yes,
        read_only: g.read_only,
        hooks,
        hook_timeout: g.hook_timeout.unwrap_or(executor::DEFAULT_HOOK_TIMEOUT),
        max_output: g.max_output.unwrap_or(executor::DEFAULT_MAX_OUTPUT),
    })
}

/// The lock file: `--lock PATH`, else `.mcp.lock.json` beside the config.
fn lock_path(g: &cli::Global, config: &std::path::Path) -> std::path::PathBuf {
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
    path: &std::path::Path,
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

fn run(args: cli::Args) -> Result<()> {
    let g = &args.global;
    msg::set_level(if g.quiet { 0 } else { 1 + g.verbose });
    let path = g.config.clone().unwrap_or_else(config::default_path);
    if let Command::CheckConfig { format } = args.command {
        return cmd::check_config::run(&path, format, g.strict, &lookup);
    }
    // Before anything that reads the environment or starts a server:
    // completion runs these on every TAB.
    match args.command {
        Command::Completions { shell } => {
            return out::print(&cmd::completions::script(shell));
        }
        Command::Servers => return cmd::completions::servers(&path),
        Command::Man => return out::print(&cmd::man::page()),
        _ => {}
    }
    out::set_raw(g.raw);
    if let Command::Logout { server } = &args.command {
        return cmd::auth::logout(server, g.json, &lookup);
    }
    if let Some(p) = g.journal.clone().or_else(|| {
        lookup("RIVUMI_MCP_JOURNAL").filter(|v| !v.is_empty()).map(Into::into)
    }) {
        journal::open(&p)?;
    }
    let lock_path = lock_path(g, &path);
    // Only where the lock applies: a broken lock file must not stop
    // `login` or `status`. An ad-hoc server is no project's: only a lock
    // named with --lock applies to it, never one that happens to lie in
    // the directory (not even to refuse a broken one).
    let adhoc_unlocked = g.adhoc.is_some() && g.lock.is_none();
    let lock = match &args.command {
        _ if adhoc_unlocked => None,
        Command::Call { .. }
        | Command::Batch
        | Command::Read { .. }
        | Command::Prompt { .. }
        | Command::List { .. } => enforced_lock(g, &lock_path)?,
        _ => None,
    };
    let exec = executor::Executor { policy: policy(g)?, lock };
    let operator =
        ask::Operator::new(&g.client, g.yes, g.read_only, g.timeout, &lookup)?;
    let ctx = launch::Context::load(g, lookup)?
        .with_client(std::sync::Arc::new(operator));
    let json = g.json;
    if let Command::Status = &args.command {
        return cmd::auth::status(&ctx, json, &lookup);
    }
    let only =
        |tools, resources, prompts| cli::Show { tools, resources, prompts };
    match &args.command {
        Command::CheckConfig { .. }
        | Command::Completions { .. }
        | Command::Servers
        | Command::Man => unreachable!("handled above"),
        Command::Lock { servers, check, format } => {
            cmd::lock::run(&ctx, servers, *check, *format, &lock_path)
        }
        Command::List { servers, show } => {
            cmd::list::run(&ctx, servers, *show, json, exec.lock.as_ref())
        }
        Command::Batch => cmd::batch::run(&ctx, &exec),
        Command::Login { server, no_browser, refresh } => cmd::auth::login(
            &ctx,
            server,
            cmd::auth::LoginOptions {
                no_browser: *no_browser,
                refresh: *refresh,
                timeout: g.timeout,
            },
            json,
            &lookup,
        ),
        Command::Logout { .. } | Command::Status => unreachable!("above"),
        Command::Discover { server } => {
            cmd::auth::discover(&ctx, server, json)
        }
        Command::Call { target, pairs, args: a, save } => cmd::call::run(
            &ctx,
            &exec,
            target,
            pairs,
            a.as_deref(),
            save.as_deref(),
            json,
        ),
        Command::Resources { server } => cmd::bridges::list_one(
            &ctx,
            server,
            only(false, true, false),
            json,
        ),
        Command::Read { server, uri, save } => {
            cmd::bridges::read(&ctx, &exec, server, uri, save.as_deref(), json)
        }
        Command::Prompts { server } => cmd::bridges::list_one(
            &ctx,
            server,
            only(false, false, true),
            json,
        ),
        Command::Prompt { server, name, pairs } => {
            cmd::bridges::prompt(&ctx, &exec, server, name, pairs, json)
        }
    }
}
