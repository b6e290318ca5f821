//! rivumi-mcp: a small, fast, trustworthy command-line client for the
//! Model Context Protocol.
//!
//! The library target exists so that the binary, the fuzz targets and
//! the tidy test share one build of the modules; it is not a stable API.
//! The protocol without I/O is its own crate, `rivumi-mcp-proto`
//! (`crates/proto`); its modules are re-exported here under their own
//! names so that `crate::mcp` reads the same everywhere.
//!
//! [`main`] is the switchboard: it parses the command line, dispatches to
//! one command, prints the one error line and picks the exit code.
//! `setup` turns the operator's options into what commands run with.
//! Nothing below [`main`] calls `process::exit` (the signal handler
//! excepted, which must end the process after closing every server).

pub(crate) use rivumi_mcp_proto::{
    callargs, elicit, jsonpos, mcp, sse, streamable, suggest, term, urlcheck,
    vars, www_auth,
};

mod allowlist;
mod ask;
mod auth;
mod cancel;
mod catalog;
mod cli;
mod cmd;
pub mod config;
mod daemon;
mod deadline;
mod error;
mod executor;
mod files;
mod journal;
mod launch;
mod lockfile;
mod msg;
mod naming;
mod net;
mod out;
mod render;
mod runner;
mod sandbox;
mod serve;
mod session;
mod setup;
mod spawn;
mod sys;
mod task;
mod tool;
mod transport;
mod words;

use std::process::ExitCode;

use crate::catalog::Show;
use crate::cli::{Command, Parsed};
use crate::error::{Kind, Result};

/// The whole program: what `rivumi-mcp` runs.
pub fn main() -> ExitCode {
    // First, before any thread exists: see sys.rs.
    sys::one_malloc_arena();
    sys::observe_signals(journal::on_signal);
    sys::install_signal_thread();
    sys::become_subreaper();
    let argv: Vec<_> = std::env::args_os().skip(1).collect();
    if argv.first().is_some_and(|a| a == "daemon") {
        // Its own small grammar, before the other commands'.
        let help = cli::usage(Some(cli::Cmd::Daemon));
        return match daemon::command(&argv[1..], &help) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                report(&e, false);
                ExitCode::from(e.kind().exit_code())
            }
        };
    }
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

/// Prints the error once: a line on stderr or, with `--json`, a JSON
/// object as the only line (its `message` is the same text), so scripts
/// need not parse prose or skip a line.
fn report(e: &error::Error, json: bool) {
    if json {
        let obj = serde_json::json!({"error": e.to_json()});
        msg::line(&obj.to_string());
    } else if !e.is_reported() {
        msg::error(&e.to_string());
    }
}

/// Runs one command: those that start nothing first, then those that
/// need the operator's setup (journal, lock, policy, launch context).
fn run(args: cli::Args) -> Result<()> {
    let g = &args.global;
    msg::set_level(if g.quiet { 0 } else { 1 + g.verbose });
    let path = g.config.clone().unwrap_or_else(config::default_path);
    // Before anything that reads the environment or starts a server:
    // completion runs these on every TAB.
    match &args.command {
        Command::CheckConfig { format } => {
            let lock = setup::lock_path(g, &path);
            cmd::check_config::run(
                &path,
                &lock,
                *format,
                g.strict,
                &setup::lookup,
            )
        }
        Command::Completions { shell } => {
            out::print(&cmd::completions::script(*shell))
        }
        Command::Servers => cmd::completions::servers(&path),
        Command::Man => out::print(&cmd::man::page()),
        Command::Logout { server } => {
            out::set_raw(g.raw);
            cmd::auth::logout(server, g.json, &setup::lookup)
        }
        command => {
            out::set_raw(g.raw);
            let s = setup::prepare(command, g, &path)?;
            if let Command::Serve(o) = command {
                let operator = ask::Operator::new(
                    &g.client,
                    g.yes,
                    g.read_only,
                    g.timeout,
                    &setup::lookup,
                )?;
                return serve::run(s.ctx, s.exec, operator, o, g.json);
            }
            run_set_up(command, g, &s)
        }
    }
}

/// The commands that run with a [`setup::Setup`].
fn run_set_up(
    command: &Command,
    g: &cli::Global,
    s: &setup::Setup,
) -> Result<()> {
    let (ctx, exec, json) = (&s.ctx, &s.exec, g.json);
    let only = |tools, resources, prompts| Show { tools, resources, prompts };
    match command {
        Command::Status => cmd::auth::status(ctx, json, &setup::lookup),
        Command::Lock { servers, check, format } => {
            cmd::lock::run(ctx, servers, *check, *format, &s.lock_path)
        }
        Command::List { servers, show } => cmd::list::run(
            ctx,
            servers,
            *show,
            json,
            exec.lock.as_ref(),
            g.grep.as_deref(),
        ),
        Command::Batch => cmd::batch::run(ctx, exec),
        Command::Login { server, no_browser, refresh, device } => {
            cmd::auth::login(
                ctx,
                server,
                cmd::auth::LoginOptions {
                    no_browser: *no_browser,
                    refresh: *refresh,
                    device: *device,
                    timeout: g.timeout,
                },
                json,
                &setup::lookup,
            )
        }
        Command::Discover { server } => cmd::auth::discover(ctx, server, json),
        Command::Call { target, pairs, args, save, task } => cmd::call::run(
            ctx,
            exec,
            target,
            cmd::call::Input { pairs, args: args.as_deref() },
            save.as_deref(),
            // --json is --output json.
            if json { render::Output::Json } else { g.output },
            *task,
        ),
        Command::Task { sub, server, id } => {
            cmd::task::run(ctx, exec, *sub, server, id.as_deref(), json)
        }
        Command::Skills { servers } => cmd::skills::list(ctx, servers, json),
        Command::Skill { server, name, save } => {
            cmd::skills::get(ctx, exec, server, name, save.as_deref(), json)
        }
        Command::Resources { server } => {
            cmd::bridges::list_one(ctx, server, only(false, true, false), json)
        }
        Command::Read { server, uri, save } => {
            cmd::bridges::read(ctx, exec, server, uri, save.as_deref(), json)
        }
        Command::Prompts { server } => {
            cmd::bridges::list_one(ctx, server, only(false, false, true), json)
        }
        Command::Prompt { server, name, pairs } => {
            cmd::bridges::prompt(ctx, exec, server, name, pairs, json)
        }
        Command::CheckConfig { .. }
        | Command::Completions { .. }
        | Command::Servers
        | Command::Man
        | Command::Logout { .. }
        | Command::Serve(_) => unreachable!("run handles them"),
    }
}
