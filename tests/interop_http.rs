//! Interop with real MCP servers over Streamable HTTP: the TypeScript
//! reference server `@modelcontextprotocol/server-everything` (always SSE
//! answers; 400 for an unknown session) and `fixtures/interop/py_server.py`
//! (the official Python SDK) in its `sse`, `json`, `stateless` and
//! `stateless-json` modes.
//!
//! Each test starts its server as a child process on 127.0.0.1 with port 0,
//! learns the real port from the server's "listening" line on stderr and
//! points `.mcp.json` at `http://127.0.0.1:PORT/mcp`. The server runs in
//! its own process group, which is killed when the test ends, on panic
//! too ([`ServerProcess`]'s `Drop`).
//!
//! The conventions are those of `interop.rs`, and so is what implements
//! them (`util/interop.rs`): the servers come from `.interop/`
//! (`scripts/interop-setup.sh`); a test whose servers are missing fails
//! and says how to install them, unless `RIVUMI_MCP_SKIP_INTEROP=1` is
//! set; one interop test runs at a time, over stdio or HTTP. Every command
//! is timed (see the times with `cargo test --test integration
//! interop_http -- --nocapture`) and must finish in under [`LIMIT`]. The
//! server's command line carries a unique marker, and once the test has
//! stopped it no process with that marker may be left.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::interop::{
    EVERYTHING_TOOLS, Installed, LIMIT, NotListening, PY_TOOLS, ServerProcess,
    Turn, check_json_listing, expected_rows, first_word_after, first_words,
    installed, lines_with, resource_rows, tool_rows,
};
use crate::util::{
    Dir, Output, assert_absent, assert_contains, repo_root, wait_with_timeout,
    write_mcp_json,
};

/// How long a server may take to print its "listening" line (Python
/// imports take about 0.5 s, Node about 0.2 s).
const START_LIMIT: Duration = Duration::from_secs(15);

/// How long server-everything may take to log a session's end after the
/// command that ended it has exited.
const LOG_GRACE: Duration = Duration::from_secs(1);

/// The preload that makes server-everything listen on 127.0.0.1 only and
/// say on which port.
pub(crate) const LOOPBACK_ONLY: &str = "fixtures/interop/loopback-only.cjs";

// ---- the servers ----------------------------------------------------------

/// Which server a test runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// server-everything, `streamableHttp`.
    Everything,
    /// `py_server.py --transport http --mode MODE`.
    Py(&'static str),
}

impl Kind {
    /// The server's name in `.mcp.json`.
    fn name(self) -> &'static str {
        match self {
            Kind::Everything => "ev",
            Kind::Py(_) => "py",
        }
    }

    /// Whether the server hands out a session id (and so gets a DELETE).
    fn stateful(self) -> bool {
        match self {
            Kind::Everything => true,
            Kind::Py(mode) => !mode.starts_with("stateless"),
        }
    }
}

/// A server started by a test, and the port it listens on. Dropping it
/// kills its process group; [`HttpServer::stop`] does the same and then
/// checks that nothing is left.
#[derive(Debug)]
pub(crate) struct HttpServer {
    /// stdout: server-everything's log lines; stderr: the "listening" line
    /// included.
    pub(crate) process: ServerProcess,
    port: u16,
}

