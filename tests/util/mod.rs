//! Test helpers shared by every integration test module, after ripgrep's
//! `tests/util.rs`.
//!
//! A test makes a fresh [`Dir`], writes its files there and runs the real
//! `rivumi-mcp` binary in it through a [`TestCommand`]:
//!
//! ```ignore
//! let dir = Dir::new("check_config_valid");
//! dir.write(".mcp.json", r#"{"mcpServers": {}}"#);
//! let out = dir.command(&["check-config"]).assert_exit(0);
//! assert!(out.stdout.contains("valid"));
//! ```
//!
//! The child's environment is cleared and then pinned (see
//! [`TestCommand`]), so nothing from the developer's shell (an
//! `RIVUMI_MCP_ALLOWLIST`, a proxy, a locale) changes what a test sees.
//! Every run has a deadline ([`DEFAULT_TIMEOUT`]): a hanging binary fails
//! its test instead of hanging CI.

// Each test module uses only some of these helpers.
#![allow(dead_code)]

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How long one run of the binary may take before it is killed and the
/// test fails.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How often a running child is polled.
const POLL: Duration = Duration::from_millis(5);

// The in-process scripted HTTP server (tests/http.rs).
pub mod http;
// What the interop tests over stdio and over HTTP share (tests/interop.rs,
// tests/interop_http.rs).
pub mod interop;
// Interop test bodies run over stdio and over HTTP alike.
pub mod interop_body;
// The authorization server and protected MCP server (tests/login.rs).
pub mod oauth;
// One server `web` behind the scripted HTTP server: its config, command
// and what is read back (tests/http.rs, tests/http_answers.rs).
pub mod web;

static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

/// The environment variable that names the servers `rivumi-mcp` may start.
pub const ALLOWLIST: &str = "RIVUMI_MCP_ALLOWLIST";

/// The `rivumi-mcp` binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rivumi-mcp"))
}

/// The scripted MCP server (`fixtures/server.rs`) that tests start behind
/// `rivumi-mcp`.
pub fn fixture_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rivumi-mcp-fixture"))
}

/// The repository root (for files under `fixtures/`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fresh, empty directory for one test:
/// `$TMPDIR/rivumi-mcp-tests/<test name>/<n>`. It is left in place after
/// the test so that a failure can be inspected; the next run of the same
/// test removes it first.
#[derive(Debug, Clone)]
pub struct Dir {
    root: PathBuf,
}

impl Dir {
    /// Creates the directory (removing a stale one of a previous run).
    pub fn new(test_name: &str) -> Dir {
        let id = NEXT_ID.fetch_add(1, Ordering::SeqCst);
        let root = std::env::temp_dir()
            .join("rivumi-mcp-tests")
            .join(test_name)
            .join(id.to_string());
        if root.exists() {
            nice_err(&root, std::fs::remove_dir_all(&root));
        }
        nice_err(&root, std::fs::create_dir_all(&root));
        // Canonical, so that paths printed by the binary compare equal
        // (macOS's /tmp is a symlink).
        let root = nice_err(&root, root.canonicalize());
        Dir { root }
    }

    /// An existing directory (inside another test's) as a `Dir`.
    pub fn at(root: PathBuf) -> Dir {
        Dir { root }
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `rel` inside the directory.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes a file (creating parent directories) and returns its path.
    pub fn write(
        &self,
        rel: impl AsRef<Path>,
        contents: impl AsRef<[u8]>,
    ) -> PathBuf {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            nice_err(parent, std::fs::create_dir_all(parent));
        }
        nice_err(&path, std::fs::write(&path, contents));
        path
    }

    /// Creates a directory (and its parents) inside this one.
    pub fn create_dir(&self, rel: impl AsRef<Path>) -> PathBuf {
        let path = self.path(rel);
        nice_err(&path, std::fs::create_dir_all(&path));
        path
    }

