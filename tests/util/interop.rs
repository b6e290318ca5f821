//! What the interop tests with real MCP servers share, over stdio
//! (tests/interop.rs), over Streamable HTTP (tests/interop_http.rs) and
//! with an SDK's OAuth demo (tests/interop_oauth.rs).
//!
//! - [`installed`]: where `scripts/interop-setup.sh` put the servers
//!   (`.interop/`), and what happens when they are missing: the test fails
//!   and says how to install them, unless [`SKIP_VAR`] is `1`, when it says
//!   so on stderr and passes. [`node_and`]: the same check for `node` and
//!   any other files.
//! - [`Turn`]: one test's hold on the one lock all interop tests share (on
//!   a small machine, tests starting Node and Python at once take seconds a
//!   command, which would make [`LIMIT`] measure the load rather than
//!   `rivumi-mcp`), its directory and the unique marker its servers carry
//!   on their command lines. [`Turn::run`] (or [`Turn::run_within`], with
//!   another limit) times every command (the times are printed on stderr;
//!   see them with `--nocapture`).
//! - [`ServerProcess`]: a server a test starts itself (HTTP, OAuth), in
//!   its own process group, with its output collected; killed on drop.
//! - [`assert_no_leftovers`]: no process with a marker is left (`/proc`).
//! - Readers of `list` output and the servers' expected tools.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::{ALLOWLIST, Dir, Output, TestCommand, repo_root};

/// Set to `1` to let these tests pass when `.interop/` is not installed.
pub const SKIP_VAR: &str = "RIVUMI_MCP_SKIP_INTEROP";

/// The longest any one command may take, start-up and shutdown included.
/// Over stdio a `list` takes about 0.6 s here, and both servers exit
/// within about 0.4 s of stdin EOF (fixtures/interop/README.md); over HTTP
/// there is no server to start, and a `list` takes about 60 ms.
pub const LIMIT: Duration = Duration::from_secs(5);

/// How long a server process may outlive what ended it: the command that
/// started it (stdio) or the kill of its process group (HTTP).
pub const LEFTOVER_GRACE: Duration = Duration::from_secs(1);

const EVERYTHING_JS: &str = ".interop/node/node_modules/\
                             @modelcontextprotocol/server-everything/dist/\
                             index.js";
const VENV_PYTHON: &str = ".interop/venv/bin/python";
const PY_SERVER: &str = "fixtures/interop/py_server.py";

/// server-everything's tools (client capabilities: elicitation, as
/// rivumi-mcp always declares it), in its order, with the classification
/// its annotations give: `read` for `readOnlyHint: true,
/// destructiveHint: false`. `--root` adds get-roots-list and
/// `--sampling-command` trigger-sampling-request.
pub const EVERYTHING_TOOLS: &[(&str, &str)] = &[
    ("echo", "read"),
    ("get-annotated-message", "read"),
    ("get-env", "read"),
    ("get-resource-links", "read"),
    ("get-resource-reference", "read"),
    ("get-structured-content", "read"),
    ("get-sum", "read"),
    ("get-tiny-image", "read"),
    ("gzip-file-as-resource", "execute"),
    ("toggle-simulated-logging", "execute"),
    ("toggle-subscriber-updates", "execute"),
    ("trigger-long-running-operation", "read"),
    ("trigger-elicitation-request", "execute"),
    ("trigger-url-elicitation", "execute"),
    ("simulate-research-query", "execute"),
];

/// `py_server.py`'s tools, served 2 per `tools/list` page (4 pages).
pub const PY_TOOLS: &[(&str, &str)] = &[
    ("echo", "read"),
    ("add", "read"),
    ("greet", "execute"),
    ("get_weather", "execute"),
    ("sleep_ms", "read"),
    ("fail", "execute"),
    // readOnlyHint false, destructiveHint true.
    ("reset_counter", "execute"),
];

/// Held by each interop test, stdio, HTTP and OAuth alike, for its whole run
/// (through its [`Turn`]).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

// ---- the servers ----------------------------------------------------------

