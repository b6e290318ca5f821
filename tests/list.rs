//! `list` against the fixture server: the human table (qualified names,
//! read/execute classification, first description line), paging, JSON,
//! resources and prompts, several servers at once, and the allowlist as
//! the only launch authority (refusals start nothing).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::{
    Dir, Output, assert_contains, demo_with_pids, fixture_server, run_allowed,
    write_mcp_json,
};

const HEADER: &str = "demo: rivumi-mcp-fixture 1.0.0 (protocol 2025-11-25)";

/// The fixture's 70-character tool, qualified: cut and hashed to 64.
const LONG_QUALIFIED: &str =
    "mcp__demo__long_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_93854d";

fn long_name() -> String {
    format!("long_{}", "x".repeat(65))
}

/// `(name, qualified name, classification, first description line)` of
/// every fixture tool, in the server's order.
fn expected_tools() -> Vec<(String, &'static str, &'static str, &'static str)>
{
    let t = |n: &str, q, c, d| (n.to_string(), q, c, d);
    vec![
        t("echo", "mcp__demo__echo", "read", "Echo text back."),
        t("add", "mcp__demo__add", "execute", "Add two numbers."),
        t(
            "types",
            "mcp__demo__types",
            "read",
            "Take one argument of every JSON type.",
        ),
        t(
            "delete_all",
            "mcp__demo__delete_all",
            "execute",
            "Pretend to delete everything.",
        ),
        t(
            "string_hint",
            "mcp__demo__string_hint",
            "execute",
            "Carry a malformed annotation.",
        ),
        t("fail", "mcp__demo__fail", "execute", "Always fail."),
        t("media", "mcp__demo__media", "execute", "Return non-text content."),
        t("slow", "mcp__demo__slow", "execute", "Wait before answering."),
        t(
            "env",
            "mcp__demo__env",
            "execute",
            "Show the server's environment.",
        ),
        t("big", "mcp__demo__big", "execute", "Return a large text block."),
        t(
            "ansi",
            "mcp__demo__ansi",
            "execute",
            "Return terminal escape sequences.",
        ),
        t(
            "log_and_notify",
            "mcp__demo__log_and_notify",
            "execute",
            "Send a log message and tools/list_changed.",
        ),
        t(
            "odd name!",
            "mcp__demo__odd_name_",
            "execute",
            "Have an awkward name.",
        ),
        (long_name(), LONG_QUALIFIED, "execute", "Have a 70-character name."),
    ]
}

/// The lines under each tool's row: its parameters (cut to 100
/// characters at a whole parameter) and the original of a rewritten name.
fn expected_details(name: &str) -> Vec<String> {
    let lines: &[&str] = match name {
        "echo" => &["(text: string)"],
        "add" => &["(a: number, b: number)"],
        "types" => {
            &["(arr?: array, b?: boolean, either?: integer|string, i?: \
             integer, n?: number, ...)"]
        }
        "slow" => &["(ms?: integer)"],
        "big" => &["(bytes?: integer)"],
        "odd name!" => &["name: odd name!"],
        n if n.starts_with("long_") => {
            return vec![format!("      name: {n}")];
        }
        _ => &[],
    };
    lines.iter().map(|l| format!("      {l}")).collect()
}

/// The columns of a table row (separated by two or more spaces).
fn columns(line: &str) -> Vec<&str> {
    line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect()
}

/// Checks the tool table of server `demo` in `lines` (header first).
#[track_caller]
fn assert_demo_table(lines: &[&str]) {
    let expected = expected_tools();
    assert_eq!(lines[0], HEADER);
    let rows: Vec<&str> = lines[1..]
        .iter()
        .copied()
        .filter(|l| !l.starts_with("      "))
        .collect();
    assert_eq!(rows.len(), expected.len(), "{lines:#?}");
    for (line, (_, q, class, desc)) in rows.iter().zip(&expected) {
        assert!(line.starts_with("  mcp__"), "{line:?}");
        // Each fixture description has a second line, which the marker
        // counts.
        let desc = format!("{desc} (1 more line)");
        assert_eq!(columns(line), [*q, *class, desc.as_str()], "{line:?}");
    }
    let mut expected_lines = vec![lines[0].to_string()];
    for ((name, ..), row) in expected.iter().zip(&rows) {
        expected_lines.push(row.to_string());
        expected_lines.extend(expected_details(name));
    }
    assert_eq!(lines, expected_lines);
}

/// The `tools` of `servers[i]` in `list --json` output.
fn json_tools(out: &Output, i: usize) -> Vec<Value> {
    match &out.stdout_json()["servers"][i]["tools"] {
        Value::Array(tools) => tools.clone(),
        other => panic!("no tools array: {other}\n{}", out.stdout),
    }
}

#[test]
fn tools_show_qualified_name_class_and_first_description_line() {
    let (dir, _) = demo_with_pids("list_human", &[]);
    let out = run_allowed(&dir, "demo", &["list"]).assert_exit(0);
    assert_eq!(out.stderr, "");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_demo_table(&lines);
    assert!(LONG_QUALIFIED.len() <= 64);
    // --tools is the default.
    let again =
        run_allowed(&dir, "demo", &["list", "demo", "--tools"]).assert_exit(0);
    assert_eq!(again.stdout, out.stdout);
}

#[test]
fn small_pages_still_list_every_tool() {
    for (size, pages) in [("2", 7), ("1", 14)] {
        let dir = Dir::new("list_paging");
        let rec = dir.path("rec");
        let rec_arg = format!("--record={}", rec.display());
        let server = fixture_server(&["--page-size", size, &rec_arg]);
        write_mcp_json(&dir, &[("demo", server)]);
        let out = run_allowed(&dir, "demo", &["list"]).assert_exit(0);
        assert_demo_table(&out.stdout.lines().collect::<Vec<_>>());
        let requests = std::fs::read_to_string(&rec).unwrap();
        let n = requests.matches("\"method\":\"tools/list\"").count();
        assert_eq!(n, pages, "page size {size}");
        let out =
            run_allowed(&dir, "demo", &["list", "--json"]).assert_exit(0);
        assert_eq!(json_tools(&out, 0).len(), 14);
        assert_eq!(out.stdout_json()["servers"][0]["complete"], true);
    }
}

#[test]
fn json_output_decorates_every_tool() {
    let (dir, _) = demo_with_pids("list_json", &[]);
    let out = run_allowed(&dir, "demo", &["list", "--json"]).assert_exit(0);
    assert_eq!(out.stderr, "");
    let v = out.stdout_json();
    let servers = v["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1);
    let s = &servers[0];
    assert_eq!(s["server"], "demo");
    assert_eq!(s["ok"], true);
    assert_eq!(s["protocol"], "2025-11-25");
    assert_eq!(s["serverInfo"]["name"], "rivumi-mcp-fixture");
    assert_eq!(s["complete"], true);
    let tools = json_tools(&out, 0);
    let expected = expected_tools();
    assert_eq!(tools.len(), expected.len());
    for (t, (name, q, class, _)) in tools.iter().zip(&expected) {
        assert_eq!(t["name"], name.as_str());
        assert_eq!(t["qualified_name"], *q, "{name}");
        assert_eq!(t["classification"], *class, "{name}");
        assert_eq!(t["server"], "demo");
        assert!(t["inputSchema"].is_object(), "{name}");
    }
}

#[test]
fn repeated_cursor_marks_the_listing_incomplete() {
    let (dir, _) = demo_with_pids("list_repeat_cursor", &["--repeat-cursor"]);
    let warning = "rivumi-mcp: warning: server 'demo': tools/list: stopped \
                   paging (the server repeated a cursor); the list is \
                   incomplete\n";
    let out = run_allowed(&dir, "demo", &["list", "--json"]).assert_exit(0);
    assert_eq!(out.stderr, warning);
    let v = out.stdout_json();
    assert_eq!(v["servers"][0]["complete"], false);
    assert_eq!(v["servers"][0]["tools"][0]["name"], "echo");
    let out = run_allowed(&dir, "demo", &["list"]).assert_exit(0);
    assert_eq!(out.stderr, warning);
    assert!(
        out.stdout.ends_with("\n  (tools: incomplete, see stderr)\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn resources_prompts_and_all() {
    let (dir, _) = demo_with_pids("list_all", &[]);
    let resources: Vec<Vec<&str>> = vec![
        vec![
            "resource fixture://docs/readme",
            "text/plain",
            "readme",
            "A short readme.",
        ],
        vec![
            "resource fixture://docs/guide",
            "text/markdown",
            "guide",
            "A markdown guide.",
        ],
        vec![
            "resource fixture://bin/blob",
            "application/octet-stream",
            "blob",
            "Bytes 0-255.",
        ],
        vec![
            "resource fixture://docs/ansi",
            "text/plain",
            "ansi",
            "Text full of escapes.",
        ],
        vec!["template fixture://docs/{name}", "doc"],
    ];
    let prompts: Vec<Vec<&str>> = vec![
        vec!["prompt greet", "name [style]", "Greet someone by name."],
        vec!["prompt plain", "A prompt without arguments."],
    ];
    let rows = |out: &Output| -> Vec<Vec<String>> {
        out.stdout
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with("  mcp__") && !l.starts_with("      "))
            .map(|l| columns(l).into_iter().map(String::from).collect())
            .collect()
    };
    let out =
        run_allowed(&dir, "demo", &["list", "--resources"]).assert_exit(0);
    assert_eq!(out.stdout.lines().next(), Some(HEADER));
    assert!(!out.stdout.contains("mcp__"), "{}", out.stdout);
    assert_eq!(rows(&out), resources);

    let out = run_allowed(&dir, "demo", &["list", "--prompts"]).assert_exit(0);
    assert!(!out.stdout.contains("mcp__"), "{}", out.stdout);
    assert_eq!(rows(&out), prompts);

    let out = run_allowed(&dir, "demo", &["list", "--all"]).assert_exit(0);
    let tools = out.stdout.lines().filter(|l| l.starts_with("  mcp__"));
    assert_eq!(tools.count(), 14);
    let both: Vec<Vec<&str>> =
        resources.iter().chain(&prompts).cloned().collect();
    assert_eq!(rows(&out), both);

    let out =
        run_allowed(&dir, "demo", &["list", "--all", "--json"]).assert_exit(0);
    let s = &out.stdout_json()["servers"][0];
    let uris: Vec<&str> = s["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "fixture://docs/readme",
            "fixture://docs/guide",
            "fixture://bin/blob",
            "fixture://docs/ansi"
        ]
    );
    assert_eq!(
        s["resourceTemplates"],
        json!([{"uriTemplate": "fixture://docs/{name}", "name": "doc"}])
    );
    let names: Vec<&str> = s["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["greet", "plain"]);
    assert_eq!(s["tools"].as_array().unwrap().len(), 14);
    assert_eq!(s["complete"], true);
}

#[test]
fn servers_start_in_parallel_and_print_in_config_order() {
    let dir = Dir::new("list_parallel");
    // The first server in the file is the slower one; the allowlist
    // names them in the other order.
    write_mcp_json(
        &dir,
        &[
            ("zeta", fixture_server(&["--slow-start", "1000"])),
            ("alpha", fixture_server(&["--slow-start", "800"])),
        ],
    );
    let start = Instant::now();
    let out = run_allowed(&dir, "alpha,zeta", &["list"]).assert_exit(0);
    let took = start.elapsed();
    let headers: Vec<&str> =
        out.stdout.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(
        headers,
        [
            "zeta: rivumi-mcp-fixture 1.0.0 (protocol 2025-11-25)",
            "alpha: rivumi-mcp-fixture 1.0.0 (protocol 2025-11-25)",
        ]
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    // Each: a header, 14 tools and 7 lines of parameters or names.
    assert_eq!(lines.len(), 44);
    assert_eq!(columns(lines[1])[0], "mcp__zeta__echo");
    assert_eq!(columns(lines[23])[0], "mcp__alpha__echo");
    // One after the other would take at least 1.8 s.
    assert!(took < Duration::from_millis(1600), "took {took:?}");
}

#[test]
fn failing_server_does_not_hide_the_other() {
    let dir = Dir::new("list_one_fails");
    write_mcp_json(
        &dir,
        &[
            ("broken", fixture_server(&["--crash-at-init"])),
            ("demo", fixture_server(&[])),
        ],
    );
    let out = run_allowed(&dir, "demo,broken", &["list"]).assert_exit(4);
    assert_demo_table(&out.stdout.lines().collect::<Vec<_>>());
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'broken': server exited (exit status: 3); last \
         lines of its stderr:\n    fatal: cannot start (fixture)\n"
    );
    let out =
        run_allowed(&dir, "demo,broken", &["list", "--json"]).assert_exit(4);
    let v = out.stdout_json();
    let s = v["servers"].as_array().unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(s[0]["server"], "broken");
    assert_eq!(s[0]["ok"], false);
    assert_eq!(s[0]["error"]["code"], "server");
    assert_contains(
        s[0]["error"]["message"].as_str().unwrap(),
        "exit status: 3",
    );
    assert_eq!(s[1]["server"], "demo");
    assert_eq!(s[1]["ok"], true);
    assert_eq!(s[1]["tools"].as_array().unwrap().len(), 14);
    // The one line on stderr is the error object.
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    let e: Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(e["error"]["server"], "broken");
}

#[test]
fn errors_of_several_servers_are_reported_in_config_order() {
    let dir = Dir::new("list_errors_order");
    write_mcp_json(
        &dir,
        &[
            ("first", fixture_server(&["--crash-at-init"])),
            ("second", fixture_server(&["--exit-immediately"])),
        ],
    );
    let out = run_allowed(&dir, "first,second", &["list"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    let errors: Vec<&str> =
        out.stderr.lines().filter(|l| l.starts_with("rivumi-mcp: ")).collect();
    assert_eq!(errors.len(), 2, "{}", out.stderr);
    assert!(
        errors[0].starts_with("rivumi-mcp: server 'first': "),
        "{errors:?}"
    );
    assert!(
        errors[1].starts_with("rivumi-mcp: server 'second': "),
        "{errors:?}"
    );
}

// ---------------------------------------------------------------------------
// The allowlist
// ---------------------------------------------------------------------------

/// Two servers, `demo` and `other`, each with its own pid file.
fn two_servers(test: &str) -> (Dir, PathBuf, PathBuf) {
    let dir = Dir::new(test);
    let (a, b) = (dir.path("demo.pids"), dir.path("other.pids"));
    let arg = |p: &PathBuf| format!("--pid-file={}", p.display());
    write_mcp_json(
        &dir,
        &[
            ("demo", fixture_server(&[&arg(&a)])),
            ("other", fixture_server(&[&arg(&b)])),
        ],
    );
    (dir, a, b)
}

#[test]
fn nothing_allowed_refuses_naming_servers_and_the_variable() {
    let (dir, a, b) = two_servers("list_none_allowed");
    let out = dir.command(["list"]).assert_exit(3);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: no configured server is allowed to start; configured: \
         demo, other; name the ones to start in RIVUMI_MCP_ALLOWLIST \
         (comma-separated), which is empty or unset\n"
    );
    let out = run_allowed(&dir, "unrelated", &["list"]).assert_exit(3);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: no configured server is allowed to start; configured: \
         demo, other; name the ones to start in RIVUMI_MCP_ALLOWLIST \
         (comma-separated)\n"
    );
    assert!(!a.exists() && !b.exists(), "a server was spawned");
}

#[test]
fn named_server_not_allowed_is_refused_and_not_spawned() {
    let (dir, a, b) = two_servers("list_not_allowed");
    let refusal = "rivumi-mcp: server 'other': not allowed to start: add \
                   'other' to RIVUMI_MCP_ALLOWLIST\n";
    let out = run_allowed(&dir, "demo", &["list", "other"]).assert_exit(3);
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr, refusal);
    // Nothing starts when one of the named servers may not.
    let out =
        run_allowed(&dir, "demo", &["list", "demo", "other"]).assert_exit(3);
    assert_eq!(out.stdout, "");
    assert_eq!(out.stderr, refusal);
    let out = run_allowed(&dir, "demo", &["call", "other", "echo", "text=hi"])
        .assert_exit(3);
    assert_eq!(out.stderr, refusal);
    assert!(!a.exists(), "demo was spawned");
    assert!(!b.exists(), "other was spawned");
}

#[test]
fn unknown_server_is_a_usage_error_with_a_suggestion() {
    let (dir, a, b) = two_servers("list_unknown_server");
    let out = run_allowed(&dir, "demo", &["list", "demoo"]).assert_exit(2);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: no server 'demoo' in .mcp.json (configured: demo, \
         other); did you mean 'demo'?\n"
    );
    let out =
        run_allowed(&dir, "demo", &["call", "mcp__othr__echo"]).assert_exit(2);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: no server 'othr' in .mcp.json (configured: demo, \
         other); did you mean 'other'?\n"
    );
    assert!(!a.exists() && !b.exists(), "a server was spawned");
}

