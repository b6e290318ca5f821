//! Hostile server requests (issue #22, third pass): `input_required`
//! rounds that ask too much or too long, sampling requests that hide what
//! reaches the command, URLs with fragments, `--answer NAME=@FILE` naming
//! what is not a regular file, and `serverInfo` of megabytes.

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::util::http::{HttpFixture, McpScript};
use crate::util::oauth::write_script;
use crate::util::{
    ALLOWLIST, Dir, TestCommand, assert_contains, bin, quote, write_mcp_json,
};

/// A directory whose `.mcp.json` names the modern fixture as `web`.
fn modern(test: &str, fx: &HttpFixture) -> Dir {
    let dir = Dir::new(test);
    write_mcp_json(&dir, &[("web", json!({ "url": fx.url() }))]);
    dir
}

fn cmd(dir: &Dir, args: &[&str]) -> TestCommand {
    let mut c = dir.command(args);
    c.env(ALLOWLIST, "web").timeout(Duration::from_secs(60));
    c
}

/// `n` input requests of `method` with `params`, keyed `k0`, `k1`, …
fn round(n: usize, method: &str, params: Value) -> Value {
    let m: Map<String, Value> = (0..n)
        .map(|i| {
            (format!("k{i}"), json!({"method": method, "params": params}))
        })
        .collect();
    Value::Object(m)
}

fn form(message: &str) -> Value {
    json!({"message": message, "requestedSchema":
        {"type": "object", "properties": {"a": {"type": "string"}}}})
}

#[test]
fn an_input_round_is_bounded_in_requests() {
    // 33 pings: more than a round may hold; refused, nothing answered.
    let fx = HttpFixture::mcp(McpScript::new().confirm_asks(round(
        33,
        "ping",
        json!({}),
    )));
    let dir = modern("asks_round_bound", &fx);
    let out = cmd(&dir, &["call", "mcp__web__confirm"]).assert_exit(4);
    assert_contains(&out.stderr, "more than 32 input requests in one round");
    assert_eq!(fx.posts_of("tools/call").len(), 1, "{}", fx.summary());
    // 32 are answered.
    let fx = HttpFixture::mcp(McpScript::new().confirm_asks(round(
        32,
        "ping",
        json!({}),
    )));
    let dir = modern("asks_round_32", &fx);
    let out = cmd(&dir, &["call", "mcp__web__confirm"]).assert_exit(0);
    assert_contains(&out.stdout, "\"k31\":{}");
}

#[test]
fn an_input_round_of_100000_requests_is_refused_unbuilt() {
    // Roots answers that repeat a long root (some 3.8 KB, nested
    // directories of 250-byte names): 100,000 roots/list requests are
    // 3 MB on the wire, some 70 MB once parsed and 380 MB of answers.
    // The message is refused before it is built; 30,000 fit the memory
    // bound and are refused by the bound on a round.
    let mut root = std::path::PathBuf::new();
    for i in 0..15 {
        root.push(format!("{i:02}{}", "r".repeat(248)));
    }
    // As a JSON body, as an SSE event, and within the memory bound.
    for (n, sse, why) in [
        (100_000, false, "MiB of memory once parsed"),
        (100_000, true, "MiB of memory once parsed"),
        (30_000, false, "more than 32 input requests in one round"),
    ] {
        let script =
            if sse { McpScript::new().sse() } else { McpScript::new() };
        let fx = HttpFixture::mcp(script.confirm_asks(round(
            n,
            "roots/list",
            json!({}),
        )));
        let dir = modern("asks_round_huge", &fx);
        let long = dir.path(root.to_str().unwrap());
        std::fs::create_dir_all(&long).unwrap();
        let c = cmd(
            &dir,
            &["call", "mcp__web__confirm", "--root", long.to_str().unwrap()],
        );
        let out = crate::hostile_stdio::within_the_ceiling(&c, 16 << 20);
        assert_eq!(out.code, Some(4), "{}", c.report(&out));
        assert_contains(&out.stderr, why);
        assert_eq!(fx.posts_of("tools/call").len(), 1, "{}", fx.summary());
    }
}

