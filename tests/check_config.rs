//! `rivumi-mcp check-config`: the configuration cases of `fixtures/config/`
//! and the behaviour around them (unreadable files, output formats, the
//! allowlist verdicts, fingerprints, secrets).
//!
//! # The case files
//!
//! Each case is `fixtures/config/<name>.json` plus `<name>.expected`:
//!
//! ```text
//! exit: 1
//! # What the case is meant to trigger (free text, any number of lines).
//! env: NAME=value          (optional, repeatable: set for the run)
//! allowlist: a,b@<fp>      (optional: RIVUMI_MCP_ALLOWLIST)
//! args: --strict           (optional: extra arguments, split on spaces)
//! absent: hunter2          (optional, repeatable: must not be printed)
//! CONFIG:3:5: error: server 'a': ... [/mcpServers/a]
//! CONFIG: 1 server, 1 error, 0 warnings: invalid
//! ```
//!
//! Everything from the first line starting with `CONFIG` on is the exact
//! set of stdout lines of the human output that start with the file name
//! (the diagnostics and the summary), with the file name shown as `CONFIG`.
//! The binary runs as `rivumi-mcp check-config -c <absolute path> [args]`.
//! Each case also runs with `--json`, which must agree with the human
//! output line for line.
//!
//! To regenerate the expectations after a deliberate change of messages,
//! run `RIVUMI_MCP_BLESS=1 cargo test --test integration check_config`,
//! then review every changed line with `git diff fixtures/config`: a wrong
//! expectation baked in is worse than none.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{Dir, Output, TestCommand, assert_absent, assert_contains};

/// The fewest cases allowed, so that none are deleted silently.
const MIN_CASES: usize = 45;

/// The parsed `.expected` file of one case.
#[derive(Debug, Default)]
struct Case {
    name: String,
    json: PathBuf,
    expected_path: PathBuf,
    /// The header lines as written (kept when blessing).
    header: Vec<String>,
    exit: Option<i32>,
    env: Vec<(String, String)>,
    args: Vec<String>,
    absent: Vec<String>,
    lines: Vec<String>,
}

fn cases_dir() -> PathBuf {
    crate::util::repo_root().join("fixtures").join("config")
}

fn load_cases() -> Vec<Case> {
    let dir = cases_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut cases = vec![];
    for file in &names {
        if let Some(name) = file.strip_suffix(".expected") {
            let json = format!("{name}.json");
            assert!(names.contains(&json), "{file} has no {json}");
        } else if let Some(name) = file.strip_suffix(".json") {
            let expected = format!("{name}.expected");
            assert!(names.contains(&expected), "{file} has no {expected}");
            cases.push(parse_case(name, &dir));
        } else {
            panic!("unexpected file {file} in {}", dir.display());
        }
    }
    cases
}

fn parse_case(name: &str, dir: &Path) -> Case {
    let expected_path = dir.join(format!("{name}.expected"));
    let text = std::fs::read_to_string(&expected_path)
        .unwrap_or_else(|e| panic!("{}: {e}", expected_path.display()));
    let mut case = Case {
        name: name.to_string(),
        json: dir.join(format!("{name}.json")),
        expected_path,
        ..Case::default()
    };
    let mut in_header = true;
    for (i, line) in text.lines().enumerate() {
        if in_header && line.starts_with("CONFIG") {
            in_header = false;
        }
        if !in_header {
            case.lines.push(line.to_string());
            continue;
        }
        case.header.push(line.to_string());
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || panic!("{name}.expected:{}: bad header {line:?}", i + 1);
        let Some((key, value)) = line.split_once(": ") else { bad() };
        match key {
            "exit" => case.exit = value.parse().ok(),
            "env" => {
                let Some((k, v)) = value.split_once('=') else { bad() };
                case.env.push((k.to_string(), v.to_string()));
            }
            "allowlist" => case
                .env
                .push(("RIVUMI_MCP_ALLOWLIST".to_string(), value.to_string())),
            "args" => {
                case.args.extend(value.split_whitespace().map(String::from))
            }
            "absent" => case.absent.push(value.to_string()),
            _ => bad(),
        }
    }
    if case.exit.is_none() && !blessing() {
        panic!("{name}.expected: the first line must be 'exit: <code>'");
    }
    case
}

fn blessing() -> bool {
    std::env::var_os("RIVUMI_MCP_BLESS").is_some_and(|v| v == "1")
}

fn case_command(dir: &Dir, case: &Case, extra: &[&str]) -> TestCommand {
    let mut cmd = dir.command(["check-config", "-c"]);
    cmd.arg(&case.json).args(&case.args).args(extra);
    for (k, v) in &case.env {
        cmd.env(k, v);
    }
    cmd
}

/// The stdout lines that start with the file name, shown as `CONFIG`.
fn config_lines(stdout: &str, path: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix(path))
        .filter(|rest| rest.starts_with(':'))
        .map(|rest| format!("CONFIG{rest}"))
        .collect()
}

