//! The executor, through the real binary: pre-tool hooks (allow, deny,
//! crash, deadline, order, where they come from), approval (flags,
//! `--read-only`, the classification, the prompt on a real terminal driven
//! through util-linux `script`), bounded output, terminal sanitising, the
//! journal and the absence of secrets from everything it writes.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::http::{HttpFixture, McpScript};
use crate::util::{
    ALLOWLIST, Dir, TestCommand, assert_absent, assert_contains,
    assert_pids_gone, demo_recording, fixture_server, on_terminal, received,
    run_allowed, write_mcp_json,
};

/// What the fixture's `ansi` tool (and `fixture://docs/ansi`) says.
const ANSI_TEXT: &str = "red:\u{1b}[31mRED\u{1b}[0m \
    osc:\u{1b}]8;;http://evil/\u{7}link\u{1b}]8;;\u{7} bidi:\u{202e}abc";

/// The same, as a terminal must show it.
const ANSI_SHOWN: &str = "red:\\x1b[31mRED\\x1b[0m \
    osc:\\x1b]8;;http://evil/\\x07link\\x1b]8;;\\x07 bidi:<U+202E>abc";

/// The message of an execute call of `tool` (on `demo`) denied for want
/// of a terminal.
fn no_terminal(tool: &str) -> String {
    format!(
        "rivumi-mcp: server 'demo': '{tool}' is classified execute and needs \
         approval, but there is no terminal to ask; pass --yes (or --approve \
         mcp__demo__{tool}) to approve it\n"
    )
}

/// `rivumi-mcp ARGS` with `demo` allowed and a short deadline.
fn run(dir: &Dir, args: &[&str]) -> TestCommand {
    let mut cmd = run_allowed(dir, "demo", args);
    cmd.timeout(Duration::from_secs(20));
    cmd
}

/// `rivumi-mcp call demo echo text=hi` with the pre-tool hook `hook`.
fn echo_with_hook(dir: &Dir, hook: &str) -> TestCommand {
    run(dir, &["call", "--pre-tool-hook", hook, "demo", "echo", "text=hi"])
}

/// `rivumi-mcp call demo echo TEXT` with the pre-tool hook `hook` and a
/// hook deadline of 1 s.
fn echo_with_hook_in_1s(dir: &Dir, hook: &str, text: &str) -> TestCommand {
    run(
        dir,
        &[
            "call",
            "--pre-tool-hook",
            hook,
            "demo",
            "echo",
            text,
            "--hook-timeout",
            "1",
        ],
    )
}

/// Every method the server received, in order.
fn methods(rec: &Path) -> Vec<String> {
    std::fs::read_to_string(rec)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|m| m["method"].as_str().map(String::from))
        .collect()
}

/// Writes an executable `#!/bin/sh` script `name` with `body`; returns
/// its absolute path (hooks get only the base environment, so scripts
/// use absolute paths for their files).
fn script_file(dir: &Dir, name: &str, body: &str) -> String {
    let p = dir.write(name, format!("#!/bin/sh\n{body}\n"));
    let perms = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(&p, perms).unwrap();
    p.to_str().expect("UTF-8 path").to_string()
}

/// A hook that reads its input and exits 0.
fn allow_hook(dir: &Dir) -> String {
    script_file(dir, "allow.sh", "cat >/dev/null\nexit 0")
}

/// A hook that denies with exit 2 and `reason` on stderr.
fn deny_hook(dir: &Dir, reason: &str) -> String {
    script_file(
        dir,
        "deny.sh",
        &format!("cat >/dev/null\necho '{reason}' >&2\nexit 2"),
    )
}

/// The error line of a hook denial of `tool`.
fn hook_denial(tool: &str, hook: &str, how: &str) -> String {
    format!(
        "rivumi-mcp: server 'demo': '{tool}' denied by pre-tool hook \
         '{hook}' ({how})"
    )
}

/// The lines of a journal, parsed.
fn journal(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("journal line {l:?}: {e}"))
        })
        .collect()
}

/// The `event` names of journal lines.
fn events(lines: &[Value]) -> Vec<&str> {
    lines.iter().map(|l| l["event"].as_str().unwrap()).collect()
}

/// The one journal line of `event`.
#[track_caller]
fn one<'a>(lines: &'a [Value], event: &str) -> &'a Value {
    let found: Vec<&Value> =
        lines.iter().filter(|l| l["event"] == event).collect();
    assert_eq!(found.len(), 1, "one '{event}' in {lines:#?}");
    found[0]
}

// ---------------------------------------------------------------------------
// Pre-tool hooks
// ---------------------------------------------------------------------------

#[test]
fn hook_exit_0_allows_the_call() {
    let (dir, rec) = demo_recording("exec_hook_allow");
    let hook = allow_hook(&dir);
    let out = echo_with_hook(&dir, &hook).assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert_eq!(out.stderr, "");
    assert_eq!(received(&rec, "tools/call").len(), 1);
}