impl HttpServer {
    /// Starts `kind` on `port` (0: a free one) and waits for it to listen.
    pub(crate) fn start(
        s: &Installed,
        dir: &Dir,
        kind: Kind,
        port: u16,
        marker: &str,
    ) -> HttpServer {
        let cmd = match kind {
            // Arguments after the transport name are ignored.
            Kind::Everything => {
                let mut c = dir.program(&s.node);
                c.arg("--require")
                    .arg(repo_root().join(LOOPBACK_ONLY))
                    .arg(&s.everything_js)
                    .args(["streamableHttp", marker])
                    .env("PORT", port.to_string());
                c
            }
            // CPython accepts (and ignores) any -X name=value.
            Kind::Py(mode) => {
                let mut c = dir.program(&s.python);
                c.arg("-X")
                    .arg(format!("{marker}=1"))
                    .arg(&s.py_server)
                    .args(["--transport", "http", "--mode", mode])
                    .args(["--port", &port.to_string()]);
                c
            }
        };
        let mut process =
            ServerProcess::spawn(&cmd, marker, &format!("{kind:?}"));
        let mut found = 0;
        let took = process.wait_for(START_LIMIT, |line| {
            listening_port(line).map(|p| found = p).is_some()
        });
        let took = match took {
            Ok(took) => took,
            Err(NotListening::Timeout) => panic!(
                "{kind:?}: no \"listening\" line within \
                 {START_LIMIT:?}; stderr:\n{}",
                process.stderr()
            ),
            Err(NotListening::Closed) => panic!(
                "{kind:?} closed stderr without a \"listening\" line \
                 (exit: {:?}); stderr:\n{}",
                process.try_wait(),
                process.stderr()
            ),
        };
        let server = HttpServer { process, port: found };
        if port != 0 {
            assert_eq!(server.port, port, "{}", server.process.stderr());
        }
        eprintln!(
            "interop_http: {kind:?} listening on port {} after {} ms",
            server.port,
            took.as_millis()
        );
        server
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// Kills the server's process group and checks that no process with
    /// its marker is left (see [`ServerProcess::stop`]).
    #[track_caller]
    pub(crate) fn stop(&mut self) {
        self.process.stop("the server's process group was killed");
    }
}

/// The port of a `... listening on ...127.0.0.1:PORT...` line:
/// `loopback-only: listening on 127.0.0.1:PORT` (server-everything through
/// the preload) or `py_server: listening on http://127.0.0.1:PORT/mcp`.
/// server-everything's own `... listening on port 0` does not count.
fn listening_port(line: &str) -> Option<u16> {
    if !line.contains("listening on") {
        return None;
    }
    let rest = &line[line.find("127.0.0.1:")? + "127.0.0.1:".len()..];
    let digits: String =
        rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok().filter(|&p| p != 0)
}

// ---- one test's directory and server --------------------------------------

/// One test: its turn (whose directory has a `.mcp.json` pointing at the
/// server) and its server. Fields drop in order: the server is killed
/// before the turn lets go of the lock.
struct HttpInterop {
    kind: Kind,
    installed: Installed,
    server: HttpServer,
    turn: Turn,
}

impl HttpInterop {
    /// `None` when the test is to be skipped (see [`installed`]).
    fn new(test: &str, kind: Kind) -> Option<HttpInterop> {
        let s = installed(test, &[LOOPBACK_ONLY])?;
        let turn = Turn::take("interop_http", test);
        let server = HttpServer::start(&s, &turn.dir, kind, 0, &turn.marker);
        // The Python SDK speaks both eras: these tests are about the
        // handshake era's sessions and streams over HTTP, so they ask for
        // it (tests/interop_modern.rs speaks 2026-07-28 to it).
        // server-everything speaks 2025 only and is left to `auto`.
        let entry = match kind {
            Kind::Py(_) => json!({"url": server.url(), "protocol": "legacy"}),
            _ => json!({"url": server.url()}),
        };
        write_mcp_json(&turn.dir, &[(kind.name(), entry)]);
        Some(HttpInterop { kind, installed: s, server, turn })
    }

    /// Runs `rivumi-mcp ARGS` with the server allowlisted and checks the
    /// exit code, the time taken and (server-everything) that every
    /// session it opened was ended.
    #[track_caller]
    fn run(&self, args: &[&str], code: i32) -> Output {
        let (out, cmd) = self.turn.run(self.kind.name(), args, code, || {
            format!(
                "\n--- server stderr ---\n{}",
                self.server.process.stderr()
            )
        });
        if self.kind == Kind::Everything {
            self.assert_sessions_ended(&cmd.describe());
        }
        out
    }