    /// `rivumi-mcp` with these arguments, run in this directory.
    pub fn command<I, S>(&self, args: I) -> TestCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = TestCommand::new(bin(), self);
        cmd.args(args);
        cmd
    }

    /// Any other program, with the same pinned environment.
    pub fn program(&self, program: impl AsRef<OsStr>) -> TestCommand {
        TestCommand::new(program, self)
    }
}

fn nice_err<T, E: std::fmt::Display>(path: &Path, r: Result<T, E>) -> T {
    match r {
        Ok(t) => t,
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

/// A command to run, with a controlled environment.
///
/// The environment is cleared and then set to: `PATH` (the test process's,
/// so `sh`, `npx` and friends resolve as usual), `HOME` and
/// `XDG_CONFIG_HOME` inside the test's [`Dir`], and `LANG=C.UTF-8`.
/// Anything else must be added with [`TestCommand::env`]. The working
/// directory is the [`Dir`]. Stdin is empty unless [`TestCommand::stdin`]
/// gives it bytes.
#[derive(Debug)]
pub struct TestCommand {
    program: OsString,
    args: Vec<OsString>,
    cwd: PathBuf,
    env: Vec<(OsString, OsString)>,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
}

/// What a finished run produced. Output that is not UTF-8 is converted
/// lossily (U+FFFD), so tests can still see it.
#[derive(Debug, Clone)]
pub struct Output {
    pub status: ExitStatus,
    /// The exit code; `None` when the process was ended by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// stdout parsed as one JSON value; panics with the output if it is
    /// not JSON.
    pub fn stdout_json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!("stdout is not JSON ({e}):\n{}", self.stdout)
        })
    }

    /// stdout and stderr together, for "this must not appear anywhere".
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

impl TestCommand {
    fn new(program: impl AsRef<OsStr>, dir: &Dir) -> TestCommand {
        let mut env = vec![];
        if let Some(path) = std::env::var_os("PATH") {
            env.push(("PATH".into(), path));
        }
        let home = dir.path(".home");
        let xdg = home.join(".config");
        env.push(("HOME".into(), home.into_os_string()));
        env.push(("XDG_CONFIG_HOME".into(), xdg.into_os_string()));
        env.push(("LANG".into(), "C.UTF-8".into()));
        // No daemon of the user running the tests is ever used: the
        // daemon's directory is the test's own (tests/daemon.rs starts
        // one there when it wants one).
        env.push(("XDG_RUNTIME_DIR".into(), dir.path("run").into_os_string()));
        TestCommand {
            program: program.as_ref().to_os_string(),
            args: vec![],
            cwd: dir.root().to_path_buf(),
            env,
            stdin: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut TestCommand {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// Puts these arguments first, before the command word: where the
    /// options that run a program must stand when operands follow.
    pub fn before<I, S>(&mut self, args: I) -> &mut TestCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut first: Vec<OsString> =
            args.into_iter().map(|a| a.as_ref().to_os_string()).collect();
        first.append(&mut self.args);
        self.args = first;
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut TestCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Sets (or replaces) one environment variable of the child.
    pub fn env(
        &mut self,
        key: impl AsRef<OsStr>,
        value: impl AsRef<OsStr>,
    ) -> &mut TestCommand {
        let key = key.as_ref().to_os_string();
        self.env.retain(|(k, _)| *k != key);
        self.env.push((key, value.as_ref().to_os_string()));
        self
    }

    /// Removes one of the pinned variables (`PATH`, `HOME`, ...).
    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut TestCommand {
        self.env.retain(|(k, _)| k != key.as_ref());
        self
    }

    /// Runs in another directory than the test's [`Dir`].
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut TestCommand {
        self.cwd = dir.as_ref().to_path_buf();
        self
    }

    /// Bytes for the child's stdin (written from a separate thread, so a
    /// child that does not read cannot deadlock the test).
    pub fn stdin(&mut self, bytes: impl Into<Vec<u8>>) -> &mut TestCommand {
        self.stdin = Some(bytes.into());
        self
    }

    /// Overrides [`DEFAULT_TIMEOUT`] for this command.
    pub fn timeout(&mut self, limit: Duration) -> &mut TestCommand {
        self.timeout = limit;
        self
    }

    /// The `std` command, configured (stdio not yet set).
    pub fn std_command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args).current_dir(&self.cwd).env_clear();
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Starts the child with all three of stdin, stdout and stderr piped,
    /// for tests that need to drive it by hand (close stdout early, send a
    /// signal); finish with [`wait_with_timeout`].
    pub fn spawn(&self) -> Child {
        let mut cmd = self.std_command();
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().unwrap_or_else(|e| panic!("{}: {e}", self.describe()))
    }

    /// Runs to completion (or to the deadline, which panics).
    pub fn run(&self) -> Output {
        let mut cmd = self.std_command();
        let stdin =
            if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() };
        cmd.stdin(stdin).stdout(Stdio::piped()).stderr(Stdio::piped());
        let child =
            cmd.spawn().unwrap_or_else(|e| panic!("{}: {e}", self.describe()));
        run_with_timeout(
            child,
            self.stdin.clone(),
            self.timeout,
            &self.describe(),
        )
    }

    /// Runs with stdout on a pseudo-terminal (stderr piped), for what
    /// the binary does only on a terminal (sanitising). The terminal's
    /// `\r\n` line ends are turned back into `\n`.
    pub fn run_on_tty(&self) -> Output {
        let (master, slave) = open_pty();
        let mut cmd = self.std_command();
        let stdin =
            if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() };
        cmd.stdin(stdin).stdout(Stdio::from(slave)).stderr(Stdio::piped());
        let child =
            cmd.spawn().unwrap_or_else(|e| panic!("{}: {e}", self.describe()));
        // Our copy of the slave must close, or reading the master would
        // never end.
        drop(cmd);
        let tty = read_in_thread(master);
        let mut out = run_with_timeout(
            child,
            self.stdin.clone(),
            self.timeout,
            &self.describe(),
        );
        // Linux reports EIO on the master once the slave is closed; that
        // ends the read with everything written before it.
        let bytes =
            tty.recv_timeout(Duration::from_secs(10)).unwrap_or_else(|_| {
                panic!("the terminal did not close\n{}", self.describe())
            });
        out.stdout = String::from_utf8_lossy(&bytes).replace("\r\n", "\n");
        out
    }

