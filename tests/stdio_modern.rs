//! MCP 2026-07-28 over stdio, hermetic: the fixture server with `--era
//! modern` (2026-07-28 only) or `--era dual` (both eras) behind the real
//! binary. `list` and `call` with no handshake, `_meta` on every request,
//! `input_required` retried with the state, how `--protocol auto` chooses
//! the era on stdio (modern on a modern-only server, the handshake era on
//! the plain and the dual-era fixture) and modern errors surfaced as one
//! clear line.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::util::{
    Dir, TestCommand, assert_absent, assert_contains, fixture_server,
    run_allowed, write_mcp_json,
};

/// The `_meta` keys a 2026-07-28 request carries.
const VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
const INFO: &str = "io.modelcontextprotocol/clientInfo";

/// A directory whose `.mcp.json` has one server `demo`, the fixture with
/// `args` (and `--record <dir>/rec`), `protocol` left at `auto` unless
/// `protocol` names one. Returns the record file too.
fn demo(test: &str, args: &[&str], protocol: Option<&str>) -> (Dir, PathBuf) {
    let dir = Dir::new(test);
    let rec = dir.path("rec");
    let rec_arg = format!("--record={}", rec.display());
    let mut all = args.to_vec();
    all.push(&rec_arg);
    let mut entry = fixture_server(&all);
    if let Some(p) = protocol {
        entry["protocol"] = json!(p);
    }
    write_mcp_json(&dir, &[("demo", entry)]);
    (dir, rec)
}

/// `rivumi-mcp ARGS` in `dir` with only `demo` allowed.
fn run(dir: &Dir, args: &[&str]) -> TestCommand {
    run_allowed(dir, "demo", args)
}

/// Every message the fixture received, in order; the record file is
/// emptied, so that the next command's messages stand alone.
fn take_received(rec: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(rec).unwrap_or_default();
    let _ = std::fs::remove_file(rec);
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The methods of `msgs`, in order.
fn methods(msgs: &[Value]) -> Vec<&str> {
    msgs.iter().filter_map(|m| m["method"].as_str()).collect()
}

/// [`methods`] with the pages of a list as one step.
fn steps(msgs: &[Value]) -> Vec<&str> {
    let mut seq = methods(msgs);
    seq.dedup();
    seq
}

/// The one line on stderr, which names the server.
#[track_caller]
fn error_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr:\n{stderr}");
    assert!(lines[0].starts_with("rivumi-mcp: server 'demo': "), "{stderr}");
    lines[0]
}

/// Checks that every request after the opening speaks 2026-07-28 in its
/// `_meta`, with the client's capabilities and name.
#[track_caller]
fn assert_modern_meta(msgs: &[Value]) {
    for m in msgs.iter().filter(|m| m.get("id").is_some()) {
        if m["method"] == "initialize" {
            continue;
        }
        let meta = &m["params"]["_meta"];
        assert_eq!(meta[VERSION], json!("2026-07-28"), "{m}");
        assert!(meta[CAPS].is_object(), "{m}");
        assert_eq!(meta[INFO]["name"], json!("rivumi-mcp"), "{m}");
    }
}

