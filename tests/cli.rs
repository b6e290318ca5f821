//! The command line as a user meets it: help, version, usage errors (exit
//! 2, one line on stderr), option placement and a closed stdout pipe.

use std::os::unix::fs::PermissionsExt;

use crate::util::{
    Dir, Output, assert_contains, demo_recording, fixture_bin, run_allowed,
    wait_with_timeout,
};

const EMPTY: &str = "{\"mcpServers\": {}}\n";

/// A usage error: exit 2, nothing on stdout, exactly one line on stderr.
#[track_caller]
fn assert_usage_error(out: &Output) -> String {
    assert_eq!(out.code, Some(2), "{out:?}");
    assert_eq!(out.stdout, "", "nothing on stdout");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {:?}", out.stderr);
    assert!(lines[0].starts_with("rivumi-mcp: "), "{}", lines[0]);
    lines[0].to_string()
}

#[test]
fn help_goes_to_stdout() {
    let dir = Dir::new("cli_help");
    for (args, first) in [
        (&["-h"][..], "rivumi-mcp: a command-line client"),
        (&["--help"], "rivumi-mcp: a command-line client"),
        (&["help"], "rivumi-mcp: a command-line client"),
        (&["help", "list"], "rivumi-mcp list: "),
        (&["list", "--help"], "rivumi-mcp list: "),
        (&["list", "-h"], "rivumi-mcp list: "),
        (&["--help", "call"], "rivumi-mcp call: "),
        (&["check-config", "--help"], "rivumi-mcp check-config: "),
        (&["help", "check-config"], "rivumi-mcp check-config: "),
    ] {
        let out = dir.command(args).assert_exit(0);
        assert!(
            out.stdout.starts_with(first),
            "{args:?}: expected {first:?}, got:\n{}",
            out.stdout
        );
        assert_contains(&out.stdout, "USAGE:");
        assert_eq!(out.stderr, "", "{args:?}");
    }
    // Help wins over everything else on the line, even a bad value.
    let out = dir.command(["list", "--timeout", "0", "--help"]).assert_exit(0);
    assert!(out.stdout.starts_with("rivumi-mcp list: "));
    // The top-level help states the exit codes.
    let out = dir.command(["--help"]).assert_exit(0);
    assert_contains(
        &out.stdout,
        "Exit codes: 0 ok, 1 negative result, 2 usage",
    );
}

#[test]
fn help_for_an_unknown_topic() {
    let dir = Dir::new("cli_help_unknown");
    let line = assert_usage_error(&dir.command(["help", "lsit"]).run());
    assert_contains(&line, "lsit");
}

#[test]
fn version() {
    let dir = Dir::new("cli_version");
    for flag in ["--version", "-V"] {
        let out = dir.command([flag]).assert_exit(0);
        assert_eq!(
            out.stdout,
            format!("rivumi-mcp {}\n", env!("CARGO_PKG_VERSION"))
        );
        assert_eq!(out.stderr, "");
    }
}

#[test]
fn no_command_is_a_usage_error() {
    let dir = Dir::new("cli_no_command");
    let line = assert_usage_error(&dir.command::<_, &str>([]).run());
    assert_contains(&line, "no command given; try 'rivumi-mcp --help'");
}

#[test]
fn unknown_command_with_suggestion() {
    let dir = Dir::new("cli_unknown_command");
    let line = assert_usage_error(&dir.command(["lst"]).run());
    assert_eq!(
        line,
        "rivumi-mcp: unrecognized command 'lst'; did you mean 'list'?"
    );
    let line = assert_usage_error(&dir.command(["check-conifg"]).run());
    assert_eq!(
        line,
        "rivumi-mcp: unrecognized command 'check-conifg'; did you mean \
         'check-config'?"
    );
    // Nothing close: no suggestion.
    let line = assert_usage_error(&dir.command(["frobnicate"]).run());
    assert_eq!(line, "rivumi-mcp: unrecognized command 'frobnicate'");
}

#[test]
fn unknown_flag_with_suggestion() {
    let dir = Dir::new("cli_unknown_flag");
    dir.write(".mcp.json", EMPTY);
    let line =
        assert_usage_error(&dir.command(["check-config", "--jsn"]).run());
    assert_eq!(
        line,
        "rivumi-mcp: unrecognized flag '--jsn'; did you mean '--json'?"
    );
    let line =
        assert_usage_error(&dir.command(["--strcit", "check-config"]).run());
    assert_contains(&line, "did you mean '--strict'?");
    let line = assert_usage_error(&dir.command(["check-config", "-x"]).run());
    assert_eq!(line, "rivumi-mcp: unrecognized flag '-x'");
}