    /// Runs and checks the exit code; on a mismatch panics with the
    /// command line, working directory, status, stdout and stderr.
    pub fn assert_exit(&self, code: i32) -> Output {
        let out = self.run();
        if out.code != Some(code) {
            panic!(
                "expected exit code {code}, got {:?}\n{}",
                out.status,
                self.report(&out)
            );
        }
        out
    }

    /// A description of the command and what it produced, for failures.
    pub fn report(&self, out: &Output) -> String {
        format!(
            "{}\nexit status: {:?}\n\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.describe(),
            out.status,
            out.stdout,
            out.stderr
        )
    }

    /// The command line, the added environment and the directory.
    pub fn describe(&self) -> String {
        let mut s = String::from("command:");
        let _ = write!(s, " {:?}", self.program);
        for a in &self.args {
            let _ = write!(s, " {a:?}");
        }
        let _ = write!(s, "\ncwd: {}\nenv:", self.cwd.display());
        for (k, v) in &self.env {
            let _ = write!(s, " {}={:?}", k.to_string_lossy(), v);
        }
        s
    }
}

/// Feeds `stdin` to a spawned child (from a thread), collects its stdout
/// and stderr (if piped) and waits for it to exit, polling `try_wait`.
/// If the child runs longer than `limit`, it is killed and this panics
/// with `what` (a description of the command). The pipes must also close
/// by the deadline: a grandchild that keeps them open fails the test too.
pub fn run_with_timeout(
    mut child: Child,
    stdin: Option<Vec<u8>>,
    limit: Duration,
    what: &str,
) -> Output {
    let start = Instant::now();
    if let Some(mut pipe) = child.stdin.take() {
        let bytes = stdin.unwrap_or_default();
        thread::spawn(move || {
            // The child may exit without reading; EPIPE is fine then.
            let _ = pipe.write_all(&bytes);
        });
    }
    let stdout = child.stdout.take().map(read_in_thread);
    let stderr = child.stderr.take().map(read_in_thread);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() >= limit => {
                let _ = child.kill();
                let _ = child.wait();
                let partial = |rx: Option<mpsc::Receiver<Vec<u8>>>| {
                    rx.and_then(|rx| rx.recv_timeout(POLL * 20).ok())
                        .map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_default()
                };
                panic!(
                    "still running after {limit:?}, killed\n{what}\n\n\
                     --- stdout ---\n{}\n--- stderr ---\n{}",
                    partial(stdout),
                    partial(stderr)
                );
            }
            Ok(None) => thread::sleep(POLL),
            Err(e) => panic!("waiting for the child: {e}\n{what}"),
        }
    };
    let collect = |rx: Option<mpsc::Receiver<Vec<u8>>>, name: &str| {
        let Some(rx) = rx else { return String::new() };
        let left = limit.saturating_sub(start.elapsed()).max(POLL * 200);
        match rx.recv_timeout(left) {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(_) => panic!(
                "the child exited ({status:?}) but its {name} stayed open \
                 past the deadline (a leaked grandchild?)\n{what}"
            ),
        }
    };
    let stdout = collect(stdout, "stdout");
    let stderr = collect(stderr, "stderr");
    Output { status, code: status.code(), stdout, stderr }
}

