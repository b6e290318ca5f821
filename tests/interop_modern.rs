//! Interop with a server that speaks MCP 2026-07-28: `fixtures/interop/
//! ts2_server.cjs` on the TypeScript SDK v2 (`@modelcontextprotocol/server`
//! 2.3.1), over stdio and Streamable HTTP, in its two kinds:
//!
//! - **dual-era** (`serve` over stdio, `stateless` over HTTP): with
//!   `protocol` left at `auto`, it is spoken to in 2026-07-28 over HTTP
//!   (the modern probe comes first) and in 2025-11-25 over stdio
//!   (`initialize` comes first there, so that no 2025 server is ever sent
//!   something it may not survive).
//! - **modern-only** (`reject`): `initialize` gets `-32022`
//!   UnsupportedProtocolVersion listing 2026-07-28; over stdio the pipe
//!   stays open and the modern opening follows on it.
//!
//! And `fixtures/interop/py_server.py` (the Python SDK 2.3.0, dual-era over
//! stdio and HTTP): over HTTP with `auto` (which must pick 2026-07-28),
//! over stdio with `"protocol": "modern"`.
//!
//! What the server answers on the wire in each mode is recorded in
//! `fixtures/interop/README.md` (`era_probe.py` rechecks it). The
//! conventions are those of `interop.rs` and `interop_http.rs`: servers
//! from `.interop/` (a test fails when they are missing, unless
//! `RIVUMI_MCP_SKIP_INTEROP=1`), one interop test at a time, every command
//! timed against [`LIMIT`], no process with the test's marker left after.

use serde_json::{Value, json};

use crate::util::interop::{
    LIMIT, PY_TOOLS, ServerProcess, TS2_TOOLS, Ts2, Ts2Era, Turn,
    assert_no_leftovers, check_json_listing, installed, start_py_http,
};
use crate::util::{Output, write_mcp_json};

/// The TS v2 server's name in `.mcp.json` (and so the allowlist).
const NAME: &str = "ts2";
/// The Python server's.
const PY: &str = "py";
/// What `auto` speaks to a dual-era server over stdio, and everything
/// 2026-07-28 speaks.
const HANDSHAKE: &[&str] = &["2025-11-25"];
const MODERN: &[&str] = &["2026-07-28"];

/// One test: its turn (whose `.mcp.json` names one server, `name`) and,
/// over HTTP, the server it started. Fields drop in order: the server is
/// killed before the turn lets go of the lock.
struct Modern {
    http: Option<ServerProcess>,
    turn: Turn,
    name: &'static str,
}

impl Modern {
    /// Over stdio: `rivumi-mcp` starts the server for each command.
    fn stdio(test: &str, era: Ts2Era) -> Option<Modern> {
        let ts2 = Ts2::installed(test)?;
        let turn = Turn::take("interop_modern", test);
        write_mcp_json(
            &turn.dir,
            &[(NAME, ts2.stdio_entry(era, &turn.marker))],
        );
        Some(Modern { http: None, turn, name: NAME })
    }

    /// Over HTTP: the test starts the server on 127.0.0.1.
    fn http(test: &str, era: Ts2Era) -> Option<Modern> {
        let ts2 = Ts2::installed(test)?;
        let turn = Turn::take("interop_modern", test);
        let (process, url) = ts2.start_http(&turn.dir, era, &turn.marker);
        write_mcp_json(&turn.dir, &[(NAME, json!({ "url": url }))]);
        Some(Modern { http: Some(process), turn, name: NAME })
    }

    /// `py_server.py`: over stdio with `"protocol": "modern"` when `mode`
    /// is `None`, else over HTTP in that mode with `protocol` left at
    /// `auto`.
    fn py_modern(test: &str, mode: Option<&str>) -> Option<Modern> {
        let s = installed(test, &[])?;
        let turn = Turn::take("interop_modern", test);
        let marker = &turn.marker;
        let (http, mut entry) = match mode {
            None => (
                None,
                json!({
                    "command": s.python,
                    "args": ["-X", format!("{marker}=1"), s.py_server],
                }),
            ),
            Some(mode) => {
                let (p, url) = start_py_http(&s, &turn.dir, mode, marker);
                (Some(p), json!({ "url": url }))
            }
        };
        if mode.is_none() {
            entry["protocol"] = json!("modern");
        }
        write_mcp_json(&turn.dir, &[(PY, entry)]);
        Some(Modern { http, turn, name: PY })
    }