/// The fingerprint `check-config --json` shows for `demo`.
fn fingerprint(dir: &Dir) -> String {
    let out = dir.command(["check-config", "--json"]).assert_exit(0);
    let v = out.stdout_json();
    let s = v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "demo")
        .expect("demo in check-config");
    s["fingerprint"].as_str().expect("a fingerprint").to_string()
}

#[test]
fn pinned_allowlist_entry_starts_the_server() {
    let (dir, _) = demo_with_pids("list_pinned", &[]);
    let pin = format!("demo@{}", fingerprint(&dir));
    let out = run_allowed(&dir, &pin, &["list"]).assert_exit(0);
    assert_demo_table(&out.stdout.lines().collect::<Vec<_>>());
    assert_eq!(out.stderr, "");
}

#[test]
fn pin_mismatch_refuses_and_starts_nothing() {
    let (dir, pids) = demo_with_pids("list_pin_mismatch", &[]);
    let pin = format!("demo@{}", fingerprint(&dir));
    // The entry changes after it was pinned.
    let pid_arg = format!("--pid-file={}", pids.display());
    let changed = fixture_server(&["--page-size", "5", &pid_arg]);
    write_mcp_json(&dir, &[("demo", changed)]);
    let now = fingerprint(&dir);
    let out = run_allowed(&dir, &pin, &["list"]).assert_exit(3);
    assert_eq!(out.stdout, "");
    // Which class changed is told by one hex digit of each class hash;
    // the digits of the old and new args may agree by chance.
    let said = |what: &str| {
        format!(
            "rivumi-mcp: server 'demo': pinned in RIVUMI_MCP_ALLOWLIST but \
             {what} changed since (fingerprint is now {now}); review the \
             entry, then update the pin\n"
        )
    };
    assert!(
        out.stderr == said("args") || out.stderr == said("its launch spec"),
        "{}",
        out.stderr
    );
    assert!(!pids.exists(), "the server was spawned");
}