/// Renders one `--json` diagnostic the way the human output shows it.
fn human_line(d: &Value) -> String {
    let server = match d["server"].as_str() {
        Some(s) => format!("server '{s}': "),
        None => String::new(),
    };
    let pointer = d["pointer"].as_str().unwrap_or("<no pointer>");
    let at = if pointer.is_empty() {
        String::new()
    } else {
        format!(" [{pointer}]")
    };
    format!(
        "CONFIG:{}:{}: {}: {server}{}{at}",
        d["line"],
        d["column"],
        d["severity"].as_str().unwrap_or("<no severity>"),
        d["message"].as_str().unwrap_or("<no message>"),
    )
}

/// Runs one case; returns what went wrong (empty when it passed).
fn check_case(dir: &Dir, case: &Case) -> Vec<String> {
    let mut problems = vec![];
    let path = case.json.display().to_string();
    let cmd = case_command(dir, case, &[]);
    let out = cmd.run();
    let actual = config_lines(&out.stdout, &path);
    if blessing() {
        bless(case, &out, &actual);
        return problems;
    }
    let exit = case.exit.unwrap_or(-1);
    if out.code != Some(exit) {
        problems
            .push(format!("exit code: expected {exit}, got {:?}", out.code));
    }
    if actual != case.lines {
        problems.push(format!(
            "lines differ\n--- expected\n{}\n+++ actual\n{}",
            case.lines.join("\n"),
            actual.join("\n")
        ));
    }
    let stderr = out.stderr.replace(&path, "CONFIG");
    match exit {
        0 if !stderr.is_empty() => {
            problems.push(format!("stderr should be empty: {stderr:?}"))
        }
        1 if !(stderr.starts_with("rivumi-mcp: CONFIG: invalid (")
            && stderr.lines().count() == 1) =>
        {
            problems.push(format!("unexpected stderr: {stderr:?}"))
        }
        _ => {}
    }
    // The file's own path may contain anything; it is not what is checked.
    let all = out.all().replace(&path, "CONFIG");
    for s in &case.absent {
        if all.contains(s.as_str()) {
            problems.push(format!("{s:?} is printed:\n{all}"));
        }
    }
    problems.extend(check_json_agrees(dir, case, &actual, exit));
    if !problems.is_empty() {
        problems.push(cmd.report(&out));
    }
    problems
}

/// The `--json` run of a case must say the same as the human one.
fn check_json_agrees(
    dir: &Dir,
    case: &Case,
    human: &[String],
    exit: i32,
) -> Vec<String> {
    let mut problems = vec![];
    let out = case_command(dir, case, &["--json"]).run();
    if out.code != Some(exit) {
        problems.push(format!("--json: exit code {:?}", out.code));
    }
    let path = case.json.display().to_string();
    let all = out.all().replace(&path, "CONFIG");
    for s in &case.absent {
        if all.contains(s.as_str()) {
            problems.push(format!("--json: {s:?} is printed"));
        }
    }
    let Ok(v) = serde_json::from_str::<Value>(&out.stdout) else {
        problems.push(format!("--json: stdout is not JSON:\n{}", out.stdout));
        return problems;
    };
    let diags = v["diagnostics"].as_array().cloned().unwrap_or_default();
    let rendered: Vec<String> = diags.iter().map(human_line).collect();
    let human_diags: Vec<String> = human
        .iter()
        .filter(|l| l.starts_with("CONFIG:") && !l.starts_with("CONFIG: "))
        .cloned()
        .collect();
    if rendered != human_diags {
        problems.push(format!(
            "--json diagnostics differ from the human ones\n--- human\n{}\n\
             +++ json\n{}",
            human_diags.join("\n"),
            rendered.join("\n")
        ));
    }
    let count =
        |sev: &str| diags.iter().filter(|d| d["severity"] == sev).count();
    if v["errors"] != count("error") || v["warnings"] != count("warning") {
        problems.push(format!(
            "--json: errors/warnings counts disagree with diagnostics: {v}"
        ));
    }
    if v["valid"] != (exit == 0) {
        problems.push(format!("--json: valid is {}", v["valid"]));
    }
    problems
}

fn bless(case: &Case, out: &Output, actual: &[String]) {
    let mut text = String::new();
    let code = out.code.map_or("none".to_string(), |c| c.to_string());
    text.push_str(&format!("exit: {code}\n"));
    for h in case.header.iter().filter(|h| !h.starts_with("exit:")) {
        text.push_str(h);
        text.push('\n');
    }
    for l in actual {
        text.push_str(l);
        text.push('\n');
    }
    std::fs::write(&case.expected_path, text)
        .unwrap_or_else(|e| panic!("{}: {e}", case.expected_path.display()));
}

