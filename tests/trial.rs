//! What the second trial against real servers found (issue 21), against
//! the fixture server scripted to behave as those servers do: a missing
//! optional list (`mcp-server-sqlite`), text that repeats the structured
//! content but for null members (git-mcp-server), the journal of a call
//! ended by a signal, and the habits of scripts (`--approve`, `--output`,
//! one tool's detail view, tool filtering and search).

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{
    Dir, TestCommand, assert_absent, assert_contains, fixture_server,
    received, run_allowed, wait_with_timeout, write_mcp_json,
};

fn run(dir: &Dir, args: &[&str]) -> TestCommand {
    run_allowed(dir, "demo", args)
}

/// A directory whose `demo` server is the fixture with `args`, recording
/// what it receives in `rec`.
fn demo(test: &str, args: &[&str]) -> Dir {
    let dir = Dir::new(test);
    let rec = format!("--record={}", dir.path("rec").display());
    let mut all = args.to_vec();
    all.push(&rec);
    write_mcp_json(&dir, &[("demo", fixture_server(&all))]);
    dir
}

/// The lines of a journal, parsed.
fn journal(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

// ---------------------------------------------------------------------------
// Bug 1: a missing optional list is an empty list
// ---------------------------------------------------------------------------

#[test]
fn a_missing_template_list_is_an_empty_list() {
    let dir =
        demo("trial_no_templates", &["--no-method=resources/templates/list"]);
    let out = run(&dir, &["resources", "demo"]).assert_exit(0);
    assert_contains(&out.stdout, "resource fixture://docs/readme");
    assert_absent(&out.stdout, "template");
    assert_eq!(out.stderr, "");
    let out = run(&dir, &["-v", "resources", "demo"]).assert_exit(0);
    assert_contains(
        &out.stderr,
        "server 'demo': resources/templates/list: not offered (-32601); \
         taken as an empty list",
    );
    let out = run(&dir, &["list", "--all", "--json"]).assert_exit(0);
    let s = &out.stdout_json()["servers"][0];
    assert_eq!(s["resourceTemplates"], json!([]), "{s:#}");
    assert_eq!(s["resources"].as_array().map(Vec::len), Some(4), "{s:#}");
    // The lock is written, and calls go on under it.
    run(&dir, &["lock"]).assert_exit(0);
    run(&dir, &["lock", "demo"]).assert_exit(0);
    run(&dir, &["lock", "--check"]).assert_exit(0);
    let out = run(&dir, &["call", "demo", "echo", "text=hi"]).assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
}

#[test]
fn a_failing_list_names_the_request() {
    let dir = demo("trial_failing_list", &["--fail-method=prompts/list"]);
    let out = run(&dir, &["list", "--prompts", "demo"]).assert_exit(4);
    assert_contains(
        &out.stderr,
        "server 'demo': prompts/list: server error -32603 (InternalError): \
         fixture failure",
    );
    // A server without tools/list at all lists no tools.
    let dir = demo("trial_tools_missing", &["--no-method=tools/list"]);
    let out = run(&dir, &["list", "demo"]).assert_exit(0);
    assert_contains(&out.stdout, "demo: rivumi-mcp-fixture");
}

// ---------------------------------------------------------------------------
// Bug 3: printed once, modulo null members and key order
// ---------------------------------------------------------------------------

#[test]
fn structured_content_equal_but_for_nulls_is_printed_once() {
    let dir = demo("trial_commit_once", &["--commit-tool"]);
    let out = run(&dir, &["call", "demo", "commit"]).assert_exit(0);
    assert_eq!(
        out.stdout,
        "{\"b\":2,\"note\":null,\"a\":{\"x\":1,\"y\":null}}\n"
    );
    assert_eq!(out.stderr, "");
}

// ---------------------------------------------------------------------------
// Bug 5: a call ended by a signal ends in the journal
// ---------------------------------------------------------------------------

fn interrupted_call_is_journaled(test: &str, signal: &str, name: &str) {
    let dir = demo(test, &["--hang-call"]);
    let cmd = run(
        &dir,
        &["call", "-y", "demo", "echo", "text=hi", "--journal", "j.jsonl"],
    );
    let child = cmd.spawn();
    let start = Instant::now();
    while !received(&dir.path("rec"), "tools/call").len().eq(&1) {
        assert!(start.elapsed() < Duration::from_secs(10), "no call");
        thread::sleep(Duration::from_millis(5));
    }
    let pid = child.id().to_string();
    assert!(
        Command::new("kill").args([signal, &pid]).status().unwrap().success()
    );
    let out = wait_with_timeout(child, &cmd);
    assert_eq!(out.code, Some(if name == "SIGINT" { 130 } else { 143 }));
    let lines = journal(&dir.path("j.jsonl"));
    let events: Vec<&str> =
        lines.iter().map(|l| l["event"].as_str().unwrap()).collect();
    let tail = &events[events.len() - 3..];
    assert_eq!(
        tail,
        ["approval_decision", "error", "server_closed"],
        "{events:?}"
    );
    let error = &lines[lines.len() - 2];
    assert_eq!(error["code"], "interrupted", "{error}");
    assert_eq!(error["signal"], name, "{error}");
    assert_eq!(error["server"], "demo");
    assert_eq!(error["tool"], "echo");
    assert!(error["duration_ms"].is_u64(), "{error}");
    let closed = &lines[lines.len() - 1];
    assert_eq!(closed["server"], "demo");
    assert_eq!(closed["how"], "signal");
    assert_eq!(
        events.iter().filter(|e| **e == "server_closed").count(),
        1,
        "{events:?}"
    );
}

#[test]
fn a_call_ended_by_sigint_is_journaled_as_interrupted() {
    interrupted_call_is_journaled("trial_journal_sigint", "-INT", "SIGINT");
}

#[test]
fn a_call_ended_by_sigterm_is_journaled_as_interrupted() {
    interrupted_call_is_journaled("trial_journal_sigterm", "-TERM", "SIGTERM");
}

// ---------------------------------------------------------------------------
// Bug 7: VS Code's variables and the directory editors' servers run in
// ---------------------------------------------------------------------------

/// A server that writes where it runs and what it was given to
/// `where.txt` (in the directory it runs in), then becomes the fixture.
fn noting_server(args: &[&str]) -> Value {
    let mut all = vec![
        "-c",
        "printf '%s\\n' \"$(pwd)\" \"$@\" > where.txt; exec \"$0\"",
        crate::util::fixture_bin().to_str().unwrap().to_string().leak(),
    ];
    all.extend_from_slice(args);
    json!({"command": "/bin/sh", "args": all})
}

#[test]
fn vscode_variables_expand_and_servers_run_in_the_project_root() {
    let dir = Dir::new("trial_vscode_vars");
    let root = std::fs::canonicalize(dir.create_dir("proj")).unwrap();
    let entry = noting_server(&[
        "${workspaceFolder}/db",
        "${workspaceFolderBasename}",
        "${userHome}${pathSeparator}x${/}y",
    ]);
    dir.write(
        "proj/.vscode/mcp.json",
        json!({"servers": {"v": entry}}).to_string(),
    );
    let out = dir
        .command(["list", "-c", "proj/.vscode/mcp.json"])
        .env(crate::util::ALLOWLIST, "v")
        .env("HOME", "/home/someone")
        .assert_exit(0);
    assert_contains(&out.stdout, "mcp__v__echo");
    let wrote = std::fs::read_to_string(root.join("where.txt"))
        .expect("the server ran in the project root");
    assert_eq!(
        wrote,
        format!("{0}\n{0}/db\nproj\n/home/someone/x/y\n", root.display())
    );
    assert!(!root.join(".vscode/where.txt").exists());
}

#[test]
fn cursor_servers_run_in_the_project_root() {
    let dir = Dir::new("trial_cursor_root");
    let root = std::fs::canonicalize(dir.create_dir("proj")).unwrap();
    let entry = noting_server(&["${workspaceFolder}"]);
    dir.write(
        "proj/.cursor/mcp.json",
        json!({"mcpServers": {"c": entry}}).to_string(),
    );
    dir.command(["list", "-c", "proj/.cursor/mcp.json"])
        .env(crate::util::ALLOWLIST, "c")
        .assert_exit(0);
    let wrote = std::fs::read_to_string(root.join("where.txt")).unwrap();
    assert_eq!(wrote, format!("{0}\n{0}\n", root.display()));
}

#[test]
fn unknown_editor_variables_name_the_editor() {
    let dir = Dir::new("trial_vscode_unknown");
    let fixture = crate::util::fixture_bin();
    let entry = json!({"command": fixture.to_str().unwrap(),
                       "args": ["${file}"]});
    let config = json!({"command": fixture.to_str().unwrap(),
                        "args": ["${config:python.path}"]});
    dir.write(
        ".vscode/mcp.json",
        json!({"servers": {"f": entry, "g": config}}).to_string(),
    );
    let out = dir
        .command(["list", "f", "-c", ".vscode/mcp.json"])
        .env(crate::util::ALLOWLIST, "f")
        .assert_exit(3);
    assert_contains(
        &out.stderr,
        "'${file}' is VS Code's variable, which rivumi-mcp does not provide",
    );
    assert_absent(&out.stderr, "environment variable");
    let out = dir
        .command(["list", "g", "-c", ".vscode/mcp.json"])
        .env(crate::util::ALLOWLIST, "g")
        .assert_exit(3);
    assert_contains(&out.stderr, "'${config:…}' at character 1 is VS Code's");
    // In a Cursor file the editor named is Cursor.
    dir.write(
        ".cursor/mcp.json",
        json!({"mcpServers": {"f": entry}}).to_string(),
    );
    let out = dir
        .command(["list", "f", "-c", ".cursor/mcp.json"])
        .env(crate::util::ALLOWLIST, "f")
        .assert_exit(3);
    assert_contains(&out.stderr, "'${file}' is Cursor's variable");
}

// ---------------------------------------------------------------------------
// --approve PATTERN and RIVUMI_MCP_APPROVE
// ---------------------------------------------------------------------------

#[test]
fn approve_patterns_approve_exactly_what_they_name() {
    let dir = demo("trial_approve", &[]);
    // An exact qualified name, and a glob.
    for pattern in ["mcp__demo__add", "mcp__demo__a*", "mcp__d?mo__*"] {
        let out = run(
            &dir,
            &["call", "--approve", pattern, "demo", "add", "a=1", "b=2"],
        )
        .assert_exit(0);
        assert_contains(&out.stdout, "3\n");
    }
    // Another tool is not approved by it.
    let out = run(
        &dir,
        &["call", "--approve", "mcp__demo__add", "demo", "delete_all"],
    )
    .assert_exit(7);
    assert_contains(
        &out.stderr,
        "pass --yes (or --approve mcp__demo__delete_all)",
    );
    // The environment variable, several patterns; a journal names the kind.
    let out =
        run(&dir, &["call", "demo", "add", "a=1", "b=2", "--journal", "j"])
            .env("RIVUMI_MCP_APPROVE", "mcp__other__x, mcp__demo__add")
            .assert_exit(0);
    assert_contains(&out.stdout, "3\n");
    let lines = journal(&dir.path("j"));
    let d = lines.iter().find(|l| l["event"] == "approval_decision").unwrap();
    assert_eq!(d["how"], "pattern", "{d}");
    assert_eq!(d["pattern"], "mcp__demo__add", "{d}");
    assert_eq!(d["approved"], true, "{d}");
    // --read-only still wins; a pattern that names no qualified tool is a
    // usage error, in the flag and in the variable.
    run(
        &dir,
        &[
            "call",
            "--read-only",
            "--approve",
            "mcp__demo__add",
            "demo",
            "add",
            "a=1",
            "b=2",
        ],
    )
    .assert_exit(7);
    let out =
        run(&dir, &["call", "--approve", "add", "demo", "add"]).assert_exit(2);
    assert_contains(
        &out.stderr,
        "--approve: 'add' is not a qualified tool name pattern",
    );
    let out = run(&dir, &["call", "demo", "add", "a=1", "b=2"])
        .env("RIVUMI_MCP_APPROVE", "add")
        .assert_exit(2);
    assert_contains(&out.stderr, "RIVUMI_MCP_APPROVE: 'add' is not");
    // --approve execute keeps meaning --yes.
    run(&dir, &["call", "--approve", "execute", "demo", "delete_all"])
        .assert_exit(0);
    // A config file cannot approve: .mcp.json has no such key.
    assert_eq!(received(&dir.path("rec"), "tools/call").len(), 5);
}

// ---------------------------------------------------------------------------
// --output and --json errors
// ---------------------------------------------------------------------------

#[test]
fn output_chooses_what_is_printed() {
    let dir = demo("trial_output", &["--commit-tool"]);
    let call = |mode: &str, tool: &[&str]| {
        let mut args = vec!["call", "-y", "--output", mode, "demo"];
        args.extend_from_slice(tool);
        run(&dir, &args)
    };
    // add answers the text "3" and {"sum": 3}.
    let add = ["add", "a=1", "b=2"];
    assert_eq!(
        call("auto", &add).assert_exit(0).stdout,
        "3\n{\n  \"sum\": 3\n}\n"
    );
    assert_eq!(call("text", &add).assert_exit(0).stdout, "3\n");
    assert_eq!(
        call("structured", &add).assert_exit(0).stdout,
        "{\n  \"sum\": 3\n}\n"
    );
    let raw = call("raw", &add).assert_exit(0).stdout;
    assert_eq!(raw.lines().count(), 1, "{raw}");
    let v: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(
        v,
        json!({"content": [{"type": "text", "text": "3"}],
                         "structuredContent": {"sum": 3}})
    );
    let v = call("json", &add).assert_exit(0).stdout_json();
    assert_eq!(v["structuredContent"]["sum"], 3, "{v:#}");
    // No structured content: --output structured says so.
    let out = call("structured", &["echo", "text=hi"]).assert_exit(1);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "tool 'echo' returned no structuredContent");
    let out = call("yaml", &["echo"]).assert_exit(2);
    assert_contains(
        &out.stderr,
        "--output: unknown output 'yaml' [pick from: auto, text",
    );
}