#[test]
fn hook_exit_2_denies_with_its_stderr_and_nothing_is_called() {
    let (dir, rec) = demo_recording("exec_hook_exit2");
    let hook = deny_hook(&dir, "not on my watch");
    let out = run(
        &dir,
        &["call", "-y", "--pre-tool-hook", &hook, "demo", "add", "a=1", "b=2"],
    )
    .assert_exit(7);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        format!("{}: not on my watch\n", hook_denial("add", &hook, "exit 2"))
    );
    // The server was started and listed, but never called.
    let m = methods(&rec);
    assert!(m.contains(&"tools/list".to_string()), "{m:?}");
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn hook_json_decision_deny_on_exit_0_denies() {
    let (dir, rec) = demo_recording("exec_hook_json");
    let hook = script_file(
        &dir,
        "json.sh",
        r#"cat >/dev/null
echo '{"decision":"deny","reason":"nope"}'"#,
    );
    let out = echo_with_hook(&dir, &hook).assert_exit(7);
    assert_eq!(
        out.stderr,
        format!("{}: nope\n", hook_denial("echo", &hook, "decision deny"))
    );
    // Output after the decision is not exactly one object: it denies too.
    let other = script_file(
        &dir,
        "other.sh",
        r#"cat >/dev/null
echo '{"decision":"allow"}'
echo 'and some chatter'"#,
    );
    let out = echo_with_hook(&dir, &other).assert_exit(7);
    assert_eq!(
        out.stderr,
        format!(
            "{}\n",
            hook_denial(
                "echo",
                &other,
                "exit 0 but stdout is not exactly one JSON object (2:1: \
                 expected end of input after the top-level value, found a \
                 letter), failing closed"
            )
        )
    );
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn hook_crash_denies() {
    let (dir, rec) = demo_recording("exec_hook_crash");
    let exit1 =
        script_file(&dir, "exit1.sh", "cat >/dev/null\necho boom >&2\nexit 1");
    let out = echo_with_hook(&dir, &exit1).assert_exit(7);
    assert_eq!(
        out.stderr,
        format!(
            "{}: boom\n",
            hook_denial("echo", &exit1, "exit 1, failing closed")
        )
    );
    let killed = script_file(&dir, "killed.sh", "kill -KILL $$");
    let out = echo_with_hook(&dir, &killed).assert_exit(7);
    assert_eq!(
        out.stderr,
        format!(
            "{}\n",
            hook_denial("echo", &killed, "killed by signal 9, failing closed")
        )
    );
    let exit3 = script_file(&dir, "exit3.sh", "exit 3");
    echo_with_hook(&dir, &exit3).assert_exit(7);
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn hook_timeout_denies_promptly_and_leaves_no_process() {
    let (dir, rec) = demo_recording("exec_hook_timeout");
    let pids = dir.path("hook-pids");
    let hook = script_file(
        &dir,
        "sleepy.sh",
        &format!(
            "echo $$ > {p}\nsleep 30 &\necho $! >> {p}\nwait",
            p = pids.display()
        ),
    );
    let start = Instant::now();
    let out = echo_with_hook_in_1s(&dir, &hook, "text=hi").assert_exit(7);
    let took = start.elapsed();
    assert!(took < Duration::from_millis(2500), "took {took:?}");
    assert!(took >= Duration::from_secs(1), "took {took:?}");
    assert_eq!(
        out.stderr,
        format!("{}\n", hook_denial("echo", &hook, "timed out after 1s"))
    );
    // The hook and the sleep it started are both gone.
    assert_pids_gone(&pids, Duration::from_millis(500));
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn what_an_allowing_hook_leaves_behind_is_killed() {
    let (dir, _) = demo_recording("exec_hook_leftover");
    let pids = dir.path("hook-pids");
    let hook = script_file(
        &dir,
        "leaver.sh",
        &format!(
            "cat >/dev/null\nsleep 30 >/dev/null 2>&1 &\necho $! > {}\nexit 0",
            pids.display()
        ),
    );
    let out = echo_with_hook(&dir, &hook).assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert_pids_gone(&pids, Duration::from_millis(500));
}

#[test]
fn missing_or_unrunnable_hook_program_denies() {
    let (dir, rec) = demo_recording("exec_hook_missing");
    let missing = dir.path("no-such-hook").to_str().unwrap().to_string();
    let out = echo_with_hook(&dir, &missing).assert_exit(7);
    assert_eq!(
        out.stderr,
        format!(
            "{}: No such file or directory (os error 2)\n",
            hook_denial("echo", &missing, "could not start")
        )
    );
    let plain = dir.write("plain.sh", "#!/bin/sh\nexit 0\n");
    let plain = plain.to_str().unwrap();
    let out = echo_with_hook(&dir, plain).assert_exit(7);
    assert_contains(
        &out.stderr,
        &hook_denial("echo", plain, "could not start"),
    );
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn hook_reads_the_request_on_stdin_in_a_sanitised_environment() {
    let (dir, _) = demo_recording("exec_hook_stdin");
    let input = dir.path("input.json");
    let env = dir.path("env.txt");
    let hook = script_file(
        &dir,
        "record.sh",
        &format!("cat > {}\nenv > {}\nexit 0", input.display(), env.display()),
    );
    let read_input = || -> Value {
        let text = std::fs::read_to_string(&input).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    run(
        &dir,
        &[
            "call",
            "-y",
            "--pre-tool-hook",
            &hook,
            "demo",
            "add",
            "a=1",
            "b:=2",
        ],
    )
    .env("PLANT", "planted-in-hook-env")
    .assert_exit(0);
    assert_eq!(
        read_input(),
        json!({"event": "pre_tool", "server": "demo", "tool": "add",
               "qualified_name": "mcp__demo__add",
               "classification": "execute",
               "arguments": {"a": 1, "b": 2}, "transport": "stdio"})
    );
    // The base set only: none of the caller's other variables.
    let env = std::fs::read_to_string(&env).unwrap();
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    for base in ["HOME", "LANG", "PATH"] {
        assert!(names.contains(&base), "{base} in {names:?}");
    }
    for other in ["PLANT", ALLOWLIST, "XDG_CONFIG_HOME"] {
        assert!(!names.contains(&other), "{other} in {names:?}");
    }
    assert_absent(&env, "planted-in-hook-env");

    run(&dir, &["read", "demo", "fixture://docs/readme"])
        .before(["--pre-tool-hook", &hook])
        .assert_exit(0);
    assert_eq!(
        read_input(),
        json!({"event": "pre_tool", "server": "demo",
               "tool": "resources/read",
               "qualified_name": "mcp__demo__resources_read",
               "classification": "read",
               "arguments": {"uri": "fixture://docs/readme"},
               "transport": "stdio"})
    );
    run(&dir, &["prompt", "demo", "greet", "name=Ann"])
        .before(["--pre-tool-hook", &hook])
        .assert_exit(0);
    assert_eq!(
        read_input(),
        json!({"event": "pre_tool", "server": "demo", "tool": "prompts/get",
               "qualified_name": "mcp__demo__prompts_get",
               "classification": "read",
               "arguments": {"name": "greet", "arguments": {"name": "Ann"}},
               "transport": "stdio"})
    );
}

#[test]
fn hooks_run_for_read_tools_and_the_bridges() {
    let (dir, rec) = demo_recording("exec_hook_reads");
    let hook = deny_hook(&dir, "no reading");
    let cases: [(&[&str], &str); 3] = [
        (&["call", "demo", "echo", "text=hi"], "echo"),
        (&["read", "demo", "fixture://docs/readme"], "resources/read"),
        (&["prompt", "demo", "greet", "name=Ann"], "prompts/get"),
    ];
    for (args, tool) in cases {
        let out =
            run(&dir, args).before(["--pre-tool-hook", &hook]).assert_exit(7);
        assert_eq!(out.stdout, "");
        assert_eq!(
            out.stderr,
            format!("{}: no reading\n", hook_denial(tool, &hook, "exit 2"))
        );
    }
    let m = methods(&rec);
    for never in ["tools/call", "resources/read", "prompts/get"] {
        assert!(!m.iter().any(|x| x == never), "{never} in {m:?}");
    }
}

#[test]
fn hooks_run_before_approval() {
    let (dir, rec) = demo_recording("exec_hook_first");
    let deny = deny_hook(&dir, "hook says no");
    let hook_line =
        format!("{}: hook says no\n", hook_denial("add", &deny, "exit 2"));
    // --read-only would deny too; the hook's denial is the one reported.
    let out = run(&dir, &["call", "--read-only", "demo", "add", "a=1", "b=2"])
        .before(["--pre-tool-hook", &deny])
        .assert_exit(7);
    assert_eq!(out.stderr, hook_line);
    // So would the missing terminal.
    let out = run(&dir, &["call", "demo", "add", "a=1", "b=2"])
        .before(["--pre-tool-hook", &deny])
        .assert_exit(7);
    assert_eq!(out.stderr, hook_line);
    // An allowing hook hands over to approval.
    let allow = allow_hook(&dir);
    let out = run(&dir, &["call", "--read-only", "demo", "add", "a=1", "b=2"])
        .before(["--pre-tool-hook", &allow])
        .assert_exit(7);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': 'add' is classified execute and \
         --read-only denies every execute call\n"
    );
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn several_hooks_run_in_order_flags_then_environment() {
    let (dir, rec) = demo_recording("exec_hook_order");
    let log = dir.path("order.log");
    let step = |name: &str, code: u8| {
        script_file(
            &dir,
            &format!("{name}.sh"),
            &format!(
                "cat >/dev/null\necho \"{name} $1\" >> {}\nexit {code}",
                log.display()
            ),
        )
    };
    let (a, b, c) = (step("a", 0), step("b", 0), step("c", 0));
    // The words of a hook are split without a shell: 'x y' is one word.
    let a_cmd = format!("{a} 'x y'");
    let out = run(&dir, &["call", "demo", "echo", "text=hi"])
        .before(["--pre-tool-hook", &a_cmd, "--pre-tool-hook", &b])
        .env("RIVUMI_MCP_PRE_TOOL_HOOK", format!("{c} env"))
        .assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a x y\nb \nc env\n");

    // The first denial stops the chain.
    std::fs::remove_file(&log).unwrap();
    let denier = step("d", 2);
    let out = run(&dir, &["call", "demo", "echo", "text=hi"])
        .before([
            "--pre-tool-hook",
            &a,
            "--pre-tool-hook",
            &denier,
            "--pre-tool-hook",
            &b,
        ])
        .env("RIVUMI_MCP_PRE_TOOL_HOOK", &c)
        .assert_exit(7);
    assert_eq!(
        out.stderr,
        format!("{}\n", hook_denial("echo", &denier, "exit 2"))
    );
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "a \nd \n");
    assert_eq!(received(&rec, "tools/call").len(), 1);
}

#[test]
fn hook_from_the_environment_alone_runs() {
    let (dir, rec) = demo_recording("exec_hook_env");
    let hook = deny_hook(&dir, "env hook");
    let out = run(&dir, &["call", "demo", "echo", "text=hi"])
        .env("RIVUMI_MCP_PRE_TOOL_HOOK", &hook)
        .assert_exit(7);
    assert_eq!(
        out.stderr,
        format!("{}: env hook\n", hook_denial("echo", &hook, "exit 2"))
    );
    // Empty means none.
    let out = run(&dir, &["call", "demo", "echo", "text=hi"])
        .env("RIVUMI_MCP_PRE_TOOL_HOOK", "")
        .assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert_eq!(received(&rec, "tools/call").len(), 1);
}

#[test]
fn a_hook_in_mcp_json_is_only_an_unknown_key() {
    let dir = Dir::new("exec_hook_config");
    let ran = dir.path("ran");
    let hook = script_file(
        &dir,
        "deny.sh",
        &format!("touch {}\nexit 2", ran.display()),
    );
    let mut server = fixture_server(&[]);
    server["pre_tool_hook"] = json!(hook);
    server["hooks"] = json!({"pre_tool": hook});
    let text = format!(
        "{{\"preToolHook\": {h}, \"hooks\": {{\"PreToolUse\": {h}}},\n\
         \"mcpServers\": {{\"demo\": {server}}}}}\n",
        h = json!(hook)
    );
    dir.write(".mcp.json", text);
    let out = run(&dir, &["call", "demo", "echo", "text=hi"]).assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert!(!ran.exists(), "the configured hook ran");
    let out = dir.command(["check-config"]).assert_exit(0);
    for key in ["preToolHook", "hooks", "pre_tool_hook"] {
        assert_contains(&out.stdout, &format!("key '{key}'"));
    }
    assert!(!ran.exists(), "the configured hook ran");
}

// ---------------------------------------------------------------------------
// Approval
// ---------------------------------------------------------------------------

#[test]
fn execute_without_a_terminal_is_denied_and_says_how_to_approve() {
    let (dir, rec) = demo_recording("exec_no_terminal");
    let out = run(&dir, &["call", "demo", "add", "a=1", "b=2"]).assert_exit(7);
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr, no_terminal("add"));
    assert_contains(&out.stderr, "--yes");
    // Nor with stdout on a terminal: the prompt needs stdin or stderr.
    let out = run(&dir, &["call", "demo", "add", "a=1", "b=2"]).run_on_tty();
    assert_eq!(out.code, Some(7), "{out:?}");
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn yes_and_approve_execute_allow() {
    let (dir, rec) = demo_recording("exec_yes");
    for flag in [&["--yes"][..], &["-y"], &["--approve", "execute"]] {
        let out = run(&dir, &["call", "demo", "add", "a=1", "b=2"])
            .args(flag)
            .assert_exit(0);
        assert_eq!(out.stdout, "3\n{\n  \"sum\": 3\n}\n");
        assert_eq!(out.stderr, "");
    }
    assert_eq!(received(&rec, "tools/call").len(), 3);
}

#[test]
fn read_only_denies_execute_even_with_yes() {
    let (dir, rec) = demo_recording("exec_read_only");
    let out = run(
        &dir,
        &["call", "--read-only", "--yes", "demo", "add", "a=1", "b=2"],
    )
    .assert_exit(7);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': 'add' is classified execute and \
         --read-only denies every execute call\n"
    );
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
    // Read tools and the bridges still run.
    let out = run(&dir, &["call", "--read-only", "demo", "echo", "text=hi"])
        .assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    run(&dir, &["read", "--read-only", "demo", "fixture://docs/readme"])
        .assert_exit(0);
    run(&dir, &["prompt", "--read-only", "demo", "greet", "name=A"])
        .assert_exit(0);
}

#[test]
fn classification_decides_what_runs_without_approval() {
    let (dir, rec) = demo_recording("exec_classes");
    // (tool, arguments, runs without --yes)
    let cases: [(&str, &[&str], bool); 5] = [
        ("echo", &["text=hi"], true), // readOnlyHint true
        ("types", &[], true),         // true, destructiveHint false
        ("delete_all", &[], false),   // true, destructiveHint true
        ("string_hint", &[], false),  // readOnlyHint "true"
        ("add", &["a=1", "b=2"], false), // no annotations
    ];
    for (tool, args, runs) in cases {
        let out = run(&dir, &["call", "demo", tool]).args(args).run();
        if runs {
            assert_eq!(out.code, Some(0), "{tool}: {out:?}");
        } else {
            assert_eq!(out.code, Some(7), "{tool}: {out:?}");
            assert_eq!(out.stderr, no_terminal(tool));
        }
    }
    let called: Vec<Value> = received(&rec, "tools/call")
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(called, [json!("echo"), json!("types")]);
}

#[test]
fn terminal_prompt_yes_runs_the_call() {
    let (dir, rec) = demo_recording("exec_prompt_yes");
    let out = on_terminal(&dir, &["call", "demo", "add", "a=1", "b=2"], "y\n");
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_contains(
        &out.stdout,
        "rivumi-mcp: approve this call?\n  server:         demo\n  \
         tool:           add (mcp__demo__add)\n  classification: execute\n  \
         description:\n    Add two numbers.\n    Returns the sum as text and \
         structuredContent.\n  arguments:\n    {\n      \"a\": 1,\n      \"b\": 2\n    }\n\
         Run it? [y/N] ",
    );
    assert!(out.stdout.ends_with("3\n{\n  \"sum\": 3\n}\n"), "{out:?}");
    assert_eq!(received(&rec, "tools/call").len(), 1);
    let out =
        on_terminal(&dir, &["call", "demo", "add", "a=1", "b=2"], "yes\n");
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(received(&rec, "tools/call").len(), 2);
}

#[test]
fn terminal_prompt_no_denies() {
    let (dir, rec) = demo_recording("exec_prompt_no");
    for answer in ["n\n", "\n", "sure\n"] {
        let out =
            on_terminal(&dir, &["call", "demo", "add", "a=1", "b=2"], answer);
        assert_eq!(out.code, Some(7), "{answer:?}: {out:?}");
        assert_contains(&out.stdout, "Run it? [y/N] ");
        assert!(
            out.stdout.ends_with(
                "rivumi-mcp: server 'demo': 'add' was not approved\n"
            ),
            "{out:?}"
        );
    }
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn terminal_prompt_shows_the_arguments_sanitised() {
    let (dir, rec) = demo_recording("exec_prompt_sanitised");
    let out = on_terminal(
        &dir,
        &[
            "call",
            "demo",
            "delete_all",
            r#"esc:="\u001b[31m""#,
            r#"bidi:="a\u202eb""#,
            r#"csi:="\u009b2J""#,
        ],
        "n\n",
    );
    assert_eq!(out.code, Some(7), "{out:?}");
    assert_absent(&out.stdout, "\u{1b}");
    assert_absent(&out.stdout, "\u{202e}");
    assert_absent(&out.stdout, "\u{9b}");
    assert_contains(
        &out.stdout,
        "  tool:           delete_all (mcp__demo__delete_all)\n  \
         classification: execute\n  description:\n    Pretend to delete \
         everything.\n    Annotated both read-only and destructive, a \
         contradiction.\n  arguments:\n    {\n      \"bidi\": \"a<U+202E>b\",\n      \"csi\": \"\\u{9b}2J\",\n      \
         \"esc\": \"\\u001b[31m\"\n    }\nRun it? [y/N] ",
    );
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn terminal_prompt_shortens_long_arguments() {
    let (dir, _) = demo_recording("exec_prompt_long");
    let long = "x".repeat(10_000);
    let arg = format!("long={long}");
    let out = on_terminal(&dir, &["call", "demo", "delete_all", &arg], "y\n");
    assert_eq!(out.code, Some(0), "{out:?}");
    let pretty = serde_json::to_string_pretty(&json!({"long": long})).unwrap();
    let shown = 4000;
    assert_contains(
        &out.stdout,
        &format!(
            "  [arguments shortened for display: {} more bytes not \
             shown]\nRun it? [y/N] ",
            pretty.len() - shown
        ),
    );
    assert_absent(&out.stdout, &"x".repeat(shown));
    assert!(out.stdout.ends_with("deleted\n"), "{out:?}");
}

// ---------------------------------------------------------------------------
// Bounded output
// ---------------------------------------------------------------------------

/// The size of the fixture's `big` result for `n` bytes, as JSON.
fn big_result_bytes(n: usize) -> usize {
    let v = json!({"content": [{"type": "text", "text": "x".repeat(n)}]});
    serde_json::to_vec(&v).unwrap().len()
}

#[test]
fn big_output_is_cut_with_a_visible_marker() {
    let (dir, _) = demo_recording("exec_max_output");
    let out = run(
        &dir,
        &["call", "-y", "demo", "big", "bytes:=5000", "--max-output", "2K"],
    )
    .assert_exit(8);
    let original = big_result_bytes(5000);
    assert_eq!(original, 5039);
    // stdout holds only the kept bytes; the marker is on stderr and the
    // exit status says the output is not whole.
    assert_eq!(out.stdout, format!("{}\n", "x".repeat(2048)));
    assert_eq!(
        out.stderr,
        format!(
            "rivumi-mcp: server 'demo': output truncated: the result was \
             {original} bytes, more than --max-output allows; use \
             --max-output to see more\n"
        )
    );
    // Under the cap nothing is cut or marked.
    let out = run(
        &dir,
        &["call", "-y", "demo", "big", "bytes:=1000", "--max-output", "2K"],
    )
    .assert_exit(0);
    assert_eq!(out.stdout, format!("{}\n", "x".repeat(1000)));
}

#[test]
fn json_output_says_it_was_truncated() {
    let (dir, _) = demo_recording("exec_max_output_json");
    let out = run(
        &dir,
        &[
            "call",
            "-y",
            "demo",
            "big",
            "bytes:=5000",
            "--max-output",
            "2K",
            "--json",
        ],
    )
    .assert_exit(8);
    assert_eq!(
        out.stdout_json(),
        json!({"content": [{"type": "text", "text": "x".repeat(2048)}],
               "truncated": true, "original_bytes": 5039})
    );
    assert_contains(&out.stderr, "\"code\":\"truncated\"");
    // The bridges are bounded too.
    let out = run(
        &dir,
        &["read", "demo", "fixture://docs/readme", "--max-output", "1K"],
    )
    .assert_exit(0);
    assert_eq!(out.stdout, "hello\n");
}

#[test]
fn binary_content_is_never_dumped() {
    let (dir, _) = demo_recording("exec_media");
    let png = "iVBORw0KGgo";
    for out in [
        run(&dir, &["call", "-y", "demo", "media", "--max-output", "1K"])
            .assert_exit(0),
        run(&dir, &["call", "-y", "demo", "media"]).run_on_tty(),
        run(&dir, &["read", "demo", "fixture://bin/blob"]).run_on_tty(),
    ] {
        assert_eq!(out.code, Some(0), "{out:?}");
        assert_absent(&out.stdout, png);
        assert_absent(&out.stdout, "AAECAwQF"); // the blob, base64
        assert!(out.stdout.starts_with('['), "{out:?}");
        assert_contains(&out.stdout, "; use --save DIR to keep it]\n");
    }
}

// ---------------------------------------------------------------------------
// Terminal sanitising
// ---------------------------------------------------------------------------

#[test]
fn tool_text_is_escaped_on_a_terminal_and_as_sent_in_a_pipe() {
    let (dir, _) = demo_recording("exec_ansi");
    let out = run(&dir, &["call", "-y", "demo", "ansi"]).run_on_tty();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, format!("{ANSI_SHOWN}\n"));
    assert_absent(&out.stdout, "\u{1b}");
    // The bridges too.
    let out = run(&dir, &["read", "demo", "fixture://docs/ansi"]).run_on_tty();
    assert_eq!(out.stdout, format!("{ANSI_SHOWN}\n"));
    // In a pipe, the bytes as sent.
    let out = run(&dir, &["call", "-y", "demo", "ansi"]).assert_exit(0);
    assert_eq!(out.stdout, format!("{ANSI_TEXT}\n"));
}

#[test]
fn raw_prints_the_bytes_on_a_terminal() {
    let (dir, _) = demo_recording("exec_raw");
    let out = run(&dir, &["call", "-y", "demo", "ansi", "--raw"]).run_on_tty();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout, format!("{ANSI_TEXT}\n"));
    let out =
        run(&dir, &["call", "-y", "demo", "ansi", "--raw"]).assert_exit(0);
    assert_eq!(out.stdout, format!("{ANSI_TEXT}\n"));
}

#[test]
fn json_on_a_terminal_carries_no_raw_controls() {
    // JSON escapes C0 controls itself, but not bidi overrides or C1
    // controls; on a terminal those must not arrive raw either. The value
    // must stay the same JSON.
    let (dir, _) = demo_recording("exec_ansi_json");
    let piped =
        run(&dir, &["call", "-y", "demo", "ansi", "--json"]).assert_exit(0);
    assert_eq!(piped.stdout_json()["content"][0]["text"], ANSI_TEXT);
    let out =
        run(&dir, &["call", "-y", "demo", "ansi", "--json"]).run_on_tty();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_absent(&out.stdout, "\u{1b}");
    assert_absent(&out.stdout, "\u{202e}");
    assert_eq!(out.stdout_json(), piped.stdout_json());
}

/// A minimal MCP server in `sh` that runs `prelude`, then answers
/// `initialize` with `server_info` and `tools/list` with `tools` (JSON
/// text, in printf's format: `\\u` for a JSON `\u` escape).
fn sh_server(prelude: &str, server_info: &str, tools: &str) -> String {
    format!(
        r#"{prelude}
while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{}}}},"serverInfo":{server_info}}}}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"tools":{tools}}}}}\n' "$id" ;;
  esac