/// Reads a pipe to its end in a thread; the bytes arrive on the channel.
fn read_in_thread<R: Read + Send + 'static>(
    mut pipe: R,
) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = vec![];
        let _ = pipe.read_to_end(&mut buf);
        let _ = tx.send(buf);
    });
    rx
}

/// Opens a pseudo-terminal: (master, slave).
#[allow(unsafe_code)]
fn open_pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;

    // SAFETY: plain libc calls on a descriptor we own; ptsname's static
    // buffer is copied at once (no other test opens terminals).
    let (master, name) = unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        let master = std::fs::File::from_raw_fd(fd);
        assert_eq!(libc::grantpt(fd), 0, "grantpt");
        assert_eq!(libc::unlockpt(fd), 0, "unlockpt");
        let name = libc::ptsname(fd);
        assert!(!name.is_null(), "ptsname");
        let name = std::ffi::CStr::from_ptr(name).to_bytes().to_vec();
        (master, name)
    };
    let path = Path::new(OsStr::from_bytes(&name));
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (master, slave)
}

/// Waits for a child started with [`TestCommand::spawn`] (whatever pipes
/// the test has not taken are drained), with the default deadline.
pub fn wait_with_timeout(child: Child, what: &TestCommand) -> Output {
    run_with_timeout(child, None, what.timeout, &what.describe())
}

/// Whether `haystack` contains `needle`, with a readable failure.
#[track_caller]
pub fn assert_contains(haystack: &str, needle: &str) {
    assert!(
        haystack.contains(needle),
        "expected to find {needle:?} in:\n{haystack}"
    );
}

/// The opposite of [`assert_contains`].
#[track_caller]
pub fn assert_absent(haystack: &str, needle: &str) {
    assert!(
        !haystack.contains(needle),
        "{needle:?} must not appear, but it does in:\n{haystack}"
    );
}

/// The harness itself: the pinned environment, stdin and the deadlines.
mod tests {
    use super::*;

    #[test]
    fn environment_is_cleared_and_pinned() {
        let dir = Dir::new("util_environment");
        let out = dir.program("env").env("EXTRA", "1").assert_exit(0);
        let mut names: Vec<&str> =
            out.stdout.lines().filter_map(|l| l.split('=').next()).collect();
        names.sort();
        assert_eq!(
            names,
            [
                "EXTRA",
                "HOME",
                "LANG",
                "PATH",
                "XDG_CONFIG_HOME",
                "XDG_RUNTIME_DIR"
            ],
            "{}",
            out.stdout
        );
        assert_contains(
            &out.stdout,
            &format!("HOME={}", dir.path(".home").display()),
        );
        let pwd = dir.program("pwd").assert_exit(0);
        assert_eq!(pwd.stdout.trim_end(), dir.root().to_str().unwrap());
    }