#[test]
fn fixture_cases() {
    let cases = load_cases();
    assert!(
        cases.len() >= MIN_CASES,
        "only {} cases in {}; at least {MIN_CASES} are required",
        cases.len(),
        cases_dir().display()
    );
    let dir = Dir::new("check_config_fixture_cases");
    let mut failures = vec![];
    for case in &cases {
        let problems = check_case(&dir, case);
        if !problems.is_empty() {
            failures.push(format!(
                "=== case {} ({})\n{}",
                case.name,
                case.expected_path.display(),
                problems.join("\n")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed (set RIVUMI_MCP_BLESS=1 to regenerate, then \
         review the diff):\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

// ---------------------------------------------------------------------
// Files that cannot be read: exit 2, one line on stderr, nothing on
// stdout, and never a hang.

fn assert_unreadable(out: &Output, needle: &str) {
    assert_eq!(out.stdout, "", "nothing on stdout");
    assert_eq!(out.stderr.lines().count(), 1, "one line: {}", out.stderr);
    assert!(out.stderr.starts_with("rivumi-mcp: "), "{}", out.stderr);
    assert_contains(&out.stderr, needle);
}

#[test]
fn fifo_is_refused_without_hanging() {
    let dir = Dir::new("check_config_fifo");
    let fifo = dir.path("config.fifo");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo failed");
    // No writer ever opens the FIFO: reading it would block forever.
    let out = dir
        .command(["check-config", "-c", "config.fifo"])
        .timeout(std::time::Duration::from_secs(20))
        .assert_exit(2);
    assert_unreadable(&out, "config.fifo: not a regular file");
}

#[test]
fn device_is_refused() {
    let dir = Dir::new("check_config_device");
    let out = dir.command(["check-config", "-c", "/dev/zero"]).assert_exit(2);
    assert_unreadable(&out, "/dev/zero: not a regular file");
}

#[test]
fn directory_is_refused() {
    let dir = Dir::new("check_config_directory");
    dir.create_dir("conf.json");
    let out = dir.command(["check-config", "-c", "conf.json"]).assert_exit(2);
    assert_unreadable(&out, "conf.json: ");
}

#[test]
fn oversized_file_is_refused() {
    let dir = Dir::new("check_config_oversized");
    let limit = 4 << 20;
    // Exactly at the limit: read and valid.
    let mut text = b"{\"mcpServers\": {}}".to_vec();
    text.resize(limit, b' ');
    dir.write("at-limit.json", &text);
    dir.command(["check-config", "-c", "at-limit.json"]).assert_exit(0);
    // One byte more: refused before it is parsed.
    text.push(b'\n');
    dir.write("too-big.json", &text);
    let out =
        dir.command(["check-config", "-c", "too-big.json"]).assert_exit(2);
    assert_unreadable(
        &out,
        &format!(
            "too-big.json: file is {} bytes; the limit is {limit}",
            limit + 1
        ),
    );
}

#[test]
fn non_utf8_file_is_refused() {
    let dir = Dir::new("check_config_non_utf8");
    dir.write("latin1.json", b"{\"mcpServers\": {\"caf\xe9\": {}}}");
    let out =
        dir.command(["check-config", "-c", "latin1.json"]).assert_exit(2);
    assert_unreadable(&out, "latin1.json: not UTF-8");
    assert_contains(&out.stderr, "offset 20");
}

#[test]
fn missing_file_given_with_c() {
    let dir = Dir::new("check_config_missing_c");
    let out = dir.command(["check-config", "-c", "nope.json"]).assert_exit(2);
    assert_unreadable(&out, "nope.json: cannot open");
    // The ./.mcp.json hint is only for the default path.
    assert_absent(&out.stderr, "reads ./.mcp.json only");
}

#[test]
fn default_path_is_dot_mcp_json_in_cwd_only() {
    let dir = Dir::new("check_config_default_path");
    // A parent directory's file is never used.
    dir.write(".mcp.json", r#"{"mcpServers": {"up": {"command": "x"}}}"#);
    let sub = dir.create_dir("sub");
    let out = dir.command(["check-config"]).current_dir(&sub).assert_exit(2);
    assert_unreadable(&out, ".mcp.json");
    let out = dir.command(["check-config"]).assert_exit(0);
    assert_contains(&out.stdout, ".mcp.json: 1 server, 0 errors");
}

// ---------------------------------------------------------------------
// Output formats.

const TWO_PROBLEMS: &str = r#"{
  "mcpServers": {
    "ok": {"command": "srv"},
    "bad": {"url": "http://example.com/mcp"},
    "warn": {"command": "srv", "colour": "blue"}
  }
}
"#;

#[test]
fn github_format() {
    let dir = Dir::new("check_config_github");
    // ':' and ',' in the file name must be escaped in the property.
    dir.write("my,conf:1.json", TWO_PROBLEMS);
    let out = dir
        .command([
            "check-config",
            "--format",
            "github",
            "-c",
            "my,conf:1.json",
        ])
        .assert_exit(1);
    let lines: Vec<&str> =
        out.stdout.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(
        lines,
        [
            "::error file=my%2Cconf%3A1.json,line=4,col=20::server 'bad': \
             url: plain http is only allowed to a loopback address \
             (127.0.0.0/8, [::1], localhost); use https (/mcpServers/bad/url)",
            "::warning file=my%2Cconf%3A1.json,line=5,col=32::server 'warn': \
             unknown key (/mcpServers/warn)",
        ],
        "{}",
        out.stdout
    );
    // The table and summary follow, as in the human format.
    assert_contains(&out.stdout, "\nSERVER ");
    assert_contains(
        &out.stdout,
        "my,conf:1.json: 3 servers, 1 error, 1 warning: invalid\n",
    );
    assert_eq!(out.stderr, "rivumi-mcp: my,conf:1.json: invalid (1 error)\n");
}

#[test]
fn human_format_lists_every_server_in_file_order() {
    let dir = Dir::new("check_config_human_table");
    dir.write(".mcp.json", TWO_PROBLEMS);
    let out = dir.command(["check-config"]).assert_exit(1);
    let table: Vec<Vec<&str>> = out
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("SERVER"))
        .take_while(|l| !l.starts_with(".mcp.json"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        table[0],
        ["SERVER", "TRANSPORT", "AUTH", "ALLOWLIST", "FINGERPRINT", "TARGET"]
    );
    let names: Vec<&str> = table[1..].iter().map(|r| r[0]).collect();
    assert_eq!(names, ["ok", "bad", "warn"]);
    assert_eq!(
        table[2],
        ["bad", "?", "?", "not", "allowed", "-", "(invalid", "entry)"]
    );
}

#[test]
fn format_human_and_json_flag_conflicts() {
    let dir = Dir::new("check_config_format_flags");
    dir.write(".mcp.json", r#"{"mcpServers": {}}"#);
    let out =
        dir.command(["check-config", "--format", "human"]).assert_exit(0);
    assert_contains(
        &out.stdout,
        ".mcp.json: 0 servers, 0 errors, 0 warnings: valid",
    );
    let out = dir.command(["check-config", "--format", "json"]).assert_exit(0);
    assert_eq!(out.stdout_json()["valid"], true);
    dir.command(["check-config", "--format", "github", "--json"])
        .assert_exit(2);
    dir.command(["check-config", "--format", "xml"]).assert_exit(2);
}

#[test]
fn json_output_shape() {
    let dir = Dir::new("check_config_json_shape");
    dir.write(
        ".mcp.json",
        r#"{
  "mcpServers": {
    "local": {"command": "srv", "args": ["-x"]},
    "remote": {"url": "https://example.com/mcp",
               "bearer_token_env_var": "TOKEN"},
    "broken": {"url": "ftp://example.com/"},
    "odd": {"command": "srv", "colour": "blue"}
  }
}
"#,
    );
    let out = dir
        .command(["check-config", "--json"])
        .env("TOKEN", "t")
        .env("RIVUMI_MCP_ALLOWLIST", "local,broken")
        .assert_exit(1);
    let v = out.stdout_json();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "allowlist_error",
            "diagnostics",
            "errors",
            "file",
            "serve",
            "servers",
            "valid",
            "warnings"
        ]
    );
    assert_eq!(v["file"], ".mcp.json");
    assert_eq!(v["valid"], false);
    assert_eq!(v["errors"], 1);
    assert_eq!(v["warnings"], 1);
    assert_eq!(v["allowlist_error"], Value::Null);
    assert_eq!(
        v["diagnostics"],
        serde_json::json!([
            {
                "severity": "error",
                "server": "broken",
                "pointer": "/mcpServers/broken/url",
                "line": 6,
                "column": 23,
                "message":
                    "url: unsupported scheme 'ftp' (only http and https are \
                     allowed)",
            },
            {
                "severity": "warning",
                "server": "odd",
                "pointer": "/mcpServers/odd",
                "line": 7,
                "column": 31,
                "message": "unknown key",
            },
        ])
    );
    let servers = v["servers"].as_array().unwrap();
    let names: Vec<&str> =
        servers.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["local", "remote", "broken", "odd"]);
    for s in servers {
        let mut keys: Vec<&String> = s.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            [
                "allowlist",
                "auth",
                "disabled",
                "fingerprint",
                "name",
                "sandbox",
                "target",
                "transport",
                "valid"
            ]
        );
    }
    let fp = servers[0]["fingerprint"].as_str().unwrap();
    assert!(
        fp.len() == 20
            && fp
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "fingerprint {fp:?} is not 20 lowercase hex digits"
    );
    assert_eq!(
        servers[0],
        serde_json::json!({
            "name": "local", "valid": true, "transport": "stdio",
            "target": "srv -x", "auth": "-", "allowlist": "allowed",
            "fingerprint": fp, "disabled": false, "sandbox": null,
        })
    );
    assert_eq!(servers[1]["transport"], "http");
    assert_eq!(servers[1]["target"], "https://example.com/mcp");
    assert_eq!(servers[1]["auth"], "bearer");
    assert_eq!(servers[1]["allowlist"], "not allowed");
    assert_eq!(
        servers[2],
        serde_json::json!({
            "name": "broken", "valid": false, "transport": null,
            "target": null, "auth": null, "allowlist": "listed (invalid)",
            "fingerprint": null, "disabled": false, "sandbox": null,
        })
    );
    assert_eq!(servers[3]["valid"], true);
    // The error on stderr is the JSON error object alone.
    let err: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(err.len(), 1, "{}", out.stderr);
    let obj: Value = serde_json::from_str(err[0]).unwrap();
    assert_eq!(obj["error"]["message"], ".mcp.json: invalid (1 error)");
    assert_eq!(obj["error"]["code"], "failed");
    assert_eq!(obj["error"]["exit_code"], 1);
}

// ---------------------------------------------------------------------
// The allowlist, as check-config reports it.

const THREE: &str = r#"{
  "mcpServers": {
    "a": {"command": "srv-a", "args": ["--x"]},
    "b": {"url": "https://example.com/mcp"},
    "A": {"command": "srv-upper"}
  }
}
"#;

