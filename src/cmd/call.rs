//! `rivumi-mcp call`: call one tool.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::cli::Target;
use crate::cmd::task as cmd_task;
use crate::error::{Error, Result};
use crate::executor::{Action, AsTask, Executor, Observation, Ran};
use crate::launch::Context;
use crate::render::{self, Saver};
use crate::{callargs, mcp, msg, out, tool};

/// The most bytes `--args -` or `--args @file` reads.
const MAX_ARGS: u64 = 16 << 20;

/// Reads `--args`: a JSON object, `-` for stdin, or `@file`.
fn read_args(spec: &str) -> Result<Value> {
    let text = if spec == "-" {
        let mut s = String::new();
        std::io::stdin()
            .take(MAX_ARGS + 1)
            .read_to_string(&mut s)
            .map_err(|e| Error::usage(format!("--args -: {e}")))?;
        if s.len() as u64 > MAX_ARGS {
            return Err(Error::usage("--args -: more than 16 MiB on stdin"));
        }
        s
    } else if let Some(path) = spec.strip_prefix('@') {
        crate::config::read_file(Path::new(path))
            .map_err(|e| Error::usage(format!("--args: {}", e.message())))?
    } else {
        spec.to_string()
    };
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| Error::usage(format!("--args: not JSON: {e}")))?;
    if !v.is_object() {
        return Err(Error::usage(format!(
            "--args must be a JSON object, not {}",
            callargs::type_name(&v)
        )));
    }
    Ok(v)
}

/// What the operator gave as the tool's arguments.
#[derive(Debug)]
pub(crate) struct Input<'a> {
    /// `key=value` and `key:=json` words.
    pub(crate) pairs: &'a [String],
    /// `--args`.
    pub(crate) args: Option<&'a str>,
}

pub(crate) fn run(
    ctx: &Context,
    exec: &Executor,
    target: &Target,
    input: Input<'_>,
    save: Option<&Path>,
    output: render::Output,
    as_task: AsTask,
) -> Result<()> {
    let Input { pairs, args } = input;
    let (server, tool) = match target {
        Target::Qualified(q) => {
            let (s, t) = tool::split_qualified(q).ok_or_else(|| {
                Error::usage(format!(
                    "'{q}' is not mcp__<server>__<tool>; or give the server \
                     and the tool as two words"
                ))
            })?;
            (s.to_string(), t.to_string())
        }
        Target::Split { server, tool } => (server.clone(), tool.clone()),
    };
    let transport = ctx.transport_name(&server);
    let base = args.map(read_args).transpose()?;
    let mut s = match (as_task, transport) {
        // The session is left to the server and recorded (see
        // crate::task::remember), never the daemon's.
        (AsTask::Detach, "http") => ctx.start_cold(&server)?,
        // A task lives in its server: a stdio server outlives this
        // invocation only when the daemon keeps it warm.
        (AsTask::Detach, _) => match ctx.start_warm(&server, None)? {
            Ok(s) => s,
            Err(why) => {
                return Err(Error::usage(format!(
                    "--detach needs a server that outlives this invocation \
                     (HTTP, or a stdio server kept warm by the daemon); \
                     '{server}' is a {transport} server and {why}: use \
                     --task to wait for it instead"
                )));
            }
        },
        _ => ctx.start(&server)?,
    };
    let listing = s.list_all(mcp::List::Tools)?;
    let tools = tool::tools(&server, &listing.items);
    let t = exec.resolve(&server, &tools, &tool)?;
    let built = callargs::build(t.input_schema(), base, pairs, &read_value)
        .map_err(|m| {
            // The escape hatch for a schema that lists too little.
            let hint = match m.starts_with(callargs::UNKNOWN) {
                true => " (--args passes any object as is)",
                false => "",
            };
            Error::usage(format!("{m}{hint}")).for_server(&server)
        })?;
    for note in &built.notes {
        msg::debug(&format!("server '{server}': {note}"));
    }
    let arguments = built.args;
    tool::check_required(&server, t, &arguments)?;
    let ran = exec.run_as(
        &mut s,
        Action::Tool { tool: t, arguments: &arguments },
        transport,
        as_task,
    )?;
    let obs = match ran {
        Ran::Observed(obs) => obs,
        Ran::Detached(task) => {
            // The server keeps the task: its session stays open there.
            let version = s.server.version;
            if let (Some(session), Some(url), Some(v)) =
                (s.detach(), ctx.url(&server), version)
            {
                crate::task::remember(
                    &crate::sys::lookup,
                    &server,
                    &url,
                    &task.id,
                    &session,
                    v,
                )?;
            }
            let json = output == render::Output::Json;
            return cmd_task::print_detached(&server, &task, json);
        }
    };
    s.close();
    show(&server, &t.qualified, &t.name, &obs, save, output)
}

/// Prints a tool's result as `output` says (`--json` is `json`: the
/// observation; `auto`/`text` rendered, saving what `--save` asks) and
/// fails when the tool reported an error or the bound cut what was
/// printed.
pub(crate) fn show(
    server: &str,
    qualified: &str,
    name: &str,
    obs: &Observation,
    save: Option<&Path>,
    output: render::Output,
) -> Result<()> {
    let result = &obs.result;
    let is_error = result.get("isError") == Some(&Value::Bool(true));
    // With --json (or structured, raw) nothing is saved: the JSON is what
    // a script gets.
    let saved = matches!(output, render::Output::Auto | render::Output::Text)
        && save.is_some();
    match output {
        render::Output::Json => out::json(&obs.json())?,
        render::Output::Raw => {
            out::print_untrusted(&format!("{}\n", obs.result))?
        }
        render::Output::Structured => match result.get("structuredContent") {
            Some(sc) => out::json(sc)?,
            None if is_error => {}
            None => {
                return Err(Error::negative(format!(
                    "tool '{}' returned no structuredContent (--output \
                     structured; --output text prints its content)",
                    out::shown(name)
                ))
                .for_server(server));
            }
        },
        render::Output::Auto | render::Output::Text => {
            let prefix = format!("{server}-{qualified}");
            let mut saver = Saver::new(save, prefix);
            let text = render::tool_result(
                &obs.result,
                obs.whole(),
                &mut saver,
                output,
            )?;
            render::print(&text)?;
        }
    }
    if is_error {
        return Err(Error::negative(format!(
            "tool '{}' reported an error (isError)",
            out::shown(name)
        ))
        .for_server(server));
    }
    obs.check_whole(saved).map_err(|e| e.for_server(server))
}

pub(crate) use crate::config::read_value;