#[test]
fn modern_list_over_stdio_discovers_without_a_handshake() {
    let (dir, rec) = demo("stdio_modern_list", &["--era", "modern"], None);
    let out = run(&dir, &["list", "demo"]).assert_exit(0);
    let mut lines = out.stdout.lines();
    assert_eq!(
        lines.next(),
        Some("demo: rivumi-mcp-fixture 1.0.0 (protocol 2026-07-28)"),
        "{out:?}"
    );
    // The whole catalogue, over several pages of 3, and the tool only the
    // modern era offers.
    assert_contains(&out.stdout, "  mcp__demo__echo ");
    assert_contains(&out.stdout, "  mcp__demo__odd_name_ ");
    assert_contains(&out.stdout, "  mcp__demo__confirm ");
    assert_absent(&out.stdout, "incomplete");
    assert_eq!(out.stderr, "");
    let msgs = take_received(&rec);
    let seq = methods(&msgs);
    // auto on stdio: initialize first (a 2025 server may not survive
    // anything else), refused with -32022 listing 2026-07-28, then
    // server/discover and no notifications/initialized.
    assert_eq!(seq[..2], ["initialize", "server/discover"], "{seq:?}");
    assert!(seq[2..].iter().all(|m| *m == "tools/list"), "{seq:?}");
    assert!(seq.len() >= 4, "paged: {seq:?}");
    assert_modern_meta(&msgs);
    // The pages follow the cursors, each request with its own id.
    let ids: Vec<&Value> = msgs.iter().map(|m| &m["id"]).collect();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique, "{msgs:?}");

    let out = run(&dir, &["list", "demo", "--json", "-v"]).assert_exit(0);
    let s = &out.stdout_json()["servers"][0];
    assert_eq!(s["protocol"], json!("2026-07-28"), "{s}");
    assert_eq!(s["serverInfo"]["name"], json!("rivumi-mcp-fixture"), "{s}");
    assert_eq!(s["instructions"], json!("fixture"), "{s}");
    assert_contains(
        &out.stderr,
        "server 'demo': discovered, protocol 2026-07-28 (initialize \
         answered -32022 listing 2026-07-28)",
    );
    // --all: resources, templates and prompts in the modern era too.
    let out = run(&dir, &["list", "demo", "--all", "--json"]).assert_exit(0);
    let s = &out.stdout_json()["servers"][0];
    assert_eq!(s["complete"], json!(true), "{s}");
    assert_eq!(s["resources"].as_array().map(Vec::len), Some(4), "{s}");
    assert_eq!(s["resourceTemplates"].as_array().map(Vec::len), Some(1));
    assert_eq!(s["prompts"].as_array().map(Vec::len), Some(2), "{s}");
}

#[test]
fn modern_call_over_stdio_carries_meta_and_answers_input_required() {
    let (dir, rec) = demo("stdio_modern_call", &["--era", "modern"], None);
    let out = run(&dir, &["call", "demo", "echo", "text=hi"]).assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert_eq!(out.stderr, "");
    let msgs = take_received(&rec);
    assert_eq!(
        steps(&msgs),
        ["initialize", "server/discover", "tools/list", "tools/call"]
    );
    assert_modern_meta(&msgs);
    let call = msgs.iter().find(|m| m["method"] == "tools/call").unwrap();
    assert_eq!(call["params"]["arguments"], json!({"text": "hi"}));

    let out =
        run(&dir, &["call", "demo", "add", "a=2", "b=40", "--json", "-y"])
            .assert_exit(0);
    assert_eq!(out.stdout_json()["structuredContent"], json!({"sum": 42}));
    take_received(&rec);

    // input_required: answered (declined: no terminal) and retried with a
    // new id, the answers and the state, byte for byte.
    let out = run(&dir, &["call", "mcp__demo__confirm"]).assert_exit(0);
    assert_eq!(out.stdout, "{\"ok\":{\"action\":\"decline\"}} \"st-1\"\n");
    assert_contains(
        &out.stderr,
        "server 'demo' asked for a form (Go on?); declined: no terminal to \
         ask",
    );
    let calls: Vec<Value> = take_received(&rec)
        .into_iter()
        .filter(|m| m["method"] == "tools/call")
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let (first, retry) = (&calls[0], &calls[1]);
    assert_ne!(first["id"], retry["id"]);
    assert!(first["params"].get("requestState").is_none(), "{first}");
    assert!(first["params"].get("inputResponses").is_none(), "{first}");
    assert_eq!(retry["params"]["requestState"], json!("st-1"));
    assert_eq!(
        retry["params"]["inputResponses"],
        json!({"ok": {"action": "decline"}})
    );

    // --log-level travels in _meta: no logging/setLevel in this era.
    let out =
        run(&dir, &["call", "demo", "echo", "text=x", "--log-level", "info"])
            .assert_exit(0);
    assert_eq!(out.stdout, "x\n");
    let msgs = take_received(&rec);
    assert!(!methods(&msgs).contains(&"logging/setLevel"), "{msgs:?}");
    let call = msgs.iter().find(|m| m["method"] == "tools/call").unwrap();
    assert_eq!(
        call["params"]["_meta"]["io.modelcontextprotocol/logLevel"],
        json!("info"),
        "{call}"
    );
}