#[test]
fn options_before_and_after_the_command_mean_the_same() {
    let dir = Dir::new("cli_option_placement");
    dir.write(
        ".mcp.json",
        r#"{"mcpServers": {"a": {"command": "srv", "colour": "blue"}}}"#,
    );
    dir.write("other.json", EMPTY);
    let before = dir.command(["--json", "check-config"]).assert_exit(0);
    let after = dir.command(["check-config", "--json"]).assert_exit(0);
    assert_eq!(before.stdout, after.stdout);
    assert_eq!(before.stdout_json()["warnings"], 1);
    let before = dir.command(["--strict", "check-config"]).assert_exit(1);
    let after = dir.command(["check-config", "--strict"]).assert_exit(1);
    assert_eq!(before.stdout, after.stdout);
    assert_eq!(before.stderr, after.stderr);
    let before =
        dir.command(["-c", "other.json", "check-config"]).assert_exit(0);
    let after =
        dir.command(["check-config", "-c", "other.json"]).assert_exit(0);
    assert_eq!(before.stdout, after.stdout);
    assert_contains(&before.stdout, "other.json: 0 servers");
    // --config=PATH and --format=VALUE spellings.
    let eq = dir
        .command(["check-config", "--config=other.json", "--format=json"])
        .assert_exit(0);
    assert_eq!(eq.stdout_json()["file"], "other.json");
}

#[test]
fn json_usage_error_is_one_json_object() {
    let dir = Dir::new("cli_json_usage_error");
    let out = dir.command(["--json", "lst"]).assert_exit(2);
    assert_eq!(out.stdout, "");
    // The JSON object is the only line: no prose line before it.
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(lines[0])
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", lines[0]));
    assert_eq!(
        v,
        serde_json::json!({"error": {
            "code": "usage",
            "exit_code": 2,
            "message": "unrecognized command 'lst'; did you mean 'list'?",
            "server": null,
        }})
    );
    // Also when the file is missing.
    let out = dir.command(["check-config", "--json"]).assert_exit(2);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(v["error"]["code"], "usage");
    assert_contains(v["error"]["message"].as_str().unwrap(), ".mcp.json");
}

#[test]
fn option_that_does_not_apply_is_refused() {
    let dir = Dir::new("cli_option_not_applicable");
    dir.write(".mcp.json", EMPTY);
    for (args, flag) in [
        (&["check-config", "--tools"][..], "--tools"),
        (&["--tools", "check-config"], "--tools"),
        (&["check-config", "--timeout", "5"], "--timeout"),
        (&["check-config", "--yes"], "--yes"),
        (&["check-config", "-y"], "--yes"),
        (&["list", "--strict"], "--strict"),
        (&["list", "--format", "json"], "--format"),
    ] {
        let line = assert_usage_error(&dir.command(args).run());
        assert_contains(&line, &format!("flag '{flag}' does not apply to"));
    }
}

#[test]
fn stray_words_and_missing_values() {
    let dir = Dir::new("cli_stray_words");
    dir.write(".mcp.json", EMPTY);
    let line =
        assert_usage_error(&dir.command(["check-config", "extra"]).run());
    assert_contains(&line, "unexpected argument 'extra' for 'check-config'");
    let line = assert_usage_error(&dir.command(["check-config", "-c"]).run());
    assert_contains(&line, "missing argument for option '-c'");
}

#[test]
fn missing_config_names_dot_mcp_json() {
    let dir = Dir::new("cli_missing_config");
    let out = dir.command(["check-config"]).run();
    let line = assert_usage_error(&out);
    assert!(
        line.starts_with("rivumi-mcp: .mcp.json: cannot open: "),
        "{line}"
    );
    assert_contains(&line, "(rivumi-mcp reads ./.mcp.json only; use -c PATH)");
}

#[test]
fn broken_stdout_pipe_is_quiet_success() {
    let dir = Dir::new("cli_broken_pipe");
    // About 1.5 MB of table, far more than a pipe buffer holds, so the
    // binary is still writing when it finds the pipe closed.
    let mut text = String::from("{\"mcpServers\": {\n");
    for i in 0..1000 {
        let sep = if i == 999 { "" } else { "," };
        text.push_str(&format!(
            "  \"s{i}\": {{\"command\": \"srv\", \"args\": [\"{}\"]}}{sep}\n",
            "a".repeat(1500)
        ));
    }
    text.push_str("}}\n");
    dir.write(".mcp.json", &text);
    let cmd = dir.command(["check-config"]);
    let mut child = cmd.spawn();
    drop(child.stdout.take());
    let out = wait_with_timeout(child, &cmd);
    assert_eq!(out.code, Some(0), "{}", cmd.report(&out));
    assert_eq!(out.stderr, "", "no error message");
}