    /// server-everything logs `Session initialized with ID: X` and, on the
    /// closing DELETE, `Received session termination request for session
    /// X`: every session opened so far must have been ended.
    #[track_caller]
    fn assert_sessions_ended(&self, what: &str) {
        let start = Instant::now();
        loop {
            let log = self.server.process.stdout();
            let opened = ids_after(&log, "Session initialized with ID: ");
            let ended = ids_after(
                &log,
                "Received session termination request for session ",
            );
            let open: Vec<&str> = opened
                .iter()
                .filter(|id| !ended.contains(id))
                .copied()
                .collect();
            if !opened.is_empty() && open.is_empty() {
                return;
            }
            if start.elapsed() >= LOG_GRACE {
                panic!(
                    "server-everything: sessions not ended (opened {}): \
                     {open:?}\n{what}\n--- server stdout ---\n{log}",
                    opened.len()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server, checking that nothing of it is left.
    #[track_caller]
    fn finish(mut self) {
        self.server.stop();
    }
}

/// The words after `prefix` on the lines of `log` that have it.
fn ids_after<'a>(log: &'a str, prefix: &str) -> Vec<&'a str> {
    log.lines()
        .filter_map(|l| {
            let rest = &l[l.find(prefix)? + prefix.len()..];
            rest.split_whitespace().next()
        })
        .collect()
}

// ---- reading the output ---------------------------------------------------

/// `-v` says how the closing DELETE went: `HTTP 200` for a server with
/// sessions; a stateless server gets none (it has no session to end).
#[track_caller]
fn check_delete_line(kind: Kind, stderr: &str) {
    let name = kind.name();
    if kind.stateful() {
        assert_contains(
            stderr,
            &format!(
                "rivumi-mcp: server '{name}': DELETE session: HTTP 200\n"
            ),
        );
    } else {
        assert_absent(stderr, "DELETE");
    }
    assert_contains(
        stderr,
        &format!(
            "rivumi-mcp: server '{name}': initialized, protocol 2025-11-25"
        ),
    );
}

// ---- server-everything ----------------------------------------------------

#[test]
fn interop_http_everything() {
    let Some(t) =
        HttpInterop::new("interop_http_everything", Kind::Everything)
    else {
        return;
    };

    // list: one page of 15 tools, from SSE answers.
    let out = t.run(&["list"], 0);
    assert_eq!(
        out.stdout.lines().next(),
        Some("ev: mcp-servers/everything 2.0.0 (protocol 2025-11-25)"),
        "{}",
        out.stdout
    );
    assert_eq!(
        tool_rows(&out.stdout, "ev"),
        expected_rows("ev", EVERYTHING_TOOLS),
        "{}",
        out.stdout
    );
    assert_contains(&out.stdout, "Echoes back the input string");
    assert!(!out.stdout.contains("incomplete"), "{}", out.stdout);
    assert_eq!(out.stderr, "", "nothing on stderr");

    let out = t.run(&["list", "ev", "--json"], 0);
    let v = out.stdout_json();
    let servers = v["servers"].as_array().expect("servers array");
    assert_eq!(servers.len(), 1, "{v:#}");
    check_json_listing(
        &servers[0],
        "ev",
        "mcp-servers/everything",
        EVERYTHING_TOOLS,
    );
    let sum = &servers[0]["tools"][6];
    assert_eq!(sum["name"], json!("get-sum"));
    assert_eq!(sum["inputSchema"]["properties"]["a"]["type"], json!("number"));
    assert_eq!(out.stderr, "");

    // A form the server asks from inside a tool over HTTP, answered from
    // --answer and the defaults; and the roots named with --root.
    let out = t.run(
        &[
            "call",
            "-y",
            "ev",
            "trigger-elicitation-request",
            "--elicit",
            "defaults",
            "--answer",
            "name=Ann",
        ],
        0,
    );
    assert_contains(&out.stdout, "- Name: Ann");
    assert_contains(&out.stdout, "- Favorite Integer: 42");
    let out = t.run(&["call", "-y", "ev", "get-roots-list", "--root", "/"], 0);
    assert_contains(&out.stdout, "URI: file:///\n");

    // A read tool.
    let out = t.run(&["call", "mcp__ev__echo", "message=hi"], 0);
    assert_eq!(out.stdout, "Echo: hi\n");
    assert_eq!(out.stderr, "");
    // A string property stays a string even when it looks like a number.
    let out = t.run(&["call", "ev", "echo", "message=007"], 0);
    assert_eq!(out.stdout, "Echo: 007\n");

    // Numbers: `a=2` becomes the number 2 (the schema says number).
    let out = t.run(&["call", "ev", "get-sum", "a=2", "b=3"], 0);
    assert_eq!(out.stdout, "The sum of 2 and 3 is 5.\n");
    assert_eq!(out.stderr, "");
    let out = t.run(&["call", "ev", "get-sum", "a=1.5", "b=2", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(v["content"][0]["text"], json!("The sum of 1.5 and 2 is 3.5."));
    assert_eq!(v.get("isError"), None, "{v:#}");

    // isError -> exit 1, the server's text on stdout.
    let out = t.run(&["call", "ev", "get-sum", "a:=\"x\"", "b=1"], 1);
    assert_eq!(
        out.stdout,
        "MCP error -32602: Input validation error: Invalid arguments for \
         tool get-sum: Invalid input: expected number, received string at \
         a\n"
    );
    assert_contains(&out.stderr, "reported an error (isError)");

    // structuredContent through an SSE answer.
    let out = t.run(
        &["call", "ev", "get-structured-content", "location=New York"],
        0,
    );
    // The text block as sent; structuredContent is not printed again,
    // since the text block already holds the same JSON.
    assert_eq!(
        out.stdout,
        "{\"temperature\":33,\"conditions\":\"Cloudy\",\"humidity\":82}\n"
    );

    let out = t.run(
        &[
            "call",
            "ev",
            "get-structured-content",
            "location=New York",
            "--json",
        ],
        0,
    );
    let v = out.stdout_json();
    assert_eq!(
        v["structuredContent"],
        json!({"temperature": 33, "conditions": "Cloudy", "humidity": 82}),
        "{v:#}"
    );

    // Progress notifications on the POST's SSE stream before the result.
    let out = t.run(
        &[
            "call",
            "ev",
            "trigger-long-running-operation",
            "duration=1",
            "steps=2",
        ],
        0,
    );
    assert_eq!(
        out.stdout,
        "Long running operation completed. Duration: 1 seconds, Steps: 2.\n"
    );
    assert_eq!(out.stderr, "");

    // A tool classified execute needs -y.
    let out = t.run(&["call", "ev", "toggle-simulated-logging"], 7);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "is classified execute and needs approval");
    let out = t.run(&["call", "ev", "toggle-simulated-logging", "-y"], 0);
    assert!(
        out.stdout.starts_with(
            "Started simulated, random-leveled logging for session "
        ),
        "{}",
        out.stdout
    );

    // Resources.
    let out = t.run(&["resources", "ev"], 0);
    let resources = first_words(&out.stdout, "resource ");
    let want: Vec<String> = [
        "architecture",
        "extension",
        "features",
        "how-it-works",
        "instructions",
        "startup",
        "structure",
    ]
    .iter()
    .map(|d| format!("demo://resource/static/document/{d}.md"))
    .collect();
    assert_eq!(resources, want, "{}", out.stdout);
    let templates = first_words(&out.stdout, "template ");
    assert_eq!(
        templates,
        [
            "demo://resource/dynamic/text/{resourceId}",
            "demo://resource/dynamic/blob/{resourceId}"
        ],
        "{}",
        out.stdout
    );
    assert_eq!(out.stderr, "");
    let out = t.run(&["read", "ev", "demo://resource/dynamic/text/1"], 0);
    // The rest of the text is the current time.
    assert!(
        out.stdout.starts_with(
            "Resource 1: This is a plaintext resource created at "
        ),
        "{}",
        out.stdout
    );
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    assert_eq!(out.stderr, "");
    let out = t.run(&["read", "ev", "demo://nope"], 4);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "Resource demo://nope not found");

    // Prompts.
    let out = t.run(&["prompts", "ev"], 0);
    let prompts = first_words(&out.stdout, "prompt ");
    assert_eq!(
        prompts,
        [
            "simple-prompt",
            "args-prompt",
            "completable-prompt",
            "resource-prompt"
        ],
        "{}",
        out.stdout
    );
    assert_contains(
        lines_with(&out.stdout, "prompt args-prompt ")[0],
        " city [state] ",
    );
    let out = t.run(&["prompt", "ev", "args-prompt", "city=Paris"], 0);
    assert_eq!(out.stdout, "[user]\nWhat's weather in Paris?\n");
    assert_eq!(out.stderr, "");
    let out =
        t.run(&["prompt", "ev", "args-prompt", "city=Paris", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(
        v["messages"][0]["content"]["text"],
        json!("What's weather in Paris?"),
        "{v:#}"
    );

    // The session is ended with a DELETE the server accepts (and, checked
    // after every command above, logs).
    let out = t.run(&["list", "-v"], 0);
    check_delete_line(t.kind, &out.stderr);
    t.finish();
}

// ---- py_server.py (Python SDK) --------------------------------------------

/// The same commands against `py_server.py --mode MODE`.
fn py_suite(test: &str, mode: &'static str) {
    let Some(t) = HttpInterop::new(test, Kind::Py(mode)) else {
        return;
    };

    // tools/list in 4 pages of 2, 2, 2 and 1 tools.
    let out = t.run(&["list"], 0);
    assert_eq!(
        out.stdout.lines().next(),
        Some("py: rivumi-interop-py 1.0.0 (protocol 2025-11-25)"),
        "{}",
        out.stdout
    );
    assert_eq!(
        tool_rows(&out.stdout, "py"),
        expected_rows("py", PY_TOOLS),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("incomplete"), "{}", out.stdout);
    assert_eq!(out.stderr, "", "nothing on stderr");

    let out = t.run(&["list", "py", "--json"], 0);
    let v = out.stdout_json();
    let servers = v["servers"].as_array().expect("servers array");
    assert_eq!(servers.len(), 1, "{v:#}");
    check_json_listing(&servers[0], "py", "rivumi-interop-py", PY_TOOLS);
    assert_eq!(out.stderr, "");

    let out = t.run(&["list", "py", "--all", "--json"], 0);
    let v = out.stdout_json();
    let s = &v["servers"][0];
    assert_eq!(s["complete"], json!(true), "{v:#}");
    assert_eq!(s["tools"].as_array().map(Vec::len), Some(7), "{v:#}");
    assert_eq!(s["resources"].as_array().map(Vec::len), Some(2), "{v:#}");
    assert_eq!(
        s["resourceTemplates"].as_array().map(Vec::len),
        Some(1),
        "{v:#}"
    );
    assert_eq!(s["prompts"].as_array().map(Vec::len), Some(1), "{v:#}");

    // A read tool.
    let out = t.run(&["call", "mcp__py__echo", "message=hi"], 0);
    assert_eq!(out.stdout, "Echo: hi\n");
    assert_eq!(out.stderr, "");
    let out = t.run(&["call", "py", "echo", "message=hi", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(v["content"][0]["text"], json!("Echo: hi"), "{v:#}");
    assert_eq!(v["isError"], json!(false), "{v:#}");

    // Numbers (JSON Schema number and integer, pages 1 and 3).
    let out = t.run(&["call", "py", "add", "a=2", "b=3.5"], 0);
    assert_eq!(out.stdout, "2 + 3.5 = 5.5\n");
    assert_eq!(out.stderr, "");
    let out = t.run(&["call", "mcp__py__add", "a=2", "b=3"], 0);
    assert_eq!(out.stdout, "2 + 3 = 5\n");
    let out = t.run(&["call", "py", "sleep_ms", "ms=300"], 0);
    assert_eq!(out.stdout, "slept 300 ms\n");

    // Tools classified execute: refused without -y, run with it (a string
    // stays a string, a boolean is converted).
    let out = t.run(&["call", "py", "greet", "name=Ada"], 7);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "is classified execute and needs approval");
    let out =
        t.run(&["call", "py", "greet", "name=007", "excited=true", "-y"], 0);
    assert_eq!(out.stdout, "Hello, 007!\n");
    assert_eq!(out.stderr, "");
    let out =
        t.run(&["call", "py", "get_weather", "city=Oslo", "-y", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(
        v["structuredContent"],
        json!({"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}),
        "{v:#}"
    );

    // isError -> exit 1, the text on stdout.
    let out = t.run(&["call", "py", "fail", "reason=nope", "-y"], 1);
    assert_eq!(out.stdout, "Error executing tool fail: nope\n");
    assert_contains(&out.stderr, "tool 'fail' reported an error (isError)");
    let out = t.run(&["call", "mcp__py__fail", "-y", "--json"], 1);
    let v = out.stdout_json();
    assert_eq!(v["isError"], json!(true), "{v:#}");
    assert_eq!(
        v["content"][0]["text"],
        json!("Error executing tool fail: boom")
    );

    // Resources.
    let out = t.run(&["resources", "py"], 0);
    let resources = resource_rows(&out.stdout);
    assert_eq!(
        resources,
        [
            ("fixture://readme", "text/plain"),
            ("fixture://config", "application/json")
        ],
        "{}",
        out.stdout
    );
    let templates = first_words(&out.stdout, "template ");
    assert_eq!(templates, ["fixture://items/{item_id}"], "{}", out.stdout);
    assert_eq!(out.stderr, "");
    let out = t.run(&["read", "py", "fixture://readme"], 0);
    assert_eq!(out.stdout, "Hello from the rivumi interop Python server.\n");
    assert_eq!(out.stderr, "");
    let out = t.run(&["read", "py", "fixture://items/42"], 0);
    assert_eq!(out.stdout, "item 42\n");
    let out = t.run(&["read", "py", "fixture://config", "--json"], 0);
    let v = out.stdout_json();
    assert_eq!(
        v["contents"][0]["mimeType"],
        json!("application/json"),
        "{v:#}"
    );
    let out = t.run(&["read", "py", "fixture://nope"], 4);
    assert_eq!(out.stdout, "");
    assert_contains(&out.stderr, "Unknown resource: fixture://nope");

    // Prompts.
    let out = t.run(&["prompts", "py"], 0);
    let rows = lines_with(&out.stdout, "prompt ");
    assert_eq!(rows.len(), 1, "{}", out.stdout);
    assert_eq!(first_word_after(rows[0], "prompt "), "review");
    assert_contains(rows[0], " code [language] ");
    assert_eq!(out.stderr, "");
    let out = t.run(&["prompt", "py", "review", "code=fn main(){}"], 0);
    assert_eq!(
        out.stdout,
        "# Asks for a review of a code snippet.\n[user]\n\
         Please review this rust code:\n\nfn main(){}\n"
    );
    assert_eq!(out.stderr, "");
    let out = t.run(
        &["prompt", "py", "review", "code=x = 1", "language=python", "--json"],
        0,
    );
    let v = out.stdout_json();
    assert_eq!(
        v["messages"][0]["content"]["text"],
        json!("Please review this python code:\n\nx = 1"),
        "{v:#}"
    );

    // The session's end. The server logs at WARNING and so says nothing
    // about it; what can be seen is rivumi-mcp's DELETE and its status.
    let out = t.run(&["call", "py", "echo", "message=bye", "-v"], 0);
    assert_eq!(out.stdout, "Echo: bye\n");
    check_delete_line(t.kind, &out.stderr);

    // Nothing went wrong on the server's side: no traceback, nothing but
    // the "listening" line on its stderr.
    let err = t.server.process.stderr();
    assert_eq!(err.lines().count(), 1, "server stderr:\n{err}");
    assert_contains(&err, "py_server: listening on http://127.0.0.1:");
    t.finish();
}

#[test]
fn interop_http_py_sse() {
    py_suite("interop_http_py_sse", "sse");
}

#[test]
fn interop_http_py_json() {
    py_suite("interop_http_py_json", "json");
}

#[test]
fn interop_http_py_stateless() {
    py_suite("interop_http_py_stateless", "stateless");
}

#[test]
fn interop_http_py_stateless_json() {
    py_suite("interop_http_py_stateless_json", "stateless-json");
}

// ---- a server restarted under a session ------------------------------------

/// `batch -v` with one request, then the server is restarted on the same
/// port (so it no longer knows the session), then a second request.
/// Returns the two output lines, the exit code and stderr.
fn batch_across_restart(t: &mut HttpInterop) -> (Value, Value, Output) {
    let name = t.kind.name();
    let line = |id: u32, message: &str| {
        let v = json!({"id": id, "server": name, "tool": "echo",
                       "arguments": {"message": message}});
        format!("{v}\n")
    };
    let cmd = t.turn.command(name, &["batch", "-v"]);
    let start = Instant::now();
    let mut child = cmd.spawn();
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    stdin.write_all(line(1, "one").as_bytes()).expect("writing line 1");
    stdin.flush().expect("flushing line 1");
    // Read the first answer from a thread, so that a hang cannot hang the
    // test (the deadline below kills the batch).
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut first = String::new();
        let _ = stdout.read_line(&mut first);
        let mut rest = String::new();
        let _ = tx.send(first);
        let _ = stdout.read_to_string(&mut rest);
        let _ = tx.send(rest);
    });
    let first = match rx.recv_timeout(LIMIT) {
        Ok(l) => l,
        Err(_) => {
            let _ = child.kill();
            panic!("no first batch answer within {LIMIT:?}");
        }
    };

    let port = t.server.port;
    t.server.stop();
    let marker = t.server.process.marker().to_string();
    t.server =
        HttpServer::start(&t.installed, &t.turn.dir, t.kind, port, &marker);

    stdin.write_all(line(2, "two").as_bytes()).expect("writing line 2");
    drop(stdin);
    let out = wait_with_timeout(child, &cmd);
    let rest = rx.recv_timeout(LIMIT).expect("the rest of stdout");
    t.turn.print_time("batch across a restart", start.elapsed());
    let parse = |l: &str| -> Value {
        serde_json::from_str(l)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}\n{out:?}"))
    };
    let lines: Vec<&str> = rest.lines().collect();
    assert_eq!(lines.len(), 1, "{rest}\n{out:?}");
    (parse(&first), parse(lines[0]), out)
}

/// The Python SDK answers 404 for a session it does not know; rivumi-mcp
/// then starts a new session and sends the request again (spec: the
/// client MUST start a new session on 404).
#[test]
fn interop_http_py_session_lost_on_restart() {
    let Some(mut t) = HttpInterop::new(
        "interop_http_py_session_lost_on_restart",
        Kind::Py("sse"),
    ) else {
        return;
    };
    let (one, two, out) = batch_across_restart(&mut t);
    assert_eq!(one["ok"], json!(true), "{one:#}");
    assert_eq!(one["result"]["content"][0]["text"], json!("Echo: one"));
    assert_eq!(two["ok"], json!(true), "{two:#}\n{out:?}");
    assert_eq!(two["result"]["content"][0]["text"], json!("Echo: two"));
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_contains(
        &out.stderr,
        "rivumi-mcp: server 'py': session expired (404); starting a new one",
    );
    // The new session is the one ended.
    assert_contains(
        &out.stderr,
        "rivumi-mcp: server 'py': DELETE session: HTTP 200",
    );
    t.finish();
}

/// server-everything answers 400 (not the 404 of the spec) for a session
/// it does not know, so there is nothing to retry: the request fails as
/// a server error (exit code 4 in its line; the batch exits 1) and the
/// server's message is shown.
#[test]
fn interop_http_everything_session_lost_on_restart() {
    let Some(mut t) = HttpInterop::new(
        "interop_http_everything_session_lost_on_restart",
        Kind::Everything,
    ) else {
        return;
    };
    let (one, two, out) = batch_across_restart(&mut t);
    assert_eq!(one["ok"], json!(true), "{one:#}");
    assert_eq!(one["result"]["content"][0]["text"], json!("Echo: one"));
    assert_eq!(two["ok"], json!(false), "{two:#}");
    assert_eq!(two["id"], json!(2), "{two:#}");
    assert_eq!(two["error"]["code"], json!("server"), "{two:#}");
    assert_eq!(two["error"]["exit_code"], json!(4), "{two:#}");
    let msg = two["error"]["message"].as_str().unwrap_or("");
    assert_contains(msg, "HTTP 400");
    assert_contains(msg, "No valid session ID provided");
    assert_eq!(out.code, Some(1), "{out:?}");
    assert_absent(&out.stderr, "session expired");
    t.finish();
}
