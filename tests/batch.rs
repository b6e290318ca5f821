//! `rivumi-mcp batch`: JSON Lines in, one JSON line out per request, in
//! order, over one session per server; bad lines, denials and refusals
//! answered in place while the batch goes on; tools listed again after
//! `notifications/tools/list_changed`; a dead server started afresh.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{
    ALLOWLIST, Dir, Output, TestCommand, call_arguments, fixture_server,
    read_pids, received, write_mcp_json,
};

/// A directory with server `demo` (the fixture with `args`, recording
/// what it receives, writing its pid) and `other` (never allowed).
/// Returns the record and pid files.
fn demo(test: &str, args: &[&str]) -> (Dir, PathBuf, PathBuf) {
    let dir = Dir::new(test);
    let rec = dir.path("rec");
    let pids = dir.path("pids");
    let rec_arg = format!("--record={}", rec.display());
    let pid_arg = format!("--pid-file={}", pids.display());
    let mut all = args.to_vec();
    all.extend([rec_arg.as_str(), pid_arg.as_str()]);
    let other_pids =
        format!("--pid-file={}", dir.path("other-pids").display());
    write_mcp_json(
        &dir,
        &[
            ("demo", fixture_server(&all)),
            ("other", fixture_server(&[&other_pids])),
        ],
    );
    (dir, rec, pids)
}

/// `rivumi-mcp batch ARGS` with `demo` allowed and `lines` on stdin.
fn batch(dir: &Dir, args: &[&str], lines: &[Value]) -> TestCommand {
    let mut input = String::new();
    for l in lines {
        input.push_str(&l.to_string());
        input.push('\n');
    }
    batch_text(dir, args, &input)
}

fn batch_text(dir: &Dir, args: &[&str], input: &str) -> TestCommand {
    let mut cmd = dir.command(["batch"]);
    cmd.args(args)
        .env(ALLOWLIST, "demo")
        .stdin(input)
        .timeout(Duration::from_secs(20));
    cmd
}

/// stdout as one JSON value per line.
fn replies(out: &Output) -> Vec<Value> {
    out.stdout
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"))
        })
        .collect()
}

/// A successful reply with a text result.
fn text_reply(id: Value, text: &str) -> Value {
    json!({"id": id, "ok": true,
           "result": {"content": [{"type": "text", "text": text}]}})
}

/// The error object of a failed reply (checking the shape).
#[track_caller]
fn error_of(reply: &Value) -> &Value {
    assert_eq!(reply["ok"], false, "{reply}");
    assert!(reply.get("result").is_none(), "{reply}");
    &reply["error"]
}

#[test]
fn mixed_requests_in_order_over_one_server() {
    let (dir, rec, pids) = demo("batch_mixed", &[]);
    let out = batch(
        &dir,
        &[],
        &[
            json!({"id": 1, "tool": "mcp__demo__echo",
                   "arguments": {"text": "a"}}),
            json!({"id": 2, "server": "demo", "tool": "echo",
                   "arguments": {"text": "b"}}),
            json!({"id": 3, "server": "demo",
                   "read": "fixture://docs/readme"}),
            json!({"id": 4, "server": "demo", "prompt": "greet",
                   "arguments": {"name": "Ann"}}),
            json!({"id": "five", "tool": "mcp__demo__types",
                   "arguments": {"i": 5}}),
            json!({"tool": "mcp__demo__echo", "arguments": {"text": "f"}}),
        ],
    )
    .assert_exit(0);
    assert_eq!(out.stderr, "");
    assert_eq!(
        replies(&out),
        [
            text_reply(json!(1), "a"),
            text_reply(json!(2), "b"),
            json!({"id": 3, "ok": true, "result": {"contents": [{
                "uri": "fixture://docs/readme", "mimeType": "text/plain",
                "text": "hello"}]}}),
            json!({"id": 4, "ok": true, "result": {
                "description": "Greet someone by name.",
                "messages": [{"role": "user", "content": {
                    "type": "text", "text": "Hello, Ann!"}}]}}),
            json!({"id": "five", "ok": true, "result": {
                "content": [{"type": "text", "text": "{\"i\":5}"}],
                "structuredContent": {"i": 5}}}),
            text_reply(Value::Null, "f"),
        ]
    );
    // One server process for every line, one initialize.
    assert_eq!(read_pids(&pids).len(), 1);
    assert_eq!(received(&rec, "initialize").len(), 1);
    let texts = call_arguments(&rec);
    assert_eq!(
        texts,
        [
            json!({"text": "a"}),
            json!({"text": "b"}),
            json!({"i": 5}),
            json!({"text": "f"}),
        ]
    );
}