done"#
    )
}

/// [`sh_server`] with names and descriptions full of escapes, and one
/// logged on stderr.
fn ansi_sh_server() -> String {
    sh_server(
        r"printf 'log \033[31mred\033[0m\n' >&2",
        r#"{"name":"sh\\u001b[1mserver","version":"1\\u202e"}"#,
        r#"[{"name":"t","description":"Clears \\u001b[2J the \\u202escreen","inputSchema":{"type":"object"}}]"#,
    )
}

#[test]
fn list_escapes_descriptions_and_server_info_on_a_terminal() {
    let dir = Dir::new("exec_list_ansi");
    let server = script_file(&dir, "server.sh", &ansi_sh_server());
    write_mcp_json(&dir, &[("demo", json!({"command": server}))]);
    let out = run(&dir, &["list", "demo"]).run_on_tty();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout,
        "demo: sh\\x1b[1mserver 1<U+202E> (protocol 2025-11-25)\n  \
         mcp__demo__t  execute  Clears \\x1b[2J the <U+202E>screen\n"
    );
    // Server stderr (-v) is escaped even in a pipe.
    let out = run(&dir, &["list", "demo", "-v"]).assert_exit(0);
    assert_contains(&out.stderr, "\n[demo] log \\x1b[31mred\\x1b[0m\n");
    assert_absent(&out.stderr, "\u{1b}");
}