    #[test]
    fn stdin_larger_than_a_pipe_does_not_deadlock() {
        let dir = Dir::new("util_stdin");
        let data = "x".repeat(1 << 20);
        let out = dir.program("cat").stdin(data.clone()).assert_exit(0);
        assert_eq!(out.stdout.len(), data.len());
    }

    #[test]
    #[should_panic(expected = "still running after")]
    fn a_hanging_child_is_killed() {
        let dir = Dir::new("util_hang");
        dir.program("sleep")
            .arg("30")
            .timeout(Duration::from_millis(300))
            .run();
    }

    #[test]
    #[should_panic(expected = "stayed open past the deadline")]
    fn a_leaked_grandchild_holding_the_pipes_fails() {
        let dir = Dir::new("util_grandchild");
        dir.program("sh")
            .args(["-c", "sleep 3 &"])
            .timeout(Duration::from_millis(300))
            .run();
    }

    #[test]
    fn exit_mismatch_names_everything() {
        let dir = Dir::new("util_exit_mismatch");
        let cmd = {
            let mut c = dir.program("sh");
            c.args(["-c", "echo out; echo err >&2; exit 3"]);
            c
        };
        let msg = std::panic::catch_unwind(|| cmd.assert_exit(0))
            .expect_err("must panic");
        let msg = msg.downcast_ref::<String>().expect("a message");
        for part in ["expected exit code 0", "\"sh\" \"-c\"", "cwd: ", "out\n"]
        {
            assert_contains(msg, part);
        }
        assert_contains(msg, "--- stderr ---\nerr\n");
    }
}

// ---------------------------------------------------------------------------
// Fixture servers and their processes (stdio, list and call tests)
// ---------------------------------------------------------------------------

/// A stdio server entry that runs [`fixture_bin`] with `args`; tests add
/// `env`, `env_vars` or `cwd` to it as needed.
pub fn fixture_server(args: &[&str]) -> serde_json::Value {
    serde_json::json!({
        "command": fixture_bin().to_str().expect("fixture path is UTF-8"),
        "args": args,
    })
}

/// Writes `dir/.mcp.json` with these servers, in this order (a JSON map
/// would sort them, and config order is what `list` prints in).
pub fn write_mcp_json(
    dir: &Dir,
    servers: &[(&str, serde_json::Value)],
) -> PathBuf {
    let entries: Vec<String> = servers
        .iter()
        .map(|(name, entry)| {
            format!("    {}: {entry}", serde_json::Value::from(*name))
        })
        .collect();
    let text =
        format!("{{\"mcpServers\": {{\n{}\n}}}}\n", entries.join(",\n"));
    dir.write(".mcp.json", text)
}

/// A directory whose `.mcp.json` has one server `demo`: the fixture,
/// recording what it receives in `<dir>/rec`. Returns the record file too
/// (read it with [`received`]).
pub fn demo_recording(test: &str) -> (Dir, PathBuf) {
    let dir = Dir::new(test);
    let rec = dir.path("rec");
    let rec_arg = format!("--record={}", rec.display());
    write_mcp_json(&dir, &[("demo", fixture_server(&[&rec_arg]))]);
    (dir, rec)
}

/// A directory whose `.mcp.json` has one server `demo`: the fixture with
/// `args` plus `--pid-file <dir>/pids`. Returns the pid file too.
pub fn demo_with_pids(test: &str, args: &[&str]) -> (Dir, PathBuf) {
    let dir = Dir::new(test);
    let pids = dir.path("pids");
    let pid_arg = format!("--pid-file={}", pids.display());
    let mut all = args.to_vec();
    all.push(&pid_arg);
    write_mcp_json(&dir, &[("demo", fixture_server(&all))]);
    (dir, pids)
}