#[test]
fn json_errors_are_the_only_line_on_stderr() {
    let dir = demo("trial_json_errors", &[]);
    let out = run(&dir, &["call", "--json", "demo", "nope"]).assert_exit(2);
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(v["error"]["server"], "demo", "{v}");
    let out =
        run(&dir, &["call", "--json", "demo", "delete_all"]).assert_exit(7);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let v: Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(v["error"]["code"], "denied", "{v}");
}

// ---------------------------------------------------------------------------
// One tool's detail view; descriptions cut to the terminal
// ---------------------------------------------------------------------------

/// The example line of a detail view, as words (no quoting in these).
fn example_words(detail: &str) -> Vec<String> {
    let line = detail
        .lines()
        .skip_while(|l| *l != "example:")
        .nth(1)
        .unwrap_or_else(|| panic!("no example in:\n{detail}"));
    line.split_whitespace().skip(1).map(str::to_string).collect()
}

#[test]
fn list_server_tool_shows_one_tool_whole_with_a_working_example() {
    let dir = demo("trial_detail", &["--shaped-tools"]);
    let out = run(&dir, &["list", "demo", "add"]).assert_exit(0);
    let d = &out.stdout;
    assert!(d.starts_with("mcp__demo__add  execute\n"), "{d}");
    assert_contains(d, "\n  Add two numbers.\n  Returns the sum");
    assert_contains(d, "parameters:\n  a: number  (required)\n");
    assert_contains(
        d,
        "example:\n  rivumi-mcp call demo add a=1 b=1 --approve mcp__demo__add\n",
    );
    // The example works, in a pipe.
    let words = example_words(d);
    let out = run(&dir, &words.iter().map(String::as_str).collect::<Vec<_>>())
        .assert_exit(0);
    assert_contains(&out.stdout, "2\n");
    // Enums, types, the qualified form and annotations.
    let out = run(&dir, &["list", "mcp__demo__shapes"]).assert_exit(0);
    let d = &out.stdout;
    assert_contains(d, "  level: 1|2|3  (required)\n      one of: 1, 2, 3\n");
    assert_contains(
        d,
        "  unit?: \"c\"|\"f\"  (optional)\n      one of: \"c\", \"f\"\n",
    );
    assert_contains(d, "annotations:\n  readOnlyHint: true\n");
    assert_contains(d, "example:\n  rivumi-mcp call demo shapes level=1\n");
    let words = example_words(d);
    run(&dir, &words.iter().map(String::as_str).collect::<Vec<_>>())
        .assert_exit(0);
    // --json: the definition, whole.
    let v = run(&dir, &["list", "demo", "shapes", "--json"])
        .assert_exit(0)
        .stdout_json();
    assert_eq!(v["qualified_name"], "mcp__demo__shapes");
    assert!(v["inputSchema"]["properties"]["level"].is_object(), "{v:#}");
    // An unknown tool is a usage error with a suggestion.
    let out = run(&dir, &["list", "demo", "shapez"]).assert_exit(2);
    assert_contains(&out.stderr, "shapes");
    // Two servers are still two servers.
    write_mcp_json(
        &dir,
        &[("demo", fixture_server(&[])), ("other", fixture_server(&[]))],
    );
    let out = run_allowed(&dir, "demo,other", &["list", "demo", "other"])
        .assert_exit(0);
    assert_contains(&out.stdout, "mcp__other__echo");
}