#[test]
fn server_error_text_is_escaped_on_stderr() {
    let (dir, _) = demo_recording("exec_error_ansi");
    let uri = "fixture://\u{1b}[31mx\u{202e}";
    let expected = "rivumi-mcp: server 'demo': server error -32002 (ResourceNotFound): resource \
         not found: fixture://\\x1b[31mx<U+202E> \
         ({\"uri\":\"fixture://\\u001b[31mx<U+202E>\"})\n";
    let out = run(&dir, &["read", "demo", uri]).run_on_tty();
    assert_eq!(out.code, Some(4), "{out:?}");
    assert_eq!(out.stderr, expected);
    let out = run(&dir, &["read", "demo", uri]).assert_exit(4);
    assert_eq!(out.stderr, expected);
    // On a terminal's stderr as well.
    let out = on_terminal(&dir, &["read", "demo", uri], "");
    assert_eq!(out.code, Some(4), "{out:?}");
    assert_eq!(out.stdout, expected);
}

// ---------------------------------------------------------------------------
// The journal
// ---------------------------------------------------------------------------

#[test]
fn journal_records_a_whole_call_in_order() {
    let (dir, _) = demo_recording("exec_journal");
    let hook = allow_hook(&dir);
    let out = run(
        &dir,
        &[
            "call",
            "-y",
            "--pre-tool-hook",
            &hook,
            "demo",
            "add",
            "a=1",
            "b=2",
            "--journal",
            "j.jsonl",
        ],
    )
    .assert_exit(0);
    assert_eq!(out.stderr, "");
    let path = dir.path("j.jsonl");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let lines = journal(&path);
    let want = [
        "config_loaded",
        "server_spawned",
        "initialized",
        "call_requested",
        "hook_decision",
        "approval_decision",
        "result",
        "server_closed",
    ];
    let got = events(&lines);
    let mut it = got.iter();
    for w in want {
        assert!(it.any(|g| *g == w), "{w} missing or out of order: {got:?}");
        assert_eq!(got.iter().filter(|g| **g == w).count(), 1, "{got:?}");
    }
    let run_id = lines[0]["run"].as_str().unwrap();
    assert_eq!(run_id.len(), 16, "{run_id}");
    for l in &lines {
        assert_eq!(l["run"], run_id, "{l}");
        let ts = l["ts"].as_str().unwrap();
        // 2026-01-02T03:04:05.678Z
        assert_eq!(ts.len(), 24, "{ts}");
        assert!(ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "{ts}");
    }
    let spawned = one(&lines, "server_spawned");
    assert_eq!(spawned["server"], "demo");
    assert_eq!(
        spawned["argv"][0],
        crate::util::fixture_bin().to_str().unwrap()
    );
    assert!(spawned["env_names"].as_array().unwrap().contains(&json!("PATH")));
    assert!(spawned["pid"].is_u64());
    let requested = one(&lines, "call_requested");
    assert_eq!(requested["qualified_name"], "mcp__demo__add");
    assert_eq!(requested["classification"], "execute");
    let hook_line = one(&lines, "hook_decision");
    assert_eq!(hook_line["hook"], hook.as_str());
    assert_eq!(hook_line["allow"], true);
    assert_eq!(hook_line["how"], "exit 0");
    let approval = one(&lines, "approval_decision");
    assert_eq!(approval["approved"], true);
    assert_eq!(approval["how"], "flag");
    let result = one(&lines, "result");
    assert_eq!(result["tool"], "add");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["truncated"], false);
    assert!(result["duration_ms"].is_u64());
    let bytes = serde_json::to_vec(&json!({
        "content": [{"type": "text", "text": "3"}],
        "structuredContent": {"sum": 3},
    }))
    .unwrap()
    .len();
    assert_eq!(result["bytes"], bytes);
    // "eof" is right; "gone" is the race of journal_says_eof_for_a_server_
    // that_exits_at_eof, asserted there.
    let how = &one(&lines, "server_closed")["how"];
    assert!(how == "eof" || how == "gone", "{how}");
}