    /// Runs `rivumi-mcp ARGS` and checks the exit code and the time taken;
    /// over stdio, also that the server it started is gone.
    #[track_caller]
    fn run(&self, args: &[&str], code: i32) -> Output {
        let (out, cmd) =
            self.turn.run(self.name, args, code, || self.server_log());
        if self.http.is_none() {
            assert_no_leftovers(
                &self.turn.marker,
                "rivumi-mcp exited",
                &cmd.describe(),
            );
        }
        out
    }

    /// Runs `rivumi-mcp batch` with `lines` on stdin; exit 0 expected.
    #[track_caller]
    fn batch(&self, lines: &[Value]) -> Vec<Value> {
        let args = ["batch"];
        let mut cmd = self.turn.command(self.name, &args);
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        cmd.stdin(input);
        let out =
            self.turn.run_within(&cmd, &args, 0, LIMIT, || self.server_log());
        out.stdout
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }

    /// The HTTP server's stderr, for failure messages.
    fn server_log(&self) -> String {
        self.http
            .as_ref()
            .map(|p| format!("\nserver stderr:\n{}", p.stderr()))
            .unwrap_or_default()
    }
}

/// `list --json`: the server's listing, spoken in one of `protocols`, has
/// its three tools with their classifications; `whereami` keeps its
/// `x-mcp-header` annotation. Returns the protocol used.
#[track_caller]
fn check_listing(t: &Modern, protocols: &[&str]) -> String {
    let out = t.run(&["list", NAME, "--json"], 0);
    let v = out.stdout_json();
    let mut server = v["servers"][0].clone();
    let protocol = server["protocol"].as_str().unwrap_or("?").to_string();
    assert!(protocols.contains(&protocol.as_str()), "protocol: {v:#}");
    // check_json_listing knows the handshake era only; the era is checked.
    server["protocol"] = json!("2025-11-25");
    check_json_listing(&server, NAME, "rivumi-interop-ts2", TS2_TOOLS);
    let region = &server["tools"][2]["inputSchema"]["properties"]["region"];
    assert_eq!(region["x-mcp-header"], json!("Region"), "{v:#}");
    protocol
}

/// `call`, `read` and `prompt` each give the server's exact answer.
#[track_caller]
fn check_call_read_prompt(t: &Modern) {
    let out = t.run(&["call", "mcp__ts2__echo", "message=hi"], 0);
    assert_eq!(out.stdout, "Echo: hi\n");
    let out = t.run(&["call", NAME, "add", "a=2", "b=40"], 0);
    assert_eq!(out.stdout, "2 + 40 = 42\n");
    // On the 2026-07-28 wire `region` also travels as Mcp-Param-Region;
    // the server refuses the call (-32020) without it.
    let out = t.run(
        &["call", NAME, "whereami", "region=eu", "verbose=true", "-y"],
        0,
    );
    assert_eq!(out.stdout, "region=eu (verbose)\n");

    let out = t.run(&["read", NAME, "fixture://readme"], 0);
    assert_eq!(out.stdout, "Hello from the rivumi interop TS v2 server.\n");

    // The SDK's prompts/get result has no description, hence no `#` line.
    let out = t.run(&["prompt", NAME, "review", "code=fn main(){}"], 0);
    assert_eq!(
        out.stdout,
        "[user]\nPlease review this rust code:\n\nfn main(){}\n"
    );
}

/// `batch`: a call, a read and a prompt over one connection.
#[track_caller]
fn check_batch(t: &Modern) {
    let got = t.batch(&[
        json!({"id": 1, "tool": "mcp__ts2__echo", "arguments": {"message": "b"}}),
        json!({"id": 2, "server": NAME, "read": "fixture://readme"}),
        json!({"id": 3, "server": NAME, "prompt": "review",
               "arguments": {"code": "x", "language": "c"}}),
    ]);
    assert_eq!(got.len(), 3, "{got:#?}");
    assert_eq!(got[0]["result"]["content"][0]["text"], json!("Echo: b"));
    assert_eq!(
        got[1]["result"]["contents"][0]["text"],
        json!("Hello from the rivumi interop TS v2 server.")
    );
    assert_eq!(
        got[2]["result"]["messages"][0]["content"]["text"],
        json!("Please review this c code:\n\nx"),
        "{got:#?}"
    );
}

