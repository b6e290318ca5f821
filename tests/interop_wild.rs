//! Real servers over HTTP that do not answer as the specification says:
//! `@cyanheads/git-mcp-server` 2.15.3 (a 2025 server that answers the
//! 2026-07-28 probe with HTTP 500), spoken to with `--protocol auto`; and
//! the TypeScript SDK's `simpleSseServer.js` (the deprecated HTTP+SSE
//! transport), which gets a hint that names that transport. Both on
//! 127.0.0.1 only (see fixtures/interop/README.md). And the Python SDK,
//! whose error for a question it cannot ask in the 2026-07-28 era
//! suggests the handshake era.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use crate::util::interop::{
    FASTMCP_LIMIT, ServerProcess, Turn, installed, node_and,
};
use crate::util::{assert_absent, assert_contains, repo_root, write_mcp_json};

/// Where scripts/interop-setup.sh puts git-mcp-server.
const GIT_SERVER: &str = ".interop/git-node/node_modules/@cyanheads/\
                          git-mcp-server/dist/index.js";
/// The TypeScript SDK v1's example server of the old transport, as
/// server-everything's install brings it.
const SSE_EXAMPLE: &str = ".interop/node/node_modules/@modelcontextprotocol/\
                           sdk/dist/esm/examples/server/simpleSseServer.js";
const LOOPBACK_ONLY: &str = "fixtures/interop/loopback-only.cjs";
/// A Python SDK server whose tools ask the client (`roots` asks
/// `roots/list`).
const PY_ELICIT: &str = "fixtures/interop/py_elicit.py";
const FREE_PORT: &str = "fixtures/interop/free-port.cjs";

/// Waits for the line on the server's stderr that holds
/// `http://127.0.0.1:PORT` after `after`; the URL of `path` there.
fn url_after(process: &ServerProcess, after: &str, path: &str) -> String {
    let mut port = String::new();
    let waited = process.wait_for(Duration::from_secs(20), |line| {
        let Some(at) = line.find(after) else { return false };
        let rest = &line[at + after.len()..];
        port = rest.chars().take_while(char::is_ascii_digit).collect();
        !port.is_empty()
    });
    if let Err(why) = waited {
        panic!("no listening line ({why:?}); stderr:\n{}", process.stderr());
    }
    format!("http://127.0.0.1:{port}{path}")
}

fn files(rel: &[&str]) -> Vec<PathBuf> {
    rel.iter().map(|p| repo_root().join(p)).collect()
}

#[test]
fn interop_git_server_over_http_with_protocol_auto() {
    let test = "interop_git_server_over_http_with_protocol_auto";
    let Some(node) = node_and(test, &files(&[GIT_SERVER])) else { return };
    let turn = Turn::take("interop_wild", test);
    // A repository for it to look at, inside the directory it may use.
    let repo = turn.dir.create_dir("repo");
    let git = std::process::Command::new("git")
        .args(["init", "-q", "-b", "main"])
        .arg(&repo)
        .status()
        .expect("git init");
    assert!(git.success());
    let mut cmd = turn.dir.program(&node);
    cmd.arg(repo_root().join(GIT_SERVER))
        .arg(&turn.marker)
        .env("MCP_TRANSPORT_TYPE", "http")
        .env("MCP_HTTP_HOST", "127.0.0.1")
        .env("MCP_HTTP_PORT", "0")
        .env("MCP_AUTH_MODE", "none")
        .env("STORAGE_PROVIDER_TYPE", "in-memory")
        .env("OTEL_ENABLED", "false")
        .env("GIT_SIGN_COMMITS", "false")
        .env("GIT_BASE_DIR", turn.dir.root());
    let mut server =
        ServerProcess::spawn(&cmd, &turn.marker, "git-mcp-server");
    let url = url_after(&server, "listening at http://127.0.0.1:", "/mcp");
    write_mcp_json(&turn.dir, &[("git", json!({"url": url}))]);
    let context = || format!("\n--- server stderr ---\n{}", server.stderr());

    // auto: the probe gets HTTP 500, then the handshake era works.
    let (out, _) = turn.run(
        "git",
        &["list", "git", "--protocol", "auto", "-v"],
        0,
        context,
    );
    assert_contains(
        &out.stdout,
        "git: @cyanheads/git-mcp-server 2.15.3 (protocol 2025-",
    );
    assert_contains(&out.stdout, "mcp__git__git_status ");
    assert_contains(&out.stderr, "server/discover refused: HTTP 500");
    assert_contains(&out.stderr, "trying initialize");

    let path = format!("path={}", repo.display());
    let (out, _) =
        turn.run("git", &["call", "mcp__git__git_status", &path], 0, context);
    let v: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    assert_eq!(v["currentBranch"], "main", "{v}");
    assert_eq!(v["isClean"], true, "{v}");
    server.stop("the git-mcp-server test");
}