#[test]
fn journal_says_eof_for_a_server_that_exits_at_eof() {
    // The fixture exits as soon as its stdin closes. Whether it has done
    // so before rivumi-mcp looks must not matter: it exited on EOF, which
    // is "eof", not "gone" (already dead before it was closed). Several
    // runs, since the wrong answer depends on timing.
    let (dir, _) = demo_recording("exec_journal_eof");
    for _ in 0..20 {
        run(&dir, &["call", "demo", "echo", "text=hi", "--journal", "j"])
            .assert_exit(0);
    }
    let lines = journal(&dir.path("j"));
    let hows: Vec<&Value> = lines
        .iter()
        .filter(|l| l["event"] == "server_closed")
        .map(|l| &l["how"])
        .collect();
    assert_eq!(hows.len(), 20);
    assert!(hows.iter().all(|h| *h == "eof"), "{hows:?}");
}

#[test]
fn journal_records_denials_and_truncation() {
    let (dir, _) = demo_recording("exec_journal_denials");
    let deny = deny_hook(&dir, "no");
    run(&dir, &["call", "demo", "echo", "text=hi", "--journal", "j"])
        .before(["--pre-tool-hook", &deny])
        .assert_exit(7);
    let lines = journal(&dir.path("j"));
    let hook_line = one(&lines, "hook_decision");
    assert_eq!(hook_line["allow"], false);
    assert_eq!(hook_line["how"], "exit 2");
    let got = events(&lines);
    assert!(!got.contains(&"approval_decision"), "{got:?}");
    assert!(!got.contains(&"result"), "{got:?}");

    std::fs::remove_file(dir.path("j")).unwrap();
    run(&dir, &["call", "demo", "add", "a=1", "b=2", "--journal", "j"])
        .assert_exit(7);
    let lines = journal(&dir.path("j"));
    let approval = one(&lines, "approval_decision");
    assert_eq!(approval["approved"], false);
    assert_eq!(approval["how"], "no-terminal");
    assert!(!events(&lines).contains(&"result"));

    std::fs::remove_file(dir.path("j")).unwrap();
    run(&dir, &["call", "-y", "--read-only", "demo", "add", "a=1", "b=2"])
        .args(["--journal", "j"])
        .assert_exit(7);
    assert_eq!(
        one(&journal(&dir.path("j")), "approval_decision")["how"],
        "read-only"
    );

    std::fs::remove_file(dir.path("j")).unwrap();
    run(&dir, &["call", "-y", "demo", "big", "bytes:=5000", "--journal", "j"])
        .args(["--max-output", "2K"])
        .assert_exit(8);
    let lines = journal(&dir.path("j"));
    let result = one(&lines, "result");
    assert_eq!(result["truncated"], true);
    assert_eq!(result["bytes"], 5039);
    assert_eq!(one(&lines, "approval_decision")["how"], "flag");
}

#[test]
fn journal_refuses_a_symlink_and_leaves_its_target_alone() {
    let (dir, rec) = demo_recording("exec_journal_symlink");
    let target = dir.write("target.txt", "keep me\n");
    std::os::unix::fs::symlink(&target, dir.path("j.jsonl")).unwrap();
    let out = run(
        &dir,
        &["call", "demo", "echo", "text=hi", "--journal", "j.jsonl"],
    )
    .assert_exit(2);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: journal j.jsonl: cannot open: it is a symbolic link\n"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me\n");
    // A dangling one is not followed to create its target either.
    let missing = dir.path("created-through-link");
    std::os::unix::fs::symlink(&missing, dir.path("dangling")).unwrap();
    run(&dir, &["call", "demo", "echo", "text=hi", "--journal", "dangling"])
        .assert_exit(2);
    assert!(!missing.exists());
    // Refused before any server starts.
    assert_eq!(methods(&rec), Vec::<String>::new());
}

#[test]
fn journal_from_the_environment_and_runs_append() {
    let (dir, _) = demo_recording("exec_journal_env");
    let path = dir.path("env.jsonl");
    run(&dir, &["call", "demo", "echo", "text=one"])
        .env("RIVUMI_MCP_JOURNAL", &path)
        .assert_exit(0);
    let first = journal(&path);
    assert!(!first.is_empty());
    run(&dir, &["read", "demo", "fixture://docs/readme"])
        .env("RIVUMI_MCP_JOURNAL", &path)
        .assert_exit(0);
    let all = journal(&path);
    assert_eq!(&all[..first.len()], &first[..], "appended, not rewritten");
    let second = &all[first.len()..];
    assert!(!second.is_empty());
    let run1 = &first[0]["run"];
    let run2 = &second[0]["run"];
    assert_ne!(run1, run2);
    assert!(first.iter().all(|l| l["run"] == *run1));
    assert!(second.iter().all(|l| l["run"] == *run2));
    assert_eq!(one(second, "call_requested")["tool"], "resources/read");
    // --journal wins over the variable.
    let flag = dir.path("flag.jsonl");
    run(&dir, &["call", "demo", "echo", "text=x", "--journal"])
        .arg(&flag)
        .env("RIVUMI_MCP_JOURNAL", &path)
        .assert_exit(0);
    assert_eq!(journal(&path).len(), all.len());
    assert!(!journal(&flag).is_empty());
}