#[test]
fn bad_lines_get_errors_and_the_batch_goes_on() {
    let (dir, rec, pids) = demo("batch_bad_lines", &[]);
    let input = [
        r#"{"id": 1, "tool": "mcp__demo__echo", "arguments": {"text": "a"}}"#,
        "not json",
        r#"[1, 2]"#,
        r#"{"id": 4, "server": "demo", "tool": "nope"}"#,
        r#"{"id": 5, "server": "demo", "tool": "echo"}"#,
        r#"{"id": 6, "tool": "echo", "arguments": {"text": "x"}}"#,
        r#"{"id": 7, "server": "demo", "tool": "echo", "read": "x://y"}"#,
        r#"{"id": 8, "server": "demo", "tool": "echo", "arguments": [1]}"#,
        r#"{"id": 9, "server": "demo", "prompt": "greet", "arguments": {"name": 1}}"#,
        r#"{"id": 10, "server": "demo", "tool": "fail"}"#,
        "",
        r#"{"id": 11, "tool": "mcp__demo__echo", "arguments": {"text": "z"}}"#,
    ]
    .join("\n");
    // `fail` is execute: approve it to see its isError result.
    let out = batch_text(&dir, &["-y"], &input).assert_exit(1);
    assert_eq!(out.stderr, "rivumi-mcp: batch: 9 of 11 requests failed\n");
    let r = replies(&out);
    // One line per non-blank input line, each with its id.
    let ids: Vec<Value> = r.iter().map(|x| x["id"].clone()).collect();
    assert_eq!(
        ids,
        [
            json!(1),
            Value::Null,
            Value::Null,
            json!(4),
            json!(5),
            json!(6),
            json!(7),
            json!(8),
            json!(9),
            json!(10),
            json!(11),
        ]
    );
    assert_eq!(r[0], text_reply(json!(1), "a"));
    let e = error_of(&r[1]);
    assert_eq!(e["code"], "usage");
    assert_eq!(e["exit_code"], 2);
    assert_eq!(e["server"], Value::Null);
    assert!(
        e["message"].as_str().unwrap().starts_with("line 2: not JSON: "),
        "{e}"
    );
    assert_eq!(error_of(&r[2])["message"], "line 3: not a JSON object");
    assert_eq!(
        *error_of(&r[3]),
        json!({"code": "usage", "exit_code": 2, "server": "demo",
               "message": "server 'demo': no tool 'nope' (see: rivumi-mcp list demo)"})
    );
    assert_eq!(
        *error_of(&r[4]),
        json!({"code": "usage", "exit_code": 2, "server": "demo",
               "message": "server 'demo': tool 'echo' needs an argument: missing text"})
    );
    for (i, what) in [(5, "mcp__<server>__<tool>"), (6, "exactly one of")] {
        let e = error_of(&r[i]);
        assert_eq!(e["code"], "usage", "{e}");
        assert!(e["message"].as_str().unwrap().contains(what), "{e}");
    }
    assert_eq!(
        error_of(&r[7])["message"],
        "'arguments' must be an object, not an array"
    );
    assert_eq!(
        error_of(&r[8])["message"],
        "prompt argument 'name' must be a string"
    );
    // An isError result is a result, but a failed request.
    assert_eq!(
        r[9],
        json!({"id": 10, "ok": true, "result": {
            "content": [{"type": "text", "text": "it failed"}],
            "isError": true}})
    );
    assert_eq!(r[10], text_reply(json!(11), "z"));
    assert_eq!(read_pids(&pids).len(), 1);
    let names: Vec<Value> = received(&rec, "tools/call")
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, [json!("echo"), json!("fail"), json!("echo")]);
}