/// `rivumi-mcp ARGS` in `dir` with [`ALLOWLIST`] set to `allow`.
pub fn run_allowed(dir: &Dir, allow: &str, args: &[&str]) -> TestCommand {
    let mut cmd = dir.command(args);
    cmd.env(ALLOWLIST, allow);
    cmd
}

/// The `params` of every `method` request a fixture run with `--record`
/// received, in order.
pub fn received(rec: &Path, method: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(rec)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|m| m["method"] == method)
        .map(|m| m["params"].clone())
        .collect()
}

/// The `arguments` of every `tools/call` a fixture run with `--record`
/// received, in order.
pub fn call_arguments(rec: &Path) -> Vec<serde_json::Value> {
    received(rec, "tools/call")
        .iter()
        .map(|p| p["arguments"].clone())
        .collect()
}

/// The pids a fixture wrote with `--pid-file` (its own, then its
/// grandchild's); empty when the file does not exist.
pub fn read_pids(pid_file: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(pid_file).unwrap_or_default();
    text.lines().map(|l| l.trim().parse().expect("a pid")).collect()
}

/// State and parent of a live process, from `/proc/PID/stat`; `None` when
/// there is no such process.
fn proc_state(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) S ppid ...`; comm may itself contain ") ".
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Waits up to `limit` until no process listed in `pid_file` exists and
/// panics naming those left. A zombie whose parent is not this test
/// process counts as gone (its parent has exited or will reap it), but is
/// reported on stderr.
#[track_caller]
pub fn assert_pids_gone(pid_file: &Path, limit: Duration) {
    let pids = read_pids(pid_file);
    assert!(!pids.is_empty(), "{}: no pids written", pid_file.display());
    let me = std::process::id();
    let start = Instant::now();
    loop {
        let left: Vec<(u32, char, u32)> = pids
            .iter()
            .filter_map(|&p| proc_state(p).map(|(s, pp)| (p, s, pp)))
            .filter(|&(_, s, pp)| !(s == 'Z' && pp != me))
            .collect();
        if left.is_empty() {
            for &p in &pids {
                if let Some(('Z', ppid)) = proc_state(p) {
                    eprintln!("note: pid {p} is a zombie of pid {ppid}");
                }
            }
            return;
        }
        if start.elapsed() >= limit {
            panic!(
                "processes still alive {limit:?} after the command \
                 returned (pid, state, parent): {left:?}"
            );
        }
        thread::sleep(POLL);
    }
}

/// Quotes a word for `sh`.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs `rivumi-mcp ARGS` in `dir` under util-linux `script`, which gives
/// it a new session whose controlling terminal is a pseudo-terminal (its
/// stdin, stdout and stderr too); `typed` is what is typed at that
/// terminal. `stdout` holds everything the terminal showed (the echo of
/// what was typed included), with `\r\n` turned back into `\n`.
pub fn on_terminal(dir: &Dir, args: &[&str], typed: &str) -> Output {
    let mut line = quote(bin().to_str().expect("UTF-8 path"));
    for a in args {
        line.push(' ');
        line.push_str(&quote(a));
    }
    let mut cmd = dir.program("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env(ALLOWLIST, "demo")
        .stdin(typed)
        .timeout(Duration::from_secs(20));
    let mut out = cmd.run();
    out.stdout = out.stdout.replace("\r\n", "\n");
    out
}

/// An executable sampling command in `dir` (for `--sampling-command`): it
/// reads the request and prints a CreateMessageResult from `model` whose
/// text is `text`.
pub fn sampling_model(dir: &Dir, model: &str, text: &str) -> PathBuf {
    let result = serde_json::json!({"role": "assistant", "model": model,
        "content": {"type": "text", "text": text}});
    oauth::write_script(
        dir,
        "model.sh",
        &format!("#!/bin/sh\ncat >/dev/null\nprintf '%s' '{result}'\n"),
    )
}