/// Everything above, on the server of `t`, spoken in one of `protocols`.
#[track_caller]
fn check_all(t: &Modern, protocols: &[&str]) {
    check_listing(t, protocols);
    check_call_read_prompt(t);
    check_batch(t);
}

// ---- dual-era ---------------------------------------------------------------

#[test]
fn interop_modern_ts2_dual_stdio() {
    let test = "interop_modern_ts2_dual_stdio";
    if let Some(t) = Modern::stdio(test, Ts2Era::Dual) {
        check_all(&t, HANDSHAKE);
    }
}

#[test]
fn interop_modern_ts2_dual_http() {
    let test = "interop_modern_ts2_dual_http";
    if let Some(t) = Modern::http(test, Ts2Era::Dual) {
        check_all(&t, MODERN);
        // -v says how the era was chosen.
        let out = t.run(&["list", NAME, "-v"], 0);
        assert!(
            out.stderr.contains(
                "server 'ts2': discovered, protocol 2026-07-28 \
                 (server/discover answered)"
            ),
            "{}",
            out.stderr
        );
    }
}

// ---- modern-only ------------------------------------------------------------

#[test]
fn interop_modern_ts2_modern_only_stdio() {
    let test = "interop_modern_ts2_modern_only_stdio";
    if let Some(t) = Modern::stdio(test, Ts2Era::ModernOnly) {
        check_all(&t, MODERN);
        let out = t.run(&["list", NAME, "-v"], 0);
        assert!(
            out.stderr.contains(
                "discovered, protocol 2026-07-28 (initialize answered \
                 -32022 listing 2026-07-28)"
            ),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn interop_modern_ts2_modern_only_http() {
    let test = "interop_modern_ts2_modern_only_http";
    let Some(t) = Modern::http(test, Ts2Era::ModernOnly) else {
        return;
    };
    check_all(&t, MODERN);
    // Unknown resource: -32602 on the 2026-07-28 wire, named in the message.
    let out = t.run(&["read", NAME, "fixture://nope"], 4);
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("-32602"), "{}", out.stderr);
}

// ---- the Python SDK 2.3.0, dual-era -----------------------------------------

/// `list`, `call`, `read`, `prompt` and `batch` against `py_server.py` on
/// the 2026-07-28 wire, with its exact answers (fixtures/interop/README.md).
#[track_caller]
fn check_py_modern(t: &Modern) {
    let out = t.run(&["list", PY, "--json"], 0);
    let v = out.stdout_json();
    let mut server = v["servers"][0].clone();
    assert_eq!(server["protocol"], json!("2026-07-28"), "{v:#}");
    server["protocol"] = json!("2025-11-25");
    check_json_listing(&server, PY, "rivumi-interop-py", PY_TOOLS);

    let out = t.run(&["call", "mcp__py__echo", "message=hi"], 0);
    assert_eq!(out.stdout, "Echo: hi\n");
    let out = t.run(&["read", PY, "fixture://readme"], 0);
    assert_eq!(out.stdout, "Hello from the rivumi interop Python server.\n");
    let out = t.run(&["prompt", PY, "review", "code=fn main(){}"], 0);
    assert_eq!(
        out.stdout,
        "# Asks for a review of a code snippet.\n[user]\n\
         Please review this rust code:\n\nfn main(){}\n"
    );
    let got = t.batch(&[
        json!({"id": 1, "server": PY, "tool": "add", "arguments": {"a": 2, "b": 3}}),
        json!({"id": 2, "server": PY, "read": "fixture://items/7"}),
    ]);
    assert_eq!(got[0]["result"]["content"][0]["text"], json!("2 + 3 = 5"));
    assert_eq!(got[1]["result"]["contents"][0]["text"], json!("item 7"));
}

#[test]
fn interop_modern_py_stdio() {
    if let Some(t) = Modern::py_modern("interop_modern_py_stdio", None) {
        check_py_modern(&t);
    }
}

#[test]
fn interop_modern_py_http() {
    let test = "interop_modern_py_http";
    if let Some(t) = Modern::py_modern(test, Some("stateless")) {
        check_py_modern(&t);
    }
}