#[test]
fn adhoc_servers_need_no_placeholder_name() {
    let dir = Dir::new("trial_adhoc_name");
    let spec = crate::util::fixture_bin().to_str().unwrap().to_string();
    let out = dir
        .command(["call", "--stdio", &spec, "echo", "text=hi"])
        .assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    let out = dir.command(["call", "--stdio", &spec, "media"]).assert_exit(7);
    assert_contains(&out.stderr, "--approve mcp__adhoc__media");
    // The name still works, and a detail view prints a line that works.
    let out = dir
        .command(["call", "--stdio", &spec, "adhoc", "echo", "text=x"])
        .assert_exit(0);
    assert_eq!(out.stdout, "x\n");
    let out = dir.command(["list", "--stdio", &spec, "echo"]).assert_exit(0);
    assert_contains(
        &out.stdout,
        &format!("rivumi-mcp call --stdio {spec} echo text=text"),
    );
}

#[test]
fn long_descriptions_are_cut_to_the_terminal_width() {
    let dir = Dir::new("trial_cut");
    let patch = dir.path("patch.json");
    dir.write(
        "patch.json",
        json!({"tools": {"echo": {"description": format!("Echo {}.", "x".repeat(300))}}})
            .to_string(),
    );
    let p = format!("--patch={}", patch.display());
    write_mcp_json(&dir, &[("demo", fixture_server(&[&p]))]);
    let mut cmd = run(&dir, &["list", "demo"]);
    cmd.env("COLUMNS", "80");
    let out = cmd.run_on_tty();
    assert_eq!(out.code, Some(0), "{out:?}");
    let line =
        out.stdout.lines().find(|l| l.contains("mcp__demo__echo")).unwrap();
    assert!(line.ends_with('…'), "{line}");
    assert!(line.chars().count() <= 80, "{}", line.chars().count());
    // In a pipe, and in the detail view, it is whole.
    let out = run(&dir, &["list", "demo"]).assert_exit(0);
    assert_contains(&out.stdout, &"x".repeat(300));
    let out = run(&dir, &["list", "demo", "echo"]).run_on_tty();
    assert_contains(&out.stdout, &"x".repeat(300));
}