#[test]
fn secrets_appear_in_no_output_and_no_journal() {
    const SECRET: &str = "planted-secret-7781";
    let fx = HttpFixture::mcp(McpScript::new().sessions());
    let dir = Dir::new("exec_secrets");
    let mut stdio = fixture_server(&[]);
    stdio["env"] = json!({"SECRET_X": "${PLANT}"});
    let web = json!({
        "url": fx.url(),
        "headers": {"X-Api-Key": "${PLANT}"},
        "bearer_token_env_var": "TOK",
    });
    write_mcp_json(&dir, &[("demo", stdio), ("web", web)]);
    let with_env = |args: &[&str]| {
        let mut c = run(&dir, args);
        c.env(ALLOWLIST, "demo,web")
            .env("PLANT", SECRET)
            .env("TOK", format!("{SECRET}-bearer"));
        c
    };
    let journal_path = dir.path("j.jsonl");
    let j = journal_path.to_str().unwrap();
    let runs = [
        with_env(&["-v", "call", "-y", "demo", "add", "a=1", "b=2"])
            .args(["--journal", j])
            .assert_exit(0),
        with_env(&["-v", "-v", "call", "mcp__web__echo", "text=hi"])
            .args(["--journal", j])
            .assert_exit(0),
        with_env(&["-v", "list", "--journal", j]).assert_exit(0),
        with_env(&["-v", "batch", "-y", "--journal", j])
            .stdin(
                "{\"id\":1,\"tool\":\"mcp__demo__echo\",\
                 \"arguments\":{\"text\":\"a\"}}\n\
                 {\"id\":2,\"tool\":\"mcp__web__echo\",\
                 \"arguments\":{\"text\":\"b\"}}\n\
                 {\"id\":3,\"server\":\"web\",\"read\":\"x://nope\"}\n",
            )
            .assert_exit(1),
    ];
    for out in &runs {
        assert_absent(&out.all(), SECRET);
    }
    // The variable did reach the server, and a result that shows it is
    // printed (it is the tool's output) but never journaled.
    let env = with_env(&["call", "-y", "demo", "env", "--journal", j])
        .assert_exit(0);
    assert_contains(&env.stdout, SECRET);
    let text = std::fs::read_to_string(&journal_path).unwrap();
    assert_absent(&text, SECRET);
    assert_contains(&text, "\"SECRET_X\"");
    assert_contains(&text, "\"server_connected\"");
    for r in fx.requests() {
        assert_eq!(r.header("x-api-key"), Some(SECRET));
    }
}

// ---------------------------------------------------------------------------
// Hooks fail closed: the one allow contract, and every other outcome
// ---------------------------------------------------------------------------

/// A hook that reads its input, then runs `body`.
fn hook_doing(dir: &Dir, name: &str, body: &str) -> String {
    script_file(dir, name, &format!("cat >/dev/null\n{body}"))
}

/// Runs `call demo echo text=hi` with `hook`, expects a denial whose
/// `(how)` starts with `how`, and returns stderr.
#[track_caller]
fn assert_hook_denies(dir: &Dir, hook: &str, how: &str) -> String {
    let out = echo_with_hook(dir, hook).assert_exit(7);
    assert_eq!(out.stdout, "");
    let denial = format!(
        "rivumi-mcp: server 'demo': 'echo' denied by pre-tool hook '{hook}' \
         ({how}"
    );
    assert!(out.stderr.starts_with(&denial), "{denial:?} in {out:?}");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    out.stderr
}