/// An executable `#!/bin/sh` script in `dir`; its path.
fn script(dir: &Dir, name: &str, body: &str) -> String {
    let p = dir.write(name, format!("#!/bin/sh\n{body}\n"));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
        .unwrap();
    p.to_str().expect("UTF-8 path").to_string()
}

/// #22 item 9: a word a script took from a server (a prompt name, a URI,
/// an argument) is one word; after an operand of call, read and prompt it
/// may not be an option and its value at once, so it never runs a hook,
/// a sampling command or a server. `--` makes every later word an operand;
/// an option and its value as two words still work anywhere.
#[test]
fn one_server_chosen_word_never_runs_a_program() {
    let (dir, _) = demo_recording("cli_operand_words");
    let mark = dir.path("ran");
    let hook = script(
        &dir,
        "mark.sh",
        &format!("cat >/dev/null\ntouch '{}'\nexit 0", mark.display()),
    );
    for args in [
        vec!["prompt", "demo", "greet", &format!("--pre-tool-hook={hook}")],
        vec!["read", "demo", &format!("--stdio={hook}"), "fixture://x"],
        vec!["call", "demo", "echo", &format!("--sampling-command={hook}")],
        vec!["call", "mcp__demo__echo", "--http=http://127.0.0.1:1/"],
    ] {
        let out = run_allowed(&dir, "demo", &args).run();
        let line = assert_usage_error(&out);
        assert_contains(&line, "after an operand of");
        assert_contains(&line, "two words");
        assert!(!mark.exists(), "{args:?} ran a program");
    }
    // After --, the word is an operand: here a prompt argument the
    // prompt does not declare.
    let glued = format!("--pre-tool-hook={hook}");
    let out =
        run_allowed(&dir, "demo", &["prompt", "demo", "greet", "--", &glued])
            .run();
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(!mark.exists(), "-- did not end the options");
    // Two words after an operand: refused too (two words from a server
    // could spell them), and so are --stdio and --http there.
    for args in [
        vec!["prompt", "demo", "greet", "name=Ann", "--pre-tool-hook", &hook],
        vec!["call", "demo", "echo", "--sampling-command", &hook],
        vec!["read", "demo", "fixture://x", "--stdio", &hook],
        vec!["call", "mcp__demo__echo", "--http", "http://127.0.0.1:1/"],
    ] {
        let out = run_allowed(&dir, "demo", &args).run();
        let line = assert_usage_error(&out);
        assert_contains(&line, "must come before the operands");
        assert!(!mark.exists(), "{args:?} ran a program");
    }
    // Before the operands: the operator typed both.
    run_allowed(
        &dir,
        "demo",
        &["prompt", "--pre-tool-hook", &hook, "demo", "greet", "name=Ann"],
    )
    .assert_exit(0);
    assert!(mark.exists(), "the hook given before the operands did not run");
}

/// #22 item 10: --pre-tool-hook and --stdio split as POSIX sh splits
/// words: only ASCII blanks separate them, and inside double quotes a
/// backslash stays unless it escapes $ ` " \ or newline.
#[test]
fn command_lines_split_as_sh_splits_them() {
    let (dir, _) = demo_recording("cli_word_splitting");
    let hook_args = dir.path("hook-args");
    let hook = script(
        &dir,
        "hook.sh",
        &format!(
            "cat >/dev/null\nprintf '%s\\n' \"$@\" > '{}'\nexit 0",
            hook_args.display()
        ),
    );
    // NO-BREAK SPACE and EM SPACE are word characters to sh.
    let line = format!("{hook} \"a\\b\" \"q\\\"\" c\u{a0}d\te\u{2003}f");
    run_allowed(
        &dir,
        "demo",
        &["call", "--pre-tool-hook", &line, "demo", "echo", "text=hi"],
    )
    .assert_exit(0);
    assert_eq!(
        std::fs::read_to_string(&hook_args).unwrap(),
        "a\\b\nq\"\nc\u{a0}d\ne\u{2003}f\n"
    );

    let srv_args = dir.path("srv-args");
    let server = script(
        &dir,
        "srv.sh",
        &format!(
            "printf '%s\\n' \"$@\" > '{}'\nexec '{}'",
            srv_args.display(),
            fixture_bin().display()
        ),
    );
    let line = format!("{server} \"C:\\x\\\\y\" \\$HOME\u{3000}z");
    dir.command(["list", "--stdio", &line]).assert_exit(0);
    assert_eq!(
        std::fs::read_to_string(&srv_args).unwrap(),
        "C:\\x\\y\n$HOME\u{3000}z\n"
    );
}
