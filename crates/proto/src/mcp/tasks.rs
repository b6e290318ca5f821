//! Tasks: a long-running request answered with a task to poll instead of
//! its result. Two shapes reach this client and both end up as one
//! [`Task`]: the 2025-11-25 experimental tasks (the request carries
//! `task: {ttl}`, the answer is `{task: {taskId, status, pollInterval,
//! ttl, statusMessage}}`, the result comes from `tasks/result`, and what
//! the server asks meanwhile arrives as requests while `tasks/result`
//! waits) and the extension `io.modelcontextprotocol/tasks` (SEP-2663,
//! 2026-07-28: `resultType: "task"`, `pollIntervalMs`, `input_required`
//! answered with `tasks/update`). A task id is a capability: whoever
//! holds it may collect or cancel the work, so it is kept out of
//! anything but what the operator asked for.

use serde_json::{Map, Value, json};

use crate::term;

/// The extension's identifier (declared in the 2026-07-28 capabilities).
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The `_meta` key a server's request carries when it belongs to a task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The longest task id accepted (it is echoed back and put in a header).
pub const MAX_ID: usize = 256;

/// Where a task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Running (`working`; the 2025 `submitted` too).
    Working,
    /// Waiting for the client's answer.
    InputRequired,
    /// Done: the result can be collected.
    Completed,
    /// Ended in failure.
    Failed,
    /// Cancelled.
    Cancelled,
}

impl Status {
    /// The status a server names, in either shape.
    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "working" | "submitted" => Status::Working,
            "input_required" => Status::InputRequired,
            "completed" => Status::Completed,
            "failed" => Status::Failed,
            "cancelled" => Status::Cancelled,
            _ => return None,
        })
    }

    /// The status's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// Whether the task will not change any more.
    pub fn terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// A task as a server described it (untrusted; every field checked).
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// The task's id (a capability: never journaled in the clear).
    pub id: String,
    /// Where it is.
    pub status: Status,
    /// The server's message about where it is, one line, clipped.
    pub message: Option<String>,
    /// How long the server keeps it, in milliseconds.
    pub ttl_ms: Option<u64>,
    /// How often the server asks to be polled, in milliseconds.
    pub poll_ms: Option<u64>,
}

impl Task {
    /// The task as JSON for `--json`: id, status, message, ttl, interval.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("taskId".into(), json!(self.id));
        m.insert("status".into(), json!(self.status.as_str()));
        if let Some(s) = &self.message {
            m.insert("statusMessage".into(), json!(s));
        }
        if let Some(t) = self.ttl_ms {
            m.insert("ttlMs".into(), json!(t));
        }
        if let Some(p) = self.poll_ms {
            m.insert("pollIntervalMs".into(), json!(p));
        }
        Value::Object(m)
    }
}

/// Whether a result is a task instead of the result itself; `None` when
/// it is not, `Some(Err)` when it claims to be one and is malformed.
pub fn created(result: &Value) -> Option<Result<Task, String>> {
    let modern =
        result.get("resultType").and_then(Value::as_str) == Some("task");
    let inner = result.get("task").filter(|t| t.is_object());
    match (modern, inner) {
        (_, Some(t)) => Some(parse(t)),
        (true, None) => Some(parse(result)),
        (false, None) => None,
    }
}

/// The task a `tasks/get` (or `tasks/cancel`) result describes: its
/// fields at the top level, or under `task`.
pub fn from_result(result: &Value) -> Result<Task, String> {
    match result.get("task").filter(|t| t.is_object()) {
        Some(t) => parse(t),
        None => parse(result),
    }
}

/// Reads one task object.
pub fn parse(v: &Value) -> Result<Task, String> {
    let id = match v.get("taskId") {
        Some(Value::String(s)) => s,
        Some(_) => return Err("'taskId' is not a string".into()),
        None => return Err("a task without 'taskId'".into()),
    };
    check_id(id)?;
    let status = match v.get("status").and_then(Value::as_str) {
        Some(s) => Status::parse(s).ok_or_else(|| {
            format!("unknown task status '{}'", term::clip(&term::line(s), 40))
        })?,
        None => return Err("a task without 'status'".into()),
    };
    let message = v
        .get("statusMessage")
        .and_then(Value::as_str)
        .map(|s| term::clip(&term::line(s), 300).into_owned());
    let ms = |k: &str| v.get(k).and_then(Value::as_u64);
    Ok(Task {
        id: id.clone(),
        status,
        message,
        ttl_ms: ms("ttlMs").or_else(|| ms("ttl")),
        poll_ms: ms("pollIntervalMs").or_else(|| ms("pollInterval")),
    })
}

/// A task id as the operator or a server gave it: printable ASCII with
/// no space, bounded (it goes into a header and back on the wire).
pub fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > MAX_ID {
        return Err(format!("a task id must be 1 to {MAX_ID} characters"));
    }
    if !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err("a task id must be printable ASCII without spaces".into());
    }
    Ok(())
}

/// The params of `tasks/get`, `tasks/result` and `tasks/cancel`.
pub fn params(id: &str) -> Value {
    json!({"taskId": id})
}