#[test]
fn hook_allow_is_empty_stdout_or_exactly_one_allow_object() {
    let (dir, rec) = demo_recording("exec_hook_allow_contract");
    for (name, body) in [
        ("empty.sh", "exit 0"),
        ("blank.sh", "printf '  \\n\\t\\n'"),
        ("allow.sh", r#"echo '{"decision":"allow"}'"#),
        (
            "reason.sh",
            r#"printf '\n  {"reason": "fine", "decision": "allow"}  \n\n'"#,
        ),
    ] {
        let hook = hook_doing(&dir, name, body);
        let out = echo_with_hook(&dir, &hook).assert_exit(0);
        assert_eq!(out.stdout, "hi\n", "{name}");
        assert_eq!(out.stderr, "", "{name}");
    }
    assert_eq!(received(&rec, "tools/call").len(), 4);
}

#[test]
fn hook_output_that_is_not_exactly_one_object_denies() {
    let (dir, rec) = demo_recording("exec_hook_not_one_object");
    let not_one = "exit 0 but stdout is not exactly one JSON object";
    for (name, body, how) in [
        (
            "log_first.sh",
            "echo 'checking the call...'\necho '{\"decision\":\"allow\"}'",
            not_one,
        ),
        (
            "two.sh",
            r#"echo '{"decision":"deny"}'; echo '{"decision":"allow"}'"#,
            not_one,
        ),
        (
            "two_allows.sh",
            r#"echo '{"decision":"allow"}{"decision":"allow"}'"#,
            not_one,
        ),
        (
            "trailing.sh",
            "echo '{\"decision\":\"allow\"}'\necho 'and some chatter'",
            not_one,
        ),
        ("garbage.sh", "echo 'ok, go ahead'", not_one),
        ("truncated.sh", r#"printf '{"decision":"allow"'"#, not_one),
        (
            "array.sh",
            r#"echo '[{"decision":"allow"}]'"#,
            "exit 0 but stdout is a JSON array, not an object",
        ),
        (
            "string.sh",
            r#"echo '"allow"'"#,
            "exit 0 but stdout is a JSON string, not an object",
        ),
        (
            "duplicate.sh",
            r#"echo '{"decision":"deny","decision":"allow"}'"#,
            "exit 0 but its JSON repeats /decision, failing closed",
        ),
        (
            "unknown_field.sh",
            r#"echo '{"decision":"allow","also":"run rm"}'"#,
            "exit 0 but its JSON has an unknown field 'also', failing closed",
        ),
        (
            "no_decision.sh",
            r#"echo '{"reason":"fine"}'"#,
            "exit 0 but its JSON has no \"decision\", failing closed",
        ),
        (
            "not_a_string.sh",
            r#"echo '{"decision":true}'"#,
            "exit 0 but its \"decision\" is a boolean, not a string",
        ),
        (
            "non_utf8.sh",
            r#"printf '{"decision":"allow","reason":"\377"}'"#,
            "exit 0 but stdout is not UTF-8, failing closed",
        ),
    ] {
        let hook = hook_doing(&dir, name, body);
        let err = assert_hook_denies(&dir, &hook, how);
        assert!(err.contains("failing closed)"), "{name}: {err}");
    }
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn hook_unknown_decision_denies() {
    let (dir, rec) = demo_recording("exec_hook_unknown_decision");
    for value in ["maybe", "ALLOW", "allow ", "yes"] {
        let hook = hook_doing(
            &dir,
            "unknown.sh",
            &format!(r#"echo '{{"decision":"{value}"}}'"#),
        );
        assert_hook_denies(
            &dir,
            &hook,
            &format!(
                "exit 0 but its decision '{value}' is neither allow nor deny, \
                 failing closed)"
            ),
        );
    }
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn hook_output_past_the_cap_denies_even_when_it_starts_allowing() {
    let (dir, rec) = demo_recording("exec_hook_huge");
    let pad = "head -c 100000 /dev/zero | tr '\\0' x";
    let too_much =
        "printed more than 64 KiB on stdout, failing closed)\n".to_string();
    // A deny whose reason is huge: cut at the cap it would stop parsing,
    // which must not read as "no decision, allow".
    let deny = hook_doing(
        &dir,
        "huge_deny.sh",
        &format!(
            r#"printf '{{"decision":"deny","reason":"'; {pad}; printf '"}}'"#
        ),
    );
    assert!(assert_hook_denies(&dir, &deny, "").ends_with(&too_much));
    let allow = hook_doing(
        &dir,
        "huge_allow.sh",
        &format!(
            r#"printf '{{"decision":"allow","reason":"'; {pad}; printf '"}}'"#
        ),
    );
    assert!(assert_hook_denies(&dir, &allow, "").ends_with(&too_much));
    // Whitespace counts too; and a hook that never stops printing is cut
    // off at the cap, not at the deadline.
    let blank = hook_doing(
        &dir,
        "huge_blank.sh",
        "head -c 100000 /dev/zero | tr '\\0' ' '",
    );
    assert!(assert_hook_denies(&dir, &blank, "").ends_with(&too_much));
    let endless = hook_doing(&dir, "endless.sh", "yes '{}'");
    let start = Instant::now();
    let out = echo_with_hook(&dir, &endless).assert_exit(7);
    assert!(out.stderr.ends_with(&too_much), "{out:?}");
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    // Exactly at the cap is still read and judged.
    let at_cap = hook_doing(
        &dir,
        "at_cap.sh",
        &format!(
            r#"printf '{{"decision":"allow"}}'; head -c {} /dev/zero | tr '\0' ' '"#,
            64 * 1024 - 20
        ),
    );
    echo_with_hook(&dir, &at_cap).assert_exit(0);
    assert_eq!(received(&rec, "tools/call").len(), 1);
}

#[test]
fn hook_failures_deny_with_the_reason_shown() {
    let (dir, rec) = demo_recording("exec_hook_failures");
    let exit1 = hook_doing(
        &dir,
        "exit1.sh",
        "echo '{\"decision\":\"allow\"}'\necho 'db down' >&2\nexit 1",
    );
    let err = assert_hook_denies(&dir, &exit1, "exit 1, failing closed)");
    assert!(err.ends_with("): db down\n"), "{err}");
    let killed = hook_doing(
        &dir,
        "killed.sh",
        "echo '{\"decision\":\"allow\"}'\nkill -KILL $$",
    );
    assert_hook_denies(&dir, &killed, "killed by signal 9, failing closed)");
    let segv = hook_doing(&dir, "segv.sh", "kill -SEGV $$");
    assert_hook_denies(&dir, &segv, "killed by signal 11, failing closed)");
    // A deny object with exit 0 shows its reason; garbage on exit 0 shows
    // the hook's stderr, sanitised.
    let garbage =
        hook_doing(&dir, "garbage.sh", "echo nope\necho 'why: \\033[2J' >&2");
    let err = assert_hook_denies(&dir, &garbage, "exit 0 but stdout");
    assert!(err.ends_with("failing closed): why: \\x1b[2J\n"), "{err}");
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn hook_that_exits_but_leaves_its_output_open_cannot_hang_us() {
    let (dir, rec) = demo_recording("exec_hook_held_output");
    // A child in the hook's group that holds its stdout dies with the
    // hook: the allow stands, at once.
    let pids = dir.path("hook-pids");
    let hook = hook_doing(
        &dir,
        "holder.sh",
        &format!(
            "echo '{{\"decision\":\"allow\"}}'\n(sleep 30; echo late) &\n\
             echo $! > {}\nexit 0",
            pids.display()
        ),
    );
    let start = Instant::now();
    let out = echo_with_hook(&dir, &hook).assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    assert_pids_gone(&pids, Duration::from_millis(500));
    // One that left the group (a new session: the hook exits only once it
    // has) and keeps the pipe open cannot hold us past the deadline: that
    // denies, and it is killed.
    let escaped = dir.path("escaped-pids");
    let hook = hook_doing(
        &dir,
        "escaper.sh",
        &format!(
            "echo '{{\"decision\":\"allow\"}}'\n\
             setsid sh -c 'echo $$ > {p}; exec sleep 30' &\n\
             while [ ! -s {p} ]; do sleep 0.01; done\nexit 0",
            p = escaped.display()
        ),
    );
    let start = Instant::now();
    let out = echo_with_hook_in_1s(&dir, &hook, "text=hi").assert_exit(7);
    let took = start.elapsed();
    assert!(took < Duration::from_millis(2500), "took {took:?}");
    assert_eq!(
        out.stderr,
        format!(
            "{}\n",
            hook_denial(
                "echo",
                &hook,
                "timed out after 1s; it exited but its output stayed open"
            )
        )
    );
    // And what held the pipe is gone too.
    assert_pids_gone(&escaped, Duration::from_millis(500));
    assert_eq!(received(&rec, "tools/call").len(), 1);
}

#[test]
fn hook_that_never_reads_a_large_request_cannot_hang_us() {
    let (dir, rec) = demo_recording("exec_hook_unread_stdin");
    let hook = script_file(&dir, "deaf.sh", "sleep 30");
    let big = format!("text={}", "x".repeat(120_000));
    let start = Instant::now();
    let out = echo_with_hook_in_1s(&dir, &hook, &big).assert_exit(7);
    assert!(start.elapsed() < Duration::from_millis(2500));
    assert_contains(&out.stderr, "(timed out after 1s)\n");
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

/// Starts `call` with a hook that records its pid and sleeps, sends
/// `signal` to rivumi-mcp while the hook runs, and checks the exit code
/// and that the hook and its child are gone.
fn interrupt_hook(test: &str, signal: &str, code: i32) {
    let (dir, rec) = demo_recording(test);
    let pids = dir.path("hook-pids");
    let hook = hook_doing(
        &dir,
        "slow.sh",
        &format!(
            "echo $$ > {p}\nsleep 30 &\necho $! >> {p}\nwait",
            p = pids.display()
        ),
    );
    let cmd = run(
        &dir,
        &["call", "--pre-tool-hook", &hook, "demo", "echo", "text=hi"],
    );
    let child = cmd.spawn();
    let start = Instant::now();
    while crate::util::read_pids(&pids).len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the hook never ran"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let pid = child.id().to_string();
    let killed = std::process::Command::new("kill")
        .args([signal, &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = crate::util::wait_with_timeout(child, &cmd);
    assert_eq!(out.code, Some(code), "{}", cmd.report(&out));
    assert_eq!(out.stdout, "");
    assert_pids_gone(&pids, Duration::from_secs(1));
    assert_eq!(received(&rec, "tools/call"), Vec::<Value>::new());
}

#[test]
fn sigterm_during_a_hook_exits_143_and_kills_the_hook() {
    interrupt_hook("exec_hook_sigterm", "-TERM", 143);
}

#[test]
fn sigint_during_a_hook_exits_130_and_kills_the_hook() {
    interrupt_hook("exec_hook_sigint", "-INT", 130);
}

// ---------------------------------------------------------------------------
// Descriptions are never cut silently
// ---------------------------------------------------------------------------

/// A minimal MCP server in `sh` with one execute tool, `wipe`, whose
/// description is 20 lines long (an escape sequence in its second line).
fn long_description_server(dir: &Dir) -> String {
    let mut lines = vec![
        "Wipe everything.".to_string(),
        "Line 2 \u{1b}[31m red".to_string(),
    ];
    lines.extend((3..=20).map(|i| format!("line {i}")));
    let list = json!({"tools": [{"name": "wipe",
        "description": lines.join("\n"), "inputSchema": {"type": "object"}}]});
    // printf's format: a JSON backslash is written `\\`.
    let list = list.to_string().replace('\\', "\\\\");
    script_file(
        dir,
        "server.sh",
        &format!(
            r#"while IFS= read -r line; do
  id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  case "$line" in
    *'"method":"initialize"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"sh","version":"1"}}}}}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{list}}}\n' "$id" ;;
    *'"method":"tools/call"'*)
      printf '{{"jsonrpc":"2.0","id":%s,"result":{{"content":[{{"type":"text","text":"wiped"}}]}}}}\n' "$id" ;;
  esac
done"#
        ),
    )
}

#[test]
fn list_marks_the_description_lines_it_does_not_show() {
    let dir = Dir::new("exec_list_long_description");
    let server = long_description_server(&dir);
    write_mcp_json(&dir, &[("demo", json!({"command": server}))]);
    let out = run(&dir, &["list", "demo"]).assert_exit(0);
    assert_eq!(
        out.stdout,
        "demo: sh 1 (protocol 2025-11-25)\n  \
         mcp__demo__wipe  execute  Wipe everything. (19 more lines)\n"
    );
    // --json carries the whole description.
    let out = run(&dir, &["list", "demo", "--json"]).assert_exit(0);
    let d = &out.stdout_json()["servers"][0]["tools"][0]["description"];
    assert_eq!(d.as_str().unwrap().lines().count(), 20);
}

#[test]
fn terminal_prompt_shows_the_description_bounded_and_marked() {
    let dir = Dir::new("exec_prompt_description");
    let server = long_description_server(&dir);
    write_mcp_json(&dir, &[("demo", json!({"command": server}))]);
    let out = on_terminal(&dir, &["call", "demo", "wipe"], "y\n");
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_absent(&out.stdout, "\u{1b}");
    let shown: String = (3..=12).map(|i| format!("    line {i}\n")).collect();
    assert_contains(
        &out.stdout,
        &format!(
            "  classification: execute\n  description:\n    Wipe \
             everything.\n    Line 2 \\x1b[31m red\n{shown}    (8 more \
             lines)\n  arguments:\n    {{}}\nRun it? [y/N] "
        ),
    );
    assert_absent(&out.stdout, "line 13");
    assert!(out.stdout.ends_with("wiped\n"), "{out:?}");
}

/// The tools of a server whose description hides text from the reader:
/// "ig" in tag characters, a Hangul filler, zero-width characters and a
/// line separator.
const SMUGGLING_TOOLS: &str = r#"[{"name":"t","description":"Adds.\\udb40\\udc69\\udb40\\udc67\\u3164\\u200b\\u2060\\ufeff\\u2028x\\u115f\\uffa0","inputSchema":{"type":"object"}}]"#;

#[test]
fn list_shows_invisible_smuggling_characters() {
    let dir = Dir::new("exec_list_smuggling");
    let info = r#"{"name":"s","version":"1"}"#;
    let script = sh_server("", info, SMUGGLING_TOOLS);
    let server = script_file(&dir, "server.sh", &script);
    write_mcp_json(&dir, &[("demo", json!({"command": server}))]);
    let out = run(&dir, &["list", "demo"]).run_on_tty();
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout,
        "demo: s 1 (protocol 2025-11-25)\n  mcp__demo__t  execute  \
         Adds.<U+E0069><U+E0067><U+3164><U+200B><U+2060><U+FEFF><U+2028>x\
         <U+115F><U+FFA0>\n"
    );
    // JSON on a terminal: the same value, escaped as \u sequences.
    let piped = run(&dir, &["list", "demo", "--json"]).assert_exit(0);
    let out = run(&dir, &["list", "demo", "--json"]).run_on_tty();
    assert_eq!(out.code, Some(0), "{out:?}");
    for c in ['\u{e0069}', '\u{3164}', '\u{200b}', '\u{2028}', '\u{ffa0}'] {
        assert!(!out.stdout.contains(c), "{c:?} reached the terminal");
        assert!(piped.stdout.contains(c), "{c:?} missing in the pipe");
    }
    assert_eq!(out.stdout_json(), piped.stdout_json());
}

/// `call demo echo` with `--journal PATH` (relative to `dir`).
fn echo_journaled(dir: &Dir, path: &str) -> TestCommand {
    run(dir, &["call", "demo", "echo", "text=hi", "--journal", path])
}

#[test]
fn journal_refuses_a_hard_linked_file() {
    let (dir, rec) = demo_recording("exec_journal_hardlink");
    let other = dir.write("other.txt", "someone else's\n");
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o600))
        .unwrap();
    std::fs::hard_link(&other, dir.path("j.jsonl")).unwrap();
    let out = echo_journaled(&dir, "j.jsonl").assert_exit(2);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: journal j.jsonl: refused: the file has 2 hard links (a \
         journal must be a file of its own)\n"
    );
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "someone else's\n");
    assert_eq!(methods(&rec), Vec::<String>::new());
}

#[test]
fn journal_refuses_an_existing_file_that_is_not_0600() {
    let (dir, rec) = demo_recording("exec_journal_mode");
    for mode in [0o644, 0o640, 0o660, 0o400, 0o700] {
        let p = dir.write("j.jsonl", "");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))
            .unwrap();
        let out = echo_journaled(&dir, "j.jsonl").assert_exit(2);
        assert_eq!(
            out.stderr,
            format!(
                "rivumi-mcp: journal j.jsonl: refused: the file's mode is \
                 {mode:04o}, not 0600 (others could read or change it; chmod \
                 600 it or give a new path)\n"
            )
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "");
    }
    assert_eq!(methods(&rec), Vec::<String>::new());
    // 0600 is used, and appended to.
    let p = dir.write("j.jsonl", "");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600))
        .unwrap();
    echo_journaled(&dir, "j.jsonl").assert_exit(0);
    assert!(!journal(&p).is_empty());
    // A new file is created 0600.
    echo_journaled(&dir, "new.jsonl").assert_exit(0);
    let meta = std::fs::metadata(dir.path("new.jsonl")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
}