// ---------------------------------------------------------------------------
// The config's tools filter, list --grep, small things
// ---------------------------------------------------------------------------

#[test]
fn a_tools_filter_narrows_every_command_and_is_pinned() {
    let dir = Dir::new("trial_tools_filter");
    let rec = format!("--record={}", dir.path("rec").display());
    let mut entry = fixture_server(&[&rec]);
    entry["tools"] = json!({"allow": ["e*", "add"], "deny": ["env"]});
    write_mcp_json(&dir, &[("demo", entry.clone())]);
    let out = run(&dir, &["list", "demo"]).assert_exit(0);
    let tools: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mcp__demo__"))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(tools, ["echo", "add"], "{}", out.stdout);
    // A hidden tool cannot be called, nor seen in one-tool view.
    let out = run(&dir, &["call", "-y", "demo", "env"]).assert_exit(2);
    assert_contains(&out.stderr, "env");
    run(&dir, &["list", "demo", "delete_all"]).assert_exit(2);
    assert!(received(&dir.path("rec"), "tools/call").is_empty());
    run(&dir, &["call", "demo", "echo", "text=ok"]).assert_exit(0);
    // The filter is in the fingerprint: a pin taken without it fails.
    let fp = |dir: &Dir| {
        let v = dir
            .command(["check-config", "--json"])
            .assert_exit(0)
            .stdout_json();
        v["servers"][0]["fingerprint"].as_str().unwrap().to_string()
    };
    let with = fp(&dir);
    let mut widened = entry.clone();
    widened["tools"] = json!({"allow": ["*"]});
    write_mcp_json(&dir, &[("demo", widened)]);
    assert_ne!(fp(&dir), with);
    let out = run_allowed(&dir, &format!("demo@{with}"), &["list", "demo"])
        .assert_exit(3);
    assert_contains(&out.stderr, "demo");
    // A bad filter is an error naming the field.
    let mut bad = entry.clone();
    bad["tools"] = json!({"alow": ["x"]});
    write_mcp_json(&dir, &[("demo", bad)]);
    let out = dir.command(["check-config"]).assert_exit(1);
    assert_contains(
        &out.stdout,
        "unknown key 'alow' in 'tools'; did you mean 'allow'?",
    );
}

