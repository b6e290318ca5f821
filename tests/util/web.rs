//! What the tests against the scripted HTTP server ([`super::http`])
//! share (tests/http.rs, tests/http_answers.rs): one server `web` in
//! `.mcp.json` at the fixture's URL, in either era, the command that runs
//! `rivumi-mcp` with it allowlisted and a short deadline, and what is read
//! back (the requests in order, the one POST of a method, the one error
//! line).

use std::time::Duration;

use serde_json::json;

use super::http::{HttpFixture, Request};
use super::{Dir, Output, TestCommand, write_mcp_json};

/// A deadline for every command: these all finish in well under a second
/// or two, so a hang fails fast.
pub const LIMIT: Duration = Duration::from_secs(20);

/// `rivumi-mcp ARGS` in `dir` with `RIVUMI_MCP_ALLOWLIST=web`.
pub fn cmd(dir: &Dir, args: &[&str]) -> TestCommand {
    let mut c = dir.command(args);
    c.env(super::ALLOWLIST, "web").timeout(LIMIT);
    c
}

/// A directory whose `.mcp.json` has server `web` at `url` in the
/// handshake era (`"protocol": "legacy"`): for tests of that era's
/// mechanics (sessions, streams, resumption) against a 2025 script.
pub fn setup_legacy(test: &str, url: &str) -> Dir {
    let dir = Dir::new(test);
    write_mcp_json(
        &dir,
        &[("web", json!({ "url": url, "protocol": "legacy" }))],
    );
    dir
}

/// The same with `protocol` left at `auto`: the 2026-07-28 probe first.
pub fn setup_auto(test: &str, url: &str) -> Dir {
    let dir = Dir::new(test);
    write_mcp_json(&dir, &[("web", json!({ "url": url }))]);
    dir
}

/// `call mcp__web__echo text=hi` (and `extra`), expecting exit 0 and `hi`.
#[track_caller]
pub fn call_hi(dir: &Dir, extra: &[&str]) -> Output {
    let mut args = vec!["call", "mcp__web__echo", "text=hi"];
    args.extend_from_slice(extra);
    let out = cmd(dir, &args).assert_exit(0);
    assert_eq!(out.stdout, "hi\n", "{out:?}");
    out
}

/// `METHOD rpc-method` of every request, in order.
pub fn sequence(fx: &HttpFixture) -> Vec<String> {
    fx.requests()
        .iter()
        .map(|r| {
            format!("{} {}", r.method, r.rpc_method().unwrap_or_default())
        })
        .collect()
}

/// The POSTs of `method`, which must be exactly one.
#[track_caller]
pub fn one_post(fx: &HttpFixture, method: &str) -> Request {
    let p = fx.posts_of(method);
    assert_eq!(p.len(), 1, "POSTs of {method}:\n{}", fx.summary());
    p.into_iter().next().unwrap()
}

/// The single line on stderr, `rivumi-mcp: server 'web': ...`.
#[track_caller]
pub fn error_line(out: &Output) -> String {
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr:\n{}", out.stderr);
    assert!(
        lines[0].starts_with("rivumi-mcp: server 'web': "),
        "{}",
        lines[0]
    );
    lines[0].to_string()
}
