//! Claude Code's rules and other editors' files: `${VAR}` in every field,
//! the directory a server runs in, `disabled`, unset `env_vars`, and
//! allowlist names that match no server.

use serde_json::json;

use crate::util::{
    ALLOWLIST, Dir, assert_absent, assert_contains, fixture_bin,
    fixture_server, run_allowed, write_mcp_json,
};

/// The fingerprint `check-config --json` shows for the first server.
fn first_fingerprint(dir: &Dir, env: &[(&str, &str)]) -> String {
    let mut cmd = dir.command(["check-config", "--json"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let v = cmd.assert_exit(0).stdout_json();
    v["servers"][0]["fingerprint"].as_str().unwrap().to_string()
}

#[test]
fn variables_expand_in_command_and_args() {
    let dir = Dir::new("editors_vars_command_args");
    let entry = json!({
        "command": "${FIXTURE}",
        "args": ["--extra-tool", "${TOOL_NAME:-fallback}"],
    });
    write_mcp_json(&dir, &[("demo", entry)]);
    let fixture = fixture_bin();
    let fixture = fixture.to_str().unwrap();
    let out = run_allowed(&dir, "demo", &["list"])
        .env("FIXTURE", fixture)
        .env("TOOL_NAME", "from_env")
        .assert_exit(0);
    assert_contains(&out.stdout, "mcp__demo__from_env");
    let out = run_allowed(&dir, "demo", &["list"])
        .env("FIXTURE", fixture)
        .assert_exit(0);
    assert_contains(&out.stdout, "mcp__demo__fallback");
    // The fingerprint covers the text as written, not the values.
    let a = first_fingerprint(&dir, &[("FIXTURE", "/a"), ("TOOL_NAME", "x")]);
    let b = first_fingerprint(&dir, &[("FIXTURE", "/b")]);
    assert_eq!(a, b);
    // Unset with no default: check-config warns, naming the field; the
    // launch is refused before anything runs, naming it too.
    let out = dir.command(["check-config"]).assert_exit(0);
    assert_contains(
        &out.stdout,
        "warning: server 'demo': environment variable 'FIXTURE' is not set \
         (starting this server will fail until it is) \
         [/mcpServers/demo/command]",
    );
    let out = run_allowed(&dir, "demo", &["list"]).assert_exit(3);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'demo': command: environment variable 'FIXTURE' \
         is not set\n"
    );
}

#[test]
fn url_is_checked_after_expansion_and_fingerprinted_as_written() {
    let dir = Dir::new("editors_vars_url");
    dir.write(
        ".mcp.json",
        r#"{"mcpServers": {"web": {"url": "${BASE:-https://example.com}/mcp"}}}"#,
    );
    let out = dir.command(["check-config", "--json"]).assert_exit(0);
    let v = out.stdout_json();
    assert_eq!(v["servers"][0]["target"], "${BASE:-https://example.com}/mcp");
    let fp = v["servers"][0]["fingerprint"].as_str().unwrap().to_string();
    assert_eq!(
        fp,
        first_fingerprint(&dir, &[("BASE", "https://other.example")])
    );
    // Expanded to a URL the rules refuse: an error at the url.
    let out = dir
        .command(["check-config"])
        .env("BASE", "ftp://example.com")
        .assert_exit(1);
    assert_contains(
        &out.stdout,
        "error: server 'web': url (expanded): unsupported scheme 'ftp'",
    );
    // Unset without a default: the URL cannot be checked.
    dir.write(
        ".mcp.json",
        r#"{"mcpServers": {"web": {"url": "${HOST}/mcp"}}}"#,
    );
    let out = dir.command(["check-config"]).assert_exit(1);
    assert_contains(
        &out.stdout,
        "error: server 'web': url: environment variable 'HOST' is not set \
         (the URL is checked after expansion) [/mcpServers/web/url]",
    );
    // A variable's value is never printed.
    let out = dir
        .command(["check-config"])
        .env("HOST", "https://s3cr3t.example")
        .assert_exit(0);
    assert_absent(&out.stdout, "s3cr3t");
}

#[test]
fn stdio_server_runs_in_the_config_directory() {
    let dir = Dir::new("editors_default_cwd");
    let conf = dir.create_dir("project");
    // sh notes where it runs, then becomes the fixture ($0).
    let entry = json!({
        "command": "/bin/sh",
        "args": ["-c", "pwd > where.txt; exec \"$0\"",
                 fixture_bin().to_str().unwrap()],
    });
    dir.write(
        "project/.mcp.json",
        json!({"mcpServers": {"demo": entry}}).to_string(),
    );
    let elsewhere = dir.create_dir("elsewhere");
    let mut cmd = dir.command(["-c", "../project/.mcp.json", "list"]);
    cmd.env(ALLOWLIST, "demo").current_dir(&elsewhere);
    cmd.assert_exit(0);
    let wrote = std::fs::read_to_string(conf.join("where.txt")).unwrap();
    let conf = std::fs::canonicalize(&conf).unwrap();
    assert_eq!(wrote, format!("{}\n", conf.display()));
    assert!(!elsewhere.join("where.txt").exists());
    // The fingerprint covers the effective directory: the same entry in
    // another directory is another launch.
    let fp = |rel: &str| {
        let v = dir
            .command(["check-config", "--json", "-c", rel])
            .assert_exit(0)
            .stdout_json();
        v["servers"][0]["fingerprint"].as_str().unwrap().to_string()
    };
    dir.write(
        "other/.mcp.json",
        json!({"mcpServers": {"demo": entry}}).to_string(),
    );
    assert_ne!(fp("project/.mcp.json"), fp("other/.mcp.json"));
    // ... and not where rivumi-mcp was started.
    let v = dir
        .command(["check-config", "--json", "-c", "../project/.mcp.json"])
        .current_dir(&elsewhere)
        .assert_exit(0)
        .stdout_json();
    assert_eq!(v["servers"][0]["fingerprint"], fp("project/.mcp.json"));
}

#[test]
fn disabled_server_is_shown_and_never_started() {
    let dir = Dir::new("editors_disabled");
    let pids = dir.path("pids");
    let pid_arg = format!("--pid-file={}", pids.display());
    let mut off = fixture_server(&[&pid_arg]);
    off["disabled"] = json!(true);
    let mut on = fixture_server(&[]);
    on["disabled"] = json!(false);
    write_mcp_json(&dir, &[("off", off), ("on", on)]);
    let out = run_allowed(&dir, "off,on", &["check-config"]).assert_exit(0);
    let row = out.stdout.lines().find(|l| l.starts_with("off ")).unwrap();
    assert_contains(row, "allowed (disabled)");
    let v = run_allowed(&dir, "off,on", &["check-config", "--json"])
        .assert_exit(0)
        .stdout_json();
    assert_eq!(v["servers"][0]["disabled"], true);
    assert_eq!(v["servers"][1]["disabled"], false);
    // list skips it, and says so.
    let out = run_allowed(&dir, "off,on", &["list"]).assert_exit(0);
    assert_contains(&out.stdout, "mcp__on__echo");
    assert_absent(&out.stdout, "mcp__off__");
    assert_eq!(
        out.stderr,
        "rivumi-mcp: warning: server 'off': disabled (\"disabled\": true); \
         not started\n"
    );
    // Named, it is refused.
    let out = run_allowed(&dir, "off,on", &["call", "off", "echo", "text=x"])
        .assert_exit(3);
    assert_eq!(
        out.stderr,
        "rivumi-mcp: server 'off': disabled in .mcp.json (\"disabled\": \
         true); it is never started\n"
    );
    assert!(!pids.exists(), "the disabled server was spawned");
    // Not a boolean: an error at the key.
    dir.write(
        ".mcp.json",
        r#"{"mcpServers": {"a": {"command": "x", "disabled": "yes"}}}"#,
    );
    let out = dir.command(["check-config"]).assert_exit(1);
    assert_contains(
        &out.stdout,
        "error: server 'a': 'disabled' must be true or false, not string \
         [/mcpServers/a/disabled]",
    );
}

#[test]
fn allowlist_names_that_match_no_server_are_warned_about() {
    let dir = Dir::new("editors_allowlist_unmatched");
    write_mcp_json(&dir, &[("demo", fixture_server(&[]))]);
    let out =
        run_allowed(&dir, "demo,dmeo,gone", &["check-config"]).assert_exit(0);
    assert_contains(
        &out.stdout,
        ".mcp.json:1:1: warning: RIVUMI_MCP_ALLOWLIST names 'dmeo', which \
         matches no server in this file; did you mean 'demo'?\n",
    );
    assert_contains(
        &out.stdout,
        ".mcp.json:1:1: warning: RIVUMI_MCP_ALLOWLIST names 'gone', which \
         matches no server in this file\n",
    );
    let out = run_allowed(&dir, "demo", &["check-config"]).assert_exit(0);
    assert_absent(&out.stdout, "matches no server");
}

#[test]
fn github_format_has_no_empty_pointer() {
    let dir = Dir::new("editors_github_no_pointer");
    dir.write(".mcp.json", "[]");
    let out =
        dir.command(["check-config", "--format", "github"]).assert_exit(1);
    assert_eq!(
        out.stdout.lines().next().unwrap(),
        "::error file=.mcp.json,line=1,col=1::the top level must be an \
         object with \"mcpServers\", not array"
    );
    assert_absent(&out.stdout, "()");
}

#[test]
fn vscode_file_is_read_with_comments_inputs_and_positions() {
    let dir = Dir::new("editors_vscode");
    let fixture = fixture_bin();
    let text = format!(
        r#"// VS Code's workspace file: JSONC.
{{
  "inputs": [
    {{"type": "promptString", "id": "api-key", "password": true}},
  ],
  "servers": {{
    /* a local server */
    "local": {{
      "type": "stdio",
      "command": "{}",
      "args": ["--extra-tool", "${{env:TOOL}}"],
    }},
    "remote": {{
      "type": "http",
      "url": "https://example.com/mcp",
      "headers": {{"Authorization": "Bearer ${{input:api-key}}"}}
    }}
  }}
}}
"#,
        fixture.to_str().unwrap()
    );
    dir.write(".vscode/mcp.json", &text);
    let out = dir
        .command(["check-config", "-c", ".vscode/mcp.json"])
        .env("TOOL", "t")
        .assert_exit(1);
    assert_contains(
        &out.stdout,
        ".vscode/mcp.json:16:36: error: server 'remote': \
         '${input:api-key}' at character 8 asks VS Code to prompt for an \
         input, and rivumi-mcp has no prompt; set an environment variable \
         and write ${NAME} instead [/servers/remote/headers/Authorization]",
    );
    // The valid entry starts, as any other, once allowed; Cursor's
    // ${env:NAME} expands.
    let out = dir
        .command(["list", "local", "-c", ".vscode/mcp.json"])
        .env(ALLOWLIST, "local")
        .env("TOOL", "from_env")
        .assert_exit(0);
    assert_contains(&out.stdout, "mcp__local__from_env");
    let out = dir
        .command(["list", "local", "-c", ".vscode/mcp.json"])
        .env("TOOL", "x")
        .assert_exit(3);
    assert_contains(&out.stderr, "not allowed to start");
    // The same text as .mcp.json is strict JSON: comments are refused.
    dir.write(".mcp.json", &text);
    let out = dir.command(["check-config"]).assert_exit(1);
    assert_contains(&out.stdout, ".mcp.json:1:1: error: invalid JSON");
}

/// A `//` comment ends at a lone CR, as in VS Code: what follows on the
/// next line is configuration, not comment, so the editor and rivumi-mcp
/// run the same thing (issue 22, item 5). What older editors took for a
/// line break and newer ones do not is refused.
#[test]
fn vscode_comment_ends_at_a_lone_cr() {
    let dir = Dir::new("editors_vscode_cr");
    let fixture = fixture_bin();
    let text = format!(
        "{{\n  \"servers\": {{\n    \"s\": {{\n      \"type\": \"stdio\",\n      \
         \"command\": \"{}\", // reviewed\r      \
         \"args\": [\"--extra-tool\", \"hidden\"]\n    }}\n  }}\n}}\n",
        fixture.to_str().unwrap()
    );
    dir.write(".vscode/mcp.json", &text);
    let out = dir
        .command(["check-config", "-c", ".vscode/mcp.json", "--json"])
        .assert_exit(0)
        .stdout_json();
    let target = out["servers"][0]["target"].as_str().unwrap().to_string();
    assert!(target.ends_with("--extra-tool hidden"), "{target}");
    let out = dir
        .command(["list", "s", "-c", ".vscode/mcp.json"])
        .env(ALLOWLIST, "s")
        .assert_exit(0);
    assert_contains(&out.stdout, "mcp__s__hidden");
    for sep in ["\u{2028}", "\u{2029}"] {
        dir.write(".vscode/mcp.json", text.replace('\r', sep));
        let out = dir
            .command(["check-config", "-c", ".vscode/mcp.json"])
            .assert_exit(1);
        assert_contains(&out.stdout, "which some editors read as the end");
        let out = dir
            .command(["list", "s", "-c", ".vscode/mcp.json"])
            .env(ALLOWLIST, "s")
            .assert_exit(3);
        assert_contains(&out.stderr, "invalid JSON: a '//' comment holds");
        assert_absent(&out.stdout, "mcp__s__");
    }
}

#[test]
fn cursor_env_syntax_works_in_mcp_servers_files() {
    let dir = Dir::new("editors_cursor");
    let entry = json!({
        "command": fixture_bin().to_str().unwrap(),
        "args": ["--extra-tool", "${env:TOOL}"],
    });
    dir.write(
        ".cursor/mcp.json",
        json!({"mcpServers": {"c": entry}}).to_string(),
    );
    let out = dir
        .command(["list", "-c", ".cursor/mcp.json"])
        .env(ALLOWLIST, "c")
        .env("TOOL", "cursor_tool")
        .assert_exit(0);
    assert_contains(&out.stdout, "mcp__c__cursor_tool");
}