/// Runs check-config --json with RIVUMI_MCP_ALLOWLIST (None = unset) and
/// returns (name -> verdict, allowlist_error).
fn verdicts(dir: &Dir, list: Option<&str>) -> (Vec<(String, String)>, Value) {
    let mut cmd = dir.command(["check-config", "--json"]);
    if let Some(l) = list {
        cmd.env("RIVUMI_MCP_ALLOWLIST", l);
    }
    let out = cmd.assert_exit(0);
    let v = out.stdout_json();
    let rows = v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["allowlist"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (rows, v["allowlist_error"].clone())
}

fn rows(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

fn fingerprints(dir: &Dir) -> Vec<String> {
    let v =
        dir.command(["check-config", "--json"]).assert_exit(0).stdout_json();
    v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["fingerprint"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn allowlist_unset_and_empty_allow_nothing() {
    let dir = Dir::new("check_config_allowlist_unset");
    dir.write(".mcp.json", THREE);
    let none = rows(&[
        ("a", "not allowed"),
        ("b", "not allowed"),
        ("A", "not allowed"),
    ]);
    assert_eq!(verdicts(&dir, None), (none.clone(), Value::Null));
    assert_eq!(verdicts(&dir, Some("")), (none.clone(), Value::Null));
    assert_eq!(verdicts(&dir, Some(" , ,")), (none, Value::Null));
}

#[test]
fn allowlist_entries_are_trimmed_exact_and_case_sensitive() {
    let dir = Dir::new("check_config_allowlist_entries");
    dir.write(".mcp.json", THREE);
    assert_eq!(
        verdicts(&dir, Some(" a , ,b")),
        (
            rows(&[("a", "allowed"), ("b", "allowed"), ("A", "not allowed")]),
            Value::Null
        )
    );
    // `A` does not allow `a`, and vice versa.
    assert_eq!(
        verdicts(&dir, Some("A")),
        (
            rows(&[
                ("a", "not allowed"),
                ("b", "not allowed"),
                ("A", "allowed")
            ]),
            Value::Null
        )
    );
    // No prefix matching either.
    assert_eq!(verdicts(&dir, Some("b-extra,ab")).0[1].1, "not allowed");
}

#[test]
fn allowlist_wildcard_is_an_error_and_allows_nothing() {
    let dir = Dir::new("check_config_allowlist_wildcard");
    dir.write(".mcp.json", THREE);
    for list in ["*", "a,*", "a*"] {
        let (rows, err) = verdicts(&dir, Some(list));
        assert!(
            rows.iter().all(|(_, v)| v == "not allowed"),
            "{list}: {rows:?}"
        );
        let err = err.as_str().unwrap_or_else(|| panic!("{list}: {err}"));
        assert_contains(err, "wildcard");
    }
    // The human output says so below the table.
    let out = dir
        .command(["check-config"])
        .env("RIVUMI_MCP_ALLOWLIST", "*")
        .assert_exit(0);
    assert_contains(
        &out.stdout,
        "allowlist: RIVUMI_MCP_ALLOWLIST: '*' is a wildcard",
    );
}

#[test]
fn allowlist_pins() {
    let dir = Dir::new("check_config_allowlist_pins");
    dir.write(".mcp.json", THREE);
    let fp = fingerprints(&dir);
    let (a, b) = (&fp[0], &fp[1]);
    // The right fingerprints: pinned (upper-case hex accepted too).
    let list = format!("a@{a},b@{}", b.to_ascii_uppercase());
    assert_eq!(
        verdicts(&dir, Some(&list)),
        (
            rows(&[("a", "pinned"), ("b", "pinned"), ("A", "not allowed")]),
            Value::Null
        )
    );
    // Change only the args of 'a': its pin no longer matches and the
    // mismatch names the args class.
    dir.write(".mcp.json", THREE.replace("\"--x\"", "\"--y\""));
    let (rows_now, err) = verdicts(&dir, Some(&list));
    assert_eq!(err, Value::Null);
    assert_eq!(rows_now[1].1, "pinned");
    let a_verdict = &rows_now[0].1;
    assert!(a_verdict.starts_with("pin mismatch"), "{a_verdict}");
    // One hex digit per class: args differ unless the digits collide
    // (1 in 16); the fixture is chosen so they do not.
    assert_eq!(a_verdict, "pin mismatch (args changed)");
    // Change only the command: names the command.
    dir.write(".mcp.json", THREE.replace("srv-a", "srv-b"));
    let (rows_now, _) = verdicts(&dir, Some(&list));
    assert_eq!(rows_now[0].1, "pin mismatch (command changed)");
    // The human table shows the same words.
    let out = dir
        .command(["check-config"])
        .env("RIVUMI_MCP_ALLOWLIST", &list)
        .assert_exit(0);
    assert_contains(&out.stdout, "pin mismatch (command changed)");
}

#[test]
fn allowlist_malformed_pin_is_an_error() {
    let dir = Dir::new("check_config_allowlist_bad_pin");
    dir.write(".mcp.json", THREE);
    for list in [
        "a@123",
        "a@zzzzzzzzzzzzzzzzzzzz",
        "a@",
        "a b",
        "a@00000000000000000000,a",
    ] {
        let (rows, err) = verdicts(&dir, Some(list));
        assert!(err.is_string(), "{list}: allowlist_error is {err}");
        assert!(
            rows.iter().all(|(_, v)| v == "not allowed"),
            "{list}: {rows:?}"
        );
    }
    let (_, err) = verdicts(&dir, Some("a@123"));
    assert_contains(err.as_str().unwrap(), "malformed fingerprint");
}

#[test]
fn invalid_entry_in_the_allowlist_is_listed_invalid() {
    let dir = Dir::new("check_config_allowlist_invalid_entry");
    dir.write(
        ".mcp.json",
        r#"{"mcpServers": {"bad": {"url": "http://example.com/"}}}"#,
    );
    let out = dir
        .command(["check-config", "--json"])
        .env("RIVUMI_MCP_ALLOWLIST", "bad")
        .assert_exit(1);
    assert_eq!(
        out.stdout_json()["servers"][0]["allowlist"],
        "listed (invalid)"
    );
}

#[test]
fn fingerprints_are_stable_and_independent_of_the_name() {
    let dir = Dir::new("check_config_fingerprints");
    dir.write(
        ".mcp.json",
        r#"{"mcpServers": {
            "one": {"command": "srv", "args": ["-x"], "env": {"K": "v"}},
            "two": {"command": "srv", "args": ["-x"], "env": {"K": "v"}},
            "three": {"command": "srv", "args": ["-y"], "env": {"K": "v"}},
            "web": {"url": "https://example.com/mcp"},
            "web2": {"url": "https://EXAMPLE.com:443/mcp",
                     "tool_timeout_sec": 9}
        }}"#,
    );
    let first = fingerprints(&dir);
    assert_eq!(first, fingerprints(&dir), "same file, same fingerprints");
    assert_eq!(first[0], first[1], "the name is not part of the spec");
    assert_ne!(first[0], first[2], "args are");
    // The canonical URL counts, not its spelling; timeouts are not launch
    // authority.
    assert_eq!(first[3], first[4]);
    // The same server in another file, at another position, renamed.
    dir.write(
        ".mcp.json",
        r#"{
  "mcpServers": {
    "zzz": {"command": "other"},
    "renamed": {"env": {"K": "v"}, "args": ["-x"], "command": "srv"}
  }
}"#,
    );
    assert_eq!(fingerprints(&dir)[1], first[0]);
}

// ---------------------------------------------------------------------
// Secrets: env values and header values are never printed.

#[test]
fn env_and_header_values_are_never_printed() {
    let dir = Dir::new("check_config_secrets");
    dir.write(
        ".mcp.json",
        r#"{
  "mcpServers": {
    "local": {
      "command": "srv",
      "env": {"SECRET": "hunter2-literal", "FROM": "${SET_VAR}"}
    },
    "remote": {
      "url": "https://example.com/mcp",
      "headers": {"X-Api-Key": "header-literal-value"}
    },
    "auth": {
      "url": "https://example.com/mcp",
      "headers": {"Authorization": "Bearer auth-literal-value"}
    }
  }
}
"#,
    );
    let secrets = [
        "hunter2",
        "header-literal-value",
        "auth-literal-value",
        "set-var-value",
    ];
    for args in [
        &["check-config"][..],
        &["check-config", "--json"],
        &["check-config", "--format", "github"],
        &["check-config", "--strict", "-v"],
    ] {
        let out = dir
            .command(args)
            .env("SET_VAR", "set-var-value")
            .env("RIVUMI_MCP_ALLOWLIST", "local,remote,auth")
            .run();
        for s in secrets {
            assert_absent(&out.all(), s);
        }
        // The servers are there, only their values are not.
        assert_contains(&out.stdout, "local");
        assert_contains(&out.stdout, "https://example.com/mcp");
    }
}