#[test]
fn protocol_modern_over_stdio_sends_no_initialize() {
    let (dir, rec) =
        demo("stdio_modern_forced", &["--era", "modern"], Some("modern"));
    let out =
        run(&dir, &["call", "demo", "echo", "text=hi", "-v"]).assert_exit(0);
    assert_eq!(out.stdout, "hi\n");
    assert_contains(
        &out.stderr,
        "server 'demo': discovered, protocol 2026-07-28 (configured)",
    );
    let msgs = take_received(&rec);
    assert_eq!(steps(&msgs), ["server/discover", "tools/list", "tools/call"]);
    assert_modern_meta(&msgs);
}

#[test]
fn protocol_auto_over_stdio_chooses_by_the_server() {
    // The plain fixture speaks the handshake era only: auto never probes
    // it with a modern request.
    let (dir, rec) = demo("stdio_auto_plain", &[], None);
    let out = run(&dir, &["list", "demo"]).assert_exit(0);
    assert_contains(&out.stdout, "(protocol 2025-11-25)");
    let msgs = take_received(&rec);
    let seq = methods(&msgs);
    assert_eq!(seq[..2], ["initialize", "notifications/initialized"]);
    assert!(!seq.contains(&"server/discover"), "{seq:?}");
    assert!(msgs.iter().all(|m| m["params"]["_meta"].get(VERSION).is_none()));

    // A modern-only fixture: 2026-07-28 (as above).
    let (dir, _) = demo("stdio_auto_modern", &["--era", "modern"], None);
    let out = run(&dir, &["list", "demo"]).assert_exit(0);
    assert_contains(&out.stdout, "(protocol 2026-07-28)");

    // A dual-era fixture is spoken to in the handshake era under auto,
    // in 2026-07-28 when the operator asks for it.
    let (dir, rec) = demo("stdio_auto_dual", &["--era", "dual"], None);
    let out = run(&dir, &["list", "demo"]).assert_exit(0);
    assert_contains(&out.stdout, "(protocol 2025-11-25)");
    assert_absent(&out.stdout, "mcp__demo__confirm");
    let seq: Vec<String> = methods(&take_received(&rec))
        .into_iter()
        .map(str::to_string)
        .collect();
    assert!(!seq.iter().any(|m| m == "server/discover"), "{seq:?}");
    let out =
        run(&dir, &["list", "demo", "--protocol", "modern"]).assert_exit(0);
    assert_contains(&out.stdout, "(protocol 2026-07-28)");
    assert_contains(&out.stdout, "mcp__demo__confirm");
    let msgs = take_received(&rec);
    assert_eq!(methods(&msgs)[0], "server/discover");
    assert!(!methods(&msgs).contains(&"initialize"), "{msgs:?}");
}

#[test]
fn modern_errors_over_stdio_are_one_clear_line() {
    let (dir, _) = demo("stdio_modern_errors", &["--era", "modern"], None);
    // An unknown resource is -32602 in 2026-07-28 (was -32002).
    let out =
        run(&dir, &["read", "demo", "fixture://docs/nope"]).assert_exit(4);
    assert_eq!(out.stdout, "");
    let line = error_line(&out.stderr);
    assert_contains(line, "-32602");
    assert_contains(line, "resource not found: fixture://docs/nope");
    // A modern resource that exists reads as in the handshake era.
    let out =
        run(&dir, &["read", "demo", "fixture://docs/readme"]).assert_exit(0);
    assert_eq!(out.stdout, "hello\n");

    // The handshake era asked of a modern-only server says what to do.
    let out =
        run(&dir, &["list", "demo", "--protocol", "legacy"]).assert_exit(4);
    let line = error_line(&out.stderr);
    assert_contains(line, "-32022 (UnsupportedProtocolVersion)");
    assert_contains(line, "the server speaks 2026-07-28 only");

    // A server error on a modern call is the server's, exit 4.
    let (dir, _) = demo(
        "stdio_modern_fail",
        &["--era", "modern", "--fail-method", "tools/call"],
        None,
    );
    let out = run(&dir, &["call", "demo", "echo", "text=hi"]).assert_exit(4);
    assert_contains(error_line(&out.stderr), "fixture failure");

    // 2026-07-28 asked of a server of the handshake era only.
    let (dir, rec) = demo("stdio_modern_refused", &[], Some("modern"));
    let out = run(&dir, &["list", "demo"]).assert_exit(4);
    let line = error_line(&out.stderr);
    assert_contains(line, "-32601");
    assert_eq!(methods(&take_received(&rec)), ["server/discover"]);
}
