//! Tasks against a real server: server-everything's
//! `simulate-research-query` (the 2025-11-25 experimental tasks: it
//! requires task execution, moves through `working` and, when the topic is
//! ambiguous, `input_required`, and delivers its elicitation through
//! `tasks/result`).
//!
//! Over stdio: `call` waits for the task (the tool requires it), answering
//! the elicitation with `--answer`; `--detach` is refused (the server ends
//! with the invocation). Over Streamable HTTP: `call --detach` prints the
//! server and the task id and exits; `task get` and `task result` collect
//! it from other invocations (the session was left open and recorded);
//! `task wait` interrupted by SIGINT cancels the task on the server (a
//! later `task get` says `cancelled`); `--timeout` cancels too. The task id
//! never appears in the journal.
//!
//! The conventions are those of `interop.rs` and `interop_http.rs`.

use std::time::Duration;

use serde_json::json;

use crate::interop_http::{HttpServer, Kind, LOOPBACK_ONLY};
use crate::util::interop::{Turn, installed};
use crate::util::{assert_absent, assert_contains, write_mcp_json};

/// A task of server-everything takes 4 stages of 1 s.
const TASK_LIMIT: Duration = Duration::from_secs(20);

#[test]
fn interop_tasks_stdio_wait_and_answer() {
    let Some(s) = installed("interop_tasks_stdio_wait_and_answer", &[]) else {
        return;
    };
    let turn = Turn::take("interop", "interop_tasks_stdio_wait_and_answer");
    write_mcp_json(
        &turn.dir,
        &[(
            "ev",
            json!({"command": s.node,
                   "args": [s.everything_js, "stdio", turn.marker]}),
        )],
    );
    let args = [
        "call",
        "ev",
        "simulate-research-query",
        "topic=python",
        "ambiguous:=true",
        "-y",
        "--answer",
        "interpretation=snake",
        "--journal",
        "j.jsonl",
    ];
    let cmd = turn.command("ev", &args);
    let out = turn.run_within(&cmd, &args, 0, TASK_LIMIT, String::new);
    // The answer went through tasks/result's elicitation.
    assert_contains(&out.stdout, "# Research Report: python (snake)");
    assert_contains(&out.stderr, "task working: Gathering sources...");
    assert_contains(&out.stderr, "task input_required:");
    let journal = std::fs::read_to_string(turn.dir.path("j.jsonl")).unwrap();
    assert_contains(&journal, "\"event\":\"task_created\"");
    assert_contains(&journal, "\"status\":\"input_required\"");

    // A one-shot stdio server cannot keep a detached task.
    let (out, _) = turn.run(
        "ev",
        &[
            "call",
            "ev",
            "simulate-research-query",
            "topic=x",
            "-y",
            "--detach",
        ],
        2,
        String::new,
    );
    assert_contains(&out.stderr, "--detach needs a server that outlives");
    assert_eq!(out.stdout, "");
}

#[test]
fn interop_tasks_http_detach_collect_cancel() {
    let test = "interop_tasks_http_detach_collect_cancel";
    let Some(s) = installed(test, &[LOOPBACK_ONLY]) else {
        return;
    };
    let turn = Turn::take("interop_http", test);
    let mut server =
        HttpServer::start(&s, &turn.dir, Kind::Everything, 0, &turn.marker);
    write_mcp_json(&turn.dir, &[("ev", json!({"url": server.url()}))]);
    let store = turn.dir.path(".home/.config/rivumi-mcp/tasks");
    let run = |args: &[&str], code: i32| {
        let cmd = turn.command("ev", args);
        turn.run_within(&cmd, args, code, TASK_LIMIT, || {
            format!("\n--- server stderr ---\n{}", server.process.stderr())
        })
    };
    let detach = || {
        let out = run(
            &[
                "call",
                "ev",
                "simulate-research-query",
                "topic=python",
                "ambiguous:=true",
                "-y",
                "--detach",
                "--journal",
                "j.jsonl",
            ],
            0,
        );
        let line = out.stdout.trim().to_string();
        let id = line.strip_prefix("ev ").expect(&line).to_string();
        assert!(!id.is_empty() && !id.contains(' '), "{line}");
        id
    };

    // Detached, then looked at and collected from other invocations.
    let id = detach();
    let records = std::fs::read_dir(&store).unwrap().count();
    assert_eq!(records, 1, "the session was recorded");
    let out = run(&["task", "get", "ev", &id, "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(v["taskId"], json!(id));
    assert_eq!(v["server"], json!("ev"));
    assert!(
        ["working", "input_required"].contains(&v["status"].as_str().unwrap()),
        "{v}"
    );
    let out = run(
        &[
            "task",
            "result",
            "ev",
            &id,
            "--answer",
            "interpretation=comedy",
            "--journal",
            "j.jsonl",
        ],
        0,
    );
    assert_contains(&out.stdout, "# Research Report: python (comedy)");
    assert_eq!(std::fs::read_dir(&store).unwrap().count(), 0, "forgotten");
    let journal = std::fs::read_to_string(turn.dir.path("j.jsonl")).unwrap();
    assert_contains(&journal, "\"event\":\"task_created\"");
    assert_contains(&journal, "\"event\":\"task_requested\"");
    assert_absent(&journal, &id);

    // Ctrl-C while waiting cancels the task on the server.
    let id = detach();
    let child = turn.command("ev", &["task", "wait", "ev", &id]).spawn();
    std::thread::sleep(Duration::from_millis(1500));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let waited = child.wait_with_output().unwrap();
    assert_eq!(waited.status.code(), Some(130), "{waited:?}");
    let out = run(&["task", "get", "ev", &id], 0);
    assert_contains(&out.stdout, "\tcancelled");

    // The deadline cancels a task it waits for.
    let out = run(
        &[
            "call",
            "ev",
            "simulate-research-query",
            "topic=x",
            "-y",
            "--timeout",
            "1.5",
            "--journal",
            "t.jsonl",
        ],
        5,
    );
    assert_contains(&out.stderr, "timed out after 1.5s waiting for task");
    let journal = std::fs::read_to_string(turn.dir.path("t.jsonl")).unwrap();
    assert_contains(&journal, "\"event\":\"task_cancel\"");

    // A malformed id is a usage error, before anything starts.
    run(&["task", "get", "ev", "a\u{1b}b"], 2);
    server.stop();
}
