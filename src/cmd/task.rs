//! `rivumi-mcp task get|wait|result|cancel SERVER TASK_ID` and `task list
//! SERVER`: a task started with `call --detach` (or by anyone holding its
//! id), from another invocation. A task lives in its server; over the
//! handshake-era HTTP wire it lives in a session, which `call --detach`
//! left open and recorded (see `crate::task::remember`), and which is
//! taken up again here and left open until the task is collected or
//! cancelled. A stdio server's task lives in the server the daemon keeps
//! warm: the daemon lends the one that holds it, or says it is gone.

use std::time::Instant;

use serde_json::json;

use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::executor::Executor;
use crate::launch::Context;
use crate::mcp::method;
use crate::mcp::tasks::{self, Task};
use crate::session::Session;
use crate::{journal, out, task};

pub(crate) use crate::task::Sub;

impl Sub {
    pub(crate) const NAMES: [&str; 5] =
        ["get", "wait", "result", "cancel", "list"];
}

impl std::str::FromStr for Sub {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Sub, String> {
        Ok(match s {
            "get" => Sub::Get,
            "wait" => Sub::Wait,
            "result" => Sub::Result,
            "cancel" => Sub::Cancel,
            "list" => Sub::List,
            _ => {
                return Err(format!(
                    "unknown task action '{s}' (one of: {})",
                    Sub::NAMES.join(", ")
                ));
            }
        })
    }
}

/// `call --detach`'s output: the server and the task id (the operator
/// asked for it: this is the one place it is printed), or with `--json`
/// an object.
pub(crate) fn print_detached(
    server: &str,
    t: &Task,
    json: bool,
) -> Result<()> {
    if json {
        let mut v = t.to_json();
        v["server"] = json!(server);
        return out::json(&v);
    }
    crate::msg::debug(&format!(
        "collect it with: rivumi-mcp task result {server} {}",
        t.id
    ));
    out::print(&format!("{server} {}\n", t.id))
}

fn print_task(server: &str, t: &Task, json: bool) -> Result<()> {
    if json {
        let mut v = t.to_json();
        v["server"] = json!(server);
        return out::json(&v);
    }
    let mut text = format!("{}\t{}", t.id, t.status.as_str());
    if let Some(m) = &t.message {
        text.push('\t');
        text.push_str(m);
    }
    text.push('\n');
    out::print_untrusted(&text)
}

pub(crate) fn run(
    ctx: &Context,
    exec: &Executor,
    sub: Sub,
    server: &str,
    id: Option<&str>,
    json: bool,
) -> Result<()> {
    let lookup = &crate::sys::lookup;
    let url = ctx.url(server);
    if let Some(id) = id {
        tasks::check_id(id)
            .map_err(|why| Error::usage(format!("TASK_ID: {why}")))?;
    }
    let recorded = match (&url, id) {
        (Some(u), Some(id)) => task::recall(lookup, server, u, id)?,
        _ => None,
    };
    let resumed = recorded.is_some();
    let stdio = ctx.transport_name(server) == "stdio";
    let mut s = match (recorded, id) {
        (Some((session, v)), _) => ctx.resume(server, &session, v)?,
        // A stdio server's task lives in the server the daemon keeps
        // warm: that one (the daemon knows which holds the task), never a
        // new one.
        (None, Some(id)) if stdio => {
            match ctx.start_warm(server, Some(&task::fingerprint(id)))? {
                Ok(s) => s,
                Err(why) => {
                    return Err(Error::server(format!(
                        "a stdio server's tasks live in the server the \
                         daemon keeps warm, and {why}"
                    ))
                    .for_server(server));
                }
            }
        }
        (None, _) => ctx.start(server)?,
    };
    let mut ended = false;
    let r = act(&mut s, exec, sub, id, json, &mut ended);
    if ended && let (Some(u), Some(id)) = (&url, id) {
        task::forget(lookup, server, u, id);
    }
    if resumed && !ended {
        // The task runs on in this session: leave it to the server.
        s.detach();
    } else {
        s.close();
    }
    r
}

fn act(
    s: &mut Session,
    exec: &Executor,
    sub: Sub,
    id: Option<&str>,
    json: bool,
    ended: &mut bool,
) -> Result<()> {
    let server = s.name().to_string();
    let d =
        Deadline::new(format!("task of server '{server}'"), s.request_timeout);
    let Some(id) = id else {
        return list(s, &d, json);
    };
    journal::event(
        "task_requested",
        json!({"server": server, "task": task::fingerprint(id),
               "action": Sub::NAMES[sub as usize]}),
    );
    let started = Instant::now();
    let result = match sub {
        Sub::List => unreachable!("list takes no task id"),
        Sub::Get => {
            let t = task::get(s, id, &d)?;
            return print_task(&server, &t, json);
        }
        Sub::Cancel => {
            let t = task::cancel(s, id)?;
            *ended = true;
            return print_task(&server, &t, json);
        }
        Sub::Wait => {
            let t = task::get(s, id, &d)?;
            let limit = s.request_timeout;
            task::wait(s, t, limit)?
        }
        Sub::Result => task::result(s, id, &d)?,
    };
    *ended = true;
    let ms = started.elapsed().as_millis() as u64;
    let obs = exec.observe(&server, method::TASKS_RESULT, result, ms);
    let output = match json {
        true => crate::render::Output::Json,
        false => crate::render::Output::Auto,
    };
    super::call::show(&server, "task", "task", &obs, None, output)
}

/// `task list SERVER`: every page of `tasks/list`, bounded.
fn list(s: &mut Session, d: &Deadline, json: bool) -> Result<()> {
    let server = s.name().to_string();
    let mut all: Vec<Task> = vec![];
    let mut cursor: Option<String> = None;
    for _ in 0..crate::session::MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = s.task_request(method::TASKS_LIST, params, d)?;
        let (page, next) = tasks::list_page(&r).map_err(|why| {
            Error::server(format!("{}: {why}", method::TASKS_LIST))
                .for_server(&server)
        })?;
        all.extend(page);
        if all.len() >= crate::session::MAX_ITEMS
            || next.is_none()
            || next == cursor
        {
            break;
        }
        cursor = next;
    }
    if json {
        let items: Vec<_> = all.iter().map(Task::to_json).collect();
        return out::json(&json!({"server": server, "tasks": items}));
    }
    for t in &all {
        print_task(&server, t, false)?;
    }
    Ok(())
}