#[test]
fn journal_follows_no_symlink_in_its_directory_path() {
    let (dir, rec) = demo_recording("exec_journal_dir_link");
    let real = dir.create_dir("elsewhere/real");
    std::os::unix::fs::symlink(&real, dir.path("link")).unwrap();
    dir.create_dir("plain");
    for (path, link) in [
        ("link/j.jsonl", "link"),
        ("link/../plain/j.jsonl", "link"),
        ("plain/../link/j.jsonl", "plain/../link"),
    ] {
        let out = echo_journaled(&dir, path).assert_exit(2);
        assert_eq!(
            out.stderr,
            format!(
                "rivumi-mcp: journal {path}: refused: directory {link} is a \
                 symbolic link (give the journal a path without links)\n"
            )
        );
    }
    // Absolute paths are walked from the root.
    let abs = dir.path("link/j.jsonl");
    let out = run(&dir, &["call", "demo", "echo", "text=hi", "--journal"])
        .arg(&abs)
        .assert_exit(2);
    assert_contains(&out.stderr, "is a symbolic link");
    assert!(!real.join("j.jsonl").exists(), "written through the link");
    assert!(!dir.path("plain/j.jsonl").exists());
    assert_eq!(methods(&rec), Vec::<String>::new());
    // Without links, the same directories are fine.
    echo_journaled(&dir, "elsewhere/real/j.jsonl").assert_exit(0);
    assert!(!journal(&real.join("j.jsonl")).is_empty());
}

#[test]
fn a_server_error_message_is_bounded_in_output_and_journal() {
    // The fixture quotes the URI in its error's message and data: a long
    // one stands for a server that floods through its errors.
    let (dir, _) = demo_recording("exec_error_bounded");
    let uri = format!("fixture://{}", "x".repeat(20_000));
    let path = dir.path("j.jsonl");
    let out = run(&dir, &["read", "demo", &uri, "--journal"])
        .arg(&path)
        .assert_exit(4);
    let line = out.stderr.trim_end();
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        line.starts_with(
            "rivumi-mcp: server 'demo': server error -32002 (ResourceNotFound): resource not \
             found: fixture://xxx"
        ),
        "{line}"
    );
    // 500 bytes of message and 200 of data, each with its marker.
    assert!(line.len() < 1000, "{} bytes on stderr", line.len());
    assert_contains(line, "… [19530 more bytes] (");
    assert_contains(line, "more bytes])");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.len() < 5000, "{} bytes journaled", text.len());
    assert_contains(&text, "more bytes]");
}
