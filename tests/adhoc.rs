//! Servers typed on the command line: `--stdio 'CMD ARG…'` and
//! `--http URL`, called `adhoc` unless `--name` says otherwise. No config
//! file and no allowlist entry; every other rule applies.

use serde_json::Value;

use crate::util::http::{HttpFixture, McpScript};
use crate::util::{Dir, assert_absent, assert_contains, fixture_bin};

/// `--stdio` for the fixture with these extra words (already quoted).
fn stdio(extra: &str) -> String {
    let bin = fixture_bin();
    format!("'{}' {extra}", bin.to_str().unwrap())
}

#[test]
fn stdio_server_needs_no_config_and_no_allowlist() {
    let dir = Dir::new("adhoc_stdio");
    // No .mcp.json here, and RIVUMI_MCP_ALLOWLIST is unset.
    let spec = stdio("--extra-tool 'two words'");
    let out = dir.command(["list", "--stdio", &spec]).assert_exit(0);
    assert_contains(&out.stdout, "mcp__adhoc__echo");
    assert_contains(&out.stdout, "mcp__adhoc__two_words");
    let out = dir
        .command(["call", "--stdio", &spec, "adhoc", "echo", "text=hi"])
        .assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    let out =
        dir.command(["resources", "adhoc", "--stdio", &spec]).assert_exit(0);
    assert_contains(&out.stdout, "fixture://docs/readme");
    // --name renames it, in qualified names too.
    let out = dir
        .command(["call", "--stdio", &spec, "--name", "fx", "mcp__fx__echo"])
        .args(["text=named"])
        .assert_exit(0);
    assert_eq!(out.stdout, "named\n");
    // Another name is unknown: a usage error.
    let out = dir
        .command(["call", "--stdio", &spec, "other", "echo", "text=x"])
        .assert_exit(2);
    assert_contains(&out.stderr, "no server 'other'");
}

#[test]
fn stdio_words_are_not_expanded_and_the_environment_is_sanitised() {
    let dir = Dir::new("adhoc_stdio_env");
    // ${X} stays literal: no expansion, no shell.
    let spec = stdio("--extra-tool '${NOT_EXPANDED}'");
    let out = dir
        .command(["list", "--json", "--stdio", &spec])
        .env("NOT_EXPANDED", "oops")
        .assert_exit(0);
    assert_contains(&out.stdout, "${NOT_EXPANDED}");
    assert_absent(&out.stdout, "oops");
    // The server gets only the base set, never a secret of the shell.
    let out = dir
        .command(["call", "-y", "--stdio", &stdio(""), "adhoc", "env"])
        .env("SECRET_TOKEN", "s3cr3t")
        .assert_exit(0);
    let env: Value = out.stdout_json();
    assert!(env.get("SECRET_TOKEN").is_none(), "{env}");
    assert!(env.get("PATH").is_some(), "{env}");
}

#[test]
fn approval_and_the_journal_apply() {
    let dir = Dir::new("adhoc_rules");
    let spec = stdio("");
    // delete_all is classified execute: denied without --yes.
    let out = dir
        .command(["call", "--stdio", &spec, "adhoc", "delete_all"])
        .assert_exit(7);
    assert_eq!(out.stdout, "");
    let journal = dir.path("journal.jsonl");
    let j = journal.to_str().unwrap();
    dir.command(["call", "--stdio", &spec, "adhoc", "echo", "text=j"])
        .args(["--journal", j])
        .assert_exit(0);
    let text = std::fs::read_to_string(&journal).unwrap();
    assert_contains(&text, "\"adhoc\":true");
    assert_contains(&text, "\"server\":\"adhoc\"");
}

#[test]
fn batch_uses_the_adhoc_server() {
    let dir = Dir::new("adhoc_batch");
    let out = dir
        .command(["batch", "--stdio", &stdio("")])
        .stdin(
            "{\"id\": 1, \"server\": \"adhoc\", \"tool\": \"echo\", \
             \"arguments\": {\"text\": \"b\"}}\n",
        )
        .assert_exit(0);
    let line: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(line["id"], 1);
    assert_contains(&out.stdout, "\"b\"");
}

#[test]
fn http_server_needs_no_config_and_url_rules_apply() {
    let fx = HttpFixture::mcp(McpScript::new());
    let dir = Dir::new("adhoc_http");
    let url = fx.url();
    let out = dir.command(["list", "--http", &url]).assert_exit(0);
    assert_contains(&out.stdout, "mcp__adhoc__echo");
    let out = dir
        .command(["call", "--http", &url, "adhoc", "echo", "text=over http"])
        .assert_exit(0);
    assert_eq!(out.stdout, "over http\n");
    // The URL rules are the config's: plain http only to loopback.
    let out = dir
        .command(["list", "--http", "http://example.com/mcp"])
        .assert_exit(2);
    assert_contains(&out.stderr, "--http: ");
}

#[test]
fn usage_errors() {
    let dir = Dir::new("adhoc_usage");
    let out = dir.command(["list", "--stdio", "'open"]).assert_exit(2);
    assert_eq!(out.stderr, "rivumi-mcp: --stdio: unterminated quote\n");
    let out = dir.command(["list", "--name", "x"]).assert_exit(2);
    assert_contains(&out.stderr, "--name names an ad-hoc server");
    let out = dir
        .command(["list", "--stdio", "a", "--http", "http://127.0.0.1:1/"])
        .assert_exit(2);
    assert_contains(&out.stderr, "give one of them once");
    let out =
        dir.command(["list", "--stdio", "a", "-c", "x.json"]).assert_exit(2);
    assert_contains(&out.stderr, "replace the config file");
    let out =
        dir.command(["list", "--stdio", "a", "--name", "a__b"]).assert_exit(2);
    assert_contains(&out.stderr, "--name: ");
    let out = dir.command(["check-config", "--stdio", "a"]).assert_exit(2);
    assert_contains(&out.stderr, "does not apply to 'check-config'");
}

#[test]
fn a_lock_file_in_the_directory_is_not_the_adhoc_servers() {
    let dir = Dir::new("adhoc_foreign_lock");
    // A broken lock file belongs to the project's servers, not to one
    // typed on the command line: it neither applies nor stops the call.
    dir.write(".mcp.lock.json", "{ not json");
    let spec = stdio("");
    let out = dir
        .command(["call", "--stdio", &spec, "adhoc", "echo", "text=hi"])
        .assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    // Named with --lock, it does apply, and a broken one fails closed.
    let out = dir
        .command(["call", "--stdio", &spec, "adhoc", "echo", "text=hi"])
        .args(["--lock", ".mcp.lock.json"])
        .assert_exit(3);
    assert_eq!(out.stdout, "");
}
