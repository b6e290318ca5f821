//! The stdio transport against the scripted fixture server: deadlines,
//! dying and misbehaving servers, size caps, signals, protocol versions,
//! server-to-client traffic, the child's environment and working
//! directory. Every case that starts a server checks through `/proc` that
//! no process of it (or of its grandchild) is left once the command
//! returns.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{
    ALLOWLIST, Dir, Output, TestCommand, assert_absent, assert_contains,
    assert_pids_gone, bin, demo_with_pids, fixture_bin, fixture_server,
    read_pids, run_allowed, wait_with_timeout, write_mcp_json,
};

/// How long processes may linger after the command returned.
const GONE: Duration = Duration::from_secs(1);

/// `rivumi-mcp ARGS` in `dir` with only `demo` allowed.
fn run(dir: &Dir, args: &[&str]) -> TestCommand {
    run_allowed(dir, "demo", args)
}

/// Polls `done` every 5 ms for up to 10 s.
#[track_caller]
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(10), "never: {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

/// The rows of a tool listing that follow the header line.
fn tool_rows(out: &Output) -> Vec<&str> {
    out.stdout.lines().filter(|l| l.starts_with("  mcp__")).collect()
}

/// The messages a `--record` file holds.
fn recorded(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("recorded JSON"))
        .collect()
}

// ---------------------------------------------------------------------------
// Deadlines
// ---------------------------------------------------------------------------

#[test]
fn hang_at_initialize_hits_the_startup_timeout() {
    let (dir, pids) = demo_with_pids("stdio_hang_init", &["--hang-init"]);
    let out = run(&dir, &["list", "--startup-timeout", "1"]).assert_exit(5);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': timed out after 1s waiting for \
         initialize\n"
    );
    assert_pids_gone(&pids, GONE);
}

#[test]
fn hang_in_tool_call_hits_the_request_timeout() {
    let (dir, pids) = demo_with_pids("stdio_hang_call", &["--hang-call"]);
    let out = run(
        &dir,
        &["call", "-y", "demo", "echo", "text=hi", "--timeout", "1"],
    )
    .assert_exit(5);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': timed out after 1s waiting for tool \
         call 'echo'\n"
    );
    assert_pids_gone(&pids, GONE);
}

// ---------------------------------------------------------------------------
// Servers that die or never start
// ---------------------------------------------------------------------------