#[test]
fn interop_legacy_sse_example_gets_the_transport_hint() {
    let test = "interop_legacy_sse_example_gets_the_transport_hint";
    let need = files(&[SSE_EXAMPLE, LOOPBACK_ONLY, FREE_PORT]);
    let Some(node) = node_and(test, &need) else { return };
    let turn = Turn::take("interop_wild", test);
    let mut cmd = turn.dir.program(&node);
    cmd.arg("--require")
        .arg(&need[1])
        .arg("--require")
        .arg(&need[2])
        .arg(&need[0])
        .arg(&turn.marker);
    let mut server =
        ServerProcess::spawn(&cmd, &turn.marker, "simpleSseServer.js");
    let url =
        url_after(&server, "loopback-only: listening on 127.0.0.1:", "/mcp");
    write_mcp_json(&turn.dir, &[("old", json!({"url": url}))]);
    for protocol in ["auto", "legacy"] {
        let context =
            || format!("\n--- server stdout ---\n{}", server.stdout());
        let (out, _) = turn.run(
            "old",
            &["list", "old", "--protocol", protocol],
            4,
            context,
        );
        let line = out.stderr.trim_end();
        assert_eq!(line.lines().count(), 1, "{}", out.stderr);
        assert_contains(line, "rivumi-mcp: server 'old': HTTP 404 to POST");
        assert_contains(line, "deprecated HTTP+SSE transport (2024-11-05)");
        assert_contains(line, "names '/messages' for its POSTs");
        assert_contains(line, "not supported");
        assert_absent(line, "no MCP endpoint");
        assert_absent(line, "sessionId");
    }
    server.stop("the simpleSseServer.js test");
}

#[test]
fn interop_python_sdk_modern_error_suggests_the_handshake_era() {
    // The Python SDK cannot send its client a request from a tool in the
    // 2026-07-28 era; in the handshake era it can.
    let test = "interop_python_sdk_modern_error_suggests_the_handshake_era";
    let Some(s) = installed(test, &[PY_ELICIT]) else { return };
    let turn = Turn::take("interop_wild", test);
    let entry = json!({"command": s.python,
        "args": [repo_root().join(PY_ELICIT), &turn.marker]});
    write_mcp_json(&turn.dir, &[("py", entry)]);
    let root = turn.dir.root().display().to_string();
    let run = |protocol: &str, code: i32| {
        let args = [
            "call",
            "mcp__py__roots",
            "--yes",
            "--root",
            &root,
            "--protocol",
            protocol,
        ];
        let cmd = turn.command("py", &args);
        turn.run_within(&cmd, &args, code, FASTMCP_LIMIT, String::new)
    };
    let out = run("modern", 4);
    let line = out.stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "{}", out.stderr);
    assert_contains(line, "no back-channel for server-initiated requests");
    assert_contains(line, "try --protocol legacy");
    let out = run("legacy", 0);
    assert_eq!(out.stdout.trim_end(), format!("file://{root}"));
    assert_absent(&out.stderr, "--protocol legacy");
}
