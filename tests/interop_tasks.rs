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
use crate::util::interop::{ServerProcess, Turn, installed};
use crate::util::{assert_absent, assert_contains, write_mcp_json};

/// A task of server-everything takes 4 stages of 1 s.
const TASK_LIMIT: Duration = Duration::from_secs(20);

/// Starts `cmd`, sends it SIGINT after `ms` and checks that it ended
/// with 130.
fn interrupt_after(cmd: crate::util::TestCommand, ms: u64) {
    let child = cmd.spawn();
    std::thread::sleep(Duration::from_millis(ms));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let waited = child.wait_with_output().unwrap();
    assert_eq!(waited.status.code(), Some(130), "{waited:?}");
}

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

    // batch runs a tool that requires a task as one, with the line's
    // answers.
    let line = r#"{"id":1,"server":"ev","tool":"simulate-research-query","arguments":{"topic":"python","ambiguous":true},"answers":{"interpretation":"comedy"}}"#;
    let mut cmd = turn.command("ev", &["batch", "--yes"]);
    cmd.stdin(format!("{line}\n"));
    let out = turn.run_within(&cmd, &["batch"], 0, TASK_LIMIT, String::new);
    assert_contains(&out.stdout, "\"ok\":true");
    assert_contains(&out.stdout, "# Research Report: python (comedy)");

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
    interrupt_after(turn.command("ev", &["task", "wait", "ev", &id]), 1500);
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

/// The fastmcp-tasks fixture (a real SEP-2663 server on the 2026-07-28
/// wire) and its Python.
const TASKS_PY: &str = ".interop/tasks-venv/bin/python";
const TASKS_SERVER: &str = "fixtures/tasks/fastmcp_tasks_server.py";

/// SEP-2663 (`io.modelcontextprotocol/tasks`, 2026-07-28) against
/// fastmcp-tasks 4.1.4: over stdio a task waited for and one whose
/// `input_required` is answered with `--answer` through `tasks/update`;
/// over HTTP (stateless: nothing is recorded) detached, looked at and
/// collected from other invocations, and cancelled by Ctrl-C while
/// `task wait` polls.
#[test]
fn interop_tasks_sep2663_with_fastmcp_tasks() {
    let test = "interop_tasks_sep2663_with_fastmcp_tasks";
    let Some(_) = installed(test, &[TASKS_PY, TASKS_SERVER]) else {
        return;
    };
    let root = crate::util::repo_root();
    let (py, server) = (root.join(TASKS_PY), root.join(TASKS_SERVER));
    let turn = Turn::take("interop", test);
    write_mcp_json(
        &turn.dir,
        &[(
            "ft",
            json!({"command": py, "args": [server, turn.marker],
                   "protocol": "modern"}),
        )],
    );
    let run = |args: &[&str], code: i32| {
        let cmd = turn.command("ft", args);
        turn.run_within(&cmd, args, code, TASK_LIMIT, String::new)
    };
    let out = run(&["call", "ft", "slow", "topic=x", "-y", "--task"], 0);
    assert_eq!(out.stdout.trim(), "report on x");
    assert_contains(&out.stderr, "task completed");
    let out = run(
        &["call", "ft", "ask", "-y", "--task", "--answer", "colour=blue"],
        0,
    );
    assert_eq!(out.stdout.trim(), "colour: blue");
    assert_contains(&out.stderr, "task input_required");

    // Over HTTP, from other invocations.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cmd = turn.dir.program(&py);
    cmd.arg(&server)
        .args(["--http", &port.to_string(), "--seconds", "3"])
        .arg(&turn.marker);
    let mut process =
        ServerProcess::spawn(&cmd, &turn.marker, "fastmcp-tasks");
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "fastmcp-tasks did not listen: {}",
            process.stderr()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let url = format!("http://127.0.0.1:{port}/mcp");
    write_mcp_json(
        &turn.dir,
        &[("ft", json!({"url": url, "protocol": "modern"}))],
    );
    let detach = || {
        let out = run(
            &[
                "call",
                "ft",
                "slow",
                "topic=y",
                "-y",
                "--detach",
                "--json",
                "--journal",
                "j.jsonl",
            ],
            0,
        );
        let v = out.stdout_json();
        assert_eq!(v["server"], json!("ft"));
        v["taskId"].as_str().unwrap().to_string()
    };
    let id = detach();
    let out = run(&["task", "get", "ft", &id], 0);
    assert_contains(&out.stdout, "\tworking");
    let out = run(&["task", "wait", "ft", &id, "--journal", "j.jsonl"], 0);
    assert_eq!(out.stdout.trim(), "report on y");
    let journal = std::fs::read_to_string(turn.dir.path("j.jsonl")).unwrap();
    assert_contains(&journal, "\"event\":\"task_created\"");
    assert_absent(&journal, &id);

    let id = detach();
    interrupt_after(turn.command("ft", &["task", "wait", "ft", &id]), 1000);
    let out = run(&["task", "get", "ft", &id], 0);
    assert_contains(&out.stdout, "\tcancelled");
    process.stop("the server's process group was killed");
}