#[test]
fn list_grep_keeps_matching_items_across_servers() {
    let dir = Dir::new("trial_grep");
    write_mcp_json(
        &dir,
        &[
            ("demo", fixture_server(&[])),
            ("other", fixture_server(&["--extra-tool=summit"])),
        ],
    );
    let out = run_allowed(&dir, "demo,other", &["list", "--grep", "SUM"])
        .assert_exit(0);
    // add's description says "sum"; summit's name has it.
    assert_contains(&out.stdout, "mcp__demo__add");
    assert_contains(&out.stdout, "mcp__other__add");
    assert_contains(&out.stdout, "mcp__other__summit");
    assert_absent(&out.stdout, "mcp__demo__echo");
    let out = run_allowed(
        &dir,
        "demo",
        &["list", "--grep", "mcp__demo__e?ho", "--json"],
    )
    .assert_exit(0);
    let tools = out.stdout_json()["servers"][0]["tools"].clone();
    assert_eq!(tools.as_array().map(Vec::len), Some(1), "{tools:#}");
    let out =
        run_allowed(&dir, "demo", &["list", "--grep", "nothing-like-it"])
            .assert_exit(0);
    // Not "(no tools)": the server has tools, none of them matched.
    assert_contains(&out.stdout, "  (no tools match 'nothing-like-it')\n");
}

