//! rivumi-mcp: a small, fast, trustworthy command-line client for the
//! Model Context Protocol.
//!
//! `main` is a switchboard: it parses the command line, dispatches to one
//! command, prints the one error line and picks the exit code. Nothing
//! below it calls `process::exit` (the signal handler excepted, which must
//! end the process after closing every server).

mod allowlist;
mod cli;
mod cmd;
mod config;
mod deadline;
mod error;
mod jsonpos;
mod msg;
mod out;
mod term;
mod urlcheck;
mod vars;

use std::process::ExitCode;

use crate::cli::{Command, Parsed};
use crate::error::{Kind, Result};

fn main() -> ExitCode {
    let args = std::env::args_os().skip(1);
    let json_errors = std::env::args_os().any(|a| a == "--json");
    let result = match cli::parse(args) {
        Ok(Parsed::Help(text)) => out::print(&text),
        Ok(Parsed::Version) => {
            out::print(&format!("rivumi-mcp {}\n", env!("CARGO_PKG_VERSION")))
        }
        Ok(Parsed::Run(args)) => run(args),
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == Kind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            report(&e, json_errors);
            ExitCode::from(e.kind().exit_code())
        }
    }
}

/// Prints the error once: a line on stderr, plus a JSON object with
/// `--json` so scripts need not parse prose.
fn report(e: &error::Error, json: bool) {
    msg::error(&e.to_string());
    if json {
        let obj = serde_json::json!({"error": {
            "code": e.kind().name(),
            "exit_code": e.kind().exit_code(),
            "message": e.message(),
            "server": e.server_name(),
        }});
        msg::line(&obj.to_string());
    }
}

fn lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn run(args: cli::Args) -> Result<()> {
    let g = &args.global;
    msg::set_level(if g.quiet { 0 } else { 1 + g.verbose });
    let path = g.config.clone().unwrap_or_else(config::default_path);
    match args.command {
        Command::CheckConfig { format } => {
            cmd::check_config::run(&path, format, g.strict, &lookup)
        }
        _ => Err(error::Error::usage("not implemented yet")),
    }
}