#[test]
fn the_request_deadline_holds_between_input_requests() {
    // 30 sampling requests, each run of the command takes 1 s: under
    // --timeout 4 the round stops at the deadline, not after 30 s.
    let fx = HttpFixture::mcp(McpScript::new().confirm_asks(round(
        30,
        "sampling/createMessage",
        json!({"messages": [{"role": "user",
            "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}),
    )));
    let dir = modern("asks_round_deadline", &fx);
    let model = write_script(
        &dir,
        "slow.sh",
        "#!/bin/sh\ncat >/dev/null\nsleep 1\nprintf '%s' \
         '{\"role\":\"assistant\",\"model\":\"m\",\"content\":{\"type\":\
         \"text\",\"text\":\"x\"}}'\n",
    );
    let started = Instant::now();
    let out =
        cmd(&dir, &["call", "-y", "mcp__web__confirm", "--timeout", "4"])
            .before(["--sampling-command", model.to_str().unwrap()])
            .assert_exit(5);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(9), "took {took:?}: {out:?}");
    assert_contains(&out.stderr, "timed out after 4s");
}

/// The modern fixture asks `forms` forms in one round; the command runs
/// on a pseudo-terminal fed by `feed` (a shell pipeline's output).
fn forms_on_a_terminal(
    test: &str,
    forms: usize,
    feed: &str,
    extra: &str,
) -> (String, Duration) {
    let fx = HttpFixture::mcp(McpScript::new().confirm_asks(round(
        forms,
        "elicitation/create",
        form("Fill me"),
    )));
    let dir = modern(test, &fx);
    // The feed writes into a FIFO in the background, so that the run
    // ends when the command does, not when the feed does.
    let fifo = dir.path("typed");
    let line = format!(
        "mkfifo {f}; ({feed}) > {f} 2>/dev/null & feeder=$!; \
         script -qec {} /dev/null < {f}; kill $feeder 2>/dev/null; true",
        quote(&format!(
            "{} call mcp__web__confirm {extra}",
            bin().to_str().unwrap()
        )),
        f = quote(fifo.to_str().unwrap()),
    );
    let mut c = dir.program("sh");
    c.args(["-c", &line])
        .env(ALLOWLIST, "web")
        .timeout(Duration::from_secs(60));
    let started = Instant::now();
    let out = c.run();
    (out.stdout.replace("\r\n", "\n"), started.elapsed())
}

#[test]
fn one_ctrl_c_ends_the_whole_round() {
    // Ctrl-C once the first form is up; the terminal stays open after.
    let (stdout, _) = forms_on_a_terminal(
        "asks_round_ctrl_c",
        5,
        "sleep 2; printf '\\003'; sleep 3",
        "",
    );
    assert_eq!(stdout.matches("Fill me").count(), 1, "{stdout}");
    for i in 0..5 {
        assert_contains(&stdout, &format!(r#""k{i}":{{"action":"cancel"}}"#));
    }
}

#[test]
fn timeout_applies_while_a_form_waits() {
    // Nobody types; the form waits no longer than --timeout.
    let (stdout, took) = forms_on_a_terminal(
        "asks_round_form_timeout",
        1,
        "sleep 40",
        "--timeout 3",
    );
    assert!(took < Duration::from_secs(20), "took {took:?}: {stdout}");
    assert_contains(&stdout, "Fill me");
}

/// A directory whose fixture server `demo` asks `asks` at every tool call
/// (answered with the client's responses, as tests/ask.rs does).
fn asking(test: &str, asks: &[Value]) -> Dir {
    let dir = Dir::new(test);
    let file = dir.write("asks.json", Value::from(asks.to_vec()).to_string());
    let server = crate::util::fixture_server(&[
        "--ask-at-call",
        file.to_str().unwrap(),
    ]);
    write_mcp_json(&dir, &[("demo", server)]);
    dir
}

fn call_demo(dir: &Dir, args: &[&str]) -> TestCommand {
    // The options first: some run a program, which may not follow an
    // operand a server could have chosen.
    let mut all = vec!["call", "-y"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["demo", "echo", "text=x"]);
    let mut c = dir.command(&all);
    c.env(ALLOWLIST, "demo").timeout(Duration::from_secs(30));
    c
}

#[test]
fn an_answer_file_must_be_a_regular_file_within_the_bound() {
    let ask = json!({"method": "elicitation/create", "params": form("File?")});
    let dir = asking("asks_answer_file", &[ask]);
    let fifo = dir.path("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success());
    let big = dir.write("big.txt", "x".repeat((4 << 20) + 1));
    let fine = dir.write("fine.txt", "from a file");
    for (path, why) in [
        ("/dev/zero", "not a regular file"),
        (fifo.to_str().unwrap(), "not a regular file"),
        (big.to_str().unwrap(), "the limit is 4194304"),
    ] {
        let started = Instant::now();
        let answer = format!("a=@{path}");
        let out = call_demo(&dir, &["--answer", &answer]).assert_exit(0);
        assert!(started.elapsed() < Duration::from_secs(10), "{out:?}");
        assert_contains(&out.stdout, r#"{"action":"decline"}"#);
        assert_contains(&out.stderr, why);
    }
    let answer = format!("a=@{}", fine.display());
    let out = call_demo(&dir, &["--answer", &answer]).assert_exit(0);
    assert_contains(&out.stdout, "from a file");
}

#[test]
fn a_url_with_a_fragment_is_refused_before_anyone_is_asked() {
    let url = json!({"method": "elicitation/create", "params": {
        "mode": "url", "message": "Log in", "elicitationId": "e1",
        "url": "https://example.com/login#token=x"}});
    let dir = asking("asks_url_fragment", &[url]);
    // Without a terminal: refused for what it is, not "no terminal".
    let out = call_demo(&dir, &[]).assert_exit(0);
    assert_contains(&out.stdout, r#"[{"action":"decline"}]"#);
    assert_contains(&out.stderr, "has a fragment");
    assert!(!out.stderr.contains("no terminal"), "{}", out.stderr);
    // On a terminal: never asked, and never "authorization URL".
    let out = crate::util::on_terminal(
        &dir,
        &["call", "-y", "demo", "echo", "text=x"],
        "y\r",
    );
    assert!(!out.stdout.contains("Open it in the browser?"), "{out:?}");
    assert!(!out.stdout.contains("authorization URL"), "{out:?}");
    assert_contains(&out.stdout, "has a fragment");
    assert_contains(&out.stdout, r#"[{"action":"decline"}]"#);
}

#[test]
fn server_info_is_clipped_in_the_journal_and_on_screen() {
    // name, version and title of 1 MB each, with an escape sequence.
    let dir = Dir::new("asks_long_server_info");
    let server =
        crate::util::fixture_server(&["--long-server-info", "1000000"]);
    write_mcp_json(&dir, &[("demo", server)]);
    let journal = dir.path("j.jsonl");
    let j = journal.to_str().unwrap();
    for json in [false, true] {
        let mut args = vec!["list", "demo", "--journal", j];
        if json {
            args.push("--json");
        }
        let mut c = dir.command(&args);
        c.env(ALLOWLIST, "demo");
        let out = c.assert_exit(0);
        assert!(out.stdout.len() < 20_000, "{} bytes", out.stdout.len());
        assert_contains(&out.stdout, "more bytes");
    }
    let events = std::fs::read_to_string(&journal).unwrap();
    let init: Vec<&str> =
        events.lines().filter(|l| l.contains("\"initialized\"")).collect();
    assert_eq!(init.len(), 2, "{}", events.len());
    for line in init {
        assert!(line.len() < 5_000, "a journal line of {} bytes", line.len());
        assert_contains(line, "more bytes");
    }
    for line in events.lines() {
        assert!(line.len() < 20_000, "a journal line of {} bytes", line.len());
    }
    // On a terminal, sanitised as well as clipped.
    let out = crate::util::on_terminal(&dir, &["list", "demo"], "");
    assert!(out.stdout.len() < 20_000, "{} bytes", out.stdout.len());
    assert!(!out.stdout.contains('\u{1b}'), "raw escape on screen");
    assert_contains(&out.stdout, "more bytes");
}

#[test]
fn the_sampling_approval_shows_every_field_and_counts_hidden_messages() {
    let msg = |i: usize| {
        json!({"role": "user", "content": {"type": "text",
            "text": format!("message {i}")}})
    };
    let messages: Vec<Value> = (1..=25).map(msg).collect();
    let sampling = json!({"method": "sampling/createMessage", "params": {
        "messages": messages, "maxTokens": 5,
        "includeContext": "allServers", "temperature": 1.5,
        "stopSequences": ["STOP"], "metadata": {"why": "\u{1b}[2Jexfil"},
        "modelPreferences": {"hints": [{"name": "big-model"}]},
        "tools": [{"name": "run_shell"}]}});
    let dir = asking("asks_sampling_approval", &[sampling]);
    let model = crate::util::sampling_model(&dir, "m", "hi");
    let args = [
        "call",
        "--sampling-command",
        model.to_str().unwrap(),
        "demo",
        "echo",
        "text=x",
    ];
    let out = crate::util::on_terminal(&dir, &args, "n\r");
    assert_contains(&out.stdout, "  user: message 20\n");
    assert!(!out.stdout.contains("message 21"), "{out:?}");
    assert_contains(&out.stdout, "  (5 more messages)\n");
    for shown in [
        "includeContext: allServers",
        "temperature: 1.5",
        r#"stopSequences: ["STOP"]"#,
        r#"metadata: {"why":"\u001b[2Jexfil"}"#,
        "big-model",
        "run_shell",
        "maxTokens: 5",
    ] {
        assert_contains(&out.stdout, shown);
    }
    assert_contains(&out.stdout, "sampling was not approved");
}