#[test]
fn approval_flags_apply_to_every_line() {
    let (dir, rec, _) = demo("batch_approval", &[]);
    let lines = [
        json!({"id": 1, "server": "demo", "tool": "add",
               "arguments": {"a": 1, "b": 2}}),
        json!({"id": 2, "server": "demo", "tool": "echo",
               "arguments": {"text": "r"}}),
    ];
    let sum = json!({"id": 1, "ok": true, "result": {
        "content": [{"type": "text", "text": "3"}],
        "structuredContent": {"sum": 3}}});
    let echo = text_reply(json!(2), "r");

    // No flag, no terminal: execute is denied, read runs.
    let out = batch(&dir, &[], &lines).assert_exit(1);
    let r = replies(&out);
    let e = error_of(&r[0]);
    assert_eq!(e["code"], "denied");
    assert_eq!(e["exit_code"], 7);
    assert_eq!(e["server"], "demo");
    assert!(e["message"].as_str().unwrap().contains("--yes"), "{e}");
    assert_eq!(r[1], echo);

    for flags in [&["--yes"][..], &["-y"], &["--approve", "execute"]] {
        let out = batch(&dir, flags, &lines).assert_exit(0);
        assert_eq!(replies(&out), [sum.clone(), echo.clone()]);
    }

    let out = batch(&dir, &["--yes", "--read-only"], &lines).assert_exit(1);
    let r = replies(&out);
    assert_eq!(
        *error_of(&r[0]),
        json!({"code": "denied", "exit_code": 7, "server": "demo",
               "message": "server 'demo': 'add' is classified execute and \
                           --read-only denies every execute call"})
    );
    assert_eq!(r[1], echo);
    let adds = received(&rec, "tools/call")
        .iter()
        .filter(|p| p["name"] == "add")
        .count();
    assert_eq!(adds, 3);
}

#[test]
fn hooks_and_output_caps_apply_to_every_line() {
    let (dir, rec, _) = demo("batch_hooks", &[]);
    let hook = dir.write(
        "hook.sh",
        "#!/bin/sh\nif grep -q '\"tool\":\"add\"'; then\n  \
         echo 'no adding' >&2\n  exit 2\nfi\nexit 0\n",
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let perms = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(&hook, perms).unwrap();
    }
    let hook = hook.to_str().unwrap();
    let out = batch(
        &dir,
        &["-y", "--pre-tool-hook", hook, "--max-output", "1K"],
        &[
            json!({"id": 1, "tool": "mcp__demo__add",
                   "arguments": {"a": 1, "b": 2}}),
            json!({"id": 2, "tool": "mcp__demo__big",
                   "arguments": {"bytes": 3000}}),
        ],
    )
    .assert_exit(1);
    let r = replies(&out);
    assert_eq!(
        *error_of(&r[0]),
        json!({"code": "denied", "exit_code": 7, "server": "demo",
               "message": format!("server 'demo': 'add' denied by \
                                   pre-tool hook '{hook}' (exit 2): \
                                   no adding")})
    );
    assert_eq!(
        r[1],
        json!({"id": 2, "ok": true, "result": {
            "content": [{"type": "text", "text": "x".repeat(1024)}],
            "truncated": true, "original_bytes": 3039}})
    );
    let names: Vec<Value> = received(&rec, "tools/call")
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(names, [json!("big")]);
}

#[test]
fn tools_are_listed_again_after_list_changed() {
    let (dir, rec, pids) =
        demo("batch_list_changed", &["--tools-after-change"]);
    let later = json!({"server": "demo", "tool": "added_later"});
    let mut before = later.clone();
    before["id"] = json!("before");
    let mut after = later.clone();
    after["id"] = json!("after");
    let out = batch(
        &dir,
        &["-y"],
        &[
            before,
            json!({"id": "notify", "server": "demo",
                   "tool": "log_and_notify"}),
            after,
            json!({"id": "qualified", "tool": "mcp__demo__added_later"}),
        ],
    )
    .assert_exit(1);
    let r = replies(&out);
    assert_eq!(
        *error_of(&r[0]),
        json!({"code": "usage", "exit_code": 2, "server": "demo",
               "message": "server 'demo': no tool 'added_later' (see: rivumi-mcp list demo)"})
    );
    assert_eq!(r[1], text_reply(json!("notify"), "notified"));
    assert_eq!(r[2], text_reply(json!("after"), "added"));
    assert_eq!(r[3], text_reply(json!("qualified"), "added"));
    assert_eq!(read_pids(&pids).len(), 1);
    // The first page was asked for twice: at the start and after the
    // notification (and not again for the last request).
    let first_pages = received(&rec, "tools/list")
        .iter()
        .filter(|p| p.get("cursor").is_none_or(Value::is_null))
        .count();
    assert_eq!(first_pages, 2);
}

