//! Servers of the second trial (issue 21) over stdio, installed by
//! scripts/interop-setup.sh:
//!
//! - the reference `mcp-server-sqlite` (PyPI, on the Python SDK `mcp` 1.x
//!   it needs; `.interop/real-venv`). It declares `resources` but answers
//!   `resources/templates/list` with -32601 (bug 1): `resources`, `list
//!   --all`, `lock` and calls under the lock must all work.
//! - `@cyanheads/git-mcp-server` (npm; `.interop/git-node`), whose
//!   `git_commit` answers a text block with the structured content's object
//!   plus null members (bug 3): it is printed once.
//! - `mcp-server-fetch` (PyPI; `.interop/real-fetch-venv`): `(no
//!   resources)`, the one-tool view of a tool named as its server, and a
//!   call to a page served on loopback.

use std::path::PathBuf;

use crate::util::interop::{Turn, assert_no_leftovers, installed_at};
use crate::util::{assert_absent, assert_contains};

const SQLITE: &str = ".interop/real-venv/bin/mcp-server-sqlite";
const GIT_SERVER: &str =
    ".interop/git-node/node_modules/@cyanheads/git-mcp-server/dist/index.js";

/// The server's path, or `None` when it is missing (see [`installed_at`]).
fn sqlite(test: &str) -> Option<PathBuf> {
    installed_at(test, SQLITE)
}

#[test]
fn interop_sqlite_lists_locks_and_calls_without_templates() {
    let test = "interop_sqlite";
    let Some(server) = sqlite(test) else { return };
    let t = Turn::take("interop", test);
    // The marker is in the database's path, so on the server's argv.
    let db = t.dir.path(format!("{}.db", t.marker));
    let entry = serde_json::json!({
        "command": server.to_str().unwrap(),
        "args": ["--db-path", db.to_str().unwrap()],
    });
    t.dir.write(
        ".mcp.json",
        format!("{{\"mcpServers\": {{\"sqlite\": {entry}}}}}"),
    );
    let none = String::new;
    let (out, _) = t.run("sqlite", &["resources", "sqlite"], 0, none);
    assert_contains(&out.stdout, "memo://insights");
    assert_absent(&out.stdout, "template");
    let (out, _) = t.run("sqlite", &["-v", "resources", "sqlite"], 0, none);
    assert_contains(
        &out.stderr,
        "server 'sqlite': resources/templates/list: not offered (-32601)",
    );
    let (out, _) = t.run("sqlite", &["list", "--all", "sqlite"], 0, none);
    for tool in ["read_query", "write_query", "create_table", "list_tables"] {
        assert_contains(&out.stdout, &format!("mcp__sqlite__{tool}"));
    }
    t.run("sqlite", &["lock"], 0, none);
    t.run("sqlite", &["lock", "sqlite"], 0, none);
    t.run("sqlite", &["lock", "--check"], 0, none);
    let calls: [&[&str]; 3] = [
        &["create_table", "query=CREATE TABLE t (x INTEGER)"],
        &["write_query", "query=INSERT INTO t VALUES (42)"],
        &["read_query", "query=SELECT x FROM t"],
    ];
    let mut last = String::new();
    for c in calls {
        // None of sqlite's tools is marked read-only: approved by name.
        let mut args = vec!["call", "--approve", "mcp__sqlite__*", "sqlite"];
        args.extend_from_slice(c);
        let (out, _) = t.run("sqlite", &args, 0, none);
        last = out.stdout;
    }
    assert_contains(&last, "42");
    assert_no_leftovers(&t.marker, "the sqlite calls", test);
}