// ---------------------------------------------------------------------
// Terminal output and the remaining behaviour of src/ that the fixture
// format cannot express.

#[test]
fn terminal_output_escapes_control_characters_from_the_file() {
    let dir = Dir::new("check_config_tty_escapes");
    // A hostile .mcp.json (cloned with a repository): an invalid server
    // name carrying OSC 0 (set the window title) and OSC 52 (write the
    // clipboard), and an argument with a colour sequence.
    dir.write(
        ".mcp.json",
        r#"{"mcpServers": {
  "evil\u001b]0;pwned\u0007": {"command": "x"},
  "clip\u001b]52;c;ZWNobyBoaQ==\u0007": {"command": "x"},
  "ok": {"command": "srv", "args": ["\u001b[31mred"]}
}}"#,
    );
    let out = dir.command(["check-config"]).run_on_tty();
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_contains(&out.stdout, "SERVER");
    // Every escape and BEL is shown, not sent: in the "server '...'"
    // prefix, the JSON pointer and the SERVER column as well as in the
    // messages and the TARGET column.
    for (i, line) in out.stdout.lines().enumerate() {
        assert!(
            !line.contains(['\x1b', '\x07']),
            "line {} reaches the terminal with a raw control character: \
             {line:?}\n\nwhole output:\n{:?}",
            i + 1,
            out.stdout
        );
    }
    // In a pipe the bytes are left alone (scripts get exactly the file's
    // names).
    let piped = dir.command(["check-config", "--json"]).run();
    assert_eq!(
        piped.stdout_json()["servers"][0]["name"],
        "evil\u{1b}]0;pwned\u{7}"
    );
}