/// The params of `tasks/update`: the answers to what the task asked.
pub fn update_params(id: &str, responses: Map<String, Value>) -> Value {
    json!({"taskId": id, "inputResponses": responses})
}

/// Declares the extension in a 2026-07-28 request's client capabilities
/// (`_meta`, already filled in).
pub fn declare(params: &mut Value) {
    super::declare_extension(params, EXTENSION);
}

/// What a request carries to ask for a task (`ttl_ms`: how long the
/// server should keep it).
pub fn request_task(params: &mut Value, ttl_ms: u64) {
    if let Value::Object(p) = params {
        p.insert("task".into(), json!({"ttl": ttl_ms}));
    }
}

/// Whether a tool definition says it must run as a task
/// (`execution.taskSupport: "required"`).
pub fn required_by(tool: &Value) -> bool {
    tool.pointer("/execution/taskSupport").and_then(Value::as_str)
        == Some("required")
}

/// Whether a tool may run as a task (`optional` or `required`).
pub fn supported_by(tool: &Value) -> bool {
    matches!(
        tool.pointer("/execution/taskSupport").and_then(Value::as_str),
        Some("optional" | "required")
    )
}

/// The page of `tasks/list`: the tasks and the next cursor.
pub fn list_page(
    result: &Value,
) -> Result<(Vec<Task>, Option<String>), String> {
    let items = match result.get("tasks") {
        Some(Value::Array(a)) => a,
        _ => return Err("'tasks' is not an array".into()),
    };
    let tasks = items.iter().map(parse).collect::<Result<Vec<_>, String>>()?;
    let next =
        result.get("nextCursor").and_then(Value::as_str).map(str::to_string);
    Ok((tasks, next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_2025_shape_is_a_task() {
        let r = json!({"task": {"taskId": "t-1", "status": "working",
            "ttl": 300000, "pollInterval": 1000,
            "createdAt": "2026-01-01T00:00:00Z"}});
        let t = created(&r).unwrap().unwrap();
        assert_eq!(t.id, "t-1");
        assert_eq!(t.status, Status::Working);
        assert_eq!(t.ttl_ms, Some(300000));
        assert_eq!(t.poll_ms, Some(1000));
    }

    #[test]
    fn the_2026_shape_is_a_task() {
        let r = json!({"resultType": "task", "taskId": "a",
            "status": "input_required", "pollIntervalMs": 250,
            "ttlMs": 60000, "statusMessage": "need\u{1b}[31m input"});
        let t = created(&r).unwrap().unwrap();
        assert_eq!(t.status, Status::InputRequired);
        assert_eq!(t.poll_ms, Some(250));
        assert!(!t.message.unwrap().contains('\u{1b}'));
    }

    #[test]
    fn a_plain_result_is_not_a_task() {
        assert!(created(&json!({"content": []})).is_none());
        assert!(created(&json!({"task": "x"})).is_none());
    }

    #[test]
    fn malformed_tasks_are_refused() {
        for bad in [
            json!({"resultType": "task"}),
            json!({"task": {"taskId": 1, "status": "working"}}),
            json!({"task": {"taskId": "a b", "status": "working"}}),
            json!({"task": {"taskId": "", "status": "working"}}),
            json!({"task": {"taskId": "a", "status": "sleeping"}}),
            json!({"task": {"taskId": "a"}}),
            json!({"task": {"taskId": "x".repeat(MAX_ID + 1),
                            "status": "working"}}),
        ] {
            assert!(created(&bad).unwrap().is_err(), "{bad}");
        }
    }

    #[test]
    fn statuses_are_terminal_or_not() {
        assert!(Status::Completed.terminal());
        assert!(Status::Failed.terminal());
        assert!(Status::Cancelled.terminal());
        assert!(!Status::Working.terminal());
        assert!(!Status::InputRequired.terminal());
    }

    #[test]
    fn a_tool_requires_or_supports_tasks() {
        let t = json!({"execution": {"taskSupport": "required"}});
        assert!(required_by(&t) && supported_by(&t));
        let o = json!({"execution": {"taskSupport": "optional"}});
        assert!(!required_by(&o) && supported_by(&o));
        assert!(!supported_by(&json!({})));
    }

    #[test]
    fn the_request_asks_for_a_task() {
        let mut p = json!({"name": "x", "arguments": {}});
        request_task(&mut p, 5000);
        assert_eq!(p["task"], json!({"ttl": 5000}));
    }

    #[test]
    fn the_extension_is_declared_in_the_meta() {
        let mut p = json!({"_meta": {super::super::meta::CLIENT_CAPABILITIES:
                                     {"roots": {}}}});
        declare(&mut p);
        let c = &p["_meta"][super::super::meta::CLIENT_CAPABILITIES];
        assert_eq!(c["extensions"][EXTENSION], json!({}));
        assert_eq!(c["roots"], json!({}));
    }

    #[test]
    fn list_pages_are_read() {
        let r = json!({"tasks": [{"taskId": "a", "status": "completed"}],
                       "nextCursor": "c"});
        let (t, n) = list_page(&r).unwrap();
        assert_eq!(t[0].status, Status::Completed);
        assert_eq!(n.as_deref(), Some("c"));
        assert!(list_page(&json!({})).is_err());
    }
}