/// Where the installed servers are.
#[derive(Debug, Clone)]
pub struct Installed {
    pub node: PathBuf,
    pub everything_js: PathBuf,
    pub python: PathBuf,
    pub py_server: PathBuf,
}

/// The first executable `name` on the test process's PATH (`which`).
fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// The servers, or `None` (after a line on stderr) when they are missing
/// and [`SKIP_VAR`] is `1`. Panics when they are missing otherwise.
/// `extra`: more files (relative to the repository root) the test needs,
/// checked with the servers.
pub fn installed(test: &str, extra: &[&str]) -> Option<Installed> {
    let root = repo_root();
    let everything_js = root.join(EVERYTHING_JS);
    let python = root.join(VENV_PYTHON);
    let py_server = root.join(PY_SERVER);
    let mut files =
        vec![everything_js.clone(), python.clone(), py_server.clone()];
    files.extend(extra.iter().map(|p| root.join(p)));
    let node = node_and(test, &files)?;
    Some(Installed { node, everything_js, python, py_server })
}

/// `node` (from PATH), when it and every one of `files` are there; `None`
/// (after a line on stderr) when some are missing and [`SKIP_VAR`] is `1`.
/// Panics when they are missing otherwise, with the setup hint.
pub fn node_and(test: &str, files: &[PathBuf]) -> Option<PathBuf> {
    let node = which("node");
    let mut missing = vec![];
    if node.is_none() {
        missing.push("node (not on PATH)".to_string());
    }
    for p in files {
        if !p.is_file() {
            missing.push(p.display().to_string());
        }
    }
    if missing.is_empty() {
        return node;
    }
    let missing = missing.join(", ");
    if std::env::var_os(SKIP_VAR).is_some_and(|v| v == "1") {
        eprintln!(
            "{test}: SKIPPED ({SKIP_VAR}=1): interop servers missing: \
             {missing}"
        );
        return None;
    }
    panic!(
        "{test}: the interop servers are not installed (missing: \
         {missing}).\nRun scripts/interop-setup.sh (or make test) first; \
         set {SKIP_VAR}=1 to skip the interop tests."
    );
}

/// `rel` under the repository root, or `None` when it is missing and
/// [`SKIP_VAR`] is 1 (else a panic saying how to install it).
pub fn installed_at(test: &str, rel: &str) -> Option<PathBuf> {
    let path = repo_root().join(rel);
    if path.is_file() {
        return Some(path);
    }
    if std::env::var_os(SKIP_VAR).is_some_and(|v| v == "1") {
        eprintln!("{test}: SKIPPED ({SKIP_VAR}=1): {rel} missing");
        return None;
    }
    panic!(
        "{test}: {rel} is not installed. Run scripts/interop-setup.sh \
         first; set {SKIP_VAR}=1 to skip the interop tests."
    );
}

// ---- one test's turn ------------------------------------------------------

/// One interop test's turn: the shared lock (let go when this drops), the
/// test's directory and the marker for its servers' command lines.
#[derive(Debug)]
pub struct Turn {
    pub test: String,
    pub dir: Dir,
    /// Unique to this run of this test.
    pub marker: String,
    /// `interop` or `interop_http`: in the marker and the timing lines.
    area: &'static str,
    _lock: MutexGuard<'static, ()>,
}

impl Turn {
    /// Waits for the other interop tests to finish, then makes the test's
    /// directory and marker.
    pub fn take(area: &'static str, test: &str) -> Turn {
        // A test that panicked let go of the lock; that is fine here.
        let lock = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = Dir::new(test);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let marker = format!(
            "rivumi-{area}-marker-{test}-{}-{nanos}",
            std::process::id()
        );
        Turn { test: test.to_string(), dir, marker, area, _lock: lock }
    }

    /// `rivumi-mcp ARGS` in the test's directory, with `allow` as the
    /// allowlist and a deadline well past [`LIMIT`].
    pub fn command(&self, allow: &str, args: &[&str]) -> TestCommand {
        let mut cmd = self.dir.command(args);
        cmd.env(ALLOWLIST, allow).timeout(LIMIT * 4);
        cmd
    }