#[test]
fn typo_of_command_gets_a_suggestion() {
    // The most likely typo of a stdio entry: "comand". Reporting only
    // "neither 'command' nor 'url' is set" hides the cause; the unknown
    // key should be named with "did you mean 'command'?".
    let dir = Dir::new("check_config_typo_command");
    dir.write(
        ".mcp.json",
        r#"{"mcpServers": {
  "a": {"comand": "npx", "args": ["-y", "pkg@1.0.0"]}
}}"#,
    );
    let out = dir.command(["check-config"]).assert_exit(1);
    assert_contains(&out.stdout, "neither 'command' (stdio) nor 'url'");
    assert_contains(&out.stdout, "did you mean 'command'?");
}

#[test]
fn pipx_pin_example_uses_python_syntax() {
    // pipx installs Python packages: the example pin is `pkg==1.2.3` as
    // for uvx, not npm's `pkg@1.2.3`.
    let dir = Dir::new("check_config_pipx_pin");
    dir.write(
        ".mcp.json",
        r#"{"mcpServers": {
  "p": {"command": "pipx", "args": ["run", "mcp-server-fetch"]}
}}"#,
    );
    let out = dir.command(["check-config"]).assert_exit(0);
    assert_contains(&out.stdout, "'pipx mcp-server-fetch' runs whatever");
    assert_contains(&out.stdout, "(e.g. mcp-server-fetch==1.2.3)");
}