#[test]
fn a_server_without_resources_says_so() {
    let dir = demo(
        "trial_no_resources",
        &[
            "--no-method=resources/list",
            "--no-method=resources/templates/list",
        ],
    );
    let out = run(&dir, &["resources", "demo"]).assert_exit(0);
    assert_eq!(
        out.stdout,
        "demo: rivumi-mcp-fixture 1.0.0 (protocol 2025-11-25)\n  (no resources)\n"
    );
}

#[test]
fn every_command_help_lists_its_exit_codes() {
    let dir = Dir::new("trial_help_exit");
    let commands = [
        "check-config",
        "lock",
        "list",
        "call",
        "resources",
        "read",
        "prompts",
        "prompt",
        "batch",
        "login",
        "logout",
        "discover",
        "status",
        "completions",
    ];
    for c in commands {
        let out = dir.command(["help", c]).assert_exit(0);
        let exit = out
            .stdout
            .split("\nEXIT CODES:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{c}: no EXIT CODES"));
        let exit = exit.split("\n\n").next().unwrap();
        for code in ["0", "2"] {
            assert!(exit.contains(&format!("    {code} ")), "{c}: {exit}");
        }
    }
    let out = dir.command(["help", "call"]).assert_exit(0);
    let exit = out.stdout.split("\nEXIT CODES:\n").nth(1).unwrap();
    for code in ["1 ", "3 ", "4 ", "5 ", "6 ", "7 ", "8 ", "130, 143"] {
        assert_contains(exit, &format!("    {code}"));
    }
}

#[test]
fn answer_takes_yes_and_no_for_a_boolean() {
    let dir = Dir::new("trial_answer_bool");
    let form = json!([{"method": "elicitation/create", "params": {
        "message": "Go on?",
        "requestedSchema": {"type": "object", "properties": {
            "ok": {"type": "boolean"}}, "required": ["ok"]}}}]);
    let file = dir.write("asks.json", form.to_string());
    let server = fixture_server(&["--ask-at-call", file.to_str().unwrap()]);
    write_mcp_json(&dir, &[("demo", server)]);
    for (typed, want) in
        [("y", true), ("no", false), ("YES", true), ("n", false)]
    {
        let answer = format!("ok={typed}");
        let out = run(
            &dir,
            &["call", "-y", "demo", "echo", "text=x", "--answer", &answer],
        )
        .assert_exit(0);
        assert_contains(&out.stdout, &format!(r#""content":{{"ok":{want}}}"#));
    }
    let out = run(
        &dir,
        &["call", "-y", "demo", "echo", "text=x", "--answer", "ok=maybe"],
    )
    .run();
    assert_contains(&out.stderr, "must be yes or no");
}