    /// Prints how long `rivumi-mcp WHAT` took.
    pub fn print_time(&self, what: &str, took: Duration) {
        eprintln!(
            "{} timing: {}: rivumi-mcp {what}: {} ms",
            self.area,
            self.test,
            took.as_millis()
        );
    }

    /// Runs `rivumi-mcp ARGS` (see [`Turn::command`]) and checks the exit
    /// code and that it took less than [`LIMIT`]; `context` is added to
    /// the message of either failure. Returns the command too.
    #[track_caller]
    pub fn run(
        &self,
        allow: &str,
        args: &[&str],
        code: i32,
        context: impl Fn() -> String,
    ) -> (Output, TestCommand) {
        let cmd = self.command(allow, args);
        let out = self.run_within(&cmd, args, code, LIMIT, context);
        (out, cmd)
    }

    /// Runs `cmd` (`rivumi-mcp ARGS`, made from [`Turn::command`]), prints
    /// the time it took and checks the exit code and that it took less
    /// than `limit`; `context` is added to the message of either failure.
    #[track_caller]
    pub fn run_within(
        &self,
        cmd: &TestCommand,
        args: &[&str],
        code: i32,
        limit: Duration,
        context: impl Fn() -> String,
    ) -> Output {
        let start = Instant::now();
        let out = cmd.run();
        let took = start.elapsed();
        self.print_time(&args.join(" "), took);
        if out.code != Some(code) {
            panic!(
                "expected exit code {code}, got {:?}\n{}{}",
                out.status,
                cmd.report(&out),
                context()
            );
        }
        assert!(
            took < limit,
            "took {took:?} (limit {limit:?}, start-up and shutdown \
             included)\n{}{}",
            cmd.report(&out),
            context()
        );
        out
    }
}

// ---- server processes started by a test -----------------------------------

/// A server process started by a test (the HTTP servers, the OAuth demo)
/// in its own process group, stdin empty, its stdout and stderr collected
/// line by line. Dropping it kills the process group;
/// [`ServerProcess::stop`] does the same and then checks that nothing with
/// its marker is left.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    marker: String,
    /// What the server wrote on stdout.
    stdout: Arc<Mutex<String>>,
    /// What it wrote on stderr.
    stderr: Arc<Mutex<String>>,
    /// The stderr lines, as they come (see [`ServerProcess::wait_for`]).
    stderr_lines: mpsc::Receiver<String>,
    stopped: bool,
}

/// Why [`ServerProcess::wait_for`] gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotListening {
    /// No such line within the limit.
    Timeout,
    /// The server closed stderr first (it has most likely exited).
    Closed,
}