#[test]
fn duplicate_mcp_servers_key_uses_neither_object() {
    // The diagnostic says "neither is used", so no server of either
    // object may be reported valid, fingerprinted or allowed.
    let dir = Dir::new("check_config_dup_mcpservers");
    dir.write(
        ".mcp.json",
        r#"{
  "mcpServers": {"a": {"command": "good"}},
  "mcpServers": {"a": {"command": "evil"}}
}"#,
    );
    let out = dir
        .command(["check-config", "--json"])
        .env("RIVUMI_MCP_ALLOWLIST", "a")
        .assert_exit(1);
    let v = out.stdout_json();
    assert_contains(
        v["diagnostics"][0]["message"].as_str().unwrap(),
        "so neither is used",
    );
    for s in v["servers"].as_array().unwrap() {
        assert_eq!(s["valid"], false, "{s}");
        assert_eq!(s["fingerprint"], Value::Null, "{s}");
        assert_ne!(s["allowlist"], "allowed", "{s}");
    }
}

// ---------------------------------------------------------------------
// Nested defaults reach the server expanded, never as literal text.

#[test]
fn nested_default_reaches_the_server_expanded() {
    let dir = Dir::new("check_config_nested_default");
    let mut server = crate::util::fixture_server(&[]);
    server["env"] = serde_json::json!({
        "PICKED": "${OUTER:-${INNER:-fallback}}",
        "MIXED": "<${OUTER:-a${INNER}b}>",
    });
    crate::util::write_mcp_json(&dir, &[("demo", server)]);
    let call = |inner: Option<&str>| {
        let mut cmd = crate::util::run_allowed(
            &dir,
            "demo",
            &["call", "-y", "demo", "env"],
        );
        if let Some(v) = inner {
            cmd.env("INNER", v);
        }
        cmd
    };
    let out = call(Some("inner-value")).assert_exit(0);
    let env = out.stdout_json();
    assert_eq!(env["PICKED"], "inner-value");
    assert_eq!(env["MIXED"], "<ainner-valueb>");
    // INNER unset: PICKED falls back, MIXED cannot be expanded and the
    // launch is refused naming the innermost variable.
    let out = call(None).assert_exit(3);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': env 'MIXED': environment variable \
         'INNER' is not set\n"
    );
    let out = call(Some("")).assert_exit(0);
    assert_eq!(out.stdout_json()["MIXED"], "<ab>");
    assert_eq!(out.stdout_json()["PICKED"], "fallback");
}

// ---------------------------------------------------------------------
// A broken file is located, never quoted: what is in the wrong place may
// be a secret pasted there.