#[test]
fn a_server_not_allowed_gets_an_error_line_and_the_rest_goes_on() {
    let (dir, _, pids) = demo("batch_not_allowed", &[]);
    let out = batch(
        &dir,
        &[],
        &[
            json!({"id": 1, "server": "other", "tool": "echo",
                   "arguments": {"text": "o"}}),
            json!({"id": 2, "tool": "mcp__demo__echo",
                   "arguments": {"text": "d"}}),
            json!({"id": 3, "server": "nowhere", "read": "x://y"}),
            json!({"id": 4, "tool": "mcp__demo__echo",
                   "arguments": {"text": "e"}}),
        ],
    )
    .assert_exit(1);
    let r = replies(&out);
    assert_eq!(
        *error_of(&r[0]),
        json!({"code": "refused", "exit_code": 3, "server": "other",
               "message": "server 'other': not allowed to start: add \
                           'other' to RIVUMI_MCP_ALLOWLIST"})
    );
    assert_eq!(r[1], text_reply(json!(2), "d"));
    // An unknown server name is a usage error, as on the command line.
    let e = error_of(&r[2]);
    assert_eq!(e["code"], "usage", "{e}");
    assert_eq!(e["exit_code"], 2, "{e}");
    assert_eq!(r[3], text_reply(json!(4), "e"));
    assert!(!dir.path("other-pids").exists(), "'other' was started");
    assert_eq!(read_pids(&pids).len(), 1);
}

#[test]
fn a_server_that_timed_out_is_started_afresh() {
    let (dir, _, pids) = demo("batch_restart", &[]);
    let out = batch(
        &dir,
        &["-y", "--timeout", "1"],
        &[
            json!({"id": 1, "tool": "mcp__demo__echo",
                   "arguments": {"text": "a"}}),
            json!({"id": 2, "tool": "mcp__demo__slow",
                   "arguments": {"ms": 5000}}),
            json!({"id": 3, "tool": "mcp__demo__echo",
                   "arguments": {"text": "b"}}),
        ],
    )
    .assert_exit(1);
    let r = replies(&out);
    assert_eq!(r[0], text_reply(json!(1), "a"));
    let e = error_of(&r[1]);
    assert_eq!(e["code"], "timeout", "{e}");
    assert_eq!(e["exit_code"], 5, "{e}");
    assert_eq!(r[2], text_reply(json!(3), "b"));
    assert_eq!(read_pids(&pids).len(), 2, "a second server process");
}

#[test]
fn empty_input_is_an_empty_success() {
    let (dir, _, pids) = demo("batch_empty", &[]);
    let out = batch_text(&dir, &[], "\n  \n").assert_exit(0);
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr, "");
    assert!(read_pids(&pids).is_empty(), "no server started");
}

#[test]
fn help_lists_every_option_batch_accepts() {
    let dir = Dir::new("batch_help_options");
    let help = dir.command(["batch", "--help"]).assert_exit(0).stdout;
    // Every option `batch` accepts (beyond the global ones), each of which
    // is accepted: the help and the parser agree.
    let options = [
        "--yes",
        "--approve",
        "--read-only",
        "--pre-tool-hook",
        "--hook-timeout",
        "--max-output",
        "--timeout",
        "--startup-timeout",
        "--max-message",
        "--journal",
        "--lock",
        "--unlocked",
        "--step-up",
        "--protocol",
        "--stdio",
        "--http",
        "--name",
    ];
    for o in options {
        assert!(help.contains(o), "batch --help lacks {o}:\n{help}");
    }
    // And nothing the help lists is refused: a bogus one is.
    let out = dir.command(["batch", "--strict"]).assert_exit(2);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: flag '--strict' does not apply to 'batch'\n"
    );
}