impl ServerProcess {
    /// Starts `cmd` (whose command line carries `marker`) in a process
    /// group of its own; panics naming `what` if it cannot be started.
    pub fn spawn(
        cmd: &TestCommand,
        marker: &str,
        what: &str,
    ) -> ServerProcess {
        let mut cmd = cmd.std_command();
        cmd.process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("starting {what}: {e}\n{cmd:?}"));
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let out_pipe = child.stdout.take().expect("piped stdout");
        let err_pipe = child.stderr.take().expect("piped stderr");
        collect_lines(out_pipe, Arc::clone(&stdout), None);
        let (tx, stderr_lines) = mpsc::channel();
        collect_lines(err_pipe, Arc::clone(&stderr), Some(tx));
        // From here on, a panic kills the server.
        ServerProcess {
            child,
            marker: marker.to_string(),
            stdout,
            stderr,
            stderr_lines,
            stopped: false,
        }
    }

    /// Hands each stderr line to `done` until it returns `true`, within
    /// `limit`; returns how long that took.
    pub fn wait_for(
        &self,
        limit: Duration,
        mut done: impl FnMut(&str) -> bool,
    ) -> Result<Duration, NotListening> {
        let start = Instant::now();
        loop {
            let left = limit.saturating_sub(start.elapsed());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) => {
                    if done(&line) {
                        return Ok(start.elapsed());
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(NotListening::Timeout);
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(NotListening::Closed);
                }
            }
        }
    }

    /// The marker on the server's command line.
    pub fn marker(&self) -> &str {
        &self.marker
    }

    /// What the server has written on stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// What the server has written on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The server's exit status, if it has exited.
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// Waits for the server to exit.
    pub fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait()
    }

    /// Kills the whole process group, then reaps the server.
    pub fn kill(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let pgid = self.child.id();
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Kills the server and checks that no process with its marker is
    /// left (see [`assert_no_leftovers`]), `after` saying what was done.
    #[track_caller]
    pub fn stop(&mut self, after: &str) {
        self.kill();
        assert_no_leftovers(&self.marker, after, "");
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads `pipe` line by line into `into` (and to `tx`, while it listens)
/// in a thread.
fn collect_lines<R: Read + Send + 'static>(
    pipe: R,
    into: Arc<Mutex<String>>,
    tx: Option<mpsc::Sender<String>>,
) {
    std::thread::spawn(move || {
        let mut r = BufReader::new(pipe);
        let mut line = String::new();
        loop {
            line.clear();
            match r.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if let Ok(mut s) = into.lock() {
                s.push_str(&line);
            }
            if let Some(tx) = &tx {
                let _ = tx.send(line.clone());
            }
        }
    });
}

// ---- leftover processes ---------------------------------------------------

/// No process carrying `marker` is alive, allowing [`LEFTOVER_GRACE`] for
/// it to go. Leftovers are killed (the test started them) and fail the
/// test with a message that they are still alive after `after`, then
/// `what` (if any).
#[track_caller]
pub fn assert_no_leftovers(marker: &str, after: &str, what: &str) {
    if !Path::new("/proc/self/cmdline").exists() {
        return; // Not Linux: nothing to scan.
    }
    let start = Instant::now();
    let mut left = processes_with(marker);
    while !left.is_empty() && start.elapsed() < LEFTOVER_GRACE {
        std::thread::sleep(Duration::from_millis(20));
        left = processes_with(marker);
    }
    if left.is_empty() {
        return;
    }
    for (pid, _) in &left {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let mut list: Vec<String> =
        left.iter().map(|(pid, cmd)| format!("  {pid}: {cmd}")).collect();
    if !what.is_empty() {
        list.push(what.to_string());
    }
    panic!(
        "server processes still alive {LEFTOVER_GRACE:?} after {after} \
         (now killed):\n{}",
        list.join("\n")
    );
}

/// Live processes whose command line contains `marker`: (pid, cmdline).
/// Zombies have an empty cmdline, so they do not count.
fn processes_with(marker: &str) -> Vec<(u32, String)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return vec![] };
    let mut found = vec![];
    for e in entries.flatten() {
        let Some(pid) =
            e.file_name().to_str().and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push((pid, cmdline.trim_end().to_string()));
        }
    }
    found
}

// ---- reading the output ---------------------------------------------------

/// The `  mcp__<server>__<tool>  <class>  ...` rows of a human `list`,
/// for one server's section.
pub fn tool_rows(stdout: &str, server: &str) -> Vec<(String, String)> {
    let prefix = format!("mcp__{server}__");
    stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let name = words.next()?;
            let class = words.next()?;
            name.starts_with(&prefix).then(|| (name.into(), class.into()))
        })
        .collect()
}

/// The expected rows for `tools` of `server`.
pub fn expected_rows(
    server: &str,
    tools: &[(&str, &str)],
) -> Vec<(String, String)> {
    tools
        .iter()
        .map(|(t, c)| (format!("mcp__{server}__{t}"), c.to_string()))
        .collect()
}

/// The classification the annotations of a tool definition call for.
fn class_of(def: &Value) -> &'static str {
    let a = &def["annotations"];
    let ro = a["readOnlyHint"] == json!(true);
    let destructive = a["destructiveHint"] == json!(true);
    if ro && !destructive { "read" } else { "execute" }
}