#[test]
fn text_that_fails_a_check_is_never_quoted() {
    const MARK: &str = "sk-live-PASTED0secret";
    let cases = [
        // Syntax: a bare token where a value belongs, after the top-level
        // value, as a key, and inside a string escape.
        r#"{"mcpServers": {"a": {"command": "/x", "env": {"T": MARK}}}}"#,
        r#"{"mcpServers": {"a": {"command": "/x"}}} MARK"#,
        r#"{"mcpServers": {"a": {MARK: 1}}}"#,
        r#"{"mcpServers": {"a": {"command": "\qMARK"}}}"#,
        r#"{"mcpServers": {"a": {"command": "/x", "args": [MARK]}}}"#,
        // Keys that are not keys of the format or not names at all.
        r#"{"mcpServers": {"a": {"command": "/x"}}, "MARK": 1}"#,
        r#"{"mcpServers": {"a": {"command": "/x", "MARK": 1}}}"#,
        r#"{"mcpServers": {"a": {"command": "/x", "env": {"MARK": "v"}}}}"#,
        r#"{"mcpServers": {"a": {"url": "https://example.com/",
            "headers": {"MARK x": "v"}}}}"#,
        r#"{"mcpServers": {"a": {"url": "https://example.com/",
            "oauth": {"MARK": 1, "client_id": "c"}}}}"#,
        // Values that fail a check.
        r#"{"mcpServers": {"a": {"command": "/x", "type": "MARK"}}}"#,
        r#"{"mcpServers": {"a": {"command": "/x", "env": {"T": "${MARK}"}}}}"#,
        r#"{"mcpServers": {"a": {"command": "/x", "env_vars": ["MARK"]}}}"#,
        r#"{"mcpServers": {"a": {"url": "https://example.com/",
            "bearer_token_env_var": "MARK"}}}"#,
        r#"{"mcpServers": {"a": {"url": "https://example.com/",
            "oauth": {"client_id": "c", "scopes": ["MARK x"]}}}}"#,
        r#"{"mcpServers": {"a": {"url": "https://u:MARK@example.com/"}}}"#,
        r#"{"mcpServers": {"a": {"url": "https://example.com/MARK<"}}}"#,
        r#"{"mcpServers": {"a": {"command": "/x", "timeout": "MARK"}}}"#,
    ];
    let dir = Dir::new("check_config_never_quoted");
    for (i, case) in cases.iter().enumerate() {
        let text = case.replace("MARK", MARK);
        dir.write(".mcp.json", &text);
        let runs = [
            &["check-config"][..],
            &["check-config", "--json"],
            &["check-config", "--format", "github"],
            &["check-config", "--strict"],
            &["list"],
            &["list", "--json"],
        ];
        for args in runs {
            // "a" is allowed so that `list` reaches the entry; /x does not
            // exist, so nothing is started even when the entry is valid.
            let out = dir.command(args).env("RIVUMI_MCP_ALLOWLIST", "a").run();
            assert!(
                !out.all().contains("PASTED"),
                "case {i} {text}\n{args:?} quoted it:\n{}",
                out.all()
            );
            // Located all the same.
            if args[0] == "check-config" {
                assert_contains(&out.stdout, ".mcp.json");
            }
        }
    }
}

/// A pinned HTTP entry cannot switch which variable feeds a header (the
/// user's token would go to that server), nor its login switches or its
/// protocol era, without the pin failing and naming the class (issue 22,
/// item 4). Values are never part of it: rotating a secret keeps the pin.
#[test]
fn pins_cover_header_templates_login_switches_and_the_era() {
    let dir = Dir::new("check_config_pin_headers");
    let write = |headers: &str, oauth: &str, protocol: &str| {
        dir.write(
            ".mcp.json",
            format!(
                r#"{{"mcpServers": {{"docs": {{"url": "https://docs.example/mcp",
                    "headers": {headers}, "oauth": {oauth}{protocol}}}}}}}"#
            ),
        );
    };
    let key = r#"{"X-Api-Key": "${DOCS_KEY}"}"#;
    let oauth = r#"{"client_id": "c"}"#;
    write(key, oauth, "");
    let fp = fingerprints(&dir).remove(0);
    let list = format!("docs@{fp}");
    let verdict = |env: &[(&str, &str)]| {
        let mut cmd = dir.command(["check-config", "--json"]);
        cmd.env("RIVUMI_MCP_ALLOWLIST", &list);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let v = cmd.assert_exit(0).stdout_json();
        v["servers"][0]["allowlist"].as_str().unwrap().to_string()
    };
    assert_eq!(verdict(&[("DOCS_KEY", "one")]), "pinned");
    assert_eq!(verdict(&[("DOCS_KEY", "rotated")]), "pinned");
    for other in [
        r#"{"X-Api-Key": "${GITHUB_TOKEN}"}"#,
        r#"{"X-Api-Key": "fixed-value"}"#,
    ] {
        write(other, oauth, "");
        assert_eq!(
            verdict(&[("GITHUB_TOKEN", "t")]),
            "pin mismatch (headers changed)",
            "{other}"
        );
    }
    for switch in [
        r#"{"client_id": "c", "step_up": true}"#,
        r#"{"client_id": "c", "offline_access": true}"#,
        r#"{"client_id": "c", "registration": "dynamic"}"#,
    ] {
        write(key, switch, "");
        assert_eq!(verdict(&[]), "pin mismatch (oauth changed)", "{switch}");
    }
    write(key, oauth, r#", "protocol": "legacy""#);
    assert_eq!(verdict(&[]), "pin mismatch (protocol changed)");
    // And a pinned server does not start with the header switched.
    write(r#"{"X-Api-Key": "${GITHUB_TOKEN}"}"#, oauth, "");
    let out = dir
        .command(["list", "docs"])
        .env("RIVUMI_MCP_ALLOWLIST", &list)
        .env("GITHUB_TOKEN", "secret-token-value")
        .assert_exit(3);
    assert_contains(&out.stderr, "but headers changed since");
    assert_absent(&out.stderr, "secret-token-value");
}