#[test]
fn interop_git_commit_is_printed_once() {
    let test = "interop_git_commit";
    let Some(server) = installed_at(test, GIT_SERVER) else { return };
    let t = Turn::take("interop", test);
    let repo = t.dir.create_dir(format!("repo-{}", t.marker));
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&repo)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["config", "user.email", "t@example.com"]);
    git(&["config", "user.name", "t"]);
    git(&["config", "commit.gpgsign", "false"]);
    std::fs::write(repo.join("a.txt"), "hi\n").unwrap();
    git(&["add", "a.txt"]);
    let entry = serde_json::json!({
        "command": "node",
        "args": [server.to_str().unwrap(), t.marker],
        "env": {"MCP_TRANSPORT_TYPE": "stdio", "MCP_LOG_LEVEL": "error",
                "GIT_SIGN_COMMITS": "false"},
        "env_vars": ["PATH", "HOME"],
    });
    t.dir.write(
        ".mcp.json",
        format!("{{\"mcpServers\": {{\"git\": {entry}}}}}"),
    );
    let path = format!("path={}", repo.display());
    let args = [
        "call",
        "git",
        "git_commit",
        "message=first",
        &path,
        "--approve",
        "mcp__git__git_commit",
    ];
    let (out, _) = t.run("git", &args, 0, String::new);
    // One JSON object: the text (with "insertions": null) and the
    // structured content (without it) are the same object.
    assert_eq!(
        out.stdout.matches("\"commitHash\"").count(),
        1,
        "{}",
        out.stdout
    );
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(v["success"], true, "{v:#}");
    assert_no_leftovers(&t.marker, "the git call", test);
}

const FETCH: &str = ".interop/real-fetch-venv/bin/mcp-server-fetch";

/// Serves a small HTML page on 127.0.0.1 (robots.txt: 404) to whoever
/// asks, for `n` connections; returns its URL.
fn page_server(n: usize) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/page", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(n) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let got = s.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..got]);
            let (status, body) = if head.starts_with("GET /robots.txt") {
                ("404 Not Found", String::new())
            } else {
                (
                    "200 OK",
                    "<html><head><title>T</title></head><body><h1>Hello \
                     loopback</h1><p>A page served by the test.</p></body>\
                     </html>"
                        .to_string(),
                )
            };
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Type: text/html\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn interop_fetch_detail_view_and_a_call() {
    let test = "interop_fetch";
    let Some(server) = installed_at(test, FETCH) else { return };
    let t = Turn::take("interop", test);
    let entry = serde_json::json!({
        "command": server.to_str().unwrap(),
        "args": ["--allow-private-ips", "--user-agent", t.marker],
    });
    t.dir.write(
        ".mcp.json",
        format!("{{\"mcpServers\": {{\"fetch\": {entry}}}}}"),
    );
    let none = String::new;
    let (out, _) = t.run("fetch", &["list", "--all", "fetch"], 0, none);
    assert_contains(&out.stdout, "mcp__fetch__fetch  read");
    assert_contains(&out.stdout, "  (no resources)\n");
    assert_contains(&out.stdout, "prompt fetch");
    // A server's tool of its own name: the detail view.
    let (out, _) = t.run("fetch", &["list", "fetch", "fetch"], 0, none);
    let d = &out.stdout;
    assert_contains(d, "  url: string  (required)\n      URL to fetch\n");
    assert_contains(d, "      default: 5000\n");
    assert_contains(d, "annotations:\n  destructiveHint: false\n");
    assert_contains(
        d,
        "example:\n  rivumi-mcp call fetch fetch url=https://example.com/\n",
    );
    // The call, against a page on loopback, in a pipe.
    let url = format!("url={}", page_server(8));
    // Converting the page takes the server seconds of its own (the
    // readability pass): a longer limit than the listing's.
    let args = ["call", "fetch", "fetch", &url];
    let limit = std::time::Duration::from_secs(30);
    let mut cmd = t.command("fetch", &args);
    cmd.timeout(limit * 2);
    let out = t.run_within(&cmd, &args, 0, limit, none);
    assert_contains(&out.stdout, "Hello loopback");
    assert_no_leftovers(&t.marker, "the fetch calls", test);
}