/// Checks one server's entry in `list --json` against its expected tools.
#[track_caller]
pub fn check_json_listing(
    s: &Value,
    server: &str,
    server_name: &str,
    tools: &[(&str, &str)],
) {
    assert_eq!(s["server"], json!(server), "{s:#}");
    assert_eq!(s["ok"], json!(true), "{s:#}");
    assert_eq!(s["complete"], json!(true), "{s:#}");
    assert_eq!(s["protocol"], json!("2025-11-25"), "{s:#}");
    assert_eq!(s["serverInfo"]["name"], json!(server_name), "{s:#}");
    let items = s["tools"].as_array().expect("a tools array");
    let got: Vec<(&str, &str)> = items
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or("?"),
                t["classification"].as_str().unwrap_or("?"),
            )
        })
        .collect();
    assert_eq!(got, tools, "tools of {server}");
    for t in items {
        let name = t["name"].as_str().unwrap_or("?");
        assert_eq!(
            t["qualified_name"],
            json!(format!("mcp__{server}__{name}")),
            "{t:#}"
        );
        assert_eq!(t["server"], json!(server), "{t:#}");
        assert_eq!(t["classification"], json!(class_of(t)), "{t:#}");
        assert!(t["inputSchema"].is_object(), "{t:#}");
    }
}

/// The lines of `stdout` that start (after indentation) with `start`.
pub fn lines_with<'a>(stdout: &'a str, start: &str) -> Vec<&'a str> {
    stdout.lines().filter(|l| l.trim_start().starts_with(start)).collect()
}

/// The first word after `start` on `line`.
pub fn first_word_after<'a>(line: &'a str, start: &str) -> &'a str {
    let rest = line.trim_start().strip_prefix(start).unwrap_or("");
    rest.split_whitespace().next().unwrap_or("")
}

/// The first word after `start` on each line of `stdout` that starts with
/// it: the names in a `resources` or `prompts` listing.
pub fn first_words<'a>(stdout: &'a str, start: &str) -> Vec<&'a str> {
    lines_with(stdout, start)
        .into_iter()
        .map(|l| first_word_after(l, start))
        .collect()
}

/// The URI and MIME type of each `resource` line of a `resources`
/// listing.
pub fn resource_rows(stdout: &str) -> Vec<(&str, &str)> {
    lines_with(stdout, "resource ")
        .into_iter()
        .map(|l| {
            let mut w = l.split_whitespace().skip(1);
            (w.next().unwrap_or(""), w.next().unwrap_or(""))
        })
        .collect()
}

// ---- the TypeScript SDK v2 server (MCP 2026-07-28) ---------------------------

/// The fixture server on the TypeScript SDK v2, which speaks 2026-07-28
/// (and, in its dual-era modes, the handshake era beside it).
const TS2_SERVER: &str = "fixtures/interop/ts2_server.cjs";
/// Its SDK, as `scripts/interop-setup.sh` installs it.
const TS2_SDK: &str =
    ".interop/node/node_modules/@modelcontextprotocol/server/package.json";

/// `ts2_server.cjs`'s tools, in its order: `whereami`'s `region` carries
/// `x-mcp-header: Region`.
pub const TS2_TOOLS: &[(&str, &str)] =
    &[("echo", "read"), ("add", "read"), ("whereami", "execute")];

/// How `ts2_server.cjs` treats 2025-era traffic (its legacy mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ts2Era {
    /// Modern only: `initialize` gets -32022 (`reject`).
    ModernOnly,
    /// Both eras (`serve` over stdio, `stateless` over HTTP).
    Dual,
}

impl Ts2Era {
    /// The legacy mode argument for `transport` (`stdio` or `http`).
    fn legacy_arg(self, transport: &str) -> &'static str {
        match (self, transport) {
            (Ts2Era::ModernOnly, _) => "reject",
            (Ts2Era::Dual, "stdio") => "serve",
            (Ts2Era::Dual, _) => "stateless",
        }
    }
}

/// `node` and `ts2_server.cjs`, when the SDK is installed; see
/// [`node_and`] for what happens when it is not.
#[derive(Debug, Clone)]
pub struct Ts2 {
    pub node: PathBuf,
    pub script: PathBuf,
}