#[test]
fn crash_at_initialize_reports_exit_status_and_stderr_tail() {
    let (dir, pids) = demo_with_pids("stdio_crash_init", &["--crash-at-init"]);
    let out = run(&dir, &["list"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': server exited (exit status: 3); last \
         lines of its stderr:\n    fatal: cannot start (fixture)\n"
    );
    assert_pids_gone(&pids, GONE);
}

#[test]
fn server_exiting_at_once_is_reported_with_its_stderr() {
    // `--exit-immediately` exits before writing the pid file; the exit
    // status in the message shows the process was reaped.
    let (dir, pids) =
        demo_with_pids("stdio_exit_now", &["--exit-immediately"]);
    let out =
        run(&dir, &["call", "-y", "demo", "echo", "text=hi"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': server exited (exit status: 1); last \
         lines of its stderr:\n    boom\n"
    );
    assert!(!pids.exists());
}

#[test]
fn missing_command_is_reported_as_not_found() {
    let dir = Dir::new("stdio_missing_command");
    let absent = dir.path("no-such-server");
    let absent = absent.to_str().unwrap();
    for command in [absent, "rivumi-mcp-no-such-server"] {
        write_mcp_json(&dir, &[("demo", json!({"command": command}))]);
        let out = run(&dir, &["list"]).assert_exit(4);
        assert_eq!(out.stdout, "");
        let prefix =
            format!("rivumi-mcp: server 'demo': cannot start '{command}': ");
        assert!(out.stderr.starts_with(&prefix), "{}", out.stderr);
        assert!(
            out.stderr.ends_with(
                " (not found; the command runs without a shell, on PATH)\n"
            ),
            "{}",
            out.stderr
        );
        assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    }
}

// ---------------------------------------------------------------------------
// What comes out of the server's stdout and stderr
// ---------------------------------------------------------------------------

#[test]
fn non_json_line_on_stdout_is_skipped_with_one_warning() {
    let (dir, pids) = demo_with_pids("stdio_garbage", &["--garbage"]);
    let out = run(&dir, &["list"]).assert_exit(0);
    assert_contains(&out.stdout, "mcp__demo__echo");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: warning: server 'demo': skipped a line that is not JSON \
         on stdout: 'Listening on stdio...' (stdout is reserved for \
         JSON-RPC; logs belong on stderr)\n"
    );
    assert_pids_gone(&pids, GONE);
    // -q hides the warning; the listing is the same.
    let quiet = run(&dir, &["list", "-q"]).assert_exit(0);
    assert_eq!(quiet.stderr, "");
    assert_eq!(quiet.stdout, out.stdout);
}

#[test]
fn non_json_lines_are_counted_under_verbose_and_warned_once() {
    let (dir, _pids) =
        demo_with_pids("stdio_garbage_lines", &["--garbage-lines", "100"]);
    let out = run(&dir, &["list"]).assert_exit(0);
    assert_contains(&out.stdout, "mcp__demo__echo");
    assert_eq!(out.stderr.matches("warning").count(), 1, "{}", out.stderr);
    assert_contains(&out.stderr, "'log line 1'");
    let out = run(&dir, &["list", "-v"]).assert_exit(0);
    assert_contains(
        &out.stderr,
        "server 'demo': 100 lines that are not JSON skipped on stdout",
    );
}

#[test]
fn more_than_100_non_json_lines_break_the_server() {
    let (dir, pids) =
        demo_with_pids("stdio_garbage_101", &["--garbage-lines", "101"]);
    let out = run(&dir, &["list"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    assert_contains(
        &out.stderr,
        "rivumi-mcp: server 'demo': server wrote 101 lines that are not JSON \
         on stdout (",
    );
    assert_contains(&out.stderr, "the limit is 100 lines or 65536 bytes");
    assert_contains(&out.stderr, "the last: 'log line 101'");
    assert_pids_gone(&pids, GONE);
}

#[test]
fn more_than_64_kib_of_non_json_breaks_the_server() {
    // One line of 70000 bytes: past the byte bound at once.
    let (dir, pids) =
        demo_with_pids("stdio_garbage_bytes", &["--huge-line", "70000"]);
    let out = run(&dir, &["list"]).assert_exit(4);
    assert!(
        out.stderr.starts_with(
            "rivumi-mcp: server 'demo': server wrote a line that is not \
             JSON on stdout: 'aaaa"
        ),
        "{}",
        out.stderr
    );
    assert_pids_gone(&pids, GONE);
}

#[test]
fn line_longer_than_the_default_cap_is_refused() {
    let (dir, pids) =
        demo_with_pids("stdio_huge_line", &["--huge-line", "20000000"]);
    let out = run(&dir, &["list"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': server wrote a line longer than \
         16777216 bytes on stdout (raise --max-message if this is \
         expected)\n"
    );
    assert_pids_gone(&pids, GONE);
}

#[test]
fn max_message_raises_the_line_cap() {
    // The fixture's huge line is 20 MB of 'a': under a 32 MiB cap it is
    // read whole, and then refused for what it is (not JSON), not for
    // its length.
    let (dir, pids) =
        demo_with_pids("stdio_huge_line_32m", &["--huge-line", "20000000"]);
    let out = run(&dir, &["list", "--max-message", "32M"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr.starts_with(
            "rivumi-mcp: server 'demo': server wrote a line that is not \
             JSON on stdout: 'aaaa"
        ),
        "{}",
        out.stderr
    );
    assert_contains(&out.stderr, "[19999880 more bytes]");
    assert_absent(&out.stderr, "longer than");
    assert_pids_gone(&pids, GONE);
}

#[test]
fn stderr_flood_is_drained_promptly_in_bounded_memory() {
    // 50 MB of stderr while the server waits half a second before
    // reading: a client that kept it would grow by that much.
    let (dir, pids) = demo_with_pids(
        "stdio_stderr_flood",
        &["--stderr-flood", "50000000", "--slow-start", "500"],
    );
    let time = Path::new("/usr/bin/time");
    let rss = dir.path("maxrss");
    let mut cmd = if time.exists() {
        let mut cmd = dir.program(time);
        cmd.arg("-o").arg(&rss).args(["-f", "%M"]).arg(bin()).arg("list");
        cmd
    } else {
        eprintln!("note: no /usr/bin/time; memory of the flood not measured");
        dir.command(["list"])
    };
    cmd.env(ALLOWLIST, "demo");
    let start = Instant::now();
    let out = cmd.assert_exit(0);
    let took = start.elapsed();
    assert_eq!(tool_rows(&out).len(), 14, "{}", out.stdout);
    assert_eq!(out.stderr, "");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    if time.exists() {
        let text = std::fs::read_to_string(&rss).unwrap();
        let kib: u64 = text.trim().parse().expect("a KiB count");
        assert!(kib < 30 * 1024, "max RSS {kib} KiB");
    }
    assert_pids_gone(&pids, GONE);
}

#[test]
fn verbose_shows_server_stderr_and_log_notifications() {
    let (dir, _) = demo_with_pids(
        "stdio_verbose",
        &["--stderr-flood", "200", "--slow-start", "200"],
    );
    let out = run(&dir, &["call", "-y", "demo", "log_and_notify", "-v"])
        .assert_exit(0);
    assert_eq!(out.stdout, "notified\n");
    assert_contains(
        &out.stderr,
        "\n[demo] fixture: stderr flood line 00000001 \
         ----------------------------------------\n",
    );
    assert_contains(&out.stderr, "\n[demo] info: hello from fixture\n");
    // Without -v, neither is shown.
    let out =
        run(&dir, &["call", "-y", "demo", "log_and_notify"]).assert_exit(0);
    assert_eq!(out.stdout, "notified\n");
    assert_eq!(out.stderr, "");
}

// ---------------------------------------------------------------------------
// Leftover processes and signals
// ---------------------------------------------------------------------------

#[test]
fn grandchild_is_gone_after_a_call_timeout() {
    let (dir, pids) =
        demo_with_pids("stdio_grandchild", &["--hang-call", "--grandchild"]);
    let out = run(
        &dir,
        &["call", "-y", "demo", "echo", "text=hi", "--timeout", "1"],
    )
    .assert_exit(5);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': timed out after 1s waiting for tool \
         call 'echo'\n"
    );
    assert_eq!(read_pids(&pids).len(), 2, "server and grandchild");
    assert_pids_gone(&pids, GONE);
}

#[test]
fn server_ignoring_sigterm_is_killed() {
    let (dir, pids) = demo_with_pids(
        "stdio_ignore_sigterm",
        &["--hang-call", "--ignore-sigterm", "--grandchild"],
    );
    let out = run(
        &dir,
        &["call", "-y", "demo", "echo", "text=hi", "--timeout", "1", "-v"],
    )
    .assert_exit(5);
    assert_contains(
        &out.stderr,
        "rivumi-mcp: server 'demo': closed (sigkill)\n",
    );
    assert!(out.stderr.ends_with(
        "rivumi-mcp: server 'demo': timed out after 1s waiting for tool \
         call 'echo'\n"
    ));
    assert_eq!(read_pids(&pids).len(), 2);
    assert_pids_gone(&pids, GONE);
}

#[test]
fn server_starts_with_no_signals_blocked() {
    // rivumi-mcp blocks SIGINT/SIGTERM/SIGHUP for its signal thread; the
    // server must not inherit that mask, or SIGTERM cannot end it.
    let (dir, pids) = demo_with_pids("stdio_sigmask", &["--hang-call"]);
    let cmd = run(
        &dir,
        &["call", "-y", "demo", "echo", "text=hi", "--timeout", "1"],
    );
    let child = cmd.spawn();
    wait_until("the pid file is written", || !read_pids(&pids).is_empty());
    let pid = read_pids(&pids)[0];
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("the server is running");
    let blocked = status
        .lines()
        .find_map(|l| l.strip_prefix("SigBlk:"))
        .expect("a SigBlk line")
        .trim()
        .to_string();
    let out = wait_with_timeout(child, &cmd);
    assert_eq!(out.code, Some(5), "{}", cmd.report(&out));
    assert_pids_gone(&pids, GONE);
    assert_eq!(blocked, "0000000000000000", "signals blocked in the server");
}

#[test]
fn hung_server_is_ended_by_sigterm_before_sigkill() {
    // The fixture does not handle SIGTERM, so the default action ends it:
    // SIGKILL must not be needed (and its extra grace not spent).
    let (dir, pids) = demo_with_pids("stdio_sigterm_close", &["--hang-call"]);
    let start = Instant::now();
    let out = run(
        &dir,
        &["call", "-y", "demo", "echo", "text=hi", "--timeout", "1", "-v"],
    )
    .assert_exit(5);
    let took = start.elapsed();
    assert_pids_gone(&pids, GONE);
    assert_contains(
        &out.stderr,
        "rivumi-mcp: server 'demo': closed (sigterm)\n",
    );
    // 1 s deadline + 0.5 s grace after closing stdin + a prompt exit.
    assert!(took < Duration::from_millis(1900), "took {took:?}");
}

/// Starts `call` on a hanging server with a grandchild, sends `signal` to
/// rivumi-mcp once the call is in flight and checks the exit code, that
/// both processes are gone, and that the call was cancelled on the wire
/// first (`notifications/cancelled` with its id and a reason).
fn interrupt(test: &str, signal: &str, code: i32) -> Output {
    interrupt_with(test, signal, code, "--grandchild")
}

/// [`interrupt`] with the grandchild made by `grandchild`.
fn interrupt_with(
    test: &str,
    signal: &str,
    code: i32,
    grandchild: &str,
) -> Output {
    let dir = Dir::new(test);
    let pids = dir.path("pids");
    let rec = dir.path("rec");
    let pid_arg = format!("--pid-file={}", pids.display());
    let rec_arg = format!("--record={}", rec.display());
    let server =
        fixture_server(&["--hang-call", grandchild, &pid_arg, &rec_arg]);
    write_mcp_json(&dir, &[("demo", server)]);
    let cmd = run(&dir, &["call", "-y", "demo", "echo", "text=hi"]);
    let child = cmd.spawn();
    wait_until("the tool call reaches the server", || {
        recorded(&rec).iter().any(|m| m["method"] == "tools/call")
    });
    assert_eq!(read_pids(&pids).len(), 2);
    let pid = child.id().to_string();
    let killed = Command::new("kill").args([signal, &pid]).status().unwrap();
    assert!(killed.success());
    let out = wait_with_timeout(child, &cmd);
    assert_eq!(out.code, Some(code), "{}", cmd.report(&out));
    assert_eq!(out.stdout, "");
    assert_pids_gone(&pids, GONE);
    let got = recorded(&rec);
    let call = got.iter().find(|m| m["method"] == "tools/call").unwrap();
    let cancel = got
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .unwrap_or_else(|| panic!("no cancellation in {got:#?}"));
    assert_eq!(
        cancel["params"],
        json!({"requestId": call["id"], "reason": "interrupted"})
    );
    out
}

/// A helper that left the server's process group (`setpgid`) but not its
/// session ends with the server on a signal too (issue 22, item 15).
#[test]
fn sigterm_ends_a_helper_that_left_the_group() {
    let out = interrupt_with(
        "stdio_sigterm_own_group",
        "-TERM",
        143,
        "--grandchild-own-group",
    );
    assert!(out.stderr.ends_with("; closed 1 server(s)\n"));
}

#[test]
fn sigint_closes_the_server_and_exits_130() {
    let out = interrupt("stdio_sigint", "-INT", 130);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: interrupted by SIGINT; closed 1 server(s)\n"
    );
}

#[test]
fn sigterm_closes_the_server_and_exits_143() {
    let out = interrupt("stdio_sigterm", "-TERM", 143);
    assert!(out.stderr.starts_with("rivumi-mcp: interrupted by "));
    assert!(out.stderr.ends_with("; closed 1 server(s)\n"));
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
}

// ---------------------------------------------------------------------------
// Protocol
// ---------------------------------------------------------------------------

#[test]
fn unsupported_protocol_version_is_refused() {
    let (dir, pids) =
        demo_with_pids("stdio_protocol_old", &["--protocol", "1999-01-01"]);
    let out = run(&dir, &["list"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': server answered protocol version \
         '1999-01-01', which rivumi-mcp does not speak (it speaks \
         2025-11-25, 2025-06-18, 2025-03-26)\n"
    );
    assert_pids_gone(&pids, GONE);
}

#[test]
fn protocol_2025_03_26_is_spoken() {
    let (dir, pids) =
        demo_with_pids("stdio_protocol_0326", &["--protocol", "2025-03-26"]);
    let out = run(&dir, &["list"]).assert_exit(0);
    assert_eq!(
        out.stdout.lines().next(),
        Some("demo: rivumi-mcp-fixture 1.0.0 (protocol 2025-03-26)")
    );
    assert_eq!(tool_rows(&out).len(), 14);
    let out =
        run(&dir, &["call", "-y", "demo", "echo", "text=hi"]).assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert_pids_gone(&pids, GONE);
}

#[test]
fn batch_reply_is_refused_on_2025_11_25() {
    let (dir, pids) = demo_with_pids("stdio_batch", &["--batch-reply"]);
    let out = run(&dir, &["list"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': server sent a JSON-RPC batch, which \
         this protocol version does not allow\n"
    );
    assert_pids_gone(&pids, GONE);
}

#[test]
fn batch_reply_is_accepted_on_2025_03_26() {
    let (dir, pids) = demo_with_pids(
        "stdio_batch_0326",
        &["--batch-reply", "--protocol", "2025-03-26"],
    );
    let out = run(&dir, &["list"]).assert_exit(0);
    assert_eq!(tool_rows(&out).len(), 14);
    assert_eq!(out.stderr, "");
    assert_pids_gone(&pids, GONE);
}

#[test]
fn responses_with_wrong_ids_are_ignored() {
    let (dir, pids) = demo_with_pids("stdio_wrong_ids", &["--wrong-ids"]);
    let out =
        run(&dir, &["call", "-y", "demo", "add", "a=1", "b=2", "--json"])
            .assert_exit(0);
    assert_eq!(
        out.stdout_json(),
        json!({
            "content": [{"type": "text", "text": "3"}],
            "structuredContent": {"sum": 3},
        })
    );
    let out = run(&dir, &["list"]).assert_exit(0);
    assert_eq!(tool_rows(&out).len(), 14);
    assert_absent(&out.all(), "decoy");
    assert_pids_gone(&pids, GONE);
}

#[test]
fn server_requests_get_ping_answered_forms_declined_and_the_rest_refused() {
    let dir = Dir::new("stdio_server_requests");
    let rec = dir.path("rec");
    let rec_arg = format!("--record={}", rec.display());
    let server = fixture_server(&["--server-requests", &rec_arg]);
    write_mcp_json(&dir, &[("demo", server)]);
    let out = run(&dir, &["list"]).assert_exit(0);
    assert_eq!(tool_rows(&out).len(), 14);
    let responses: Vec<Value> = recorded(&rec)
        .into_iter()
        .filter(|m| m.get("method").is_none())
        .collect();
    assert_eq!(responses.len(), 5, "{responses:#?}");
    let by_id = |id: Value| {
        responses
            .iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no response to {id}: {responses:#?}"))
    };
    assert_eq!(
        by_id(json!("s1")),
        &json!({"jsonrpc": "2.0", "id": "s1",
        "result": {}})
    );
    // A form is declared (and declined: no terminal, no answers); roots
    // and sampling are not declared without --root and
    // --sampling-command. The integer id 5 comes back as 5, not "5".
    assert_eq!(by_id(json!("s4"))["result"], json!({"action": "decline"}));
    for id in [json!("s2"), json!("s3"), json!(5)] {
        let r = by_id(id.clone());
        assert_eq!(r["jsonrpc"], "2.0");
        assert_eq!(r["error"]["code"], -32601, "{r}");
        assert!(r.get("result").is_none(), "{r}");
    }
}

#[test]
fn notifications_do_not_disturb_requests() {
    let (dir, pids) = demo_with_pids("stdio_notify", &["--notify"]);
    let out =
        run(&dir, &["call", "-y", "demo", "echo", "text=hi"]).assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert_eq!(out.stderr, "");
    let out = run(&dir, &["list"]).assert_exit(0);
    assert_eq!(tool_rows(&out).len(), 14);
    assert_eq!(out.stderr, "");
    let out = run(&dir, &["list", "-v"]).assert_exit(0);
    assert_contains(&out.stderr, "\n[demo] info: log line\n");
    assert_pids_gone(&pids, GONE);
}

// ---------------------------------------------------------------------------
// The server's environment
// ---------------------------------------------------------------------------

/// A `demo` entry with `env` and `env_vars` (and a pid file).
fn env_demo(test: &str, env: Value, env_vars: Value) -> (Dir, PathBuf) {
    let dir = Dir::new(test);
    let pids = dir.path("pids");
    let pid_arg = format!("--pid-file={}", pids.display());
    let mut server = fixture_server(&[&pid_arg]);
    server["env"] = env;
    server["env_vars"] = env_vars;
    write_mcp_json(&dir, &[("demo", server)]);
    (dir, pids)
}

/// The environment the fixture's `env` tool reports.
fn server_env(out: &Output) -> serde_json::Map<String, Value> {
    match out.stdout_json() {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn server_gets_only_the_base_set_and_its_entry() {
    let (dir, _) = env_demo(
        "stdio_env",
        json!({"FROM_ENV": "${OUTER:-dflt}", "LIT": "x"}),
        json!(["PASSED"]),
    );
    let out = run(&dir, &["call", "-y", "demo", "env"])
        .env("PASSED", "passed-value")
        .env("OUTER", "outer-value")
        .env("SECRET_TOKEN", "s3cr3t")
        .env("RIVUMI_MCP_JOURNAL", "x")
        .env("TZ", "UTC")
        .env("TERM", "dumb")
        .assert_exit(0);
    let env = server_env(&out);
    let keys: Vec<&str> = env.keys().map(String::as_str).collect();
    // The harness sets PATH, HOME, LANG (and XDG_CONFIG_HOME, which is
    // not in the base set); TZ and TERM are added above.
    assert_eq!(
        keys,
        ["FROM_ENV", "HOME", "LANG", "LIT", "PASSED", "PATH", "TERM", "TZ"]
    );
    assert_eq!(env["FROM_ENV"], "outer-value");
    assert_eq!(env["LIT"], "x");
    assert_eq!(env["PASSED"], "passed-value");
    assert_eq!(env["LANG"], "C.UTF-8");
    assert_eq!(env["HOME"], dir.path(".home").to_str().unwrap());
    assert_eq!(env["PATH"], std::env::var("PATH").unwrap().as_str());
    assert_absent(&out.stdout, "s3cr3t");
    assert_absent(&out.stdout, "RIVUMI");
}

#[test]
fn env_default_applies_when_the_variable_is_unset() {
    let (dir, _) = env_demo(
        "stdio_env_default",
        json!({"FROM_ENV": "${OUTER:-dflt}", "LIT": "x"}),
        json!(["PASSED"]),
    );
    let out = run(&dir, &["call", "-y", "demo", "env"])
        .env("PASSED", "p")
        .assert_exit(0);
    assert_eq!(server_env(&out)["FROM_ENV"], "dflt");
}

#[test]
fn unset_variable_in_env_refuses_before_spawning() {
    let (dir, pids) = env_demo(
        "stdio_env_missing",
        json!({"NEEDS": "${MISSING}"}),
        json!([]),
    );
    let out = run(&dir, &["call", "-y", "demo", "env"]).assert_exit(3);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': env 'NEEDS': environment variable \
         'MISSING' is not set\n"
    );
    assert!(!pids.exists(), "the server was spawned");
}

#[test]
fn unset_env_vars_entry_is_skipped_not_refused() {
    let (dir, _pids) =
        env_demo("stdio_env_vars_unset", json!({}), json!(["PASSED"]));
    let out = run(&dir, &["call", "-y", "demo", "env"]).assert_exit(0);
    let env = server_env(&out);
    assert!(!env.contains_key("PASSED"), "{env:?}");
    assert_eq!(out.stderr, "");
    // check-config says so, as a warning (the file stays valid).
    let out = dir.command(["check-config"]).assert_exit(0);
    assert_contains(
        &out.stdout,
        "warning: server 'demo': environment variable 'PASSED' is not set; \
         it is skipped (not passed to the server) [/mcpServers/demo/env_vars/0]",
    );
}

// ---------------------------------------------------------------------------
// The server's working directory
// ---------------------------------------------------------------------------

#[test]
fn relative_cwd_resolves_against_the_config_directory() {
    let dir = Dir::new("stdio_cwd");
    let work = dir.create_dir("conf/work");
    // sh notes where it runs, then becomes the fixture ($0).
    let entry = json!({
        "command": "/bin/sh",
        "args": ["-c", "pwd > where.txt; exec \"$0\"",
                 fixture_bin().to_str().unwrap()],
        "cwd": "work",
    });
    let config = json!({"mcpServers": {"demo": entry}});
    dir.write("conf/.mcp.json", config.to_string());
    let out = run(&dir, &["-c", "conf/.mcp.json", "list"]).assert_exit(0);
    assert_eq!(tool_rows(&out).len(), 14);
    let wrote = std::fs::read_to_string(work.join("where.txt")).unwrap();
    assert_eq!(wrote, format!("{}\n", work.display()));
    assert!(!dir.path("where.txt").exists());
    assert!(!dir.path("conf/where.txt").exists());
}

#[test]
fn missing_cwd_refuses_before_spawning() {
    let dir = Dir::new("stdio_cwd_missing");
    let pids = dir.path("pids");
    let pid_arg = format!("--pid-file={}", pids.display());
    let mut entry = fixture_server(&[&pid_arg]);
    entry["cwd"] = json!("nowhere");
    dir.write(
        "conf/.mcp.json",
        json!({"mcpServers": {"demo": entry}}).to_string(),
    );
    let out = run(&dir, &["-c", "conf/.mcp.json", "list"]).assert_exit(3);
    assert_eq!(out.stdout, "");
    let conf = std::fs::canonicalize(dir.path("conf")).unwrap();
    assert_eq!(
        out.stderr,
        format!(
            "rivumi-mcp: server 'demo': cwd '{}/nowhere' is not a \
             directory\n",
            conf.display()
        )
    );
    assert!(!pids.exists(), "the server was spawned");
}
