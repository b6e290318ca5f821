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
//! The commands and their expected answers are those of the stdio tests
//! (`util/interop_body.rs`): each body runs once over each transport. The
//! conventions are those of `interop.rs`, and so is what implements them
//! (`util/interop.rs`): the servers come from `.interop/`
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
    Installed, LIMIT, NotListening, ServerProcess, Turn, installed,
};
use crate::util::interop_body as body;
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
            Kind::Everything => "everything",
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

    // The commands of the stdio tests, from SSE answers.
    let run = |args: &[&str], code| t.run(args, code);
    body::everything_list(&run);
    body::everything_call(&run);
    body::everything_resources_and_prompts(&run);

    // The session is ended with a DELETE the server accepts (and, checked
    // after every command above, logs).
    let out = t.run(&["list", "-v"], 0);
    check_delete_line(t.kind, &out.stderr);
    t.finish();
}

// ---- py_server.py (Python SDK) --------------------------------------------

/// The commands of the stdio tests (util/interop_body.rs) against
/// `py_server.py --mode MODE`, then the session's end.
fn py_suite(test: &str, mode: &'static str) {
    let Some(t) = HttpInterop::new(test, Kind::Py(mode)) else {
        return;
    };

    // The commands of the stdio tests, over this mode of HTTP.
    let run = |args: &[&str], code| t.run(args, code);
    body::py_list(&run);
    body::py_call(&run);
    body::py_resources_and_prompts(&run);

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