#[test]
fn wildcard_allowlist_is_refused() {
    let (dir, pids) = demo_with_pids("list_wildcard", &[]);
    for allow in ["*", "demo,*"] {
        let out = run_allowed(&dir, allow, &["list"]).assert_exit(3);
        assert_eq!(out.stdout, "");
        assert_eq!(
            out.stderr,
            "rivumi-mcp: RIVUMI_MCP_ALLOWLIST: '*' is a wildcard; name each \
             server (there are no wildcards)\n"
        );
        let out = run_allowed(&dir, allow, &["list", "demo"]).assert_exit(3);
        assert_contains(&out.stderr, "is a wildcard");
    }
    assert!(!pids.exists(), "the server was spawned");
}

#[test]
fn parameters_show_as_one_bounded_line_under_each_tool() {
    let dir = Dir::new("list_signatures");
    write_mcp_json(&dir, &[("demo", fixture_server(&["--shaped-tools"]))]);
    let out = run_allowed(&dir, "demo", &["list"]).assert_exit(0);
    let after = |tool: &str| -> Vec<&str> {
        let mut lines = out.stdout.lines();
        lines.find(|l| columns(l).first() == Some(&tool));
        lines.take_while(|l| l.starts_with("      ")).collect()
    };
    // Required first, then by name; optional marked, enums and
    // constants by value, unions with |, array items as T[]; whole
    // parameters only, cut at 100 characters.
    let shapes = after("mcp__demo__shapes");
    assert_eq!(
        shapes,
        ["      (level: 1|2|3, id?: integer|string, limit?: integer|null, \
          mode?: \"fast\", note?: string, ...)"]
    );
    assert!(shapes[0].chars().count() <= 100);
    assert_eq!(after("mcp__demo__wrapped"), ["      (text?: string)"]);
    assert_eq!(after("mcp__demo__odd_name_"), ["      name: odd name!"]);
    // No parameters, no line.
    assert_eq!(after("mcp__demo__fail"), Vec::<&str>::new());
    // --json has the schema itself, untouched.
    let out = run_allowed(&dir, "demo", &["list", "--json"]).assert_exit(0);
    let tools = json_tools(&out, 0);
    let shapes = tools.iter().find(|t| t["name"] == "shapes").unwrap();
    assert_eq!(
        shapes["inputSchema"]["$defs"]["Unit"],
        json!({"enum": ["c", "f"]})
    );
}