impl Ts2 {
    /// The server, or `None` (after a line on stderr) when `.interop/`
    /// lacks the SDK and [`SKIP_VAR`] is `1`.
    pub fn installed(test: &str) -> Option<Ts2> {
        let root = repo_root();
        let script = root.join(TS2_SERVER);
        let node = node_and(test, &[script.clone(), root.join(TS2_SDK)])?;
        Some(Ts2 { node, script })
    }

    /// The `.mcp.json` entry that starts it over stdio; `marker` goes on
    /// its command line (arguments after the mode are ignored).
    pub fn stdio_entry(&self, era: Ts2Era, marker: &str) -> Value {
        json!({
            "command": self.node,
            "args": [self.script, "stdio", era.legacy_arg("stdio"), marker],
        })
    }

    /// Starts it over HTTP on a free port of 127.0.0.1 in `dir` and waits
    /// for its "listening" line; returns the process and its URL.
    pub fn start_http(
        &self,
        dir: &Dir,
        era: Ts2Era,
        marker: &str,
    ) -> (ServerProcess, String) {
        let mut cmd = dir.program(&self.node);
        cmd.arg(&self.script).args([
            "http",
            era.legacy_arg("http"),
            "0",
            marker,
        ]);
        start_listening(&cmd, marker, "ts2_server http")
    }
}

/// Starts the HTTP server `cmd` (see [`ServerProcess::spawn`]) and waits
/// for its `...: listening on http://127.0.0.1:PORT/mcp...` line on
/// stderr (ts2_server.cjs, py_server.py); returns it and that URL.
pub fn start_listening(
    cmd: &TestCommand,
    marker: &str,
    what: &str,
) -> (ServerProcess, String) {
    let process = ServerProcess::spawn(cmd, marker, what);
    let mut url = String::new();
    let waited = process.wait_for(Duration::from_secs(15), |line| {
        let Some(at) = line.find("listening on http://127.0.0.1:") else {
            return false;
        };
        let rest = &line[at + "listening on ".len()..];
        url = rest.split_whitespace().next().unwrap_or_default().to_string();
        true
    });
    if let Err(why) = waited {
        panic!(
            "{what}: no \"listening\" line ({why:?}); stderr:\n{}",
            process.stderr()
        );
    }
    (process, url)
}

/// Starts `py_server.py` over HTTP in `mode` (`sse`, `json`, `stateless`,
/// `stateless-json`) on a free port of 127.0.0.1 in `dir`; returns the
/// process and its URL.
pub fn start_py_http(
    s: &Installed,
    dir: &Dir,
    mode: &str,
    marker: &str,
) -> (ServerProcess, String) {
    let mut cmd = dir.program(&s.python);
    // CPython accepts (and ignores) any -X name=value.
    cmd.arg("-X").arg(format!("{marker}=1")).arg(&s.py_server).args([
        "--transport",
        "http",
        "--mode",
        mode,
        "--port",
        "0",
    ]);
    start_listening(&cmd, marker, &format!("py_server http {mode}"))
}

// ---- fastmcp ----------------------------------------------------------------

/// `fastmcp_server.py`: the same tools on fastmcp, or with `--sdk` on the
/// Python SDK's MCPServer (fixtures/interop/README.md).
pub const FASTMCP_SERVER: &str = "fixtures/interop/fastmcp_server.py";

/// Importing fastmcp takes about a second on an idle machine, several
/// on a loaded one: a command that starts it gets this long.
pub const FASTMCP_LIMIT: Duration = Duration::from_secs(15);

/// The stdio entries `fm` (fastmcp) and `sdk` (the Python SDK) of
/// [`FASTMCP_SERVER`], carrying `marker` (the script ignores it).
pub fn fastmcp_entries(
    s: &Installed,
    marker: &str,
) -> [(&'static str, Value); 2] {
    let script = repo_root().join(FASTMCP_SERVER);
    [
        ("fm", json!({"command": s.python, "args": [script, marker]})),
        (
            "sdk",
            json!({"command": s.python, "args": [script, "--sdk", marker]}),
        ),
    ]
}
